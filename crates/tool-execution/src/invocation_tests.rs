use super::*;

fn key() -> ToolCallKey {
    ToolCallKey::new("ahp-chat:/c", "t1", "call-1")
}

#[test]
fn identity_is_per_object_not_per_key() {
    let a = SharedInvocation::new(key(), Presentation::default());
    let b = SharedInvocation::new(key(), Presentation::default());
    assert!(a.same(&a.clone()));
    assert!(!a.same(&b));
    assert_ne!(a.id(), b.id());
    assert_eq!(a.key(), &key());
}

#[test]
fn presentation_is_derived_from_a_subagent_chat_and_late_bindable() {
    use agenthost_protocol::uri::{SafeId, SessionUri};
    let session = SessionUri::canonical(SafeId::new("s1").unwrap());
    let chat = ChatUri::subagent(&session, &SafeId::new("toolu_parent").unwrap());
    let parent = "ahp-chat:/parent".to_owned();
    let derived = Presentation::derived(chat.as_str(), Some(&parent), Some("Browser"));
    assert_eq!(
        derived.subagent_group,
        Some(SubagentGroup {
            parent_chat: Some(parent),
            parent_tool_call_id: "toolu_parent".to_owned()
        })
    );
    assert_eq!(
        Presentation::derived("ahp-chat:/plain", None, None).subagent_group,
        None
    );

    let invocation = SharedInvocation::new(key(), Presentation::default());
    invocation.bind_presentation(Presentation {
        icon: Some("globe".to_owned()),
        ..Presentation::default()
    });
    invocation.fill_presentation(derived.clone());
    let bound = invocation.snapshot().presentation;
    assert_eq!(bound.icon.as_deref(), Some("globe"));
    assert_eq!(bound.display_name.as_deref(), Some("Browser"));
    assert_eq!(bound.subagent_group, derived.subagent_group);

    invocation.bind_presentation(Presentation {
        display_name: Some("Web".to_owned()),
        ..Presentation::default()
    });
    let rebound = invocation.snapshot().presentation;
    assert_eq!(rebound.display_name.as_deref(), Some("Web"));
    assert_eq!(
        rebound.icon.as_deref(),
        Some("globe"),
        "absent attributes stay"
    );
}

#[tokio::test]
async fn decide_answers_only_a_showing_confirmation() {
    let invocation = SharedInvocation::new(key(), Presentation::default());
    assert!(!invocation.decide(LocalDecision::Cancel));
    invocation.begin_attempt(Some(Claimant::new("v")), CancelToken::new());
    assert_eq!(invocation.status(), InvocationStatus::Preparing);
    assert_eq!(invocation.snapshot().context, Some(Claimant::new("v")));
    let receiver = invocation.await_decision();
    assert_eq!(invocation.status(), InvocationStatus::AwaitingConfirmation);
    let approve = LocalDecision::Approve {
        reason: ToolCallConfirmationReason::UserAction,
        selected_option_id: None,
    };
    assert!(invocation.decide(approve.clone()));
    assert_eq!(receiver.await.unwrap(), approve);
    assert!(!invocation.decide(LocalDecision::Cancel), "answered once");
}

#[test]
fn cancel_cancels_the_token_of_a_running_body_and_settle_is_final() {
    let invocation = SharedInvocation::new(key(), Presentation::default());
    let token = CancelToken::new();
    invocation.begin_attempt(None, token.clone());
    invocation.begin_body();
    assert_eq!(invocation.snapshot().body_runs, 1);
    invocation.cancel();
    assert!(token.is_cancelled());
    invocation.settle(InvocationStatus::Cancelled);
    invocation.settle(InvocationStatus::Completed(Box::new(
        crate::answers::text_result("x", "y"),
    )));
    assert_eq!(invocation.status(), InvocationStatus::Cancelled);
    assert!(invocation.status().is_terminal());
}

#[tokio::test]
async fn watchers_see_changes() {
    let invocation = SharedInvocation::new(key(), Presentation::default());
    let mut watch = invocation.watch();
    invocation.set_status(InvocationStatus::Executing);
    watch.changed().await.unwrap();
    assert_eq!(watch.borrow().status, InvocationStatus::Executing);
    invocation.set_content(vec![]);
    assert_eq!(invocation.snapshot().content, Some(vec![]));
}

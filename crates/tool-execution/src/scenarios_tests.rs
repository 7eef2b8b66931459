//! The engine's end-to-end scenarios (21 of them), one test per scenario, on tokio's
//! paused clock. `t` is virtual time in ms from the start of each test; grace = 5000 ms.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::{SessionStatus, ToolCallConfirmationReason};
use agenthost_protocol::ids::{InputKey, ToolCallKey};
use agenthost_protocol::uri::{ChatUri, SafeId, SessionUri};
use agenthost_protocol::{ActionEnvelope, StateAction, Uri};
use agenthost_reducers::projection::{
    chat_input_id, is_user_blocking, tool_client_execution_id, tool_confirmation_id,
};
use serde_json::json;

use crate::answers::{self, AnswerKind};
use crate::fixtures::*;
use crate::harness::*;
use crate::{
    AnswerOutcome, AnswerSink, AutoAnswer, Claimant, EngineConfig, EngineRegistry,
    InvocationStatus, LocalDecision, LocalGate, Presentation, SessionEngine, SessionUpdate,
};

fn session() -> SessionUri {
    SessionUri::canonical(SafeId::new("s1").unwrap())
}

fn subagent_chat(parent_call: &str) -> Uri {
    ChatUri::subagent(&session(), &SafeId::new(parent_call).unwrap()).into_string()
}

fn code(sent: &Sent) -> Option<String> {
    sent.wire()["result"]["error"]["code"]
        .as_str()
        .map(str::to_owned)
}

fn tools() -> FakeTools {
    FakeTools::with(&[
        ("search", ToolScript::plain()),
        ("browser", ToolScript::confirmable()),
        ("edit", ToolScript::confirmable().blocking()),
        ("slow", ToolScript::plain().blocking()),
    ])
}

fn user_action() -> LocalDecision {
    LocalDecision::Approve {
        reason: ToolCallConfirmationReason::UserAction,
        selected_option_id: None,
    }
}

// 1. Unclaimed non-confirmable call runs headless at once.
#[tokio::test(start_paused = true)]
async fn s01_unclaimed_non_confirmable_call_runs_headless_at_once() {
    let rig = Rig::responder(tools());
    let chat = subagent_chat("toolu_parent");
    let k = key(&chat, "c1");
    rig.set(client_execution(
        &chat,
        "c1",
        "search",
        CLIENT,
        "not-needed",
        r#"{"query":"rust"}"#,
    ));
    rig.time.at(0).await;

    let invoked = rig.tools.invoked();
    assert_eq!(invoked.len(), 1, "exactly one local invocation");
    assert_eq!(invoked[0].context, None, "headless");
    assert_eq!(
        invoked[0].pre_approval,
        Some(ToolCallConfirmationReason::NotNeeded)
    );
    assert_eq!(
        serde_json::Value::Object(invoked[0].parameters.clone()),
        json!({ "query": "rust" })
    );
    let done = rig.sent.completions(&k);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].chat, chat, "answered on the owning subagent chat");
    assert_eq!(rig.ms(&done[0]), 0);
    assert_eq!(
        done[0].wire()["result"],
        json!({
            "success": true, "pastTenseMessage": "Ran",
            "content": [{ "type": "text", "text": "done" }]
        })
    );
    assert_eq!(rig.engine.stats().timers, 0, "no timer armed");
}

// 2. Claimed call runs once, with context.
#[tokio::test(start_paused = true)]
async fn s02_claimed_call_runs_once_with_context() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let view = Claimant::new("view-1");
    let _claim = rig.engine.claim(k.clone(), view.clone());
    rig.set(client_execution(
        CHAT,
        "c1",
        "browser",
        CLIENT,
        "user-action",
        "{}",
    ));
    rig.time.at(5001).await;

    let invoked = rig.tools.invoked();
    assert_eq!(invoked.len(), 1);
    assert_eq!(invoked[0].context, Some(view));
    let done = rig.sent.completions(&k);
    assert_eq!(done.len(), 1);
    assert_eq!(code(&done[0]), None, "no clientUnavailable completion");
}

// 3. Unclaimed confirmable call is denied at grace, not before.
#[tokio::test(start_paused = true)]
async fn s03_unclaimed_confirmable_call_is_denied_at_grace_not_before() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    rig.set(client_execution(
        CHAT,
        "c1",
        "browser",
        CLIENT,
        "user-action",
        "{}",
    ));
    rig.time.at(4999).await;
    assert!(rig.tools.invoked().is_empty());
    assert_eq!(rig.sent.count(), 0);

    rig.time.at(5000).await;
    let done = rig.sent.completions(&k);
    assert_eq!(done.len(), 1);
    assert_eq!(rig.ms(&done[0]), 5000);
    assert_eq!(
        done[0].wire()["result"],
        json!({
            "success": false, "pastTenseMessage": "Couldn't run Browser",
            "error": {
                "message": "Browser needs confirmation but no observer was available to answer it.",
                "code": "clientUnavailable"
            }
        })
    );
    assert!(rig.tools.invoked().is_empty(), "invocation count stays 0");
    assert!(
        rig.engine.invocation(&k).is_none(),
        "the shared invocation is dropped"
    );
}

// 4. A late claim inside the window wins.
#[tokio::test(start_paused = true)]
async fn s04_a_late_claim_inside_the_window_wins() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    rig.set(client_execution(
        CHAT,
        "c1",
        "browser",
        CLIENT,
        "user-action",
        "{}",
    ));
    rig.time.at(3000).await;
    let view = Claimant::new("late-view");
    let _claim = rig.engine.claim(k.clone(), view.clone());
    rig.time.at(3000).await;

    let invoked = rig.tools.invoked();
    assert_eq!(invoked.len(), 1);
    assert_eq!(invoked[0].at, rig.time.instant(3000));
    assert_eq!(invoked[0].context, Some(view));

    rig.time.at(5000).await;
    let done = rig.sent.completions(&k);
    assert_eq!(done.len(), 1, "only the run's own completion");
    assert_eq!(rig.ms(&done[0]), 3000);
    assert_eq!(code(&done[0]), None);
}

// 5. Foreign and vanished entries.
#[tokio::test(start_paused = true)]
async fn s05_foreign_and_vanished_entries() {
    let rig = Rig::responder(tools());
    rig.set(client_execution(
        CHAT,
        "foreign",
        "browser",
        OTHER_CLIENT,
        "user-action",
        "{}",
    ));
    rig.time.at(0).await;
    assert_eq!(rig.engine.stats().timers, 0, "no timer for a foreign entry");

    for (call, tool) in [("gone-1", "browser"), ("gone-2", "search")] {
        let entry = client_execution(CHAT, call, tool, CLIENT, "not-needed", "{}");
        rig.set(entry);
        rig.remove(&tool_client_execution_id(&key(CHAT, call)));
    }
    rig.time.at(5001).await;
    assert_eq!(rig.sent.count(), 0, "nothing dispatched by t=5001");
    assert!(rig.tools.invoked().is_empty());

    rig.time.at(60_000).await;
    assert_eq!(rig.sent.count(), 0, "a foreign entry is never answered");
    assert!(rig.tools.invoked().is_empty());
    let stats = rig.engine.stats();
    assert_eq!((stats.timers, stats.records, stats.leases), (0, 0, 0));
}

// 6. Elicitation: observer disposed after claiming.
#[tokio::test(start_paused = true)]
async fn s06_elicitation_observer_disposed_after_claiming() {
    let rig = Rig::responder(tools());
    rig.set(chat_input(CHAT, "r1"));
    let claim = rig
        .engine
        .claim(InputKey::new(CHAT, "r1"), Claimant::new("view"));
    rig.time.at(5000).await;
    assert_eq!(rig.sent.count(), 0);

    rig.time.at(6000).await;
    drop(claim);
    rig.time.at(10_999).await;
    assert_eq!(rig.sent.count(), 0, "nothing at t=10999");

    rig.time.at(11_000).await;
    let sent = rig.sent.all();
    assert_eq!(sent.len(), 1);
    assert_eq!(rig.ms(&sent[0]), 11_000);
    assert_eq!(sent[0].chat, CHAT);
    assert_eq!(
        sent[0].wire(),
        json!({ "type": "chat/inputCompleted", "requestId": "r1", "response": "cancel" })
    );
    rig.time.at(30_000).await;
    assert_eq!(rig.sent.count(), 1, "exactly one");
}

// 7. Server confirmation: same timeline.
#[tokio::test(start_paused = true)]
async fn s07_server_confirmation_same_timeline() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    rig.set(server_confirmation(CHAT, "c1", "shell"));
    let claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.time.at(6000).await;
    drop(claim);
    rig.time.at(10_999).await;
    assert_eq!(rig.sent.count(), 0);

    rig.time.at(11_000).await;
    let sent = rig.sent.for_call(&k, AnswerKind::ToolCallConfirmed);
    assert_eq!(sent.len(), 1);
    assert_eq!(rig.ms(&sent[0]), 11_000);
    let wire = sent[0].wire();
    assert_eq!(wire["approved"], json!(false));
    assert_eq!(wire["reason"], json!("denied"));
    assert!(
        wire["reasonMessage"]
            .as_str()
            .unwrap()
            .contains("nobody was available to confirm Shell within 5s")
    );
    assert_eq!(rig.sent.count(), 1);
}

// 8. Result confirmation uses the result action.
#[tokio::test(start_paused = true)]
async fn s08_result_confirmation_uses_the_result_action() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    rig.set(result_confirmation(CHAT, "c1", "shell"));
    let claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.time.at(6000).await;
    drop(claim);
    rig.time.at(10_999).await;
    assert_eq!(rig.sent.count(), 0);
    rig.time.at(11_000).await;

    let sent = rig.sent.all();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].wire(),
        json!({
            "type": "chat/toolCallResultConfirmed", "turnId": TURN, "toolCallId": "c1",
            "approved": false
        })
    );
    assert!(
        rig.sent
            .for_call(&k, AnswerKind::ToolCallConfirmed)
            .is_empty(),
        "no chat/toolCallConfirmed"
    );
}

// 9. Policy switch.
#[tokio::test(start_paused = true)]
async fn s09_policy_switch_wait_leaves_the_session_input_needed() {
    let config = EngineConfig {
        chat_input: AutoAnswer::Wait,
        ..EngineConfig::responder(CLIENT)
    };
    let rig = Rig::new(config, tools());
    let mut host = FakeSession::with_status(SessionStatus::InProgress.bits());
    let entry = chat_input(CHAT, "r1");
    host.set(entry.clone());
    rig.set(entry);
    let claim = rig
        .engine
        .claim(InputKey::new(CHAT, "r1"), Claimant::new("view"));
    rig.time.at(6000).await;
    drop(claim);
    rig.time.at(60_000).await;

    assert_eq!(rig.sent.count(), 0, "nothing even at t=60000");
    assert_eq!(rig.engine.stats().timers, 0);
    assert!(SessionStatus::from_bits(host.status()).contains(SessionStatus::InputNeeded));
}

// 10. Reference-counted claims.
#[tokio::test(start_paused = true)]
async fn s10_reference_counted_claims() {
    let rig = Rig::responder(tools());
    let parent = "ahp-chat:/parent".to_owned();
    let sub = subagent_chat("toolu_sub");
    rig.engine.set_chat_parent(&sub, Some(parent.clone()));
    let k = key(&sub, "c1");
    rig.set(server_confirmation(&sub, "c1", "shell"));
    // A: the parent view's subagent group (a subscription to the parent chat).
    let a = rig
        .engine
        .claim_chat(parent.clone(), Claimant::new("parent-view"));
    // B: an observer attached directly to the subagent chat.
    let b = rig.engine.claim(k.clone(), Claimant::new("subagent-view"));

    rig.time.at(1000).await;
    drop(a);
    rig.time.at(5000).await;
    assert_eq!(rig.sent.count(), 0, "still claimed by B");

    rig.time.at(7000).await;
    drop(b);
    rig.time.at(11_999).await;
    assert_eq!(rig.sent.count(), 0, "nothing at t=11999");
    rig.time.at(12_000).await;
    let sent = rig.sent.for_call(&k, AnswerKind::ToolCallConfirmed);
    assert_eq!(sent.len(), 1);
    assert_eq!(rig.ms(&sent[0]), 12_000);
    assert_eq!(sent[0].chat, sub);
    assert_eq!(sent[0].wire()["reason"], json!("denied"));
}

// 11. Sibling observers, single execution.
#[tokio::test(start_paused = true)]
async fn s11_sibling_observers_single_execution() {
    let sent = Arc::new(Recorder::default());
    let fake = tools();
    let registry = EngineRegistry::new({
        let sent = Arc::clone(&sent);
        let fake = fake.clone();
        move |_| {
            SessionEngine::new(
                EngineConfig::responder(CLIENT),
                Arc::clone(&sent) as Arc<dyn AnswerSink>,
                Arc::new(fake.clone()),
            )
        }
    });
    let session = session().into_string();
    let default_view = registry.attach(&session, "default-chat-view").unwrap();
    let peer_view = registry.attach(&session, "peer-chat-view").unwrap();
    assert_eq!(registry.len(), 1, "one engine, two attachments");
    assert_eq!(default_view.attachment_count(), 2);

    let k = key(PEER_CHAT, "c1");
    let _default_claims_its_chat =
        default_view.claim_chat(CHAT.to_owned(), Claimant::new("default-view"));
    let _peer_claims_the_call = peer_view.claim(k.clone(), Claimant::new("peer-view"));
    // Both observers feed the session stream to the same engine.
    for engine in [&default_view, &peer_view] {
        engine.apply(SessionUpdate::set(client_execution(
            PEER_CHAT,
            "c1",
            "browser",
            CLIENT,
            "user-action",
            "{}",
        )));
    }
    settle().await;

    let invoked = fake.invoked();
    assert_eq!(invoked.len(), 1, "exactly one local invocation");
    assert_eq!(invoked[0].context, Some(Claimant::new("peer-view")));
    assert!(!registry.detach(&session, "default-chat-view"));
    assert!(registry.detach(&session, "peer-chat-view"));
    assert!(registry.is_empty());
}

/// Scenario 12's common part: the local approval across the remove-before-add gap.
async fn approve_across_the_gap(rig: &Rig, k: &ToolCallKey) -> crate::SharedInvocation {
    rig.set(client_confirmation(
        CHAT,
        "c1",
        "edit",
        CLIENT,
        r#"{"path":"a"}"#,
    ));
    rig.time.at(0).await;
    let shown = rig.engine.invocation(k).unwrap();
    assert_eq!(shown.status(), InvocationStatus::AwaitingConfirmation);
    assert!(shown.decide(user_action()));
    rig.time.at(10).await;

    let confirmed = rig.sent.for_call(k, AnswerKind::ToolCallConfirmed);
    assert_eq!(confirmed.len(), 1);
    assert_eq!(
        confirmed[0].wire(),
        json!({
            "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": "c1",
            "approved": true, "confirmed": "user-action"
        })
    );
    assert_eq!(rig.tools.invoked().len(), 1, "the body runs");
    let token = rig.tools.invoked()[0].token.clone();

    // The host's two separate updates.
    rig.remove(&tool_confirmation_id(k));
    rig.time.at(20).await;
    assert!(
        !token.is_cancelled(),
        "the removal does not cancel the token"
    );
    rig.set(client_execution(
        CHAT,
        "c1",
        "edit",
        CLIENT,
        "user-action",
        r#"{"path":"a"}"#,
    ));
    rig.time.at(30).await;
    let after = rig.engine.invocation(k).unwrap();
    assert!(
        after.same(&shown),
        "same shared invocation before and after"
    );
    assert_eq!(
        rig.tools.invoked().len(),
        1,
        "the local invocation happened once"
    );
    assert_eq!(
        rig.engine.answer(
            &CHAT.to_owned(),
            answers::approve_parameters(k, ToolCallConfirmationReason::UserAction, None)
        ),
        AnswerOutcome::Duplicate,
        "the funnel blocks a second confirmation"
    );
    shown
}

// 12. Local approval across the gap (completion).
#[tokio::test(start_paused = true)]
async fn s12_local_approval_across_the_gap_completes_once() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    let shown = approve_across_the_gap(&rig, &k).await;
    rig.tools.finish(&k);
    rig.time.at(40).await;
    assert_eq!(rig.sent.completions(&k).len(), 1, "exactly one completion");
    assert!(matches!(shown.status(), InvocationStatus::Completed(r) if r.success));
    assert_eq!(shown.snapshot().body_runs, 1);
}

// 12 (end). Removed(toolClientExecution) while the tool is still executing.
#[tokio::test(start_paused = true)]
async fn s12_removal_of_the_execution_entry_cancels_without_completion() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    let shown = approve_across_the_gap(&rig, &k).await;
    let token = rig.tools.invoked()[0].token.clone();
    rig.remove(&tool_client_execution_id(&k));
    rig.time.at(40).await;
    assert!(token.is_cancelled(), "token cancelled");
    rig.tools.finish(&k);
    rig.time.at(100).await;
    assert!(rig.sent.completions(&k).is_empty(), "no completion");
    assert_eq!(shown.status(), InvocationStatus::Cancelled);
}

// 13. Confirmation vanishes while waiting.
#[tokio::test(start_paused = true)]
async fn s13_confirmation_vanishes_while_waiting() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.set(client_confirmation(CHAT, "c1", "edit", CLIENT, "{}"));
    rig.time.at(0).await;
    let shown = rig.engine.invocation(&k).unwrap();
    assert_eq!(shown.status(), InvocationStatus::AwaitingConfirmation);

    rig.remove(&tool_confirmation_id(&k));
    rig.time.at(10_000).await;
    assert_eq!(shown.status(), InvocationStatus::Cancelled);
    assert!(!shown.decide(user_action()), "the attempt is gone");
    assert_eq!(rig.sent.count(), 0, "zero completions, zero confirmations");
    assert!(rig.tools.invoked().is_empty());
}

// 14. Remote skip.
#[tokio::test(start_paused = true)]
async fn s14_remote_skip_never_runs_the_body() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.set(client_confirmation(CHAT, "c1", "edit", CLIENT, "{}"));
    rig.time.at(0).await;
    let shown = rig.engine.invocation(&k).unwrap();

    let skip: StateAction = serde_json::from_value(json!({
        "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": "c1",
        "approved": false, "reason": "skipped"
    }))
    .unwrap();
    assert!(rig.engine.apply_envelope(&ActionEnvelope {
        channel: CHAT.to_owned(),
        action: skip,
        server_seq: 7,
        origin: None,
        rejection_reason: None,
    }));
    rig.time.at(10).await;
    assert_eq!(
        shown.status(),
        InvocationStatus::Cancelled,
        "view shows cancelled"
    );
    assert!(!shown.decide(user_action()));
    // The host removes the entry afterwards; nothing happens either way.
    rig.remove(&tool_confirmation_id(&k));
    rig.time.at(10_000).await;
    assert!(rig.tools.invoked().is_empty(), "the tool body never runs");
    assert_eq!(rig.sent.count(), 0, "zero completions from this engine");
}

// 15. Reason preservation.
#[tokio::test(start_paused = true)]
async fn s15_reason_preservation() {
    let cases = [
        ("not-needed", LocalGate::NotNeeded, None),
        ("setting", LocalGate::ApprovedBySetting, None),
        ("user-action", LocalGate::Ask, Some(user_action())),
    ];
    for (expected, gate, decision) in cases {
        let fake = FakeTools::with(&[("tool", ToolScript::confirmable().gate(gate))]);
        let rig = Rig::responder(fake);
        let k = key(CHAT, "c1");
        let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
        rig.set(client_confirmation(CHAT, "c1", "tool", CLIENT, "{}"));
        rig.time.at(0).await;
        if let Some(decision) = decision {
            assert!(rig.engine.invocation(&k).unwrap().decide(decision));
            rig.time.at(1).await;
        }
        let types = rig.sent.types();
        assert_eq!(
            types,
            ["chat/toolCallConfirmed", "chat/toolCallComplete"],
            "{expected}"
        );
        let sent = rig.sent.all();
        assert_eq!(sent[0].wire()["confirmed"], json!(expected));
        assert_eq!(sent[0].wire()["approved"], json!(true));
        assert_eq!(sent[1].wire()["result"]["success"], json!(true));
    }
}

// 16. Tool that needs no confirmation under a protocol confirmation.
#[tokio::test(start_paused = true)]
async fn s16_no_local_confirmation_under_a_protocol_confirmation() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let observed = rig.engine.invocation_or_create(&k, Presentation::default());
    let mut watch = observed.watch();
    let statuses = tokio::spawn(async move {
        let mut seen = Vec::new();
        while watch.changed().await.is_ok() {
            seen.push(watch.borrow_and_update().status.clone());
        }
        seen
    });
    rig.set(client_confirmation(CHAT, "c1", "search", CLIENT, "{}"));
    rig.time.at(0).await;

    let invoked = rig.tools.invoked();
    assert_eq!(invoked.len(), 1, "one local invocation");
    assert_eq!(invoked[0].pre_approval, None, "no pre-approval");
    assert!(rig.tools.confirmations_asked().is_empty());
    assert_eq!(
        rig.sent.types(),
        ["chat/toolCallConfirmed", "chat/toolCallComplete"]
    );
    assert_eq!(rig.sent.all()[0].wire()["confirmed"], json!("not-needed"));
    rig.remove(&tool_confirmation_id(&k));
    drop(observed);
    rig.time.at(1).await;
    rig.engine.dispose();
    let seen = statuses.await.unwrap();
    assert!(
        !seen.contains(&InvocationStatus::AwaitingConfirmation),
        "never AwaitingLocalConfirmation: {seen:?}"
    );
}

// 17. Subagent client tool, observer first.
#[tokio::test(start_paused = true)]
async fn s17_subagent_client_tool_observer_first() {
    let rig = Rig::responder(tools());
    let parent_chat = "ahp-chat:/parent".to_owned();
    let sub = subagent_chat("toolu_task");
    rig.engine.set_chat_parent(&sub, Some(parent_chat.clone()));
    let k = key(&sub, "c1");

    // The subagent observer renders the call first, then claims it.
    let rendered = rig.engine.invocation_or_create(&k, Presentation::default());
    let _claim = rig.engine.claim(k.clone(), Claimant::new("subagent-view"));
    rig.set(client_execution(
        &sub,
        "c1",
        "browser",
        CLIENT,
        "user-action",
        "{}",
    ));
    rig.time.at(0).await;

    let invoked = rig.tools.invoked();
    assert_eq!(invoked.len(), 1, "invoked once");
    assert_eq!(
        invoked[0].invocation_id,
        rendered.id(),
        "the rendered invocation"
    );
    let group = rendered.snapshot().presentation.subagent_group.unwrap();
    assert_eq!(group.parent_tool_call_id, "toolu_task");
    assert_eq!(group.parent_chat, Some(parent_chat));
    let done = rig.sent.completions(&k);
    assert_eq!(done.len(), 1);
    assert_eq!(
        done[0].chat, sub,
        "the completion goes to the subagent chat"
    );
    assert!(rig.engine.invocation(&k).unwrap().same(&rendered));
}

// 17 (P8). Headless before its observer rendered: still grouped, no second invocation.
#[tokio::test(start_paused = true)]
async fn s17_headless_first_still_lands_in_the_subagent_group() {
    let rig = Rig::responder(tools());
    let sub = subagent_chat("toolu_task");
    let k = key(&sub, "c1");
    rig.set(client_execution(
        &sub,
        "c1",
        "search",
        CLIENT,
        "not-needed",
        "{}",
    ));
    rig.time.at(0).await;
    let late = rig.engine.invocation_or_create(&k, Presentation::default());
    assert_eq!(late.id(), rig.tools.invoked()[0].invocation_id);
    assert!(matches!(late.status(), InvocationStatus::Completed(r) if r.success));
    assert_eq!(
        late.snapshot()
            .presentation
            .subagent_group
            .unwrap()
            .parent_tool_call_id,
        "toolu_task"
    );
    assert_eq!(rig.tools.invoked().len(), 1);
}

// 18. Provider error tears down observers.
#[tokio::test(start_paused = true)]
async fn s18_provider_error_tears_down_observers() {
    let rig = Rig::responder(tools());
    let parent = "ahp-chat:/parent".to_owned();
    let subs: Vec<Uri> = (0..3)
        .map(|i| subagent_chat(&format!("toolu_{i}")))
        .collect();
    for sub in &subs {
        rig.engine.set_chat_parent(sub, Some(parent.clone()));
    }
    rig.set(server_confirmation(&parent, "p1", "shell"));
    let mut observers = vec![
        rig.engine
            .claim_chat(parent.clone(), Claimant::new("parent")),
    ];
    for (i, sub) in subs.iter().enumerate() {
        observers.push(
            rig.engine
                .claim_chat(sub.clone(), Claimant::new(format!("sub-{i}"))),
        );
    }
    rig.time.at(100).await;

    // chat/error on the parent: its entries go, every observer is disposed at once.
    rig.remove(&tool_confirmation_id(&key(&parent, "p1")));
    drop(observers);
    rig.time.at(112).await;

    // The subagent turns keep running.
    let headless = key(&subs[0], "s1");
    let confirmable = key(&subs[1], "s2");
    rig.set(client_execution(
        &subs[0],
        "s1",
        "search",
        CLIENT,
        "not-needed",
        "{}",
    ));
    rig.set(client_execution(
        &subs[1],
        "s2",
        "browser",
        CLIENT,
        "user-action",
        "{}",
    ));
    rig.set(chat_input(&subs[2], "q1"));
    rig.time.at(112).await;
    assert_eq!(
        rig.tools.invoked().len(),
        1,
        "non-confirmable runs headless at once"
    );
    assert_eq!(rig.sent.completions(&headless).len(), 1);

    rig.time.at(5111).await;
    assert!(rig.sent.completions(&confirmable).is_empty());
    rig.time.at(5112).await;
    let denied = rig.sent.completions(&confirmable);
    assert_eq!(denied.len(), 1);
    assert_eq!(code(&denied[0]).as_deref(), Some("clientUnavailable"));
    assert_eq!(denied[0].chat, subs[1]);
    let inputs: Vec<Sent> = rig
        .sent
        .all()
        .into_iter()
        .filter(|s| s.wire()["type"] == json!("chat/inputCompleted"))
        .collect();
    assert_eq!(
        inputs.len(),
        1,
        "the subagent elicitation follows its policy"
    );
    assert_eq!(inputs[0].chat, subs[2]);
    assert!(!rig.engine.is_disposed(), "the engine is unaffected");
    assert_eq!(rig.sent.count(), 3, "every entry answered exactly once");
}

// 19. Reload with a running client execution.
#[tokio::test(start_paused = true)]
async fn s19_reload_with_a_running_client_execution() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    // The new process's observer builds its placeholder from the chat snapshot.
    let placeholder = rig.engine.invocation_or_create(
        &k,
        Presentation {
            display_name: Some("Browser".to_owned()),
            ..Presentation::default()
        },
    );
    let _claim = rig.engine.claim(k.clone(), Claimant::new("rebuilt-view"));
    let mut state = FakeSession::with_status(SessionStatus::InProgress.bits()).state;
    state.input_needed = Some(vec![client_execution(
        CHAT,
        "c1",
        "browser",
        CLIENT,
        "user-action",
        "{}",
    )]);
    rig.engine.apply_session_state(&state);
    rig.time.at(0).await;
    rig.engine.apply_session_state(&state);
    rig.time.at(1000).await;

    assert_eq!(rig.tools.invoked().len(), 1, "executed exactly once");
    assert_eq!(rig.tools.invoked()[0].invocation_id, placeholder.id());
    assert!(
        matches!(placeholder.status(), InvocationStatus::Completed(r) if r.success),
        "the placeholder is settled, not orphaned"
    );
    assert_eq!(rig.sent.completions(&k).len(), 1);
}

// 20. Re-snapshot with equal entries.
#[tokio::test(start_paused = true)]
async fn s20_resnapshot_with_equal_entries_changes_nothing() {
    let rig = Rig::responder(tools());
    let waiting = client_execution(CHAT, "c1", "browser", CLIENT, "user-action", "{}");
    let running = client_execution(CHAT, "c2", "slow", CLIENT, "not-needed", "{}");
    let list = vec![waiting.clone(), running.clone(), chat_input(CHAT, "r1")];
    rig.engine.apply(SessionUpdate::Snapshot(list.clone()));
    rig.time.at(0).await;
    let id = tool_client_execution_id(&key(CHAT, "c1"));
    let deadline = rig.engine.grace_deadline(&id).unwrap();
    assert_eq!(deadline, rig.time.instant(5000));
    let invocation = rig.engine.invocation(&key(CHAT, "c2")).unwrap();

    rig.time.at(2000).await;
    rig.engine.apply(SessionUpdate::Snapshot(list.clone()));
    // A change of pre-approval only is the same obligation: no timer reset either.
    rig.set(client_execution(
        CHAT, "c1", "browser", CLIENT, "setting", "{}",
    ));
    rig.set(waiting.clone());
    rig.time.at(2000).await;
    assert_eq!(
        rig.engine.grace_deadline(&id),
        Some(deadline),
        "no timer reset"
    );
    assert_eq!(
        rig.engine.grace_deadline(&chat_input_id(CHAT, "r1")),
        Some(rig.time.instant(5000))
    );
    assert_eq!(rig.tools.invoked().len(), 1, "no new invocation");
    assert!(
        rig.engine
            .invocation(&key(CHAT, "c2"))
            .unwrap()
            .same(&invocation)
    );

    rig.time.at(5000).await;
    assert_eq!(
        rig.sent.completions(&key(CHAT, "c1")).len(),
        1,
        "denied on time"
    );
}

// 21. Client executions are not user-blocking (reducer).
#[test]
fn s21_client_executions_are_not_user_blocking() {
    let read = SessionStatus::IsRead.bits();
    let archived = SessionStatus::IsArchived.bits();
    let in_progress = SessionStatus::InProgress.bits();
    let input_needed = SessionStatus::InputNeeded.bits();
    let k = key(CHAT, "c1");
    let execution = client_execution(CHAT, "c1", "browser", CLIENT, "user-action", "{}");
    let confirmation = client_confirmation(CHAT, "c1", "browser", CLIENT, "{}");
    assert!(!is_user_blocking(&execution));
    assert!(is_user_blocking(&confirmation));

    let mut host = FakeSession::with_status(in_progress | read);
    host.set(execution.clone());
    assert_eq!(
        host.status(),
        in_progress | read,
        "[toolClientExecution] → InProgress"
    );

    let mut host = FakeSession::with_status(in_progress | read);
    host.set(confirmation);
    assert_eq!(
        host.status(),
        input_needed | read,
        "[toolConfirmation] → InputNeeded"
    );
    host.remove(&tool_confirmation_id(&k));
    host.set(execution);
    assert_eq!(
        host.status(),
        in_progress | read,
        "approval clears InputNeeded"
    );

    let idle = SessionStatus::Idle.bits();
    let mut host = FakeSession::with_status(idle | archived);
    host.remove("absent");
    assert_eq!(
        host.status(),
        idle | archived,
        "[] on an idle session → Idle"
    );
    host.set(chat_input(CHAT, "r1"));
    host.remove(&chat_input_id(CHAT, "r1"));
    assert!(SessionStatus::from_bits(host.status()).contains(SessionStatus::IsArchived));
    assert_eq!(host.status() & input_needed & !in_progress, 0);
}

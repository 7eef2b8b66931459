//! Engine behaviour beyond the scenarios of `scenarios_tests.rs`: pitfalls P1–P14, policies,
//! failure codes, disposal and leak checks. All on tokio's paused clock.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use agenthost_protocol::ahp_types::state::{ToolCallConfirmationReason, ToolResultContent};
use agenthost_protocol::ids::InputKey;
use agenthost_reducers::projection::{
    chat_input_id, tool_authentication_id, tool_client_execution_id, tool_confirmation_id,
};
use serde_json::json;

use super::*;
use crate::answers::AnswerKind;
use crate::fixtures::*;
use crate::harness::*;
use crate::{
    AnswerOutcome, ClaimKey, ClientConfirmationMode, EngineStats, InvocationStatus, LocalDecision,
    LocalGate, NoLocalTools, SubscriptionClaims, UnattendedPolicy,
};

fn tools() -> FakeTools {
    FakeTools::with(&[
        ("search", ToolScript::plain()),
        ("browser", ToolScript::confirmable()),
        ("edit", ToolScript::confirmable().blocking()),
        ("slow", ToolScript::plain().blocking()),
    ])
}

fn code(sent: &Sent) -> Option<String> {
    sent.wire()["result"]["error"]["code"]
        .as_str()
        .map(str::to_owned)
}

fn assert_clean(stats: EngineStats) {
    assert_eq!(
        stats,
        EngineStats::default(),
        "nothing may leak once the queue is empty"
    );
}

#[tokio::test(start_paused = true)]
async fn creating_an_engine_outside_a_runtime_is_an_error() {
    let error = std::thread::spawn(|| {
        SessionEngine::new(
            EngineConfig::default(),
            Arc::new(Recorder::default()),
            Arc::new(NoLocalTools),
        )
        .map(|_| ())
    })
    .join()
    .unwrap()
    .unwrap_err();
    assert!(
        error.to_string().contains("inside a Tokio runtime"),
        "{error}"
    );
}

// P2: the multiset, and the oldest live claimant as context.
#[tokio::test(start_paused = true)]
async fn claims_are_a_multiset_and_the_oldest_claimant_is_the_context() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let first = rig.engine.claim(k.clone(), Claimant::new("first"));
    let second = rig.engine.claim(k.clone(), Claimant::new("second"));
    let _third = rig.engine.claim(k.clone(), Claimant::new("third"));
    assert_ne!(first.id(), second.id());
    assert_eq!(second.claimant(), &Claimant::new("second"));
    // The oldest releases before the run starts: the next oldest is used.
    first.release();
    rig.set(client_execution(
        CHAT,
        "c1",
        "browser",
        CLIENT,
        "user-action",
        "{}",
    ));
    rig.time.at(0).await;
    assert_eq!(
        rig.tools.invoked()[0].context,
        Some(Claimant::new("second"))
    );
    assert_eq!(rig.engine.stats().claims, 2);
}

#[tokio::test(start_paused = true)]
async fn claims_on_the_same_key_by_the_same_claimant_are_still_two() {
    let rig = Rig::responder(tools());
    rig.set(server_confirmation(CHAT, "c1", "shell"));
    let k = key(CHAT, "c1");
    let a = rig.engine.claim(k.clone(), Claimant::new("same"));
    let _b = rig.engine.claim(k.clone(), Claimant::new("same"));
    drop(a);
    rig.time.at(20_000).await;
    assert_eq!(rig.sent.count(), 0, "the second claim still holds");
}

// P1: a claim appearing and disappearing inside the window restarts a full window.
#[tokio::test(start_paused = true)]
async fn a_claim_inside_the_window_restarts_a_full_window() {
    let rig = Rig::responder(tools());
    rig.set(chat_input(CHAT, "r1"));
    rig.time.at(1000).await;
    let claim = rig
        .engine
        .claim(InputKey::new(CHAT, "r1"), Claimant::new("v"));
    rig.time.at(2000).await;
    drop(claim);
    rig.time.at(6999).await;
    assert_eq!(rig.sent.count(), 0, "not the remainder of the first window");
    rig.time.at(7000).await;
    assert_eq!(rig.sent.count(), 1);
}

// P9: releasing a claim never clears the funnel.
#[tokio::test(start_paused = true)]
async fn releasing_a_claim_never_reopens_the_funnel() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    rig.set(server_confirmation(CHAT, "c1", "shell"));
    let claim = rig.engine.claim(k.clone(), Claimant::new("v"));
    let deny = answers::deny_parameters(&k, None, None);
    assert_eq!(
        rig.engine.answer(&CHAT.to_owned(), deny.clone()),
        AnswerOutcome::Dispatched
    );
    drop(claim);
    assert_eq!(
        rig.engine.answer(&CHAT.to_owned(), deny),
        AnswerOutcome::Duplicate
    );
    rig.time.at(20_000).await;
    assert_eq!(
        rig.sent.count(),
        1,
        "the policy does not answer an answered entry"
    );
    // Confirming and completing are distinct outcomes.
    assert_eq!(
        rig.engine.answer(
            &CHAT.to_owned(),
            answers::complete(&k, answers::text_result("x", "y"))
        ),
        AnswerOutcome::Dispatched
    );
}

#[tokio::test(start_paused = true)]
async fn observer_answers_for_inputs_and_drafts() {
    let rig = Rig::responder(tools());
    rig.set(chat_input(CHAT, "r1"));
    let draft: StateAction = serde_json::from_value(json!({
        "type": "chat/inputAnswerChanged", "requestId": "r1", "questionId": "q"
    }))
    .unwrap();
    assert_eq!(
        rig.engine.answer(&CHAT.to_owned(), draft),
        AnswerOutcome::Forwarded
    );
    let accept: StateAction = serde_json::from_value(json!({
        "type": "chat/inputCompleted", "requestId": "r1", "response": "accept"
    }))
    .unwrap();
    assert_eq!(
        rig.engine.answer(&CHAT.to_owned(), accept.clone()),
        AnswerOutcome::Dispatched
    );
    assert_eq!(
        rig.engine.answer(&CHAT.to_owned(), accept),
        AnswerOutcome::Duplicate
    );
    rig.time.at(10_000).await;
    assert_eq!(
        rig.sent.types(),
        ["chat/inputAnswerChanged", "chat/inputCompleted"]
    );
    rig.remove(&chat_input_id(CHAT, "r1"));
    assert_clean(rig.engine.stats());
}

// P10 + auto-answers: the answer matches the gate, whatever the engine's role.
#[tokio::test(start_paused = true)]
async fn authentication_is_given_up_after_the_grace_window() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "a1");
    rig.set(authentication(CHAT, "a1", "issues"));
    rig.time.at(4999).await;
    assert_eq!(rig.sent.count(), 0);
    rig.time.at(5000).await;
    let sent = rig.sent.completions(&k);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].wire()["result"],
        json!({
            "success": false, "pastTenseMessage": "Cancelled tool call",
            "error": { "message": "Authentication was cancelled", "code": "cancelled" }
        })
    );
    rig.remove(&tool_authentication_id(&k));
    assert_clean(rig.engine.stats());
}

#[tokio::test(start_paused = true)]
async fn a_client_engine_waits_for_every_user_facing_kind() {
    let rig = Rig::new(EngineConfig::client(CLIENT), tools());
    rig.set(chat_input(CHAT, "r1"));
    rig.set(server_confirmation(CHAT, "c1", "shell"));
    rig.set(result_confirmation(CHAT, "c2", "shell"));
    rig.set(authentication(CHAT, "c3", "issues"));
    rig.time.at(60_000).await;
    assert_eq!(rig.sent.count(), 0);
    assert_eq!(rig.engine.stats().timers, 0);
    // …but still runs (and denies) its own client tools.
    rig.set(client_execution(
        CHAT,
        "c4",
        "browser",
        CLIENT,
        "user-action",
        "{}",
    ));
    rig.time.at(65_000).await;
    assert_eq!(
        code(&rig.sent.completions(&key(CHAT, "c4"))[0]).as_deref(),
        Some("clientUnavailable")
    );
}

// The host's unattended policy.
#[tokio::test(start_paused = true)]
async fn unattended_allow_approves_listed_tools_and_denies_the_rest() {
    let policy: UnattendedPolicy = "allow=read_file".parse().unwrap();
    let rig = Rig::new(
        policy.engine_config(Duration::from_secs(5)),
        FakeTools::default(),
    );
    rig.set(server_confirmation(CHAT, "c1", "read_file"));
    rig.set(server_confirmation(CHAT, "c2", "shell"));
    rig.set(result_confirmation(CHAT, "c3", "read_file"));
    rig.set(result_confirmation(CHAT, "c4", "shell"));
    rig.set(chat_input(CHAT, "r1"));
    rig.set(authentication(CHAT, "c5", "read_file"));
    // Another client's client-owned confirmation is a confirmation to the host, too.
    rig.set(client_confirmation(
        CHAT,
        "c6",
        "browser",
        OTHER_CLIENT,
        "{}",
    ));
    rig.time.at(5000).await;

    let wire = |call: &str, kind| {
        let sent = rig.sent.for_call(&key(CHAT, call), kind);
        assert_eq!(sent.len(), 1, "{call}");
        sent[0].wire()
    };
    let approved = wire("c1", AnswerKind::ToolCallConfirmed);
    assert_eq!(approved["approved"], json!(true));
    assert_eq!(approved["confirmed"], json!("setting"));
    let denied = wire("c2", AnswerKind::ToolCallConfirmed);
    assert_eq!(denied["approved"], json!(false));
    assert_eq!(denied["reason"], json!("denied"));
    assert!(denied["reasonMessage"].as_str().unwrap().contains("Shell"));
    assert_eq!(
        wire("c3", AnswerKind::ToolCallResultConfirmed)["approved"],
        json!(true)
    );
    assert_eq!(
        wire("c4", AnswerKind::ToolCallResultConfirmed)["approved"],
        json!(false)
    );
    assert_eq!(
        wire("c5", AnswerKind::ToolCallComplete)["result"]["error"]["code"],
        json!("cancelled")
    );
    assert_eq!(
        wire("c6", AnswerKind::ToolCallConfirmed)["reason"],
        json!("denied")
    );
    assert_eq!(rig.sent.count(), 7);
    assert!(rig.tools.invoked().is_empty(), "the host executes nothing");
}

#[tokio::test(start_paused = true)]
async fn unattended_off_does_nothing() {
    let rig = Rig::new(
        UnattendedPolicy::Off.engine_config(Duration::from_secs(5)),
        FakeTools::default(),
    );
    rig.set(server_confirmation(CHAT, "c1", "shell"));
    rig.set(chat_input(CHAT, "r1"));
    rig.set(authentication(CHAT, "c2", "x"));
    rig.time.at(100_000).await;
    assert_eq!(rig.sent.count(), 0);
}

// On the host a claim is a live subscription; subagent chats are covered by their parent.
#[tokio::test(start_paused = true)]
async fn subscriptions_claim_their_chat_and_disconnect_releases() {
    let rig = Rig::new(
        UnattendedPolicy::Deny.engine_config(Duration::from_secs(5)),
        FakeTools::default(),
    );
    let parent = CHAT.to_owned();
    let sub = "ahp-chat:/sub".to_owned();
    rig.engine.set_chat_parent(&sub, Some(parent.clone()));
    let mut claims = SubscriptionClaims::new(rig.engine.clone());
    claims.subscribed("conn-1", &parent);
    claims.subscribed("conn-1", &parent);
    claims.subscribed("conn-2", &PEER_CHAT.to_owned());
    assert_eq!(claims.len(), 2);
    rig.set(server_confirmation(&parent, "c1", "shell"));
    rig.set(server_confirmation(&sub, "c2", "shell"));
    rig.set(chat_input(&sub, "r1"));
    rig.time.at(5000).await;
    // The subagent's elicitation is not covered by the parent subscription (P13).
    assert_eq!(rig.sent.types(), ["chat/inputCompleted"]);
    assert_eq!(rig.sent.all()[0].chat, sub);

    rig.time.at(8000).await;
    claims.unsubscribed("conn-2", &PEER_CHAT.to_owned());
    claims.disconnected("conn-1");
    assert!(claims.is_empty());
    rig.time.at(12_999).await;
    assert_eq!(rig.sent.count(), 1);
    rig.time.at(13_000).await;
    assert_eq!(
        rig.sent.count(),
        3,
        "both confirmations denied a full window later"
    );
}

#[tokio::test(start_paused = true)]
async fn parent_claims_may_cover_subagent_inputs_when_configured() {
    let config = EngineConfig {
        parent_claims_subagent_inputs: true,
        ..UnattendedPolicy::Deny.engine_config(Duration::from_secs(5))
    };
    let rig = Rig::new(config, FakeTools::default());
    let sub = "ahp-chat:/sub".to_owned();
    rig.engine.set_chat_parent(&sub, Some(CHAT.to_owned()));
    let _claim = rig.engine.claim_chat(CHAT, Claimant::new("conn"));
    rig.set(chat_input(&sub, "r1"));
    rig.time.at(60_000).await;
    assert_eq!(rig.sent.count(), 0);
}

// P11: a started run waiting on a local confirmation follows the grace rule.
#[tokio::test(start_paused = true)]
async fn a_local_confirmation_nobody_can_answer_times_out() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.set(client_confirmation(CHAT, "c1", "edit", CLIENT, "{}"));
    rig.time.at(1000).await;
    let shown = rig.engine.invocation(&k).unwrap();
    assert_eq!(shown.status(), InvocationStatus::AwaitingConfirmation);
    drop(claim);
    rig.time.at(3000).await;
    let back = rig.engine.claim(k.clone(), Claimant::new("view-again"));
    rig.time.at(7000).await;
    assert_eq!(rig.sent.count(), 0, "a new claim disarmed the window");
    drop(back);
    rig.time.at(11_999).await;
    assert_eq!(rig.sent.count(), 0);
    rig.time.at(12_000).await;

    let sent = rig.sent.all();
    assert_eq!(sent.len(), 1, "exactly one answer");
    assert_eq!(code(&sent[0]).as_deref(), Some("clientUnavailable"));
    assert!(
        rig.sent
            .for_call(&k, AnswerKind::ToolCallConfirmed)
            .is_empty(),
        "no chat/toolCallConfirmed for this timeout"
    );
    assert!(!shown.decide(LocalDecision::Approve {
        reason: ToolCallConfirmationReason::UserAction,
        selected_option_id: None
    }));
    assert!(rig.tools.invoked().is_empty(), "the body never runs");
}

#[tokio::test(start_paused = true)]
async fn a_local_denial_is_reflected_and_ends_the_call() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.set(client_confirmation(CHAT, "c1", "edit", CLIENT, "{}"));
    rig.time.at(0).await;
    let shown = rig.engine.invocation(&k).unwrap();
    assert!(shown.decide(LocalDecision::Deny {
        selected_option_id: Some("deny-once".to_owned())
    }));
    rig.time.at(10).await;
    assert_eq!(
        rig.sent.all()[0].wire(),
        json!({
            "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": "c1",
            "approved": false, "reason": "denied", "selectedOptionId": "deny-once"
        })
    );
    assert_eq!(shown.status(), InvocationStatus::Cancelled);
    rig.time.at(20_000).await;
    assert_eq!(rig.sent.count(), 1, "the denied entry is not run again");
    assert!(rig.tools.invoked().is_empty());
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_view_is_a_denial() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.set(client_confirmation(CHAT, "c1", "edit", CLIENT, "{}"));
    rig.time.at(0).await;
    rig.engine.invocation(&k).unwrap().cancel();
    rig.time.at(10).await;
    assert_eq!(rig.sent.all()[0].wire()["reason"], json!("denied"));
}

// P7: approved elsewhere while the local confirmation shows → exactly one run.
#[tokio::test(start_paused = true)]
async fn a_remote_approval_while_the_local_confirmation_shows_runs_once() {
    for execution_first in [false, true] {
        let rig = Rig::responder(tools());
        let k = key(CHAT, "c1");
        let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
        rig.set(client_confirmation(CHAT, "c1", "edit", CLIENT, "{}"));
        rig.time.at(0).await;
        let shown = rig.engine.invocation(&k).unwrap();
        assert_eq!(shown.status(), InvocationStatus::AwaitingConfirmation);
        let execution = client_execution(CHAT, "c1", "edit", CLIENT, "user-action", "{}");
        if execution_first {
            rig.set(execution);
            rig.remove(&tool_confirmation_id(&k));
        } else {
            rig.remove(&tool_confirmation_id(&k));
            rig.set(execution);
        }
        rig.time.at(10).await;
        let invoked = rig.tools.invoked();
        assert_eq!(invoked.len(), 1, "exactly one run ({execution_first})");
        assert_eq!(
            invoked[0].pre_approval,
            Some(ToolCallConfirmationReason::UserAction)
        );
        assert_eq!(
            invoked[0].invocation_id,
            shown.id(),
            "same shared invocation"
        );
        rig.tools.finish(&k);
        rig.time.at(20).await;
        assert_eq!(rig.sent.types(), ["chat/toolCallComplete"]);
    }
}

// The confirmation → execution hand-over window is bounded.
#[tokio::test(start_paused = true)]
async fn a_handover_without_execution_entry_cancels_the_run() {
    let config = EngineConfig {
        handover_window: Duration::from_millis(700),
        ..EngineConfig::responder(CLIENT)
    };
    let rig = Rig::new(config, tools());
    let k = key(CHAT, "c1");
    rig.set(client_confirmation(CHAT, "c1", "slow", CLIENT, "{}"));
    rig.time.at(0).await;
    let token = rig.tools.invoked()[0].token.clone();
    rig.remove(&tool_confirmation_id(&k));
    rig.time.at(699).await;
    assert!(!token.is_cancelled());
    rig.time.at(700).await;
    assert!(token.is_cancelled());
    rig.tools.finish(&k);
    rig.time.at(800).await;
    assert!(rig.sent.completions(&k).is_empty());
    assert_clean(rig.engine.stats());
}

// P12: the binding mode never runs a client-owned pending confirmation headless.
#[tokio::test(start_paused = true)]
async fn host_gate_binding_mode_denies_unclaimed_and_asks_claimed() {
    let config = EngineConfig {
        client_confirmation: ClientConfirmationMode::HostGateBinding,
        ..EngineConfig::responder(CLIENT)
    };
    let rig = Rig::new(config, tools());
    rig.set(client_confirmation(CHAT, "c1", "search", CLIENT, "{}"));
    rig.time.at(4999).await;
    assert!(rig.tools.invoked().is_empty());
    rig.time.at(5000).await;
    assert_eq!(
        code(&rig.sent.completions(&key(CHAT, "c1"))[0]).as_deref(),
        Some("clientUnavailable")
    );

    let k = key(CHAT, "c2");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.set(client_confirmation(CHAT, "c2", "search", CLIENT, "{}"));
    rig.time.at(5001).await;
    let shown = rig.engine.invocation(&k).unwrap();
    assert_eq!(shown.status(), InvocationStatus::AwaitingConfirmation);
    assert!(shown.decide(LocalDecision::Approve {
        reason: ToolCallConfirmationReason::UserAction,
        selected_option_id: None
    }));
    rig.time.at(5002).await;
    assert_eq!(
        rig.sent.for_call(&k, AnswerKind::ToolCallConfirmed).len(),
        1
    );
    assert_eq!(rig.sent.completions(&k).len(), 1);
}

// The failure codes of a local run.
#[tokio::test(start_paused = true)]
async fn failures_settle_the_invocation_with_their_code() {
    let fake = tools();
    fake.set_input("ahp-content:/ok", Ok(r#"{"a":1}"#.to_owned()));
    fake.set_input("ahp-content:/list", Ok("[1]".to_owned()));
    let rig = Rig::responder(fake);
    let reference = |uri: &str| json!({ "uri": uri });
    let cases = [
        ("c1", "unknown_tool", json!("{}"), Some("toolUnavailable")),
        ("c2", "search", json!("[1,2]"), Some("invalidInput")),
        ("c3", "search", json!("not json"), Some("invalidInput")),
        (
            "c4",
            "search",
            reference("ahp-content:/missing"),
            Some("inputReadFailed"),
        ),
        (
            "c5",
            "search",
            reference("ahp-content:/list"),
            Some("invalidInput"),
        ),
        ("c6", "search", reference("ahp-content:/ok"), None),
    ];
    for (call, tool, input, _) in &cases {
        let mut entry = serde_json::to_value(client_execution(
            CHAT,
            call,
            tool,
            CLIENT,
            "not-needed",
            "{}",
        ))
        .unwrap();
        entry["toolCall"]["toolInput"] = input.clone();
        rig.set(crate::fixtures::entry(entry));
    }
    rig.time.at(100).await;
    for (call, _, _, expected) in cases {
        let k = key(CHAT, call);
        let done = rig.sent.completions(&k);
        assert_eq!(done.len(), 1, "{call}");
        assert_eq!(code(&done[0]).as_deref(), expected, "{call}");
        let status = rig.engine.invocation(&k).unwrap().status();
        assert!(matches!(status, InvocationStatus::Completed(_)), "{call}");
    }
    let invoked = rig.tools.invoked();
    assert_eq!(invoked.len(), 1);
    assert_eq!(
        serde_json::Value::Object(invoked[0].parameters.clone()),
        json!({ "a": 1 })
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_not_ready_waits_until_the_entry_changes() {
    let fake = tools();
    fake.set(
        "tool_search",
        ToolScript {
            not_ready: true,
            ..ToolScript::plain()
        },
    );
    let rig = Rig::responder(fake.clone());
    rig.set(client_execution(
        CHAT,
        "c1",
        "tool_search",
        CLIENT,
        "not-needed",
        "{}",
    ));
    rig.time.at(10_000).await;
    assert_eq!(rig.sent.count(), 0);
    assert_eq!(rig.engine.stats().timers, 0);
    fake.set("tool_search", ToolScript::plain());
    rig.set(client_execution(
        CHAT,
        "c1",
        "tool_search",
        CLIENT,
        "setting",
        "{}",
    ));
    rig.time.at(10_001).await;
    assert_eq!(rig.tools.invoked().len(), 1);
}

// P5: identity-relevant changes supersede a pending attempt, others are the same.
#[tokio::test(start_paused = true)]
async fn entry_changes_supersede_only_on_identity_fields() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.set(client_confirmation(
        CHAT,
        "c1",
        "edit",
        CLIENT,
        r#"{"v":1}"#,
    ));
    rig.time.at(0).await;
    let first = rig.engine.invocation(&k).unwrap();
    assert_eq!(rig.tools.confirmations_asked().len(), 1);

    // Only `_meta` changes: the same obligation.
    let mut meta_only = serde_json::to_value(client_confirmation(
        CHAT,
        "c1",
        "edit",
        CLIENT,
        r#"{"v":1}"#,
    ))
    .unwrap();
    meta_only["toolCall"]["_meta"] = json!({ "note": "x" });
    rig.set(crate::fixtures::entry(meta_only));
    rig.time.at(10).await;
    assert_eq!(rig.tools.confirmations_asked().len(), 1, "no new attempt");

    // The input changes before the body ran: the attempt is superseded and re-decided.
    rig.set(client_confirmation(
        CHAT,
        "c1",
        "edit",
        CLIENT,
        r#"{"v":2}"#,
    ));
    rig.time.at(20).await;
    assert_eq!(rig.tools.confirmations_asked().len(), 2);
    assert_eq!(
        rig.sent.count(),
        0,
        "the superseded attempt answers nothing"
    );
    let shown = rig.engine.invocation(&k).unwrap();
    assert!(shown.same(&first), "same shared invocation");
    assert!(shown.decide(LocalDecision::Approve {
        reason: ToolCallConfirmationReason::UserAction,
        selected_option_id: None
    }));
    rig.time.at(30).await;
    let invoked = rig.tools.invoked();
    assert_eq!(invoked.len(), 1);
    assert_eq!(
        serde_json::Value::Object(invoked[0].parameters.clone()),
        json!({ "v": 2 })
    );
    // After the body started, a change is ignored.
    rig.set(client_confirmation(
        CHAT,
        "c1",
        "edit",
        CLIENT,
        r#"{"v":3}"#,
    ));
    rig.time.at(40).await;
    assert_eq!(rig.tools.invoked().len(), 1);
    assert!(!invoked[0].token.is_cancelled());
}

#[tokio::test(start_paused = true)]
async fn two_entries_differing_only_in_pre_approval_run_once() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    rig.set(client_execution(
        CHAT,
        "c1",
        "slow",
        CLIENT,
        "not-needed",
        "{}",
    ));
    rig.set(client_execution(
        CHAT, "c1", "slow", CLIENT, "setting", "{}",
    ));
    rig.engine
        .apply(SessionUpdate::Snapshot(vec![client_execution(
            CHAT,
            "c1",
            "slow",
            CLIENT,
            "user-action",
            "{}",
        )]));
    rig.time.at(10).await;
    rig.tools.finish(&k);
    rig.time.at(20).await;
    assert_eq!(rig.tools.invoked().len(), 1);
    assert_eq!(rig.sent.completions(&k).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn streamed_content_is_dispatched_while_running() {
    struct Streaming;
    impl crate::ToolRunner for Streaming {
        fn lookup(&self, _: &str) -> crate::ToolLookup {
            crate::ToolLookup::Found(crate::ToolDescriptor {
                may_request_confirmation: false,
            })
        }
        fn execute(
            &self,
            call: crate::LocalCall,
        ) -> crate::BoxFuture<'static, agenthost_protocol::ahp_types::state::ToolCallResult>
        {
            Box::pin(async move {
                call.report_content(vec![ToolResultContent::Text(
                    agenthost_protocol::ahp_types::state::ToolResultTextContent {
                        text: "half".to_owned(),
                    },
                )]);
                answers::text_result("Ran", "all")
            })
        }
    }
    let sent = Arc::new(Recorder::default());
    let engine = SessionEngine::new(
        EngineConfig::responder(CLIENT),
        Arc::clone(&sent) as Arc<dyn AnswerSink>,
        Arc::new(Streaming),
    )
    .unwrap();
    engine.apply(SessionUpdate::set(client_execution(
        CHAT,
        "c1",
        "any",
        CLIENT,
        "not-needed",
        "{}",
    )));
    settle().await;
    assert_eq!(
        sent.types(),
        ["chat/toolCallContentChanged", "chat/toolCallComplete"]
    );
    let invocation = engine.invocation(&key(CHAT, "c1")).unwrap();
    assert_eq!(invocation.snapshot().content.map(|c| c.len()), Some(1));
}

// Disposal cancels runs without completions and ignores later updates.
#[tokio::test(start_paused = true)]
async fn disposal_cancels_everything_and_dispatches_nothing() {
    let rig = Rig::responder(tools());
    rig.engine.attach("chat-a");
    rig.engine.attach("chat-b");
    rig.set(client_execution(
        CHAT,
        "c1",
        "slow",
        CLIENT,
        "not-needed",
        "{}",
    ));
    rig.set(server_confirmation(CHAT, "c2", "shell"));
    let claim = rig.engine.claim(key(CHAT, "c3"), Claimant::new("v"));
    rig.time.at(10).await;
    let token = rig.tools.invoked()[0].token.clone();
    let invocation = rig.engine.invocation(&key(CHAT, "c1")).unwrap();
    assert!(!rig.engine.detach("chat-a"));
    assert!(!rig.engine.detach("unknown"));
    assert!(rig.engine.detach("chat-b"), "the last detach disposes");
    assert!(rig.engine.is_disposed());
    assert!(token.is_cancelled());
    assert_eq!(invocation.status(), InvocationStatus::Cancelled);
    rig.tools.finish(&key(CHAT, "c1"));
    rig.set(chat_input(CHAT, "r1"));
    drop(claim);
    rig.time.at(60_000).await;
    assert_eq!(rig.sent.count(), 0);
    assert_eq!(
        rig.engine.answer(
            &CHAT.to_owned(),
            answers::cancel_input(&InputKey::new(CHAT, "r1"))
        ),
        AnswerOutcome::Disposed
    );
    assert_clean(rig.engine.stats());
}

#[tokio::test(start_paused = true)]
async fn dropping_every_handle_stops_the_timer_driver() {
    let rig = Rig::responder(tools());
    rig.set(chat_input(CHAT, "r1"));
    let sent = Arc::clone(&rig.sent);
    drop(rig);
    tokio::time::advance(Duration::from_secs(10)).await;
    settle().await;
    assert_eq!(sent.count(), 0);
}

#[tokio::test(start_paused = true)]
async fn envelopes_drive_the_queue_and_the_chat_catalog() {
    let rig = Rig::new(
        UnattendedPolicy::Deny.engine_config(Duration::from_secs(5)),
        FakeTools::default(),
    );
    let envelope = |channel: &str, action: serde_json::Value, rejected: bool| {
        agenthost_protocol::ActionEnvelope {
            channel: channel.to_owned(),
            action: serde_json::from_value(action).unwrap(),
            server_seq: 1,
            origin: None,
            rejection_reason: rejected.then(|| "no".to_owned()),
        }
    };
    let session = "ahp-session:/s1";
    let added = json!({
        "type": "session/chatAdded",
        "summary": {
            "resource": "ahp-chat:/sub", "title": "sub", "status": 1,
            "modifiedAt": "2026-01-01T00:00:00.000Z",
            "origin": { "kind": "tool", "chat": CHAT, "toolCallId": "toolu_1" }
        }
    });
    assert!(rig.engine.apply_envelope(&envelope(session, added, false)));
    let set = json!({
        "type": "session/inputNeededSet",
        "request": serde_json::to_value(server_confirmation("ahp-chat:/sub", "c1", "shell")).unwrap()
    });
    assert!(
        !rig.engine
            .apply_envelope(&envelope(session, set.clone(), true)),
        "rejected echo"
    );
    assert_eq!(rig.engine.stats().entries, 0);
    assert!(rig.engine.apply_envelope(&envelope(session, set, false)));
    assert_eq!(rig.engine.stats().entries, 1);
    let _subscription = rig.engine.claim_chat(CHAT, Claimant::new("conn"));
    rig.time.at(10_000).await;
    assert_eq!(
        rig.sent.count(),
        0,
        "the parent subscription covers the subagent call"
    );
    let removed = json!({
        "type": "session/inputNeededRemoved",
        "id": tool_confirmation_id(&key("ahp-chat:/sub", "c1"))
    });
    assert!(
        rig.engine
            .apply_envelope(&envelope(session, removed, false))
    );
    let unrelated = json!({ "type": "session/titleChanged", "title": "x" });
    assert!(
        !rig.engine
            .apply_envelope(&envelope(session, unrelated, false))
    );
    assert_eq!(rig.engine.stats().entries, 0);
}

#[tokio::test(start_paused = true)]
async fn a_fresh_gate_reopens_its_funnel() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("v"));
    rig.set(server_confirmation(CHAT, "c1", "shell"));
    let deny = answers::deny_parameters(&k, None, None);
    assert_eq!(
        rig.engine.answer(&CHAT.to_owned(), deny.clone()),
        AnswerOutcome::Dispatched
    );
    rig.remove(&tool_confirmation_id(&k));
    // A mid-execution re-confirmation asks the same gate again: a fresh obligation.
    rig.set(server_confirmation(CHAT, "c1", "shell"));
    assert_eq!(
        rig.engine.answer(&CHAT.to_owned(), deny),
        AnswerOutcome::Dispatched
    );
}

#[tokio::test(start_paused = true)]
async fn an_observer_created_invocation_is_forgotten_with_its_last_holder() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let invocation = rig
        .engine
        .invocation_or_create(&k, crate::Presentation::default());
    let claim = rig.engine.claim(k.clone(), Claimant::new("v"));
    assert!(rig.engine.invocation(&k).unwrap().same(&invocation));
    drop(claim);
    assert!(rig.engine.invocation(&k).is_none());
    assert_eq!(
        invocation.status(),
        InvocationStatus::Cancelled,
        "settled, not spinning"
    );
    assert_clean(rig.engine.stats());
}

#[tokio::test(start_paused = true)]
async fn the_queue_emptied_leaves_nothing_behind() {
    let rig = Rig::responder(tools());
    let entries = vec![
        client_execution(CHAT, "c1", "search", CLIENT, "not-needed", "{}"),
        client_execution(CHAT, "c2", "browser", CLIENT, "user-action", "{}"),
        client_execution(CHAT, "c3", "slow", CLIENT, "setting", "{}"),
        client_confirmation(CHAT, "c4", "edit", CLIENT, "{}"),
        server_confirmation(CHAT, "c5", "shell"),
        result_confirmation(CHAT, "c6", "shell"),
        authentication(CHAT, "c7", "issues"),
        chat_input(CHAT, "r1"),
        client_execution(CHAT, "c8", "browser", OTHER_CLIENT, "user-action", "{}"),
    ];
    let claims: Vec<_> = ["c4", "c5"]
        .iter()
        .map(|c| rig.engine.claim(key(CHAT, c), Claimant::new("v")))
        .collect();
    rig.engine.apply(SessionUpdate::Snapshot(entries));
    rig.time.at(2000).await;
    assert!(rig.engine.stats().timers > 0);
    drop(claims);
    rig.engine.apply(SessionUpdate::Snapshot(Vec::new()));
    rig.time.at(20_000).await;
    assert_clean(rig.engine.stats());
    let ids: BTreeSet<String> = rig.sent.types().into_iter().collect();
    assert!(ids.contains("chat/toolCallComplete"));
    let _ = (ClaimKey::Input(InputKey::new(CHAT, "r1")), LocalGate::Ask);
    let _ = tool_client_execution_id(&key(CHAT, "c1"));
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SessionEngine>();
    assert_send_sync::<ClaimGuard>();
    assert_send_sync::<crate::SharedInvocation>();
    assert_send_sync::<crate::EngineRegistry>();
    assert_send_sync::<SubscriptionClaims>();
}

#[tokio::test(start_paused = true)]
async fn a_skip_forwarded_by_a_view_cancels_the_local_attempt() {
    let rig = Rig::responder(tools());
    let k = key(CHAT, "c1");
    let _claim = rig.engine.claim(k.clone(), Claimant::new("view"));
    rig.set(client_confirmation(CHAT, "c1", "edit", CLIENT, "{}"));
    rig.time.at(0).await;
    let shown = rig.engine.invocation(&k).unwrap();
    assert_eq!(shown.status(), InvocationStatus::AwaitingConfirmation);
    let skip: StateAction = serde_json::from_value(json!({
        "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": "c1",
        "approved": false, "reason": "skipped"
    }))
    .unwrap();
    assert_eq!(
        rig.engine.answer(&CHAT.to_owned(), skip),
        AnswerOutcome::Dispatched
    );
    rig.time.at(10).await;
    assert_eq!(shown.status(), InvocationStatus::Cancelled);
    rig.time.at(20_000).await;
    assert!(rig.tools.invoked().is_empty());
    assert_eq!(
        rig.sent.types(),
        ["chat/toolCallConfirmed"],
        "only the view's skip"
    );
}

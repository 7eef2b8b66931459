#![allow(clippy::unwrap_used)]

use agenthost_protocol::ActionOrigin;
use agenthost_services::fakes::{FakeClientActionIntake, FakeHostState};
use serde_json::json;

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";

fn contribution(values: Value) -> (SessionModes, Arc<FakeClientActionIntake>) {
    let state = FakeHostState::default();
    let session = json!({
        "provider": "scripted", "title": "t", "status": 1, "lifecycle": "ready", "chats": [],
        "activeClients": [],
        "config": { "schema": { "type": "object", "properties": {} }, "values": values },
    });
    state.script(|answers| {
        answers
            .sessions
            .insert(SESSION.to_owned(), serde_json::from_value(session).unwrap());
    });
    let intake = Arc::new(FakeClientActionIntake::default());
    (
        SessionModes::new(
            Arc::new(state),
            Arc::clone(&intake) as Arc<dyn ClientActionIntake>,
        ),
        intake,
    )
}

fn action(value: Value) -> StateAction {
    serde_json::from_value(value).unwrap()
}

static SESSION_URI: std::sync::LazyLock<agenthost_protocol::SessionUri> =
    std::sync::LazyLock::new(|| SESSION.parse().unwrap());
static CHAT_URI: std::sync::LazyLock<agenthost_protocol::ChatUri> =
    std::sync::LazyLock::new(|| CHAT.parse().unwrap());

fn dispatched<'a>(action: &'a StateAction) -> DispatchedAction<'a> {
    DispatchedAction {
        channel: CHAT,
        session: Some(&SESSION_URI),
        chat: Some(&CHAT_URI),
        action,
        origin: None::<&ActionOrigin>,
        rejection_reason: None,
    }
}

fn confirmation() -> StateAction {
    action(
        json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "tc1",
                   "invocationMessage": "Write notes.txt" }),
    )
}

/// What the contribution submitted, once its spawned tasks ran.
async fn submitted(intake: &FakeClientActionIntake) -> Vec<Value> {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    intake
        .calls()
        .into_iter()
        .map(|call| {
            assert_eq!(call.client_id, CLIENT_ID);
            assert_eq!(call.channel, CHAT);
            serde_json::to_value(&call.action).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn auto_approve_approves_every_confirmation_and_plan_mode_denies_it() {
    let (modes, intake) = contribution(json!({ "autoApprove": "autoApprove" }));
    modes
        .on_did_dispatch_action(&dispatched(&confirmation()))
        .unwrap();
    let answers = submitted(&intake).await;
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["type"], "chat/toolCallConfirmed");
    assert_eq!(answers[0]["approved"], true);
    assert_eq!(answers[0]["confirmed"], "setting");

    let (modes, intake) = contribution(json!({ "autoApprove": "autoApprove", "mode": "plan" }));
    modes
        .on_did_dispatch_action(&dispatched(&confirmation()))
        .unwrap();
    let answers = submitted(&intake).await;
    assert_eq!(answers.len(), 1, "plan mode wins over auto-approval");
    assert_eq!(answers[0]["approved"], false);
    assert_eq!(answers[0]["reasonMessage"], PLAN_DENIAL);
}

#[tokio::test]
async fn defaults_answer_nothing_and_a_confirmed_ready_is_no_question() {
    let (modes, intake) = contribution(json!({ "autoApprove": "default", "mode": "interactive" }));
    modes
        .on_did_dispatch_action(&dispatched(&confirmation()))
        .unwrap();
    let (auto, auto_intake) = contribution(json!({ "autoApprove": "autoApprove" }));
    let already = action(
        json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "tc1",
                                 "invocationMessage": "Read", "confirmed": "not-needed" }),
    );
    auto.on_did_dispatch_action(&dispatched(&already)).unwrap();
    let confirmation = confirmation();
    let mut rejected = dispatched(&confirmation);
    rejected.rejection_reason = Some("no");
    auto.on_did_dispatch_action(&rejected).unwrap();
    assert!(submitted(&intake).await.is_empty());
    assert!(submitted(&auto_intake).await.is_empty());
}

#[tokio::test]
async fn autopilot_answers_questions_with_vs_codes_text() {
    let requested = action(json!({ "type": "chat/inputRequested", "request": {
        "id": "r1", "questions": [
            { "kind": "text", "id": "q1", "message": "Which file?" },
            { "kind": "boolean", "id": "q2", "message": "Sure?" }
        ] } }));
    let (interactive, quiet) = contribution(json!({ "mode": "interactive" }));
    interactive
        .on_did_dispatch_action(&dispatched(&requested))
        .unwrap();
    assert!(submitted(&quiet).await.is_empty());
    let (modes, intake) = contribution(json!({ "mode": "autopilot" }));
    modes
        .on_did_dispatch_action(&dispatched(&requested))
        .unwrap();
    let answers = submitted(&intake).await;
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["type"], "chat/inputCompleted");
    assert_eq!(answers[0]["response"], "accept");
    assert_eq!(
        answers[0]["answers"]["q1"]["value"]["value"],
        AUTOPILOT_ANSWER
    );
    assert_eq!(answers[0]["answers"]["q2"]["state"], "skipped");
}

#[tokio::test]
async fn a_turn_in_plan_mode_carries_the_plan_instruction() {
    let turn = OutgoingTurn {
        session: SESSION.parse().unwrap(),
        chat: CHAT.parse().unwrap(),
        message: serde_json::from_value(json!({ "text": "go", "origin": { "kind": "user" } }))
            .unwrap(),
        turn_id: "t1".to_owned(),
    };
    let (plan, _) = contribution(json!({ "mode": "plan" }));
    let sent = plan.on_outgoing_turn(&turn).await.unwrap().unwrap();
    assert_eq!(sent.instructions, Some(vec![PLAN_INSTRUCTION.to_owned()]));
    assert_eq!(sent.text, None);
    let (interactive, _) = contribution(json!({}));
    assert!(interactive.on_outgoing_turn(&turn).await.unwrap().is_none());
}

#[test]
fn the_properties_have_the_shape_vs_code_draws_pickers_for() {
    let mode = serde_json::to_value(mode_property()).unwrap();
    assert_eq!(mode["type"], "string");
    assert_eq!(mode["title"], "Agent Mode");
    assert_eq!(mode["enum"], json!(["interactive", "plan", "autopilot"]));
    assert_eq!(mode["default"], "interactive");
    assert_eq!(mode["sessionMutable"], true);
    assert!(mode.get("enumDynamic").is_none());
    let approve = serde_json::to_value(auto_approve_property()).unwrap();
    assert_eq!(approve["title"], "Approvals");
    assert_eq!(approve["enum"], json!(["default", "autoApprove"]));
    assert_eq!(approve["default"], "default");
    assert_eq!(approve["sessionMutable"], true);
}

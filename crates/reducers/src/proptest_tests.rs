//! Property tests over arbitrary action sequences: client and server dispatches, valid and not,
//! on every channel kind and on channels that do not exist.

use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{ResponsePart, SessionStatus, ToolCallState};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::fixtures::*;
use crate::projection::{is_user_blocking, sync_session_input_needed};
use crate::{ApplyError, HostState};

const SUBAGENT_CHAT: &str = "ahp-chat:/sub";
const CHANNELS: [&str; 5] = [
    CHAT,
    SUBAGENT_CHAT,
    SESSION,
    "ahp-root://",
    "ahp-chat:/missing",
];
const TURNS: [&str; 2] = ["t1", "t2"];
const CALLS: [&str; 2] = ["a", "b"];
const CLIENTS: [&str; 2] = [CLIENT, OTHER_CLIENT];

/// One step: an action as wire JSON, the channel it goes to, and who dispatches it.
#[derive(Debug, Clone)]
struct Step {
    channel: &'static str,
    action: Value,
    client: Option<&'static str>,
}

fn pick<T: Clone + std::fmt::Debug + 'static>(items: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(items)
}

fn contributor() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        pick(&CLIENTS).prop_map(|c| json!({ "kind": "client", "clientId": c })),
        Just(json!({ "kind": "mcp", "customizationId": "m1" })),
    ]
}

fn chat_action() -> impl Strategy<Value = Value> {
    // Skewed towards one turn and one call so sequences reach deep tool-call states.
    let turn = || prop_oneof![6 => Just(TURNS[0]), 1 => Just(TURNS[1])];
    let call = || prop_oneof![3 => Just(CALLS[0]), 1 => Just(CALLS[1])];
    prop_oneof![
        3 => (turn(), prop_oneof![4 => Just("user"), 1 => Just("agent")]).prop_map(|(t, origin)| json!({
            "type": "chat/turnStarted", "turnId": t, "startedAt": T0,
            "message": { "text": "go", "origin": { "kind": origin } }
        })),
        4 => (turn(), call(), contributor()).prop_map(|(t, c, contributor)| {
            let mut v = json!({ "type": "chat/toolCallStart", "turnId": t, "toolCallId": c,
                "toolName": "tool", "displayName": "Tool" });
            if !contributor.is_null() {
                v["contributor"] = contributor;
            }
            v
        }),
        4 => (turn(), call(), proptest::option::of(pick(&["not-needed", "user-action", "setting"])), any::<bool>())
            .prop_map(|(t, c, confirmed, auto)| {
                let mut v = json!({ "type": "chat/toolCallReady", "turnId": t, "toolCallId": c,
                    "invocationMessage": "run" });
                if let Some(confirmed) = confirmed {
                    v["confirmed"] = json!(confirmed);
                }
                if auto {
                    v["_meta"] = json!({ "autoApproveBySetting": true });
                }
                v
            }),
        3 => (turn(), call(), any::<bool>()).prop_map(|(t, c, approved)| {
            if approved {
                json!({ "type": "chat/toolCallConfirmed", "turnId": t, "toolCallId": c,
                    "approved": true, "confirmed": "user-action" })
            } else {
                json!({ "type": "chat/toolCallConfirmed", "turnId": t, "toolCallId": c,
                    "approved": false, "reason": "denied" })
            }
        }),
        3 => (turn(), call(), any::<bool>(), any::<bool>()).prop_map(|(t, c, result_gate, success)| {
            json!({ "type": "chat/toolCallComplete", "turnId": t, "toolCallId": c,
                "requiresResultConfirmation": result_gate,
                "result": { "success": success, "pastTenseMessage": "done" } })
        }),
        1 => (turn(), call(), any::<bool>()).prop_map(|(t, c, approved)| json!({
            "type": "chat/toolCallResultConfirmed", "turnId": t, "toolCallId": c, "approved": approved
        })),
        1 => (turn(), call()).prop_map(|(t, c)| json!({
            "type": "chat/toolCallAuthRequired", "turnId": t, "toolCallId": c,
            "auth": { "reason": "required", "resource": { "resource": "https://mcp.example" } }
        })),
        1 => (turn(), call()).prop_map(|(t, c)| json!({
            "type": "chat/toolCallAuthResolved", "turnId": t, "toolCallId": c
        })),
        1 => (turn(), call()).prop_map(|(t, c)| json!({
            "type": "chat/toolCallContentChanged", "turnId": t, "toolCallId": c,
            "content": [{ "type": "text", "text": "out" }]
        })),
        1 => pick(&["r1", "r2"]).prop_map(|r| json!({
            "type": "chat/inputRequested",
            "request": { "id": r, "questions": [
                { "kind": "text", "id": "q", "message": "?", "required": true }
            ] }
        })),
        1 => (pick(&["r1", "r2"]), pick(&["accept", "decline", "cancel"]), any::<bool>()).prop_map(
            |(r, response, answered)| {
                let answers = if answered {
                    json!({ "q": { "state": "submitted", "value": { "kind": "text", "value": "x" } } })
                } else {
                    json!({})
                };
                json!({ "type": "chat/inputCompleted", "requestId": r, "response": response, "answers": answers })
            }
        ),
        1 => turn().prop_map(|t| json!({ "type": "chat/turnComplete", "turnId": t, "duration": 5 })),
        1 => turn().prop_map(|t| json!({ "type": "chat/turnCancelled", "turnId": t, "duration": 5 })),
        1 => (turn(), any::<bool>()).prop_map(|(t, resumable)| json!({
            "type": "chat/error", "turnId": t, "duration": 5,
            "part": { "kind": "error", "error": { "errorType": "x", "message": "boom" }, "resumable": resumable }
        })),
        1 => turn().prop_map(|t| json!({ "type": "chat/turnResume", "turnId": t })),
        1 => proptest::option::of(turn()).prop_map(|t| match t {
            Some(t) => json!({ "type": "chat/truncated", "turnId": t }),
            None => json!({ "type": "chat/truncated" }),
        }),
        1 => (pick(&["steering", "queued"]), pick(&["p1", "p2"]), any::<bool>()).prop_map(|(kind, id, set)| {
            if set {
                json!({ "type": "chat/pendingMessageSet", "kind": kind, "id": id,
                    "message": { "text": "later", "origin": { "kind": "user" } } })
            } else {
                json!({ "type": "chat/pendingMessageRemoved", "kind": kind, "id": id })
            }
        }),
        1 => Just(json!({ "type": "session/titleChanged", "title": "renamed" })),
        1 => Just(json!({ "type": "x-unknown/action", "payload": [1, 2, 3] })),
        1 => Just(json!({ "type": "session/defaultChatChanged", "defaultChat": "ahp-chat:/nowhere" })),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    (
        chat_action(),
        pick(&CHANNELS),
        proptest::option::weighted(0.4, pick(&CLIENTS)),
        0u8..4,
    )
        .prop_map(|(action, channel, client, aim)| Step {
            // Most steps aim at a chat so sequences get deep; the rest go anywhere.
            channel: if aim < 3 { CHAT } else { channel },
            action,
            client,
        })
}

fn decode(value: &Value) -> StateAction {
    // Every generated action decodes: unknown types land in `StateAction::Unknown`.
    serde_json::from_value(value.clone()).expect("generated actions decode")
}

fn host_with_subagent_chat() -> HostState {
    let mut host = host();
    host.insert_chat(
        &SESSION.parse().unwrap(),
        &chat_state(SUBAGENT_CHAT).resource.parse().unwrap(),
        chat_state(SUBAGENT_CHAT),
    )
    .unwrap();
    host
}

/// Applies the projection as the host does; every action it returns must be accepted.
fn project(host: &mut HostState) -> Result<(), TestCaseError> {
    for action in sync_session_input_needed(host, SESSION) {
        let result = host.apply_server_action(SESSION, &action);
        prop_assert!(result.is_ok(), "projection action rejected: {result:?}");
    }
    Ok(())
}

fn check_invariants(host: &HostState) -> Result<(), TestCaseError> {
    prop_assert!(
        sync_session_input_needed(host, SESSION).is_empty(),
        "projecting a second time yields actions"
    );
    let session = session(host);
    let blocking = session.input_needed.iter().flatten().any(is_user_blocking);
    let status = SessionStatus::from_bits(session.status);
    prop_assert_eq!(status.contains(SessionStatus::InputNeeded), blocking);
    prop_assert!(session.input_needed.as_ref().is_none_or(|l| !l.is_empty()));
    for (uri, chat) in host.session_chats(SESSION) {
        for turn in &chat.turns {
            for part in &turn.response_parts {
                if let ResponsePart::ToolCall(tc) = part {
                    prop_assert!(
                        matches!(
                            tc.tool_call,
                            ToolCallState::Completed(_) | ToolCallState::Cancelled(_)
                        ),
                        "{uri}: ended turn {} kept a non-terminal tool call: {:?}",
                        turn.id,
                        tc.tool_call
                    );
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_sequences_keep_the_invariants(steps in proptest::collection::vec(step(), 1..60)) {
        let mut host = host_with_subagent_chat();
        for step in &steps {
            let action = decode(&step.action);
            let before = host.clone();
            let result = match step.client {
                Some(client) => host.apply_client_action(step.channel, &action, client),
                None => host.apply_server_action(step.channel, &action),
            };
            if let Err(ApplyError::Rejected(_) | ApplyError::UnknownChannel(_)) = &result {
                prop_assert_eq!(&host, &before, "a refused action changed state");
            }
            project(&mut host)?;
            check_invariants(&host)?;
        }
    }
}

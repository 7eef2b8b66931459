#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::*;
use crate::fixtures::*;

fn envelope(channel: &str, action: serde_json::Value) -> ActionEnvelope {
    ActionEnvelope {
        channel: channel.to_owned(),
        action: serde_json::from_value(action).unwrap(),
        server_seq: 1,
        origin: None,
        rejection_reason: None,
    }
}

#[test]
fn queue_actions_become_updates() {
    let entry = chat_input(CHAT, "r1");
    let set = envelope(
        "ahp-session:/s",
        json!({ "type": "session/inputNeededSet", "request": serde_json::to_value(&entry).unwrap() }),
    );
    assert_eq!(
        interpret(&set),
        EnvelopeMeaning::Queue(SessionUpdate::set(entry.clone()))
    );
    let removed = envelope(
        "ahp-session:/s",
        json!({ "type": "session/inputNeededRemoved", "id": "x" }),
    );
    assert_eq!(
        interpret(&removed),
        EnvelopeMeaning::Queue(SessionUpdate::removed("x"))
    );
    let mut rejected = set;
    rejected.rejection_reason = Some("server-only".to_owned());
    assert_eq!(interpret(&rejected), EnvelopeMeaning::Irrelevant);
}

#[test]
fn state_snapshots_read_the_list() {
    let mut state = crate::harness::FakeSession::with_status(1).state;
    assert_eq!(
        SessionUpdate::from_state(&state),
        SessionUpdate::Snapshot(vec![])
    );
    state.input_needed = Some(vec![chat_input(CHAT, "r1")]);
    assert_eq!(
        SessionUpdate::from_state(&state),
        SessionUpdate::Snapshot(vec![chat_input(CHAT, "r1")])
    );
}

#[test]
fn catalog_actions_give_subagent_parents() {
    let added = envelope(
        "ahp-session:/s",
        json!({
            "type": "session/chatAdded",
            "summary": {
                "resource": "ahp-chat:/sub", "title": "t", "status": 1,
                "modifiedAt": "2026-01-01T00:00:00.000Z",
                "origin": { "kind": "tool", "chat": CHAT, "toolCallId": "t1" }
            }
        }),
    );
    assert_eq!(
        interpret(&added),
        EnvelopeMeaning::Parent {
            chat: "ahp-chat:/sub".to_owned(),
            parent: Some(CHAT.to_owned())
        }
    );
    let removed = envelope(
        "ahp-session:/s",
        json!({ "type": "session/chatRemoved", "chat": "ahp-chat:/sub" }),
    );
    assert_eq!(
        interpret(&removed),
        EnvelopeMeaning::Parent {
            chat: "ahp-chat:/sub".to_owned(),
            parent: None
        }
    );
    let user = envelope(
        "ahp-session:/s",
        json!({
            "type": "session/chatUpdated", "chat": "ahp-chat:/x",
            "changes": { "origin": { "kind": "user" } }
        }),
    );
    assert_eq!(
        interpret(&user),
        EnvelopeMeaning::Parent {
            chat: "ahp-chat:/x".to_owned(),
            parent: None
        }
    );
}

#[test]
fn remote_ends_are_skips_denials_and_cancelled_completions() {
    let skip = envelope(
        CHAT,
        json!({
            "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": "c1",
            "approved": false, "reason": "skipped"
        }),
    );
    assert_eq!(
        interpret(&skip),
        EnvelopeMeaning::RemoteEnd(key(CHAT, "c1"))
    );
    let approve = envelope(
        CHAT,
        json!({
            "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": "c1",
            "approved": true, "confirmed": "user-action"
        }),
    );
    assert_eq!(interpret(&approve), EnvelopeMeaning::Irrelevant);
    let cancelled = envelope(
        CHAT,
        json!({
            "type": "chat/toolCallComplete", "turnId": TURN, "toolCallId": "c1",
            "result": {
                "success": false, "pastTenseMessage": "x",
                "error": { "message": "m", "code": "cancelled" }
            }
        }),
    );
    assert_eq!(
        interpret(&cancelled),
        EnvelopeMeaning::RemoteEnd(key(CHAT, "c1"))
    );
    let failed = envelope(
        CHAT,
        json!({
            "type": "chat/toolCallComplete", "turnId": TURN, "toolCallId": "c1",
            "result": { "success": false, "pastTenseMessage": "x" }
        }),
    );
    assert_eq!(interpret(&failed), EnvelopeMeaning::Irrelevant);
}

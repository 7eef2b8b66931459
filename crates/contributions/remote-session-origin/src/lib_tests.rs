#![allow(clippy::unwrap_used)]

use agenthost_services::fakes::{FakeHostState, FakeSessionData};
use serde_json::json;

use super::*;

const SESSION: &str = "ahp-session:/delegated";

fn turn() -> OutgoingTurn {
    OutgoingTurn {
        session: SESSION.parse().unwrap(),
        chat: "ahp-chat:/c1".parse().unwrap(),
        message: serde_json::from_value(json!({ "text": "do it", "origin": { "kind": "user" } }))
            .unwrap(),
        turn_id: "t1".to_owned(),
    }
}

fn contribution(creation_meta: Option<Value>, tools: &[&str]) -> RemoteSessionOrigin {
    let data = FakeSessionData::default();
    if let Some(meta) = creation_meta {
        data.script(|answers| {
            answers.meta.insert(
                DataOwner::Session(SessionUri::parse(SESSION).unwrap()),
                [(CREATION_META_KEY.to_owned(), meta.to_string())].into(),
            );
        });
    }
    let state = FakeHostState::default();
    let tools: Vec<Value> = tools
        .iter()
        .map(|name| json!({ "name": name, "inputSchema": { "type": "object" } }))
        .collect();
    let session = json!({
        "provider": "scripted", "title": "t", "status": 1, "lifecycle": "ready",
        "chats": [], "activeClients": [{ "clientId": "vscode", "tools": tools }],
    });
    state.script(|answers| {
        answers
            .sessions
            .insert(SESSION.to_owned(), serde_json::from_value(session).unwrap());
    });
    RemoteSessionOrigin::new(Arc::new(data), Arc::new(state))
}

fn origin() -> Value {
    json!({ ORIGIN_META_KEY: { "session": "ahp-session:/origin", "chat": "ahp-chat:/o1", "depth": 1 },
            "vscode.other": true })
}

#[tokio::test]
async fn a_delegated_session_with_the_tool_is_told_to_report_back() {
    let sent = contribution(
        Some(origin()),
        &["vscode_runTests", SEND_REMOTE_MESSAGE_TOOL],
    )
    .on_outgoing_turn(&turn())
    .await
    .unwrap()
    .expect("an instruction");
    assert_eq!(sent.text, None, "the user's text is never changed");
    let instructions = sent.instructions.unwrap();
    assert_eq!(instructions.len(), 1);
    let text = &instructions[0];
    assert!(text.starts_with("<remote_session_origin>"), "{text}");
    for piece in [
        "session ahp-session:/origin",
        "chat ahp-chat:/o1",
        "depth 1",
        "send_remote_message",
    ] {
        assert!(text.contains(piece), "{piece:?} missing from {text}");
    }
}

#[tokio::test]
async fn nothing_without_an_origin_or_without_the_tool() {
    for (meta, tools) in [
        (None, vec![SEND_REMOTE_MESSAGE_TOOL]),
        (
            Some(json!({ "vscode.other": true })),
            vec![SEND_REMOTE_MESSAGE_TOOL],
        ),
        (
            Some(json!({ ORIGIN_META_KEY: "not an object" })),
            vec![SEND_REMOTE_MESSAGE_TOOL],
        ),
        (Some(origin()), vec!["vscode_runTests"]),
        (Some(origin()), vec![]),
    ] {
        let sent = contribution(meta.clone(), &tools)
            .on_outgoing_turn(&turn())
            .await
            .unwrap();
        assert!(sent.is_none(), "{meta:?} {tools:?}: {sent:?}");
    }
}

#[test]
fn the_instruction_leaves_out_what_the_origin_does_not_say() {
    let text = instruction(&serde_json::Map::new());
    assert!(text.contains("another agent session. "), "{text}");
    assert!(!text.contains("()"), "{text}");
}

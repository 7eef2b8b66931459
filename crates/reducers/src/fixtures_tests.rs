//! Shared fixtures of the unit tests: states and actions built from their wire JSON, so a test
//! reads like the protocol it exercises.

use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{ChatState, ChatSummary, RootState, SessionState};
use serde_json::{Value, json};

use crate::{HostState, Reduced};

pub const SESSION: &str = "ahp-session:/s1";
pub const CHAT: &str = "ahp-chat:/c1";
pub const CLIENT: &str = "client-a";
pub const OTHER_CLIENT: &str = "client-b";
pub const T0: &str = "2026-01-01T00:00:00.000Z";

pub fn action(value: Value) -> StateAction {
    serde_json::from_value(value).expect("fixture action decodes")
}

pub fn root() -> RootState {
    serde_json::from_value(json!({ "agents": [] })).unwrap()
}

pub fn session_state() -> SessionState {
    serde_json::from_value(json!({
        "provider": "scripted",
        "title": "Session",
        "status": 1,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [],
        "workingDirectories": ["file:///work/a"],
        "config": {
            "schema": {
                "type": "object",
                "properties": {
                    "mode": { "type": "string", "title": "Mode", "sessionMutable": true },
                    "model": { "type": "string", "title": "Model" }
                }
            },
            "values": { "mode": "ask", "model": "m1" }
        }
    }))
    .unwrap()
}

pub fn chat_state(uri: &str) -> ChatState {
    serde_json::from_value(json!({
        "resource": uri,
        "title": "Chat",
        "status": 1,
        "modifiedAt": T0,
        "turns": []
    }))
    .unwrap()
}

pub fn summary_of(chat: &ChatState) -> ChatSummary {
    crate::projection::chat_summary(chat)
}

/// A host with one ready session holding one chat (in its catalog).
pub fn host() -> HostState {
    let mut host = HostState::new(root());
    let mut session = session_state();
    let chat = chat_state(CHAT);
    session.chats.push(summary_of(&chat));
    host.insert_session(&SESSION.parse().unwrap(), session)
        .unwrap();
    host.insert_chat(
        &SESSION.parse().unwrap(),
        &chat.resource.parse().unwrap(),
        chat,
    )
    .unwrap();
    host
}

pub fn user_message(text: &str) -> Value {
    json!({ "text": text, "origin": { "kind": "user" } })
}

pub fn turn_started(turn: &str) -> StateAction {
    action(json!({
        "type": "chat/turnStarted", "turnId": turn, "startedAt": T0,
        "message": user_message("hello")
    }))
}

pub fn tool_start(turn: &str, call: &str, client: Option<&str>) -> StateAction {
    let mut value = json!({
        "type": "chat/toolCallStart", "turnId": turn, "toolCallId": call,
        "toolName": "shell", "displayName": "Shell"
    });
    if let Some(client) = client {
        value["contributor"] = json!({ "kind": "client", "clientId": client });
    }
    action(value)
}

/// `chat/toolCallReady`; with `confirmed` the call runs, without it waits for confirmation.
pub fn tool_ready(turn: &str, call: &str, confirmed: Option<&str>) -> StateAction {
    let mut value = json!({
        "type": "chat/toolCallReady", "turnId": turn, "toolCallId": call,
        "invocationMessage": "run it"
    });
    if let Some(confirmed) = confirmed {
        value["confirmed"] = json!(confirmed);
    }
    action(value)
}

pub fn tool_confirmed(turn: &str, call: &str) -> StateAction {
    action(json!({
        "type": "chat/toolCallConfirmed", "turnId": turn, "toolCallId": call,
        "approved": true, "confirmed": "user-action"
    }))
}

pub fn tool_complete(turn: &str, call: &str, requires_result_confirmation: bool) -> StateAction {
    let mut value = json!({
        "type": "chat/toolCallComplete", "turnId": turn, "toolCallId": call,
        "result": { "success": true, "pastTenseMessage": "ran it" }
    });
    if requires_result_confirmation {
        value["requiresResultConfirmation"] = json!(true);
    }
    action(value)
}

pub fn turn_complete(turn: &str) -> StateAction {
    action(json!({ "type": "chat/turnComplete", "turnId": turn, "duration": 10 }))
}

pub fn input_requested(request: Value) -> StateAction {
    action(json!({ "type": "chat/inputRequested", "request": request }))
}

/// Applies server actions, asserting each is accepted.
pub fn server(host: &mut HostState, channel: &str, actions: &[StateAction]) {
    for a in actions {
        let result = host.apply_server_action(channel, a);
        assert!(
            matches!(result, Ok(Reduced::Applied | Reduced::NoOp)),
            "server action {a:?} failed: {result:?}"
        );
    }
}

/// A host whose chat has an active turn `t1`.
pub fn host_in_turn() -> HostState {
    let mut host = host();
    host.apply_client_action(CHAT, &turn_started("t1"), CLIENT)
        .unwrap();
    host
}

pub fn chat(host: &HostState) -> &ChatState {
    host.chat(CHAT).unwrap()
}

pub fn session(host: &HostState) -> &SessionState {
    host.session(SESSION).unwrap()
}

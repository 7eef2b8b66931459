//! Shared fixtures of the unit tests: records built from wire JSON, and temporary databases.

use std::path::PathBuf;

use agenthost_protocol::ahp_types::state::{ErrorInfo, Message, Turn, UsageInfo};
use agenthost_protocol::{ChatUri, SessionUri};
use serde_json::json;
use tempfile::TempDir;

use crate::{ChatRecord, FailedTurnRecord, SessionRecord, Store, TitleSource, TurnRecord};

pub const T0: &str = "2026-01-01T00:00:00.000Z";
pub const T1: &str = "2026-01-01T00:00:01.000Z";
pub const T2: &str = "2026-01-01T00:00:02.000Z";

/// A temporary directory and the database path inside it (`agenthost.db`, not yet created).
pub fn temp_db() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agenthost.db");
    (dir, path)
}

/// A new store in a temporary directory.
pub fn temp_store() -> (TempDir, Store) {
    let (dir, path) = temp_db();
    let store = Store::open(&path).unwrap();
    (dir, store)
}

pub fn session_uri(name: &str) -> SessionUri {
    SessionUri::parse(&format!("ahp-session:/{name}")).unwrap()
}

pub fn chat_uri(name: &str) -> ChatUri {
    ChatUri::parse(&format!("ahp-chat:/{name}")).unwrap()
}

pub fn session(name: &str) -> SessionRecord {
    SessionRecord {
        uri: session_uri(name),
        provider: "scripted".to_owned(),
        title: format!("Session {name}"),
        title_source: TitleSource::Default,
        created_at: T0.to_owned(),
        modified_at: T0.to_owned(),
        working_directories: vec![format!("file:///work/{name}")],
        read: false,
        archived: false,
        default_chat: None,
    }
}

pub fn chat(session: &str, name: &str, position: i64) -> ChatRecord {
    ChatRecord {
        uri: chat_uri(name),
        session: session_uri(session),
        position,
        title: format!("Chat {name}"),
        title_source: TitleSource::Default,
        modified_at: T0.to_owned(),
        origin: None,
        interactivity: None,
        read: false,
        archived: false,
        draft: None,
        config: None,
        resume_handle: None,
        subagent: false,
    }
}

/// A chat with every optional field set.
pub fn full_chat(session: &str, name: &str, position: i64) -> ChatRecord {
    ChatRecord {
        origin: Some(
            serde_json::from_value(json!({
                "kind": "fork", "chat": "ahp-chat:/origin", "turnId": "t0"
            }))
            .unwrap(),
        ),
        interactivity: Some(serde_json::from_value(json!("read-only")).unwrap()),
        read: true,
        archived: true,
        draft: Some(message("half-written")),
        config: Some(
            json!({ "mode": "plan", "depth": 2 })
                .as_object()
                .unwrap()
                .clone(),
        ),
        resume_handle: Some(json!({ "conversationId": "abc", "cursor": 7 })),
        subagent: true,
        title_source: TitleSource::User,
        ..chat(session, name, position)
    }
}

pub fn message(text: &str) -> Message {
    serde_json::from_value(json!({ "text": text, "origin": { "kind": "user" } })).unwrap()
}

/// A complete turn `id` whose reply repeats `body` (so tests can make turns of any size).
pub fn turn_with(id: &str, body: &str) -> Turn {
    serde_json::from_value(json!({
        "id": id,
        "startedAt": T0,
        "duration": 1200,
        "message": { "text": format!("question {id}"), "origin": { "kind": "user" } },
        "responseParts": [
            { "kind": "reasoning", "id": format!("{id}-r"), "content": "thinking" },
            { "kind": "markdown", "id": format!("{id}-m"), "content": body },
        ],
        "usage": { "inputTokens": 10, "outputTokens": 20, "model": "m1" },
        "state": "complete",
    }))
    .unwrap()
}

pub fn turn(id: &str) -> TurnRecord {
    TurnRecord::new(turn_with(id, &format!("answer {id}")))
}

/// A turn whose reply is `bytes` long.
pub fn big_turn(id: &str, bytes: usize) -> TurnRecord {
    TurnRecord::new(turn_with(id, &"x".repeat(bytes)))
}

/// A turn record with every optional field set.
pub fn full_turn(id: &str) -> TurnRecord {
    TurnRecord {
        provider_event_id: Some(format!("evt-{id}")),
        checkpoint_ref: Some(format!("refs/agenthost/checkpoints/{id}")),
        usage: Some(usage(5)),
        ..turn(id)
    }
}

pub fn usage(tokens: i64) -> UsageInfo {
    serde_json::from_value(json!({ "inputTokens": tokens, "outputTokens": tokens * 2 })).unwrap()
}

pub fn error_info(message: &str) -> ErrorInfo {
    serde_json::from_value(json!({ "errorType": "providerError", "message": message })).unwrap()
}

pub fn failed(turn_id: &str, anchor: Option<&str>) -> FailedTurnRecord {
    FailedTurnRecord {
        turn_id: turn_id.to_owned(),
        anchor_turn_id: anchor.map(str::to_owned),
        error: error_info(&format!("{turn_id} failed")),
        recorded_at: T1.to_owned(),
    }
}

/// A store holding session `s1` with chat `c1`.
pub fn store_with_chat() -> (TempDir, Store) {
    let (dir, store) = temp_store();
    store.put_session(&session("s1")).unwrap();
    store.put_chat(&chat("s1", "c1", 0)).unwrap();
    (dir, store)
}

/// The ids of `turns`, in order.
pub fn ids(turns: &[TurnRecord]) -> Vec<String> {
    turns.iter().map(|record| record.turn.id.clone()).collect()
}

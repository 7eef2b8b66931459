//! Sessions expose their blockers in `inputNeeded`, end to end: the host as `agent-host serve`
//! composes it (`agenthost::host::bind`, built-in contributions registered), the scripted agent
//! with a tool that needs confirmation, and Microsoft's `ahp::Client` over the real WebSocket.
//! The client watches the session channel: the confirmation entry appears while the tool waits
//! and goes away once the client confirms. `/rename` is answered by the host itself.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{SessionInputRequest, SnapshotState};
use agenthost_reducers::projection::entry_id;
use ahp::Client;
use serde_json::{Value, json};
use support::{ScriptedHost, connect, create_session, dispatch, until};

fn script() -> Value {
    json!({ "turns": [{ "steps": [
        { "kind": "say", "text": "I will write notes.txt once you approve.", "chunk": 8 },
        { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
          "effect": { "kind": "writeFile", "path": "notes.txt", "content": "approved\n" } },
        { "kind": "say", "text": "Done.", "chunk": 2 }
    ]}]})
}

/// The ids of a session's `inputNeeded` list, read from a fresh subscription.
async fn input_needed_ids(client: &Client, session: &str) -> Vec<String> {
    let (result, _subscription) = client.subscribe(session.to_owned()).await.unwrap();
    let Some(SnapshotState::Session(state)) = result.snapshot.map(|s| s.state) else {
        panic!("not a session snapshot");
    };
    state
        .input_needed
        .iter()
        .flatten()
        .filter_map(|e| entry_id(e).map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_confirmation_is_in_the_sessions_input_needed_until_confirmed() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let (client, mut events) = connect(&host.url, "client-a").await;
    let (session, chat) = create_session(&client, "blockers").await;
    let (_, _session_subscription) = client.subscribe(session.to_string()).await.unwrap();
    let (_, _chat_subscription) = client.subscribe(chat.to_string()).await.unwrap();
    assert!(input_needed_ids(&client, session.as_str()).await.is_empty());

    dispatch(
        &client,
        chat.as_str(),
        json!({
            "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-03-01T10:00:00.000Z",
            "message": { "text": "write the notes", "origin": { "kind": "user" } }
        }),
    )
    .await;

    // The tool waits: the session gains the confirmation entry.
    let set = until(&mut events, |e| {
        e.channel == session.as_str() && matches!(e.action, StateAction::SessionInputNeededSet(_))
    })
    .await;
    let StateAction::SessionInputNeededSet(set) = set.action else {
        unreachable!("matched above");
    };
    let SessionInputRequest::ToolConfirmation(entry) = &set.request else {
        panic!("expected a tool confirmation, got {:?}", set.request);
    };
    assert_eq!(entry.chat, chat.as_str());
    assert_eq!(entry.turn_id, "t1");
    let tool_call_id = serde_json::to_value(&entry.tool_call).unwrap()["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    let id = format!("toolConfirmation:{chat}:t1:{tool_call_id}");
    assert_eq!(entry.id, id);
    assert_eq!(
        input_needed_ids(&client, session.as_str()).await,
        [id.as_str()]
    );

    // The client confirms: the entry goes, and the turn runs to its end.
    dispatch(
        &client,
        chat.as_str(),
        json!({
            "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": tool_call_id,
            "approved": true, "confirmed": "user-action"
        }),
    )
    .await;
    let removed = until(&mut events, |e| {
        e.channel == session.as_str()
            && matches!(e.action, StateAction::SessionInputNeededRemoved(_))
    })
    .await;
    let StateAction::SessionInputNeededRemoved(removed) = removed.action else {
        unreachable!("matched above");
    };
    assert_eq!(removed.id, id);
    until(&mut events, |e| {
        e.channel == chat.as_str() && matches!(e.action, StateAction::ChatTurnComplete(_))
    })
    .await;
    assert!(input_needed_ids(&client, session.as_str()).await.is_empty());
    assert_eq!(
        std::fs::read_to_string(host.work.join("notes.txt")).unwrap(),
        "approved\n"
    );
    client.shutdown().await;
}

/// `/rename` is a host command (the `localCommand` contribution): it renames the session (the
/// default chat's title is the session's), completes the turn, and never reaches the agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_is_answered_by_the_host_and_never_reaches_the_agent() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let (client, mut events) = connect(&host.url, "client-a").await;
    let (session, chat) = create_session(&client, "renamed").await;
    let (_, _session_subscription) = client.subscribe(session.to_string()).await.unwrap();
    let (_, _chat_subscription) = client.subscribe(chat.to_string()).await.unwrap();
    dispatch(
        &client,
        chat.as_str(),
        json!({
            "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-03-01T10:00:00.000Z",
            "message": { "text": "/rename Quarterly notes", "origin": { "kind": "user" } }
        }),
    )
    .await;
    let renamed = until(&mut events, |e| {
        e.channel == session.as_str() && matches!(e.action, StateAction::SessionTitleChanged(_))
    })
    .await;
    let StateAction::SessionTitleChanged(renamed) = renamed.action else {
        unreachable!("matched above");
    };
    assert_eq!(renamed.title, "Quarterly notes");
    until(&mut events, |e| {
        e.channel == chat.as_str() && matches!(e.action, StateAction::ChatTurnComplete(_))
    })
    .await;
    // The agent never saw the command: its scripted first answer is not in the turn, and no
    // tool waits for a confirmation.
    let (result, _) = client.subscribe(chat.to_string()).await.unwrap();
    let Some(SnapshotState::Chat(state)) = result.snapshot.map(|s| s.state) else {
        panic!("not a chat snapshot");
    };
    let turn = serde_json::to_string(&state.turns).unwrap();
    assert!(!turn.contains("I will write notes.txt"), "{turn}");
    assert!(input_needed_ids(&client, session.as_str()).await.is_empty());
    client.shutdown().await;
}

//! Queued messages run by themselves, end to end (the `queueDrain` contribution in the host as
//! `agent-host serve` composes it, the scripted agent, Microsoft's `ahp::Client` over the real
//! WebSocket). While a turn waits for a confirmation the client queues two messages: a host
//! command and a question. When the turn completes, the host starts the head of the queue
//! (`chat/turnStarted` with its `queuedMessageId`); the host command is answered by the host
//! and drains the next one, which the agent answers — no client action in between.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{ResponsePart, SessionInputRequest, SnapshotState};
use serde_json::{Value, json};
use support::{ScriptedHost, connect, create_session, dispatch, until};

fn script() -> Value {
    json!({ "turns": [
        { "steps": [
            { "kind": "say", "text": "Writing once you approve.", "chunk": 8 },
            { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
              "effect": { "kind": "writeFile", "path": "notes.txt", "content": "one\n" } },
            { "kind": "say", "text": "First done.", "chunk": 4 }
        ]},
        { "steps": [ { "kind": "say", "text": "Second answer.", "chunk": 4 } ] }
    ]})
}

fn queued(id: &str, text: &str) -> Value {
    json!({
        "type": "chat/pendingMessageSet", "kind": "queued", "id": id,
        "message": { "text": text, "origin": { "kind": "user" } }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_messages_start_by_themselves_after_the_turn_completes() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let (client, mut events) = connect(&host.url, "client-a").await;
    let (session, chat) = create_session(&client, "queue").await;
    let (_, _session_subscription) = client.subscribe(session.to_string()).await.unwrap();
    let (_, _chat_subscription) = client.subscribe(chat.to_string()).await.unwrap();

    dispatch(
        &client,
        chat.as_str(),
        json!({
            "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-03-01T10:00:00.000Z",
            "message": { "text": "write the notes", "origin": { "kind": "user" } }
        }),
    )
    .await;
    let waiting = until(&mut events, |e| {
        matches!(&e.action, StateAction::SessionInputNeededSet(set)
            if matches!(set.request, SessionInputRequest::ToolConfirmation(_)))
    })
    .await;
    let StateAction::SessionInputNeededSet(set) = waiting.action else {
        unreachable!("matched above");
    };
    let SessionInputRequest::ToolConfirmation(entry) = set.request else {
        unreachable!("matched above");
    };
    let tool_call_id = serde_json::to_value(&entry.tool_call).unwrap()["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Two messages queue up behind the waiting turn; nothing starts yet.
    dispatch(&client, chat.as_str(), queued("m1", "/rename Queued title")).await;
    dispatch(&client, chat.as_str(), queued("m2", "and then?")).await;
    until(
        &mut events,
        |e| matches!(&e.action, StateAction::ChatPendingMessageSet(set) if set.id == "m2"),
    )
    .await;

    dispatch(
        &client,
        chat.as_str(),
        json!({
            "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": tool_call_id,
            "approved": true, "confirmed": "user-action"
        }),
    )
    .await;

    // t1 completes; the host starts m1 (a host command), then m2 (the agent's second turn).
    let mut started = Vec::new();
    let mut completed = Vec::new();
    while completed.len() < 3 {
        let envelope = until(&mut events, |e| {
            e.channel == chat.as_str()
                && matches!(
                    e.action,
                    StateAction::ChatTurnStarted(_) | StateAction::ChatTurnComplete(_)
                )
        })
        .await;
        match envelope.action {
            StateAction::ChatTurnStarted(a) => {
                assert!(envelope.origin.is_none(), "queued turns are the host's");
                started.push((a.queued_message_id, a.message.text, a.turn_id));
            }
            StateAction::ChatTurnComplete(a) => completed.push(a.turn_id),
            _ => unreachable!("matched above"),
        }
    }
    let queued_ids: Vec<_> = started
        .iter()
        .map(|(id, text, _)| (id.clone(), text.clone()))
        .collect();
    assert_eq!(
        queued_ids,
        [
            (Some("m1".to_owned()), "/rename Queued title".to_owned()),
            (Some("m2".to_owned()), "and then?".to_owned()),
        ]
    );
    assert_eq!(completed[0], "t1");
    assert_eq!(completed[1], started[0].2);
    assert_eq!(completed[2], started[1].2);

    // The chat as a new subscriber sees it: three turns, the queue empty, the agent's answer
    // to the queued question; the session and its catalog carry the title the queued command set.
    let (snapshot, _again) = client.subscribe(chat.to_string()).await.unwrap();
    let Some(SnapshotState::Chat(state)) = snapshot.snapshot.map(|s| s.state) else {
        panic!("not a chat snapshot");
    };
    assert!(state.queued_messages.unwrap_or_default().is_empty());
    assert!(state.active_turn.is_none());
    assert_eq!(state.turns.len(), 3);
    let answer: String = state.turns[2]
        .response_parts
        .iter()
        .filter_map(|p| match p {
            ResponsePart::Markdown(m) => Some(m.content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(answer, "Second answer.");
    let (snapshot, _session_again) = client.subscribe(session.to_string()).await.unwrap();
    let Some(SnapshotState::Session(session_state)) = snapshot.snapshot.map(|s| s.state) else {
        panic!("not a session snapshot");
    };
    assert_eq!(
        session_state.title, "Queued title",
        "the default chat names the session"
    );
    assert_eq!(
        session_state.chats[0].title, "Queued title",
        "the catalog entry"
    );
    client.shutdown().await;
}

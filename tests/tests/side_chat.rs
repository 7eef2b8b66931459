//! A side chat, end to end (the host as `agent-host serve` composes it, built-in contributions
//! registered, the scripted agent, Microsoft's `ahp::Client` over the real WebSocket). The root
//! state advertises side chats on the scripted agent. After a turn in the default chat, the
//! client creates a side chat from that turn (`createChat` with a `sideChat` source): the
//! session's catalog lists it with its `sideChat` origin, and its first turn completes. The
//! scripted agent echoes the text it receives, so its answer shows the `sideChat` contribution's
//! envelope — the source turn as context around the prompt — while the turn's message in the
//! chat stays the user's plain text.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agenthost_protocol::ahp_types::state::{
    ChatOrigin, ChatState, ResponsePart, SnapshotState, TurnState,
};
use agenthost_protocol::{ROOT_RESOURCE_URI, StateAction};
use ahp::Client;
use serde_json::{Value, json};
use support::{ScriptedHost, connect, create_session, dispatch, until};

/// Every turn of every chat answers `Received: <the text the agent got>`.
fn script() -> Value {
    json!({ "turns": [], "default": { "steps": [
        { "kind": "echo", "prefix": "Received: ", "chunk": 64 }
    ]}})
}

fn turn_started(turn_id: &str, text: &str) -> Value {
    json!({
        "type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-03-01T10:00:00.000Z",
        "message": { "text": text, "origin": { "kind": "user" } }
    })
}

/// Starts `turn_id` in `chat` and waits for it to complete.
async fn run_turn(
    client: &Client,
    events: &mut ahp::ClientEventStream,
    chat: &str,
    turn_id: &str,
    text: &str,
) {
    dispatch(client, chat, turn_started(turn_id, text)).await;
    until(events, |e| {
        e.channel == chat
            && matches!(&e.action, StateAction::ChatTurnComplete(a) if a.turn_id == turn_id)
    })
    .await;
}

async fn chat_state(client: &Client, chat: &str) -> ChatState {
    let (snapshot, _subscription) = client.subscribe(chat.to_owned()).await.unwrap();
    let Some(SnapshotState::Chat(state)) = snapshot.snapshot.map(|s| s.state) else {
        panic!("not a chat snapshot");
    };
    *state
}

fn markdown(parts: &[ResponsePart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            ResponsePart::Markdown(m) => Some(m.content.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_chat_gets_the_source_turn_as_context_on_its_first_send() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let (client, mut events) = connect(&host.url, "client-a").await;

    let (root, _root_subscription) = client
        .subscribe(ROOT_RESOURCE_URI.to_owned())
        .await
        .unwrap();
    let Some(SnapshotState::Root(root)) = root.snapshot.map(|s| s.state) else {
        panic!("not a root snapshot");
    };
    let scripted = root
        .agents
        .iter()
        .find(|a| a.provider == "scripted")
        .expect("the scripted agent is advertised");
    let multiple_chats = scripted
        .capabilities
        .as_ref()
        .and_then(|c| c.multiple_chats.as_ref());
    assert_eq!(multiple_chats.and_then(|m| m.side_chat), Some(true));

    let (session, chat) = create_session(&client, "side").await;
    let (_, _session_subscription) = client.subscribe(session.to_string()).await.unwrap();
    let (_, _chat_subscription) = client.subscribe(chat.to_string()).await.unwrap();
    run_turn(&client, &mut events, chat.as_str(), "t1", "fix the bug").await;

    let side = "ahp-chat:/side-1";
    let _: Value = client
        .request(
            "createChat",
            json!({
                "channel": session.as_str(), "chat": side,
                "source": { "kind": "sideChat", "chat": chat.as_str(), "turnId": "t1" }
            }),
        )
        .await
        .unwrap();
    let origin = ChatOrigin::SideChat {
        chat: chat.to_string(),
        turn_id: "t1".to_owned(),
        selection: None,
    };
    let (snapshot, _session_again) = client.subscribe(session.to_string()).await.unwrap();
    let Some(SnapshotState::Session(session_state)) = snapshot.snapshot.map(|s| s.state) else {
        panic!("not a session snapshot");
    };
    let entry = session_state
        .chats
        .iter()
        .find(|c| c.resource == side)
        .expect("the catalog lists the side chat");
    assert_eq!(entry.origin.as_ref(), Some(&origin));

    let (_, _side_subscription) = client.subscribe(side.to_owned()).await.unwrap();
    run_turn(&client, &mut events, side, "s1", "what about tests?").await;

    let state = chat_state(&client, side).await;
    assert_eq!(state.origin.as_ref(), Some(&origin));
    assert_eq!(state.turns.len(), 1, "the source's turns are not copied");
    let turn = &state.turns[0];
    assert_eq!(turn.state, TurnState::Complete);
    assert_eq!(
        turn.message.text, "what about tests?",
        "the user sees the plain prompt"
    );
    // What the agent received: the envelope around the prompt, with the source turn.
    let body = format!(
        "{}\n\nSource chat transcript:\nUser request:\nfix the bug\n\n\
         Agent response:\nReceived: fix the bug",
        agenthost_contrib_side_chat::GUIDANCE
    );
    let length = body.chars().count();
    assert_eq!(
        markdown(&turn.response_parts),
        format!(
            "Received: <side-chat-context>\nlength={length}\n{body}\n</side-chat-context>\n\n\
             what about tests?"
        )
    );

    // The source chat is untouched, and a second side-chat turn goes out plain (seeded).
    let source = chat_state(&client, chat.as_str()).await;
    assert_eq!(source.turns.len(), 1);
    assert_eq!(
        markdown(&source.turns[0].response_parts),
        "Received: fix the bug"
    );
    run_turn(&client, &mut events, side, "s2", "and docs?").await;
    let state = chat_state(&client, side).await;
    assert_eq!(
        markdown(&state.turns[1].response_parts),
        "Received: and docs?"
    );
    client.shutdown().await;
}

//! The host's unattended policy, end to end: the host as `agent-host serve --unattended deny
//! --unattended-grace 200ms` composes it (`agenthost::host::bind`, the flags parsed by the
//! CLI's own parser), the scripted agent asks to confirm a tool, and no client is subscribed to
//! the chat — so nobody claims the confirmation. After the grace window the host denies it as
//! its own client (`agenthost:unattended`): the agent hears the denial, the entry leaves the
//! session's `inputNeeded` list, the tool never runs, and the turn completes. Waits poll with a
//! deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use agenthost::unattended::UnattendedOptions;
use agenthost_protocol::ahp_types::state::{SessionInputRequest, SnapshotState};
use agenthost_protocol::{ChatUri, SessionUri, StateAction};
use ahp::{Client, ClientEventStream, SubscriptionEvent};
use serde_json::{Value, json};
// `STALL` is the longest a wait lasts for the host (the grace window is 200 ms).
use support::{STALL, ScriptedHost, connect, create_session, dispatch, until};
use tokio::time::Instant;

fn script() -> Value {
    json!({ "turns": [{ "steps": [
        { "kind": "say", "text": "I will write notes.txt once you approve.", "chunk": 8 },
        { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
          "effect": { "kind": "writeFile", "path": "notes.txt", "content": "approved\n" } },
        { "kind": "say", "text": "Done.", "chunk": 2 }
    ]}]})
}

/// The chat's state as JSON, from a fresh subscription that ends at once.
async fn chat_state(client: &Client, chat: &str) -> Value {
    let (result, subscription) = client.subscribe(chat.to_owned()).await.unwrap();
    drop(subscription);
    let Some(SnapshotState::Chat(state)) = result.snapshot.map(|s| s.state) else {
        panic!("not a chat snapshot");
    };
    serde_json::to_value(state).unwrap()
}

/// A host as `serve --unattended deny --unattended-grace 200ms`, a client, and a session
/// whose session channel (only) the client subscribes to.
struct Setup {
    host: ScriptedHost,
    client: Client,
    events: ClientEventStream,
    session: SessionUri,
    chat: ChatUri,
    _session_subscription: ahp::SessionSubscription,
}

async fn setup() -> Setup {
    setup_with("deny").await
}

/// Like [`setup`], with the host's policy `policy`.
async fn setup_with(policy: &str) -> Setup {
    let host = ScriptedHost::start(
        script(),
        UnattendedOptions::parse(policy, Some("200ms")).unwrap(),
    )
    .await;
    let (client, events) = connect(&host.url, "client-a").await;
    let (session, chat) = create_session(&client, "unattended").await;
    // The session channel only: a subscription to the chat would claim its confirmations.
    let (_, session_subscription) = client.subscribe(session.to_string()).await.unwrap();
    Setup {
        host,
        client,
        events,
        session,
        chat,
        _session_subscription: session_subscription,
    }
}

/// Starts the turn and waits for its confirmation entry; returns the entry's id.
async fn start_turn_until_confirmation(setup: &mut Setup) -> String {
    dispatch(
        &setup.client,
        setup.chat.as_str(),
        json!({
            "type": "chat/turnStarted", "turnId": "t1",
            "startedAt": "2026-03-01T10:00:00.000Z",
            "message": { "text": "write the notes", "origin": { "kind": "user" } }
        }),
    )
    .await;
    let session = setup.session.to_string();
    let set = until(&mut setup.events, |e| {
        e.channel == session && matches!(e.action, StateAction::SessionInputNeededSet(_))
    })
    .await;
    let StateAction::SessionInputNeededSet(set) = set.action else {
        unreachable!("matched above");
    };
    let SessionInputRequest::ToolConfirmation(entry) = &set.request else {
        panic!("expected a tool confirmation, got {:?}", set.request);
    };
    entry.id.clone()
}

/// Polls the chat until turn `t1` completed; returns that turn as JSON.
async fn completed_turn(client: &Client, chat: &str) -> Value {
    let deadline = Instant::now() + STALL;
    loop {
        let state = chat_state(client, chat).await;
        let turn = state["turns"]
            .as_array()
            .and_then(|turns| turns.iter().find(|t| t["id"] == "t1"))
            .cloned();
        if let Some(turn) = turn
            && state.get("activeTurn").is_none_or(Value::is_null)
        {
            return turn;
        }
        assert!(
            Instant::now() < deadline,
            "the turn did not complete: {state:#}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unclaimed_confirmation_is_denied_by_the_host_and_the_turn_completes() {
    let mut setup = setup().await;
    // The tool waits for a confirmation nobody claims...
    let id = start_turn_until_confirmation(&mut setup).await;
    let raised = Instant::now();

    // ...so the host answers it after the grace window, and the entry goes.
    let removed = until(
        &mut setup.events,
        |e| matches!(&e.action, StateAction::SessionInputNeededRemoved(r) if r.id == id),
    )
    .await;
    assert_eq!(removed.channel, setup.session.as_str());
    assert!(
        raised.elapsed() >= Duration::from_millis(150),
        "answered before the grace window ended: {:?}",
        raised.elapsed()
    );

    // The turn runs to its end without the tool's effect.
    let turn = completed_turn(&setup.client, setup.chat.as_str()).await;
    assert!(
        turn.to_string().contains("denied"),
        "the tool call was denied: {turn:#}"
    );
    assert!(
        !setup.host.work.join("notes.txt").exists(),
        "a denied tool must not run"
    );
    setup.client.shutdown().await;
}

/// A client subscribed to the chat claims the confirmation: the host leaves it alone for many
/// grace windows, and denies it a window after the client unsubscribes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_subscription_claims_the_confirmation_until_it_ends() {
    let mut setup = setup().await;
    let (_, chat_subscription) = setup
        .client
        .subscribe(setup.chat.to_string())
        .await
        .unwrap();
    let id = start_turn_until_confirmation(&mut setup).await;

    // Five grace windows: nothing removes the entry while the subscription lives.
    let quiet_until = Instant::now() + Duration::from_millis(1000);
    while let Ok(event) = tokio::time::timeout_at(quiet_until, setup.events.recv()).await {
        let event = event.expect("the connection closed");
        if let SubscriptionEvent::Action(envelope) = event.event {
            assert!(
                !matches!(&envelope.action, StateAction::SessionInputNeededRemoved(r) if r.id == id),
                "answered although a client is subscribed to the chat"
            );
        }
    }

    drop(chat_subscription);
    setup
        .client
        .unsubscribe(setup.chat.to_string())
        .await
        .unwrap();
    until(
        &mut setup.events,
        |e| matches!(&e.action, StateAction::SessionInputNeededRemoved(r) if r.id == id),
    )
    .await;
    let turn = completed_turn(&setup.client, setup.chat.as_str()).await;
    assert!(
        turn.to_string().contains("denied"),
        "the tool call was denied: {turn:#}"
    );
    setup.client.shutdown().await;
}

/// The policy is a session config property: on a host whose policy is `off`, a client sets one
/// session's `unattended` to `deny` with `session/configChanged`, and that session's unclaimed
/// confirmation is denied after the grace window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_config_change_turns_the_policy_on_for_that_session() {
    let mut setup = setup_with("off").await;
    let (result, _) = setup
        .client
        .subscribe(setup.session.to_string())
        .await
        .unwrap();
    let Some(agenthost_protocol::ahp_types::state::SnapshotState::Session(state)) =
        result.snapshot.map(|s| s.state)
    else {
        panic!("not a session snapshot");
    };
    let config = state.config.expect("the host publishes a session config");
    assert_eq!(config.values["unattended"], json!("off"));
    assert_eq!(
        config.schema.properties["unattended"].session_mutable,
        Some(true)
    );
    dispatch(
        &setup.client,
        setup.session.as_str(),
        json!({ "type": "session/configChanged", "config": { "unattended": "deny" } }),
    )
    .await;
    let session = setup.session.to_string();
    until(&mut setup.events, |e| {
        e.channel == session && matches!(e.action, StateAction::SessionConfigChanged(_))
    })
    .await;

    let id = start_turn_until_confirmation(&mut setup).await;
    until(
        &mut setup.events,
        |e| matches!(&e.action, StateAction::SessionInputNeededRemoved(r) if r.id == id),
    )
    .await;
    let turn = completed_turn(&setup.client, setup.chat.as_str()).await;
    assert!(
        turn.to_string().contains("denied"),
        "the tool call was denied: {turn:#}"
    );
    assert!(!setup.host.work.join("notes.txt").exists());
    setup.client.shutdown().await;
}

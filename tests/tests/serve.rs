//! `agent-host serve` end to end, in-process: the host composition of the CLI
//! (`agenthost::host::bind`) on 127.0.0.1:0 with a temporary root and the scripted agent, reached
//! over the real WebSocket by Microsoft's `ahp::Client` on `ahp_ws::WebSocketTransport` (and by
//! raw tokio-tungstenite where the test needs to send what a well-behaved client never would).
//!
//! Every wait across the socket polls with a deadline ([`STALL`]); nothing synchronises on a
//! fixed sleep.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use agenthost::host::{HostOptions, bind};
use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::ahp_types::state::{Snapshot, SnapshotState};
use agenthost_protocol::{ActionEnvelope, ChatUri, ROOT_RESOURCE_URI, SafeId, SessionUri};
use ahp::{Client, ClientConfig, ClientError, ClientEventStream, SubscriptionEvent};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

/// The longest the tests wait for the host between two events.
const STALL: Duration = Duration::from_secs(10);

/// A timestamp for client-started turns.
const STARTED_AT: &str = "2026-03-01T10:00:00.000Z";

// ─── The host ────────────────────────────────────────────────────────────────────────────────

/// A host serving in this test's runtime; it stops when the runtime ends.
struct TestHost {
    url: String,
    addr: SocketAddr,
    work: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestHost {
    /// Binds a host on 127.0.0.1:0 whose root is a fresh directory, playing `script` (the
    /// built-in script when `None`), and starts serving.
    async fn start(script: Option<Value>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let work = work.canonicalize().unwrap();
        let script = script.map(|script| {
            let path = dir.path().join("script.json");
            std::fs::write(&path, serde_json::to_string_pretty(&script).unwrap()).unwrap();
            path
        });
        let server = bind(HostOptions {
            script,
            data_dir: Some(dir.path().join("data")),
            ..HostOptions::scripted(
                vec![work.clone()],
                LaunchKind::Embedded("agenthost-e2e".into()),
            )
        })
        .await
        .unwrap();
        let url = server.url();
        let addr = server.local_addr();
        tokio::spawn(server.serve(std::future::pending()));
        Self {
            url,
            addr,
            work,
            _dir: dir,
        }
    }
}

// ─── A client ────────────────────────────────────────────────────────────────────────────────

/// An `ahp::Client` over the real WebSocket, not initialized yet.
async fn raw_client(url: &str) -> Client {
    let transport = ahp_ws::WebSocketTransport::connect(url).await.unwrap();
    let config = ClientConfig {
        subscription_buffer: 1 << 16,
        ..ClientConfig::default()
    };
    Client::connect(transport, config).await.unwrap()
}

/// An initialized connection and every event it received, in order.
struct Peer {
    client: Client,
    events: ClientEventStream,
    id: String,
}

impl Peer {
    /// Connects and initializes with protocol 1.0.0 as `id`.
    async fn connect(url: &str, id: &str) -> Self {
        let client = raw_client(url).await;
        // Listen before anything can arrive.
        let events = client.events();
        let init = client
            .initialize(id.to_owned(), vec!["1.0.0".to_owned()], Vec::new())
            .await
            .unwrap();
        assert_eq!(init.protocol_version, "1.0.0");
        Self {
            client,
            events,
            id: id.to_owned(),
        }
    }

    /// A peer on a connection that will `reconnect` instead of `initialize`.
    async fn uninitialized(url: &str, id: &str) -> Self {
        let client = raw_client(url).await;
        let events = client.events();
        Self {
            client,
            events,
            id: id.to_owned(),
        }
    }

    /// Creates `scripted:/<id>`; returns it with its default chat.
    async fn create_session(&self, id: &str) -> (SessionUri, ChatUri) {
        let session = SessionUri::with_provider("scripted", SafeId::new(id).unwrap()).unwrap();
        let _: Value = self
            .client
            .request(
                "createSession",
                json!({ "channel": session.as_str(), "provider": "scripted" }),
            )
            .await
            .unwrap();
        let chat = ChatUri::default_for(&session);
        (session, chat)
    }

    async fn subscribe(&self, channel: &str) -> Snapshot {
        let (result, _subscription) = self.client.subscribe(channel.to_owned()).await.unwrap();
        let snapshot = result.snapshot.expect("subscribe returns a snapshot");
        assert_eq!(snapshot.resource, channel);
        snapshot
    }

    /// Dispatches an action (given as JSON); returns its `clientSeq`.
    async fn dispatch(&self, channel: &str, action: Value) -> i64 {
        let action = serde_json::from_value(action).unwrap();
        self.client
            .dispatch(channel.to_owned(), action)
            .await
            .unwrap()
            .client_seq
    }

    async fn start_turn(&self, chat: &str, turn: &str, text: &str) -> i64 {
        self.dispatch(
            chat,
            json!({
                "type": "chat/turnStarted", "turnId": turn, "startedAt": STARTED_AT,
                "message": { "text": text, "origin": { "kind": "user" } }
            }),
        )
        .await
    }

    async fn confirm(&self, chat: &str, turn: &str, tool_call: &str) -> i64 {
        self.dispatch(
            chat,
            json!({
                "type": "chat/toolCallConfirmed", "turnId": turn, "toolCallId": tool_call,
                "approved": true, "confirmed": "user-action"
            }),
        )
        .await
    }

    /// The next action envelope (other notifications are skipped); fails after [`STALL`].
    async fn next_envelope(&mut self) -> ActionEnvelope {
        self.next_envelope_by(Instant::now() + STALL)
            .await
            .unwrap_or_else(|| panic!("{}: no action from the host for {STALL:?}", self.id))
    }

    async fn next_envelope_by(&mut self, deadline: Instant) -> Option<ActionEnvelope> {
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .ok()?
                .unwrap_or_else(|| panic!("{}: the connection closed", self.id));
            if let SubscriptionEvent::Action(envelope) = event.event {
                return Some(envelope);
            }
        }
    }

    /// Receives envelopes until `done` holds for one (included); returns them all.
    async fn until(
        &mut self,
        mut done: impl FnMut(&ActionEnvelope) -> bool,
    ) -> Vec<ActionEnvelope> {
        let mut received = Vec::new();
        loop {
            let envelope = self.next_envelope().await;
            let last = done(&envelope);
            received.push(envelope);
            if last {
                return received;
            }
        }
    }

    /// Receives envelopes until every `(chat, turn)` ended, approving every tool call that asks
    /// for a confirmation on the way; returns them all.
    async fn drive_turns(&mut self, turns: &[(&str, &str)]) -> Vec<ActionEnvelope> {
        let mut open: BTreeSet<(String, String)> = turns
            .iter()
            .map(|(c, t)| ((*c).to_owned(), (*t).to_owned()))
            .collect();
        let mut received = Vec::new();
        while !open.is_empty() {
            let envelope = self.next_envelope().await;
            let action = action_json(&envelope);
            if envelope.rejection_reason.is_none() {
                if let Some(turn) = ends_turn(&action) {
                    open.remove(&(envelope.channel.clone(), turn.to_owned()));
                }
                if asks_confirmation(&action) {
                    self.confirm(
                        &envelope.channel,
                        action["turnId"].as_str().unwrap(),
                        action["toolCallId"].as_str().unwrap(),
                    )
                    .await;
                }
            }
            received.push(envelope);
        }
        received
    }
}

// ─── Reading envelopes ───────────────────────────────────────────────────────────────────────

fn action_json(envelope: &ActionEnvelope) -> Value {
    serde_json::to_value(&envelope.action).unwrap()
}

fn kind(envelope: &ActionEnvelope) -> String {
    action_json(envelope)["type"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The turn a turn-ending action ends.
fn ends_turn(action: &Value) -> Option<&str> {
    match action["type"].as_str()? {
        "chat/turnComplete" | "chat/turnCancelled" | "chat/error" => action["turnId"].as_str(),
        _ => None,
    }
}

fn asks_confirmation(action: &Value) -> bool {
    action["type"] == "chat/toolCallReady" && action.get("confirmed").is_none()
}

fn is_turn_end(envelope: &ActionEnvelope, chat: &str, turn: &str) -> bool {
    envelope.channel == chat
        && envelope.rejection_reason.is_none()
        && ends_turn(&action_json(envelope)) == Some(turn)
}

/// Every envelope's `serverSeq` is above its subscription's snapshot and strictly increasing per
/// channel.
fn assert_increasing_per_channel(envelopes: &[ActionEnvelope], snapshots: &[&Snapshot]) {
    let mut last: BTreeMap<&str, u64> = snapshots
        .iter()
        .map(|s| (s.resource.as_str(), u64::try_from(s.from_seq).unwrap()))
        .collect();
    for envelope in envelopes {
        let previous = last
            .get_mut(envelope.channel.as_str())
            .unwrap_or_else(|| panic!("an envelope of unsubscribed {}", envelope.channel));
        assert!(
            envelope.server_seq > *previous,
            "serverSeq {} after {} on {}",
            envelope.server_seq,
            previous,
            envelope.channel
        );
        *previous = envelope.server_seq;
    }
}

/// The state of a snapshot as JSON.
fn state_json(snapshot: &Snapshot) -> Value {
    serde_json::to_value(&snapshot.state).unwrap()
}

/// The snapshot's state advanced by the accepted envelopes of its channel numbered above the
/// snapshot and at most `up_to`, with the canonical `ahp` reducers, as JSON.
fn reduce(snapshot: &Snapshot, envelopes: &[ActionEnvelope], up_to: i64) -> Value {
    let relevant = envelopes.iter().filter(|e| {
        let seq = i64::try_from(e.server_seq).unwrap();
        e.channel == snapshot.resource
            && e.rejection_reason.is_none()
            && seq > snapshot.from_seq
            && seq <= up_to
    });
    match &snapshot.state {
        SnapshotState::Chat(chat) => {
            let mut chat = (**chat).clone();
            for envelope in relevant {
                let _ = ahp::reducers::apply_action_to_chat(&mut chat, &envelope.action);
            }
            serde_json::to_value(&chat).unwrap()
        }
        SnapshotState::Session(session) => {
            let mut session = (**session).clone();
            for envelope in relevant {
                let _ = ahp::reducers::apply_action_to_session(&mut session, &envelope.action);
            }
            serde_json::to_value(&session).unwrap()
        }
        other => panic!("no reducer in this test for {other:?}"),
    }
}

/// The state a client reduced from `snapshots` and the envelopes it received equals, as JSON, the
/// snapshot a fresh subscription on a new connection gets. Envelopes the fresh snapshot already
/// contains but `peer` has not received yet are awaited (with a deadline).
async fn assert_converges(
    url: &str,
    peer: &mut Peer,
    received: &mut Vec<ActionEnvelope>,
    snapshots: &[&Snapshot],
) {
    let fresh_peer = Peer::connect(url, "fresh-observer").await;
    for snapshot in snapshots {
        let fresh = fresh_peer.subscribe(&snapshot.resource).await;
        let want = state_json(&fresh);
        let deadline = Instant::now() + STALL;
        loop {
            let got = reduce(snapshot, received, fresh.from_seq);
            if got == want {
                break;
            }
            match peer.next_envelope_by(deadline).await {
                Some(envelope) => received.push(envelope),
                None => panic!(
                    "{}: the reduced state differs from a fresh snapshot\nreduced: {}\nfresh:   {}",
                    snapshot.resource,
                    serde_json::to_string_pretty(&got).unwrap(),
                    serde_json::to_string_pretty(&want).unwrap()
                ),
            }
        }
    }
    fresh_peer.client.shutdown().await;
}

/// Every `"status": "pending-confirmation"` tool call in a state: `(tool call id)`.
fn pending_confirmations(state: &Value, found: &mut Vec<String>) {
    match state {
        Value::Object(map) => {
            if map.get("status").and_then(Value::as_str) == Some("pending-confirmation")
                && let Some(id) = map.get("toolCallId").and_then(Value::as_str)
            {
                found.push(id.to_owned());
            }
            map.values().for_each(|v| pending_confirmations(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| pending_confirmations(v, found)),
        _ => {}
    }
}

// ─── 1. A turn, envelopes, convergence ───────────────────────────────────────────────────────

fn tool_turn_script() -> Value {
    json!({ "turns": [{ "steps": [
        { "kind": "think", "text": "Planning how to write the notes file.", "chunk": 8 },
        { "kind": "say", "text": "I will write notes.txt once you approve.", "chunk": 8 },
        { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
          "effect": { "kind": "writeFile", "path": "notes.txt", "content": "written by e2e\n" } },
        { "kind": "say", "text": "Done.", "chunk": 2 },
        { "kind": "usage", "input": 10, "output": 5, "model": "scripted-1" }
    ]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_streams_ordered_envelopes_that_reduce_to_a_fresh_snapshot() {
    let host = TestHost::start(Some(tool_turn_script())).await;
    let mut peer = Peer::connect(&host.url, "client-a").await;
    let (session, chat) = peer.create_session("e2e-turn").await;
    let session_snapshot = peer.subscribe(session.as_str()).await;
    let chat_snapshot = peer.subscribe(chat.as_str()).await;
    match &session_snapshot.state {
        SnapshotState::Session(s) => {
            assert_eq!(s.default_chat.as_deref(), Some(chat.as_str()));
        }
        other => panic!("not a session snapshot: {other:?}"),
    }

    // A second chat: announced on the session channel before `createChat` answers.
    let second = "ahp-chat:/e2e-second";
    let _: Value = peer
        .client
        .request(
            "createChat",
            json!({ "channel": session.as_str(), "chat": second }),
        )
        .await
        .unwrap();
    let mut received = peer
        .until(|e| {
            e.channel == session.as_str()
                && kind(e) == "session/chatAdded"
                && action_json(e)["summary"]["resource"] == second
        })
        .await;
    let second_snapshot = peer.subscribe(second).await;

    // A turn in each chat, at the same time.
    let seq_a = peer.start_turn(chat.as_str(), "turn-a", "write it").await;
    let seq_b = peer.start_turn(second, "turn-b", "write it too").await;
    received.extend(
        peer.drive_turns(&[(chat.as_str(), "turn-a"), (second, "turn-b")])
            .await,
    );

    assert_increasing_per_channel(
        &received,
        &[&session_snapshot, &chat_snapshot, &second_snapshot],
    );
    // The client's own actions come back with their origin, the host's without.
    for (channel, turn, client_seq) in [(chat.as_str(), "turn-a", seq_a), (second, "turn-b", seq_b)]
    {
        let echo = received
            .iter()
            .find(|e| {
                e.channel == channel
                    && kind(e) == "chat/turnStarted"
                    && action_json(e)["turnId"] == turn
            })
            .unwrap_or_else(|| panic!("no echo of {turn}"));
        let origin = echo.origin.as_ref().expect("the echo carries its origin");
        assert_eq!(origin.client_id, "client-a");
        assert_eq!(origin.client_seq, client_seq);
        assert!(echo.rejection_reason.is_none());
        let confirmed = received
            .iter()
            .find(|e| e.channel == channel && kind(e) == "chat/toolCallConfirmed")
            .expect("the confirmation is echoed");
        assert_eq!(confirmed.origin.as_ref().unwrap().client_id, "client-a");
    }
    for envelope in &received {
        let by_client = matches!(
            kind(envelope).as_str(),
            "chat/turnStarted" | "chat/toolCallConfirmed"
        );
        assert_eq!(
            envelope.origin.is_some(),
            by_client,
            "origin of {:?}",
            envelope
        );
        assert!(envelope.rejection_reason.is_none());
    }
    for (channel, wanted) in [
        (
            chat.as_str(),
            ["chat/reasoning", "chat/delta", "chat/usage"],
        ),
        (second, ["chat/reasoning", "chat/delta", "chat/usage"]),
    ] {
        for wanted in wanted {
            assert!(
                received
                    .iter()
                    .any(|e| e.channel == channel && kind(e) == wanted),
                "no {wanted} on {channel}"
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(host.work.join("notes.txt")).unwrap(),
        "written by e2e\n"
    );

    assert_converges(
        &host.url,
        &mut peer,
        &mut received,
        &[&chat_snapshot, &second_snapshot, &session_snapshot],
    )
    .await;
}

// ─── 2. The connection token ─────────────────────────────────────────────────────────────────

async fn upgrade_status(url: &str) -> u16 {
    match tokio_tungstenite::connect_async(url).await {
        Ok(_) => panic!("{url}: the upgrade was accepted"),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("{url}: not an HTTP refusal: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_missing_token_is_refused_with_403() {
    let host = TestHost::start(None).await;
    assert_eq!(
        upgrade_status(&format!("ws://{}/?tkn=wrong-token", host.addr)).await,
        403
    );
    assert_eq!(upgrade_status(&format!("ws://{}/", host.addr)).await, 403);
    assert_eq!(
        upgrade_status(&format!("ws://{}/?tkn=", host.addr)).await,
        403
    );
    // The right one is admitted.
    let peer = Peer::connect(&host.url, "client-a").await;
    peer.client.ping().await.unwrap();
}

// ─── 3. Version negotiation ──────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_version_gets_32005_and_vs_codes_offer_gets_0_10_0() {
    let host = TestHost::start(None).await;

    let client = raw_client(&host.url).await;
    let refused = client
        .initialize("future".into(), vec!["2.0.0".into()], Vec::new())
        .await;
    let Err(ClientError::Rpc(error)) = refused else {
        panic!("2.0.0 was not refused with an error response: {refused:?}");
    };
    assert_eq!(error.code, -32005, "{error:?}");
    let data = serde_json::to_value(error.data.expect("data")).unwrap();
    let supported: Vec<&str> = data["supportedVersions"]
        .as_array()
        .expect("data.supportedVersions")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(supported.contains(&"1.0.0"), "{supported:?}");
    assert!(supported.contains(&"0.10.0"), "{supported:?}");

    let vscode = raw_client(&host.url).await;
    let init = vscode
        .initialize(
            "vscode".into(),
            vec!["0.10.0".into(), "0.9.0".into()],
            vec![ROOT_RESOURCE_URI.into()],
        )
        .await
        .unwrap();
    assert_eq!(init.protocol_version, "0.10.0");
    assert_eq!(init.snapshots.len(), 1, "the initial root subscription");
    vscode.ping().await.unwrap();
}

/// The `-32005` answer is written before the close frame every time, not only when the writer
/// happens to pick it up before the close request (a close requested while the writer holds a
/// dequeued frame used to drop that frame).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_32005_answer_always_precedes_the_close() {
    const ATTEMPTS: usize = 200;
    let host = TestHost::start(None).await;
    let offer = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "channel": ROOT_RESOURCE_URI, "protocolVersions": ["2.0.0"], "clientId": "future" }
    })
    .to_string();
    let mut lost = 0;
    for _ in 0..ATTEMPTS {
        let (mut socket, _) = tokio_tungstenite::connect_async(host.url.as_str())
            .await
            .unwrap();
        socket
            .send(Message::Text(offer.as_str().into()))
            .await
            .unwrap();
        let mut answered = false;
        loop {
            let message = tokio::time::timeout(STALL, socket.next())
                .await
                .expect("the host answers or closes");
            match message {
                Some(Ok(Message::Text(text))) => {
                    let answer: Value = serde_json::from_str(text.as_str()).unwrap();
                    assert_eq!(answer["error"]["code"], -32005, "{answer}");
                    answered = true;
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            }
        }
        if !answered {
            lost += 1;
        }
    }
    assert_eq!(
        lost, 0,
        "{lost} of {ATTEMPTS} -32005 answers were lost before the close frame"
    );
}

// ─── 4. A malformed frame ────────────────────────────────────────────────────────────────────

async fn next_text<S>(socket: &mut S) -> Value
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let message = tokio::time::timeout(STALL, socket.next())
            .await
            .expect("the host answers")
            .expect("the socket is open")
            .unwrap();
        if let Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_frame_gets_32700_and_the_connection_keeps_working() {
    let host = TestHost::start(None).await;
    let (mut socket, _) = tokio_tungstenite::connect_async(host.url.as_str())
        .await
        .unwrap();
    let send = |value: Value| Message::Text(value.to_string().into());
    socket
        .send(send(json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "channel": ROOT_RESOURCE_URI, "protocolVersions": ["1.0.0"], "clientId": "raw" }
        })))
        .await
        .unwrap();
    let initialized = next_text(&mut socket).await;
    assert_eq!(initialized["id"], 1);
    assert_eq!(initialized["result"]["protocolVersion"], "1.0.0");

    socket
        .send(Message::Text("{not json".into()))
        .await
        .unwrap();
    let error = next_text(&mut socket).await;
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null, "{error}");

    socket
        .send(send(json!({
            "jsonrpc": "2.0", "id": 2, "method": "ping", "params": { "channel": ROOT_RESOURCE_URI }
        })))
        .await
        .unwrap();
    let pong = next_text(&mut socket).await;
    assert_eq!(pong, json!({ "jsonrpc": "2.0", "id": 2, "result": null }));

    socket
        .send(send(json!({
            "jsonrpc": "2.0", "id": 3, "method": "listSessions", "params": { "channel": ROOT_RESOURCE_URI }
        })))
        .await
        .unwrap();
    let listed = next_text(&mut socket).await;
    assert_eq!(listed["id"], 3);
    assert_eq!(listed["result"]["items"], json!([]));
}

// ─── 5. Rejected client actions ──────────────────────────────────────────────────────────────

fn long_turn_script() -> Value {
    json!({ "default": { "steps": [
        { "kind": "say", "text": "Working on it.", "chunk": 4 },
        { "kind": "pause", "ms": 600_000 }
    ]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_action_is_echoed_to_its_dispatcher_only_and_changes_nothing() {
    let host = TestHost::start(Some(long_turn_script())).await;
    let mut a = Peer::connect(&host.url, "client-a").await;
    let mut b = Peer::connect(&host.url, "client-b").await;
    let (session, chat) = a.create_session("e2e-reject").await;
    let chat = chat.as_str();
    let a_snapshot = a.subscribe(chat).await;
    let b_snapshot = b.subscribe(chat).await;
    let b_session = b.subscribe(session.as_str()).await;

    // No active turn: cancelling is refused.
    let cancel_seq = a
        .dispatch(
            chat,
            json!({ "type": "chat/turnCancelled", "turnId": "nope", "duration": 0 }),
        )
        .await;
    let echo = a.next_envelope().await;
    assert_eq!(echo.channel, chat);
    assert_eq!(kind(&echo), "chat/turnCancelled");
    let reason = echo.rejection_reason.clone().expect("a rejectionReason");
    assert!(!reason.is_empty());
    let origin = echo.origin.clone().expect("the echo carries its origin");
    assert_eq!(
        (origin.client_id.as_str(), origin.client_seq),
        ("client-a", cancel_seq)
    );
    // State unchanged: a fresh snapshot equals the one before.
    let observer = Peer::connect(&host.url, "observer").await;
    assert_eq!(
        state_json(&observer.subscribe(chat).await),
        state_json(&b_snapshot)
    );
    assert_eq!(
        state_json(&observer.subscribe(session.as_str()).await),
        state_json(&b_session)
    );

    // A second turn while one runs is refused too.
    a.start_turn(chat, "t1", "work").await;
    let busy_seq = a.start_turn(chat, "t2", "more work").await;
    let mut a_received = a
        .until(|e| e.rejection_reason.is_some() && kind(e) == "chat/turnStarted")
        .await;
    let echo = a_received.last().unwrap();
    assert_eq!(action_json(echo)["turnId"], "t2");
    assert_eq!(echo.origin.as_ref().unwrap().client_seq, busy_seq);
    assert!(!echo.rejection_reason.as_deref().unwrap().is_empty());
    // Let the turn stream its text, then cancel it (accepted).
    if !a_received.iter().any(|e| kind(e) == "chat/delta") {
        a_received.extend(
            a.until(|e| e.channel == chat && kind(e) == "chat/delta")
                .await,
        );
    }
    a.dispatch(
        chat,
        json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 5 }),
    )
    .await;
    a_received.extend(a.until(|e| is_turn_end(e, chat, "t1")).await);
    let cancelled = a_received.last().unwrap();
    assert_eq!(kind(cancelled), "chat/turnCancelled");
    assert_eq!(cancelled.origin.as_ref().unwrap().client_id, "client-a");

    // The other subscriber saw the accepted actions only: its first envelope is t1's start.
    let b_received = b.until(|e| is_turn_end(e, chat, "t1")).await;
    let first = b_received.first().unwrap();
    assert_eq!(kind(first), "chat/turnStarted");
    assert_eq!(action_json(first)["turnId"], "t1");
    for envelope in &b_received {
        assert!(
            envelope.rejection_reason.is_none(),
            "b got a rejection: {envelope:?}"
        );
        let action = action_json(envelope);
        assert_ne!(action["turnId"], "t2", "b got {envelope:?}");
        assert_ne!(action["turnId"], "nope", "b got {envelope:?}");
    }
    let b_chat: Vec<ActionEnvelope> = b_received
        .iter()
        .filter(|e| e.channel == chat)
        .cloned()
        .collect();
    let a_chat: Vec<ActionEnvelope> = a_received
        .iter()
        .filter(|e| e.rejection_reason.is_none())
        .cloned()
        .collect();
    assert_eq!(
        serde_json::to_value(&a_chat).unwrap(),
        serde_json::to_value(&b_chat).unwrap(),
        "both subscribers saw the same accepted envelopes"
    );
    assert_increasing_per_channel(&b_chat, &[&b_snapshot]);

    // The rejected turn left no trace; the cancelled one is the only turn.
    let mut all_a = a_received.clone();
    assert_converges(&host.url, &mut a, &mut all_a, &[&a_snapshot]).await;
    let final_state = state_json(&observer.subscribe(chat).await);
    let turns = final_state["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{final_state}");
    assert_eq!(turns[0]["id"], "t1");
    assert!(final_state.get("activeTurn").is_none(), "{final_state}");
    assert!(!final_state.to_string().contains("more work"));
}

// ─── 6. Reconnect ────────────────────────────────────────────────────────────────────────────

fn short_reply_script() -> Value {
    json!({ "default": { "steps": [
        { "kind": "say", "text": "A short reply, streamed in a few chunks.", "chunk": 6 }
    ]}})
}

async fn reconnect(peer: &Peer, last_seen: i64, subscriptions: &[&str]) -> Value {
    peer.client
        .request(
            "reconnect",
            json!({
                "channel": ROOT_RESOURCE_URI, "clientId": peer.id,
                "lastSeenServerSeq": last_seen, "subscriptions": subscriptions
            }),
        )
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_replays_exactly_what_was_missed_or_sends_snapshots() {
    let host = TestHost::start(Some(short_reply_script())).await;
    let mut a = Peer::connect(&host.url, "client-a").await;
    let mut b = Peer::connect(&host.url, "client-b").await;
    let (session, chat) = a.create_session("e2e-reconnect").await;
    let (session, chat) = (session.as_str(), chat.as_str());
    let subscriptions = [session, chat];
    for channel in subscriptions {
        a.subscribe(channel).await;
    }
    // `b` sees everything from here on.
    let b_snapshots = [b.subscribe(session).await, b.subscribe(chat).await];

    a.start_turn(chat, "t1", "first").await;
    let seen = a.until(|e| is_turn_end(e, chat, "t1")).await;
    let last_seen = seen.last().unwrap().server_seq;
    a.client.shutdown().await;

    // More happens while `a` is away.
    b.start_turn(chat, "t2", "second").await;
    let mut b_received = b.until(|e| is_turn_end(e, chat, "t2")).await;
    assert!(
        b_received
            .iter()
            .any(|e| e.server_seq > last_seen && e.channel == chat),
        "actions happened after the watermark"
    );

    // `a` comes back on a new connection.
    let mut back = Peer::uninitialized(&host.url, "client-a").await;
    let gone = "ahp-chat:/e2e-never-existed";
    let result = reconnect(
        &back,
        i64::try_from(last_seen).unwrap(),
        &[session, chat, gone],
    )
    .await;
    assert_eq!(result["type"], "replay", "{result}");
    assert_eq!(result["missing"], json!([gone]));
    let replayed: Vec<ActionEnvelope> = serde_json::from_value(result["actions"].clone()).unwrap();
    assert!(!replayed.is_empty());
    // Exactly the envelopes after the watermark for those channels, in order: compare with what
    // `b` received (waiting for any `b` has not received yet).
    let newest = replayed.last().unwrap().server_seq;
    while b_received.iter().all(|e| e.server_seq < newest) {
        b_received.push(b.next_envelope().await);
    }
    let expected: Vec<&ActionEnvelope> = b_received
        .iter()
        .filter(|e| {
            e.server_seq > last_seen
                && e.server_seq <= newest
                && subscriptions.contains(&e.channel.as_str())
                && e.rejection_reason.is_none()
        })
        .collect();
    assert_eq!(
        serde_json::to_value(&replayed).unwrap(),
        serde_json::to_value(&expected).unwrap()
    );
    assert!(replayed.iter().all(|e| e.server_seq > last_seen));
    assert_increasing_per_channel(
        &replayed,
        &[
            &Snapshot {
                from_seq: i64::try_from(last_seen).unwrap(),
                ..b_snapshots[0].clone()
            },
            &Snapshot {
                from_seq: i64::try_from(last_seen).unwrap(),
                ..b_snapshots[1].clone()
            },
        ],
    );

    // The reconnected connection is subscribed again: live envelopes follow.
    let seq = back.start_turn(chat, "t3", "third").await;
    let live = back.until(|e| is_turn_end(e, chat, "t3")).await;
    let echo = live
        .iter()
        .find(|e| kind(e) == "chat/turnStarted")
        .expect("the echo of t3");
    assert_eq!(
        echo.origin
            .as_ref()
            .map(|o| (o.client_id.as_str(), o.client_seq)),
        Some(("client-a", seq))
    );

    // A watermark far ahead (a host restart) gets snapshots instead.
    let ahead = Peer::uninitialized(&host.url, "client-c").await;
    let result = reconnect(&ahead, 1_000_000_000, &subscriptions).await;
    assert_eq!(result["type"], "snapshot", "{result}");
    let snapshots: Vec<Snapshot> = serde_json::from_value(result["snapshots"].clone()).unwrap();
    let resources: HashSet<&str> = snapshots.iter().map(|s| s.resource.as_str()).collect();
    assert_eq!(resources, HashSet::from(subscriptions));
    for snapshot in &snapshots {
        if let SnapshotState::Chat(state) = &snapshot.state {
            assert_eq!(state.turns.len(), 3);
        }
    }
}

// ─── 7. Subagents ────────────────────────────────────────────────────────────────────────────

fn subagent_script() -> Value {
    json!({ "turns": [{ "steps": [
        { "kind": "say", "text": "Handing over to a helper.", "chunk": 8 },
        { "kind": "subagent", "agent": "helper", "displayName": "Helper",
          "description": "Look the answer up", "prompt": "Find the answer.",
          "result": "The helper reported back.",
          "steps": [
            { "kind": "think", "text": "Looking it up.", "chunk": 4 },
            { "kind": "tool", "name": "lookup", "displayName": "Lookup",
              "invocation": "Look up the answer", "confirm": true, "permission": "lookup",
              "result": "42", "pastTense": "Looked up the answer" },
            { "kind": "say", "text": "SUBAGENT: the answer is 42.", "chunk": 8 }
          ] },
        { "kind": "say", "text": "The helper is done.", "chunk": 8 }
    ]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_turn_runs_in_its_own_chat() {
    let host = TestHost::start(Some(subagent_script())).await;
    let mut peer = Peer::connect(&host.url, "client-a").await;
    let (session, chat) = peer.create_session("e2e-subagent").await;
    let session_snapshot = peer.subscribe(session.as_str()).await;
    let chat_snapshot = peer.subscribe(chat.as_str()).await;
    peer.start_turn(chat.as_str(), "t-parent", "delegate").await;

    let mut received: Vec<ActionEnvelope> = Vec::new();
    let mut task_call: Option<String> = None;
    let mut subagent: Option<(String, Snapshot)> = None;
    let mut confirmed: HashSet<String> = HashSet::new();
    loop {
        let envelope = peer.next_envelope().await;
        let action = action_json(&envelope);
        if envelope.channel == chat.as_str()
            && action["type"] == "chat/toolCallStart"
            && action["toolName"] == "Task"
        {
            task_call = Some(action["toolCallId"].as_str().unwrap().to_owned());
        }
        if envelope.channel == session.as_str() && action["type"] == "session/chatAdded" {
            let task = task_call.as_deref().expect("the Task call starts first");
            let expected = ChatUri::subagent(&session, &SafeId::new(task).unwrap());
            assert_eq!(action["summary"]["resource"], expected.as_str(), "{action}");
            // Follow the subagent chat; answer a confirmation it may already wait for.
            let snapshot = peer.subscribe(expected.as_str()).await;
            let state = state_json(&snapshot);
            let mut pending = Vec::new();
            pending_confirmations(&state, &mut pending);
            for call in pending {
                let turn = state["activeTurn"]["id"].as_str().unwrap();
                peer.confirm(expected.as_str(), turn, &call).await;
                confirmed.insert(call);
            }
            subagent = Some((expected.into_string(), snapshot));
        }
        if asks_confirmation(&action) {
            let call = action["toolCallId"].as_str().unwrap().to_owned();
            if confirmed.insert(call.clone()) {
                peer.confirm(&envelope.channel, action["turnId"].as_str().unwrap(), &call)
                    .await;
            }
        }
        let done = is_turn_end(&envelope, chat.as_str(), "t-parent");
        received.push(envelope);
        if done {
            break;
        }
    }
    let task_call = task_call.expect("a Task tool call in the parent chat");
    let (subagent, subagent_snapshot) = subagent.expect("a session/chatAdded for the subagent");
    assert!(
        !confirmed.is_empty(),
        "the subagent asked for a confirmation"
    );

    // The subagent chat's own turn: from its snapshot, or its first envelope.
    let subagent_state = state_json(&subagent_snapshot);
    let sub_turn = subagent_state["activeTurn"]["id"]
        .as_str()
        .or_else(|| subagent_state["turns"][0]["id"].as_str())
        .map(str::to_owned)
        .or_else(|| {
            received
                .iter()
                .find(|e| e.channel == subagent && kind(e) == "chat/turnStarted")
                .map(|e| action_json(e)["turnId"].as_str().unwrap().to_owned())
        })
        .expect("the subagent chat has a turn");
    assert_ne!(sub_turn, "t-parent");

    // The subagent's actions arrived on its chat, under its turn id…
    let on_subagent: Vec<&ActionEnvelope> =
        received.iter().filter(|e| e.channel == subagent).collect();
    assert!(
        on_subagent
            .iter()
            .any(|e| kind(e) == "chat/toolCallComplete"),
        "the subagent's tool call completes on its chat"
    );
    for envelope in &on_subagent {
        if let Some(turn) = action_json(envelope)["turnId"].as_str() {
            assert_eq!(turn, sub_turn, "{envelope:?}");
        }
    }
    assert!(on_subagent.iter().any(|e| {
        kind(e) == "chat/turnComplete" && action_json(e)["turnId"] == sub_turn.as_str()
    }));
    // …and none of them on the parent.
    for envelope in received.iter().filter(|e| e.channel == chat.as_str()) {
        let action = action_json(envelope);
        if let Some(turn) = action["turnId"].as_str() {
            assert_eq!(turn, "t-parent", "{envelope:?}");
        }
        if let Some(call) = action["toolCallId"].as_str() {
            assert_eq!(call, task_call, "{envelope:?}");
        }
        assert!(!action.to_string().contains("SUBAGENT"), "{envelope:?}");
    }

    // The parent's Task call completed, pointing at the subagent chat.
    let completed = received
        .iter()
        .find(|e| {
            e.channel == chat.as_str()
                && kind(e) == "chat/toolCallComplete"
                && action_json(e)["toolCallId"] == task_call.as_str()
        })
        .expect("the Task call completes");
    let result = &action_json(completed)["result"];
    assert_eq!(result["success"], true, "{result}");
    assert!(
        result["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "subagent" && c["resource"] == subagent.as_str()),
        "{result}"
    );

    // The subagent chat, fetched fresh, holds the subagent's work under its own turn.
    let observer = Peer::connect(&host.url, "observer").await;
    let fresh = state_json(&observer.subscribe(&subagent).await);
    assert_eq!(fresh["turns"][0]["id"], sub_turn.as_str(), "{fresh}");
    assert!(fresh.to_string().contains("SUBAGENT: the answer is 42."));
    assert!(fresh.get("activeTurn").is_none(), "{fresh}");

    assert_converges(
        &host.url,
        &mut peer,
        &mut received,
        &[&chat_snapshot, &subagent_snapshot, &session_snapshot],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_created_with_an_initial_message_runs_its_first_turn() {
    let host = TestHost::start(Some(short_reply_script())).await;
    let mut peer = Peer::connect(&host.url, "client-a").await;
    let (session, _) = peer.create_session("e2e-initial").await;
    let chat = "ahp-chat:/e2e-initial-chat";

    // Only user messages may start a turn.
    let refused: Result<Value, _> = peer
        .client
        .request(
            "createChat",
            json!({ "channel": session.as_str(), "chat": chat,
                    "initialMessage": { "text": "hi", "origin": { "kind": "agent" } } }),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");

    let _: Value = peer
        .client
        .request(
            "createChat",
            json!({ "channel": session.as_str(), "chat": chat,
                    "initialMessage": { "text": "say something", "origin": { "kind": "user" } } }),
        )
        .await
        .unwrap();
    let snapshot = peer.subscribe(chat).await;
    let finished = |state: &Value| state["turns"].as_array().is_some_and(|t| !t.is_empty());
    if !finished(&state_json(&snapshot)) {
        peer.until(|e| is_turn_end(e, chat, "initial")).await;
    }
    let fresh = Peer::connect(&host.url, "client-b")
        .await
        .subscribe(chat)
        .await;
    let state = state_json(&fresh);
    let turn = &state["turns"][0];
    assert_eq!(turn["id"], "initial");
    assert_eq!(turn["state"], "complete");
    assert_eq!(turn["message"]["text"], "say something");
    assert_eq!(turn["message"]["origin"]["kind"], "user");
    assert_eq!(
        turn["responseParts"][0]["content"],
        "A short reply, streamed in a few chunks."
    );
}

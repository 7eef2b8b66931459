//! A hostile client over the wire (issue 13): the host as `agent-host serve` composes it
//! (`agenthost::host::bind_with`, small configured limits) with the scripted agent, attacked by
//! a raw tokio-tungstenite client sending what no well-behaved client would: random bytes,
//! malformed JSON, JSON that is not JSON-RPC, unknown methods, requests before `initialize`,
//! binary and oversized frames, thousands of subscriptions, a flood of dispatches, actions on
//! channels it did not create and actions of the wrong shape.
//!
//! After every attack the test checks three things: the hostile connection is in the state the
//! specification (or the documented limit) says; the hostile client changed no state (the
//! victim's session and chat snapshots and `listSessions` are what they were); and a second,
//! well-behaved client (Microsoft's `ahp::Client`) can still create a session and run a
//! scripted turn. Every wait polls with a deadline ([`STALL`]); random input comes from a
//! fixed-seed xorshift, so every run sends the same bytes.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use agenthost::serve::ServerLimits;
use agenthost_protocol::{ChatUri, ROOT_RESOURCE_URI, SafeId, SessionUri};
use ahp::{Client, ClientEventStream, SubscriptionEvent};
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use support::{STALL, ScriptedHost, connect, create_session, dispatch, until};

/// A timestamp for client-started turns.
const STARTED_AT: &str = "2026-03-01T10:00:00.000Z";

/// What the scripted agent answers every turn with.
fn script() -> Value {
    json!({ "default": { "steps": [
        { "kind": "say", "text": "A short scripted reply.", "chunk": 8 }
    ]}})
}

// ─── A raw client ────────────────────────────────────────────────────────────────────────────

/// What the host sent a raw client.
#[derive(Debug, Clone, PartialEq)]
enum Frame {
    /// A text frame (the host only ever sends JSON).
    Json(Value),
    /// A close frame: its code and reason.
    Close(u16, String),
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A raw WebSocket client whose every received frame is read at once by a background task (so
/// a flood of answers never backs up into the host) and queued for the test.
struct Raw {
    sink: SplitSink<Socket, Message>,
    frames: mpsc::UnboundedReceiver<Frame>,
    /// The task reading the socket; aborted on drop, which closes the socket.
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Raw {
    /// Connects without initializing.
    async fn open(url: &str) -> Self {
        let (socket, _) = tokio::time::timeout(STALL, tokio_tungstenite::connect_async(url))
            .await
            .expect("connect timed out")
            .expect("connect failed");
        let (sink, mut stream) = socket.split();
        let (tx, frames) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let frame = match message {
                    Message::Text(text) => Frame::Json(
                        serde_json::from_str(text.as_str()).expect("the host sends JSON text"),
                    ),
                    Message::Close(frame) => {
                        let (code, reason) = frame
                            .map(|f| (u16::from(f.code), f.reason.to_string()))
                            .unwrap_or((1005, String::new()));
                        Frame::Close(code, reason)
                    }
                    Message::Binary(_) => panic!("the host sent a binary frame"),
                    _ => continue,
                };
                if tx.send(frame).is_err() {
                    break;
                }
            }
        });
        Self {
            sink,
            frames,
            reader,
        }
    }

    /// Connects and initializes as `client_id` with protocol 1.0.0.
    async fn initialized(url: &str, client_id: &str) -> Self {
        let mut raw = Self::open(url).await;
        let init = raw
            .call(
                0,
                "initialize",
                json!({
                    "channel": ROOT_RESOURCE_URI,
                    "protocolVersions": ["1.0.0"],
                    "clientId": client_id,
                }),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], "1.0.0", "{init}");
        raw
    }

    async fn send_text(&mut self, text: impl Into<String>) {
        self.sink
            .send(Message::Text(text.into().into()))
            .await
            .unwrap();
    }

    async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.sink.send(Message::Binary(bytes.into())).await.unwrap();
    }

    async fn send(&mut self, value: &Value) {
        self.send_text(value.to_string()).await;
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
            .await;
    }

    /// The next frame; fails after [`STALL`] or when the connection ended without a close.
    async fn next(&mut self) -> Frame {
        tokio::time::timeout(STALL, self.frames.recv())
            .await
            .expect("nothing from the host")
            .expect("the connection ended without a close frame")
    }

    async fn next_json(&mut self) -> Value {
        match self.next().await {
            Frame::Json(value) => value,
            Frame::Close(code, reason) => panic!("closed with {code} {reason:?}"),
        }
    }

    /// Every frame up to the response with `id`, and that response.
    async fn until_response(&mut self, id: u64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let frame = self.next_json().await;
            if frame.get("id") == Some(&json!(id))
                && (frame.get("result").is_some() || frame.get("error").is_some())
            {
                return (before, frame);
            }
            before.push(frame);
        }
    }

    /// Sends a request and returns its response, skipping anything else.
    async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.request(id, method, params).await;
        self.until_response(id).await.1
    }

    /// Asks `listSessions` with `id` and returns everything the host sent before its answer:
    /// the host handles a connection's messages in order, and answers undecodable frames ahead
    /// of anything queued after them, so this is every answer to what was sent before.
    async fn barrier(&mut self, id: u64) -> Vec<Value> {
        self.request(id, "listSessions", json!({ "channel": ROOT_RESOURCE_URI }))
            .await;
        let (before, answer) = self.until_response(id).await;
        assert!(answer.get("result").is_some(), "{answer}");
        before
    }

    /// Whether the host still answers this connection.
    async fn assert_open(&mut self, id: u64) {
        let pong = self
            .call(id, "ping", json!({ "channel": ROOT_RESOURCE_URI }))
            .await;
        assert_eq!(
            pong,
            json!({ "jsonrpc": "2.0", "id": id, "result": null }),
            "{pong}"
        );
    }
}

fn error_code(frame: &Value) -> i64 {
    frame["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error response: {frame}"))
}

/// The `action` notifications among `frames`, as envelopes (JSON).
fn envelopes(frames: &[Value]) -> Vec<&Value> {
    frames
        .iter()
        .filter(|f| f["method"] == "action")
        .map(|f| &f["params"])
        .collect()
}

// ─── A seeded random source ──────────────────────────────────────────────────────────────────

/// Marsaglia's xorshift64: deterministic, no dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    fn string(&mut self, max: usize) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789 :/-_\"\\{}[],.\xc3";
        let len = self.below(max + 1);
        String::from_utf8_lossy(
            &(0..len)
                .map(|_| ALPHABET[self.below(ALPHABET.len())])
                .collect::<Vec<_>>(),
        )
        .into_owned()
    }

    /// A random JSON value that is never a JSON-RPC message (no `"jsonrpc"` key anywhere at the
    /// top level), with JSON-RPC's other member names thrown in to look the part.
    fn json(&mut self, depth: usize) -> Value {
        const KEYS: &[&str] = &[
            "id",
            "method",
            "params",
            "result",
            "error",
            "channel",
            "action",
            "type",
            "clientSeq",
        ];
        match self.below(if depth == 0 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => json!(self.below(2) == 0),
            2 => json!(self.next() as i64),
            // Eighths print and parse back exactly.
            3 => json!((self.next() % 1_000_000) as f64 / 8.0),
            4 => json!(self.string(24)),
            5 => Value::Array((0..self.below(5)).map(|_| self.json(depth - 1)).collect()),
            _ => Value::Object(
                (0..self.below(6))
                    .map(|_| {
                        let key = if self.below(3) == 0 {
                            self.string(8)
                        } else {
                            KEYS[self.below(KEYS.len())].to_owned()
                        };
                        (key, self.json(depth - 1))
                    })
                    .filter(|(key, _)| key != "jsonrpc")
                    .collect(),
            ),
        }
    }

    /// `text` with one to three random byte edits (replace, delete, insert, truncate).
    fn mutate(&mut self, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        for _ in 0..=self.below(3) {
            if bytes.is_empty() {
                break;
            }
            let at = self.below(bytes.len());
            let byte = b' ' + self.below(95) as u8;
            match self.below(4) {
                0 => bytes[at] = byte,
                1 => {
                    bytes.remove(at);
                }
                2 => bytes.insert(at, byte),
                _ => bytes.truncate(at),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

// ─── The victim, and what must not change ────────────────────────────────────────────────────

/// A well-behaved client that owns a session with one completed turn.
struct Victim {
    client: Client,
    events: ClientEventStream,
    session: SessionUri,
    chat: ChatUri,
}

impl Victim {
    async fn start(url: &str) -> Self {
        let (client, mut events) = connect(url, "victim").await;
        let (session, chat) = create_session(&client, "victim").await;
        let _ = client.subscribe(session.as_str().to_owned()).await.unwrap();
        let _ = client.subscribe(chat.as_str().to_owned()).await.unwrap();
        run_turn(&client, &mut events, chat.as_str(), "victim-turn").await;
        Self {
            client,
            events,
            session,
            chat,
        }
    }

    /// What must not change: `listSessions` and the state of the victim's session and chat.
    async fn baseline(&self) -> Baseline {
        Baseline {
            sessions: list_sessions(&self.client).await,
            session: state_of(&self.client, self.session.as_str()).await,
            chat: state_of(&self.client, self.chat.as_str()).await,
        }
    }

    /// Fails if the victim received an envelope dispatched by `client_id`; waits for a round
    /// trip of its own first, so whatever the host sent it before is in.
    async fn assert_saw_nothing_from(&mut self, client_id: &str) {
        list_sessions(&self.client).await;
        while let Ok(Some(event)) =
            tokio::time::timeout(Duration::from_millis(50), self.events.recv()).await
        {
            if let SubscriptionEvent::Action(envelope) = event.event {
                let from = envelope.origin.as_ref().map(|o| o.client_id.as_str());
                assert_ne!(from, Some(client_id), "the victim got {envelope:?}");
            }
        }
    }
}

#[derive(Debug, PartialEq)]
struct Baseline {
    sessions: Value,
    session: Value,
    chat: Value,
}

impl Baseline {
    /// The state now equals this baseline.
    async fn assert_unchanged(&self, victim: &Victim) {
        let now = victim.baseline().await;
        assert_eq!(now.session, self.session, "the victim's session changed");
        assert_eq!(now.chat, self.chat, "the victim's chat changed");
        assert_eq!(now.sessions, self.sessions, "listSessions changed");
    }
}

async fn list_sessions(client: &Client) -> Value {
    client
        .request("listSessions", json!({ "channel": ROOT_RESOURCE_URI }))
        .await
        .unwrap()
}

/// The state of `channel` in a fresh snapshot.
async fn state_of(client: &Client, channel: &str) -> Value {
    let result: Value = client
        .request("subscribe", json!({ "channel": channel }))
        .await
        .unwrap();
    result["snapshot"]["state"].clone()
}

fn turn_ended(envelope: &agenthost_protocol::ActionEnvelope, chat: &str, turn: &str) -> bool {
    let action = serde_json::to_value(&envelope.action).unwrap();
    envelope.channel == chat
        && action["turnId"] == turn
        && matches!(
            action["type"].as_str(),
            Some("chat/turnComplete" | "chat/error" | "chat/turnCancelled")
        )
}

/// Starts a turn on `chat` (subscribed by `client`) and waits until it completed.
async fn run_turn(client: &Client, events: &mut ClientEventStream, chat: &str, turn: &str) {
    dispatch(
        client,
        chat,
        json!({
            "type": "chat/turnStarted", "turnId": turn, "startedAt": STARTED_AT,
            "message": { "text": "hello", "origin": { "kind": "user" } }
        }),
    )
    .await;
    let end = until(events, |e| turn_ended(e, chat, turn)).await;
    let action = serde_json::to_value(&end.action).unwrap();
    assert_eq!(action["type"], "chat/turnComplete", "{action}");
}

/// A second, well-behaved client can still connect, create a session and run a scripted turn.
async fn assert_host_serves(url: &str, tag: &str) {
    let (client, mut events) = connect(url, &format!("healthy-{tag}")).await;
    let (_session, chat) = create_session(&client, &format!("healthy-{tag}")).await;
    let _ = client.subscribe(chat.as_str().to_owned()).await.unwrap();
    run_turn(&client, &mut events, chat.as_str(), "healthy-turn").await;
}

fn limits(tweak: impl FnOnce(&mut ServerLimits)) -> ServerLimits {
    let mut limits = ServerLimits::default();
    tweak(&mut limits);
    limits
}

// ─── 1. Random bytes and garbage JSON ────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_frames_get_one_json_rpc_error_each_and_change_nothing() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let victim = Victim::start(&host.url).await;
    let baseline = victim.baseline().await;
    let mut hostile = Raw::initialized(&host.url, "hostile").await;
    let mut rng = XorShift(0x5eed_1234_abcd_0042);

    // Random bytes as binary frames, random bytes as text, random JSON that is not JSON-RPC.
    let mut expected_ids = Vec::new();
    for _ in 0..150 {
        let len = rng.below(300);
        let bytes = rng.bytes(len);
        hostile.send_binary(bytes).await;
        expected_ids.push(Value::Null);
    }
    for _ in 0..150 {
        let len = rng.below(300);
        let bytes = rng.bytes(len);
        hostile
            .send_text(String::from_utf8_lossy(&bytes).into_owned())
            .await;
        expected_ids.push(Value::Null);
    }
    hostile.send_text("").await;
    expected_ids.push(Value::Null);
    for _ in 0..300 {
        let value = rng.json(4);
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        hostile.send(&value).await;
        expected_ids.push(id);
    }
    let answers = hostile.barrier(1_000).await;
    assert_eq!(answers.len(), expected_ids.len(), "one answer per frame");
    for (answer, id) in answers.iter().zip(&expected_ids) {
        assert!(matches!(error_code(answer), -32700 | -32600), "{answer}");
        assert_eq!(&answer["id"], id, "{answer}");
    }

    // Valid messages with random edits: whatever they turned into is answered (or, for a
    // notification or a response, dropped) and harms nothing.
    let victim_chat = victim.chat.as_str().to_owned();
    let templates = [
        json!({"jsonrpc": "2.0", "id": 101, "method": "ping", "params": {"channel": ROOT_RESOURCE_URI}}),
        json!({"jsonrpc": "2.0", "id": 102, "method": "listSessions", "params": {"channel": ROOT_RESOURCE_URI}}),
        json!({"jsonrpc": "2.0", "id": 103, "method": "x-no-such-method", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 104, "result": {}}),
        json!({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
            "channel": victim_chat, "clientSeq": 1,
            "action": {"type": "chat/turnCancelled", "turnId": "nope", "duration": 0}}}),
    ]
    .map(|t| t.to_string());
    for _ in 0..500 {
        let template = &templates[rng.below(templates.len())];
        let text = rng.mutate(template);
        hostile.send_text(text).await;
    }
    let answers = hostile.barrier(1_001).await;
    for answer in &answers {
        if answer["method"] == "action" {
            assert!(
                answer["params"]["rejectionReason"].is_string(),
                "an edited action was accepted: {answer}"
            );
        } else if answer.get("error").is_some() {
            assert!((-32700..=-32000).contains(&error_code(answer)), "{answer}");
        } else {
            assert!(answer.get("result").is_some(), "{answer}");
        }
    }

    // The connection is open, nothing changed, and the host serves others.
    hostile.assert_open(1_002).await;
    baseline.assert_unchanged(&victim).await;
    assert_host_serves(&host.url, "random").await;
}

// ─── 2. Structurally wrong messages, unknown methods, requests before initialize ───────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_messages_get_the_specified_errors_and_the_connection_stays_open() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let mut victim = Victim::start(&host.url).await;
    let baseline = victim.baseline().await;
    let mut hostile = Raw::open(&host.url).await;

    // Before `initialize`: `ping` is answered, every other request is -32600, a notification
    // is dropped, and nothing is created.
    hostile.assert_open(1).await;
    for (id, method) in [
        (2, "listSessions"),
        (3, "createSession"),
        (4, "subscribe"),
        (5, "x-unknown"),
    ] {
        let params = json!({ "channel": "scripted:/early", "provider": "scripted" });
        let answer = hostile.call(id, method, params).await;
        assert_eq!(error_code(&answer), -32600, "{method}: {answer}");
    }
    hostile
        .notify(
            "dispatchAction",
            json!({ "channel": victim.session.as_str(), "clientSeq": 1,
                    "action": { "type": "session/titleChanged", "title": "pwned early" } }),
        )
        .await;
    let mut hostile = {
        // Initialize the same connection now.
        let init = hostile
            .call(
                6,
                "initialize",
                json!({ "channel": ROOT_RESOURCE_URI, "protocolVersions": ["1.0.0"],
                        "clientId": "hostile" }),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], "1.0.0", "{init}");
        hostile
    };
    let again = hostile
        .call(
            7,
            "initialize",
            json!({ "channel": ROOT_RESOURCE_URI, "protocolVersions": ["1.0.0"],
                    "clientId": "hostile" }),
        )
        .await;
    assert_eq!(error_code(&again), -32600, "a second initialize: {again}");

    // Malformed JSON: -32700 with id null.
    for text in [
        "{not json",
        "{\"jsonrpc\": \"2.0\", \"id\": 8",
        "\u{0}",
        "[1, 2",
    ] {
        hostile.send_text(text).await;
        let answer = hostile.next_json().await;
        assert_eq!(error_code(&answer), -32700, "{text:?}: {answer}");
        assert_eq!(answer["id"], Value::Null);
    }
    // Valid JSON that is not JSON-RPC: -32600, echoing whatever id could be read.
    for (message, id) in [
        (json!({"hello": "world"}), Value::Null),
        (json!([]), Value::Null),
        (
            json!([{"jsonrpc": "2.0", "id": 9, "method": "ping"}]),
            Value::Null,
        ),
        (json!(42), Value::Null),
        (json!("ping"), Value::Null),
        (
            json!({"jsonrpc": "1.0", "id": 10, "method": "ping"}),
            json!(10),
        ),
        (json!({"id": 11, "method": "ping"}), json!(11)),
        (
            json!({"jsonrpc": "2.0", "id": "twelve", "method": "ping"}),
            json!("twelve"),
        ),
        (
            json!({"jsonrpc": "2.0", "id": -13, "method": "ping"}),
            json!(-13),
        ),
        (
            json!({"jsonrpc": "2.0", "id": 14.5, "method": "ping"}),
            json!(14.5),
        ),
        (json!({"jsonrpc": "2.0", "id": 15, "method": 15}), json!(15)),
        (
            json!({"jsonrpc": "2.0", "id": 16, "method": "ping", "params": "x"}),
            json!(16),
        ),
        (json!({"jsonrpc": "2.0", "id": 17}), json!(17)),
        (
            json!({"jsonrpc": "2.0", "id": 18, "error": {"code": "x"}}),
            json!(18),
        ),
    ] {
        hostile.send(&message).await;
        let answer = hostile.next_json().await;
        assert_eq!(error_code(&answer), -32600, "{message}: {answer}");
        assert_eq!(answer["id"], id, "{message}: {answer}");
    }
    // A binary frame: -32600.
    hostile
        .send_binary(b"{\"jsonrpc\":\"2.0\",\"id\":19,\"method\":\"ping\"}".to_vec())
        .await;
    let answer = hostile.next_json().await;
    assert_eq!(error_code(&answer), -32600, "{answer}");

    // Unknown methods: -32601; unknown notifications and forged responses: no answer at all.
    for (id, method) in [
        (20, "frobnicate"),
        (21, "x-evil/method"),
        (22, ""),
        (23, "Subscribe"),
        (24, "resourceFrobnicate"),
        (25, "__proto__"),
    ] {
        let answer = hostile
            .call(id, method, json!({ "channel": ROOT_RESOURCE_URI }))
            .await;
        assert_eq!(error_code(&answer), -32601, "{method}: {answer}");
    }
    // Known methods with params of the wrong shape: -32602.
    for (id, method, params) in [
        (30, "createSession", json!({ "channel": 5 })),
        (31, "subscribe", json!({ "nochannel": true })),
        (32, "createChat", json!({ "channel": [] })),
        (33, "resourceRead", json!({ "channel": ROOT_RESOURCE_URI })),
        (33, "fetchTurns", json!({ "channel": { "nested": true } })),
    ] {
        let answer = hostile.call(id, method, params).await;
        assert_eq!(error_code(&answer), -32602, "{method}: {answer}");
    }
    hostile.notify("x-evil/notification", json!({})).await;
    hostile
        .notify(
            "createSession",
            json!({ "channel": "scripted:/by-notification" }),
        )
        .await;
    hostile
        .send(&json!({ "jsonrpc": "2.0", "id": 4242, "result": { "forged": true } }))
        .await;
    let unanswered = hostile.barrier(40).await;
    assert!(
        unanswered.is_empty(),
        "answered a notification: {unanswered:?}"
    );

    // Still open; the early dispatch and the notification-createSession changed nothing.
    hostile.assert_open(41).await;
    baseline.assert_unchanged(&victim).await;
    victim.assert_saw_nothing_from("hostile").await;
    assert_host_serves(&host.url, "wrong").await;
}

// ─── 3. An oversized frame ──────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_frame_closes_that_connection_only_with_1009() {
    const LIMIT: usize = 64 * 1024;
    let host =
        ScriptedHost::start_with_limits(script(), limits(|l| l.max_frame_bytes = LIMIT)).await;
    let victim = Victim::start(&host.url).await;
    let baseline = victim.baseline().await;
    let mut hostile = Raw::initialized(&host.url, "hostile").await;

    // Just under the limit is fine.
    let padded = |id: u64, size: usize| {
        let mut message = json!({ "jsonrpc": "2.0", "id": id, "method": "ping",
                                  "params": { "channel": ROOT_RESOURCE_URI, "pad": "" } });
        let overhead = message.to_string().len();
        message["params"]["pad"] = json!("x".repeat(size - overhead));
        let text = message.to_string();
        assert_eq!(text.len(), size);
        text
    };
    hostile.send_text(padded(1, LIMIT - 16)).await;
    assert_eq!(hostile.next_json().await["id"], 1);

    // Over it: an error naming the limit, then close code 1009, and nothing after.
    hostile.send_text(padded(2, 4 * LIMIT)).await;
    let answer = hostile.next_json().await;
    assert_eq!(error_code(&answer), -32600, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains(&LIMIT.to_string()), "{message}");
    match hostile.next().await {
        Frame::Close(code, reason) => {
            assert_eq!(code, 1009, "{reason}");
            assert!(reason.contains("too large"), "{reason}");
        }
        other => panic!("expected the close frame, got {other:?}"),
    }
    let after = tokio::time::timeout(STALL, hostile.frames.recv()).await;
    assert_eq!(after.expect("the stream ends"), None);

    // The victim's connection was not touched; nothing changed; the host serves others.
    assert!(list_sessions(&victim.client).await["items"].is_array());
    baseline.assert_unchanged(&victim).await;
    assert_host_serves(&host.url, "oversized").await;
}

// ─── 4. Thousands of subscriptions ──────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_subscriptions_hit_the_limit_and_the_host_stays_up() {
    const MAX: usize = 8;
    let host =
        ScriptedHost::start_with_limits(script(), limits(|l| l.max_subscriptions = MAX)).await;
    let victim = Victim::start(&host.url).await;
    // Three more sessions of the victim: with root and the victim's own there are 9 channels.
    let mut channels = vec![
        ROOT_RESOURCE_URI.to_owned(),
        victim.session.as_str().to_owned(),
        victim.chat.as_str().to_owned(),
    ];
    for id in ["victim-2", "victim-3", "victim-4"] {
        let (session, chat) = create_session(&victim.client, id).await;
        channels.push(session.as_str().to_owned());
        channels.push(chat.as_str().to_owned());
    }
    assert_eq!(channels.len(), MAX + 1);
    let baseline = victim.baseline().await;
    let mut hostile = Raw::initialized(&host.url, "hostile").await;

    // The first MAX distinct channels are granted, the next is refused; then 4 991 more, each
    // a held channel (granted again, for free), the refused one or a channel that does not
    // exist (both refused: the connection is full).
    let ghosts = ["scripted:/ghost", "ahp-chat:/ghost", "not a uri", ""];
    let mut rng = XorShift(0x0dd_ba11_5eed);
    let mut sent: Vec<String> = channels.clone();
    while sent.len() < 5_000 {
        let pick = rng.below(channels.len() + ghosts.len());
        sent.push(match channels.get(pick) {
            Some(channel) => channel.clone(),
            None => ghosts[pick - channels.len()].to_owned(),
        });
    }
    let started = Instant::now();
    for (id, channel) in sent.iter().enumerate() {
        hostile
            .request(id as u64 + 1, "subscribe", json!({ "channel": channel }))
            .await;
    }
    let mut answers = BTreeMap::new();
    while answers.len() < sent.len() {
        let answer = hostile.next_json().await;
        let id = answer["id"].as_u64().expect("only responses");
        assert!(answers.insert(id, answer).is_none(), "answered twice");
    }
    let held: BTreeSet<&String> = channels[..MAX].iter().collect();
    for (id, channel) in sent.iter().enumerate() {
        let answer = &answers[&(id as u64 + 1)];
        if held.contains(channel) {
            assert!(
                answer["result"]["snapshot"].is_object(),
                "{channel}: {answer}"
            );
        } else {
            assert_eq!(error_code(answer), -32009, "{channel}: {answer}");
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains(&MAX.to_string()), "{message}");
        }
    }
    eprintln!(
        "5 000 subscribe requests answered in {:?}",
        started.elapsed()
    );

    // The limit is live, not a ban: an unsubscribe makes room for the refused channel.
    hostile
        .notify("unsubscribe", json!({ "channel": channels[1] }))
        .await;
    let answer = hostile
        .call(10_000, "subscribe", json!({ "channel": channels[MAX] }))
        .await;
    assert!(answer["result"]["snapshot"].is_object(), "{answer}");

    hostile.assert_open(10_001).await;
    baseline.assert_unchanged(&victim).await;
    assert_host_serves(&host.url, "subscriptions").await;
}

// ─── 5. A flood of dispatches ───────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_ten_thousand_dispatches_is_rate_limited_without_a_disconnect() {
    const RATE: u32 = 50;
    const BURST: u32 = 20;
    const FLOOD: usize = 10_000;
    let host = ScriptedHost::start_with_limits(
        script(),
        limits(|l| {
            l.dispatch_rate = RATE;
            l.dispatch_burst = BURST;
        }),
    )
    .await;
    let mut victim = Victim::start(&host.url).await;
    let mut hostile = Raw::initialized(&host.url, "hostile").await;
    // The hostile client floods a session of its own (so it sees its accepted actions too).
    let own = SessionUri::with_provider("scripted", SafeId::new("hostile-own").unwrap()).unwrap();
    let created = hostile
        .call(
            1,
            "createSession",
            json!({ "channel": own.as_str(), "provider": "scripted" }),
        )
        .await;
    assert!(created.get("result").is_some(), "{created}");
    let subscribed = hostile
        .call(2, "subscribe", json!({ "channel": own.as_str() }))
        .await;
    assert!(subscribed["result"]["snapshot"].is_object(), "{subscribed}");
    let baseline = victim.baseline().await;

    let started = Instant::now();
    for seq in 1..=FLOOD {
        hostile
            .notify(
                "dispatchAction",
                json!({ "channel": own.as_str(), "clientSeq": seq,
                        "action": { "type": "session/titleChanged", "title": format!("flood {seq}") } }),
            )
            .await;
    }
    let frames = hostile.barrier(3).await;
    let elapsed = started.elapsed();

    // Every dispatch came back exactly once: accepted (within the budget) or rejected with the
    // rate-limit reason, carrying the client's own action.
    let mine: Vec<&Value> = envelopes(&frames)
        .into_iter()
        .filter(|e| e["origin"]["clientId"] == "hostile")
        .collect();
    assert_eq!(mine.len(), FLOOD, "one envelope per dispatch");
    let seqs: BTreeSet<u64> = mine
        .iter()
        .map(|e| e["origin"]["clientSeq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs.len(), FLOOD);
    let (accepted, rejected): (Vec<&Value>, Vec<&Value>) = mine
        .iter()
        .partition(|e| e.get("rejectionReason").is_none());
    for echo in &rejected {
        let reason = echo["rejectionReason"].as_str().unwrap();
        assert!(reason.starts_with("rate limited"), "{reason}");
        let seq = echo["origin"]["clientSeq"].as_u64().unwrap();
        assert_eq!(echo["action"]["title"], format!("flood {seq}"));
    }
    let budget = f64::from(BURST) + f64::from(RATE) * elapsed.as_secs_f64() + 1.0;
    assert!(accepted.len() >= BURST as usize, "{}", accepted.len());
    assert!(
        (accepted.len() as f64) <= budget,
        "{} accepted in {elapsed:?}",
        accepted.len()
    );
    eprintln!(
        "{FLOOD} dispatches in {elapsed:?}: {} accepted, {} rate limited",
        accepted.len(),
        rejected.len()
    );

    // The state is consistent: the session's title is the last accepted one.
    let last = accepted
        .iter()
        .max_by_key(|e| e["serverSeq"].as_u64().unwrap())
        .unwrap();
    let snapshot = hostile
        .call(4, "subscribe", json!({ "channel": own.as_str() }))
        .await;
    let state = &snapshot["result"]["snapshot"]["state"];
    assert_eq!(state["title"], last["action"]["title"], "{state}");

    // No disconnect: once the bucket refills, a dispatch is accepted again.
    let deadline = Instant::now() + STALL;
    let mut seq = FLOOD as u64;
    loop {
        seq += 1;
        hostile
            .notify(
                "dispatchAction",
                json!({ "channel": own.as_str(), "clientSeq": seq,
                        "action": { "type": "session/titleChanged", "title": "calm" } }),
            )
            .await;
        let frames = hostile.barrier(seq).await;
        let echo = envelopes(&frames)
            .into_iter()
            .find(|e| e["origin"]["clientSeq"] == seq)
            .cloned()
            .expect("an echo");
        if echo.get("rejectionReason").is_none() {
            break;
        }
        assert!(Instant::now() < deadline, "never accepted again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The victim saw none of it; its session and chat are untouched; the host serves others.
    victim.assert_saw_nothing_from("hostile").await;
    let now = victim.baseline().await;
    assert_eq!(now.session, baseline.session);
    assert_eq!(now.chat, baseline.chat);
    let others = |sessions: &Value| -> Vec<Value> {
        sessions["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["resource"] != own.as_str())
            .cloned()
            .collect()
    };
    assert_eq!(others(&now.sessions), others(&baseline.sessions));
    assert_host_serves(&host.url, "flood").await;
}

// ─── 6. Actions on channels it does not own, and actions of the wrong shape ────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_unknown_and_misshapen_actions_are_rejected_or_ignored_per_spec() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let mut victim = Victim::start(&host.url).await;
    let baseline = victim.baseline().await;
    let (session, chat) = (
        victim.session.as_str().to_owned(),
        victim.chat.as_str().to_owned(),
    );
    let (session, chat) = (session.as_str(), chat.as_str());
    let mut mallory = Raw::initialized(&host.url, "mallory").await;

    // (channel, action, echoed): `true` a rejection echo to mallory alone, `false` nothing at
    // all (an unknown channel is ignored silently, AHP §6.1 step 2).
    let user_message = json!({ "text": "x", "origin": { "kind": "user" } });
    let cases: Vec<(&str, Value, bool)> = vec![
        // Unknown channels: ignored.
        (
            "scripted:/nope",
            json!({ "type": "session/titleChanged", "title": "x" }),
            false,
        ),
        (
            "ahp-chat:/nope",
            json!({ "type": "chat/turnStarted", "turnId": "t", "startedAt": STARTED_AT, "message": user_message }),
            false,
        ),
        (
            "not a uri",
            json!({ "type": "session/titleChanged", "title": "x" }),
            false,
        ),
        (
            "",
            json!({ "type": "session/titleChanged", "title": "x" }),
            false,
        ),
        // Server-only actions on the victim's channels: rejected.
        (session, json!({ "type": "session/ready" }), true),
        (
            session,
            json!({ "type": "session/activityChanged", "activity": "pwned" }),
            true,
        ),
        (
            session,
            json!({ "type": "session/chatRemoved", "chat": chat }),
            true,
        ),
        (
            session,
            json!({ "type": "session/defaultChatChanged" }),
            true,
        ),
        (
            chat,
            json!({ "type": "chat/turnComplete", "turnId": "victim-turn", "duration": 1 }),
            true,
        ),
        (
            chat,
            json!({ "type": "chat/delta", "turnId": "victim-turn", "partId": "p", "content": "pwned" }),
            true,
        ),
        (
            ROOT_RESOURCE_URI,
            json!({ "type": "root/agentsChanged", "agents": [] }),
            true,
        ),
        // Unknown action types: rejected.
        (chat, json!({ "type": "x-evil/pwn", "payload": 1 }), true),
        (session, json!({ "type": "" }), true),
        // An action of another channel kind: rejected.
        (
            session,
            json!({ "type": "chat/draftChanged", "draft": { "text": "x" } }),
            true,
        ),
        (
            chat,
            json!({ "type": "session/isReadChanged", "isRead": true }),
            true,
        ),
        // The per-action rules of AHP §6.2.
        (
            chat,
            json!({ "type": "chat/turnCancelled", "turnId": "victim-turn", "duration": 1 }),
            true,
        ),
        (
            chat,
            json!({ "type": "chat/turnStarted", "turnId": "t2", "startedAt": STARTED_AT,
                        "message": { "text": "x", "origin": { "kind": "agent" } } }),
            true,
        ),
        (
            chat,
            json!({ "type": "chat/toolCallComplete", "turnId": "victim-turn", "toolCallId": "nope",
                        "result": { "success": true, "pastTenseMessage": "done" } }),
            true,
        ),
        (
            chat,
            json!({ "type": "chat/pendingMessageRemoved", "kind": "queued", "id": "nope" }),
            true,
        ),
        (
            session,
            json!({ "type": "session/activeClientSet",
                           "activeClient": { "clientId": "victim", "tools": [] } }),
            true,
        ),
        (
            chat,
            json!({ "type": "chat/inputCompleted", "turnId": "victim-turn", "requestId": "nope",
                        "response": "accept" }),
            true,
        ),
    ];
    let mut expected_rejections = BTreeSet::new();
    for (seq, (channel, action, echoed)) in cases.iter().enumerate() {
        let seq = seq as u64 + 1;
        mallory
            .notify(
                "dispatchAction",
                json!({ "channel": channel, "clientSeq": seq, "action": action }),
            )
            .await;
        if *echoed {
            expected_rejections.insert(seq);
        }
    }
    // An action of the wrong shape (no `type`, not an object, a field of the wrong type)
    // decodes as an unknown action, which no client may dispatch: rejected.
    for (seq, action) in [
        (90, json!({ "title": "no type" })),
        (91, json!("session/titleChanged")),
        (92, json!({ "type": "session/titleChanged", "title": 5 })),
        (93, json!({ "type": "chat/turnStarted" })),
    ] {
        mallory
            .notify(
                "dispatchAction",
                json!({ "channel": session, "clientSeq": seq, "action": action }),
            )
            .await;
        expected_rejections.insert(seq);
    }
    // Params that do not decode: dropped (AHP §6.1 step 1: no echo is possible).
    for params in [
        json!({ "channel": session, "action": { "type": "session/titleChanged", "title": "no seq" } }),
        json!({ "channel": session, "clientSeq": "one", "action": { "type": "session/titleChanged", "title": "x" } }),
        json!({ "channel": session, "clientSeq": 94 }),
        json!({ "channel": 5, "clientSeq": 95, "action": { "type": "session/titleChanged", "title": "x" } }),
        json!({ "clientSeq": 96, "action": { "type": "session/titleChanged", "title": "x" } }),
        json!(["positional", "params"]),
    ] {
        mallory.notify("dispatchAction", params).await;
    }
    let frames = mallory.barrier(100).await;
    let echoes = envelopes(&frames);
    assert_eq!(echoes.len(), frames.len(), "only echoes: {frames:?}");
    let rejected: BTreeSet<u64> = echoes
        .iter()
        .map(|e| {
            assert!(
                e["rejectionReason"].as_str().is_some_and(|r| !r.is_empty()),
                "accepted: {e}"
            );
            assert_eq!(e["origin"]["clientId"], "mallory");
            e["origin"]["clientSeq"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(rejected, expected_rejections, "{echoes:#?}");

    // Requests against what is not its own: the specified errors.
    let answer = mallory
        .call(
            101,
            "createSession",
            json!({ "channel": session, "provider": "scripted" }),
        )
        .await;
    assert_eq!(error_code(&answer), -32003, "{answer}");
    let answer = mallory
        .call(
            102,
            "createChat",
            json!({ "channel": "scripted:/nope", "chat": "ahp-chat:/mine" }),
        )
        .await;
    assert_eq!(error_code(&answer), -32001, "{answer}");
    let answer = mallory
        .call(
            103,
            "createChat",
            json!({ "channel": session, "chat": chat }),
        )
        .await;
    assert!(answer.get("error").is_some(), "{answer}");
    let answer = mallory
        .call(104, "subscribe", json!({ "channel": "scripted:/nope" }))
        .await;
    assert!(answer.get("error").is_some(), "{answer}");
    let answer = mallory
        .call(105, "disposeChat", json!({ "channel": "ahp-chat:/nope" }))
        .await;
    assert!(answer.get("error").is_some(), "{answer}");

    mallory.assert_open(106).await;
    baseline.assert_unchanged(&victim).await;
    victim.assert_saw_nothing_from("mallory").await;
    assert_host_serves(&host.url, "foreign").await;

    // AHP has no channel ownership: a client-dispatchable action on a session someone else
    // created, without subscribing to it, is accepted, and every subscriber sees who sent it.
    mallory
        .notify(
            "dispatchAction",
            json!({ "channel": session, "clientSeq": 200,
                    "action": { "type": "session/titleChanged", "title": "renamed by mallory" } }),
        )
        .await;
    let renamed = until(&mut victim.events, |e| {
        e.origin.as_ref().is_some_and(|o| o.client_id == "mallory")
    })
    .await;
    assert_eq!(renamed.channel, session);
}

// ─── 7. Too many connections ────────────────────────────────────────────────────────────────

/// Connects like [`connect`], retrying while the host refuses (a place is freed just after its
/// connection's close completes).
async fn connect_when_room(url: &str, client_id: &str) -> (Client, ClientEventStream) {
    let deadline = Instant::now() + STALL;
    let transport = loop {
        match ahp_ws::WebSocketTransport::connect(url).await {
            Ok(transport) => break transport,
            Err(error) => {
                assert!(
                    Instant::now() < deadline,
                    "no room for {client_id}: {error}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let client = Client::connect(transport, ahp::ClientConfig::default())
        .await
        .unwrap();
    let events = client.events();
    client
        .initialize(client_id.into(), vec!["1.0.0".into()], Vec::new())
        .await
        .unwrap();
    (client, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_get_503_and_the_open_ones_keep_working() {
    const MAX: usize = 4;
    let host = ScriptedHost::start_with_limits(script(), limits(|l| l.max_connections = MAX)).await;
    let victim = Victim::start(&host.url).await;
    let baseline = victim.baseline().await;

    // The hostile client takes every remaining place, then is refused with 503.
    let mut held = Vec::new();
    for i in 0..MAX - 1 {
        held.push(Raw::initialized(&host.url, &format!("hostile-{i}")).await);
    }
    for _ in 0..20 {
        match tokio_tungstenite::connect_async(host.url.as_str()).await {
            Err(WsError::Http(response)) => {
                assert_eq!(response.status(), 503);
                let retry = response.headers().get("Retry-After").unwrap();
                assert_eq!(retry, "1");
            }
            Err(other) => panic!("expected 503, got {other}"),
            Ok(_) => panic!("a connection beyond the limit was accepted"),
        }
    }
    // Those holding places, and the victim, are served.
    for (i, raw) in held.iter_mut().enumerate() {
        raw.assert_open(100 + i as u64).await;
    }
    baseline.assert_unchanged(&victim).await;

    // Places free up when connections close.
    drop(held);
    let (client, mut events) = connect_when_room(&host.url, "healthy-connections").await;
    let (_session, chat) = create_session(&client, "healthy-connections").await;
    let _ = client.subscribe(chat.as_str().to_owned()).await.unwrap();
    run_turn(&client, &mut events, chat.as_str(), "healthy-turn").await;
}

// ─── Round 2 (issue 23) ─────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_in_a_text_frame_fails_that_connection_with_1007() {
    use tokio_tungstenite::tungstenite::protocol::frame::Frame as WsFrame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    let host = ScriptedHost::start(script(), Default::default()).await;
    let victim = Victim::start(&host.url).await;
    let mut hostile = Raw::initialized(&host.url, "hostile").await;
    let bytes = vec![b'{', 0xff, 0xfe, b'}'];
    hostile
        .sink
        .send(Message::Frame(WsFrame::message(
            bytes,
            OpCode::Data(Data::Text),
            true,
        )))
        .await
        .unwrap();
    match hostile.next().await {
        Frame::Close(code, reason) => {
            assert_eq!(code, 1007, "{reason}");
            assert!(reason.contains("UTF-8"), "{reason}");
        }
        other => panic!("expected the close frame, got {other:?}"),
    }
    assert!(list_sessions(&victim.client).await["items"].is_array());
    assert_host_serves(&host.url, "utf8").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_names_a_client_may_not_choose_are_refused_and_squat_nothing() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let (client, _events) = connect(&host.url, "namer").await;
    let (session, _chat) = create_session(&client, "named").await;
    let other = SessionUri::with_provider("scripted", SafeId::new("other").unwrap()).unwrap();
    let mut hostile = Raw::initialized(&host.url, "hostile").await;
    let subagent = ChatUri::subagent(&session, &SafeId::new("call-1").unwrap());
    for (id, chat) in [
        "file:///etc/passwd".to_owned(),
        "ahp-chat:/../x".to_owned(),
        "ahp-session:/X".to_owned(),
        subagent.to_string(),
        ChatUri::default_for(&other).to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let answer = hostile
            .call(
                300 + id as u64,
                "createChat",
                json!({ "channel": session.as_str(), "chat": chat }),
            )
            .await;
        assert_eq!(error_code(&answer), -32602, "{chat}: {answer}");
    }
    // Nothing was squatted: the session named like a refused chat can be created and used.
    let squatted = client
        .request::<_, Value>(
            "createSession",
            json!({ "channel": "ahp-session:/X", "provider": "scripted" }),
        )
        .await;
    assert!(squatted.is_ok(), "{squatted:?}");
    let snapshot = client
        .request::<_, Value>("subscribe", json!({ "channel": "ahp-session:/X" }))
        .await
        .unwrap();
    assert_eq!(snapshot["snapshot"]["resource"], "ahp-session:/X");
    let catalog = state_of(&client, session.as_str()).await;
    assert_eq!(
        catalog["chats"].as_array().map(Vec::len),
        Some(1),
        "{catalog}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_with_an_unreadable_start_is_refused_and_the_chat_stays_usable() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let (client, mut events) = connect(&host.url, "dater").await;
    let (session, chat) = create_session(&client, "dated").await;
    client.subscribe(chat.to_string()).await.unwrap();
    let mut hostile = Raw::initialized(&host.url, "hostile").await;
    hostile
        .notify(
            "dispatchAction",
            json!({ "channel": chat.as_str(), "clientSeq": 1, "action": {
                "type": "chat/turnStarted", "turnId": "bad", "startedAt": "not-a-date",
                "message": { "text": "x", "origin": { "kind": "user" } } } }),
        )
        .await;
    let frames = hostile.barrier(2).await;
    let echoes = envelopes(&frames);
    assert_eq!(echoes.len(), 1, "{frames:?}");
    let reason = echoes[0]["rejectionReason"].as_str().unwrap();
    assert!(reason.contains("startedAt"), "{reason}");
    let chat_state = state_of(&client, chat.as_str()).await;
    assert!(
        chat_state.get("activeTurn").is_none_or(Value::is_null),
        "{chat_state}"
    );
    let summary = list_sessions(&client).await;
    assert!(!summary.to_string().contains("not-a-date"), "{summary}");
    run_turn(&client, &mut events, chat.as_str(), "good").await;
    let _ = session;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_to_huge_client_values_stay_small() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let mut hostile = Raw::open(&host.url).await;
    let huge = "9".repeat(10 * 1024 * 1024);
    for round in 0..2 {
        let answer = hostile
            .call(
                1 + round,
                "initialize",
                json!({ "channel": ROOT_RESOURCE_URI, "protocolVersions": [format!("1.{huge}")],
                        "clientId": "hostile" }),
            )
            .await;
        assert!(
            answer.get("error").is_some(),
            "{}",
            &answer.to_string()[..200]
        );
        assert!(
            answer.to_string().len() < 1024,
            "{} bytes",
            answer.to_string().len()
        );
    }
    let mut hostile = Raw::initialized(&host.url, "hostile").await;
    let answer = hostile.call(10, &huge, json!({})).await;
    assert_eq!(error_code(&answer), -32601);
    assert!(
        answer.to_string().len() < 1024,
        "{} bytes",
        answer.to_string().len()
    );
}

//! VS Code's Agents window as a client (issue 15), replayed byte for byte over a raw WebSocket,
//! step by step as VS Code connects and works, against the host `agent-host serve` composes
//! (`agenthost::host::bind`), with the scripted agent on a loopback port.
//!
//! The frames VS Code sends are fixture data named by VS Code version ([`vscode_1_141`],
//! [`vscode_1_140`]). They are written by hand from what those versions send, not captured from
//! a running VS Code: refresh them from a real `chat.agentHost.ahpJsonlLoggingEnabled` log when
//! a VS Code installation is at hand.
//!
//! Every frame the host sends is checked to be a text frame holding one JSON-RPC message; every
//! wait polls the socket with a deadline ([`STALL`]).

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::path::PathBuf;

use agenthost::host::{HostOptions, bind};
use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::ahp_types::state::SnapshotState;
use agenthost_protocol::{ActionEnvelope, ChatUri, ROOT_RESOURCE_URI, SafeId, SessionUri};
use ahp::{Client, ClientConfig, SubscriptionEvent};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::STALL;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

/// The connection token of every host here (the alphabet `Token::generate` mints from).
const TOKEN: &str = "vscode-Test_token-0123456789abcdefABCDEF";

/// A timestamp for client-started turns.
const STARTED_AT: &str = "2026-03-01T10:00:00.000Z";

// ─── VS Code's frames, by version ───────────────────────────────────────────────────────────

/// VS Code release/1.141 and main.
mod vscode_1_141 {
    use serde_json::{Value, json};

    /// `protocolVersions` as offered, most preferred first (0.8.0 left out).
    pub const OFFER: [&str; 6] = ["0.10.0", "0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"];

    /// `initialize` as the Agents window sends it: root channel, a UUID client id, the client
    /// info, the two `vscode.*` `_meta` keys, root as the only initial subscription, no
    /// `capabilities`, no `locale`.
    pub fn initialize(client_id: &str) -> Value {
        json!({
            "channel": "ahp-root://",
            "protocolVersions": OFFER,
            "clientId": client_id,
            "clientInfo": { "name": "vscode-agents-window", "title": "VS Code Agents Window",
                            "version": "1.141.0" },
            "_meta": { "vscode.telemetryLevel": "all",
                       "vscode.clientConnectionKind": "direct_websocket" },
            "initialSubscriptions": ["ahp-root://"],
        })
    }

    /// The `root/configChanged` burst right after `initialize`, every one with `clientSeq` 0:
    /// VS Code host settings (not spec keys), unknown keys and a nested `sandbox` block.
    pub fn config_burst() -> Vec<Value> {
        [
            json!({ "telemetryLevel": "all" }),
            json!({ "chat.tools.terminal.autoApprove": { "npm test": true, "rm": false },
                    "chat.tools.terminal.enableAutoApprove": true }),
            json!({ "chat.tools.global.autoApprove": false }),
            json!({ "chat.autoReply": false }),
            json!({ "chat.agent.preferLongContext": true }),
            json!({ "http.systemProxy": { "enabled": false, "url": null } }),
            json!({ "chat.codex.enabled": false, "chat.agentHost.multiRoot": { "claude": true } }),
            json!({ "sandbox": { "enabled": true, "network": { "allow": ["github.com"] },
                                 "filesystem": { "readOnly": ["/etc"] } } }),
            json!({ "editTelemetry.enabled": true, "x.unknown.key": [1, 2, 3] }),
        ]
        .into_iter()
        .map(|config| json!({ "type": "root/configChanged", "config": config }))
        .collect()
    }

    /// Synced customizations `createSession` carries: a plugin in the 1.0 shape, and an entry
    /// in a shape the 1.0 wire types cannot read (no `type`), which must not fail the session.
    pub fn customizations() -> Value {
        json!([
            { "id": "plugin:review", "name": "Review", "type": "plugin",
              "uri": "vscode-userdata:/User/prompts/review.prompt.md", "nonce": "n1" },
            { "id": "instructions:copilot-instructions", "name": "copilot-instructions.md",
              "uri": "vscode-userdata:/User/prompts/copilot-instructions.md",
              "_meta": { "vscode.kind": "instructions" } },
        ])
    }

    /// Client tools `createSession` carries (VS Code 1.138 sent 15; a handful here).
    pub fn client_tools() -> Value {
        json!([
            { "name": "vscode_runTests", "title": "Run tests", "description": "Runs the tests",
              "inputSchema": { "type": "object", "properties": { "files": { "type": "array" } } } },
            { "name": "vscode_getErrors", "description": "Problems of a file",
              "inputSchema": { "type": "object" } },
            { "name": "vscode_openFile", "inputSchema": { "type": "object" } },
            { "name": "vscode_askQuestions", "inputSchema": { "type": "object" } },
            { "name": "vscode_todoList", "inputSchema": { "type": "object" } },
        ])
    }
}

/// VS Code main (after 1.141): `vscode.ahpSessionUris` in `initialize` and `reconnect`, 1.0.0
/// offered first, sessions created as `ahp-session:/<uuid>` with the agent in `provider`.
mod vscode_main {
    use serde_json::{Value, json};

    /// `protocolVersions` as offered, most preferred first.
    pub const OFFER: [&str; 3] = ["1.0.0", "0.10.0", "0.9.0"];

    /// The `_meta` VS Code main sends with `initialize` and `reconnect`.
    pub fn meta() -> Value {
        json!({ "vscode.telemetryLevel": "all", "vscode.clientConnectionKind": "direct_websocket",
                "vscode.clientMachineId": "machine-1", "vscode.clientDevDeviceId": "device-1",
                "vscode.ahpSessionUris": true })
    }

    pub fn initialize(client_id: &str) -> Value {
        json!({
            "channel": "ahp-root://",
            "protocolVersions": OFFER,
            "clientId": client_id,
            "clientInfo": { "name": "vscode-agents-window", "title": "VS Code Agents Window",
                            "version": "1.142.0" },
            "_meta": meta(),
            "initialSubscriptions": ["ahp-root://"],
        })
    }

    pub fn reconnect(client_id: &str, last_seen: i64, subscriptions: &[&str]) -> Value {
        json!({ "clientId": client_id, "lastSeenServerSeq": last_seen,
                "subscriptions": subscriptions, "_meta": meta() })
    }
}

/// VS Code 1.140.0.
mod vscode_1_140 {
    /// `protocolVersions` as offered.
    pub const OFFER: [&str; 5] = ["0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"];
}

// ─── The host ────────────────────────────────────────────────────────────────────────────────

/// A host serving in this test's runtime that can be stopped and started again over the same
/// data directory.
struct Host {
    dir: tempfile::TempDir,
    work: PathBuf,
    url: String,
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    serving: Option<JoinHandle<()>>,
}

impl Host {
    async fn start(script: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap().join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
        let mut host = Self {
            dir,
            work,
            url: String::new(),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            stop: None,
            serving: None,
        };
        host.serve().await;
        host
    }

    async fn serve(&mut self) {
        let server = bind(HostOptions {
            script: Some(self.dir.path().join("script.json")),
            token: Some(TOKEN.to_owned()),
            data_dir: Some(self.dir.path().join("data")),
            ..HostOptions::scripted(
                vec![self.work.clone()],
                LaunchKind::Embedded("agenthost-e2e".into()),
            )
        })
        .await
        .unwrap();
        self.url = server.url();
        self.addr = server.local_addr();
        let (stop, stopped) = oneshot::channel();
        self.stop = Some(stop);
        self.serving = Some(tokio::spawn(server.serve(async {
            let _ = stopped.await;
        })));
    }

    /// Stops the host (every connection closed, agents stopped, writes flushed) and starts a
    /// new one over the same data directory, on a new port.
    async fn restart(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(serving) = self.serving.take() {
            tokio::time::timeout(STALL, serving)
                .await
                .expect("the host did not stop")
                .unwrap();
        }
        self.serve().await;
    }

    /// `ws://127.0.0.1:<port>` followed by `rest` (a path and query of the user's).
    fn address(&self, rest: &str) -> String {
        format!("ws://127.0.0.1:{}{rest}", self.addr.port())
    }
}

fn file_uri(path: &std::path::Path) -> String {
    agenthost_protocol::uri::path_to_file_uri(path).unwrap()
}

/// A v4-shaped UUID that differs per call (VS Code's client and session ids are UUIDs).
fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let hex = format!(
        "{:016x}{:016x}",
        nanos as u64,
        n ^ u64::from(std::process::id())
    );
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// base64url without padding, as VS Code encodes a session URI into its default chat's.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// VS Code's derived default chat of `session`, computed here as VS Code computes it.
fn derived_chat(session: &str) -> String {
    format!("ahp-chat://default/{}", base64url(session.as_bytes()))
}

// ─── The upgrade ─────────────────────────────────────────────────────────────────────────────

/// The host's answer to an upgrade of `target` on a fresh connection: the status and the
/// response head (lower-cased), read without waiting for the connection to close.
async fn upgrade(addr: SocketAddr, target: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\nOrigin: vscode-file://vscode-app\r\n\r\n",
        addr.port()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let deadline = Instant::now() + STALL;
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout_at(deadline, stream.read(&mut byte))
            .await
            .expect("no answer to the upgrade")
            .unwrap();
        assert_eq!(read, 1, "closed before the response head ended: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {head}"));
    (status, head)
}

// ─── VS Code's side of the socket ────────────────────────────────────────────────────────────

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One Agents-window connection speaking JSON-RPC by hand.
struct VsCode {
    socket: Socket,
    client_id: String,
    next_id: u64,
    /// Frames received and not consumed yet, in order.
    backlog: Vec<Value>,
    /// The highest `serverSeq` seen in an action envelope.
    last_seen: i64,
    /// Every action envelope received, in order (consumed or not).
    received: Vec<Value>,
}

impl VsCode {
    /// Opens the socket at `url` (no subprotocol offered, as the browser API does) and checks
    /// the 101 selects none.
    async fn open(url: &str, client_id: &str) -> Self {
        let (socket, response) = tokio_tungstenite::connect_async(url).await.unwrap();
        assert_eq!(response.status().as_u16(), 101);
        assert!(
            response.headers().get("sec-websocket-protocol").is_none(),
            "the host selected a subprotocol nobody offered"
        );
        Self {
            socket,
            client_id: client_id.to_owned(),
            next_id: 1,
            backlog: Vec::new(),
            last_seen: 0,
            received: Vec::new(),
        }
    }

    /// The next frame from the host: a text frame holding exactly one JSON-RPC message.
    async fn receive(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(STALL, self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("nothing from the host for {STALL:?}"))
                .expect("the host closed the connection")
                .unwrap();
            let text = match message {
                Message::Text(text) => text,
                Message::Ping(_) | Message::Pong(_) => continue,
                other => panic!("the host sent a frame that is not text: {other:?}"),
            };
            let value: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("the host sent unparsable JSON ({e}): {text}"));
            assert!(value.is_object(), "not one JSON-RPC message: {text}");
            assert_eq!(value["jsonrpc"], "2.0", "{text}");
            if value["method"] == "action"
                && let Some(seq) = value["params"]["serverSeq"].as_i64()
            {
                self.last_seen = self.last_seen.max(seq);
                self.received.push(value["params"].clone());
            }
            return value;
        }
    }

    async fn send(&mut self, frame: Value) {
        self.socket
            .send(Message::text(frame.to_string()))
            .await
            .unwrap();
    }

    /// Sends a request without waiting; returns its id.
    async fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        id
    }

    /// A request and its answer: `Ok(result)` or `Err(error)`. Frames received meanwhile go to
    /// the backlog.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.send_request(method, params).await;
        self.response(id).await
    }

    async fn response(&mut self, id: u64) -> Result<Value, Value> {
        loop {
            let frame = self.receive().await;
            if frame["id"] == id && frame.get("method").is_none() {
                return match frame.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(frame["result"].clone()),
                };
            }
            self.backlog.push(frame);
        }
    }

    async fn dispatch(&mut self, channel: &str, client_seq: i64, action: Value) {
        self.send(json!({
            "jsonrpc": "2.0", "method": "dispatchAction",
            "params": { "channel": channel, "clientSeq": client_seq, "action": action }
        }))
        .await;
    }

    /// `createSession` of `session` as VS Code main sends it: the scripted agent in `provider`,
    /// working in `directory`, this window as the active client without tools; `extra` params
    /// (`config`, `_meta`, another `activeClient`) are merged over that.
    async fn create_scripted(&mut self, session: &str, directory: &str, extra: Value) {
        let mut params = json!({
            "channel": session, "provider": "scripted", "workingDirectories": [directory],
            "activeClient": { "clientId": self.client_id, "displayName": "VS Code", "tools": [] },
        });
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        self.request("createSession", params).await.unwrap();
    }

    /// Starts turn `turn_id` with the user's `text` on `chat` (`chat/turnStarted`).
    async fn start_turn(&mut self, chat: &str, client_seq: i64, turn_id: &str, text: &str) {
        self.dispatch(
            chat,
            client_seq,
            json!({ "type": "chat/turnStarted", "turnId": turn_id, "startedAt": STARTED_AT,
                    "message": { "text": text, "origin": { "kind": "user" } } }),
        )
        .await;
    }

    /// The first frame (from the backlog, then the socket) that `wanted` accepts; every other
    /// frame stays in the backlog.
    async fn until(&mut self, mut wanted: impl FnMut(&Value) -> bool) -> Value {
        if let Some(index) = self.backlog.iter().position(&mut wanted) {
            return self.backlog.remove(index);
        }
        loop {
            let frame = self.receive().await;
            if wanted(&frame) {
                return frame;
            }
            self.backlog.push(frame);
        }
    }

    /// The first action envelope on `channel` whose action has `action_type` and satisfies
    /// `wanted`; returns the envelope (`params`).
    async fn action(
        &mut self,
        channel: &str,
        action_type: &str,
        mut wanted: impl FnMut(&Value) -> bool,
    ) -> Value {
        let frame = self
            .until(|f| {
                f["method"] == "action"
                    && f["params"]["channel"] == channel
                    && f["params"]["action"]["type"] == action_type
                    && wanted(&f["params"])
            })
            .await;
        frame["params"].clone()
    }

    /// Everything the host queued for this connection before now has arrived (a request the
    /// connection's worker answers in order behind earlier messages).
    async fn barrier(&mut self) {
        self.request("listSessions", json!({})).await.unwrap();
    }
}

// ─── The replay ──────────────────────────────────────────────────────────────────────────────

fn confirm_script() -> Value {
    json!({ "turns": [{ "steps": [
        { "kind": "say", "text": "I will write the notes file.", "chunk": 5 },
        { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
          "effect": { "kind": "writeFile", "path": "notes.txt", "content": "from the agent\n" } },
        { "kind": "say", "text": "Done.", "chunk": 2 }
    ]}]})
}

/// Step 1: the token only in `tkn`, any path, other parameters kept; 403 otherwise; no
/// subprotocol.
async fn upgrades(host: &Host) {
    for target in [
        format!("/?tkn={TOKEN}"),
        format!("?tkn={TOKEN}"),
        format!("/user/path?tkn={TOKEN}"),
        format!("/?folder=%2Fhome&tkn={TOKEN}&x=1"),
        format!("/?tkn={}", TOKEN.replace('_', "%5F")),
    ] {
        let target = if target.starts_with('?') {
            // What `ws://h:p?tkn=` puts on the wire.
            format!("/{target}")
        } else {
            target
        };
        let (status, head) = upgrade(host.addr, &target).await;
        assert_eq!(status, 101, "{target}: {head}");
        assert!(!head.contains("sec-websocket-protocol"), "{head}");
    }
    for target in [
        "/?tkn=wrong".to_owned(),
        "/?tkn=".to_owned(),
        "/".to_owned(),
        "/?folder=x".to_owned(),
        format!("/?TKN={TOKEN}"),
        format!("/?tkn={TOKEN}x"),
    ] {
        let (status, head) = upgrade(host.addr, &target).await;
        assert_eq!(status, 403, "{target}: {head}");
    }
    // The address a user pastes without a slash works as it is.
    let slashless = host.address(&format!("?tkn={TOKEN}"));
    let _ = VsCode::open(&slashless, &uuid()).await;
}

/// Step 2: the 1.141 `initialize`; asserts the result VS Code needs.
async fn initialize(vscode: &mut VsCode) -> Value {
    let params = vscode_1_141::initialize(&vscode.client_id.clone());
    let result = vscode.request("initialize", params).await.unwrap();
    let version = result["protocolVersion"].as_str().unwrap();
    assert!(vscode_1_141::OFFER.contains(&version), "{result}");
    assert_eq!(version, "0.10.0", "VS Code's preferred version");
    let snapshots = result["snapshots"].as_array().unwrap();
    let root = snapshots
        .iter()
        .find(|s| s["resource"] == ROOT_RESOURCE_URI)
        .unwrap_or_else(|| panic!("no root snapshot: {result}"));
    let agents = root["state"]["agents"].as_array().unwrap();
    assert!(!agents.is_empty(), "{root}");
    for agent in agents {
        let provider = agent["provider"].as_str().unwrap();
        assert!(!provider.is_empty() && !provider.contains('-'), "{agent}");
        assert!(agent["displayName"].is_string(), "{agent}");
        assert!(agent["description"].is_string(), "{agent}");
        let models = agent["models"].as_array().unwrap();
        assert!(!models.is_empty(), "an agent without models: {agent}");
        for model in models {
            assert!(
                model["id"].is_string() && model["name"].is_string(),
                "{model}"
            );
        }
        assert_eq!(
            agent["protectedResources"],
            json!([]),
            "no agent of this host needs a token: signed-out users may use it: {agent}"
        );
    }
    let default_directory = result["defaultDirectory"].as_str().unwrap();
    assert!(default_directory.starts_with("file:///"), "{result}");
    assert!(result["serverInfo"]["name"].is_string(), "{result}");
    result
}

/// Step 2, the other offers: 1.140 gets 0.9.0; a lone 0.7.0 gets -32005 and a close.
async fn other_offers(host: &Host) {
    let mut older = VsCode::open(&host.url, &uuid()).await;
    let mut params = vscode_1_141::initialize(&older.client_id.clone());
    params["protocolVersions"] = json!(vscode_1_140::OFFER);
    let result = older.request("initialize", params).await.unwrap();
    assert_eq!(result["protocolVersion"], "0.9.0", "{result}");
    older
        .request("ping", json!({ "channel": ROOT_RESOURCE_URI }))
        .await
        .unwrap();

    let mut ancient = VsCode::open(&host.url, &uuid()).await;
    let mut params = vscode_1_141::initialize(&ancient.client_id.clone());
    params["protocolVersions"] = json!(["0.7.0"]);
    let error = ancient.request("initialize", params).await.unwrap_err();
    assert_eq!(error["code"], -32005, "{error}");
    let supported = error["data"]["supportedVersions"].as_array().unwrap();
    for version in ["1.0.0", "0.10.0", "0.9.0"] {
        assert!(supported.contains(&json!(version)), "{error}");
    }
    // The host closes that connection.
    let closed = tokio::time::timeout(STALL, async {
        loop {
            match ancient.socket.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the connection stayed open after -32005");
}

/// Step 3: the burst, all `clientSeq` 0: each echoed or rejected exactly once, the
/// connection open.
async fn config_burst(vscode: &mut VsCode) {
    let burst = vscode_1_141::config_burst();
    for action in &burst {
        vscode.dispatch(ROOT_RESOURCE_URI, 0, action.clone()).await;
    }
    vscode.barrier().await;
    let client_id = vscode.client_id.clone();
    let answers: Vec<Value> = vscode
        .backlog
        .iter()
        .filter(|f| {
            f["method"] == "action"
                && f["params"]["action"]["type"] == "root/configChanged"
                && f["params"]["origin"]["clientId"] == client_id.as_str()
        })
        .map(|f| f["params"].clone())
        .collect();
    assert_eq!(answers.len(), burst.len(), "{answers:#?}");
    for (answer, sent) in answers.iter().zip(&burst) {
        assert_eq!(answer["origin"]["clientSeq"], 0, "{answer}");
        assert_eq!(answer["action"], *sent, "in order, unchanged");
    }
    vscode.backlog.clear();
    vscode
        .request("ping", json!({ "channel": ROOT_RESOURCE_URI }))
        .await
        .unwrap();
}

/// Step 4: `listSessions`, `ping`, and a `ping` answered ahead of a queue of requests.
async fn list_and_ping(vscode: &mut VsCode, host: &Host) {
    let listed = vscode.request("listSessions", json!({})).await.unwrap();
    assert!(listed["items"].is_array(), "{listed}");
    let pong = vscode
        .request("ping", json!({ "channel": ROOT_RESOURCE_URI }))
        .await
        .unwrap();
    assert_eq!(pong, Value::Null);
    // Slow work queued in front of it, all in one write: reading a large file three times,
    // then many listings. The ping is answered before any of it.
    let big = host.work.join("big.txt");
    std::fs::write(&big, "0123456789abcdef\n".repeat(256 * 1024)).unwrap();
    let big = file_uri(&big);
    let mut queued = Vec::new();
    let mut frames = Vec::new();
    for index in 0..303 {
        let (method, params) = if index < 3 {
            (
                "resourceRead",
                json!({ "channel": ROOT_RESOURCE_URI, "uri": big }),
            )
        } else {
            ("listSessions", json!({}))
        };
        let id = vscode.next_id;
        vscode.next_id += 1;
        queued.push(id);
        frames.push(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
    }
    let ping = vscode.next_id;
    vscode.next_id += 1;
    frames.push(json!({ "jsonrpc": "2.0", "id": ping, "method": "ping",
                        "params": { "channel": ROOT_RESOURCE_URI } }));
    for frame in frames {
        vscode
            .socket
            .feed(Message::text(frame.to_string()))
            .await
            .unwrap();
    }
    vscode.socket.flush().await.unwrap();
    // The worker may answer the first queued requests while the reader is still reading up to
    // the ping; what matters is that the ping does not wait for the queue to drain.
    let last = *queued.last().unwrap();
    let mut answered_before_ping = Vec::new();
    let pong = loop {
        let answer = vscode
            .until(|f| f.get("id").is_some() && f.get("method").is_none())
            .await;
        if answer["id"] == ping {
            break answer;
        }
        answered_before_ping.push(answer["id"].clone());
    };
    assert_eq!(pong["result"], Value::Null);
    assert!(
        !answered_before_ping.contains(&Value::from(last)) && answered_before_ping.len() < 10,
        "the ping waited behind queued work: {} answers came first",
        answered_before_ping.len()
    );
    vscode.response(last).await.unwrap();
    vscode.backlog.clear();
}

/// Step 5: browsing the host from `defaultDirectory`; writes refused; nothing outside.
async fn folder_pick(vscode: &mut VsCode, host: &Host, default_directory: &str) {
    std::fs::create_dir_all(host.work.join("project/src")).unwrap();
    std::fs::write(host.work.join("project/README.md"), "# project\n").unwrap();
    let resolved = vscode
        .request(
            "resourceResolve",
            json!({ "channel": ROOT_RESOURCE_URI, "uri": default_directory }),
        )
        .await
        .unwrap();
    assert_eq!(resolved["type"], "directory", "{resolved}");
    let listed = vscode
        .request(
            "resourceList",
            json!({ "channel": ROOT_RESOURCE_URI, "uri": default_directory }),
        )
        .await
        .unwrap();
    assert!(
        listed["entries"]
            .as_array()
            .unwrap()
            .contains(&json!({ "name": "project", "type": "directory" })),
        "{listed}"
    );
    let readme = file_uri(&host.work.join("project/README.md"));
    let read = vscode
        .request(
            "resourceRead",
            json!({ "channel": ROOT_RESOURCE_URI, "uri": readme }),
        )
        .await
        .unwrap();
    assert_eq!(read["data"], "# project\n", "{read}");
    let write = vscode
        .request(
            "resourceWrite",
            json!({ "channel": ROOT_RESOURCE_URI, "uri": readme, "data": "x" }),
        )
        .await
        .unwrap_err();
    assert_eq!(write["code"], -32009, "{write}");
    let parent = file_uri(host.work.parent().unwrap());
    let outside = vscode
        .request(
            "resourceList",
            json!({ "channel": ROOT_RESOURCE_URI, "uri": parent }),
        )
        .await
        .unwrap_err();
    assert_eq!(outside["code"], -32009, "{outside}");
    let missing = vscode
        .request(
            "resourceResolve",
            json!({ "channel": ROOT_RESOURCE_URI,
                    "uri": file_uri(&host.work.join("project/nothing-here")) }),
        )
        .await
        .unwrap_err();
    assert_eq!(missing["code"], -32008, "{missing}");
}

/// Step 6: a new session as VS Code makes one. Returns the session, its derived chat,
/// and the chat snapshot VS Code subscribed with.
async fn new_session(vscode: &mut VsCode, project: &str) -> (String, String, Value) {
    let config = vscode
        .request(
            "resolveSessionConfig",
            json!({ "channel": ROOT_RESOURCE_URI, "provider": "scripted",
                    "workingDirectory": project, "config": {} }),
        )
        .await
        .unwrap();
    assert_eq!(config["schema"]["type"], "object", "{config}");
    assert!(config["values"].is_object(), "{config}");
    let session = format!("scripted:/{}", uuid());
    let client_id = vscode.client_id.clone();
    // No `provider`: the URI scheme names it.
    vscode
        .request(
            "createSession",
            json!({
                "channel": session,
                "workingDirectories": [project],
                "activeClient": {
                    "clientId": client_id, "displayName": "VS Code",
                    "tools": vscode_1_141::client_tools(),
                    "customizations": vscode_1_141::customizations(),
                },
            }),
        )
        .await
        .unwrap();
    let added = vscode.until(|f| f["method"] == "root/sessionAdded").await;
    assert_eq!(added["params"]["summary"]["resource"], session, "{added}");
    assert_eq!(
        added["params"]["summary"]["provider"], "scripted",
        "{added}"
    );
    let snapshot = vscode
        .request("subscribe", json!({ "channel": session }))
        .await
        .unwrap();
    assert_eq!(snapshot["snapshot"]["resource"], session, "{snapshot}");
    let tools = &snapshot["snapshot"]["state"]["activeClients"][0]["tools"];
    assert_eq!(tools.as_array().map(Vec::len), Some(5), "{snapshot}");
    let chat = derived_chat(&session);
    assert_eq!(
        snapshot["snapshot"]["state"]["defaultChat"], chat,
        "the host publishes VS Code's derived chat URI"
    );
    assert_eq!(
        chat,
        ChatUri::default_for(&SessionUri::parse(&session).unwrap()).as_str()
    );
    let chat_snapshot = vscode
        .request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    assert_eq!(
        chat_snapshot["snapshot"]["resource"], chat,
        "{chat_snapshot}"
    );
    assert!(
        chat_snapshot["snapshot"]["state"]["turns"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "{chat_snapshot}"
    );
    (session, chat, chat_snapshot["snapshot"].clone())
}

/// Nothing VS Code was sent on `chat` was lost: its first snapshot with every action envelope
/// it received since, reduced with the canonical reducers, equals a fresh snapshot.
async fn assert_converged(vscode: &mut VsCode, chat: &str, first: &Value) {
    let fresh = vscode
        .request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    let from = first["fromSeq"].as_i64().unwrap();
    let to = fresh["snapshot"]["fromSeq"].as_i64().unwrap();
    let mut state: agenthost_protocol::ahp_types::state::ChatState =
        serde_json::from_value(first["state"].clone()).unwrap();
    let mut applied = 0;
    for envelope in &vscode.received {
        let seq = envelope["serverSeq"].as_i64().unwrap();
        if envelope["channel"] != chat
            || seq <= from
            || seq > to
            || envelope.get("rejectionReason").is_some()
        {
            continue;
        }
        let action = serde_json::from_value(envelope["action"].clone()).unwrap();
        match &action {
            // The one host-defined pairing (AHP §6.3): VS Code's own rename on the chat
            // channel renames the chat; the canonical chat reducer has no chat-title action.
            agenthost_protocol::StateAction::SessionTitleChanged(rename) => {
                state.title = rename.title.clone();
            }
            _ => {
                ahp::reducers::apply_action_to_chat(&mut state, &action);
            }
        }
        applied += 1;
    }
    assert!(applied > 10, "only {applied} actions on {chat}");
    assert_eq!(
        serde_json::to_value(&state).unwrap(),
        fresh["snapshot"]["state"],
        "what VS Code received does not add up to the host's chat"
    );
}

/// Step 7: a turn with a confirmation on the derived chat; then a rename on the chat
/// channel and completions on the session URI.
async fn turn_rename_complete(vscode: &mut VsCode, host: &Host, session: &str, chat: &str) {
    let client_id = vscode.client_id.clone();
    // Summary changes of the creation are not the turn's.
    vscode
        .backlog
        .retain(|f| f["method"] != "root/sessionSummaryChanged");
    vscode
        .dispatch(
            chat,
            1,
            json!({
                "type": "chat/turnStarted", "turnId": "turn-1", "startedAt": STARTED_AT,
                "message": { "text": "Write the notes file", "origin": { "kind": "user" } }
            }),
        )
        .await;
    let echo = vscode
        .action(chat, "chat/turnStarted", |e| e["origin"]["clientSeq"] == 1)
        .await;
    assert_eq!(echo["origin"]["clientId"], client_id.as_str(), "{echo}");
    assert!(echo.get("rejectionReason").is_none(), "{echo}");
    vscode.action(chat, "chat/responsePart", |_| true).await;
    vscode.action(chat, "chat/delta", |_| true).await;
    let ready = vscode
        .action(chat, "chat/toolCallReady", |e| {
            e["action"].get("confirmed").is_none()
        })
        .await;
    let tool_call = ready["action"]["toolCallId"].as_str().unwrap().to_owned();
    vscode
        .dispatch(
            chat,
            2,
            json!({ "type": "chat/toolCallConfirmed", "turnId": "turn-1", "toolCallId": tool_call,
                    "approved": true, "confirmed": "user-action" }),
        )
        .await;
    let confirmed = vscode
        .action(chat, "chat/toolCallConfirmed", |e| {
            e["origin"]["clientSeq"] == 2
        })
        .await;
    assert!(confirmed.get("rejectionReason").is_none(), "{confirmed}");
    let complete = vscode.action(chat, "chat/toolCallComplete", |_| true).await;
    assert_eq!(complete["action"]["toolCallId"], tool_call.as_str());
    vscode
        .action(chat, "chat/turnComplete", |e| {
            e["action"]["turnId"] == "turn-1"
        })
        .await;
    assert_eq!(
        std::fs::read_to_string(host.work.join("project/notes.txt")).unwrap(),
        "from the agent\n"
    );
    // The session's summary follows the turn: its chat entry, and the root catalog entry.
    vscode
        .action(session, "session/chatUpdated", |e| {
            e["action"]["chat"] == chat
        })
        .await;
    vscode
        .until(|f| f["method"] == "root/sessionSummaryChanged" && f["params"]["session"] == session)
        .await;

    // The rename arrives on the chat channel: echoed there with its origin, applied to the
    // session and its catalog.
    vscode
        .dispatch(
            chat,
            3,
            json!({ "type": "session/titleChanged", "title": "Notes for the team" }),
        )
        .await;
    let rename = vscode
        .action(chat, "session/titleChanged", |e| {
            e["origin"]["clientSeq"] == 3
        })
        .await;
    assert!(rename.get("rejectionReason").is_none(), "{rename}");
    vscode
        .action(session, "session/titleChanged", |e| {
            e["action"]["title"] == "Notes for the team"
        })
        .await;
    vscode
        .action(session, "session/chatUpdated", |e| {
            e["action"]["chat"] == chat && e["action"]["changes"]["title"] == "Notes for the team"
        })
        .await;
    // VS Code's session list (root) hears of it without subscribing to the session.
    vscode
        .until(|f| {
            f["method"] == "root/sessionSummaryChanged"
                && f["params"]["session"] == session
                && f["params"]["changes"]["title"] == "Notes for the team"
        })
        .await;
    let listed = vscode.request("listSessions", json!({})).await.unwrap();
    let item = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["resource"] == session)
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    assert_eq!(item["title"], "Notes for the team", "{item}");

    // Completions on the session URI.
    let completions = vscode
        .request(
            "completions",
            json!({ "channel": session, "kind": "userMessage", "text": "look at @", "offset": 9 }),
        )
        .await
        .unwrap();
    assert_eq!(completions, json!({ "items": [] }));
}

/// Step 8: a dropped socket comes back with `reconnect` without `channel`: `replay`,
/// holding what another client did meanwhile. After a host restart: `snapshot`.
async fn reconnects(vscode: VsCode, host: &mut Host, session: &str, chat: &str) -> VsCode {
    let client_id = vscode.client_id.clone();
    let last_seen = vscode.last_seen;
    drop(vscode);
    // Meanwhile another window renames the session.
    let mut other = VsCode::open(&host.url, &uuid()).await;
    let params = vscode_1_141::initialize(&other.client_id.clone());
    other.request("initialize", params).await.unwrap();
    other
        .dispatch(
            session,
            1,
            json!({ "type": "session/titleChanged", "title": "Renamed meanwhile" }),
        )
        .await;
    other.barrier().await;

    let mut back = VsCode::open(&host.url, &client_id).await;
    let result = back
        .request(
            "reconnect",
            json!({ "clientId": client_id, "lastSeenServerSeq": last_seen,
                    "subscriptions": [ROOT_RESOURCE_URI, session, chat] }),
        )
        .await
        .unwrap();
    assert_eq!(result["type"], "replay", "{result}");
    let actions = result["actions"].as_array().unwrap();
    assert!(
        actions
            .iter()
            .any(|e| e["channel"] == session && e["action"]["title"] == "Renamed meanwhile"),
        "{result}"
    );
    assert!(
        actions
            .iter()
            .all(|e| e["serverSeq"].as_i64().unwrap() > last_seen),
        "{result}"
    );
    back.last_seen = actions
        .iter()
        .filter_map(|e| e["serverSeq"].as_i64())
        .max()
        .unwrap_or(last_seen);
    back.request("ping", json!({ "channel": ROOT_RESOURCE_URI }))
        .await
        .unwrap();
    let last_seen = back.last_seen;
    drop(back);
    drop(other);

    host.restart().await;
    let mut after = VsCode::open(&host.url, &client_id).await;
    let result = after
        .request(
            "reconnect",
            json!({ "clientId": client_id, "lastSeenServerSeq": last_seen,
                    "subscriptions": [ROOT_RESOURCE_URI, session, chat] }),
        )
        .await
        .unwrap();
    assert_eq!(result["type"], "snapshot", "{result}");
    let snapshots = result["snapshots"].as_array().unwrap();
    for channel in [ROOT_RESOURCE_URI, session, chat] {
        assert!(
            snapshots.iter().any(|s| s["resource"] == channel),
            "{channel} missing from {result}"
        );
    }
    after
}

/// Step 9: VS Code disposes a session it still shows: nothing of it is lost.
async fn dispose_keeps_history(vscode: &mut VsCode, session: &str, chat: &str) {
    vscode
        .request("disposeSession", json!({ "channel": session }))
        .await
        .unwrap();
    vscode.barrier().await;
    assert!(
        !vscode
            .backlog
            .iter()
            .any(|f| f["method"] == "root/sessionRemoved"),
        "{:?}",
        vscode.backlog
    );
    let listed = vscode.request("listSessions", json!({})).await.unwrap();
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["resource"] == session),
        "{listed}"
    );
    // VS Code keeps showing it and sends the next turn without subscribing again: it sees the
    // echo and the whole turn on its existing subscription.
    vscode
        .dispatch(
            chat,
            100,
            json!({
                "type": "chat/turnStarted", "turnId": "turn-2", "startedAt": STARTED_AT,
                "message": { "text": "still here?", "origin": { "kind": "user" } }
            }),
        )
        .await;
    let echo = vscode
        .action(chat, "chat/turnStarted", |e| {
            e["origin"]["clientSeq"] == 100
        })
        .await;
    assert!(echo.get("rejectionReason").is_none(), "{echo}");
    vscode
        .action(chat, "chat/turnComplete", |e| {
            e["action"]["turnId"] == "turn-2"
        })
        .await;
    vscode
        .request("fetchTurns", json!({ "channel": chat }))
        .await
        .unwrap();
    let snapshot = vscode
        .request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    let turns = snapshot["snapshot"]["state"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{snapshot}");
    assert_eq!(turns[0]["id"], "turn-1");
    assert_eq!(turns[1]["id"], "turn-2");
    assert_eq!(turns[0]["message"]["text"], "Write the notes file");
    // Nothing of the turn was lost: both texts whole, the tool call completed.
    let turn = turns[0].to_string();
    for piece in ["I will write the notes file.", "Done.", "write_file"] {
        assert!(turn.contains(piece), "{piece:?} missing from {turn}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vs_code_agents_window_opening_sequence_replayed() {
    let mut host = Host::start(confirm_script()).await;
    assert_eq!(host.url, host.address(&format!("/?tkn={TOKEN}")));
    upgrades(&host).await;

    // A `ping` before `initialize` is answered too.
    let mut vscode = VsCode::open(&host.address(&format!("?tkn={TOKEN}")), &uuid()).await;
    vscode
        .request("ping", json!({ "channel": ROOT_RESOURCE_URI }))
        .await
        .unwrap();
    let init = initialize(&mut vscode).await;
    let default_directory = init["defaultDirectory"].as_str().unwrap().to_owned();
    assert_eq!(default_directory, file_uri(&host.work));
    other_offers(&host).await;
    config_burst(&mut vscode).await;
    list_and_ping(&mut vscode, &host).await;
    folder_pick(&mut vscode, &host, &default_directory).await;
    let project = file_uri(&host.work.join("project"));
    let (session, chat, first) = new_session(&mut vscode, &project).await;
    turn_rename_complete(&mut vscode, &host, &session, &chat).await;
    assert_converged(&mut vscode, &chat, &first).await;
    let mut vscode = reconnects(vscode, &mut host, &session, &chat).await;
    dispose_keeps_history(&mut vscode, &session, &chat).await;
}

// ─── VS Code main, and a 1.141 window beside it ─────────────────────────────────────────────

fn say_script() -> Value {
    json!({ "default": { "steps": [{ "kind": "say", "text": "Hello from the agent.", "chunk": 4 }] } })
}

/// What VS Code main needs to treat this host as a remote one (not its own) and to let a
/// signed-out user in.
fn assert_main_can_use(init: &Value) {
    assert_eq!(init["protocolVersion"], "1.0.0", "{init}");
    let meta = init.get("_meta").cloned().unwrap_or(Value::Null);
    assert!(
        meta.get("vscode.agentHost").is_none(),
        "`vscode.agentHost` makes VS Code treat the host as its own: {init}"
    );
    let root = init["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["resource"] == ROOT_RESOURCE_URI)
        .unwrap();
    assert!(
        root["state"]
            .get("_meta")
            .and_then(|m| m.get("hostBuild"))
            .is_none(),
        "root `_meta.hostBuild` makes VS Code treat the host as its own: {root}"
    );
    for agent in root["state"]["agents"].as_array().unwrap() {
        assert_eq!(
            agent["protectedResources"],
            json!([]),
            "an agent without `protectedResources: []` needs a Copilot sign-in: {agent}"
        );
        assert!(!agent["models"].as_array().unwrap().is_empty(), "{agent}");
    }
}

/// Every action envelope `vscode` received since `from` (an index into `received`), as text.
fn received_text(vscode: &VsCode, from: usize) -> String {
    vscode.received[from..]
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vs_code_main_and_a_1_141_window_share_a_session_under_two_spellings() {
    let mut host = Host::start(say_script()).await;
    let project = file_uri(&host.work);
    let id = uuid();
    let canonical = format!("ahp-session:/{id}");
    let provider_spelled = format!("scripted:/{id}");

    // VS Code main: `ahp-session:/<uuid>`, the agent in `provider`.
    let mut main = VsCode::open(&host.url, &uuid()).await;
    let init = main
        .request(
            "initialize",
            vscode_main::initialize(&main.client_id.clone()),
        )
        .await
        .unwrap();
    assert_main_can_use(&init);
    let client_id = main.client_id.clone();
    main.create_scripted(&canonical, &project, json!({})).await;
    let added = main.until(|f| f["method"] == "root/sessionAdded").await;
    assert_eq!(added["params"]["summary"]["resource"], canonical.as_str());
    assert_eq!(added["params"]["summary"]["provider"], "scripted");
    let main_chat = derived_chat(&canonical);
    main.request("subscribe", json!({ "channel": canonical }))
        .await
        .unwrap();
    main.request("subscribe", json!({ "channel": main_chat }))
        .await
        .unwrap();

    // A 1.141 window lists the session, turns it into `scripted:/<uuid>` and subscribes so.
    let mut older = VsCode::open(&host.url, &uuid()).await;
    older
        .request(
            "initialize",
            vscode_1_141::initialize(&older.client_id.clone()),
        )
        .await
        .unwrap();
    let old_chat = derived_chat(&provider_spelled);
    let snapshot = older
        .request("subscribe", json!({ "channel": provider_spelled }))
        .await
        .expect("the provider spelling names the session");
    assert_eq!(snapshot["snapshot"]["resource"], provider_spelled.as_str());
    assert_eq!(
        snapshot["snapshot"]["state"]["defaultChat"],
        old_chat.as_str()
    );
    let chat_snapshot = older
        .request("subscribe", json!({ "channel": old_chat }))
        .await
        .expect("the chat derived from the provider spelling resolves");
    assert_eq!(chat_snapshot["snapshot"]["resource"], old_chat.as_str());
    // Creating the session again under the other spelling is refused.
    let older_id = older.client_id.clone();
    let refused = older
        .request(
            "createSession",
            json!({ "channel": provider_spelled, "workingDirectories": [project],
                    "activeClient": { "clientId": older_id, "displayName": "VS Code", "tools": [] } }),
        )
        .await
        .expect_err("a session's other spelling is taken");
    assert_eq!(refused["code"], -32003, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("already exists"),
        "{refused}"
    );
    // Its catalog names the session its way too.
    let listed = older.request("listSessions", json!({})).await.unwrap();
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["resource"] == provider_spelled.as_str()),
        "{listed}"
    );

    // One turn from main: both windows see it live, each in its own spelling.
    let (main_from, older_from) = (main.received.len(), older.received.len());
    main.start_turn(&main_chat, 1, "turn-1", "Say hello").await;
    main.action(&main_chat, "chat/turnComplete", |e| {
        e["action"]["turnId"] == "turn-1"
    })
    .await;
    let seen = older
        .action(&old_chat, "chat/turnComplete", |e| {
            e["action"]["turnId"] == "turn-1"
        })
        .await;
    assert!(seen.get("rejectionReason").is_none(), "{seen}");
    older.barrier().await;
    // A second turn from the 1.141 window, in its spelling, reaches main in main's.
    older.start_turn(&old_chat, 1, "turn-2", "Again").await;
    let echo = older
        .action(&old_chat, "chat/turnStarted", |e| {
            e["action"]["turnId"] == "turn-2"
        })
        .await;
    assert!(echo.get("rejectionReason").is_none(), "{echo}");
    older
        .action(&old_chat, "chat/turnComplete", |e| {
            e["action"]["turnId"] == "turn-2"
        })
        .await;
    main.action(&main_chat, "chat/turnComplete", |e| {
        e["action"]["turnId"] == "turn-2"
    })
    .await;
    main.barrier().await;
    older.barrier().await;
    let older_saw = received_text(&older, older_from);
    let main_saw = received_text(&main, main_from);
    let canonical_b64 = derived_chat(&canonical)
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let spelled_b64 = old_chat.rsplit('/').next().unwrap().to_owned();
    assert!(older_saw.contains("\"chat/delta\""), "{older_saw}");
    assert!(
        !older_saw.contains(&canonical) && !older_saw.contains(&canonical_b64),
        "the 1.141 window was sent the host's spelling: {older_saw}"
    );
    assert!(
        !main_saw.contains(&provider_spelled) && !main_saw.contains(&spelled_b64),
        "main was sent the 1.141 window's spelling: {main_saw}"
    );
    let turns = main
        .request("subscribe", json!({ "channel": main_chat }))
        .await
        .unwrap()["snapshot"]["state"]["turns"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(turns, 2, "one chat, two turns");

    // After a restart, main reconnects with its `_meta`; the session is still one.
    let last_seen = main.last_seen;
    drop(main);
    drop(older);
    host.restart().await;
    let mut main = VsCode::open(&host.url, &client_id).await;
    let reconnected = main
        .request(
            "reconnect",
            vscode_main::reconnect(
                &client_id,
                last_seen,
                &[ROOT_RESOURCE_URI, &canonical, &main_chat],
            ),
        )
        .await
        .unwrap();
    assert_eq!(reconnected["type"], "snapshot", "{reconnected}");
    let mut older = VsCode::open(&host.url, &uuid()).await;
    older
        .request(
            "initialize",
            vscode_1_141::initialize(&older.client_id.clone()),
        )
        .await
        .unwrap();
    let restored = older
        .request("subscribe", json!({ "channel": old_chat }))
        .await
        .expect("the provider spelling still names the session after a restart");
    assert_eq!(
        restored["snapshot"]["state"]["turns"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(!restored.to_string().contains(&canonical_b64), "{restored}");
}

/// The model limits an agent reports reach VS Code's model picker (`maxPromptTokens`, which
/// it reads, and `maxContextWindow`) live, and stay after a restart; none is ever invented.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_limits_an_agent_reports_reach_the_model_list_and_survive_a_restart() {
    let mut host = Host::start(json!({ "default": { "steps": [
        { "kind": "say", "text": "ok" },
        { "kind": "usage", "input": 10, "output": 2,
          "limits": { "maxPromptTokens": 128000, "maxContextWindow": 200000 } }
    ] } }))
    .await;
    let model_of = |root: &Value| root["agents"].as_array().unwrap()[0]["models"][0].clone();
    let mut main = VsCode::open(&host.url, &uuid()).await;
    let init = main
        .request(
            "initialize",
            vscode_main::initialize(&main.client_id.clone()),
        )
        .await
        .unwrap();
    let root = init["snapshots"][0]["state"].clone();
    let before = model_of(&root);
    assert!(
        before.get("maxPromptTokens").is_none() && before.get("maxContextWindow").is_none(),
        "no limit before the agent reported one: {before}"
    );
    let session = format!("ahp-session:/{}", uuid());
    main.create_scripted(&session, &file_uri(&host.work), json!({}))
        .await;
    let chat = derived_chat(&session);
    main.request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    main.start_turn(&chat, 1, "turn-1", "hi").await;
    let changed = main
        .action(ROOT_RESOURCE_URI, "root/agentsChanged", |_| true)
        .await;
    let model = model_of(&changed["action"]);
    assert_eq!(model["maxPromptTokens"], 128000, "{changed}");
    assert_eq!(model["maxContextWindow"], 200000, "{changed}");
    assert!(
        model.get("maxOutputTokens").is_none(),
        "not reported, not invented: {model}"
    );
    main.action(&chat, "chat/turnComplete", |_| true).await;
    drop(main);
    host.restart().await;
    let mut again = VsCode::open(&host.url, &uuid()).await;
    let init = again
        .request(
            "initialize",
            vscode_main::initialize(&again.client_id.clone()),
        )
        .await
        .unwrap();
    let model = model_of(&init["snapshots"][0]["state"]);
    assert_eq!(
        model["maxPromptTokens"], 128000,
        "kept across the restart: {model}"
    );
    assert_eq!(model["maxContextWindow"], 200000, "{model}");
}

/// VS Code's Agent Mode and Approvals pickers: the schema shapes it recognises, `autoApprove`
/// approving with no client answering, a switch to plan mode taking effect on the next turn
/// (every confirmation denied, nothing changed, the plan instruction sent), and the legacy
/// `autoApprove: "autopilot"`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_mode_and_approvals_pickers_do_what_they_say() {
    let host = Host::start(json!({ "default": { "steps": [
        { "kind": "echo", "instructions": true, "chunk": 4096 },
        { "kind": "tool", "name": "append_log", "confirm": true,
          "effect": { "kind": "appendFile", "path": "log.txt", "content": "confirmed\n" } },
        { "kind": "tool", "name": "append_log_quietly",
          "effect": { "kind": "appendFile", "path": "log.txt", "content": "unasked\n" } },
        { "kind": "say", "text": "Done." }
    ] } }))
    .await;
    let mut main = VsCode::open(&host.url, &uuid()).await;
    main.request(
        "initialize",
        vscode_main::initialize(&main.client_id.clone()),
    )
    .await
    .unwrap();
    let resolved = main
        .request(
            "resolveSessionConfig",
            json!({ "channel": ROOT_RESOURCE_URI, "provider": "scripted", "config": {} }),
        )
        .await
        .unwrap();
    let properties = &resolved["schema"]["properties"];
    assert_eq!(
        properties["mode"]["enum"],
        json!(["interactive", "plan", "autopilot"]),
        "{resolved}"
    );
    assert_eq!(properties["mode"]["type"], "string");
    assert_eq!(properties["mode"]["sessionMutable"], true);
    assert_eq!(
        properties["autoApprove"]["enum"],
        json!(["default", "autoApprove"]),
        "{resolved}"
    );
    assert_eq!(resolved["values"]["mode"], "interactive");
    assert_eq!(resolved["values"]["autoApprove"], "default");

    let session = format!("ahp-session:/{}", uuid());
    let work = file_uri(&host.work);
    main.create_scripted(
        &session,
        &work,
        json!({ "config": { "autoApprove": "autoApprove" } }),
    )
    .await;
    let chat = derived_chat(&session);
    main.request("subscribe", json!({ "channel": session }))
        .await
        .unwrap();
    main.request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    let log = host.work.join("log.txt");
    // Turn 1, `autoApprove`: nobody answers, the host approves.
    main.start_turn(&chat, 1, "turn-1", "Log it").await;
    let approved = main
        .action(&chat, "chat/toolCallConfirmed", |e| {
            e["action"]["turnId"] == "turn-1"
        })
        .await;
    assert_eq!(approved["action"]["approved"], true, "{approved}");
    assert_eq!(approved["action"]["confirmed"], "setting", "{approved}");
    assert_eq!(
        approved["origin"]["clientId"], "agenthost:session-mode",
        "{approved}"
    );
    main.action(&chat, "chat/turnComplete", |e| {
        e["action"]["turnId"] == "turn-1"
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "confirmed\nunasked\n"
    );

    // The picker switches to plan mode: from the next turn, nothing changes.
    main.dispatch(
        &session,
        2,
        json!({ "type": "session/configChanged", "config": { "mode": "plan" } }),
    )
    .await;
    let changed = main
        .action(&session, "session/configChanged", |e| {
            e["origin"]["clientSeq"] == 2
        })
        .await;
    assert!(changed.get("rejectionReason").is_none(), "{changed}");
    main.start_turn(&chat, 3, "turn-2", "Log it again").await;
    let denied = main
        .action(&chat, "chat/toolCallConfirmed", |e| {
            e["action"]["turnId"] == "turn-2"
        })
        .await;
    assert_eq!(denied["action"]["approved"], false, "{denied}");
    assert!(
        denied["action"]["reasonMessage"]
            .as_str()
            .unwrap()
            .contains("plan mode"),
        "{denied}"
    );
    main.action(&chat, "chat/turnComplete", |e| {
        e["action"]["turnId"] == "turn-2"
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "confirmed\nunasked\n",
        "plan mode changed a file"
    );
    let turns = main
        .request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap()["snapshot"]["state"]["turns"]
        .clone();
    let second = turns[1].to_string();
    assert!(second.contains("This session is in plan mode"), "{second}");
    assert!(
        second.contains("Not done in plan mode"),
        "the agent's own refusal: {second}"
    );

    // Both answers are in the audit log, as the host's own (its writes run off the dispatch,
    // so poll with a deadline).
    let store =
        agenthost_store::Store::open(host.dir.path().join("data").join("agenthost.db")).unwrap();
    let deadline = Instant::now() + STALL;
    let audited = loop {
        let audited: Vec<_> = store
            .audit(100)
            .unwrap()
            .into_iter()
            .filter(|entry| entry.client_id == "agenthost:session-mode")
            .collect();
        if audited.len() >= 2 || Instant::now() > deadline {
            break audited;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(audited.len(), 2, "{audited:?}");
    assert!(
        audited
            .iter()
            .all(|entry| entry.action == "chat/toolCallConfirmed" && entry.token == "host"),
        "{audited:?}"
    );

    // VS Code's legacy spelling of autopilot.
    let legacy = format!("ahp-session:/{}", uuid());
    main.create_scripted(
        &legacy,
        &work,
        json!({ "config": { "autoApprove": "autopilot" } }),
    )
    .await;
    let snapshot = main
        .request("subscribe", json!({ "channel": legacy }))
        .await
        .unwrap();
    let values = &snapshot["snapshot"]["state"]["config"]["values"];
    assert_eq!(values["mode"], "autopilot", "{snapshot}");
    assert_eq!(values["autoApprove"], "default", "{snapshot}");
}

/// VS Code main delegating a session to this host: the root state offers delegation and the
/// machine's resources, the diagnostics requests are answered, and a session created with a
/// delegation origin and the `send_remote_message` tool tells its agent to report back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_delegated_by_vs_code_main_is_told_to_report_back() {
    let host = Host::start(json!({ "default": { "steps": [
        { "kind": "echo", "instructions": true, "chunk": 4096 }
    ] } }))
    .await;
    let mut main = VsCode::open(&host.url, &uuid()).await;
    let init = main
        .request(
            "initialize",
            vscode_main::initialize(&main.client_id.clone()),
        )
        .await
        .unwrap();
    let root = init["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["resource"] == ROOT_RESOURCE_URI)
        .unwrap();
    let meta = &root["state"]["_meta"];
    assert_eq!(meta["vscode.remoteSessions"], true, "{root}");
    let resources = &meta["vscode.agentHost.resources"];
    assert_eq!(resources["platform"], std::env::consts::OS, "{resources}");
    assert!(
        resources["cpuCount"].as_u64().is_some_and(|n| n > 0),
        "{resources}"
    );
    let network = main
        .request("getNetworkDiagnosticsInfo", json!({}))
        .await
        .unwrap();
    assert_eq!(network["os"], std::env::consts::OS, "{network}");
    assert!(
        network["proxyEnv"].is_object() && network["endpoints"] == json!([]),
        "{network}"
    );
    let managed = main
        .request("getManagedSettingsDiagnostics", json!({}))
        .await
        .unwrap();
    assert_eq!(managed, json!([]));

    let send_remote_message = json!({ "name": "send_remote_message",
                                      "description": "Send a message to the origin session",
                                      "inputSchema": { "type": "object" } });
    let mut sessions = Vec::new();
    for (origin, tools) in [
        (true, vec![send_remote_message.clone()]),
        (false, vec![send_remote_message.clone()]),
        (true, vec![]),
    ] {
        let session = format!("ahp-session:/{}", uuid());
        let client_id = main.client_id.clone();
        let mut extra = json!({
            "activeClient": { "clientId": client_id, "displayName": "VS Code", "tools": tools },
        });
        if origin {
            extra["_meta"] = json!({ "vscode.remoteSession.origin": {
                "session": "ahp-session:/origin-1", "chat": "ahp-chat:/origin-chat", "depth": 1 } });
        }
        main.create_scripted(&session, &file_uri(&host.work), extra)
            .await;
        let chat = derived_chat(&session);
        main.request("subscribe", json!({ "channel": chat }))
            .await
            .unwrap();
        main.start_turn(&chat, 1, "turn-1", "Fix the bug").await;
        main.action(&chat, "chat/turnComplete", |e| {
            e["action"]["turnId"] == "turn-1"
        })
        .await;
        let turns = main
            .request("subscribe", json!({ "channel": chat }))
            .await
            .unwrap()["snapshot"]["state"]["turns"]
            .clone();
        sessions.push(turns.to_string());
    }
    assert!(
        sessions[0].contains("remote_session_origin")
            && sessions[0].contains("send_remote_message")
            && sessions[0].contains("ahp-session:/origin-1"),
        "the delegated session's agent was not told to report back: {}",
        sessions[0]
    );
    assert!(
        !sessions[1].contains("remote_session_origin"),
        "no origin: {}",
        sessions[1]
    );
    assert!(
        !sessions[2].contains("remote_session_origin"),
        "no tool: {}",
        sessions[2]
    );
}

// ─── Microsoft's client with VS Code's offer ─────────────────────────────────────────────────

/// Receives events, keeping every accepted action envelope in `received`, until `done` holds
/// for one; returns it.
async fn collect_until(
    events: &mut ahp::ClientEventStream,
    received: &mut Vec<ActionEnvelope>,
    mut done: impl FnMut(&ActionEnvelope, &Value) -> bool,
) -> ActionEnvelope {
    loop {
        let event = tokio::time::timeout(STALL, events.recv())
            .await
            .unwrap_or_else(|_| panic!("no matching action from the host for {STALL:?}"))
            .expect("the connection closed");
        if let SubscriptionEvent::Action(envelope) = event.event {
            assert!(envelope.rejection_reason.is_none(), "{envelope:?}");
            received.push(envelope.clone());
            let action = serde_json::to_value(&envelope.action).unwrap();
            if done(&envelope, &action) {
                return envelope;
            }
        }
    }
}

/// The canonical path through Microsoft's `ahp` client over `ahp-ws`, once offering what
/// VS Code 1.141 offers and once what 1.140 offers: the negotiated version, a session on a
/// provider-scheme URI, a turn with a confirmation on the derived chat, and a disposal that
/// keeps the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn microsofts_client_offering_vs_codes_versions_runs_the_canonical_path() {
    let host = Host::start(json!({ "default": { "steps": [
        { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
          "effect": { "kind": "appendFile", "path": "log.txt", "content": "ran\n" } },
        { "kind": "say", "text": "Logged.", "chunk": 3 }
    ]}}))
    .await;
    std::fs::create_dir_all(host.work.join("project")).unwrap();
    let offers: [(&[&str], &str); 2] = [
        (&vscode_1_141::OFFER, "0.10.0"),
        (&vscode_1_140::OFFER, "0.9.0"),
    ];
    for (pass, (offer, expected)) in offers.into_iter().enumerate() {
        let transport = ahp_ws::WebSocketTransport::connect(&host.url)
            .await
            .unwrap();
        let client = Client::connect(transport, ClientConfig::default())
            .await
            .unwrap();
        let mut events = client.events();
        let client_id = uuid();
        let init = client
            .initialize(
                client_id.clone(),
                offer.iter().map(|v| (*v).to_owned()).collect(),
                vec![ROOT_RESOURCE_URI.to_owned()],
            )
            .await
            .unwrap();
        assert_eq!(init.protocol_version, expected);
        client.ping().await.unwrap();
        // The settings burst: accepted and echoed.
        for action in vscode_1_141::config_burst() {
            support::dispatch(&client, ROOT_RESOURCE_URI, action).await;
        }
        let mut received = Vec::new();
        let mut burst = 0;
        collect_until(&mut events, &mut received, |e, action| {
            if e.channel == ROOT_RESOURCE_URI && action["type"] == "root/configChanged" {
                assert!(e.rejection_reason.is_none(), "{e:?}");
                burst += 1;
            }
            burst == vscode_1_141::config_burst().len()
        })
        .await;
        // The folder picker: the host's default directory, read-only.
        let listed: Value = client
            .request(
                "resourceList",
                json!({ "channel": ROOT_RESOURCE_URI, "uri": init.default_directory }),
            )
            .await
            .unwrap();
        assert!(
            listed["entries"]
                .as_array()
                .unwrap()
                .contains(&json!({ "name": "project", "type": "directory" })),
            "{listed}"
        );

        let session = SessionUri::with_provider("scripted", SafeId::new(uuid()).unwrap()).unwrap();
        let chat = derived_chat(session.as_str());
        let _: Value = client
            .request("createSession", json!({ "channel": session.as_str() }))
            .await
            .unwrap();
        let (subscribed, _subscription) = client.subscribe(chat.clone()).await.unwrap();
        let snapshot = subscribed.snapshot.expect("a chat snapshot");
        support::dispatch(
            &client,
            &chat,
            json!({ "type": "chat/turnStarted", "turnId": "t1", "startedAt": STARTED_AT,
                    "message": { "text": "log it", "origin": { "kind": "user" } } }),
        )
        .await;
        let ready = collect_until(&mut events, &mut received, |e, action| {
            e.channel == chat
                && action["type"] == "chat/toolCallReady"
                && action.get("confirmed").is_none()
        })
        .await;
        let tool_call = serde_json::to_value(&ready.action).unwrap()["toolCallId"].clone();
        support::dispatch(
            &client,
            &chat,
            json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": tool_call,
                    "approved": true, "confirmed": "user-action" }),
        )
        .await;
        collect_until(&mut events, &mut received, |e, action| {
            e.channel == chat && action["type"] == "chat/turnComplete"
        })
        .await;
        // The canonical reducer over what this client saw equals a fresh snapshot.
        let fresh: Value = client
            .request("subscribe", json!({ "channel": chat }))
            .await
            .unwrap();
        let fresh_seq = fresh["snapshot"]["fromSeq"].as_u64().unwrap();
        let SnapshotState::Chat(state) = &snapshot.state else {
            panic!("not a chat snapshot: {snapshot:?}");
        };
        let mut reduced = (**state).clone();
        for envelope in received.iter().filter(|e| {
            e.channel == chat
                && e.rejection_reason.is_none()
                && e.server_seq > u64::try_from(snapshot.from_seq).unwrap()
                && e.server_seq <= fresh_seq
        }) {
            let _ = ahp::reducers::apply_action_to_chat(&mut reduced, &envelope.action);
        }
        assert_eq!(
            serde_json::to_value(&reduced).unwrap(),
            fresh["snapshot"]["state"],
            "{expected}: the client's reduced chat differs from the host's"
        );
        let log = std::fs::read_to_string(host.work.join("log.txt")).unwrap();
        assert_eq!(log.lines().count(), pass + 1, "the tool ran once per pass");

        // A rename on the chat channel renames the session; completions on the session URI.
        let title = format!("Pass {pass}");
        support::dispatch(
            &client,
            &chat,
            json!({ "type": "session/titleChanged", "title": title }),
        )
        .await;
        collect_until(&mut events, &mut received, |e, action| {
            e.channel == chat && action["type"] == "session/titleChanged"
        })
        .await;
        let listed: Value = client.request("listSessions", json!({})).await.unwrap();
        let item = listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["resource"] == session.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{listed}"));
        assert_eq!(item["title"], title.as_str(), "{item}");
        let completions: Value = client
            .request(
                "completions",
                json!({ "channel": session.as_str(), "kind": "userMessage", "text": "@",
                        "offset": 1 }),
            )
            .await
            .unwrap();
        assert_eq!(completions, json!({ "items": [] }));

        let _: Value = client
            .request("disposeSession", json!({ "channel": session.as_str() }))
            .await
            .unwrap();
        let listed: Value = client.request("listSessions", json!({})).await.unwrap();
        assert!(
            listed["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["resource"] == session.as_str()),
            "{listed}"
        );
        let again: Value = client
            .request("subscribe", json!({ "channel": chat }))
            .await
            .unwrap();
        assert_eq!(
            again["snapshot"]["state"]["turns"].as_array().map(Vec::len),
            Some(1),
            "{again}"
        );
    }
}

//! Security end to end (issue 13), through the host `agent-host serve` composes
//! (`agenthost::host::bind`) on a real socket:
//!
//! 1. The connection token: refused with 403 before any protocol message is read (the
//!    `initialize`/`createSession` an intruder sends after the 403 is never processed), also on
//!    a non-loopback listener, and never written to the log — at startup, on refused upgrades
//!    (even one presenting the token in the wrong place), or for an admitted client.
//! 2. Roots: working directories and resource reads outside the host's roots are refused —
//!    `..`, percent-encoded dots and symbolic links pointing out included — and a refused read
//!    returns nothing of the file; `resourceList` and `resourceResolve` outside the roots are
//!    refused too, and a listing of a root leaves out the links that lead out of it.
//! 3. Ownership between two clients: nobody but the owning client completes or streams a tool
//!    call (a host tool has no owning client), and a client that has not subscribed to a
//!    session receives nothing of it.
//!
//! Clients here are raw tokio-tungstenite sockets speaking JSON-RPC by hand, so every frame the
//! host sends is seen, not just what a client library surfaces.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use agenthost::host::{HostOptions, bind};
use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::uri::path_to_file_uri;
use agenthost_protocol::{ChatUri, ROOT_RESOURCE_URI, SafeId, SessionUri};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::STALL;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

/// A timestamp for client-started turns.
const STARTED_AT: &str = "2026-03-01T10:00:00.000Z";

// ─── The host ────────────────────────────────────────────────────────────────────────────────

/// A host serving in this test's runtime, with `<dir>/work` as its only root and
/// `<dir>/outside` next to it (outside every root).
struct Host {
    url: String,
    addr: SocketAddr,
    work: PathBuf,
    outside: PathBuf,
    _dir: tempfile::TempDir,
}

impl Host {
    async fn start(script: Value) -> Self {
        Self::start_with(script, |_| {}).await
    }

    /// Binds with the scripted agent playing `script`, after `configure` adjusted the options
    /// (`listen`, `token`).
    async fn start_with(script: Value, configure: impl FnOnce(&mut HostOptions)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let work = base.join("work");
        let outside = base.join("outside");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let script_path = base.join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let mut options = HostOptions {
            script: Some(script_path),
            data_dir: Some(base.join("data")),
            ..HostOptions::scripted(
                vec![work.clone()],
                LaunchKind::Embedded("agenthost-e2e".into()),
            )
        };
        configure(&mut options);
        let server = bind(options).await.unwrap();
        let url = server.url();
        let addr = server.local_addr();
        tokio::spawn(server.serve(std::future::pending()));
        Self {
            url,
            addr,
            work,
            outside,
            _dir: dir,
        }
    }

    /// The URL on loopback (for a listener bound to an unspecified address).
    fn loopback_url(&self) -> String {
        let (_, query) = self.url.split_once("/?").unwrap();
        format!("ws://127.0.0.1:{}/?{query}", self.addr.port())
    }
}

fn say_script(text: &str) -> Value {
    json!({ "default": { "steps": [{ "kind": "say", "text": text, "chunk": 4096 }] } })
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

// ─── A raw JSON-RPC client ───────────────────────────────────────────────────────────────────

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A WebSocket speaking JSON-RPC by hand; keeps every frame the host sent, in order.
struct Raw {
    socket: Socket,
    next_id: u64,
    next_seq: i64,
    /// Every text frame received, parsed.
    frames: Vec<Value>,
    /// Every frame received as text (to look for strings anywhere in it).
    texts: Vec<String>,
}

impl Raw {
    /// Connects and initializes as `client_id`, subscribed to `subscriptions`.
    async fn connect(url: &str, client_id: &str, subscriptions: &[&str]) -> Self {
        let (socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let mut raw = Self {
            socket,
            next_id: 1,
            next_seq: 1,
            frames: Vec::new(),
            texts: Vec::new(),
        };
        raw.request(
            "initialize",
            json!({
                "channel": ROOT_RESOURCE_URI, "protocolVersions": ["1.0.0"],
                "clientId": client_id, "initialSubscriptions": subscriptions,
            }),
        )
        .await
        .unwrap();
        raw
    }

    /// The next frame; fails after [`STALL`].
    async fn next(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(STALL, self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("nothing from the host for {STALL:?}"))
                .expect("the connection closed")
                .unwrap();
            if let Message::Text(text) = message {
                let value: Value = serde_json::from_str(&text).unwrap();
                self.texts.push(text.to_string());
                self.frames.push(value.clone());
                return value;
            }
        }
    }

    /// Sends a request and waits for its answer: `Ok(result)` or `Err(error object)`. Every
    /// other frame received meanwhile is kept.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        let frame = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.socket
            .send(Message::text(frame.to_string()))
            .await
            .unwrap();
        loop {
            let frame = self.next().await;
            if frame["id"] == id {
                return match frame.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(frame["result"].clone()),
                };
            }
        }
    }

    /// Dispatches `action` on `channel`; returns its `clientSeq`.
    async fn dispatch(&mut self, channel: &str, action: Value) -> i64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let frame = json!({
            "jsonrpc": "2.0", "method": "dispatchAction",
            "params": { "channel": channel, "clientSeq": seq, "action": action },
        });
        self.socket
            .send(Message::text(frame.to_string()))
            .await
            .unwrap();
        seq
    }

    /// Receives frames until an action envelope satisfies `done`; returns it.
    async fn until_action(&mut self, mut done: impl FnMut(&Value) -> bool) -> Value {
        let deadline = Instant::now() + STALL;
        loop {
            assert!(Instant::now() < deadline, "no matching action in {STALL:?}");
            let frame = self.next().await;
            if frame["method"] == "action" && done(&frame["params"]) {
                return frame["params"].clone();
            }
        }
    }

    /// A round trip: everything the host queued for this connection before it is received.
    async fn barrier(&mut self) {
        self.request("listSessions", json!({})).await.unwrap();
    }

    async fn create_session(
        &mut self,
        id: &str,
        directories: Option<Vec<String>>,
    ) -> Result<(SessionUri, ChatUri), Value> {
        let session = SessionUri::with_provider("scripted", SafeId::new(id).unwrap()).unwrap();
        let mut params = json!({ "channel": session.as_str(), "provider": "scripted" });
        if let Some(directories) = directories {
            params["workingDirectories"] = json!(directories);
        }
        self.request("createSession", params).await?;
        let chat = ChatUri::default_for(&session);
        Ok((session, chat))
    }

    async fn start_turn(&mut self, chat: &str, turn: &str, text: &str) {
        self.dispatch(
            chat,
            json!({
                "type": "chat/turnStarted", "turnId": turn, "startedAt": STARTED_AT,
                "message": { "text": text, "origin": { "kind": "user" } }
            }),
        )
        .await;
    }
}

/// Whether `envelope` (an `action` notification's params) ends `turn`.
fn ends_turn(envelope: &Value, turn: &str) -> bool {
    envelope["rejectionReason"].is_null()
        && matches!(
            envelope["action"]["type"].as_str(),
            Some("chat/turnComplete" | "chat/turnCancelled" | "chat/error")
        )
        && envelope["action"]["turnId"] == turn
}

// ─── Raw HTTP ────────────────────────────────────────────────────────────────────────────────

const WS_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// A masked client text frame (RFC 6455 §5.2).
fn masked_text_frame(text: &str) -> Vec<u8> {
    let payload = text.as_bytes();
    let mut frame = vec![0x81];
    match u8::try_from(payload.len()) {
        Ok(len) if len < 126 => frame.push(0x80 | len),
        _ => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&u16::try_from(payload.len()).unwrap().to_be_bytes());
        }
    }
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().zip(mask.iter().cycle()).map(|(b, m)| b ^ m));
    frame
}

/// An upgrade request for `target` with `headers` on a fresh connection to `addr`'s port on
/// loopback. Returns the connection, the peer address the host sees, and the host's answer: the
/// response head and its `Content-Length` body, read without waiting for the connection to
/// close.
async fn upgrade(
    addr: SocketAddr,
    target: &str,
    headers: &[(&str, &str)],
) -> (TcpStream, SocketAddr, String) {
    let connect_to = SocketAddr::from(([127, 0, 0, 1], addr.port()));
    let mut stream = TcpStream::connect(connect_to).await.unwrap();
    let mut request = format!(
        "GET {target} HTTP/1.1\r\nHost: {connect_to}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {WS_KEY}\r\n"
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let deadline = Instant::now() + STALL;
    loop {
        let text = String::from_utf8_lossy(&answer);
        if let Some(head) = text.find("\r\n\r\n").map(|end| &text[..end + 4]) {
            let length: usize = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if answer.len() >= head.len() + length {
                break;
            }
        }
        let mut chunk = [0u8; 4096];
        let read = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
            .await
            .expect("no complete HTTP answer")
            .unwrap();
        assert!(read > 0, "closed without a complete answer: {text:?}");
        answer.extend_from_slice(&chunk[..read]);
    }
    let peer = stream.local_addr().unwrap();
    (stream, peer, String::from_utf8(answer).unwrap())
}

/// The frames of an intruder who goes on after a refused upgrade: `initialize`, then
/// `createSession` of `session`.
fn intruder_frames(session: &SessionUri) -> Vec<u8> {
    let mut frames = masked_text_frame(
        &json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "channel": ROOT_RESOURCE_URI, "protocolVersions": ["1.0.0"], "clientId": "intruder"
            }
        })
        .to_string(),
    );
    frames.extend(masked_text_frame(
        &json!({
            "jsonrpc": "2.0", "id": 2, "method": "createSession",
            "params": { "channel": session.as_str(), "provider": "scripted" }
        })
        .to_string(),
    ));
    frames
}

/// Asserts that the upgrade of `target` with `headers` is answered with a 403 (no upgrade), and
/// that the connection then ends without answering the protocol messages the client sends
/// after it. Returns the peer address the host saw.
async fn assert_refused(
    addr: SocketAddr,
    target: &str,
    headers: &[(&str, &str)],
    session: &SessionUri,
) -> SocketAddr {
    let (mut stream, peer, answer) = upgrade(addr, target, headers).await;
    assert!(answer.starts_with("HTTP/1.1 403 "), "{target}: {answer}");
    // Writing may fail: the host may have closed the connection already.
    let _ = stream.write_all(&intruder_frames(session)).await;
    let mut rest = Vec::new();
    let read = tokio::time::timeout(STALL, stream.read_to_end(&mut rest))
        .await
        .expect("the host kept a refused connection open");
    if read.is_ok() {
        assert!(
            rest.is_empty(),
            "{target}: bytes after the 403: {:?}",
            String::from_utf8_lossy(&rest)
        );
    }
    peer
}

// ─── The log ─────────────────────────────────────────────────────────────────────────────────

/// Everything every `tracing` event of this test binary wrote, at every level.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Waits until the log mentions every one of `needles`.
    async fn wait_for(&self, needles: &[String]) {
        let deadline = Instant::now() + STALL;
        loop {
            let text = self.text();
            let missing: Vec<&String> = needles.iter().filter(|n| !text.contains(*n)).collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the log never mentioned {missing:?}; it holds:\n{text}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Log {
    type Writer = Log;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Installs (once) the process-wide subscriber that records every event, `TRACE` included.
fn log() -> &'static Log {
    static LOG: OnceLock<Log> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Log::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(log.clone())
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        log
    })
}

// ─── 1. The connection token ─────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_token_is_never_logged() {
    let log = log();
    let token = unique("Sup3r-S3cret-Token");
    let host = Host::start_with(say_script("hello"), |options| {
        options.token = Some(token.clone());
    })
    .await;
    assert!(host.url.contains(&token), "the URL carries the token");

    // Refused upgrades, several presenting the token (or a near miss holding it) in a place
    // where it does not count: a careless refusal log would print it.
    let near_miss = format!("{token}x");
    let basic = format!("Basic {token}");
    let bearer = format!("Bearer {near_miss}");
    let attempts: [(String, Vec<(&str, &str)>); 5] = [
        (format!("/?tkn={near_miss}"), Vec::new()),
        (format!("/?TKN={token}"), Vec::new()),
        (format!("/{token}"), Vec::new()),
        ("/".to_owned(), vec![("Authorization", basic.as_str())]),
        ("/".to_owned(), vec![("Authorization", bearer.as_str())]),
    ];
    let intruded = SessionUri::with_provider("scripted", SafeId::new("intruded").unwrap()).unwrap();
    let mut peers = Vec::new();
    for (target, headers) in &attempts {
        let peer = assert_refused(host.addr, target, headers, &intruded).await;
        peers.push(peer.to_string());
    }
    // An admitted client does a little work.
    let mut client = Raw::connect(&host.url, "token-client", &[ROOT_RESOURCE_URI]).await;
    let (_, chat) = client.create_session("token-session", None).await.unwrap();
    client
        .request("subscribe", json!({ "channel": chat.as_str() }))
        .await
        .unwrap();
    client.start_turn(chat.as_str(), "t1", "hello").await;
    client
        .until_action(|e| e["channel"] == chat.as_str() && ends_turn(e, "t1"))
        .await;
    drop(client);

    // Startup (the listening address) and every refusal (its peer) have reached the log.
    let mut expected = peers;
    expected.push(host.addr.to_string());
    log.wait_for(&expected).await;
    let text = log.text();
    assert!(!text.contains(&token), "the token is in the log:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_upgrade_gets_403_and_nothing_after_it_is_read() {
    let host = Host::start(say_script("hello")).await;
    let session = SessionUri::with_provider("scripted", SafeId::new("intruded").unwrap()).unwrap();
    let (_, query) = host.url.split_once('?').unwrap();
    let token = query.strip_prefix("tkn=").unwrap();
    let wrong_bearer = [("Authorization", "Bearer wrong")];
    let basic = format!("Basic {token}");
    let right_token_as_basic = [("Authorization", basic.as_str())];
    for (target, headers) in [
        ("/", &[][..]),
        ("/?tkn=wrong", &[][..]),
        ("/?tkn=", &[][..]),
        ("/", &wrong_bearer[..]),
        ("/", &right_token_as_basic[..]),
    ] {
        assert_refused(host.addr, target, headers, &session).await;
    }
    let mut checker = Raw::connect(&host.url, "checker", &[]).await;
    let listed = checker.request("listSessions", json!({})).await.unwrap();
    assert_eq!(listed["items"], json!([]), "{listed}");

    // Control: the same exchange with the token is upgraded and creates the session.
    let (mut admitted, _, answer) = upgrade(host.addr, &format!("/?{query}"), &[]).await;
    assert!(answer.starts_with("HTTP/1.1 101 "), "{answer}");
    admitted
        .write_all(&intruder_frames(&session))
        .await
        .unwrap();
    let deadline = Instant::now() + STALL;
    loop {
        let listed = checker.request("listSessions", json!({})).await.unwrap();
        if listed.to_string().contains(session.as_str()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the admitted createSession never ran"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_on_every_interface_still_demands_the_token() {
    let host = Host::start_with(say_script("hello"), |options| {
        options.listen = SocketAddr::from(([0, 0, 0, 0], 0));
    })
    .await;
    assert!(host.addr.ip().is_unspecified());
    let session = SessionUri::with_provider("scripted", SafeId::new("intruded").unwrap()).unwrap();
    assert_refused(host.addr, "/", &[], &session).await;
    assert_refused(host.addr, "/?tkn=wrong", &[], &session).await;
    let mut client = Raw::connect(&host.loopback_url(), "remote-ish", &[]).await;
    client.barrier().await;
}

// ─── 2. Roots ────────────────────────────────────────────────────────────────────────────────

/// `file://` URIs that all name something outside `host`'s root: plainly, through `..` (raw and
/// percent-encoded), and through symbolic links inside the root pointing out.
fn escaping_uris(host: &Host, target: &str) -> Vec<String> {
    let work = path_to_file_uri(&host.work).unwrap();
    let mut uris = vec![
        path_to_file_uri(&host.outside.join(target)).unwrap(),
        format!("{work}/../outside/{target}"),
        format!("{work}/%2E%2E/outside/{target}"),
        format!("{work}/sub/..%2F..%2Foutside/{target}"),
        format!("{work}/sub/../../outside/{target}"),
        format!(
            "file://localhost{}",
            &path_to_file_uri(&host.outside.join(target)).unwrap()["file://".len()..]
        ),
        "file://elsewhere/etc/passwd".to_owned(),
    ];
    #[cfg(unix)]
    {
        uris.push(format!("{work}/link-out/{target}"));
        uris.push(format!("{work}/sub/link-up/outside/{target}"));
    }
    uris
}

/// Gives `host` the links [`escaping_uris`] walks through: `work/link-out -> ../outside`,
/// `work/sub/link-up -> ../..`, `work/leak -> <outside>/secret.txt`.
fn plant_links(host: &Host) {
    std::fs::create_dir_all(host.work.join("sub")).unwrap();
    #[cfg(unix)]
    {
        symlink(Path::new("../outside"), &host.work.join("link-out"));
        symlink(Path::new("../.."), &host.work.join("sub/link-up"));
        symlink(&host.outside.join("secret.txt"), &host.work.join("leak"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_directories_outside_the_roots_are_refused() {
    let host = Host::start(say_script("hello")).await;
    plant_links(&host);
    let mut client = Raw::connect(&host.url, "client", &[]).await;
    for (index, uri) in escaping_uris(&host, "").into_iter().enumerate() {
        let uri = uri.trim_end_matches('/').to_owned();
        let error = client
            .create_session(&format!("escape-{index}"), Some(vec![uri.clone()]))
            .await
            .expect_err(&uri);
        assert_eq!(error["code"], -32602, "{uri}: {error}");
    }
    let listed = client.request("listSessions", json!({})).await.unwrap();
    assert_eq!(listed["items"], json!([]), "{listed}");
    // Inside the root is fine.
    let sub = path_to_file_uri(&host.work.join("sub")).unwrap();
    client
        .create_session("inside", Some(vec![sub]))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_reads_outside_the_roots_return_nothing_of_the_file() {
    let host = Host::start(say_script("hello")).await;
    plant_links(&host);
    let secret = unique("outside-secret-content");
    std::fs::write(host.outside.join("secret.txt"), &secret).unwrap();
    let mut client = Raw::connect(&host.url, "reader", &[]).await;
    let mut uris = escaping_uris(&host, "secret.txt");
    uris.push(format!("{}/leak", path_to_file_uri(&host.work).unwrap()));
    for uri in &uris {
        for encoding in [None, Some("utf-8"), Some("base64")] {
            let mut params = json!({ "channel": ROOT_RESOURCE_URI, "uri": uri });
            if let Some(encoding) = encoding {
                params["encoding"] = json!(encoding);
            }
            let answer = client.request("resourceRead", params).await;
            assert!(answer.is_err(), "{uri} was read: {answer:?}");
        }
    }
    client.barrier().await;
    let base64_prefix = &base64_of(secret.as_bytes())[..16];
    for text in &client.texts {
        assert!(!text.contains(&secret), "the secret was sent: {text}");
        assert!(!text.contains(base64_prefix), "the secret was sent: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_outside_the_roots_are_neither_listed_nor_resolved() {
    let host = Host::start(say_script("hello")).await;
    plant_links(&host);
    std::fs::write(host.outside.join("secret.txt"), "outside").unwrap();
    let mut client = Raw::connect(&host.url, "browser", &[]).await;
    let mut uris = escaping_uris(&host, "");
    uris.push(format!("{}/leak", path_to_file_uri(&host.work).unwrap()));
    for uri in &uris {
        let uri = uri.trim_end_matches('/');
        for method in ["resourceList", "resourceResolve"] {
            let answer = client
                .request(method, json!({ "channel": ROOT_RESOURCE_URI, "uri": uri }))
                .await;
            assert!(answer.is_err(), "{method} {uri} was answered: {answer:?}");
        }
    }
    // A listing of the root leaves out the links that lead out of it.
    let listed = client
        .request(
            "resourceList",
            json!({ "channel": ROOT_RESOURCE_URI, "uri": path_to_file_uri(&host.work).unwrap() }),
        )
        .await
        .unwrap();
    let names: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sub"], "{listed}");
}

/// Standard base64 with padding.
fn base64_of(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

// ─── 3. Ownership between clients ────────────────────────────────────────────────────────────

fn confirm_script() -> Value {
    json!({ "turns": [{ "steps": [
        { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
          "effect": { "kind": "writeFile", "path": "notes.txt", "content": "from the agent\n" } },
        { "kind": "say", "text": "Done." }
    ]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_owning_client_completes_or_streams_a_tool_call() {
    let host = Host::start(confirm_script()).await;
    let mut a = Raw::connect(&host.url, "client-a", &[]).await;
    let mut b = Raw::connect(&host.url, "client-b", &[]).await;
    let (_, chat) = a.create_session("owned", None).await.unwrap();
    let chat = chat.as_str();
    a.request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    a.start_turn(chat, "t1", "write the notes").await;
    let ready = a
        .until_action(|e| {
            e["channel"] == chat
                && e["action"]["type"] == "chat/toolCallReady"
                && e["action"].get("confirmed").is_none()
        })
        .await;
    let tool_call = ready["action"]["toolCallId"].as_str().unwrap().to_owned();

    let forged_complete = json!({
        "type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": tool_call,
        "result": { "success": true, "pastTenseMessage": "FORGED completion" }
    });
    let forged_content = json!({
        "type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": tool_call,
        "content": [{ "type": "text", "text": "FORGED content" }]
    });
    // Another client, subscribed or not, is not the owner; nor is the client that started the
    // turn: the call is the host's.
    for (client, name) in [(&mut b, "client-b"), (&mut a, "client-a")] {
        for action in [&forged_complete, &forged_content] {
            let seq = client.dispatch(chat, action.clone()).await;
            let echo = client
                .until_action(|e| {
                    e["origin"]["clientSeq"] == seq && e["origin"]["clientId"] == name
                })
                .await;
            let reason = echo["rejectionReason"].as_str().unwrap_or_default();
            assert!(reason.contains("not the owning client"), "{name}: {echo}");
        }
    }
    // B watches the rest of the turn.
    b.request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();

    // The real answer still works, and nothing forged reached anyone or the state.
    a.dispatch(
        chat,
        json!({
            "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": tool_call,
            "approved": true, "confirmed": "user-action"
        }),
    )
    .await;
    a.until_action(|e| e["channel"] == chat && ends_turn(e, "t1"))
        .await;
    b.until_action(|e| e["channel"] == chat && ends_turn(e, "t1"))
        .await;
    assert_eq!(
        std::fs::read_to_string(host.work.join("notes.txt")).unwrap(),
        "from the agent\n"
    );
    for (client, own) in [(&a, "client-a"), (&b, "client-b")] {
        for frame in &client.frames {
            if frame["method"] == "action" && !frame["params"]["rejectionReason"].is_null() {
                assert_eq!(frame["params"]["origin"]["clientId"], own, "{frame}");
            } else {
                assert!(!frame.to_string().contains("FORGED"), "{own} got {frame}");
            }
        }
    }
    let mut observer = Raw::connect(&host.url, "observer", &[]).await;
    let snapshot = observer
        .request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    assert!(!snapshot.to_string().contains("FORGED"), "{snapshot}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_receives_nothing_of_a_session_it_has_not_subscribed_to() {
    let secret = unique("agent-reply-only-subscribers-see");
    let host = Host::start(say_script(&secret)).await;
    let mut b = Raw::connect(&host.url, "client-b", &[ROOT_RESOURCE_URI]).await;
    let mut a = Raw::connect(&host.url, "client-a", &[ROOT_RESOURCE_URI]).await;
    let (session, chat) = a.create_session("private", None).await.unwrap();
    let (session, chat) = (session.as_str(), chat.as_str());
    a.request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    a.start_turn(chat, "t1", "hello").await;
    a.until_action(|e| e["channel"] == chat && ends_turn(e, "t1"))
        .await;
    assert!(
        a.texts.iter().any(|t| t.contains(&secret)),
        "the subscriber saw the reply"
    );

    // Everything queued for B before now has arrived; asking for turns without subscribing
    // loads them for subscribers, not for B.
    b.barrier().await;
    let fetched = b.request("fetchTurns", json!({ "channel": chat })).await;
    b.barrier().await;
    assert!(!format!("{fetched:?}").contains(&secret), "{fetched:?}");
    for frame in &b.frames {
        if frame["method"] == "action" {
            let channel = frame["params"]["channel"].as_str().unwrap_or_default();
            assert!(channel != session && channel != chat, "B got {frame}");
        }
    }
    for text in &b.texts {
        assert!(!text.contains(&secret), "B got {text}");
    }
    // Subscribing is how B reads it.
    let snapshot = b
        .request("subscribe", json!({ "channel": chat }))
        .await
        .unwrap();
    assert!(snapshot.to_string().contains(&secret), "{snapshot}");
}

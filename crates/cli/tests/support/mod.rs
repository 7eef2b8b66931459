//! What the tests that run the real `agent-host` binary against a data directory share
//! (`restart.rs`, `crash.rs`): a kill-on-drop process guard, `serve` on a temporary root and
//! data directory, and an AHP client that records every envelope and notification it receives.
//!
//! Every wait polls with a deadline; nothing synchronises on a fixed sleep.

// Each test crate uses a different part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agenthost_client::{ChatView, HostConnection};
use agenthost_protocol::ahp_types::ROOT_RESOURCE_URI;
use agenthost_protocol::{ActionEnvelope, ChatUri, SafeId, SessionUri};
use ahp::{ClientEventStream, SubscriptionEvent};
use serde_json::{Value, json};

/// How long a process may take to print its URL or to exit.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The longest a client waits for the host between two events.
pub const STALL: Duration = Duration::from_secs(10);

/// `agent-host` with a clean environment for the flags the tests pass.
pub fn agent_host() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent-host"));
    command.env_remove("AGENT_HOST_TOKEN");
    command.env_remove("AGENT_HOST_DATA_DIR");
    command.env("RUST_LOG", "warn");
    command
}

/// A spawned `agent-host`, killed (and reaped) when dropped — also when the test panics.
pub struct Spawned {
    child: Child,
    stdout: mpsc::Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Spawned {
    pub fn spawn(command: Command) -> Self {
        Self::start(command, Stdio::null())
    }

    /// [`spawn`](Self::spawn) with stdin piped: the writer is returned (drop it to close it).
    pub fn spawn_with_stdin(command: Command) -> (Self, ChildStdin) {
        let mut spawned = Self::start(command, Stdio::piped());
        let stdin = spawned.child.stdin.take().unwrap();
        (spawned, stdin)
    }

    fn start(mut command: Command, stdin: Stdio) -> Self {
        let mut child = command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (lines, stdout) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = err.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Self {
            child,
            stdout,
            stderr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The next stdout line within `timeout`, if one comes.
    pub fn line_within(&self, timeout: Duration) -> Option<String> {
        self.stdout.recv_timeout(timeout).ok()
    }

    /// The next stdout line, within [`DEADLINE`].
    pub fn line(&self) -> String {
        self.stdout
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|e| panic!("no stdout line ({e}); stderr:\n{}", self.stderr()))
    }

    /// `SIGTERM`: a graceful stop (the caller waits for the exit).
    pub fn terminate(&self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -TERM failed");
    }

    /// `SIGKILL` (what `Child::kill` sends on Unix), then reaps the process.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Waits for the process to exit (polling, within [`DEADLINE`]); returns its status, every
    /// stdout line and its stderr.
    pub fn wait(&mut self) -> (ExitStatus, String, String) {
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "agent-host did not exit within {DEADLINE:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // The pipes close with the process; collect what is left.
        let mut stdout = String::new();
        while let Ok(line) = self.stdout.recv_timeout(DEADLINE) {
            stdout.push_str(&line);
            stdout.push('\n');
        }
        let stderr_done = Instant::now() + DEADLINE;
        while Arc::strong_count(&self.stderr) > 1 && Instant::now() < stderr_done {
            std::thread::sleep(Duration::from_millis(5));
        }
        (status, stdout, self.stderr())
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temporary place for one test: `work/` (the host's only root) and `data/` (its data
/// directory, created by the host).
pub struct Place {
    pub work: PathBuf,
    pub data: PathBuf,
    pub base: PathBuf,
    _dir: tempfile::TempDir,
}

impl Place {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let work = base.join("work");
        std::fs::create_dir(&work).unwrap();
        Self {
            work,
            data: base.join("data"),
            base,
            _dir: dir,
        }
    }

    /// Writes a script for the scripted agent; returns its path.
    pub fn script(&self, script: &Value) -> PathBuf {
        let path = self.base.join("script.json");
        std::fs::write(&path, serde_json::to_string_pretty(script).unwrap()).unwrap();
        path
    }

    /// A place whose `work/` is a git repository with one commit (checkpoints on).
    pub fn with_repository() -> Self {
        let place = Self::new();
        git(&place.work, &["init", "-q"]);
        std::fs::write(place.work.join("README"), "a repository\n").unwrap();
        git(&place.work, &["add", "README"]);
        git(&place.work, &["commit", "-q", "-m", "start"]);
        place
    }

    /// The session database.
    pub fn database(&self) -> PathBuf {
        self.data.join("agenthost.db")
    }
}

/// `agent-host serve` on 127.0.0.1:0 with `--root work --data-dir data` (and `--script`).
pub fn serve_command(place: &Place, data_dir: &Path, script: Option<&Path>) -> Command {
    let mut command = agent_host();
    command.args(["serve", "--listen", "127.0.0.1:0", "--root"]);
    command.arg(&place.work).arg("--data-dir").arg(data_dir);
    if let Some(script) = script {
        command.arg("--script").arg(script);
    }
    command
}

/// A serving `agent-host` and the URL it printed first.
pub struct Server {
    pub process: Spawned,
    pub url: String,
}

impl Server {
    pub fn start(place: &Place, script: Option<&Path>) -> Self {
        let process = Spawned::spawn(serve_command(place, &place.data, script));
        let url = process.line();
        assert!(url.starts_with("ws://127.0.0.1:"), "{url}");
        Self { process, url }
    }

    /// `SIGKILL`: no graceful shutdown of any kind.
    pub fn kill(mut self) {
        self.process.kill();
    }

    /// `SIGTERM`, then a successful exit with no WARN or ERROR logged.
    pub fn stop_cleanly(self) {
        let mut process = self.process;
        process.terminate();
        let (exit, _, stderr) = process.wait();
        assert!(exit.success(), "{stderr}");
        assert!(
            !stderr.contains(" WARN ") && !stderr.contains("ERROR"),
            "{stderr}"
        );
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `scripted:/<id>`.
pub fn session_uri(id: &str) -> SessionUri {
    SessionUri::with_provider("scripted", SafeId::new(id).unwrap()).unwrap()
}

/// The turn a turn-ending action ends.
pub fn ends_turn(envelope: &ActionEnvelope) -> Option<String> {
    if envelope.rejection_reason.is_some() {
        return None;
    }
    let action = serde_json::to_value(&envelope.action).unwrap();
    match action["type"].as_str()? {
        "chat/turnComplete" | "chat/turnCancelled" | "chat/error" => {
            action["turnId"].as_str().map(str::to_owned)
        }
        _ => None,
    }
}

pub fn action_type(envelope: &ActionEnvelope) -> String {
    serde_json::to_value(&envelope.action).unwrap()["type"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The turns of a chat state, as JSON.
pub fn turns_json(view: &ChatView) -> Vec<Value> {
    view.state()
        .turns
        .iter()
        .map(|turn| serde_json::to_value(turn).unwrap())
        .collect()
}

/// Panics unless `turn` ended (complete, cancelled or error) with every tool call finished.
pub fn assert_turn_finished(turn: &Value) {
    let state = turn["state"].as_str().unwrap_or_default();
    assert!(
        matches!(state, "complete" | "cancelled" | "error"),
        "a turn that did not end: {turn}"
    );
    for part in turn["responseParts"].as_array().unwrap() {
        if part["kind"] == "toolCall" {
            let status = part["toolCall"]["status"].as_str().unwrap_or_default();
            assert!(
                matches!(status, "completed" | "cancelled"),
                "a tool call still {status:?} in a finished turn: {turn}"
            );
        }
    }
}

/// One initialized client connection (root subscribed) and what it received.
pub struct Peer {
    pub conn: HostConnection,
    events: ClientEventStream,
    /// The highest `serverSeq` this connection saw (initialize, snapshots, envelopes).
    pub max_seq: i64,
    /// Every notification that was not an action envelope, in order.
    pub notifications: Vec<SubscriptionEvent>,
}

impl Peer {
    pub async fn connect(url: &str, id: &str) -> Self {
        let conn = HostConnection::connect(url, id).await.unwrap();
        let events = conn.client().events();
        let max_seq = conn.initialized().server_seq;
        Self {
            conn,
            events,
            max_seq,
            notifications: Vec::new(),
        }
    }

    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ahp::ClientError> {
        self.conn.client().request(method, params).await
    }

    /// The JSON-RPC error code of a request that must fail.
    pub async fn request_error(&self, method: &str, params: Value) -> (i32, String) {
        match self.request(method, params).await {
            Err(ahp::ClientError::Rpc(error)) => (error.code, error.message),
            other => panic!("{method}: expected an error response, got {other:?}"),
        }
    }

    pub async fn create_session(&self, id: &str) -> (SessionUri, ChatUri) {
        let (session, chat) = self
            .conn
            .create_session("scripted", id, None)
            .await
            .unwrap();
        assert_eq!(chat, ChatUri::default_for(&session));
        (session, chat)
    }

    /// Subscribes to a chat: a view seeded from its snapshot.
    pub async fn open_chat(&mut self, chat: &ChatUri) -> ChatView {
        let (view, _subscription) = self.conn.open_chat(chat).await.unwrap();
        view
    }

    /// `listSessions`: the session resources, newest first.
    pub async fn listed(&self) -> Vec<String> {
        self.conn
            .list_sessions()
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|item| item.resource)
            .collect()
    }

    /// The next action envelope before `deadline` (notifications are recorded on the way).
    pub async fn next_envelope_by(
        &mut self,
        deadline: tokio::time::Instant,
    ) -> Option<ActionEnvelope> {
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .ok()?
                .expect("the connection closed");
            match event.event {
                SubscriptionEvent::Action(envelope) => {
                    let seq = i64::try_from(envelope.server_seq).unwrap();
                    self.max_seq = self.max_seq.max(seq);
                    return Some(envelope);
                }
                other => self.notifications.push(other),
            }
        }
    }

    pub async fn next_envelope(&mut self) -> ActionEnvelope {
        self.next_envelope_by(tokio::time::Instant::now() + STALL)
            .await
            .unwrap_or_else(|| panic!("no action from the host for {STALL:?}"))
    }

    /// Records every event already received, without waiting for more.
    pub async fn drain(&mut self) {
        while self
            .next_envelope_by(tokio::time::Instant::now())
            .await
            .is_some()
        {}
    }

    /// Starts a turn and follows the chat until it ends; returns the ended turn's JSON as the
    /// view reduced it.
    pub async fn run_turn(&mut self, view: &mut ChatView, turn: &str, text: &str) -> Value {
        let chat = ChatUri::parse(&view.state().resource).unwrap();
        self.conn.start_turn(&chat, turn, text).await.unwrap();
        loop {
            let envelope = self.next_envelope().await;
            if envelope.channel != chat.as_str() {
                continue;
            }
            assert!(
                envelope.rejection_reason.is_none(),
                "rejected: {envelope:?}"
            );
            view.apply(&envelope);
            if ends_turn(&envelope).as_deref() == Some(turn) {
                assert_eq!(action_type(&envelope), "chat/turnComplete", "{envelope:?}");
                break;
            }
        }
        turns_json(view)
            .into_iter()
            .find(|t| t["id"] == turn)
            .unwrap_or_else(|| panic!("{turn} is not in the view's turns"))
    }

    /// `reconnect` on a fresh, uninitialized connection (what a client does after losing one).
    pub async fn reconnect(url: &str, id: &str, last_seen: i64, channels: &[&str]) -> Value {
        let transport = ahp_ws::WebSocketTransport::connect(url).await.unwrap();
        let client = ahp::Client::connect(transport, ahp::ClientConfig::default())
            .await
            .unwrap();
        let result = client
            .request(
                "reconnect",
                json!({
                    "channel": ROOT_RESOURCE_URI, "clientId": id,
                    "lastSeenServerSeq": last_seen, "subscriptions": channels
                }),
            )
            .await
            .unwrap();
        client.shutdown().await;
        result
    }

    pub async fn close(self) {
        self.conn.close().await;
    }
}

/// `command` run through `/bin/sh` with `SIGXFSZ` ignored (the disposition survives the `exec`):
/// a process over its file-size limit (`RLIMIT_FSIZE`) then gets `EFBIG` from the write, as a
/// full disk gives `ENOSPC`, instead of being killed by the signal.
pub fn ignoring_sigxfsz(command: &Command) -> Command {
    let mut wrapped = Command::new("/bin/sh");
    wrapped
        .args(["-c", "trap '' XFSZ; exec \"$0\" \"$@\""])
        .arg(command.get_program())
        .args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(name, value),
            None => wrapped.env_remove(name),
        };
    }
    wrapped
}

/// splitmix64: small, seedable, good enough to pick kill points.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The seed in the environment variable `var` (to replay a run), else one from the clock.
pub fn seed_from(var: &str) -> u64 {
    match std::env::var(var) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{var}={text:?} is not a u64")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    }
}

/// Runs `git` in `repo` with a fixed identity and no system configuration; its stdout.
pub fn git(repo: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@invalid"])
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The real `claude` CLI (`AGENTHOST_CLAUDE_BIN`, else `node_modules/.bin/claude` in the CLI
/// cache `.ci/run` fills: `$AGENTHOST_CLI_CACHE`, default `~/.cache/agenthost/clis`), or `None`
/// after saying why — a failure when `AGENTHOST_REQUIRE_CLIS` is set.
pub fn real_claude() -> Option<PathBuf> {
    let found = std::env::var_os("AGENTHOST_CLAUDE_BIN")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("AGENTHOST_CLI_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME")
                        .map(|home| Path::new(&home).join(".cache/agenthost/clis"))
                })
                .map(|cache| cache.join("node_modules/.bin/claude"))
        })
        .filter(|path| path.exists());
    if found.is_none() {
        let why = "@anthropic-ai/claude-code@2.1.328 was not found (set AGENTHOST_CLAUDE_BIN, \
                   or install it into ~/.cache/agenthost/clis as `.ci/run` does)";
        assert!(
            std::env::var_os("AGENTHOST_REQUIRE_CLIS").is_none(),
            "AGENTHOST_REQUIRE_CLIS is set but {why}"
        );
        eprintln!("skipped: {why}");
    }
    found
}

/// What Claude Code needs to talk to the loopback mock model at `base_url` only, with `home`
/// as its home (the child of `command` inherits it).
pub fn claude_against_the_mock(command: &mut Command, base_url: &str, home: &Path) {
    command
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "dummy")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("HOME", home)
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("CLAUDE_CONFIG_DIR");
}

//! Shared setup of the scripted-agent end-to-end tests: the host as `agent-host serve` composes
//! it (`agenthost::host::bind`) with the scripted provider, Microsoft's `ahp::Client` over the
//! real WebSocket, session creation, and waiting for / dispatching actions. Each test file
//! declares `mod support;` and uses what it needs.

// Shared by several test binaries: not each one uses every item.
#![allow(dead_code)]
// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use agenthost::host::{HostOptions, bind};
use agenthost::unattended::UnattendedOptions;
use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::{ActionEnvelope, ChatUri, SafeId, SessionUri};
use ahp::{Client, ClientConfig, ClientEventStream, SubscriptionEvent};
use serde_json::{Value, json};

/// The longest a test waits for the host between two events.
pub const STALL: Duration = Duration::from_secs(10);

/// A running host with the scripted provider, serving until the test ends.
pub struct ScriptedHost {
    /// The temporary directory holding the script, the data dir and `work`; removed on drop.
    pub dir: tempfile::TempDir,
    /// The workspace root the host allows (`<dir>/work`), where tool effects land.
    pub work: PathBuf,
    /// The WebSocket URL to connect to.
    pub url: String,
}

impl ScriptedHost {
    /// Writes `script` for the scripted agent and binds a host on a free loopback port with
    /// the scripted provider, `<dir>/work` as its only root, `<dir>/data` as its data dir and
    /// the `unattended` policy; serves it in a background task.
    pub async fn start(script: Value, unattended: UnattendedOptions) -> Self {
        Self::start_with(script, unattended, &[]).await
    }

    /// Like [`start`](Self::start), with the root configuration flags `enable` on (as
    /// `serve --enable FLAG`).
    pub async fn start_with(script: Value, unattended: UnattendedOptions, enable: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        Self::start_in(dir, work, script, unattended, enable).await
    }

    /// Like [`start`](Self::start), with `root` (an existing folder outside the host's own
    /// temporary directory) as the only root.
    pub async fn start_rooted(script: Value, root: PathBuf) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, root, script, UnattendedOptions::default(), &[]).await
    }

    async fn start_in(
        dir: tempfile::TempDir,
        work: PathBuf,
        script: Value,
        unattended: UnattendedOptions,
        enable: &[&str],
    ) -> Self {
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let mut options = scripted_options(dir.path(), &work, script_path);
        options.unattended = unattended;
        options.enable = enable.iter().map(|flag| (*flag).to_owned()).collect();
        let server = bind(options).await.unwrap();
        let url = server.url();
        tokio::spawn(server.serve(std::future::pending()));
        Self { dir, work, url }
    }
}

/// A loopback host with the scripted provider playing `script`, `work` as its only root and
/// `<dir>/data` as its data dir; nothing else on.
pub fn scripted_options(
    dir: &std::path::Path,
    work: &std::path::Path,
    script: PathBuf,
) -> HostOptions {
    HostOptions {
        script: Some(script),
        data_dir: Some(dir.join("data")),
        ..HostOptions::scripted(
            vec![work.canonicalize().unwrap()],
            LaunchKind::Embedded("agenthost-e2e".into()),
        )
    }
}

/// Connects a client to `url` over the WebSocket and initializes it as `client_id`; returns
/// the client and its event stream (taken before `initialize`, so nothing is missed).
pub async fn connect(url: &str, client_id: &str) -> (Client, ClientEventStream) {
    let transport = ahp_ws::WebSocketTransport::connect(url).await.unwrap();
    let client = Client::connect(transport, ClientConfig::default())
        .await
        .unwrap();
    let events = client.events();
    client
        .initialize(client_id.into(), vec!["1.0.0".into()], Vec::new())
        .await
        .unwrap();
    (client, events)
}

/// Creates the scripted session `id` (`createSession`); returns its URI and its default chat's.
/// Subscribes to neither.
pub async fn create_session(client: &Client, id: &str) -> (SessionUri, ChatUri) {
    let session = SessionUri::with_provider("scripted", SafeId::new(id).unwrap()).unwrap();
    let chat = ChatUri::default_for(&session);
    let _: Value = client
        .request(
            "createSession",
            json!({ "channel": session.as_str(), "provider": "scripted" }),
        )
        .await
        .unwrap();
    (session, chat)
}

/// Receives accepted action envelopes until `done` holds for one; returns it. Panics when the
/// host sends nothing matching for [`STALL`].
pub async fn until(
    events: &mut ClientEventStream,
    mut done: impl FnMut(&ActionEnvelope) -> bool,
) -> ActionEnvelope {
    loop {
        let event = tokio::time::timeout(STALL, events.recv())
            .await
            .unwrap_or_else(|_| panic!("no matching action from the host for {STALL:?}"))
            .expect("the connection closed");
        if let SubscriptionEvent::Action(envelope) = event.event
            && envelope.rejection_reason.is_none()
            && done(&envelope)
        {
            return envelope;
        }
    }
}

/// Dispatches `action` (an action's JSON) on `channel`.
pub async fn dispatch(client: &Client, channel: &str, action: Value) {
    client
        .dispatch(channel.to_owned(), serde_json::from_value(action).unwrap())
        .await
        .unwrap();
}

impl ScriptedHost {
    /// Like [`start`](Self::start) (no unattended policy, no flags), with the server's `limits`
    /// (as `serve --max-frame-bytes … --max-connections …` sets them).
    pub async fn start_with_limits(script: Value, limits: agenthost::serve::ServerLimits) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let options = scripted_options(dir.path(), &work, script_path);
        let server = agenthost::host::bind_with(options, |config| limits.apply(config))
            .await
            .unwrap();
        let url = server.url();
        tokio::spawn(server.serve(std::future::pending()));
        Self { dir, work, url }
    }
}

/// Like [`connect`], with the client's own `config` (a larger event buffer for a client that
/// watches many channels: the client drops events a slow reader lags behind on).
pub async fn connect_with(
    url: &str,
    client_id: &str,
    config: ClientConfig,
) -> (Client, ClientEventStream) {
    let transport = ahp_ws::WebSocketTransport::connect(url).await.unwrap();
    let client = Client::connect(transport, config).await.unwrap();
    let events = client.events();
    client
        .initialize(client_id.into(), vec!["1.0.0".into()], Vec::new())
        .await
        .unwrap();
    (client, events)
}

/// Runs `git args` in `repo` (a fixed identity, no system configuration); whether it succeeded
/// and its standard output, trimmed.
pub fn git_status(repo: &std::path::Path, args: &[&str]) -> (bool, String) {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@invalid"])
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned(),
    )
}

/// Runs `git args` in `repo` like [`git_status`]; panics when it fails; its output.
pub fn git(repo: &std::path::Path, args: &[&str]) -> String {
    let (ok, out) = git_status(repo, args);
    assert!(ok, "git {args:?} failed: {out}");
    out
}

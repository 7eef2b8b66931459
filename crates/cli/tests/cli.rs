//! The real `agent-host` binary: `serve` prints its URL first and serves it, flags are honoured,
//! bad flags fail with a message naming the problem, and `demo` runs to the end.
//!
//! Every spawned process is held by a [`Spawned`] guard that kills it on drop, so a failing test
//! leaves no server behind. Waits poll with a deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use support::{Spawned, agent_host, runtime};

use agenthost_client::{ClientError, HostConnection};
use agenthost_protocol::ahp_types::state::SnapshotState;

/// `agent-host serve` on a free loopback port with `root` as its root and a data directory in
/// it (never the user's own).
fn serve_command(root: &Path) -> std::process::Command {
    let mut command = agent_host();
    command.args(["serve", "--listen", "127.0.0.1:0", "--root"]);
    command.arg(root);
    command.arg("--data-dir").arg(root.join(".agenthost-data"));
    command
}

fn serve(root: &Path, extra: &[&str]) -> Spawned {
    let mut command = serve_command(root);
    command.args(extra);
    Spawned::spawn(command)
}

/// `ws://127.0.0.1:<port>/?tkn=<token>` → the token.
fn token_of(url: &str) -> &str {
    let rest = url
        .strip_prefix("ws://127.0.0.1:")
        .unwrap_or_else(|| panic!("not a loopback ws URL: {url:?}"));
    let (port, token) = rest
        .split_once("/?tkn=")
        .unwrap_or_else(|| panic!("no ?tkn= in {url:?}"));
    assert!(port.parse::<u16>().is_ok_and(|p| p != 0), "port in {url:?}");
    token
}

#[test]
fn serve_prints_its_url_first_and_serves_it() {
    let root = tempfile::tempdir().unwrap();
    let server = serve(root.path(), &[]);
    let url = server.line();
    let token = token_of(&url);
    assert!(token.len() >= 32, "a generated token: {token:?}");

    runtime().block_on(async {
        let client = HostConnection::connect(&url, "cli-test").await.unwrap();
        assert_eq!(client.initialized().protocol_version, "1.0.0");
        let advertised: Vec<&str> = client
            .initialized()
            .snapshots
            .iter()
            .flat_map(|snapshot| match &snapshot.state {
                SnapshotState::Root(root) => {
                    root.agents.iter().map(|a| a.provider.as_str()).collect()
                }
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(advertised, ["scripted"]);
        assert!(client.list_sessions().await.unwrap().items.is_empty());
        client.close().await;
    });
}

#[test]
fn serve_uses_the_given_token_verbatim() {
    let root = tempfile::tempdir().unwrap();
    let server = serve(root.path(), &["--token", "fixed-Token_42"]);
    let url = server.line();
    assert_eq!(token_of(&url), "fixed-Token_42");

    runtime().block_on(async {
        let client = HostConnection::connect(&url, "cli-test").await.unwrap();
        client.close().await;
        let wrong = url.replace("fixed-Token_42", "fixed-Token_43");
        match HostConnection::connect(&wrong, "cli-test").await {
            Err(ClientError::Connect { message, .. }) => {
                assert!(message.contains("403"), "{message}");
            }
            other => panic!("a wrong token was not refused: {other:?}"),
        }
    });
}

#[test]
fn vscode_discovery_announces_the_served_url_in_the_given_user_data_dir() {
    let root = tempfile::tempdir().unwrap();
    let user_data = tempfile::tempdir().unwrap();
    let user_data_arg = user_data.path().to_str().unwrap();
    let server = serve(
        root.path(),
        &[
            "--vscode-discovery",
            "--vscode-user-data-dir",
            user_data_arg,
        ],
    );
    let url = server.line();
    let entries = user_data.path().join("agent-host/local-endpoint/entries");
    let files: Vec<_> = std::fs::read_dir(&entries)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(entry["type"], "standalone");
    assert_eq!(entry["pid"], server.pid());
    assert_eq!(entry["connectionToken"], token_of(&url));
    let port = entry["endpoint"]["port"].as_u64().unwrap();
    assert!(
        url.starts_with(&format!("ws://127.0.0.1:{port}/?tkn=")),
        "{entry} vs {url}"
    );

    // A plain `kill` (SIGTERM) is a clean shutdown: the entry, which holds the token, goes.
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut server = server;
    let (status, _, stderr) = server.wait();
    assert!(status.success(), "{status:?}: {stderr}");
    assert_eq!(std::fs::read_dir(&entries).unwrap().count(), 0);

    // The directory alone is not the switch.
    let mut refused = serve(root.path(), &["--vscode-user-data-dir", user_data_arg]);
    let (status, _, stderr) = refused.wait();
    assert!(!status.success());
    assert!(stderr.contains("--vscode-discovery"), "{stderr}");
}

#[test]
fn an_unknown_provider_fails_naming_the_available_ones() {
    let root = tempfile::tempdir().unwrap();
    let mut server = serve(root.path(), &["--provider", "nope"]);
    let (status, stdout, stderr) = server.wait();
    assert!(!status.success(), "{status}");
    assert!(stdout.is_empty(), "no URL is printed: {stdout:?}");
    assert!(stderr.contains("\"nope\""), "{stderr}");
    assert!(
        stderr.contains("available: scripted, claude, codex, copilot"),
        "{stderr}"
    );
}

#[test]
fn enable_takes_only_the_known_flags() {
    let root = tempfile::tempdir().unwrap();
    let mut server = serve(root.path(), &["--enable", "telepathy"]);
    let (status, stdout, stderr) = server.wait();
    assert!(!status.success(), "{status}");
    assert!(stdout.is_empty(), "no URL is printed: {stdout:?}");
    assert!(stderr.contains("telepathy"), "{stderr}");
    assert!(stderr.contains("markdownPlanRichLinks"), "{stderr}");
    assert!(stderr.contains("artifactTools"), "{stderr}");
}

/// Loopback by default; an address other machines reach needs `--allow-remote` (and the token
/// is demanded there as everywhere).
#[test]
fn serving_beyond_loopback_needs_allow_remote() {
    let root = tempfile::tempdir().unwrap();
    let command = |extra: &[&str]| {
        let mut command = agent_host();
        command.args(["serve", "--listen", "0.0.0.0:0", "--root"]);
        command.arg(root.path());
        command.arg("--data-dir").arg(root.path().join(".data"));
        command.args(extra);
        command
    };
    let mut refused = Spawned::spawn(command(&[]));
    let (status, stdout, stderr) = refused.wait();
    assert!(!status.success());
    assert!(stdout.is_empty(), "no URL is printed: {stdout:?}");
    assert!(stderr.contains("--allow-remote"), "{stderr}");

    let allowed = Spawned::spawn(command(&["--allow-remote"]));
    let url = allowed.line();
    assert!(url.contains("?tkn="), "{url}");
}

#[test]
fn serve_refuses_codex_settings_codex_would_refuse() {
    let root = tempfile::tempdir().unwrap();
    for (flags, expected) in [
        (
            &["--codex-sandbox", "none"][..],
            "unknown Codex sandbox `none`",
        ),
        (
            &["--codex-approval-policy", "untrusted"][..],
            "unknown Codex approval policy",
        ),
        (
            &["--codex-base-url", "http://x\",wire_api=\"chat"][..],
            "is not a plain http(s) URL",
        ),
    ] {
        let mut args = vec!["--provider", "codex"];
        args.extend_from_slice(flags);
        let mut server = serve(root.path(), &args);
        let (status, stdout, stderr) = server.wait();
        assert!(!status.success(), "{flags:?}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
    }
}

#[test]
fn serve_refuses_a_copilot_key_it_cannot_find() {
    let root = tempfile::tempdir().unwrap();
    let mut command = support::agent_host();
    command.args(["serve", "--listen", "127.0.0.1:0", "--root"]);
    command.arg(root.path());
    command.arg("--data-dir").arg(root.path().join(".data"));
    command.args([
        "--provider",
        "copilot",
        "--copilot-byok-url",
        "http://127.0.0.1:9/v1",
        "--copilot-byok-key-env",
        "AGENTHOST_TEST_NO_SUCH_KEY",
    ]);
    command.env_remove("AGENTHOST_TEST_NO_SUCH_KEY");
    let mut server = support::Spawned::spawn(command);
    let (status, stdout, stderr) = server.wait();
    assert!(!status.success());
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("$AGENTHOST_TEST_NO_SUCH_KEY"), "{stderr}");
}

#[test]
fn serve_offers_claude_and_refuses_a_bad_permission_mode() {
    let root = tempfile::tempdir().unwrap();
    // Advertising the agent starts no process: a missing `claude` only matters at the first turn.
    let server = serve(
        root.path(),
        &[
            "--provider",
            "claude",
            "--claude-bin",
            "/nonexistent/claude",
        ],
    );
    let url = server.line();
    runtime().block_on(async {
        let client = HostConnection::connect(&url, "cli-test").await.unwrap();
        let agents: Vec<String> = client
            .initialized()
            .snapshots
            .iter()
            .flat_map(|snapshot| match &snapshot.state {
                SnapshotState::Root(root) => {
                    root.agents.iter().map(|a| a.provider.clone()).collect()
                }
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(agents, ["claude"]);
        client.close().await;
    });
    let mut bad = serve(
        root.path(),
        &["--provider", "claude", "--claude-permission-mode", "yolo"],
    );
    let (status, _, stderr) = bad.wait();
    assert!(!status.success());
    assert!(
        stderr.contains("unknown Claude permission mode `yolo`"),
        "{stderr}"
    );
}

#[test]
fn a_malformed_script_fails_naming_the_problem() {
    let root = tempfile::tempdir().unwrap();
    let script = root.path().join("script.json");

    std::fs::write(
        &script,
        r#"{ "turns": [ { "steps": [ { "kind": "say", "txt": "hello" } ] } ] }"#,
    )
    .unwrap();
    let mut server = serve(root.path(), &["--script", script.to_str().unwrap()]);
    let (status, stdout, stderr) = server.wait();
    assert!(!status.success(), "{status}");
    assert!(stdout.is_empty(), "{stdout:?}");
    assert!(stderr.contains("turns[0].steps[0] (say)"), "{stderr}");
    assert!(stderr.contains("`txt`"), "{stderr}");

    std::fs::write(&script, "{ \"turns\": [\n  {,\n] }").unwrap();
    let mut server = serve(root.path(), &["--script", script.to_str().unwrap()]);
    let (status, _, stderr) = server.wait();
    assert!(!status.success(), "{status}");
    assert!(stderr.contains("not valid JSON"), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");

    let missing = root.path().join("missing.json");
    let mut server = serve(root.path(), &["--script", missing.to_str().unwrap()]);
    let (status, _, stderr) = server.wait();
    assert!(!status.success(), "{status}");
    assert!(stderr.contains("missing.json"), "{stderr}");
}

/// A healthy demo prints the conversation and nothing else: with `RUST_LOG=warn` (so a lower
/// default level cannot hide anything) its stderr holds no `ERROR` or `WARN` line — the
/// demo's subagent turns once logged twenty — and no colour codes, since stderr is a pipe.
#[test]
fn demo_runs_to_the_end_and_logs_nothing() {
    let mut command = agent_host();
    command
        .arg("demo")
        .env("RUST_LOG", "warn")
        .env_remove("NO_COLOR");
    let mut demo = Spawned::spawn(command);
    let (status, stdout, stderr) = demo.wait();
    assert!(
        status.success(),
        "{status}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("Hello from the scripted agent!"),
        "{stdout}"
    );
    assert!(
        !stderr.contains("ERROR") && !stderr.contains("WARN"),
        "a healthy demo logged:\n{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes on a pipe:\n{stderr}"
    );
}

/// SIGTERM the instant the URL line appears is a clean shutdown (exit 0, "shutting down"), never
/// the signal's default: the handlers are installed before the URL is printed. Twenty times, as
/// the window was a few microseconds wide.
#[test]
fn sigterm_right_after_the_url_is_a_clean_shutdown() {
    // Started together, so they compete for the CPU while they print their URLs.
    let roots: Vec<_> = (0..20).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut servers: Vec<_> = roots
        .iter()
        .map(|root| {
            let mut command = serve_command(root.path());
            command.env("RUST_LOG", "info");
            Spawned::spawn(command)
        })
        .collect();
    for server in &mut servers {
        let _url = server.line();
        server.terminate();
    }
    for mut server in servers {
        let (status, _, stderr) = server.wait();
        assert!(status.success(), "{status}\n{stderr}");
        assert!(
            stderr.contains("shutting down signal=\"SIGTERM\""),
            "{stderr}"
        );
    }
}

/// Log lines carry no colour codes when stderr is not a terminal, whatever the level.
#[test]
fn logs_on_a_pipe_have_no_colour_codes() {
    let root = tempfile::tempdir().unwrap();
    let mut command = serve_command(root.path());
    command.env("RUST_LOG", "info").env_remove("NO_COLOR");
    let mut server = Spawned::spawn(command);
    let _url = server.line();
    server.terminate();
    let (status, _, stderr) = server.wait();
    assert!(status.success(), "{status}\n{stderr}");
    assert!(stderr.contains("INFO"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes on a pipe:\n{stderr}"
    );
}

/// `--history-retry` takes a duration; zero or garbage is refused naming the flag's value.
#[test]
fn history_retry_refuses_zero_and_garbage() {
    for bad in ["0s", "soon"] {
        let root = tempfile::tempdir().unwrap();
        let mut server = serve(root.path(), &["--history-retry", bad]);
        let (status, _, stderr) = server.wait();
        assert!(!status.success(), "{bad}: {status}");
        assert!(stderr.contains(&format!("`{bad}`")), "{bad}: {stderr}");
    }
}

/// The status line of a WebSocket upgrade to `url` carrying `origin` (and a `Host` naming
/// `host`), over a raw socket so every header is ours.
fn upgrade_status(url: &str, host: &str, origin: Option<&str>) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("ws://").unwrap();
    let (addr, path) = rest.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\n{origin}Upgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 512];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "closed before a status line");
        answer.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    text.lines().next().unwrap_or_default().to_owned()
}

#[test]
fn allow_origin_admits_that_browser_origin_and_no_other() {
    let root = tempfile::tempdir().unwrap();
    let server = serve(root.path(), &["--allow-origin", "http://localhost:3000"]);
    let url = server.line();
    let port = url["ws://127.0.0.1:".len()..]
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let ok = "HTTP/1.1 101 Switching Protocols";
    let forbidden = "HTTP/1.1 403 Forbidden";
    let local = format!("127.0.0.1:{port}");
    // No Origin (the CLI, scripts, VS Code over SSH) and VS Code's desktop window: admitted.
    assert_eq!(upgrade_status(&url, &local, None), ok);
    assert_eq!(upgrade_status(&url, "localhost:1", None), ok);
    assert_eq!(
        upgrade_status(&url, &local, Some("vscode-file://vscode-app")),
        ok
    );
    // The allowed origin, and nothing else.
    assert_eq!(
        upgrade_status(&url, &local, Some("http://localhost:3000")),
        ok
    );
    assert_eq!(
        upgrade_status(&url, &local, Some("https://attacker.example")),
        forbidden
    );
    assert_eq!(
        upgrade_status(&url, &local, Some("http://localhost:3001")),
        forbidden
    );
    // A DNS-rebinding Host, even with the token.
    assert_eq!(
        upgrade_status(&url, &format!("rebound.example:{port}"), None),
        forbidden
    );
    // Without the flag the page's origin is refused too.
    let other = tempfile::tempdir().unwrap();
    let plain = serve(other.path(), &[]);
    let plain_url = plain.line();
    let plain_port = plain_url["ws://127.0.0.1:".len()..]
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(
        upgrade_status(
            &plain_url,
            &format!("127.0.0.1:{plain_port}"),
            Some("http://localhost:3000")
        ),
        forbidden
    );
    server.terminate();
    let stderr = server.stderr();
    assert!(stderr.contains("its Origin is not allowed"), "{stderr}");
}

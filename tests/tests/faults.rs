//! Agent CLIs that misbehave mid-turn, end to end: the host as `agent-host serve` composes it
//! (`agenthost::host::bind`) drives a stand-in CLI behind each real provider (Claude, Codex,
//! Copilot), a client follows the chat over the real WebSocket.
//!
//! The stand-in is a wrapper script: it first runs `agenthost_testkit::FakeCli` (which plays the
//! provider's handshake and takes the user message, so the turn is running), then — on its first
//! start only — does the fault itself: it crashes (`SIGKILL`), prints one endless line without a
//! newline, prints bytes that are not UTF-8, or hangs ignoring every signal but `SIGKILL`. Each
//! test checks what a user would notice and what an operator would: the turn ends with a chat
//! error naming the problem (a hang ends by cancelling it: there is deliberately no idle timeout,
//! an agent may think for minutes), the CLI's process is reaped (its `/proc` entry is gone, so no
//! zombie is left) with its whole process group, and the host stays up: the next turn in the same
//! chat completes on a fresh process. Waits poll with a deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agenthost::host::{HostOptions, bind};
use agenthost_client::{ChatView, HostConnection};
use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::ActionEnvelope;
use agenthost_provider_claude::ClaudeConfig;
use agenthost_provider_codex::CodexConfig;
use agenthost_provider_copilot::CopilotConfig;
use agenthost_testkit::{FakeCli, Step};
use ahp::{ClientEventStream, SubscriptionEvent};
use rustix::process::{Pid, test_kill_process_group};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The longest any wait takes before the test fails.
const DEADLINE: Duration = Duration::from_secs(30);

/// Runs the fake CLI (its plan: the handshake and the user message), then, on the first start
/// only, `fault.sh` in this shell. Every start appends its process id (the process group's
/// leader) to `pids`.
const WRAPPER: &str = r#"#!/bin/sh
dir=$(dirname "$0")
echo $$ >> "$dir/pids"
"$dir/fake-cli" "$@" || exit $?
if mkdir "$dir/faulted" 2>/dev/null; then
  . "$dir/fault.sh"
fi
"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    Claude,
    Codex,
    Copilot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Killed by a signal mid-turn.
    Crash,
    /// One line (for Copilot: one frame header) that never ends: gigabytes without a newline.
    EndlessLine,
    /// Bytes that are not UTF-8 where the next message should be; then the CLI waits.
    InvalidUtf8,
    /// Silent and deaf to everything but `SIGKILL`.
    Hang,
}

impl Agent {
    fn provider(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
        }
    }

    /// The first start: the handshake, the user message taken and some output of the turn; the
    /// fault follows.
    fn faulty_start(self) -> Vec<Step> {
        match self {
            Agent::Claude => vec![
                Step::Ack,
                Step::In,
                Step::out(claude_init()),
                Step::out(claude_text("Working on it")),
            ],
            Agent::Codex => {
                let mut plan = codex_handshake("thread-1", "app-turn-1");
                plan.push(Step::out(
                    json!({ "method": "turn/started", "params": {
                        "threadId": "thread-1",
                        "turn": { "id": "app-turn-1", "items": [], "status": "inProgress" }
                    }})
                    .to_string(),
                ));
                plan
            }
            Agent::Copilot => {
                let mut plan = copilot_handshake("s-1", "session-create");
                plan.push(copilot_event(
                    "s-1",
                    "user.message",
                    json!({"content": "do it"}),
                ));
                plan.push(copilot_event(
                    "s-1",
                    "assistant.turn_start",
                    json!({"turnId": "0"}),
                ));
                plan
            }
        }
    }

    /// Every later start: the conversation resumed, one turn that completes, then waiting for
    /// the next message.
    fn healthy_start(self) -> Vec<Step> {
        match self {
            Agent::Claude => vec![
                Step::Ack,
                Step::In,
                Step::out(claude_init()),
                Step::out(claude_text("All good now")),
                Step::out(claude_result()),
                Step::In,
            ],
            Agent::Codex => {
                let mut plan = codex_handshake("thread-1", "app-turn-2");
                plan.push(Step::out(
                    json!({ "method": "turn/completed", "params": {
                        "threadId": "thread-1",
                        "turn": { "id": "app-turn-2", "items": [], "status": "completed",
                                  "error": null, "durationMs": 5 }
                    }})
                    .to_string(),
                ));
                plan.push(Step::In);
                plan
            }
            Agent::Copilot => {
                let mut plan = copilot_handshake("s-1", "session-resume");
                // A real CLI announces the prompt it took before anything of the turn.
                plan.push(copilot_event(
                    "s-1",
                    "user.message",
                    json!({"content": "again"}),
                ));
                plan.push(copilot_event(
                    "s-1",
                    "assistant.turn_start",
                    json!({"turnId": "1"}),
                ));
                plan.push(copilot_event("s-1", "session.idle", json!({})));
                plan.push(Step::FrameIn);
                plan
            }
        }
    }

    /// The shell commands of `fault`, sourced by the wrapper after the fake CLI's plan ended.
    fn fault_script(self, fault: Fault) -> &'static str {
        match (fault, self) {
            (Fault::Crash, _) => {
                "echo 'fatal: segmentation fault in the model client' >&2\nkill -KILL $$\n"
            }
            // Claude and Codex read lines: this one never ends.
            (Fault::EndlessLine, Agent::Claude | Agent::Codex) => {
                "printf '{\"type\":\"assistant\",\"text\":\"'\nexec tr '\\0' 'x' < /dev/zero\n"
            }
            // Copilot reads `Content-Length` frames: a header section that never ends.
            (Fault::EndlessLine, Agent::Copilot) => "exec tr '\\0' 'x' < /dev/zero\n",
            (Fault::InvalidUtf8, Agent::Claude | Agent::Codex) => {
                "printf '\\377\\376\\375 not utf-8 \\300\\n'\nexec sleep 600\n"
            }
            (Fault::InvalidUtf8, Agent::Copilot) => {
                "printf 'Content-Length: 15\\r\\n\\r\\n\\377\\376\\375 not utf-8 \\300'\nexec sleep 600\n"
            }
            (Fault::Hang, _) => "trap '' TERM INT HUP PIPE\nwhile :; do sleep 1; done\n",
        }
    }
}

fn claude_init() -> String {
    json!({ "type": "system", "subtype": "init", "session_id": "cli-1", "model": "m",
            "tools": [], "cwd": "/w" })
    .to_string()
}

fn claude_text(text: &str) -> String {
    json!({ "type": "assistant", "session_id": "cli-1", "parent_tool_use_id": null,
            "message": { "id": "msg-1", "role": "assistant", "model": "m",
                         "content": [{ "type": "text", "text": text }] } })
    .to_string()
}

fn claude_result() -> String {
    json!({ "type": "result", "subtype": "success", "is_error": false, "duration_ms": 12,
            "result": "done", "session_id": "cli-1",
            "usage": { "input_tokens": 10, "output_tokens": 2 } })
    .to_string()
}

/// Initialize, `initialized`, `thread/start` (or `thread/resume`) → `thread`, `turn/start` →
/// `app_turn`.
fn codex_handshake(thread: &str, app_turn: &str) -> Vec<Step> {
    vec![
        Step::Reply(r#"{"userAgent":"fake"}"#.into()),
        Step::In,
        Step::Reply(format!(r#"{{"thread":{{"id":"{thread}"}}}}"#)),
        Step::Reply(format!(
            r#"{{"turn":{{"id":"{app_turn}","status":"inProgress"}}}}"#
        )),
    ]
}

/// `ping`, `session.create` (or `session.resume`) → `session`, `session.send`.
fn copilot_handshake(session: &str, message: &str) -> Vec<Step> {
    vec![
        Step::FrameReply(r#"{"message":"pong: agenthost","protocolVersion":3}"#.into()),
        Step::FrameReply(format!(r#"{{"sessionId":"{session}"}}"#)),
        Step::FrameReply(format!(r#"{{"messageId":"{message}"}}"#)),
    ]
}

fn copilot_event(session: &str, kind: &str, data: Value) -> Step {
    Step::FrameOut(
        json!({"jsonrpc": "2.0", "method": "session.event",
               "params": {"sessionId": session, "event": {"type": kind, "data": data,
               "id": format!("e-{kind}"), "timestamp": "2026-11-30T09:46:30.000Z",
               "parentId": null}}})
        .to_string(),
    )
}

/// The stand-in CLI of one test: the fake CLI and the wrapper in its directory.
struct StandIn {
    cli: FakeCli,
}

impl StandIn {
    fn new(agent: Agent, fault: Fault) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let cli = FakeCli::new().unwrap();
        let wrapper = cli.path("agent");
        std::fs::write(&wrapper, WRAPPER).unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(cli.path("fault.sh"), agent.fault_script(fault)).unwrap();
        cli.plan(1, &agent.faulty_start()).unwrap();
        cli.plan(0, &agent.healthy_start()).unwrap();
        Self { cli }
    }

    fn binary(&self) -> PathBuf {
        self.cli.path("agent")
    }

    /// The process id of every start so far.
    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.cli.path("pids"))
            .unwrap_or_default()
            .lines()
            .map(|line| line.trim().parse().unwrap())
            .collect()
    }

    fn faulted(&self) -> bool {
        self.cli.path("faulted").exists()
    }
}

/// A host serving only `agent`'s provider, configured to launch `stand_in` with short graces.
async fn start_host(agent: Agent, stand_in: &StandIn, work: &Path, data: &Path) -> String {
    let binary = stand_in.binary();
    let env = stand_in.cli.env();
    let grace = Duration::from_millis(300);
    let (mut claude, mut codex, mut copilot) = (None, None, None);
    match agent {
        Agent::Claude => {
            let mut config = ClaudeConfig::new(binary);
            config.cli.env = env;
            config.cli.start_timeout = Duration::from_secs(10);
            config.cli.cancel_grace = grace;
            config.cli.kill_grace = grace;
            claude = Some(config);
        }
        Agent::Codex => {
            let mut config = CodexConfig::new(binary);
            config.cli.env = env;
            config.cli.start_timeout = Duration::from_secs(10);
            config.request_timeout = Duration::from_secs(2);
            config.cli.cancel_grace = grace;
            config.cli.kill_grace = grace;
            codex = Some(config);
        }
        Agent::Copilot => {
            let mut config = CopilotConfig::new(binary);
            config.cli.env = env;
            config.cli.start_timeout = Duration::from_secs(10);
            config.request_timeout = Duration::from_secs(2);
            config.cli.cancel_grace = grace;
            config.cli.kill_grace = grace;
            copilot = Some(config);
        }
    }
    let server = bind(HostOptions {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        providers: vec![agent.provider().into()],
        script: None,
        token: None,
        roots: vec![work.to_owned()],
        launch_kind: LaunchKind::Embedded("agenthost-e2e".into()),
        data_dir: Some(data.to_owned()),
        idle_eviction: None,
        history_retry: None,
        history_backlog: None,
        claude,
        codex,
        copilot,
        acp_agents: Vec::new(),
        unattended: Default::default(),
        enable: Vec::new(),
        prices: None,
        default_budget_usd: None,
        notify: Default::default(),
    })
    .await
    .unwrap();
    let url = server.url();
    tokio::spawn(server.serve(std::future::pending()));
    url
}

async fn poll(what: &str, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + DEADLINE;
    while !check() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reaped: no `/proc` entry (a zombie keeps one until its parent waits for it), and no member of
/// its process group is left.
fn reaped(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
        && test_kill_process_group(Pid::from_raw(pid).unwrap()).is_err()
}

fn action_json(envelope: &ActionEnvelope) -> Value {
    serde_json::to_value(&envelope.action).unwrap()
}

/// Follows the chat until turn `turn` ends; returns the ending action's JSON.
async fn turn_end(events: &mut ClientEventStream, view: &mut ChatView, turn: &str) -> Value {
    loop {
        let event = tokio::time::timeout(DEADLINE, events.recv())
            .await
            .unwrap_or_else(|_| panic!("turn {turn} did not end within {DEADLINE:?}"))
            .expect("the connection closed");
        let SubscriptionEvent::Action(envelope) = event.event else {
            continue;
        };
        if envelope.channel != view.state().resource {
            continue;
        }
        assert!(envelope.rejection_reason.is_none(), "{envelope:?}");
        view.apply(&envelope);
        let action = action_json(&envelope);
        let ends = matches!(
            action["type"].as_str(),
            Some("chat/turnComplete" | "chat/turnCancelled" | "chat/error")
        );
        if ends && action["turnId"] == turn {
            return action;
        }
    }
}

/// One fault, one agent: the turn ends as `expect` says, the CLI is reaped, the next turn
/// completes on a new process.
async fn fault_then_next_turn(agent: Agent, fault: Fault, expect: impl FnOnce(&Value)) {
    let stand_in = StandIn::new(agent, fault);
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap().join("work");
    std::fs::create_dir(&work).unwrap();
    let url = start_host(agent, &stand_in, &work, &dir.path().join("data")).await;

    let client = HostConnection::connect(&url, "faults").await.unwrap();
    let mut events = client.client().events();
    let (_, chat) = client
        .create_session(
            agent.provider(),
            "faulty",
            Some(format!("file://{}", work.display())),
        )
        .await
        .unwrap();
    let (mut view, _subscription) = client.open_chat(&chat).await.unwrap();

    let started = Instant::now();
    client
        .start_turn(&chat, "t1", "do the thing")
        .await
        .unwrap();
    poll("the CLI did its fault", || stand_in.faulted()).await;
    let pid = stand_in.pids()[0];
    if fault == Fault::Hang {
        // Give the hung CLI a moment in its loop, then the user gives up on it.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let elapsed = i64::try_from(started.elapsed().as_millis()).unwrap();
        client.cancel_turn(&chat, "t1", elapsed).await.unwrap();
    }
    let ended = turn_end(&mut events, &mut view, "t1").await;
    expect(&ended);
    poll("the faulty CLI is reaped with its process group", || {
        reaped(pid)
    })
    .await;

    // The host is still serving, and the chat goes on with a fresh CLI.
    client.start_turn(&chat, "t2", "try again").await.unwrap();
    let ended = turn_end(&mut events, &mut view, "t2").await;
    assert_eq!(ended["type"], "chat/turnComplete", "{ended}");
    let pids = stand_in.pids();
    assert_eq!(pids.len(), 2, "one new process for the next turn: {pids:?}");
    assert_ne!(pids[1], pid);
    let sessions = client.list_sessions().await.unwrap();
    assert_eq!(sessions.items.len(), 1);
    client.close().await;
}

/// The `errorType` and `message` of a `chat/error`.
fn chat_error(ended: &Value) -> (String, String) {
    assert_eq!(
        ended["type"], "chat/error",
        "the turn ended otherwise: {ended}"
    );
    let error = &ended["part"]["error"];
    (
        error["errorType"].as_str().unwrap_or_default().to_owned(),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

fn crashed(ended: &Value) {
    let (error_type, message) = chat_error(ended);
    assert_eq!(error_type, "providerExited", "{message}");
    assert!(
        message.contains("segmentation fault"),
        "the stderr tail: {message}"
    );
    assert!(
        message.contains("signal: 9") || message.contains("SIGKILL"),
        "the signal: {message}"
    );
}

fn endless_line_refused(ended: &Value) {
    let (error_type, message) = chat_error(ended);
    assert!(
        message.contains("longer than"),
        "the error names the over-long line ({error_type}): {message}"
    );
    // The message quotes at most a snippet, not the line.
    assert!(message.len() < 64 * 1024, "{} bytes", message.len());
}

fn invalid_utf8_refused(ended: &Value) {
    let (error_type, message) = chat_error(ended);
    assert_eq!(error_type, "providerProtocol", "{message}");
    assert!(
        message.contains("not utf-8"),
        "the bytes are quoted: {message}"
    );
}

fn cancelled(ended: &Value) {
    assert_eq!(ended["type"], "chat/turnCancelled", "{ended}");
}

macro_rules! fault_tests {
    ($($name:ident: $agent:expr, $fault:expr, $expect:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            fault_then_next_turn($agent, $fault, $expect).await;
        }
    )*};
}

fault_tests! {
    claude_crash_mid_turn_is_a_chat_error_and_the_next_turn_works: Agent::Claude, Fault::Crash, crashed;
    codex_crash_mid_turn_is_a_chat_error_and_the_next_turn_works: Agent::Codex, Fault::Crash, crashed;
    copilot_crash_mid_turn_is_a_chat_error_and_the_next_turn_works: Agent::Copilot, Fault::Crash, crashed;
    claude_endless_line_is_a_chat_error_not_unbounded_reading: Agent::Claude, Fault::EndlessLine, endless_line_refused;
    codex_endless_line_is_a_chat_error_not_unbounded_reading: Agent::Codex, Fault::EndlessLine, endless_line_refused;
    copilot_endless_header_is_a_chat_error_not_unbounded_reading: Agent::Copilot, Fault::EndlessLine, endless_line_refused;
    claude_invalid_utf8_is_a_chat_error: Agent::Claude, Fault::InvalidUtf8, invalid_utf8_refused;
    codex_invalid_utf8_is_a_chat_error: Agent::Codex, Fault::InvalidUtf8, invalid_utf8_refused;
    copilot_invalid_utf8_is_a_chat_error: Agent::Copilot, Fault::InvalidUtf8, invalid_utf8_refused;
    claude_hang_ends_by_cancel_and_the_cli_is_killed: Agent::Claude, Fault::Hang, cancelled;
    codex_hang_ends_by_cancel_and_the_cli_is_killed: Agent::Codex, Fault::Hang, cancelled;
    copilot_hang_ends_by_cancel_and_the_cli_is_killed: Agent::Copilot, Fault::Hang, cancelled;
}

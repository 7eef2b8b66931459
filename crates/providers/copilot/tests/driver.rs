//! The process driver against a stand-in CLI (`agenthost_testkit::FakeCli`, a POSIX shell script
//! that plays a plan of `Content-Length` frames, answers requests and logs what the driver
//! writes): start failures, hangs, bad framing, crashes, the permission round trip, unknown
//! server requests, abort and kill on cancel, session resume, dispose. Waits across the process
//! boundary poll with a deadline; every timeout of the driver is set short here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agenthost_protocol::{ChatUri, SafeId, SessionUri, StateAction};
use agenthost_provider_api::testing::{SignalLog, action, start_request, turn_request};
use agenthost_provider_api::{
    PermissionDecision, Provider, ProviderError, ProviderSession, SignalSink, StartSession,
    TurnRequest, signal_channel,
};
use agenthost_provider_copilot::{CopilotConfig, CopilotProvider, CopilotSession};
use agenthost_testkit::{FakeCli, Step};
use rustix::process::{Pid, test_kill_process_group};
use serde_json::{Value, json};

/// The longest any wait here takes before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

fn fixture(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// The stand-in CLI with launch settings that make every wait short.
struct Fake {
    cli: FakeCli,
}

impl Fake {
    fn new() -> Self {
        Self {
            cli: FakeCli::new().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.cli.path(name)
    }

    fn plan(&self, start: usize, steps: &[Step]) {
        self.cli.plan(start, steps).unwrap();
    }

    fn config(&self) -> CopilotConfig {
        let mut config = CopilotConfig::new(self.cli.binary());
        config.cli.env = self.cli.env();
        config.cli.start_timeout = Duration::from_secs(10);
        config.request_timeout = Duration::from_secs(10);
        config.cli.cancel_grace = Duration::from_secs(5);
        config.cli.kill_grace = Duration::from_millis(500);
        config
    }

    fn written(&self) -> Vec<Value> {
        self.cli.written()
    }

    fn starts(&self) -> Vec<String> {
        self.cli.starts()
    }

    fn pid(&self) -> Option<Pid> {
        self.cli.pid().and_then(Pid::from_raw)
    }
}

fn out(line: &str) -> Step {
    Step::FrameOut(line.to_owned())
}

/// A conversation under test and the signals it sent.
struct Chat {
    session: CopilotSession,
    log: SignalLog,
    _work: tempfile::TempDir,
}

impl std::ops::Deref for Chat {
    type Target = SignalLog;
    fn deref(&self) -> &SignalLog {
        &self.log
    }
}

impl std::ops::DerefMut for Chat {
    fn deref_mut(&mut self) -> &mut SignalLog {
        &mut self.log
    }
}

fn start(config: CopilotConfig) -> Chat {
    let provider = CopilotProvider::new(config).unwrap();
    let work = tempfile::tempdir().unwrap();
    let (request, rx) = start_request(work.path());
    Chat {
        session: provider.start(request),
        log: SignalLog::new(rx, DEADLINE),
        _work: work,
    }
}

fn turn(id: &str) -> TurnRequest {
    turn_request(id, "Create out.txt containing hi")
}

async fn poll(what: &str, check: impl FnMut() -> bool) {
    agenthost_provider_api::testing::poll(what, DEADLINE, check).await;
}

fn group_gone(pid: Pid) -> bool {
    test_kill_process_group(pid).is_err()
}

/// A captured `copilot --headless` transcript split for a plan: the Copilot session id, the
/// messages after the `session.send` response up to and including the `permission.requested`
/// event, and the messages after it (responses to the host's own requests left out: the fake
/// answers those itself).
struct Transcript {
    session: String,
    before: Vec<String>,
    after: Vec<String>,
}

fn transcript(name: &str) -> Transcript {
    let lines = fixture(name);
    let json: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let session = json
        .iter()
        .find(|l| l["id"] == 2)
        .and_then(|l| l["result"]["sessionId"].as_str())
        .unwrap()
        .to_owned();
    let sent = json.iter().position(|l| l["id"] == 3).unwrap();
    let ask = json
        .iter()
        .position(|l| l["params"]["event"]["type"] == "permission.requested")
        .unwrap();
    let is_response = |l: &Value| l.get("id").is_some() && l.get("method").is_none();
    let keep = |range: std::ops::Range<usize>| -> Vec<String> {
        range
            .filter(|&i| !is_response(&json[i]))
            .map(|i| lines[i].clone())
            .collect()
    };
    Transcript {
        session,
        before: keep(sent + 1..ask + 1),
        after: keep(ask + 1..lines.len()),
    }
}

/// `ping`, `session.create` → `session`, `session.send`.
fn handshake(session: &str) -> Vec<Step> {
    vec![
        Step::FrameReply(r#"{"message":"pong: agenthost","protocolVersion":3}"#.into()),
        Step::FrameReply(format!(r#"{{"sessionId":"{session}"}}"#)),
        Step::FrameReply(r#"{"messageId":"m1"}"#.into()),
    ]
}

fn event(session: &str, kind: &str, data: Value) -> Step {
    Step::FrameOut(
        json!({"jsonrpc": "2.0", "method": "session.event",
               "params": {"sessionId": session, "event": {"type": kind, "data": data,
               "id": format!("e-{kind}"), "timestamp": "2026-11-30T09:46:30.000Z", "parentId": null}}})
        .to_string(),
    )
}

fn permission_plan(name: &str) -> (Transcript, Vec<Step>) {
    let t = transcript(name);
    let mut plan = handshake(&t.session);
    plan.extend(t.before.iter().map(|l| out(l)));
    plan.push(Step::FrameReply(r#"{"success":true}"#.into()));
    plan.extend(t.after.iter().map(|l| out(l)));
    plan.push(Step::FrameIn);
    (t, plan)
}

#[tokio::test]
async fn a_missing_binary_is_a_start_failure_naming_it() {
    let fake = Fake::new();
    let mut config = fake.config();
    config.cli.binary = fake.path("no-such-copilot");
    let chat = start(config);
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::StartFailed { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("no-such-copilot"), "{error}");
}

#[tokio::test]
async fn a_cli_exiting_before_it_answers_reports_its_stderr() {
    let fake = Fake::new();
    fake.plan(
        0,
        &[
            Step::Err("Offline mode requires a local model provider.".into()),
            Step::Exit(1),
        ],
    );
    let chat = start(fake.config());
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::StartFailed { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("Offline mode requires"),
        "{error}"
    );
}

#[tokio::test]
async fn a_cli_hanging_on_start_times_out_and_its_group_is_killed() {
    let fake = Fake::new();
    fake.plan(0, &[Step::Err("warming up".into()), Step::Sleep(30)]);
    let mut config = fake.config();
    config.cli.start_timeout = Duration::from_millis(300);
    let chat = start(config);
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("within 300 ms"), "{text}");
    assert!(
        text.contains("warming up"),
        "the stderr tail is quoted: {text}"
    );
    let pid = fake.pid().unwrap();
    poll("the process group is gone", || group_gone(pid)).await;
}

#[tokio::test]
async fn broken_framing_fails_the_turn_and_stops_the_process() {
    let fake = Fake::new();
    let mut plan = handshake("s-1");
    // Not a frame at all: a header section that never ends.
    plan.extend([Step::out("<html>".repeat(4000)), Step::Sleep(30)]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let (error_type, message) = chat.chat_error().await;
    assert_eq!(error_type, "providerProtocol");
    assert!(message.contains("framing"), "{message}");
    let pid = fake.pid().unwrap();
    poll("the process group is gone", || group_gone(pid)).await;
}

#[tokio::test]
async fn a_frame_that_is_not_json_fails_the_turn_with_the_stderr_tail() {
    let fake = Fake::new();
    let mut plan = handshake("s-1");
    plan.extend([
        Step::Err("copilot-stderr: token refresh failed 4711".into()),
        // The stderr reader gets ahead of the garbage frame (the tail is read without waiting
        // while the process still runs).
        Step::Sleep(1),
        Step::FrameOut("<html>not json</html>".into()),
        Step::Sleep(30),
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let (error_type, message) = chat.chat_error().await;
    assert_eq!(error_type, "providerProtocol");
    assert!(message.contains("<html>"), "{message}");
    assert!(
        message.contains("copilot-stderr: token refresh failed 4711"),
        "the stderr tail is quoted: {message}"
    );
    let pid = fake.pid().unwrap();
    poll("the process group is gone", || group_gone(pid)).await;
    assert_eq!(chat.session.process_id(), None);
}

#[tokio::test]
async fn a_cli_dying_mid_turn_is_a_chat_error_with_the_stderr_tail() {
    let fake = Fake::new();
    let mut plan = handshake("s-1");
    plan.extend([
        Step::Err("FATAL: heap out of memory".into()),
        Step::Exit(134),
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let (error_type, message) = chat.chat_error().await;
    assert_eq!(error_type, "providerExited");
    assert!(message.contains("heap out of memory"), "{message}");
}

#[tokio::test]
async fn an_approval_goes_back_as_approve_once() {
    let fake = Fake::new();
    let (t, plan) = permission_plan("fixtures/sdk-approve.stdout.jsonl");
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let tool = chat.pending_confirmation().await;
    chat.session
        .respond_to_permission(&tool, PermissionDecision::Approve)
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    let written = fake.written();
    assert_eq!(written[0]["method"], "ping");
    assert_eq!(written[0]["jsonrpc"], "2.0");
    assert_eq!(written[1]["method"], "session.create");
    assert_eq!(written[1]["params"]["requestPermission"], true);
    assert_eq!(written[1]["params"]["streaming"], true);
    assert_eq!(written[2]["method"], "session.send");
    assert_eq!(written[2]["params"]["sessionId"], t.session.as_str());
    assert_eq!(
        written[2]["params"]["prompt"],
        "Create out.txt containing hi"
    );
    let answer = &written[3];
    assert_eq!(
        answer["method"],
        "session.permissions.handlePendingPermissionRequest"
    );
    assert_eq!(answer["params"]["result"]["kind"], "approve-once");
    let asked: Value = serde_json::from_str(t.before.last().unwrap()).unwrap();
    assert_eq!(
        answer["params"]["requestId"],
        asked["params"]["event"]["data"]["requestId"]
    );
    assert_eq!(
        chat.session.resume_handle(),
        Some(json!({"sessionId": t.session}))
    );
}

#[tokio::test]
async fn a_rejection_goes_back_with_the_feedback() {
    let fake = Fake::new();
    let (_, plan) = permission_plan("fixtures/sdk-reject.stdout.jsonl");
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let tool = chat.pending_confirmation().await;
    chat.session
        .respond_to_permission(
            &tool,
            PermissionDecision::Deny {
                reason: Some("not this one".into()),
            },
        )
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    let result = &fake.written()[3]["params"]["result"];
    assert_eq!(result["kind"], "reject");
    assert_eq!(result["feedback"], "not this one");
}

#[tokio::test]
async fn server_requests_the_host_does_not_know_get_method_not_found() {
    let fake = Fake::new();
    let mut plan = handshake("s-1");
    plan.push(Step::FrameOut(
        r#"{"jsonrpc":"2.0","id":"q-9","method":"userInput.request","params":{}}"#.into(),
    ));
    plan.push(Step::FrameIn);
    plan.push(Step::Sleep(30));
    fake.plan(0, &plan);
    let chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    poll("the driver answers q-9", || fake.written().len() >= 4).await;
    let answer = &fake.written()[3];
    assert_eq!(answer["id"], "q-9");
    assert_eq!(answer["error"]["code"], -32601);
    chat.session.dispose().await;
}

#[tokio::test]
async fn cancel_aborts_and_the_conversation_goes_on_in_the_same_process() {
    let fake = Fake::new();
    let mut plan = handshake("s-1");
    plan.push(event("s-1", "assistant.turn_start", json!({"turnId": "0"})));
    plan.push(Step::FrameReply(r#"{"success":true}"#.into())); // session.abort
    plan.push(event("s-1", "abort", json!({"reason": "user_initiated"})));
    plan.push(event("s-1", "session.idle", json!({"aborted": true})));
    plan.push(Step::FrameReply(r#"{"messageId":"m2"}"#.into())); // the next session.send
    plan.push(event("s-1", "assistant.turn_start", json!({"turnId": "0"})));
    plan.push(event("s-1", "session.idle", json!({})));
    plan.push(Step::FrameIn);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    chat.session.cancel("t1").await.unwrap();
    chat.until(
        "chat/turnCancelled",
        |s| matches!(action(s), Some(StateAction::ChatTurnCancelled(c)) if c.turn_id == "t1"),
    )
    .await;
    let written = fake.written();
    assert_eq!(written[3]["method"], "session.abort");
    assert_eq!(written[3]["params"]["sessionId"], "s-1");
    assert_eq!(fake.starts().len(), 1);
    chat.session.send_turn(turn("t2")).await.unwrap();
    chat.turn_complete("t2").await;
}

#[tokio::test]
async fn cancel_replaces_a_cli_whose_tools_outlive_the_abort_and_the_session_resumes() {
    let fake = Fake::new();
    let mut first = handshake("s-1");
    first.push(Step::FrameReply(r#"{"success":true}"#.into())); // session.abort
    first.push(event(
        "s-1",
        "agent.interrupted",
        json!({"activity": "tool_call", "toolCallIds": ["call_1"]}),
    ));
    first.push(event("s-1", "session.idle", json!({"aborted": true})));
    first.push(Step::Sleep(30));
    fake.plan(1, &first);
    let second = vec![
        Step::FrameReply(r#"{"message":"pong"}"#.into()),
        Step::FrameReply(r#"{"sessionId":"s-1"}"#.into()), // session.resume
        Step::FrameReply(r#"{"messageId":"m2"}"#.into()),
        event("s-1", "session.idle", json!({})),
        Step::FrameIn,
    ];
    fake.plan(2, &second);
    fake.plan(0, &[Step::Exit(9)]);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let pid = fake.pid().unwrap();
    chat.session.cancel("t1").await.unwrap();
    poll("the first process group is gone", || group_gone(pid)).await;
    chat.session.send_turn(turn("t2")).await.unwrap();
    chat.turn_complete("t2").await;
    assert_eq!(fake.starts().len(), 2);
    let resumed = fake
        .written()
        .into_iter()
        .find(|w| w["method"] == "session.resume")
        .expect("the second process resumes the session");
    assert_eq!(resumed["params"]["sessionId"], "s-1");
}

#[tokio::test]
async fn dispose_terminates_the_whole_process_group() {
    let fake = Fake::new();
    let mut plan = handshake("s-1");
    plan.push(Step::Sleep(60));
    fake.plan(0, &plan);
    let chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let pid = fake.pid().unwrap();
    assert!(!group_gone(pid));
    chat.session.dispose().await;
    poll("the process group is gone", || group_gone(pid)).await;
    let error = chat.session.send_turn(turn("t2")).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::NotRunning { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_hostile_resume_handle_is_refused() {
    let fake = Fake::new();
    let provider = CopilotProvider::new(fake.config()).unwrap();
    let (tx, _rx) = signal_channel(4);
    let session = SessionUri::canonical(SafeId::new("s1").unwrap());
    let chat = ChatUri::default_for(&session);
    let start = StartSession {
        signals: SignalSink::new(chat.clone(), tx),
        session,
        chat,
        working_directory: std::env::temp_dir(),
        model: None,
    };
    for handle in [
        json!({"sessionId": "x\ny"}),
        json!({}),
        json!({"sessionId": ["a"]}),
    ] {
        let restored = provider
            .restore_session(agenthost_provider_api::RestoreSession {
                start: start.clone(),
                resume_handle: handle.clone(),
                history: Vec::new(),
            })
            .await;
        assert!(
            matches!(restored, Err(ProviderError::StartFailed { .. })),
            "{handle} was accepted"
        );
    }
}

#[tokio::test]
async fn a_rejection_without_a_reason_still_tells_the_agent_why() {
    let fake = Fake::new();
    let (_, plan) = permission_plan("fixtures/sdk-reject.stdout.jsonl");
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let tool = chat.pending_confirmation().await;
    chat.session
        .respond_to_permission(&tool, PermissionDecision::Deny { reason: None })
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    let result = &fake.written()[3]["params"]["result"];
    assert_eq!(result["kind"], "reject");
    // Copilot calls the model again only when a rejection carries feedback.
    assert_eq!(
        result["feedback"],
        agenthost_provider_copilot::DECLINED_MESSAGE
    );
}

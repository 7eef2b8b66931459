//! The process driver against a stand-in app-server (`agenthost_testkit::FakeCli`, a POSIX
//! shell script that plays a plan of output lines, answers requests and logs what the driver writes):
//! start failures, hangs, garbage, crashes, the approval, permissions and input round trips,
//! unknown server requests, interrupt and kill on cancel, thread resume, dispose. Waits across the
//! process boundary poll with a deadline; every timeout of the driver is set short here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agenthost_protocol::state::{ChatInputRequest, ChatInputResponseKind};
use agenthost_protocol::{AgentSignal, ChatUri, SafeId, SessionUri, StateAction};
use agenthost_provider_api::testing::{SignalLog, action, start_request, turn_request};
use agenthost_provider_api::{
    InputResponse, PermissionDecision, Provider, ProviderError, ProviderSession, SignalSink,
    StartSession, TurnRequest, signal_channel,
};
use agenthost_provider_codex::{CodexConfig, CodexProvider, CodexSession};
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

    fn config(&self) -> CodexConfig {
        let mut config = CodexConfig::new(self.cli.binary());
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
    Step::out(line)
}

/// A conversation under test and the signals it sent.
struct Chat {
    session: CodexSession,
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

fn start(config: CodexConfig) -> Chat {
    let provider = CodexProvider::new(config).unwrap();
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

/// The transcript `name` split for a plan: the thread and turn ids Codex gave, and the lines
/// after the `turn/start` response up to and including the first line `stop` picks, and after.
struct Transcript {
    thread: String,
    app_turn: String,
    before: Vec<String>,
    after: Vec<String>,
}

fn transcript(name: &str, stop: &str) -> Transcript {
    let lines = fixture(name);
    let json: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let thread = json[3]["result"]["thread"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let started = json.iter().position(|l| l["id"] == 3).unwrap();
    let app_turn = json[started]["result"]["turn"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let split = lines.iter().position(|l| l.contains(stop)).unwrap();
    Transcript {
        thread,
        app_turn,
        before: lines[started + 1..=split].to_vec(),
        after: lines[split + 1..].to_vec(),
    }
}

/// Initialize, `initialized`, `thread/start` → `thread`, `turn/start` → `app_turn`.
fn handshake(thread: &str, app_turn: &str) -> Vec<Step> {
    vec![
        Step::Reply(r#"{"userAgent":"fake"}"#.into()),
        Step::In,
        Step::Reply(format!(r#"{{"thread":{{"id":"{thread}"}}}}"#)),
        Step::Reply(format!(
            r#"{{"turn":{{"id":"{app_turn}","status":"inProgress"}}}}"#
        )),
    ]
}

fn approval_plan() -> (Transcript, Vec<Step>) {
    let t = transcript(
        "fixtures/appserver-escalate-accept.stdout.jsonl",
        "item/commandExecution/requestApproval",
    );
    let mut plan = handshake(&t.thread, &t.app_turn);
    plan.extend(t.before.iter().map(|l| out(l)));
    plan.push(Step::In);
    plan.extend(t.after.iter().map(|l| out(l)));
    plan.push(Step::In);
    (t, plan)
}

#[tokio::test]
async fn a_missing_binary_is_a_start_failure_naming_it() {
    let fake = Fake::new();
    let mut config = fake.config();
    config.cli.binary = fake.path("no-such-codex");
    let chat = start(config);
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::StartFailed { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("no-such-codex"), "{error}");
}

#[tokio::test]
async fn an_app_server_exiting_before_it_answers_reports_its_stderr() {
    let fake = Fake::new();
    fake.plan(
        0,
        &[
            Step::Err("error: unknown feature `apps`".into()),
            Step::Exit(2),
        ],
    );
    let chat = start(fake.config());
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::StartFailed { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("unknown feature `apps`"),
        "{error}"
    );
}

#[tokio::test]
async fn an_app_server_hanging_on_start_times_out_and_its_group_is_killed() {
    let fake = Fake::new();
    fake.plan(0, &[Step::Err("loading".into()), Step::Sleep(30)]);
    let mut config = fake.config();
    config.cli.start_timeout = Duration::from_millis(300);
    let chat = start(config);
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("within 300 ms"), "{text}");
    assert!(
        text.contains("loading"),
        "the stderr tail is quoted: {text}"
    );
    let pid = fake.pid().unwrap();
    poll("the process group is gone", || group_gone(pid)).await;
}

#[tokio::test]
async fn garbage_on_stdout_fails_the_turn_and_stops_the_process() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.extend([
        Step::Err("codex-stderr: proxy said 502 at 4711".into()),
        // The stderr reader gets ahead of the garbage line (the tail is read without waiting
        // while the process still runs).
        Step::Sleep(1),
        Step::out("<html>not json</html>"),
        Step::Sleep(30),
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let (error_type, message) = chat.chat_error().await;
    assert_eq!(error_type, "providerProtocol");
    assert!(message.contains("<html>"), "{message}");
    assert!(
        message.contains("codex-stderr: proxy said 502 at 4711"),
        "the stderr tail is quoted: {message}"
    );
    let pid = fake.pid().unwrap();
    poll("the process group is gone", || group_gone(pid)).await;
}

#[tokio::test]
async fn an_app_server_dying_mid_turn_is_a_chat_error_with_the_stderr_tail() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.extend([
        Step::Err("thread panicked: out of memory".into()),
        Step::Exit(101),
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let (error_type, message) = chat.chat_error().await;
    assert_eq!(error_type, "providerExited");
    assert!(message.contains("out of memory"), "{message}");
    assert!(message.contains("101"), "{message}");
}

#[tokio::test]
async fn a_refused_turn_start_is_an_error_of_send_turn() {
    let fake = Fake::new();
    fake.plan(
        0,
        &[
            Step::Reply(r#"{"userAgent":"fake"}"#.into()),
            Step::In,
            Step::Reply(r#"{"thread":{"id":"thread-1"}}"#.into()),
            Step::In,
            Step::out(r#"{"id":3,"error":{"code":-32600,"message":"model gpt-9 does not exist"}}"#),
            Step::In,
        ],
    );
    let chat = start(fake.config());
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    assert!(
        error.to_string().contains("model gpt-9 does not exist"),
        "{error}"
    );
    // The conversation is idle again, not stuck in the refused turn.
    let again = chat.session.send_turn(turn("t2")).await;
    assert!(
        !matches!(&again, Err(e) if e.to_string().contains("still running")),
        "{again:?}"
    );
    chat.session.dispose().await;
}

#[tokio::test]
async fn an_approval_goes_back_as_accept_for_the_request() {
    let fake = Fake::new();
    let (t, plan) = approval_plan();
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
    assert_eq!(written[0]["method"], "initialize");
    assert_eq!(written[0]["params"]["clientInfo"]["name"], "agenthost");
    assert!(
        written[0].get("jsonrpc").is_none(),
        "no jsonrpc field: {}",
        written[0]
    );
    assert_eq!(written[1]["method"], "initialized");
    assert_eq!(written[2]["method"], "thread/start");
    assert_eq!(written[2]["params"]["approvalPolicy"], "on-request");
    assert_eq!(written[2]["params"]["sandbox"], "workspace-write");
    assert_eq!(written[3]["method"], "turn/start");
    assert_eq!(written[3]["params"]["threadId"], t.thread.as_str());
    assert_eq!(
        written[3]["params"]["input"][0]["text"],
        "Create out.txt containing hi"
    );
    let asked: Value = serde_json::from_str(t.before.last().unwrap()).unwrap();
    assert_eq!(
        written[4],
        json!({"id": asked["id"], "result": {"decision": "accept"}})
    );
    assert_eq!(
        chat.session.resume_handle(),
        Some(json!({"threadId": t.thread}))
    );
}

#[tokio::test]
async fn a_decline_goes_back_and_the_command_completes_as_denied() {
    let fake = Fake::new();
    let t = transcript(
        "fixtures/appserver-escalate-decline.stdout.jsonl",
        "item/commandExecution/requestApproval",
    );
    let mut plan = handshake(&t.thread, &t.app_turn);
    plan.extend(t.before.iter().map(|l| out(l)));
    plan.push(Step::In);
    plan.extend(t.after.iter().map(|l| out(l)));
    plan.push(Step::In);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let tool = chat.pending_confirmation().await;
    chat.session
        .respond_to_permission(&tool, PermissionDecision::Deny { reason: None })
        .await
        .unwrap();
    let done = chat
        .until("the tool's completion", |s| {
            matches!(action(s), Some(StateAction::ChatToolCallComplete(_)))
        })
        .await;
    let Some(StateAction::ChatToolCallComplete(done)) = action(&done) else {
        unreachable!()
    };
    assert!(!done.result.success);
    let error = serde_json::to_value(&done.result.error).unwrap();
    assert_eq!(error["code"], "denied", "{error}");
    chat.turn_complete("t1").await;
    assert_eq!(fake.written()[4]["result"]["decision"], "decline");
}

#[tokio::test]
async fn a_permissions_request_is_confirmed_and_goes_back_as_the_permissions_for_the_turn() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.push(Step::out(
        r#"{"method":"item/permissions/requestApproval","id":7,"params":{"threadId":"thread-1","turnId":"app-turn-1","reason":"Fetch the crate index","permissions":{"network":{"enabled":true}}}}"#,
    ));
    plan.push(Step::In);
    plan.push(Step::out(
        r#"{"method":"turn/completed","params":{"threadId":"thread-1","turn":{"id":"app-turn-1","items":[],"status":"completed","error":null,"durationMs":5}}}"#,
    ));
    plan.push(Step::In);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let asked = chat
        .until("a pending confirmation", |s| {
            matches!(s, AgentSignal::PendingConfirmation(_))
        })
        .await;
    let AgentSignal::PendingConfirmation(pending) = asked else {
        unreachable!()
    };
    assert_eq!(pending.permission_kind.as_str(), "permissions");
    assert_eq!(pending.state.tool_call_id, "permissions-7");
    chat.session
        .respond_to_permission("permissions-7", PermissionDecision::Approve)
        .await
        .unwrap();
    let done = chat
        .until("the permissions call's completion", |s| {
            matches!(action(s), Some(StateAction::ChatToolCallComplete(_)))
        })
        .await;
    let Some(StateAction::ChatToolCallComplete(done)) = action(&done) else {
        unreachable!()
    };
    assert_eq!(done.tool_call_id, "permissions-7");
    assert!(done.result.success);
    chat.turn_complete("t1").await;
    assert_eq!(
        fake.written()[4],
        json!({"id": 7, "result": {"permissions": {"network": {"enabled": true}}, "scope": "turn"}})
    );
    chat.session.dispose().await;
}

const USER_INPUT: &str = r#"{"method":"item/tool/requestUserInput","id":9,"params":{"threadId":"thread-1","turnId":"app-turn-1","itemId":"call_ask","questions":[{"id":"color","header":"Color","question":"Which color?","isOther":true,"options":[{"label":"Red","description":"Warm"},{"label":"Blue"}]},{"id":"name","header":"Name","question":"Your name?"}]}}"#;
const ELICITATION: &str = r#"{"method":"mcpServer/elicitation/request","id":10,"params":{"threadId":"thread-1","turnId":"app-turn-1","serverName":"tracker","mode":"form","message":"File the bug?","requestedSchema":{"type":"object","properties":{"count":{"type":"integer"},"urgent":{"type":"boolean"}},"required":["urgent"]}}}"#;
const TURN_COMPLETED: &str = r#"{"method":"turn/completed","params":{"threadId":"thread-1","turn":{"id":"app-turn-1","items":[],"status":"completed","error":null,"durationMs":5}}}"#;

/// The next `chat/inputRequested` request.
async fn input_requested(chat: &mut Chat) -> ChatInputRequest {
    let asked = chat
        .until("chat/inputRequested", |s| {
            matches!(action(s), Some(StateAction::ChatInputRequested(_)))
        })
        .await;
    let Some(StateAction::ChatInputRequested(asked)) = action(&asked) else {
        unreachable!()
    };
    asked.request.clone()
}

fn response(response: ChatInputResponseKind, answers: Value) -> InputResponse {
    InputResponse {
        response,
        answers: serde_json::from_value(answers).unwrap(),
    }
}

#[tokio::test]
async fn a_user_input_request_is_answered_with_the_host_s_answers() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.extend([out(USER_INPUT), Step::In, out(TURN_COMPLETED), Step::In]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let request = input_requested(&mut chat).await;
    assert_eq!(request.id, "input-9");
    assert_eq!(
        serde_json::to_value(&request.questions).unwrap(),
        json!([
            { "kind": "single-select", "id": "color", "title": "Color", "message": "Which color?",
              "options": [{ "id": "Red", "label": "Red", "description": "Warm" },
                          { "id": "Blue", "label": "Blue" }],
              "allowFreeformInput": true },
            { "kind": "text", "id": "name", "title": "Name", "message": "Your name?" },
        ])
    );
    let unknown = chat
        .session
        .respond_to_input(
            "input-99",
            response(ChatInputResponseKind::Accept, json!({})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&unknown, ProviderError::NotRunning { message } if message.contains("input-99")),
        "{unknown:?}"
    );
    let answers = json!({
        "color": { "state": "submitted",
                   "value": { "kind": "selected", "value": "Blue", "freeformValues": ["navy"] } },
        "name": { "state": "submitted", "value": { "kind": "text", "value": "Ada" } },
    });
    chat.session
        .respond_to_input("input-9", response(ChatInputResponseKind::Accept, answers))
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    assert_eq!(
        fake.written()[4],
        json!({"id": 9, "result": {"answers": {
            "color": {"answers": ["Blue", "navy"]}, "name": {"answers": ["Ada"]}
        }}})
    );
    // Answered once: the request is no longer waiting.
    let again = chat
        .session
        .respond_to_input(
            "input-9",
            response(ChatInputResponseKind::Accept, json!({})),
        )
        .await;
    assert!(
        matches!(again, Err(ProviderError::NotRunning { .. })),
        "{again:?}"
    );
    chat.session.dispose().await;
}

#[tokio::test]
async fn declined_input_requests_get_empty_answers_and_a_decline() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.extend([
        out(USER_INPUT),
        Step::In,
        out(ELICITATION),
        Step::In,
        out(TURN_COMPLETED),
        Step::In,
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let asked = input_requested(&mut chat).await;
    chat.session
        .respond_to_input(
            &asked.id,
            response(ChatInputResponseKind::Decline, json!({})),
        )
        .await
        .unwrap();
    let elicited = input_requested(&mut chat).await;
    assert_eq!(elicited.id, "input-10");
    assert_eq!(elicited.message.as_deref(), Some("File the bug?"));
    assert_eq!(elicited.questions.as_ref().map(Vec::len), Some(2));
    chat.session
        .respond_to_input(
            &elicited.id,
            response(ChatInputResponseKind::Decline, json!({})),
        )
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    let written = fake.written();
    assert_eq!(
        written[4],
        json!({"id": 9, "result": {"answers": {"color": {"answers": []}, "name": {"answers": []}}}})
    );
    assert_eq!(
        written[5],
        json!({"id": 10, "result": {"action": "decline"}})
    );
    chat.session.dispose().await;
}

#[tokio::test]
async fn an_accepted_elicitation_sends_typed_content() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.extend([out(ELICITATION), Step::In, out(TURN_COMPLETED), Step::In]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let elicited = input_requested(&mut chat).await;
    let answers = json!({
        "count": { "state": "submitted", "value": { "kind": "number", "value": 4.0 } },
        "urgent": { "state": "submitted", "value": { "kind": "boolean", "value": true } },
    });
    chat.session
        .respond_to_input(
            &elicited.id,
            response(ChatInputResponseKind::Accept, answers),
        )
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    assert_eq!(
        fake.written()[4],
        json!({"id": 10, "result": {"action": "accept", "content": {"count": 4, "urgent": true}}})
    );
    chat.session.dispose().await;
}

#[tokio::test]
async fn input_requests_still_waiting_when_the_turn_ends_are_cancelled() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.extend([
        out(USER_INPUT),
        out(ELICITATION),
        out(TURN_COMPLETED),
        Step::In,
        Step::In,
        Step::Sleep(30),
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    chat.turn_complete("t1").await;
    poll("both requests are answered", || fake.written().len() >= 6).await;
    let written = fake.written();
    let answer = |id: u64| {
        written
            .iter()
            .find(|w| w["id"] == id && w.get("result").is_some())
            .unwrap_or_else(|| panic!("no answer to {id}: {written:?}"))
            .clone()
    };
    assert_eq!(
        answer(9),
        json!({"id": 9, "result": {"answers": {"color": {"answers": []}, "name": {"answers": []}}}})
    );
    assert_eq!(
        answer(10),
        json!({"id": 10, "result": {"action": "cancel"}})
    );
    let late = chat
        .session
        .respond_to_input(
            "input-9",
            response(ChatInputResponseKind::Accept, json!({})),
        )
        .await;
    assert!(
        matches!(late, Err(ProviderError::NotRunning { .. })),
        "{late:?}"
    );
    chat.session.dispose().await;
}

#[tokio::test]
async fn cancelling_the_turn_cancels_a_waiting_input_request() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.extend([
        out(ELICITATION),
        Step::In,                    // the cancel answer
        Step::Reply("{}".into()),    // turn/interrupt
        out(r#"{"method":"turn/completed","params":{"threadId":"thread-1","turn":{"id":"app-turn-1","items":[],"status":"interrupted","error":null,"durationMs":5}}}"#),
        Step::Sleep(30),
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    input_requested(&mut chat).await;
    chat.session.cancel("t1").await.unwrap();
    chat.turn_cancelled("t1").await;
    let written = fake.written();
    assert_eq!(
        written[4],
        json!({"id": 10, "result": {"action": "cancel"}})
    );
    assert_eq!(written[5]["method"], "turn/interrupt");
    chat.session.dispose().await;
}

#[tokio::test]
async fn server_requests_the_host_does_not_know_get_method_not_found() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.push(Step::out(
        r#"{"method":"item/tool/teleport","id":41,"params":{"threadId":"thread-1"}}"#,
    ));
    plan.push(Step::In);
    plan.push(Step::Sleep(30));
    fake.plan(0, &plan);
    let chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    poll("the driver answers request 41", || {
        fake.written().len() >= 5
    })
    .await;
    let answer = &fake.written()[4];
    assert_eq!(answer["id"], 41);
    assert_eq!(answer["error"]["code"], -32601);
    chat.session.dispose().await;
}

#[tokio::test]
async fn cancel_interrupts_the_turn_and_the_conversation_goes_on() {
    let fake = Fake::new();
    let lines = fixture("fixtures-driver/appserver-interrupt.stdout.jsonl");
    let json: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let thread = json[3]["result"]["thread"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let at = |pred: &dyn Fn(&Value) -> bool| json.iter().position(pred).unwrap();
    let first = at(&|l| l["id"] == 3);
    let app_turn = json[first]["result"]["turn"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let ask = at(&|l| l["method"] == "item/commandExecution/requestApproval");
    let interrupted = at(&|l| l["id"] == 4);
    let second = at(&|l| l["id"] == 5);
    let mut plan = handshake(&thread, &app_turn);
    plan.extend(lines[first + 1..=ask].iter().map(|l| out(l)));
    plan.push(Step::In); // the approval
    plan.extend(lines[ask + 1..interrupted].iter().map(|l| out(l)));
    plan.push(Step::Reply("{}".into())); // turn/interrupt
    plan.extend(lines[interrupted + 1..second].iter().map(|l| out(l)));
    plan.push(Step::Reply(json[second]["result"].to_string())); // the second turn/start
    plan.extend(lines[second + 1..].iter().map(|l| out(l)));
    plan.push(Step::In);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let tool = chat.pending_confirmation().await;
    chat.session
        .respond_to_permission(&tool, PermissionDecision::Approve)
        .await
        .unwrap();
    chat.session.cancel("t1").await.unwrap();
    chat.until(
        "chat/turnCancelled",
        |s| matches!(action(s), Some(StateAction::ChatTurnCancelled(c)) if c.turn_id == "t1"),
    )
    .await;
    let written = fake.written();
    let interrupt = written
        .iter()
        .find(|w| w["method"] == "turn/interrupt")
        .expect("a turn/interrupt request");
    assert_eq!(interrupt["params"]["threadId"], thread.as_str());
    assert_eq!(interrupt["params"]["turnId"], app_turn.as_str());
    assert_eq!(fake.starts().len(), 1, "the interrupt was enough");
    chat.session.send_turn(turn("t2")).await.unwrap();
    chat.turn_complete("t2").await;
    let cancelled_at = chat
        .seen()
        .iter()
        .position(|s| matches!(action(s), Some(StateAction::ChatTurnCancelled(_))))
        .unwrap();
    for signal in &chat.seen()[cancelled_at + 1..] {
        let json = agenthost_provider_api::signal_json(signal);
        assert_ne!(json["turnId"], "t1", "{json}");
    }
}

#[tokio::test]
async fn cancel_kills_an_app_server_that_does_not_interrupt_and_the_thread_resumes() {
    let fake = Fake::new();
    let (t, _) = approval_plan();
    let mut first = handshake(&t.thread, &t.app_turn);
    first.push(Step::Sleep(30));
    fake.plan(1, &first);
    let second = vec![
        Step::Reply(r#"{"userAgent":"fake"}"#.into()),
        Step::In,
        Step::Reply(format!(r#"{{"thread":{{"id":"{}"}}}}"#, t.thread)),
        Step::Reply(r#"{"turn":{"id":"app-turn-2","status":"inProgress"}}"#.into()),
        Step::out(format!(
            r#"{{"method":"turn/completed","params":{{"threadId":"{}","turn":{{"id":"app-turn-2","items":[],"status":"completed","error":null,"durationMs":5}}}}}}"#,
            t.thread
        )),
        Step::In,
    ];
    fake.plan(2, &second);
    fake.plan(0, &[Step::Exit(9)]);
    let mut config = fake.config();
    config.cli.cancel_grace = Duration::from_millis(300);
    let mut chat = start(config);
    chat.session.send_turn(turn("t1")).await.unwrap();
    let pid = fake.pid().unwrap();
    chat.session.cancel("t1").await.unwrap();
    chat.until("chat/turnCancelled", |s| {
        matches!(action(s), Some(StateAction::ChatTurnCancelled(_)))
    })
    .await;
    poll("the process group is gone", || group_gone(pid)).await;
    chat.session.send_turn(turn("t2")).await.unwrap();
    chat.turn_complete("t2").await;
    assert_eq!(fake.starts().len(), 2);
    let resumed = fake
        .written()
        .into_iter()
        .find(|w| w["method"] == "thread/resume")
        .expect("the second process resumes the thread");
    assert_eq!(resumed["params"]["threadId"], t.thread.as_str());
}

#[tokio::test]
async fn dispose_terminates_the_whole_process_group() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
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
    let provider = CodexProvider::new(fake.config()).unwrap();
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
        json!({"threadId": "../../etc"}),
        json!({}),
        json!({"threadId": 7}),
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

/// The bytes of the image attachment, and them in base64.
const IMAGE: &[u8] = b"\x89PNG fake image bytes";
const IMAGE_BASE64: &str = "iVBORyBmYWtlIGltYWdlIGJ5dGVz";

/// A turn with one embedded image, which the driver writes to a file for Codex.
fn image_turn(id: &str) -> TurnRequest {
    let mut request = turn(id);
    request.attachments = serde_json::from_value(json!([
        { "type": "embeddedResource", "label": "shot.png", "data": IMAGE_BASE64,
          "contentType": "image/png" },
    ]))
    .unwrap();
    request
}

/// The `localImage` paths of the `turn/start` the driver sent.
fn sent_images(fake: &Fake) -> Vec<PathBuf> {
    let written = fake.written();
    let start = written
        .iter()
        .find(|w| w["method"] == "turn/start")
        .unwrap_or_else(|| panic!("no turn/start: {written:?}"));
    start["params"]["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "localImage")
        .map(|item| PathBuf::from(item["path"].as_str().unwrap()))
        .collect()
}

/// The one image of the running turn, checked to be on disk with the attachment's bytes.
fn image_on_disk(fake: &Fake) -> PathBuf {
    let images = sent_images(fake);
    assert_eq!(images.len(), 1, "{images:?}");
    assert_eq!(std::fs::read(&images[0]).unwrap(), IMAGE, "{images:?}");
    images[0].clone()
}

#[tokio::test]
async fn an_image_file_lives_while_its_turn_runs_and_is_removed_when_it_completes() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.extend([
        out(r#"{"method":"item/permissions/requestApproval","id":7,"params":{"threadId":"thread-1","turnId":"app-turn-1","reason":"Look at the image","permissions":{"network":{"enabled":true}}}}"#),
        Step::In,
        out(TURN_COMPLETED),
        Step::In,
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(image_turn("t1")).await.unwrap();
    let image = image_on_disk(&fake);
    // Codex reads the file whenever it likes during the turn: it stays while the turn waits.
    chat.pending_confirmation().await;
    assert!(image.exists(), "{}", image.display());
    chat.session
        .respond_to_permission("permissions-7", PermissionDecision::Approve)
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    assert!(!image.exists(), "{} outlived its turn", image.display());
    chat.session.dispose().await;
}

#[tokio::test]
async fn the_image_file_of_a_cancelled_turn_is_removed() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.extend([
        Step::Reply("{}".into()), // turn/interrupt
        out(r#"{"method":"turn/completed","params":{"threadId":"thread-1","turn":{"id":"app-turn-1","items":[],"status":"interrupted","error":null,"durationMs":5}}}"#),
        Step::Sleep(30),
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(image_turn("t1")).await.unwrap();
    let image = image_on_disk(&fake);
    chat.session.cancel("t1").await.unwrap();
    chat.turn_cancelled("t1").await;
    assert!(!image.exists(), "{} outlived its turn", image.display());
    chat.session.dispose().await;
}

#[tokio::test]
async fn disposing_mid_turn_removes_the_image_file() {
    let fake = Fake::new();
    let mut plan = handshake("thread-1", "app-turn-1");
    plan.push(Step::Sleep(30));
    fake.plan(0, &plan);
    let chat = start(fake.config());
    chat.session.send_turn(image_turn("t1")).await.unwrap();
    let image = image_on_disk(&fake);
    chat.session.dispose().await;
    assert!(!image.exists(), "{} outlived the chat", image.display());
}

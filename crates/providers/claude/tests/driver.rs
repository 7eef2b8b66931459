//! The process driver against a stand-in CLI (`agenthost_testkit::FakeCli`, a POSIX shell script
//! that plays a plan of output lines and reads what the driver writes): start failures, hangs,
//! garbage, crashes, the permission round trip, cancel and dispose. Waits across the process
//! boundary poll with a deadline; every timeout of the driver is set short here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agenthost_protocol::{ChatUri, SafeId, SessionUri, StateAction};
use agenthost_provider_api::testing::{SignalLog, action, start_request, turn_request};
use agenthost_provider_api::{
    InputResponse, PermissionDecision, Provider, ProviderError, ProviderSession, SignalSink,
    StartSession, TurnRequest, signal_channel,
};
use agenthost_provider_claude::{ClaudeConfig, ClaudeProvider, ClaudeSession};
use agenthost_testkit::{FakeCli, Step};
use rustix::process::{Pid, test_kill_process_group};
use serde_json::{Value, json};

/// The longest any wait here takes before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

fn fixture(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
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

    fn config(&self) -> ClaudeConfig {
        let mut config = ClaudeConfig::new(self.cli.binary());
        config.cli.env = self.cli.env();
        config.cli.start_timeout = Duration::from_secs(10);
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
    session: ClaudeSession,
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

fn start(config: ClaudeConfig) -> Chat {
    let provider = ClaudeProvider::new(config).unwrap();
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

/// The approval transcript after the init answer: everything up to and including the
/// `can_use_tool` request, and everything after it.
fn approval_transcript() -> (Vec<String>, Vec<String>) {
    let lines = fixture("stdin-approve.stdout.jsonl");
    let ask = lines
        .iter()
        .position(|line| line.contains("\"can_use_tool\""))
        .unwrap();
    (lines[1..=ask].to_vec(), lines[ask + 1..].to_vec())
}

#[tokio::test]
async fn a_missing_binary_is_a_start_failure_naming_it() {
    let fake = Fake::new();
    let mut config = fake.config();
    config.cli.binary = fake.path("no-such-claude");
    let chat = start(config);
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::StartFailed { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("no-such-claude"), "{error}");
}

#[tokio::test]
async fn a_cli_exiting_before_it_answers_reports_its_stderr() {
    let fake = Fake::new();
    fake.plan(
        0,
        &[
            Step::Err("boom: cannot read the settings".into()),
            Step::Exit(3),
        ],
    );
    let chat = start(fake.config());
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("boom: cannot read the settings"), "{text}");
    assert!(text.contains('3'), "the exit status is named: {text}");
}

#[tokio::test]
async fn a_cli_hanging_on_start_times_out_and_its_group_is_killed() {
    let fake = Fake::new();
    fake.plan(0, &[Step::Err("starting slowly".into()), Step::Sleep(30)]);
    let mut config = fake.config();
    config.cli.start_timeout = Duration::from_millis(300);
    let chat = start(config);
    let error = chat.session.send_turn(turn("t1")).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::StartFailed { .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("within 300 ms"), "{text}");
    assert!(
        text.contains("starting slowly"),
        "the stderr tail is quoted: {text}"
    );
    let pid = fake.pid().unwrap();
    poll("the process group is gone", || group_gone(pid)).await;
}

#[tokio::test]
async fn garbage_on_stdout_fails_the_turn_and_stops_the_process() {
    let fake = Fake::new();
    fake.plan(
        0,
        &[
            Step::Ack,
            Step::In,
            Step::Err("claude-stderr: config parse warning 4711".into()),
            // The stderr reader gets ahead of the garbage line (the tail is read without waiting
            // while the process still runs).
            Step::Sleep(1),
            Step::out("this is not json at all"),
            Step::Sleep(30),
        ],
    );
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let (error_type, message) = chat.chat_error().await;
    assert_eq!(error_type, "providerProtocol");
    assert!(message.contains("this is not json"), "{message}");
    assert!(
        message.contains("claude-stderr: config parse warning 4711"),
        "the stderr tail is quoted: {message}"
    );
    let pid = fake.pid().unwrap();
    poll("the process group is gone", || group_gone(pid)).await;
    assert_eq!(chat.session.process_id(), None);
}

#[tokio::test]
async fn a_cli_dying_mid_turn_is_a_chat_error_with_the_stderr_tail() {
    let fake = Fake::new();
    fake.plan(
        0,
        &[
            Step::Ack,
            Step::In,
            Step::Err("fatal: lost the connection".into()),
            Step::Exit(7),
        ],
    );
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let (error_type, message) = chat.chat_error().await;
    assert_eq!(error_type, "providerExited");
    assert!(message.contains("fatal: lost the connection"), "{message}");
    assert!(message.contains('7'), "{message}");
}

#[tokio::test]
async fn an_approval_goes_back_as_allow_with_the_tool_input() {
    let fake = Fake::new();
    let (before, after) = approval_transcript();
    let mut plan = vec![Step::Ack, Step::In];
    plan.extend(before.iter().map(|l| out(l)));
    plan.push(Step::In);
    plan.extend(after.iter().map(|l| out(l)));
    plan.push(Step::In);
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
    assert_eq!(written[0]["request"]["subtype"], "initialize");
    assert_eq!(written[1]["type"], "user");
    assert_eq!(
        written[1]["message"]["content"],
        "Create out.txt containing hi"
    );
    let answer = &written[2];
    assert_eq!(answer["type"], "control_response");
    assert_eq!(answer["response"]["response"]["behavior"], "allow");
    assert_eq!(
        answer["response"]["response"]["updatedInput"],
        json!({"command": "echo hi > out.txt", "description": "Write hi to out.txt"})
    );
    let asked: Value = serde_json::from_str(before.last().unwrap()).unwrap();
    assert_eq!(answer["response"]["request_id"], asked["request_id"]);
    // A second answer for the same call has nothing to answer.
    let again = chat
        .session
        .respond_to_permission(&tool, PermissionDecision::Approve)
        .await;
    assert!(matches!(again, Err(ProviderError::NotRunning { .. })));
    assert_eq!(
        chat.session.resume_handle(),
        Some(json!({"sessionId": "86b06596-b9e8-4c2b-b994-b908e160dff2"}))
    );
}

#[tokio::test]
async fn a_denial_goes_back_with_the_reason() {
    let fake = Fake::new();
    let (before, after) = approval_transcript();
    let mut plan = vec![Step::Ack, Step::In];
    plan.extend(before.iter().map(|l| out(l)));
    plan.push(Step::In);
    plan.extend(after.iter().map(|l| out(l)));
    plan.push(Step::In);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let tool = chat.pending_confirmation().await;
    chat.session
        .respond_to_permission(
            &tool,
            PermissionDecision::Deny {
                reason: Some("not in this repository".into()),
            },
        )
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    let answer = &fake.written()[2];
    assert_eq!(answer["response"]["response"]["behavior"], "deny");
    assert_eq!(
        answer["response"]["response"]["message"],
        "not in this repository"
    );
}

#[tokio::test]
async fn control_requests_the_host_does_not_know_get_an_error_answer() {
    let fake = Fake::new();
    fake.plan(
        0,
        &[Step::Ack, Step::In, Step::out(r#"{"type":"control_request","request_id":"r9","request":{"subtype":"hook_callback"}}"#), Step::In, Step::Sleep(30)],
    );
    let chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    poll("the driver answers r9", || fake.written().len() >= 3).await;
    let answer = &fake.written()[2];
    assert_eq!(answer["response"]["subtype"], "error");
    assert_eq!(answer["response"]["request_id"], "r9");
    chat.session.dispose().await;
}

#[tokio::test]
async fn cancel_interrupts_the_cli_and_the_conversation_goes_on() {
    let fake = Fake::new();
    let lines = fixture("stdin-interrupt.stdout.jsonl");
    // Init answer, system/init, text, tool_use, can_use_tool | interrupt answer, results of the
    // interrupted turn | the next turn.
    let ask = lines
        .iter()
        .position(|l| l.contains("\"can_use_tool\""))
        .unwrap();
    let first_result = lines
        .iter()
        .position(|l| l.contains("\"error_during_execution\""))
        .unwrap();
    let mut plan = vec![Step::Ack, Step::In];
    plan.extend(lines[1..=ask].iter().map(|l| out(l)));
    plan.push(Step::Ack); // the interrupt
    plan.extend(lines[ask + 2..=first_result].iter().map(|l| out(l)));
    plan.push(Step::In); // the next user message
    plan.extend(lines[first_result + 1..].iter().map(|l| out(l)));
    plan.push(Step::In);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    chat.pending_confirmation().await;
    chat.session.cancel("t1").await.unwrap();
    chat.until(
        "chat/turnCancelled",
        |s| matches!(action(s), Some(StateAction::ChatTurnCancelled(c)) if c.turn_id == "t1"),
    )
    .await;
    let written = fake.written();
    assert_eq!(written[2]["request"]["subtype"], "interrupt");
    // Still the same process: the interrupt was enough.
    assert_eq!(fake.starts().len(), 1);
    assert!(chat.session.process_id().is_some());
    chat.session.send_turn(turn("t2")).await.unwrap();
    chat.turn_complete("t2").await;
    // Nothing of the cancelled turn leaked after its cancellation.
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
async fn cancel_kills_a_cli_that_ignores_the_interrupt_and_the_next_turn_resumes() {
    let fake = Fake::new();
    let lines = fixture("stdin-approve.stdout.jsonl");
    let init = lines
        .iter()
        .find(|l| l.contains("\"subtype\":\"init\""))
        .unwrap();
    let mut first = vec![Step::Ack, Step::In];
    first.push(out(init));
    first.push(Step::Sleep(30));
    fake.plan(1, &first);
    let (_, after) = approval_transcript();
    let final_lines: Vec<Step> = after[1..].iter().map(|l| out(l)).collect();
    let mut second = vec![Step::Ack, Step::In];
    second.extend(final_lines);
    second.push(Step::In);
    fake.plan(2, &second);
    fake.plan(0, &[Step::Exit(9)]);
    let mut config = fake.config();
    config.cli.cancel_grace = Duration::from_millis(300);
    let mut chat = start(config);
    chat.session.send_turn(turn("t1")).await.unwrap();
    poll("the CLI reports its session", || {
        ProviderSession::resume_handle(&chat.session).is_some()
    })
    .await;
    let pid = fake.pid().unwrap();
    chat.session.cancel("t1").await.unwrap();
    chat.until("chat/turnCancelled", |s| {
        matches!(action(s), Some(StateAction::ChatTurnCancelled(_)))
    })
    .await;
    poll("the process group is gone", || group_gone(pid)).await;
    chat.session.send_turn(turn("t2")).await.unwrap();
    chat.turn_complete("t2").await;
    let starts = fake.starts();
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert!(!starts[0].contains("--resume"), "{}", starts[0]);
    assert!(
        starts[1].contains("--resume 86b06596-b9e8-4c2b-b994-b908e160dff2"),
        "{}",
        starts[1]
    );
}

#[tokio::test]
async fn dispose_terminates_the_whole_process_group() {
    let fake = Fake::new();
    fake.plan(0, &[Step::Ack, Step::In, Step::Sleep(60)]);
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
async fn a_second_turn_while_one_runs_is_refused() {
    let fake = Fake::new();
    fake.plan(0, &[Step::Ack, Step::In, Step::Sleep(30)]);
    let chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let error = chat.session.send_turn(turn("t2")).await.unwrap_err();
    assert!(
        error.to_string().contains("still running turn `t1`"),
        "{error}"
    );
    chat.session.dispose().await;
}

#[tokio::test]
async fn a_hostile_resume_handle_is_refused() {
    let fake = Fake::new();
    let provider = ClaudeProvider::new(fake.config()).unwrap();
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
        json!({"sessionId": "--dangerously-skip-permissions"}),
        json!({}),
        json!({"sessionId": "a b"}),
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
async fn a_second_request_for_the_same_call_denies_the_first_so_nothing_waits_forever() {
    let fake = Fake::new();
    let ask = |id: &str| {
        Step::out(format!(
            r#"{{"type":"control_request","request_id":"{id}","request":{{"subtype":"can_use_tool","tool_name":"Bash","input":{{"command":"ls"}},"tool_use_id":"toolu_1"}}}}"#
        ))
    };
    let (before, _) = approval_transcript();
    let init = before
        .iter()
        .find(|l| l.contains("\"subtype\":\"init\""))
        .unwrap();
    fake.plan(
        0,
        &[
            Step::Ack,
            Step::In,
            out(init),
            ask("r1"),
            ask("r2"),
            Step::In,
            Step::Sleep(30),
        ],
    );
    let chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    poll("the first request is answered", || {
        fake.written().len() >= 3
    })
    .await;
    let answer = &fake.written()[2];
    assert_eq!(answer["response"]["request_id"], "r1");
    assert_eq!(answer["response"]["response"]["behavior"], "deny");
    chat.session.dispose().await;
}

/// An `AskUserQuestion` call of the CLI: the init line, its `tool_use` and its `can_use_tool`
/// (request `req-ask`), and the input it asks with.
fn question_transcript() -> (Vec<String>, Value) {
    let (before, _) = approval_transcript();
    let init = before
        .iter()
        .find(|l| l.contains("\"subtype\":\"init\""))
        .unwrap()
        .clone();
    let input = json!({ "questions": [
        { "question": "Which color?", "header": "Color", "multiSelect": false,
          "options": [{ "label": "Red", "description": "Warm" },
                      { "label": "Blue", "description": "Cool" }] },
        { "question": "Which sizes?", "header": "Sizes", "multiSelect": true,
          "options": [{ "label": "S", "description": "Small" },
                      { "label": "L", "description": "Large" }] }
    ]});
    let tool_use = json!({
        "type": "assistant", "parent_tool_use_id": null, "session_id": "cli-1",
        "message": { "id": "msg_q", "role": "assistant", "model": "m", "content": [
            { "type": "tool_use", "id": "toolu_q", "name": "AskUserQuestion", "input": input }
        ]}
    });
    let ask = json!({
        "type": "control_request", "request_id": "req-ask",
        "request": { "subtype": "can_use_tool", "tool_name": "AskUserQuestion",
                     "input": input, "tool_use_id": "toolu_q" }
    });
    (vec![init, tool_use.to_string(), ask.to_string()], input)
}

fn input_response(
    kind: agenthost_protocol::state::ChatInputResponseKind,
    answers: Vec<(&str, agenthost_protocol::state::ChatInputAnswerValue)>,
) -> InputResponse {
    use agenthost_protocol::state::{ChatInputAnswer, ChatInputAnswered};
    InputResponse {
        response: kind,
        answers: answers
            .into_iter()
            .map(|(id, value)| {
                (
                    id.to_owned(),
                    ChatInputAnswer::Submitted(ChatInputAnswered { value }),
                )
            })
            .collect(),
    }
}

#[tokio::test]
async fn answers_to_a_question_go_back_as_allow_keyed_by_question_text() {
    use agenthost_protocol::state::{
        ChatInputAnswerValue, ChatInputResponseKind, ChatInputSelectedAnswerValue,
        ChatInputSelectedManyAnswerValue,
    };
    let fake = Fake::new();
    let (asked, input) = question_transcript();
    let result = fixture("stdin-approve.stdout.jsonl").pop().unwrap();
    let tool_result = json!({
        "type": "user", "parent_tool_use_id": null,
        "message": { "role": "user", "content": [{
            "type": "tool_result", "tool_use_id": "toolu_q", "is_error": false,
            "content": "User has answered your questions: \"Which color?\"=\"Blue\"."
        }]}
    });
    let mut plan = vec![Step::Ack, Step::In];
    plan.extend(asked.iter().map(|l| out(l)));
    plan.push(Step::In);
    plan.push(out(&tool_result.to_string()));
    plan.push(out(&result));
    plan.push(Step::In);
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    let requested = chat
        .until("chat/inputRequested", |s| {
            matches!(action(s), Some(StateAction::ChatInputRequested(_)))
        })
        .await;
    let Some(StateAction::ChatInputRequested(requested)) = action(&requested) else {
        unreachable!()
    };
    assert_eq!(requested.request.id, "ask-toolu_q");
    assert_eq!(requested.request.questions.as_ref().unwrap().len(), 2);
    let unknown = chat
        .session
        .respond_to_input(
            "ask-nope",
            input_response(ChatInputResponseKind::Accept, Vec::new()),
        )
        .await;
    assert!(
        matches!(&unknown, Err(ProviderError::NotRunning { message }) if message.contains("ask-nope")),
        "{unknown:?}"
    );
    let answers = vec![
        (
            "q0",
            ChatInputAnswerValue::Selected(ChatInputSelectedAnswerValue {
                value: "o1".into(),
                freeform_values: None,
            }),
        ),
        (
            "q1",
            ChatInputAnswerValue::SelectedMany(ChatInputSelectedManyAnswerValue {
                value: vec!["o0".into(), "o1".into()],
                freeform_values: None,
            }),
        ),
    ];
    chat.session
        .respond_to_input(
            "ask-toolu_q",
            input_response(ChatInputResponseKind::Accept, answers),
        )
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    let mut updated_input = input;
    updated_input["answers"] = json!({ "Which color?": "Blue", "Which sizes?": "S, L" });
    assert_eq!(
        fake.written()[2],
        json!({ "type": "control_response", "response": {
            "subtype": "success", "request_id": "req-ask",
            "response": { "behavior": "allow", "updatedInput": updated_input }
        }})
    );
    // The call the tool_use started completed from the tool result.
    assert!(chat.seen().iter().any(|s| matches!(
        action(s),
        Some(StateAction::ChatToolCallComplete(done)) if done.tool_call_id == "toolu_q"
    )));
    // Answered once: a second answer finds nothing waiting.
    let again = chat
        .session
        .respond_to_input(
            "ask-toolu_q",
            input_response(ChatInputResponseKind::Decline, Vec::new()),
        )
        .await;
    assert!(matches!(again, Err(ProviderError::NotRunning { .. })));
}

#[tokio::test]
async fn a_declined_question_is_denied() {
    use agenthost_protocol::state::ChatInputResponseKind;
    let fake = Fake::new();
    let (asked, _) = question_transcript();
    let mut plan = vec![Step::Ack, Step::In];
    plan.extend(asked.iter().map(|l| out(l)));
    plan.push(Step::In);
    plan.push(Step::Sleep(30));
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    chat.until("chat/inputRequested", |s| {
        matches!(action(s), Some(StateAction::ChatInputRequested(_)))
    })
    .await;
    chat.session
        .respond_to_input(
            "ask-toolu_q",
            input_response(ChatInputResponseKind::Decline, Vec::new()),
        )
        .await
        .unwrap();
    poll("the answer is written", || fake.written().len() >= 3).await;
    let answer = &fake.written()[2];
    assert_eq!(answer["response"]["request_id"], "req-ask");
    assert_eq!(answer["response"]["response"]["behavior"], "deny");
    chat.session.dispose().await;
}

#[tokio::test]
async fn cancelling_a_turn_withdraws_its_question_before_the_interrupt() {
    let fake = Fake::new();
    let (asked, _) = question_transcript();
    let aborted = json!({
        "type": "result", "subtype": "error_during_execution", "is_error": true,
        "session_id": "86b06596-b9e8-4c2b-b994-b908e160dff2", "errors": []
    });
    let mut plan = vec![Step::Ack, Step::In];
    plan.extend(asked.iter().map(|l| out(l)));
    plan.push(Step::In); // the withdrawal
    plan.push(Step::Ack); // the interrupt
    plan.push(out(&aborted.to_string()));
    plan.push(Step::Sleep(30));
    fake.plan(0, &plan);
    let mut chat = start(fake.config());
    chat.session.send_turn(turn("t1")).await.unwrap();
    chat.until("chat/inputRequested", |s| {
        matches!(action(s), Some(StateAction::ChatInputRequested(_)))
    })
    .await;
    chat.session.cancel("t1").await.unwrap();
    chat.turn_cancelled("t1").await;
    let written = fake.written();
    assert_eq!(written[2]["response"]["request_id"], "req-ask");
    assert_eq!(written[2]["response"]["response"]["behavior"], "deny");
    assert_eq!(written[3]["request"]["subtype"], "interrupt");
    // The interrupt was enough: the same process goes on.
    assert_eq!(fake.starts().len(), 1);
    let late = chat
        .session
        .respond_to_input(
            "ask-toolu_q",
            input_response(
                agenthost_protocol::state::ChatInputResponseKind::Accept,
                Vec::new(),
            ),
        )
        .await;
    assert!(matches!(late, Err(ProviderError::NotRunning { .. })));
    chat.session.dispose().await;
}

#[tokio::test]
async fn the_child_gets_the_configured_variables_and_the_stream_json_command_line() {
    let fake = Fake::new();
    fake.plan(0, &[Step::Ack, Step::In, Step::Sleep(30)]);
    // A wrapper that records the environment it was started with, then becomes the fake CLI.
    let dump = fake.path("env.log");
    let wrapper = fake.path("claude-with-env");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nenv > '{}'\nexec '{}' \"$@\"\n",
            dump.display(),
            fake.cli.binary().display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut config = fake
        .config()
        .with_env("ANTHROPIC_BASE_URL", "http://127.0.0.1:4711")
        .with_env("ANTHROPIC_API_KEY", "sk-ant-test-key");
    config.cli.binary = wrapper;
    config.cli.model = Some("sonnet".into());
    config.partial_messages = false;
    let chat = start(config);
    chat.session.send_turn(turn("t1")).await.unwrap();
    let env = std::fs::read_to_string(&dump).unwrap();
    let lines: Vec<&str> = env.lines().collect();
    assert!(
        lines.contains(&"ANTHROPIC_BASE_URL=http://127.0.0.1:4711"),
        "{env}"
    );
    assert!(
        lines.contains(&"ANTHROPIC_API_KEY=sk-ant-test-key"),
        "{env}"
    );
    assert_eq!(
        fake.starts(),
        [
            "-p --input-format stream-json --output-format stream-json --verbose \
          --permission-prompt-tool stdio --model sonnet"
        ]
    );
    chat.session.dispose().await;
}

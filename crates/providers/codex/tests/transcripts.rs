//! Every captured Codex transcript (`codex app-server` and `codex exec --json`), replayed
//! through the translators and applied with the canonical AHP reducers: no action is refused,
//! the turn ends as Codex's did, and the signals and the final turn are pinned by snapshots.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agenthost_protocol::state::{ChatState, TurnState};
use agenthost_protocol::{AgentSignal, SafeId, SessionUri, StateAction};
use agenthost_provider_api::{pending_ready_action, signal_json};
use agenthost_provider_codex::{ExecTranslator, Output, Translator, map_transcript};
use ahp::reducers::{ReduceOutcome, apply_action_to_chat};
use serde_json::{Value, json};

const TURN: &str = "turn-1";
const STARTED_AT: &str = "2026-01-01T00:00:00.000Z";

struct Transcript {
    name: &'static str,
    stdout: &'static str,
    stdin: &'static str,
}

macro_rules! transcript {
    ($name:literal) => {
        Transcript {
            name: $name,
            stdout: include_str!(concat!("fixtures/", $name, ".stdout.jsonl")),
            stdin: "",
        }
    };
    ($name:literal, stdin) => {
        Transcript {
            name: $name,
            stdout: include_str!(concat!("fixtures/", $name, ".stdout.jsonl")),
            stdin: include_str!(concat!("fixtures/", $name, ".stdin.jsonl")),
        }
    };
}

fn action(value: Value) -> StateAction {
    serde_json::from_value(value).unwrap()
}

fn empty_chat() -> ChatState {
    serde_json::from_value(json!({
        "resource": "ahp-chat:/c1", "title": "Chat", "status": 1,
        "modifiedAt": STARTED_AT, "turns": []
    }))
    .unwrap()
}

fn stdin_lines(stdin: &str) -> Vec<Value> {
    stdin
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Whether the host approved server request `request_id`, read from the answer the driver
/// wrote to the app-server's stdin.
fn decision(stdin: &str, request_id: &Value) -> bool {
    let answer = stdin_lines(stdin)
        .into_iter()
        .find(|line| line["id"] == *request_id && line.get("result").is_some())
        .unwrap_or_else(|| panic!("no answer to {request_id} in the transcript's stdin"));
    match answer["result"]["decision"].as_str() {
        Some("accept") => true,
        Some("decline") => false,
        other => panic!("unexpected decision {other:?}"),
    }
}

/// The client's `chat/toolCallConfirmed` for that answer.
fn client_answer(tool_call_id: &str, approved: bool) -> StateAction {
    if approved {
        action(json!({
            "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": tool_call_id,
            "approved": true, "confirmed": "user-action"
        }))
    } else {
        action(json!({
            "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": tool_call_id,
            "approved": false, "reason": "denied"
        }))
    }
}

fn apply(chat: &mut ChatState, action: &StateAction, what: &str) {
    let outcome = apply_action_to_chat(chat, action);
    assert_eq!(
        outcome,
        ReduceOutcome::Applied,
        "{what}: {}",
        serde_json::to_string(action).unwrap()
    );
}

/// What one transcript's translator needs: one line in, outputs out.
enum Replayer {
    AppServer(Box<Translator>),
    Exec(Box<ExecTranslator>),
}

impl Replayer {
    fn on_line(&mut self, line: &str) -> Vec<Output> {
        match self {
            Self::AppServer(translator) => translator.on_line(line).unwrap(),
            Self::Exec(translator) => translator.on_line(line).unwrap(),
        }
    }
}

/// Replays a transcript as the driver would; returns the rendered signals and the chat after
/// the turn.
fn replay(transcript: &Transcript) -> (Vec<Value>, ChatState) {
    let session = SessionUri::canonical(SafeId::new("s1").unwrap());
    let mut chat = empty_chat();
    apply(
        &mut chat,
        &action(json!({
            "type": "chat/turnStarted", "turnId": TURN, "startedAt": STARTED_AT,
            "message": { "text": "Create out.txt containing hi", "origin": { "kind": "user" } }
        })),
        "turn start",
    );
    let mut replayer = if transcript.name.starts_with("exec-") {
        let mut translator = ExecTranslator::new(session);
        translator.begin_turn(TURN);
        Replayer::Exec(Box::new(translator))
    } else {
        let mut translator = Translator::new(session);
        translator.begin_turn(TURN);
        // The driver reports the id of its `turn/start` request.
        let start = stdin_lines(transcript.stdin)
            .into_iter()
            .find(|line| line["method"] == "turn/start")
            .expect("a turn/start request");
        translator.turn_start_sent(&start["id"]);
        Replayer::AppServer(Box::new(translator))
    };
    let mut rendered = Vec::new();
    let mut ended = false;
    let mut thread = None;
    for line in transcript.stdout.lines().filter(|l| !l.trim().is_empty()) {
        for output in replayer.on_line(line) {
            match output {
                Output::Signal(signal) => {
                    assert!(!ended, "a signal after the turn ended");
                    rendered.push(signal_json(&signal));
                    match &signal {
                        AgentSignal::Action(a) => {
                            assert_eq!(a.parent_tool_call_id, None);
                            apply(&mut chat, &a.action, "agent action");
                        }
                        AgentSignal::PendingConfirmation(pending) => {
                            apply(&mut chat, &pending_ready_action(pending), "pending ready");
                        }
                        AgentSignal::ModelCallCompleted(_) => {}
                        other => panic!("unexpected signal {other:?}"),
                    }
                }
                Output::ApprovalRequest {
                    request_id,
                    tool_call_id,
                    ..
                } => {
                    let approved = decision(transcript.stdin, &request_id);
                    let answer = client_answer(&tool_call_id, approved);
                    rendered.push(json!({ "client": serde_json::to_value(&answer).unwrap() }));
                    apply(&mut chat, &answer, "client answer");
                    if let Replayer::AppServer(translator) = &mut replayer {
                        translator.record_decision(&tool_call_id, approved);
                    }
                }
                Output::ThreadStarted(id) => {
                    assert_eq!(thread.replace(id), None, "the thread is reported once");
                }
                Output::TurnEnded => ended = true,
                Output::Response { result, .. } => assert!(result.is_ok()),
                other => panic!("unexpected output {other:?}"),
            }
        }
    }
    assert!(ended, "{}: the turn did not end", transcript.name);
    assert!(thread.is_some(), "{}: no thread reported", transcript.name);
    (rendered, chat)
}

/// `exec` reports no durations: the mapper measures them, so snapshots hide them.
fn without_durations(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                if key == "duration" {
                    *value = json!("[measured]");
                } else {
                    without_durations(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(without_durations),
        _ => {}
    }
}

fn check(transcript: Transcript, expected: TurnState) {
    let (signals, chat) = replay(&transcript);
    assert!(chat.active_turn.is_none());
    assert_eq!(chat.turns.len(), 1);
    assert_eq!(chat.turns[0].state, expected, "{}", transcript.name);
    // `map_transcript` (what `agent-host map` prints) sees the same signals, the client's
    // answers aside.
    let session = SessionUri::canonical(SafeId::new("s1").unwrap());
    let mapped: Vec<Value> = map_transcript(session, TURN, transcript.stdout)
        .unwrap()
        .iter()
        .map(signal_json)
        .collect();
    let own: Vec<Value> = signals
        .iter()
        .filter(|signal| signal.get("client").is_none())
        .cloned()
        .collect();
    let mut snapshot = json!({ "signals": signals, "turn": chat.turns[0] });
    let (mut mapped, mut own) = (Value::Array(mapped), Value::Array(own));
    if transcript.name.starts_with("exec-") {
        without_durations(&mut snapshot);
        without_durations(&mut mapped);
        without_durations(&mut own);
    }
    assert_eq!(mapped, own, "{}: map_transcript differs", transcript.name);
    // Maps sorted: `serde_json` keeps insertion order in builds where a dependency turns
    // that on, and the snapshot must not depend on the build.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!(transcript.name, snapshot);
    });
}

#[test]
fn appserver_workspace_write() {
    check(
        transcript!("appserver-workspace-write", stdin),
        TurnState::Complete,
    );
}

#[test]
fn appserver_escalate_accept() {
    check(
        transcript!("appserver-escalate-accept", stdin),
        TurnState::Complete,
    );
}

#[test]
fn appserver_escalate_decline() {
    check(
        transcript!("appserver-escalate-decline", stdin),
        TurnState::Complete,
    );
}

#[test]
fn appserver_readonly_noescalate() {
    check(
        transcript!("appserver-readonly-noescalate", stdin),
        TurnState::Complete,
    );
}

#[test]
fn exec_workspace_write() {
    check(transcript!("exec-workspace-write"), TurnState::Complete);
}

#[test]
fn exec_bypass() {
    check(transcript!("exec-bypass"), TurnState::Complete);
}

#[test]
fn exec_reasoning() {
    check(transcript!("exec-reasoning"), TurnState::Complete);
}

#[test]
fn exec_failing_cmd() {
    check(transcript!("exec-failing-cmd"), TurnState::Complete);
}

#[test]
fn exec_readonly() {
    check(transcript!("exec-readonly"), TurnState::Complete);
}

#[test]
fn exec_escalate_onrequest() {
    check(transcript!("exec-escalate-onrequest"), TurnState::Complete);
}

#[test]
fn exec_api_error() {
    check(transcript!("exec-api-error"), TurnState::Error);
}

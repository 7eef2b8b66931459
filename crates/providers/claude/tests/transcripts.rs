//! Every captured Claude Code transcript, replayed through the translator and applied with the
//! canonical AHP reducers: no action is refused, the turn ends as the CLI's did, and the signals
//! and the final turn are pinned by snapshots.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agenthost_protocol::state::{ChatState, TurnState};
use agenthost_protocol::{AgentSignal, SafeId, SessionUri, StateAction};
use agenthost_provider_api::{pending_ready_action, signal_json};
use agenthost_provider_claude::{Output, Translator};
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

/// What the host's client dispatched when it answered permission request `request_id`, read
/// from the control response the driver wrote to the CLI's stdin.
fn client_answer(stdin: &str, request_id: &str, tool_call_id: &str) -> StateAction {
    let answer = stdin
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["response"]["request_id"] == request_id)
        .unwrap_or_else(|| panic!("no answer to {request_id} in the transcript's stdin"));
    match answer["response"]["response"]["behavior"].as_str() {
        Some("allow") => action(json!({
            "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": tool_call_id,
            "approved": true, "confirmed": "user-action"
        })),
        Some("deny") => action(json!({
            "type": "chat/toolCallConfirmed", "turnId": TURN, "toolCallId": tool_call_id,
            "approved": false, "reason": "denied"
        })),
        other => panic!("unexpected answer {other:?}"),
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

/// Replays a transcript; returns the rendered signals and the chat after the turn.
fn replay(transcript: &Transcript) -> (Vec<Value>, ChatState) {
    let session = SessionUri::canonical(SafeId::new("s1").unwrap());
    let mut translator = Translator::new(session);
    let mut chat = empty_chat();
    apply(
        &mut chat,
        &action(json!({
            "type": "chat/turnStarted", "turnId": TURN, "startedAt": STARTED_AT,
            "message": { "text": "Create out.txt containing hi", "origin": { "kind": "user" } }
        })),
        "turn start",
    );
    translator.begin_turn(TURN);
    let mut rendered = Vec::new();
    let mut ended = false;
    for line in transcript.stdout.lines().filter(|l| !l.trim().is_empty()) {
        let outputs = translator.on_line(line).unwrap();
        for output in outputs {
            match output {
                Output::Signal(signal) => {
                    rendered.push(signal_json(&signal));
                    assert!(!ended, "a signal after the turn ended");
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
                Output::PermissionRequest {
                    request_id,
                    tool_use_id,
                    ..
                } => {
                    let answer = client_answer(transcript.stdin, &request_id, &tool_use_id);
                    rendered.push(json!({ "client": serde_json::to_value(&answer).unwrap() }));
                    apply(&mut chat, &answer, "client answer");
                }
                Output::TurnEnded => ended = true,
                Output::SessionId(_) | Output::ControlResponse { .. } => {}
                other => panic!("unexpected output {other:?}"),
            }
        }
    }
    assert!(ended, "{}: the turn did not end", transcript.name);
    assert!(!translator.turn_active());
    (rendered, chat)
}

fn check(transcript: Transcript, expected: TurnState) {
    let (signals, chat) = replay(&transcript);
    assert!(chat.active_turn.is_none());
    assert_eq!(chat.turns.len(), 1);
    assert_eq!(chat.turns[0].state, expected, "{}", transcript.name);
    let turn = serde_json::to_value(&chat.turns[0]).unwrap();
    insta::assert_json_snapshot!(transcript.name, json!({ "signals": signals, "turn": turn }));
}

#[test]
fn print_allowed() {
    check(transcript!("print-allowed"), TurnState::Complete);
}

#[test]
fn print_default() {
    check(transcript!("print-default"), TurnState::Complete);
}

#[test]
fn print_partial() {
    check(transcript!("print-partial"), TurnState::Complete);
}

#[test]
fn print_api_error() {
    check(transcript!("print-api-error"), TurnState::Error);
}

#[test]
fn stdin_approve() {
    check(transcript!("stdin-approve", stdin), TurnState::Complete);
}

#[test]
fn stdin_deny() {
    check(transcript!("stdin-deny", stdin), TurnState::Complete);
}

#[test]
fn stdin_noflag() {
    check(transcript!("stdin-noflag", stdin), TurnState::Complete);
}

#[test]
fn stdin_partial_thinking() {
    check(
        transcript!("stdin-partial-thinking", stdin),
        TurnState::Complete,
    );
}

//! Every captured Claude Code transcript, replayed through the translator and applied with the
//! canonical AHP reducers: no action is refused, the turn ends as the CLI's did, and the signals
//! and the final turn are pinned by snapshots. `map_transcript` (what `agent-host map` prints)
//! must see the same signals as the replay.
//!
//! `stdin-interrupt` is replayed the way the driver lives through it: the host cancels the turn
//! at the CLI's permission request (`abort_turn`, then `chat/turnCancelled`), the lines of the
//! interrupted turn up to its `result` are dropped, and the next turn starts after it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agenthost_protocol::state::{ChatState, TurnState};
use agenthost_protocol::{AgentSignal, SafeId, SessionUri, StateAction};
use agenthost_provider_api::{pending_ready_action, signal_json, turn_cancelled};
use agenthost_provider_claude::{Output, Translator, map_transcript};
use ahp::reducers::{ReduceOutcome, apply_action_to_chat};
use serde_json::{Value, json};

const TURN: &str = "turn-1";
/// The turn after a cancelled one.
const NEXT_TURN: &str = "turn-2";
const STARTED_AT: &str = "2026-01-01T00:00:00.000Z";

struct Transcript {
    name: &'static str,
    stdout: &'static str,
    stdin: &'static str,
    /// The host cancels the turn at the first permission request and sends another turn once
    /// the CLI has wound the cancelled one down (its `result`).
    cancel: bool,
}

macro_rules! transcript {
    ($name:literal) => {
        Transcript {
            name: $name,
            stdout: include_str!(concat!("fixtures/", $name, ".stdout.jsonl")),
            stdin: "",
            cancel: false,
        }
    };
    ($name:literal, stdin) => {
        Transcript {
            name: $name,
            stdout: include_str!(concat!("fixtures/", $name, ".stdout.jsonl")),
            stdin: include_str!(concat!("fixtures/", $name, ".stdin.jsonl")),
            cancel: false,
        }
    };
    ($name:literal, cancelled) => {
        Transcript {
            name: $name,
            stdout: include_str!(concat!("fixtures/", $name, ".stdout.jsonl")),
            stdin: "",
            cancel: true,
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

fn start_turn(chat: &mut ChatState, translator: &mut Translator, turn_id: &str) {
    apply(
        chat,
        &action(json!({
            "type": "chat/turnStarted", "turnId": turn_id, "startedAt": STARTED_AT,
            "message": { "text": "Create out.txt containing hi", "origin": { "kind": "user" } }
        })),
        "turn start",
    );
    translator.begin_turn(turn_id);
}

/// A replayed transcript: the rendered signals (with the client's answers and the host's cancel
/// among them), the chat after the last turn, and where the cancel is in the signals.
struct Replay {
    rendered: Vec<Value>,
    chat: ChatState,
    cancelled_at: Option<usize>,
}

/// Replays a transcript.
fn replay(transcript: &Transcript) -> Replay {
    let session = SessionUri::canonical(SafeId::new("s1").unwrap());
    let mut translator = Translator::new(session.clone());
    let mut chat = empty_chat();
    start_turn(&mut chat, &mut translator, TURN);
    let mut rendered = Vec::new();
    let mut ended = false;
    let mut cancelled_at = None;
    // Cancelled, and the CLI has not printed the interrupted turn's `result` yet.
    let mut winding_down = false;
    for line in transcript.stdout.lines().filter(|l| !l.trim().is_empty()) {
        let is_result = serde_json::from_str::<Value>(line).unwrap()["type"] == "result";
        let outputs = translator.on_line(line).unwrap();
        for output in outputs {
            match output {
                Output::Signal(signal) => {
                    rendered.push(signal_json(&signal));
                    assert!(!ended, "a signal after the turn ended");
                    assert!(!winding_down, "a signal of the cancelled turn");
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
                Output::PermissionRequest { .. } if transcript.cancel => {
                    assert!(cancelled_at.is_none(), "a second cancel");
                    // What `ClaudeSession::cancel` does: forget the turn, interrupt the CLI,
                    // report the turn cancelled.
                    translator.abort_turn();
                    assert!(!translator.turn_active());
                    let cancelled = turn_cancelled(&session, TURN, 0);
                    let AgentSignal::Action(cancel) = &cancelled else {
                        unreachable!()
                    };
                    apply(&mut chat, &cancel.action, "cancel");
                    cancelled_at = Some(rendered.len());
                    rendered.push(json!({ "cancel": signal_json(&cancelled) }));
                    winding_down = true;
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
        if winding_down && is_result {
            // The interrupted turn is over: the driver's `cancel` returns and the next turn
            // starts on the same process.
            winding_down = false;
            start_turn(&mut chat, &mut translator, NEXT_TURN);
        }
    }
    assert!(
        !winding_down,
        "{}: no result after the cancel",
        transcript.name
    );
    assert_eq!(
        cancelled_at.is_some(),
        transcript.cancel,
        "{}",
        transcript.name
    );
    assert!(ended, "{}: the turn did not end", transcript.name);
    assert!(!translator.turn_active());
    Replay {
        rendered,
        chat,
        cancelled_at,
    }
}

/// `map_transcript` sees the same signals as the replay, the client's answers aside. It maps a
/// transcript as one turn and has no cancel: for a cancelled transcript, the signals up to the
/// cancel.
fn check_map_transcript(transcript: &Transcript, replay: &Replay) {
    let session = SessionUri::canonical(SafeId::new("s1").unwrap());
    let mapped: Vec<Value> = map_transcript(session, TURN, transcript.stdout)
        .unwrap()
        .iter()
        .map(signal_json)
        .collect();
    let replayed = &replay.rendered[..replay.cancelled_at.unwrap_or(replay.rendered.len())];
    let own: Vec<Value> = replayed
        .iter()
        .filter(|signal| signal.get("client").is_none())
        .cloned()
        .collect();
    let mapped = match replay.cancelled_at {
        Some(_) => &mapped[..own.len().min(mapped.len())],
        None => &mapped[..],
    };
    assert_eq!(mapped, own, "{}: map_transcript differs", transcript.name);
}

fn check(transcript: Transcript, expected: TurnState) {
    let replay = replay(&transcript);
    check_map_transcript(&transcript, &replay);
    let chat = &replay.chat;
    assert!(chat.active_turn.is_none());
    assert_eq!(chat.turns.len(), 1);
    assert_eq!(chat.turns[0].state, expected, "{}", transcript.name);
    let turn = serde_json::to_value(&chat.turns[0]).unwrap();
    // Maps sorted: `serde_json` keeps insertion order in builds where a dependency turns
    // that on, and the snapshot must not depend on the build.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!(
        transcript.name,
        json!({ "signals": replay.rendered, "turn": turn })
    );
    });
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

#[test]
fn stdin_interrupt() {
    let transcript = transcript!("stdin-interrupt", cancelled);
    let replay = replay(&transcript);
    check_map_transcript(&transcript, &replay);
    let chat = &replay.chat;
    assert!(chat.active_turn.is_none());
    let states: Vec<(&str, &TurnState)> = chat
        .turns
        .iter()
        .map(|turn| (turn.id.as_str(), &turn.state))
        .collect();
    assert_eq!(
        states,
        [
            (TURN, &TurnState::Cancelled),
            (NEXT_TURN, &TurnState::Complete)
        ]
    );
    let turns = serde_json::to_value(&chat.turns).unwrap();
    // Maps sorted: `serde_json` keeps insertion order in builds where a dependency turns
    // that on, and the snapshot must not depend on the build.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!(
        transcript.name,
        json!({ "signals": replay.rendered, "turns": turns })
    );
    });
}

//! Every captured Copilot transcript (headless `sdk-*` frames and `copilot -p` `prompt-*`
//! lines), replayed through the translator and applied with the canonical AHP reducers (plus
//! the host's `session/titleChanged` pairing): no action is refused, the turn ends as Copilot's
//! did, and the signals and the final turn are pinned by snapshots. The `acp-*` transcripts are
//! not mapped (see the crate documentation).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agenthost_protocol::state::{ChatState, TurnState};
use agenthost_protocol::{AgentSignal, SafeId, SessionUri, StateAction};
use agenthost_provider_api::{pending_ready_action, signal_json};
use agenthost_provider_copilot::{Output, Translator, map_transcript};
use agenthost_reducers::{HostState, Reduced};
use serde_json::{Value, json};

const TURN: &str = "turn-1";
const STARTED_AT: &str = "2026-01-01T00:00:00.000Z";
const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";

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

/// A host with one session holding one empty chat.
fn host() -> HostState {
    let mut host = HostState::new(serde_json::from_value(json!({ "agents": [] })).unwrap());
    let chat: ChatState = serde_json::from_value(json!({
        "resource": CHAT, "title": "Chat", "status": 1,
        "modifiedAt": STARTED_AT, "turns": []
    }))
    .unwrap();
    let session = serde_json::from_value(json!({
        "provider": "copilot", "title": "Session", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": [], "workingDirectories": ["file:///w"]
    }))
    .unwrap();
    host.insert_session(&SESSION.parse().unwrap(), session)
        .unwrap();
    host.insert_chat(
        &SESSION.parse().unwrap(),
        &chat.resource.parse().unwrap(),
        chat,
    )
    .unwrap();
    host
}

fn stdin_lines(stdin: &str) -> Vec<Value> {
    stdin
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Whether the host approved permission request `request_id`, read from the answer the driver
/// wrote to the CLI's stdin.
fn decision(stdin: &str, request_id: &str) -> bool {
    let answer = stdin_lines(stdin)
        .into_iter()
        .find(|line| {
            line["method"] == "session.permissions.handlePendingPermissionRequest"
                && line["params"]["requestId"] == request_id
        })
        .unwrap_or_else(|| panic!("no answer to {request_id} in the transcript's stdin"));
    match answer["params"]["result"]["kind"].as_str() {
        Some("approve-once") => true,
        Some("reject") => false,
        other => panic!("unexpected answer {other:?}"),
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

fn apply(host: &mut HostState, action: &StateAction, what: &str) {
    let outcome = host.apply_server_action(CHAT, action);
    assert_eq!(
        outcome,
        Ok(Reduced::Applied),
        "{what}: {}",
        serde_json::to_string(action).unwrap()
    );
}

/// Replays a transcript as the driver would; returns the rendered signals and the chat after
/// the turn.
fn replay(transcript: &Transcript) -> (Vec<Value>, ChatState) {
    let session = SessionUri::canonical(SafeId::new("s1").unwrap());
    let mut host = host();
    apply(
        &mut host,
        &action(json!({
            "type": "chat/turnStarted", "turnId": TURN, "startedAt": STARTED_AT,
            "message": { "text": "Create out.txt containing hi", "origin": { "kind": "user" } }
        })),
        "turn start",
    );
    let mut translator = Translator::new(session);
    translator.begin_turn(TURN);
    // The driver reports its `session.send` request.
    if let Some(send) = stdin_lines(transcript.stdin)
        .into_iter()
        .find(|line| line["method"] == "session.send")
    {
        translator.send_sent(&send["id"]);
    }
    let mut rendered = Vec::new();
    let mut ended = false;
    for line in transcript.stdout.lines().filter(|l| !l.trim().is_empty()) {
        for output in translator.on_message(line).unwrap() {
            match output {
                Output::Signal(signal) => {
                    assert!(!ended, "a signal after the turn ended");
                    rendered.push(signal_json(&signal));
                    match &signal {
                        AgentSignal::Action(a) => {
                            assert_eq!(a.parent_tool_call_id, None);
                            apply(&mut host, &a.action, "agent action");
                        }
                        AgentSignal::PendingConfirmation(pending) => {
                            apply(&mut host, &pending_ready_action(pending), "pending ready");
                        }
                        AgentSignal::ModelCallCompleted(_) => {}
                        other => panic!("unexpected signal {other:?}"),
                    }
                }
                Output::PermissionRequest {
                    request_id,
                    tool_call_id,
                } => {
                    let approved = decision(transcript.stdin, &request_id);
                    let answer = client_answer(&tool_call_id, approved);
                    rendered.push(json!({ "client": serde_json::to_value(&answer).unwrap() }));
                    apply(&mut host, &answer, "client answer");
                    translator.record_decision(&tool_call_id, approved);
                }
                Output::TurnEnded => ended = true,
                Output::Response { result, .. } => assert!(result.is_ok()),
                other => panic!("unexpected output {other:?}"),
            }
        }
    }
    assert!(ended, "{}: the turn did not end", transcript.name);
    (rendered, host.chat(CHAT).unwrap().clone())
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
    assert_eq!(mapped, own, "{}: map_transcript differs", transcript.name);
    let snapshot = json!({ "signals": signals, "title": chat.title, "turn": chat.turns[0] });
    // Maps sorted: `serde_json` keeps insertion order in builds where a dependency turns
    // that on, and the snapshot must not depend on the build.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!(transcript.name, snapshot);
    });
}

#[test]
fn sdk_approve() {
    check(transcript!("sdk-approve", stdin), TurnState::Complete);
}

#[test]
fn sdk_reject() {
    check(transcript!("sdk-reject", stdin), TurnState::Complete);
}

#[test]
fn prompt_allowall() {
    check(transcript!("prompt-allowall"), TurnState::Complete);
}

#[test]
fn prompt_noallow() {
    check(transcript!("prompt-noallow"), TurnState::Complete);
}

#[test]
fn prompt_responses() {
    check(transcript!("prompt-responses"), TurnState::Complete);
}

#[test]
fn prompt_anthropic() {
    check(transcript!("prompt-anthropic"), TurnState::Complete);
}

#[test]
fn prompt_api_error() {
    check(transcript!("prompt-api-error"), TurnState::Error);
}

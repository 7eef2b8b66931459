//! The captured `copilot --acp` transcripts replayed through the translator, as
//! `agent-host map --provider acp` maps them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agenthost_protocol::{SafeId, SessionUri};
use agenthost_provider_acp::map_transcript;
use agenthost_provider_api::signal_json;
use serde_json::Value;

fn mapped(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let session = SessionUri::canonical(SafeId::new("map").unwrap());
    map_transcript(session, "turn-1", &text)
        .unwrap()
        .iter()
        .map(signal_json)
        .map(|mut signal| {
            // Durations come from the clock of the replay, not from the transcript.
            if let Some(duration) = signal.get_mut("duration") {
                *duration = Value::from("[measured]");
            }
            signal
        })
        .collect()
}

fn kinds(signals: &[Value]) -> Vec<&str> {
    signals
        .iter()
        .filter_map(|s| {
            s.get("type")
                .or_else(|| s.get("signal"))
                .and_then(Value::as_str)
        })
        .collect()
}

#[test]
fn an_approved_shell_call_runs_and_the_turn_completes() {
    let signals = mapped("acp-allow.stdout.jsonl");
    let kinds = kinds(&signals);
    assert!(kinds.contains(&"session/titleChanged"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"chat/turnComplete"), "{kinds:?}");
    let complete = signals
        .iter()
        .find(|s| s["type"] == "chat/toolCallComplete")
        .unwrap();
    assert_eq!(complete["result"]["success"], true, "{complete}");
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("acp_allow", signals);
    });
}

#[test]
fn a_rejected_shell_call_completes_as_denied() {
    let signals = mapped("acp-reject.stdout.jsonl");
    let complete = signals
        .iter()
        .find(|s| s["type"] == "chat/toolCallComplete")
        .unwrap();
    assert_eq!(complete["result"]["success"], false, "{complete}");
    assert_eq!(complete["result"]["error"]["code"], "denied", "{complete}");
    assert_eq!(kinds(&signals).last(), Some(&"chat/turnComplete"));
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("acp_reject", signals);
    });
}

/// What `claude-agent-acp` 0.101.0 (over Claude Code 2.1.328) and `codex-acp` 2.6.0 wrote for an
/// approved and a rejected shell command against the mock model.
#[test]
fn the_adapters_transcripts_map_their_tool_calls_and_turn_ends() {
    for (name, success, last) in [
        ("claude-agent-acp-allow", true, "chat/turnComplete"),
        ("claude-agent-acp-reject", false, "chat/turnComplete"),
        ("codex-acp-allow", true, "chat/turnComplete"),
        // codex-acp offers only "No, and tell Codex what to do differently" for this command,
        // and Codex cancels its turn on it.
        ("codex-acp-reject", false, "chat/turnCancelled"),
    ] {
        let signals = mapped(&format!("{name}.stdout.jsonl"));
        let complete = signals
            .iter()
            .find(|s| s["type"] == "chat/toolCallComplete")
            .unwrap_or_else(|| panic!("{name}: no tool call completed"));
        assert_eq!(complete["result"]["success"], success, "{name}: {complete}");
        let kinds = kinds(&signals);
        let end = kinds
            .iter()
            .rfind(|kind| kind.starts_with("chat/turn"))
            .unwrap_or_else(|| panic!("{name}: no turn end in {kinds:?}"));
        assert_eq!(*end, last, "{name}");
        insta::with_settings!({ sort_maps => true }, {
            insta::assert_json_snapshot!(name.replace('-', "_"), signals);
        });
    }
}

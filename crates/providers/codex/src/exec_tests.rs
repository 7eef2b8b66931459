use agenthost_protocol::{SafeId, SessionUri};
use agenthost_provider_api::signal_json;
use serde_json::{Value, json};

use super::*;

fn translator() -> ExecTranslator {
    let mut translator = ExecTranslator::new(SessionUri::canonical(SafeId::new("s1").unwrap()));
    translator.begin_turn("t1");
    translator
}

fn feed(translator: &mut ExecTranslator, lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .flat_map(|line| translator.on_line(&line.to_string()).unwrap())
        .filter_map(|output| match output {
            Output::Signal(signal) => Some(signal_json(&signal)),
            _ => None,
        })
        .collect()
}

#[test]
fn unknown_lines_and_items_are_ignored_and_bad_ones_are_errors() {
    let mut t = translator();
    assert_eq!(
        feed(
            &mut t,
            &[
                json!({ "type": "item.plan.delta", "item_id": "p", "delta": "x" }),
                json!({ "type": "item.completed",
                        "item": { "id": "item_0", "type": "todo_list", "items": [] } }),
            ]
        ),
        Vec::<Value>::new()
    );
    for line in [
        json!({ "thread_id": "x" }),
        json!({ "type": "thread.started" }),
        json!({ "type": "item.completed", "item": { "type": "agent_message" } }),
    ] {
        let error = t.on_line(&line.to_string()).unwrap_err();
        assert!(
            matches!(error.kind(), LineErrorKind::Malformed { .. }),
            "{line}"
        );
    }
    assert_eq!(
        t.on_line("nope").unwrap_err().kind(),
        &LineErrorKind::NotAnObject
    );
}

#[test]
fn a_command_still_running_at_the_end_fails() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            json!({ "type": "item.started", "item": { "id": "item_1", "type": "command_execution",
                    "command": "sleep 9", "aggregated_output": "", "exit_code": null,
                    "status": "in_progress" } }),
            json!({ "type": "item.updated", "item": { "id": "item_1", "type": "command_execution",
                    "command": "sleep 9", "aggregated_output": "", "exit_code": null,
                    "status": "in_progress" } }),
            json!({ "type": "turn.completed", "usage": { "input_tokens": 1, "output_tokens": 2 } }),
        ],
    );
    let types: Vec<&str> = out.iter().map(|s| s["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "chat/toolCallStart",
            "chat/toolCallDelta",
            "chat/toolCallReady",
            "chat/toolCallComplete",
            "chat/usage",
            "chat/turnComplete"
        ]
    );
    assert_eq!(out[3]["result"]["success"], false);
    assert_eq!(t.turn_id(), None);
}

#[test]
fn file_changes_and_mcp_calls_map_like_the_app_server_s() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            json!({ "type": "item.completed", "item": { "id": "item_1", "type": "file_change",
                    "changes": [{ "path": "/w/a.txt", "kind": "update" }], "status": "completed" } }),
            json!({ "type": "item.completed", "item": { "id": "item_2", "type": "mcp_tool_call",
                    "server": "s", "tool": "t", "arguments": {}, "result": null,
                    "error": { "message": "no" }, "status": "failed" } }),
        ],
    );
    let completions: Vec<&Value> = out
        .iter()
        .filter(|s| s["type"] == "chat/toolCallComplete")
        .map(|s| &s["result"])
        .collect();
    assert_eq!(
        completions,
        [
            &json!({ "success": true, "pastTenseMessage": "Edited `/w/a.txt`",
                     "content": [{ "type": "text", "text": "update /w/a.txt" }] }),
            &json!({ "success": false, "pastTenseMessage": "`s.t` failed",
                     "error": { "message": "no" } }),
        ]
    );
}

#[test]
fn a_failed_run_shows_the_api_s_message() {
    assert_eq!(
        readable_error(r#"{"error": {"message": "rate limited"}}"#),
        ErrorInfo {
            error_type: CODEX_ERROR.into(),
            message: "rate limited".into(),
            stack: Some(r#"{"error": {"message": "rate limited"}}"#.into()),
            meta: None,
        }
    );
    assert_eq!(readable_error("plain").message, "plain");
    assert_eq!(readable_error("").message, "Codex reported an error.");
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            json!({ "type": "error", "message": "first" }),
            json!({ "type": "turn.failed", "error": {} }),
        ],
    );
    assert_eq!(out[0]["part"]["error"]["message"], "first");
}

#[test]
fn collab_tool_names_follow_the_app_server_s_spelling() {
    assert_eq!(snake_to_camel("spawn_agent"), "spawnAgent");
    assert_eq!(snake_to_camel("wait"), "wait");
}

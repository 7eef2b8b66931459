use serde_json::json;

use super::*;

fn body(value: Value) -> Json {
    Json::from(&value)
}

#[test]
fn texts_split_into_about_three_deltas_that_join_back() {
    assert_eq!(
        split_text(PREAMBLE),
        ["I'll run a ", "shell command to ", "create the file."]
    );
    assert_eq!(split_text(FINAL_TEXT).concat(), FINAL_TEXT);
    assert_eq!(split_text(FINAL_TEXT).len(), 3);
    assert_eq!(split_text("Mock reply"), ["Mock ", "reply"]);
}

#[test]
fn json_splits_into_equal_fragments_and_an_empty_text_into_none() {
    assert_eq!(split_json("abcdefghij"), ["abc", "def", "ghi", "j"]);
    assert_eq!(split_json("ab"), ["a", "b"]);
    assert!(split_json("").is_empty());
}

#[test]
fn the_preferred_shell_tool_wins_whatever_the_order() {
    let request = body(json!({"tools": [
        {"type": "function", "function": {"name": "shell_command", "parameters": {}}},
        {"name": "Read"},
        {"name": "Bash", "input_schema": {"type": "object"}},
    ]}));
    assert_eq!(
        pick_shell_tool(&request).map(|(name, _)| name),
        Some("Bash")
    );
    let request = body(json!({"tools": [{"type": "local_shell"}, {"name": "view"}]}));
    assert_eq!(
        pick_shell_tool(&request).map(|(name, _)| name),
        Some("local_shell")
    );
    let request = body(json!({"tools": [{"name": "view"}], "messages": []}));
    assert_eq!(pick_shell_tool(&request), None);
}

#[test]
fn required_fields_are_filled_from_the_schema() {
    let tool = body(
        json!({"name": "bash", "parameters": {"type": "object", "properties": {
        "command": {"type": "string"},
        "description": {"type": "string"},
        "mode": {"type": "string", "enum": ["sync", "async"]},
        "initial_wait": {"type": "integer"},
        "count": {"type": "number"},
        "detach": {"type": "boolean"},
        "paths": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "object"},
        "shellId": {"type": "string"},
        "either": {"type": ["string", "null"]},
        "optional": {"type": "string"},
    }, "required": ["command", "description", "mode", "initial_wait", "count", "detach", "paths",
                    "env", "shellId", "either", "missing"]}}),
    );
    let args = shell_args("bash", &tool, &MockModelConfig::default());
    assert_eq!(
        args.dumps(),
        r#"{"command": "echo hi > out.txt", "description": "Write hi to out.txt", "mode": "sync", "initial_wait": 30, "count": 1, "detach": false, "paths": [], "env": {}, "shellId": "mock"}"#
    );
}

#[test]
fn codex_gets_cmd_workdir_and_escalation_when_its_schema_has_them() {
    let tool = body(
        json!({"type": "function", "name": "exec_command", "parameters": {
        "type": "object",
        "properties": {"cmd": {}, "workdir": {}, "sandbox_permissions": {}, "justification": {}},
        "required": ["cmd"]}}),
    );
    let config = MockModelConfig {
        command: "touch x".into(),
        escalate: true,
        workdir: Some("/w".into()),
        ..MockModelConfig::default()
    };
    assert_eq!(
        shell_args("exec_command", &tool, &config).dumps(),
        r#"{"cmd": "touch x", "workdir": "/w", "sandbox_permissions": "require_escalated", "justification": "Need to write out.txt"}"#
    );
    let plain = shell_args("exec_command", &tool, &MockModelConfig::default());
    assert_eq!(plain.dumps(), r#"{"cmd": "echo hi > out.txt"}"#);
}

#[test]
fn array_commands_get_an_argv() {
    let shell = body(
        json!({"name": "shell", "parameters": {"properties": {"command": {"type": "array"}}}}),
    );
    assert_eq!(
        shell_args("shell", &shell, &MockModelConfig::default()).dumps(),
        r#"{"command": ["bash", "-lc", "echo hi > out.txt"]}"#
    );
    let local = body(json!({"type": "local_shell"}));
    assert_eq!(
        shell_args("local_shell", &local, &MockModelConfig::default()).dumps(),
        r#"{"command": ["bash", "-lc", "echo hi > out.txt"]}"#
    );
}

#[test]
fn failed_or_denied_results_get_the_error_aware_text() {
    let text = |output: Value| final_text_for(false, Some(&body(output)));
    assert_eq!(
        text(json!("Process exited with code 0\nOutput:\n")),
        FINAL_TEXT
    );
    assert_eq!(text(json!("Process exited with code 2")), FINAL_TEXT_ERR);
    assert_eq!(text(json!("exit code: 127")), FINAL_TEXT_ERR);
    assert_eq!(text(json!("exit code 0")), FINAL_TEXT);
    assert_eq!(text(json!("User DENIED this command")), FINAL_TEXT_ERR);
    assert_eq!(text(json!("touch: Read-only file system")), FINAL_TEXT_ERR);
    assert_eq!(
        text(json!([{"type": "text", "text": "rejected"}])),
        FINAL_TEXT_ERR
    );
    assert_eq!(text(json!({"stdout": "hi"})), FINAL_TEXT);
    assert_eq!(final_text_for(true, None), FINAL_TEXT_ERR);
    assert_eq!(final_text_for(false, None), FINAL_TEXT);
}

#[test]
fn short_cuts_characters_not_bytes() {
    assert_eq!(short_text("héllo", 5), "héllo");
    assert_eq!(short_text("héllo!", 5), "héllo...(6 chars)");
    assert_eq!(short(Some(&body(json!({"a": 1}))), 120), r#"{"a": 1}"#);
    assert_eq!(short(None, 120), "null");
}

#[test]
fn ids_look_like_the_reference() {
    let id = new_id("toolu");
    assert_eq!(id.len(), "toolu_".len() + 24);
    assert!(id["toolu_".len()..].chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(new_id("msg"), new_id("msg"));
    assert_eq!(random_hex(16).len(), 16);
}

use std::collections::HashSet;

use agenthost_protocol::error_info::error_info;
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use agenthost_provider_api::signal_json;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

const PARTIAL: &str = include_str!("../tests/fixtures/print-partial.stdout.jsonl");
const THINKING: &str = include_str!("../tests/fixtures/stdin-partial-thinking.stdout.jsonl");

fn session() -> SessionUri {
    SessionUri::canonical(SafeId::new("s1").unwrap())
}

fn translator() -> Translator {
    let mut translator = Translator::new(session());
    translator.begin_turn("t1");
    translator
}

fn feed(translator: &mut Translator, lines: &[Value]) -> Vec<Output> {
    lines
        .iter()
        .flat_map(|line| translator.on_line(&line.to_string()).unwrap())
        .collect()
}

/// The rendered signals among `outputs`.
fn signals(outputs: &[Output]) -> Vec<Value> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Signal(signal) => Some(signal_json(signal)),
            _ => None,
        })
        .collect()
}

/// `type` (or `signal`) of each rendered signal, with `@parent` when scoped.
fn shape(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|value| {
            let name = value
                .get("type")
                .or_else(|| value.get("signal"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            match value.get("parentToolCallId").and_then(Value::as_str) {
                Some(parent) => format!("{name}@{parent}"),
                None => name.to_owned(),
            }
        })
        .collect()
}

fn assistant(message: &str, parent: Option<&str>, block: Value) -> Value {
    json!({
        "type": "assistant",
        "message": { "id": message, "role": "assistant", "model": "m", "content": [block] },
        "parent_tool_use_id": parent, "session_id": "cli-1"
    })
}

fn text_block(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({ "type": "tool_use", "id": id, "name": name, "input": input })
}

fn tool_result(id: &str, content: &str, is_error: bool, parent: Option<&str>) -> Value {
    json!({
        "type": "user",
        "message": { "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error }
        ]},
        "parent_tool_use_id": parent
    })
}

fn result(extra: Value) -> Value {
    let mut line = json!({
        "type": "result", "subtype": "success", "is_error": false, "duration_ms": 12,
        "result": "done", "session_id": "cli-1",
        "usage": { "input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 1 },
        "modelUsage": { "m": {} }
    });
    if let (Value::Object(line), Value::Object(extra)) = (&mut line, extra) {
        line.extend(extra);
    }
    line
}

fn can_use_tool(request_id: &str, tool_use_id: Option<&str>, tool: &str) -> Value {
    json!({
        "type": "control_request", "request_id": request_id,
        "request": {
            "subtype": "can_use_tool", "tool_name": tool, "display_name": tool,
            "input": { "command": "ls" }, "blocked_path": "/w/x", "tool_use_id": tool_use_id
        }
    })
}

#[test]
fn partial_mode_creates_parts_before_their_deltas_and_never_duplicates_text() {
    for transcript in [PARTIAL, THINKING] {
        let signals: Vec<Value> = map_transcript(session(), "t1", transcript)
            .unwrap()
            .iter()
            .map(signal_json)
            .collect();
        let mut parts: Vec<(String, String)> = Vec::new();
        for signal in &signals {
            match signal["type"].as_str() {
                Some("chat/responsePart") => parts.push((
                    signal["part"]["id"].as_str().unwrap().to_owned(),
                    signal["part"]["content"].as_str().unwrap().to_owned(),
                )),
                Some("chat/delta" | "chat/reasoning") => {
                    let id = signal["partId"].as_str().unwrap();
                    let part = parts.iter_mut().find(|(part, _)| part == id);
                    let (_, text) = part.expect("the part exists before its delta");
                    text.push_str(signal["content"].as_str().unwrap());
                }
                _ => {}
            }
        }
        let texts: Vec<&str> = parts
            .iter()
            .map(|(_, text)| text.as_str())
            .filter(|text| !text.starts_with("The user wants"))
            .collect();
        assert_eq!(
            texts,
            [
                "I'll run a shell command to create the file.",
                "Done. I ran the command and the file out.txt now contains \"hi\"."
            ]
        );
    }
}

#[test]
fn streamed_part_ids_name_the_turn_message_and_block() {
    let signals = map_transcript(session(), "t1", THINKING).unwrap();
    let ids: Vec<String> = signals
        .iter()
        .map(signal_json)
        .filter(|s| s["type"] == "chat/responsePart")
        .map(|s| s["part"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ids,
        [
            "t1#msg_63367b816d454f8ea6416bdb#0",
            "t1#msg_63367b816d454f8ea6416bdb#1",
            "t1#msg_253c5c96c7424132b1a5558e#0"
        ]
    );
}

#[test]
fn without_partial_messages_each_block_line_is_numbered_like_the_stream() {
    let mut t = translator();
    let out = signals(&feed(
        &mut t,
        &[
            assistant(
                "msg_1",
                None,
                json!({ "type": "thinking", "thinking": "hmm" }),
            ),
            assistant("msg_1", None, text_block("Hello")),
            assistant(
                "msg_1",
                None,
                tool_use("toolu_1", "Bash", json!({ "command": "ls" })),
            ),
        ],
    ));
    assert_eq!(
        out,
        vec![
            json!({"type": "chat/responsePart", "turnId": "t1",
                   "part": {"kind": "reasoning", "id": "t1#msg_1#0", "content": "hmm"}}),
            json!({"type": "chat/responsePart", "turnId": "t1",
                   "part": {"kind": "markdown", "id": "t1#msg_1#1", "content": "Hello"}}),
            json!({"type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "toolu_1",
                   "toolName": "Bash", "displayName": "Bash"}),
            json!({"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "toolu_1",
                   "invocationMessage": "Run `ls`", "toolInput": "{\"command\":\"ls\"}",
                   "confirmed": "not-needed"}),
        ]
    );
}

fn subagent_transcript() -> Vec<Value> {
    vec![
        assistant("msg_1", None, text_block("Delegating.")),
        assistant(
            "msg_1",
            None,
            tool_use(
                "toolu_task",
                "Task",
                json!({ "description": "Find files", "subagent_type": "Explore",
                        "prompt": "List the files" }),
            ),
        ),
        json!({ "type": "user", "message": { "role": "user", "content": "List the files" },
                "parent_tool_use_id": "toolu_task" }),
        assistant("msg_2", Some("toolu_task"), text_block("Looking.")),
        assistant(
            "msg_2",
            Some("toolu_task"),
            tool_use("toolu_ls", "Bash", json!({ "command": "ls" })),
        ),
        tool_result("toolu_ls", "a.txt", false, Some("toolu_task")),
        assistant("msg_3", Some("toolu_task"), text_block("Found a.txt.")),
        tool_result("toolu_task", "Found a.txt.", false, None),
        assistant("msg_4", None, text_block("Done.")),
        result(json!({})),
    ]
}

#[test]
fn a_subagent_is_announced_before_its_first_action_and_completed_after_its_last() {
    let mut t = translator();
    let out = signals(&feed(&mut t, &subagent_transcript()));
    assert_eq!(
        shape(&out),
        [
            "chat/responsePart",
            "chat/toolCallStart",
            "chat/toolCallReady",
            "subagentStarted",
            "chat/responsePart@toolu_task",
            "chat/toolCallStart@toolu_task",
            "chat/toolCallReady@toolu_task",
            "chat/toolCallComplete@toolu_task",
            "chat/responsePart@toolu_task",
            "subagentCompleted",
            "chat/toolCallComplete",
            "chat/responsePart",
            "chat/usage",
            "chat/turnComplete",
        ]
    );
    let chat = ChatUri::subagent(&session(), &SafeId::new("toolu_task").unwrap());
    assert_eq!(
        out[3],
        json!({"signal": "subagentStarted", "chat": chat.as_str(), "toolCallId": "toolu_task",
               "agentName": "Explore", "agentDisplayName": "Explore",
               "taskDescription": "Find files", "taskPrompt": "List the files"})
    );
    assert_eq!(
        out[2]["_meta"],
        json!({"subagentDescription": "Find files", "subagentAgentName": "Explore"})
    );
    assert_eq!(out[2]["invocationMessage"], "Find files");
    assert_eq!(
        out[10]["result"]["pastTenseMessage"],
        "Finished: Find files"
    );
}

#[test]
fn a_background_subagent_ends_at_its_task_notification() {
    let mut t = translator();
    let mut lines = subagent_transcript();
    lines.insert(
        2,
        json!({ "type": "system", "subtype": "task_started", "tool_use_id": "toolu_task",
                "task_id": "task-1" }),
    );
    let result_line = lines.pop().unwrap();
    lines.push(json!({ "type": "system", "subtype": "task_notification",
                       "tool_use_id": "toolu_task", "status": "completed" }));
    lines.push(result_line);
    let out = shape(&signals(&feed(&mut t, &lines)));
    let completed = out.iter().position(|s| s == "subagentCompleted").unwrap();
    let task_done = out
        .iter()
        .position(|s| s == "chat/toolCallComplete")
        .unwrap();
    assert!(
        completed > task_done,
        "the Task's result does not end a background subagent: {out:?}"
    );
    assert_eq!(out.iter().filter(|s| *s == "subagentCompleted").count(), 1);
}

#[test]
fn lines_that_are_not_json_objects_are_errors() {
    let mut t = translator();
    for line in [
        "",
        "not json",
        "[1,2]",
        "42",
        "\"text\"",
        "null",
        "{\"type\":",
    ] {
        let error = t.on_line(line).unwrap_err();
        assert_eq!(error.kind(), &LineErrorKind::NotAnObject, "{line:?}");
        assert_eq!(error.to_string(), format!("not a JSON object: {line}"));
    }
    let long = "x".repeat(500);
    let error = t.on_line(&long).unwrap_err();
    assert_eq!(error.snippet().chars().count(), 201);
    assert!(error.snippet().ends_with('…'));
}

#[test]
fn known_lines_of_the_wrong_shape_are_errors_and_unknown_ones_are_ignored() {
    let mut t = translator();
    for line in [
        json!({ "type": "assistant", "message": "nope" }),
        json!({ "type": 5 }),
        json!({ "no_type": true }),
        json!({ "type": "system" }),
        json!({ "type": "control_request", "request": { "subtype": "can_use_tool" } }),
    ] {
        let error = t.on_line(&line.to_string()).unwrap_err();
        assert!(
            matches!(error.kind(), LineErrorKind::Malformed { .. }),
            "{line}: {error}"
        );
        assert!(error.to_string().starts_with("malformed line ("), "{error}");
    }
    for line in [
        json!({ "type": "keep_alive" }),
        json!({ "type": "system", "subtype": "compact_boundary" }),
        json!({ "type": "stream_event", "event": { "type": "ping" } }),
        assistant(
            "msg_9",
            None,
            json!({ "type": "server_tool_use", "id": "x" }),
        ),
        json!({ "type": "user", "message": { "role": "user", "content": [
            { "type": "image", "source": {} } ] } }),
    ] {
        assert_eq!(t.on_line(&line.to_string()).unwrap(), Vec::new(), "{line}");
    }
}

#[test]
fn lines_outside_a_turn_still_report_the_session_and_control_responses() {
    let mut t = Translator::new(session());
    assert!(!t.turn_active());
    let out = feed(
        &mut t,
        &[
            json!({ "type": "control_response",
                    "response": { "subtype": "success", "request_id": "init-1", "response": {} } }),
            json!({ "type": "system", "subtype": "init", "session_id": "cli-1", "model": "m" }),
            json!({ "type": "system", "subtype": "init", "session_id": "cli-1", "model": "m" }),
            assistant("msg_1", None, text_block("stray")),
            tool_result("toolu_1", "stray", false, None),
            json!({ "type": "stream_event",
                    "event": { "type": "message_start", "message": { "id": "msg_2" } } }),
            can_use_tool("req-1", Some("toolu_1"), "Bash"),
            result(json!({ "session_id": "cli-2" })),
        ],
    );
    assert_eq!(
        out,
        vec![
            Output::ControlResponse {
                request_id: "init-1".into(),
                success: true,
                error: None
            },
            Output::SessionId("cli-1".into()),
            Output::DenyPermission {
                request_id: "req-1".into(),
                message: "No turn is running, so nobody can approve this tool call.".into()
            },
            Output::SessionId("cli-2".into()),
        ]
    );
    assert_eq!(t.session_id(), Some("cli-2"));
}

#[test]
fn a_permission_request_emits_the_pending_confirmation_then_the_request() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            assistant(
                "msg_1",
                None,
                tool_use("toolu_1", "Bash", json!({ "command": "ls" })),
            ),
            can_use_tool("req-1", Some("toolu_1"), "Bash"),
        ],
    );
    assert_eq!(out.len(), 4);
    assert_eq!(
        signal_json(match &out[2] {
            Output::Signal(signal) => signal,
            other => panic!("{other:?}"),
        }),
        json!({"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "toolu_1",
               "invocationMessage": "Run `ls`", "toolInput": "{\"command\":\"ls\"}",
               "confirmationTitle": "Run command", "permissionKind": "shell",
               "permissionPath": "/w/x"})
    );
    assert_eq!(
        out[3],
        Output::PermissionRequest {
            request_id: "req-1".into(),
            tool_use_id: "toolu_1".into(),
            input: json!({ "command": "ls" })
        }
    );
}

#[test]
fn permission_requests_nobody_can_answer_are_denied_at_once() {
    let mut t = translator();
    let deny = |out: Vec<Output>| match out.as_slice() {
        [Output::DenyPermission { request_id, .. }] => request_id.clone(),
        other => panic!("{other:?}"),
    };
    let no_id = feed(&mut t, &[can_use_tool("req-1", None, "Bash")]);
    assert_eq!(deny(no_id), "req-1");
    let question = feed(
        &mut t,
        &[can_use_tool("req-2", Some("toolu_q"), "AskUserQuestion")],
    );
    assert_eq!(deny(question), "req-2");
    feed(
        &mut t,
        &[
            assistant("msg_1", None, tool_use("toolu_1", "Bash", json!({}))),
            tool_result("toolu_1", "ok", false, None),
        ],
    );
    let completed = feed(&mut t, &[can_use_tool("req-3", Some("toolu_1"), "Bash")]);
    assert_eq!(deny(completed), "req-3");
}

fn ask_user_question(request_id: &str, tool_use_id: &str, input: &Value) -> Value {
    json!({
        "type": "control_request", "request_id": request_id,
        "request": {
            "subtype": "can_use_tool", "tool_name": "AskUserQuestion",
            "display_name": "AskUserQuestion", "input": input, "tool_use_id": tool_use_id
        }
    })
}

#[test]
fn ask_user_question_asks_for_input_and_its_call_completes_from_the_tool_result() {
    let input = json!({ "questions": [{
        "question": "Which color?", "header": "Color", "multiSelect": false,
        "options": [
            { "label": "Red", "description": "Warm" },
            { "label": "Blue", "description": "Cool" }
        ]
    }]});
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            assistant(
                "msg_1",
                None,
                tool_use("toolu_q", "AskUserQuestion", input.clone()),
            ),
            ask_user_question("req-1", "toolu_q", &input),
        ],
    );
    let values = signals(&out);
    assert_eq!(
        shape(&values),
        [
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/inputRequested"
        ]
    );
    assert_eq!(
        values[2],
        json!({"type": "chat/inputRequested", "request": {
            "id": "ask-toolu_q",
            "questions": [{
                "kind": "single-select", "id": "q0", "title": "Color",
                "message": "Which color?", "required": true, "allowFreeformInput": true,
                "options": [
                    { "id": "o0", "label": "Red", "description": "Warm" },
                    { "id": "o1", "label": "Blue", "description": "Cool" }
                ]
            }]
        }})
    );
    assert_eq!(
        out.last(),
        Some(&Output::InputRequest {
            request_id: "req-1".into(),
            input_request_id: "ask-toolu_q".into(),
            input: input.clone(),
        })
    );
    // The echo of the host's answer is not a response to the host; the tool result completes
    // the call the tool_use started.
    let mut answered = input.clone();
    answered["answers"] = json!({ "Which color?": "Blue" });
    let done = feed(
        &mut t,
        &[
            json!({ "type": "control_response", "response": { "subtype": "success",
                    "request_id": "req-1",
                    "response": { "behavior": "allow", "updatedInput": answered } } }),
            tool_result(
                "toolu_q",
                "User has answered your questions: \"Which color?\"=\"Blue\".",
                false,
                None,
            ),
        ],
    );
    assert_eq!(shape(&signals(&done)), ["chat/toolCallComplete"]);
    let complete = completion(&done);
    assert_eq!(complete["toolCallId"], "toolu_q");
    assert_eq!(complete["result"]["success"], true);
}

#[test]
fn questions_that_cannot_be_shown_are_denied_at_once() {
    let mut t = translator();
    let deny = |out: Vec<Output>| match out.as_slice() {
        [Output::DenyPermission { request_id, .. }] => request_id.clone(),
        other => panic!("{other:?}"),
    };
    let no_questions = feed(
        &mut t,
        &[ask_user_question(
            "req-1",
            "toolu_q",
            &json!({ "questions": [] }),
        )],
    );
    assert_eq!(deny(no_questions), "req-1");
    let unsafe_id = feed(
        &mut t,
        &[ask_user_question(
            "req-2",
            "toolu\u{7}",
            &json!({ "questions": [{ "question": "Why?" }] }),
        )],
    );
    assert_eq!(deny(unsafe_id), "req-2");
}

#[test]
fn echoed_answers_and_replayed_messages_are_ignored() {
    let mut t = translator();
    feed(&mut t, &[can_use_tool("req-1", Some("toolu_1"), "Bash")]);
    let out = feed(
        &mut t,
        &[
            json!({ "type": "control_response", "response": { "subtype": "success",
                    "request_id": "req-1", "response": { "behavior": "allow" } } }),
            json!({ "type": "user", "message": { "role": "user", "content": "hi" },
                    "isReplay": true }),
            json!({ "type": "control_response", "response": { "subtype": "error",
                    "request_id": "intr-1", "error": "no turn" } }),
        ],
    );
    assert_eq!(
        out,
        vec![Output::ControlResponse {
            request_id: "intr-1".into(),
            success: false,
            error: Some("no turn".into())
        }]
    );
}

#[test]
fn other_control_requests_are_reported_as_unsupported() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[json!({ "type": "control_request", "request_id": "r9",
                  "request": { "subtype": "hook_callback", "callback_id": "x" } })],
    );
    assert_eq!(
        out,
        vec![Output::UnsupportedControlRequest {
            request_id: "r9".into(),
            subtype: "hook_callback".into()
        }]
    );
}

fn completion(out: &[Output]) -> Value {
    signals(out)
        .into_iter()
        .find(|s| s["type"] == "chat/toolCallComplete")
        .unwrap()
}

#[test]
fn tool_results_tell_denials_from_failures() {
    let run = |extra: Value, denied_line: bool| {
        let mut t = translator();
        let mut lines = vec![assistant(
            "msg_1",
            None,
            tool_use("toolu_1", "Bash", json!({ "command": "ls" })),
        )];
        if denied_line {
            lines.push(json!({ "type": "system", "subtype": "permission_denied",
                               "tool_name": "Bash", "tool_use_id": "toolu_1", "message": "no" }));
        }
        let mut user = tool_result("toolu_1", "nope", true, None);
        if let (Value::Object(user), Value::Object(extra)) = (&mut user, extra) {
            user.extend(extra);
        }
        lines.push(user);
        completion(&feed(&mut t, &lines))["result"].clone()
    };
    let reject = json!({ "tool_result_meta": [{ "id": "toolu_1",
        "permission_decision": { "decision": "reject", "source": "user_reject" } }] });
    let not_run = json!({ "tool_result_meta": [{ "id": "toolu_1",
        "non_execution_kind": "permission-rule" }] });
    for result in [
        run(reject, false),
        run(not_run, false),
        run(json!({}), true),
    ] {
        assert_eq!(
            result,
            json!({"success": false, "pastTenseMessage": "Bash was denied",
                   "content": [{"type": "text", "text": "nope"}],
                   "error": {"message": "nope", "code": "denied"}})
        );
    }
    assert_eq!(
        run(json!({}), false),
        json!({"success": false, "pastTenseMessage": "Bash failed",
               "content": [{"type": "text", "text": "nope"}],
               "error": {"message": "nope"}})
    );
}

#[test]
fn a_successful_result_carries_the_tool_s_structured_result_and_text_items() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            assistant(
                "msg_1",
                None,
                tool_use("toolu_1", "Read", json!({ "file_path": "/a" })),
            ),
            json!({ "type": "user", "message": { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_1",
                  "content": [{ "type": "text", "text": "line 1" },
                              { "type": "text", "text": "line 2" }] } ] },
                    "tool_use_result": { "file": { "numLines": 2 } } }),
        ],
    );
    assert_eq!(
        completion(&out)["result"],
        json!({"success": true, "pastTenseMessage": "Read /a",
               "content": [{"type": "text", "text": "line 1\nline 2"}],
               "structuredContent": {"file": {"numLines": 2}}})
    );
}

fn terminal(extra: Value) -> Vec<Value> {
    let mut t = translator();
    let out = feed(&mut t, &[result(extra)]);
    assert_eq!(out.last(), Some(&Output::TurnEnded));
    assert!(!t.turn_active());
    signals(&out)
}

#[test]
fn a_result_reports_usage_then_completes_the_turn() {
    assert_eq!(
        terminal(json!({})),
        vec![
            // Anthropic's input count leaves the cached tokens out; the host counts them in.
            json!({"type": "chat/usage", "turnId": "t1",
                   "usage": {"inputTokens": 11, "outputTokens": 2, "model": "m",
                             "cacheReadTokens": 1,
                             "_meta": {"agenthost.cacheWriteTokens": 0}}}),
            json!({"type": "chat/turnComplete", "turnId": "t1", "duration": 12}),
        ]
    );
}

#[test]
fn the_dollar_cost_is_never_reported_as_credits() {
    let out = terminal(json!({ "total_cost_usd": 0.0016 }));
    assert_eq!(
        out[0]["usage"]["_meta"],
        json!({ "agenthost.agentCostUsd": 0.0016, "agenthost.cacheWriteTokens": 0 }),
        "VS Code shows `cost` as credits: dollars go under their own key"
    );
}

/// A streamed model call's usage: `message_start` has the input and cache counts, the
/// `assistant` line a partial output count, `message_delta` the final one.
fn streamed_call(id: &str, parent: Option<&str>, input: u64, output: u64) -> Vec<Value> {
    let event = |event: Value| json!({ "type": "stream_event", "event": event, "parent_tool_use_id": parent });
    vec![
        event(
            json!({ "type": "message_start", "message": { "id": id, "model": "claude-x",
            "usage": { "input_tokens": input, "cache_read_input_tokens": 1000,
                       "cache_creation_input_tokens": 500, "output_tokens": 1 } } }),
        ),
        json!({ "type": "assistant", "parent_tool_use_id": parent,
                "message": { "id": id, "model": "claude-x", "content": [],
                  "usage": { "input_tokens": input, "cache_read_input_tokens": 1000,
                             "cache_creation_input_tokens": 500, "output_tokens": 1 } } }),
        event(
            json!({ "type": "message_delta", "delta": {}, "usage": { "output_tokens": output } }),
        ),
        event(json!({ "type": "message_stop" })),
    ]
}

#[test]
fn each_model_calls_usage_is_reported_as_it_arrives_with_cache_writes_counted_in() {
    let mut t = translator();
    let mut lines = streamed_call("msg-1", None, 10, 20);
    lines.extend(streamed_call("msg-2", None, 30, 40));
    let out = feed(&mut t, &lines);
    let usages: Vec<Value> = signals(&out)
        .into_iter()
        .filter(|signal| signal["type"] == "chat/usage")
        .map(|signal| signal["usage"].clone())
        .collect();
    let usage = |input: u64, output: u64, read: u64, written: u64, context: u64| {
        json!({ "inputTokens": input, "outputTokens": output, "cacheReadTokens": read,
                "model": "claude-x", "_meta": { "agenthost.cacheWriteTokens": written,
                                                "agenthost.contextTokens": context } })
    };
    // Only changes are reported: the `assistant` line repeats what `message_start` said. The
    // context holds the latest call's input.
    assert_eq!(
        usages,
        vec![
            usage(1510, 1, 1000, 500, 1510),
            usage(1510, 20, 1000, 500, 1510),
            usage(1510 + 1530, 21, 2000, 1000, 1530),
            usage(1510 + 1530, 60, 2000, 1000, 1530),
        ]
    );
    // The result's own usage covers the same calls and has the last word for the root.
    let out = feed(&mut t, &[result(json!({}))]);
    assert_eq!(signals(&out)[0]["usage"]["inputTokens"], 11);
}

#[test]
fn a_subagents_calls_are_its_own_and_the_result_does_not_replace_the_parents_sum() {
    let mut t = translator();
    let mut lines = streamed_call("msg-1", None, 10, 20);
    lines.extend(streamed_call("msg-sub", Some("toolu_task"), 30, 40));
    lines.push(result(
        json!({ "usage": { "input_tokens": 99_999, "output_tokens": 99 } }),
    ));
    let out = feed(&mut t, &lines);
    let last_root = signals(&out)
        .into_iter()
        .rev()
        .find(|signal| signal["type"] == "chat/usage" && signal.get("chat").is_none())
        .unwrap();
    assert_eq!(last_root["usage"]["inputTokens"], 1510);
    assert_eq!(last_root["usage"]["outputTokens"], 20);
}

#[test]
fn an_error_result_ends_the_turn_with_chat_error() {
    let out = terminal(json!({ "is_error": true, "terminal_reason": "api_error",
                               "result": "API Error: 500" }));
    assert_eq!(
        out[1],
        json!({"type": "chat/error", "turnId": "t1", "duration": 12,
               "part": {"kind": "error",
                        "error": {"errorType": "api_error", "message": "API Error: 500"}}})
    );
    let out = terminal(json!({ "is_error": true, "subtype": "weird" }));
    assert_eq!(out[1]["part"]["error"]["errorType"], "weird");
}

#[test]
fn error_during_execution_joins_its_errors() {
    let out = terminal(
        json!({ "is_error": true, "subtype": "error_during_execution",
                               "terminal_reason": "aborted_tools",
                               "errors": ["first", "second"] }),
    );
    assert_eq!(
        out[1]["part"]["error"],
        json!({"errorType": "error_during_execution", "message": "first\nsecond"})
    );
}

#[test]
fn other_error_subtypes_complete_the_turn() {
    let out = terminal(json!({ "is_error": true, "subtype": "error_max_turns" }));
    assert_eq!(shape(&out), ["chat/usage", "chat/turnComplete"]);
}

#[test]
fn the_api_error_line_is_not_shown_but_explains_the_result() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            json!({ "type": "assistant", "is_api_error_message": true,
                    "api_error_status": 429, "api_error_type": "rate_limit_error",
                    "message": { "id": "x", "model": "<synthetic>",
                                 "content": [{ "type": "text", "text": "API Error: 429 slow down" }] } }),
            result(json!({ "is_error": true, "terminal_reason": "api_error", "result": null })),
        ],
    );
    assert_eq!(
        signals(&out)[1]["part"]["error"],
        json!({"errorType": "api_error", "message": "API Error: 429 slow down",
               "_meta": {"apiErrorStatus": 429, "apiErrorType": "rate_limit_error"}})
    );
}

#[test]
fn an_aborted_turn_emits_nothing_and_drops_what_follows() {
    let mut t = translator();
    feed(
        &mut t,
        &[assistant(
            "msg_1",
            None,
            tool_use("toolu_1", "Bash", json!({})),
        )],
    );
    assert_eq!(t.turn_id(), Some("t1"));
    t.abort_turn();
    assert!(!t.turn_active());
    assert_eq!(t.turn_id(), None);
    let out = feed(
        &mut t,
        &[
            tool_result("toolu_1", "interrupted", true, None),
            result(json!({ "is_error": true, "subtype": "error_during_execution" })),
        ],
    );
    // Only the session id the result names (first seen here) comes out.
    assert_eq!(out, vec![Output::SessionId("cli-1".into())]);
    assert_eq!(t.fail_turn(error_info("x", "y")), Vec::new());
}

#[test]
fn a_failed_turn_reports_one_chat_error() {
    let mut t = translator();
    let first = t.fail_turn(error_info("providerExited", "gone"));
    assert_eq!(
        shape(&first.iter().map(signal_json).collect::<Vec<_>>()),
        ["chat/error"]
    );
    assert!(!t.turn_active());
    assert_eq!(
        t.fail_turn(error_info("providerExited", "gone")),
        Vec::new()
    );
}

#[test]
fn mcp_tools_are_shown_without_their_server_prefix() {
    let mut t = translator();
    let out = signals(&feed(
        &mut t,
        &[assistant(
            "msg_1",
            None,
            tool_use("toolu_1", "mcp__host__open_file", json!({})),
        )],
    ));
    assert_eq!(out[0]["toolName"], "mcp__host__open_file");
    assert_eq!(out[0]["displayName"], "open_file");
}

#[test]
fn a_tool_call_id_that_is_not_a_safe_id_is_dropped() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            assistant("msg_1", None, tool_use("..", "Bash", json!({}))),
            tool_result("..", "x", false, None),
            assistant("msg_1", Some("bad\u{0}parent"), text_block("inside")),
        ],
    );
    assert_eq!(signals(&out), Vec::<Value>::new());
}

fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("type".to_owned()),
        Just("subtype".to_owned()),
        Just("message".to_owned()),
        Just("content".to_owned()),
        Just("event".to_owned()),
        Just("request".to_owned()),
        Just("response".to_owned()),
        Just("request_id".to_owned()),
        Just("id".to_owned()),
        Just("index".to_owned()),
        Just("tool_use_id".to_owned()),
        Just("parent_tool_use_id".to_owned()),
        "[a-z_]{1,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just("assistant"),
            Just("user"),
            Just("system"),
            Just("result"),
            Just("stream_event"),
            Just("control_request"),
            Just("control_response"),
            Just("init"),
            Just("text"),
            Just("tool_use"),
            Just("tool_result"),
            Just("content_block_start"),
            Just("content_block_delta"),
            Just("can_use_tool"),
            Just(".."),
        ]
        .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(line in ".{0,64}") {
        let mut t = translator();
        let _ = t.on_line(&line);
    }

    #[test]
    fn arbitrary_json_never_panics(lines in prop::collection::vec(json_value(), 1..12)) {
        let mut t = translator();
        let mut seen_ids = HashSet::new();
        for line in &lines {
            if let Ok(outputs) = t.on_line(&line.to_string()) {
                for output in outputs {
                    if let Output::Signal(signal) = output {
                        // Every signal renders, and ids stay unique per part.
                        let value = signal_json(&signal);
                        if value["type"] == "chat/responsePart" {
                            prop_assert!(seen_ids.insert(value["part"]["id"].to_string()));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn what_an_aborted_turn_still_prints_does_not_reach_the_next_turn() {
    let mut t = translator();
    feed(
        &mut t,
        &[
            assistant("msg_1", None, tool_use("toolu_1", "Bash", json!({}))),
            can_use_tool("req-1", Some("toolu_1"), "Bash"),
        ],
    );
    t.abort_turn();
    t.begin_turn("t2");
    // Modelled on an interrupted capture: the CLI finishes the old message first.
    let out = feed(
        &mut t,
        &[
            json!({ "type": "control_response", "response": { "subtype": "success",
                    "request_id": "intr-1", "response": {} } }),
            can_use_tool("req-2", Some("toolu_1"), "Bash"),
            tool_result("toolu_1", "The user doesn't want to proceed", true, None),
            json!({ "type": "user", "message": { "role": "user", "content": [
                { "type": "text", "text": "[Request interrupted by user for tool use]" } ] } }),
            result(
                json!({ "is_error": true, "subtype": "error_during_execution",
                           "terminal_reason": "aborted_tools" }),
            ),
            json!({ "type": "system", "subtype": "init", "session_id": "cli-1" }),
            assistant("msg_2", None, text_block("Fresh start.")),
            result(json!({})),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        shape(&rendered),
        ["chat/responsePart", "chat/usage", "chat/turnComplete"]
    );
    assert!(rendered.iter().all(|s| s["turnId"] == "t2"));
    assert_eq!(
        out.iter().filter(|o| **o == Output::TurnEnded).count(),
        1,
        "only the new turn ends"
    );
    assert!(out.contains(&Output::ControlResponse {
        request_id: "intr-1".into(),
        success: true,
        error: None
    }));
    assert!(out.contains(&Output::DenyPermission {
        request_id: "req-2".into(),
        message: "The turn was cancelled.".into()
    }));
}

#[test]
fn a_replaced_process_owes_no_result() {
    let mut t = translator();
    t.abort_turn();
    t.process_replaced();
    t.begin_turn("t2");
    let out = signals(&feed(&mut t, &[result(json!({}))]));
    assert_eq!(shape(&out), ["chat/usage", "chat/turnComplete"]);
}

#[test]
fn a_withdrawn_request_is_reported() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[json!({ "type": "control_cancel_request", "request_id": "req-1" })],
    );
    assert_eq!(
        out,
        vec![Output::RequestCancelled {
            request_id: "req-1".into()
        }]
    );
}

#[test]
fn the_main_models_context_window_is_reported_for_the_advertised_model() {
    let mut t = Translator::new(session());
    t.set_model("default");
    t.begin_turn("t1");
    let out = feed(
        &mut t,
        &[
            json!({ "type": "system", "subtype": "init", "session_id": "cli-1", "model": "claude-opus-5-5" }),
            result(json!({ "modelUsage": {
                "claude-opus-5-5": { "inputTokens": 200, "contextWindow": 1_000_000, "maxOutputTokens": 128_000 },
                "claude-haiku-5-5": { "contextWindow": 200_000, "maxOutputTokens": 64_000 },
            } })),
        ],
    );
    let limits: Vec<Value> = signals(&out)
        .into_iter()
        .filter(|signal| signal["signal"] == "modelLimits")
        .collect();
    assert_eq!(
        limits,
        vec![
            json!({ "signal": "modelLimits", "model": "default", "maxPromptTokens": null,
                     "maxContextWindow": 1_000_000, "maxOutputTokens": 128_000 })
        ],
        "the main model's limits only; no prompt limit is derived"
    );
}

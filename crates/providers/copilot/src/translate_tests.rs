use agenthost_protocol::error_info::error_info;
use agenthost_protocol::{SafeId, SessionUri};
use agenthost_provider_api::signal_json;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

const COPILOT: &str = "cop-1";
const CALL: &str = "call_1";
const STATE_DIR: &str = "/home/u/.copilot/session-state/cop-1";

fn session() -> SessionUri {
    SessionUri::canonical(SafeId::new("s1").unwrap())
}

/// A translator following `COPILOT` in `/w`, in protocol turn `t1`, whose user message arrived
/// at second 0.
fn translator() -> Translator {
    let mut translator = Translator::new(session());
    translator.set_copilot_session(COPILOT);
    translator.set_working_directory("/w");
    translator.begin_turn("t1");
    feed(&mut translator, &[user_message("m1")]);
    translator
}

fn feed(translator: &mut Translator, messages: &[Value]) -> Vec<Output> {
    messages
        .iter()
        .flat_map(|message| translator.on_message(&message.to_string()).unwrap())
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

/// `type` (or `signal`) of each rendered signal.
fn shape(outputs: &[Output]) -> Vec<String> {
    signals(outputs)
        .iter()
        .map(|value| {
            value
                .get("type")
                .or_else(|| value.get("signal"))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned()
        })
        .collect()
}

/// A `session.event` of `COPILOT` at second `second` of the turn.
fn event_at(kind: &str, data: Value, agent: Option<&str>, second: u32) -> Value {
    let mut event = json!({
        "type": kind, "data": data, "id": format!("e-{kind}"),
        "timestamp": format!("2026-11-30T09:46:{second:02}.000Z"), "parentId": null,
    });
    if let Some(agent) = agent {
        event["agentId"] = agent.into();
    }
    json!({ "jsonrpc": "2.0", "method": "session.event",
            "params": { "sessionId": COPILOT, "event": event } })
}

fn event(kind: &str, data: Value) -> Value {
    event_at(kind, data, None, 1)
}

fn agent_event(agent: &str, kind: &str, data: Value) -> Value {
    event_at(kind, data, Some(agent), 1)
}

fn user_message(id: &str) -> Value {
    event_at(
        "user.message",
        json!({ "content": "hi", "messageId": id, "delivery": "idle" }),
        None,
        0,
    )
}

fn idle(second: u32, aborted: bool) -> Value {
    event_at(
        "session.idle",
        json!({ "mode": "interactive", "aborted": aborted }),
        None,
        second,
    )
}

fn delta(message: &str, text: &str) -> Value {
    event(
        "assistant.message_delta",
        json!({ "messageId": message, "deltaContent": text }),
    )
}

fn tool_start(id: &str, tool: &str, arguments: Value) -> Value {
    event(
        "tool.execution_start",
        json!({ "toolCallId": id, "toolName": tool, "arguments": arguments,
                "toolTitle": "Running command" }),
    )
}

fn bash_start(id: &str) -> Value {
    tool_start(id, "bash", json!({ "command": "echo hi > out.txt" }))
}

fn complete(id: &str, data: Value) -> Value {
    let mut data = data;
    data["toolCallId"] = id.into();
    event("tool.execution_complete", data)
}

fn permission(request_id: &str, request: Value) -> Value {
    event(
        "permission.requested",
        json!({ "requestId": request_id, "permissionRequest": request,
                "permissionMode": "manual" }),
    )
}

fn shell_permission(request_id: &str, id: &str) -> Value {
    permission(
        request_id,
        json!({ "kind": "shell", "toolCallId": id, "fullCommandText": "cd /w && echo hi > out.txt",
                "intention": "Write hi", "commands": [], "possiblePaths": [] }),
    )
}

#[test]
fn model_rounds_never_end_the_turn_the_idle_does() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            event("assistant.turn_start", json!({ "turnId": "0" })),
            delta("m-a", "one"),
            event("assistant.turn_end", json!({ "turnId": "0" })),
            event("assistant.turn_start", json!({ "turnId": "1" })),
            delta("m-b", "two"),
            event("assistant.turn_end", json!({ "turnId": "1" })),
            event("assistant.idle", json!({})),
        ],
    );
    assert!(!out.contains(&Output::TurnEnded));
    assert_eq!(t.turn_id(), Some("t1"));
    assert_eq!(shape(&out), ["chat/responsePart", "chat/responsePart"]);
    let out = feed(&mut t, &[idle(3, false)]);
    assert_eq!(
        signals(&out),
        [json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 3000 })]
    );
    assert_eq!(out.last(), Some(&Output::TurnEnded));
    assert_eq!(t.turn_id(), None);
}

#[test]
fn streamed_messages_are_not_repeated_by_their_final_message() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            delta("m-a", "Hel"),
            delta("m-a", "lo"),
            event(
                "assistant.message",
                json!({ "messageId": "m-a", "content": "Hello", "toolRequests": [] }),
            ),
            event(
                "assistant.message",
                json!({ "messageId": "m-b", "content": "Unstreamed", "toolRequests": [] }),
            ),
            event(
                "assistant.message",
                json!({ "messageId": "m-c", "content": "", "toolRequests": [] }),
            ),
        ],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/responsePart", "turnId": "t1",
                    "part": { "kind": "markdown", "id": "t1#m-a", "content": "Hel" } }),
            json!({ "type": "chat/delta", "turnId": "t1", "partId": "t1#m-a", "content": "lo" }),
            json!({ "type": "chat/responsePart", "turnId": "t1",
                    "part": { "kind": "markdown", "id": "t1#m-b", "content": "Unstreamed" } }),
        ]
    );
}

#[test]
fn reasoning_streams_into_a_reasoning_part_and_its_final_block_adds_nothing() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            event(
                "assistant.reasoning_delta",
                json!({ "reasoningId": "r1", "deltaContent": "Think" }),
            ),
            event(
                "assistant.reasoning_delta",
                json!({ "reasoningId": "r1", "deltaContent": "ing" }),
            ),
            event(
                "assistant.reasoning",
                json!({ "reasoningId": "r1", "content": "Thinking" }),
            ),
            event(
                "assistant.reasoning",
                json!({ "reasoningId": "r2", "content": "Not streamed" }),
            ),
        ],
    );
    assert_eq!(
        shape(&out),
        ["chat/responsePart", "chat/reasoning", "chat/responsePart"]
    );
    let values = signals(&out);
    assert_eq!(values[0]["part"]["kind"], "reasoning");
    assert_eq!(values[2]["part"]["content"], "Not streamed");
}

#[test]
fn a_tool_call_delta_starts_the_tool_early_and_streams_its_arguments() {
    let mut t = translator();
    let call_delta = |input: &str| {
        event(
            "assistant.tool_call_delta",
            json!({ "toolCallId": CALL, "toolName": "bash", "toolType": "function",
                    "inputDelta": input }),
        )
    };
    let out = feed(
        &mut t,
        &[
            call_delta("{\"command\": \"cd /w && l"),
            call_delta("s\", \"description\": \"List\"}"),
            call_delta(""),
            bash_start(CALL),
        ],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": CALL,
                    "toolName": "bash", "displayName": "Bash" }),
            json!({ "type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": CALL,
                    "content": "{\"command\": \"cd /w && l", "invocationMessage": "Run `l`" }),
            json!({ "type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": CALL,
                    "content": "s\", \"description\": \"List\"}",
                    "invocationMessage": "Run `ls`" }),
            json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": CALL,
                    "invocationMessage": "Run `echo hi > out.txt`",
                    "toolInput": "{\"command\":\"echo hi > out.txt\"}",
                    "confirmed": "not-needed" }),
        ]
    );
}

#[test]
fn a_tool_started_without_deltas_starts_and_runs_and_a_redundant_cd_is_hidden() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[tool_start(
            CALL,
            "bash",
            json!({ "command": "cd /w && cargo test", "description": "Run tests" }),
        )],
    );
    assert_eq!(shape(&out), ["chat/toolCallStart", "chat/toolCallReady"]);
    assert_eq!(signals(&out)[1]["invocationMessage"], "Run `cargo test`");
    // Other directories are worth showing.
    let out = feed(
        &mut t,
        &[tool_start(
            "call_2",
            "bash",
            json!({ "command": "cd /tmp && ls" }),
        )],
    );
    assert_eq!(signals(&out)[1]["invocationMessage"], "Run `cd /tmp && ls`");
}

#[test]
fn an_unknown_tool_uses_the_message_intention_and_mcp_tools_their_own_name() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            event(
                "assistant.message",
                json!({ "messageId": "m", "content": "", "toolRequests": [
                    { "toolCallId": CALL, "name": "sql", "arguments": { "query": "select 1" },
                      "intentionSummary": "Query the todo table", "toolTitle": "SQL" } ] }),
            ),
            tool_start(CALL, "sql", json!({ "query": "select 1" })),
            event(
                "tool.execution_start",
                json!({ "toolCallId": "call_2", "toolName": "github-get_issue",
                        "mcpServerName": "github", "mcpToolName": "get_issue",
                        "arguments": { "number": 1 } }),
            ),
        ],
    );
    let values = signals(&out);
    assert_eq!(values[1]["invocationMessage"], "Query the todo table");
    assert_eq!(values[2]["displayName"], "get_issue");
    assert_eq!(
        values[2]["_meta"],
        json!({ "mcpServerName": "github", "mcpToolName": "get_issue" })
    );
    assert_eq!(values[3]["invocationMessage"], "Run get_issue");
}

#[test]
fn intent_reports_are_activity_only_and_the_activity_is_cleared_at_the_end() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            event(
                "assistant.tool_call_delta",
                json!({ "toolCallId": "intent", "toolName": "report_intent",
                        "inputDelta": "{\"intent\": \"Reading" }),
            ),
            tool_start(
                "intent",
                "report_intent",
                json!({ "intent": "Reading code" }),
            ),
            event(
                "tool.execution_partial_result",
                json!({ "toolCallId": "intent", "partialOutput": "x" }),
            ),
            complete(
                "intent",
                json!({ "success": true, "result": { "content": "ok" } }),
            ),
            idle(2, false),
        ],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/activityChanged", "activity": "Reading code" }),
            json!({ "type": "chat/activityChanged" }),
            json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 2000 }),
        ]
    );
}

#[test]
fn a_permission_request_for_a_running_tool_asks_the_host_and_parks_the_request() {
    let mut t = translator();
    feed(&mut t, &[bash_start(CALL)]);
    let out = feed(&mut t, &[shell_permission("req-1", CALL)]);
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": CALL,
                 "invocationMessage": "Run `echo hi > out.txt`",
                 "toolInput": "{\"command\":\"echo hi > out.txt\"}",
                 "confirmationTitle": "Run command", "permissionKind": "shell" })
        ]
    );
    assert_eq!(
        out.last(),
        Some(&Output::PermissionRequest {
            request_id: "req-1".into(),
            tool_call_id: CALL.into(),
        })
    );
}

#[test]
fn a_permission_request_for_an_unannounced_call_starts_it_and_its_events_follow() {
    let mut t = translator();
    let out = feed(&mut t, &[shell_permission("req-1", CALL)]);
    assert_eq!(shape(&out), ["chat/toolCallStart", "chat/toolCallReady"]);
    assert_eq!(signals(&out)[0]["toolName"], "bash");
    t.record_decision(CALL, true);
    let out = feed(
        &mut t,
        &[
            bash_start(CALL),
            event(
                "tool.execution_partial_result",
                json!({ "toolCallId": CALL, "partialOutput": "hi" }),
            ),
            complete(
                CALL,
                json!({ "success": true, "result": { "content": "hi" } }),
            ),
        ],
    );
    assert_eq!(
        shape(&out),
        ["chat/toolCallContentChanged", "chat/toolCallComplete"]
    );
}

#[test]
fn a_permission_request_without_a_tool_call_is_rejected() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[permission(
            "req-1",
            json!({ "kind": "url", "url": "https://example.com", "intention": "Fetch" }),
        )],
    );
    assert_eq!(
        out,
        [Output::AnswerPermission {
            request_id: "req-1".into(),
            approved: false,
            feedback: Some(NO_TOOL_CALL.into()),
        }]
    );
}

#[test]
fn permission_requests_outside_a_turn_are_rejected_and_hook_resolved_ones_need_nothing() {
    let mut t = Translator::new(session());
    t.set_copilot_session(COPILOT);
    let out = feed(&mut t, &[shell_permission("req-1", CALL)]);
    assert!(matches!(
        out.as_slice(),
        [Output::AnswerPermission {
            approved: false,
            ..
        }]
    ));
    let mut t = translator();
    let resolved = event(
        "permission.requested",
        json!({ "requestId": "req-2", "resolvedByHook": true,
                "permissionRequest": { "kind": "shell", "toolCallId": CALL } }),
    );
    assert!(feed(&mut t, &[resolved]).is_empty());
}

#[test]
fn the_agents_own_session_state_and_spilled_outputs_are_approved_without_asking() {
    let mut t = Translator::new(session());
    let created = json!({ "jsonrpc": "2.0", "id": 2, "result": {
        "sessionId": COPILOT, "workspacePath": STATE_DIR } });
    let out = feed(&mut t, &[created]);
    assert!(matches!(out.as_slice(), [Output::Response { .. }]));
    assert_eq!(t.copilot_session(), Some(COPILOT));
    t.set_temp_dir("/tmp");
    t.begin_turn("t1");
    let read = |id: &str, path: &str| {
        permission(
            id,
            json!({ "kind": "read", "toolCallId": CALL, "path": path, "intention": "Read" }),
        )
    };
    let write = |id: &str, path: &str| {
        permission(
            id,
            json!({ "kind": "write", "toolCallId": CALL, "fileName": path, "diff": "",
                    "intention": "Write" }),
        )
    };
    let approved = |out: Vec<Output>| {
        matches!(
            out.as_slice(),
            [Output::AnswerPermission {
                approved: true,
                feedback: None,
                ..
            }]
        )
    };
    assert!(approved(feed(
        &mut t,
        &[read("r1", &format!("{STATE_DIR}/plan.md"))]
    )));
    assert!(approved(feed(
        &mut t,
        &[write("r2", &format!("{STATE_DIR}/files/a.txt"))]
    )));
    assert!(approved(feed(
        &mut t,
        &[read(
            "r3",
            "/tmp/1769829087591-copilot-tool-output-jtyrd3.txt"
        )]
    )));
    // Anything else is the user's decision.
    for request in [
        read("r4", &format!("{STATE_DIR}/../other/secret")),
        read("r5", "/tmp/notes.txt"),
        read("r6", "/tmp/sub/copilot-tool-output-1.txt"),
        write("r7", "/tmp/1769829087591-copilot-tool-output-jtyrd3.txt"),
        read("r8", "/home/u/.copilot/session-state/other/plan.md"),
    ] {
        let out = feed(&mut t, &[request]);
        assert!(
            matches!(out.last(), Some(Output::PermissionRequest { .. })),
            "{out:?}"
        );
    }
}

#[test]
fn a_write_request_creating_a_file_shows_an_edit_preview() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[permission(
            "req-1",
            json!({ "kind": "write", "toolCallId": CALL, "fileName": "src/new.txt",
                    "diff": "+a\n+b", "newFileContents": "a\nb\n", "intention": "Create" }),
        )],
    );
    let values = signals(&out);
    assert_eq!(shape(&out), ["chat/toolCallStart", "chat/toolCallReady"]);
    assert_eq!(values[0]["toolName"], "edit");
    assert_eq!(values[1]["permissionPath"], "src/new.txt");
    assert_eq!(values[1]["invocationMessage"], "Edit src/new.txt");
    assert_eq!(
        values[1]["edits"],
        json!({ "items": [{
            "after": {
                "uri": "file:///w/src/new.txt",
                "content": { "uri": "data:text/plain;charset=utf-8;base64,YQpiCg==",
                             "sizeHint": 4, "contentType": "text/plain" },
            },
            "diff": { "added": 2, "removed": 0 },
        }] })
    );
}

#[test]
fn a_declined_call_completes_as_denied_even_when_the_cli_gives_no_code() {
    let mut t = translator();
    feed(&mut t, &[bash_start(CALL), shell_permission("req-1", CALL)]);
    t.record_decision(CALL, false);
    let out = feed(
        &mut t,
        &[
            event(
                "permission.completed",
                json!({ "requestId": "req-1", "toolCallId": CALL,
                        "result": { "kind": "denied-interactively-by-user" } }),
            ),
            complete(
                CALL,
                json!({ "success": false, "error": { "message": "Rejected." } }),
            ),
        ],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": CALL,
                 "result": { "success": false, "pastTenseMessage": "Bash was denied",
                             "content": [{ "type": "text", "text": "Rejected." }],
                             "error": { "message": "Rejected.", "code": "denied" } } })
        ]
    );
}

#[test]
fn an_approved_call_shows_its_live_output_then_its_result() {
    let mut t = translator();
    feed(&mut t, &[bash_start(CALL), shell_permission("req-1", CALL)]);
    let partial = |text: &str| {
        event(
            "tool.execution_partial_result",
            json!({ "toolCallId": CALL, "partialOutput": text }),
        )
    };
    // While the host decides, nothing runs.
    assert!(feed(&mut t, &[partial("early")]).is_empty());
    let out = feed(
        &mut t,
        &[
            event(
                "permission.completed",
                json!({ "requestId": "req-1", "toolCallId": CALL,
                        "result": { "kind": "approved" } }),
            ),
            partial(""),
            partial("a"),
            partial("b"),
            event(
                "tool.execution_progress",
                json!({ "toolCallId": CALL, "progressMessage": "Still going" }),
            ),
            complete(
                CALL,
                json!({ "success": true, "shellExecution": { "exitCode": 0 },
                        "result": { "content": "short", "detailedContent": "ab\n" } }),
            ),
            partial("late"),
        ],
    );
    let values = signals(&out);
    assert_eq!(
        shape(&out),
        [
            "chat/toolCallContentChanged",
            "chat/toolCallContentChanged",
            "chat/toolCallContentChanged",
            "chat/toolCallComplete"
        ]
    );
    assert_eq!(
        values[0]["content"],
        json!([{ "type": "text", "text": "earlya" }])
    );
    assert_eq!(
        values[1]["content"],
        json!([{ "type": "text", "text": "earlyab" }])
    );
    assert_eq!(
        values[2]["_meta"],
        json!({ "progressMessage": "Still going" })
    );
    assert_eq!(
        values[3]["result"],
        json!({ "success": true, "pastTenseMessage": "Ran `echo hi > out.txt`",
                "content": [{ "type": "text", "text": "ab\n" }],
                "structuredContent": { "exitCode": 0 } })
    );
}

#[test]
fn a_failed_call_passes_its_error_code_through() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            bash_start(CALL),
            complete(
                CALL,
                json!({ "success": false, "shellExecution": { "exitCode": 2 },
                        "error": { "message": "No such file", "code": "failure" } }),
            ),
        ],
    );
    assert_eq!(
        signals(&out)[2]["result"],
        json!({ "success": false, "pastTenseMessage": "Bash failed",
                "content": [{ "type": "text", "text": "No such file" }],
                "structuredContent": { "exitCode": 2 },
                "error": { "message": "No such file", "code": "failure" } })
    );
}

#[test]
fn a_completion_of_an_unannounced_call_starts_it_from_the_message() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            event(
                "assistant.message",
                json!({ "messageId": "m", "content": "", "toolRequests": [
                    { "toolCallId": CALL, "name": "view", "arguments": { "path": "a.rs" } } ] }),
            ),
            complete(
                CALL,
                json!({ "success": true, "result": { "content": "fn main" } }),
            ),
            complete("call_x", json!({ "success": true })),
        ],
    );
    assert_eq!(
        shape(&out),
        [
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallComplete"
        ]
    );
    assert_eq!(signals(&out)[2]["result"]["pastTenseMessage"], "Read a.rs");
}

#[test]
fn usage_becomes_chat_usage() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[event(
            "assistant.usage",
            json!({ "model": "gpt-5.4", "inputTokens": 100, "outputTokens": 20.0,
                    "cacheReadTokens": 3, "cacheWriteTokens": 1, "cost": 1,
                    "apiCallId": "chatcmpl-1" }),
        )],
    );
    assert_eq!(
        signals(&out),
        [json!({ "type": "chat/usage", "turnId": "t1", "usage": {
            "inputTokens": 100, "outputTokens": 20, "cacheReadTokens": 3, "model": "gpt-5.4",
            "_meta": { "agenthost.cacheWriteTokens": 1, "cost": 1, "agenthost.contextTokens": 100 } } })]
    );
}

#[test]
fn model_call_completions_are_reported_per_round() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[event(
            "model.call_finished",
            json!({ "turnId": "0", "interactionId": "i-1", "outcome": "success" }),
        )],
    );
    assert_eq!(
        signals(&out),
        [json!({ "signal": "modelCallCompleted", "turnId": "t1", "modelCallId": "i-1#0" })]
    );
}

#[test]
fn subagent_events_are_routed_to_the_spawning_call() {
    let mut t = translator();
    let spawn = tool_start(
        "task-1",
        "task",
        json!({ "description": "Explore", "prompt": "Find the bug", "agent_type": "explore" }),
    );
    let started = agent_event(
        "agent-1",
        "subagent.started",
        json!({ "toolCallId": "task-1", "agentName": "explore",
                "agentDisplayName": "Explore agent", "agentDescription": "Reads code" }),
    );
    let out = feed(
        &mut t,
        &[
            spawn,
            started,
            agent_event(
                "agent-1",
                "assistant.message_delta",
                json!({ "messageId": "sm", "deltaContent": "Looking" }),
            ),
            agent_event(
                "agent-1",
                "tool.execution_start",
                json!({ "toolCallId": "sub-call", "toolName": "view",
                        "arguments": { "path": "a.rs" } }),
            ),
            agent_event(
                "agent-1",
                "assistant.usage",
                json!({ "model": "m", "inputTokens": 5, "outputTokens": 1 }),
            ),
            agent_event(
                "agent-9",
                "assistant.message_delta",
                json!({ "messageId": "x", "deltaContent": "lost" }),
            ),
            agent_event(
                "agent-1",
                "subagent.completed",
                json!({ "toolCallId": "task-1", "agentName": "explore" }),
            ),
            complete(
                "task-1",
                json!({ "success": true, "result": { "content": "Found it" } }),
            ),
        ],
    );
    let values = signals(&out);
    assert_eq!(
        shape(&out),
        [
            "chat/toolCallStart",
            "chat/toolCallReady",
            "subagentStarted",
            "chat/responsePart",
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/usage",
            "subagentCompleted",
            "chat/toolCallComplete",
        ]
    );
    assert_eq!(values[1]["invocationMessage"], "Explore");
    assert_eq!(
        values[2],
        json!({ "signal": "subagentStarted", "chat": values[2]["chat"], "toolCallId": "task-1",
                "agentName": "explore", "agentDisplayName": "Explore agent",
                "agentDescription": "Reads code", "taskDescription": "Explore",
                "taskPrompt": "Find the bug" })
    );
    for scoped in &values[3..7] {
        assert_eq!(scoped["parentToolCallId"], "task-1", "{scoped}");
    }
    assert_eq!(values[8]["result"]["pastTenseMessage"], "Finished: Explore");
    assert!(values[8].get("parentToolCallId").is_none());
}

#[test]
fn a_skill_loaded_outside_a_skill_call_is_shown_as_a_read() {
    let mut t = translator();
    let skill = event(
        "skill.invoked",
        json!({ "name": "release", "path": "/w/.github/skills/release/SKILL.md",
                "content": "..." }),
    );
    let out = feed(&mut t, std::slice::from_ref(&skill));
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/toolCallStart", "turnId": "t1",
                    "toolCallId": "skill-e-skill.invoked", "toolName": "skill",
                    "displayName": "Skill" }),
            json!({ "type": "chat/toolCallReady", "turnId": "t1",
                    "toolCallId": "skill-e-skill.invoked",
                    "invocationMessage": "Read skill release",
                    "toolInput": "{\"path\":\"/w/.github/skills/release/SKILL.md\"}",
                    "confirmed": "not-needed" }),
            json!({ "type": "chat/toolCallComplete", "turnId": "t1",
                    "toolCallId": "skill-e-skill.invoked",
                    "result": { "success": true, "pastTenseMessage": "Read skill release" } }),
        ]
    );
    // Inside a running `skill` call the call itself shows it.
    let mut t = translator();
    feed(
        &mut t,
        &[tool_start(CALL, "skill", json!({ "skill": "release" }))],
    );
    assert!(feed(&mut t, &[skill]).is_empty());
}

#[test]
fn titles_are_reported_even_outside_a_turn() {
    let mut t = Translator::new(session());
    let out = feed(
        &mut t,
        &[event(
            "session.title_changed",
            json!({ "title": "Fix the build" }),
        )],
    );
    assert_eq!(
        signals(&out),
        [json!({ "type": "session/titleChanged", "title": "Fix the build" })]
    );
}

#[test]
fn events_of_other_copilot_sessions_are_ignored() {
    let mut t = translator();
    let mut other = delta("m-a", "not ours");
    other["params"]["sessionId"] = "cop-2".into();
    assert!(feed(&mut t, &[other]).is_empty());
    assert_eq!(
        shape(&feed(&mut t, &[delta("m-a", "ours")])),
        ["chat/responsePart"]
    );
}

#[test]
fn the_first_session_seen_is_followed_when_none_was_set() {
    let mut t = Translator::new(session());
    t.begin_turn("t1");
    feed(&mut t, &[delta("m-a", "ours")]);
    assert_eq!(t.copilot_session(), Some(COPILOT));
}

#[test]
fn server_requests_are_refused_and_responses_passed_on() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            json!({ "jsonrpc": "2.0", "id": 7, "method": "tool.call", "params": {} }),
            json!({ "jsonrpc": "2.0", "id": "s-1", "method": "userInput.request" }),
            json!({ "jsonrpc": "2.0", "id": 3, "result": { "messageId": "m1" } }),
            json!({ "jsonrpc": "2.0", "id": 4,
                    "error": { "code": -32602, "message": "bad params" } }),
            json!({ "jsonrpc": "2.0", "method": "session.lifecycle",
                    "params": { "type": "session.updated", "sessionId": COPILOT } }),
            json!({ "jsonrpc": "2.0", "method": "host.event", "params": { "kind": "x" } }),
        ],
    );
    assert_eq!(
        out,
        [
            Output::UnsupportedRequest {
                request_id: json!(7),
                method: "tool.call".into(),
            },
            Output::UnsupportedRequest {
                request_id: json!("s-1"),
                method: "userInput.request".into(),
            },
            Output::Response {
                id: json!(3),
                result: Ok(json!({ "messageId": "m1" })),
            },
            Output::Response {
                id: json!(4),
                result: Err(RpcError {
                    code: -32602,
                    message: "bad params".into(),
                    data: None,
                }),
            },
        ]
    );
}

#[test]
fn after_the_client_cancels_the_turns_remaining_events_and_idle_are_dropped() {
    let mut t = translator();
    feed(&mut t, &[bash_start(CALL)]);
    t.abort_turn();
    assert_eq!(t.turn_id(), None);
    // The next turn begins before the aborted one has wound down.
    t.begin_turn("t2");
    t.send_sent(&json!(9));
    let out = feed(
        &mut t,
        &[
            complete(
                CALL,
                json!({ "success": false, "error": { "message": "aborted" } }),
            ),
            delta("m-old", "late"),
            shell_permission("req-old", "call_old"),
            idle(2, true),
            json!({ "jsonrpc": "2.0", "id": 9, "result": { "messageId": "m2" } }),
        ],
    );
    assert_eq!(
        out,
        [
            Output::AnswerPermission {
                request_id: "req-old".into(),
                approved: false,
                feedback: Some(NO_TURN.into()),
            },
            Output::Response {
                id: json!(9),
                result: Ok(json!({ "messageId": "m2" })),
            },
        ]
    );
    // The new turn's own message starts it; its idle ends it.
    let out = feed(
        &mut t,
        &[user_message("m2"), delta("m-new", "fresh"), idle(4, false)],
    );
    assert_eq!(shape(&out), ["chat/responsePart", "chat/turnComplete"]);
    assert_eq!(signals(&out)[0]["turnId"], "t2");
}

#[test]
fn an_aborted_idle_is_dropped_even_before_the_next_turn() {
    let mut t = translator();
    t.abort_turn();
    assert!(feed(&mut t, &[idle(1, true)]).is_empty());
    t.begin_turn("t2");
    feed(&mut t, &[user_message("m2")]);
    let out = feed(&mut t, &[idle(2, false)]);
    assert_eq!(shape(&out), ["chat/turnComplete"]);
}

#[test]
fn a_subagents_idle_ends_nothing() {
    let mut t = translator();
    assert!(feed(&mut t, &[agent_event("agent-1", "session.idle", json!({}))]).is_empty());
    assert_eq!(t.turn_id(), Some("t1"));
}

#[test]
fn an_idle_the_client_did_not_ask_for_cancels_the_turn() {
    let mut t = translator();
    let out = feed(&mut t, &[idle(5, true)]);
    assert_eq!(
        signals(&out),
        [json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 5000 })]
    );
    assert_eq!(out.last(), Some(&Output::TurnEnded));
}

#[test]
fn a_session_error_ends_the_turn_and_its_late_idle_is_dropped() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[event_at(
            "session.error",
            json!({ "errorType": "query", "message": "400 bad", "statusCode": 400,
                    "errorCode": "mock_error" }),
            None,
            2,
        )],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/error", "turnId": "t1", "duration": 2000, "part": {
            "kind": "error", "error": { "errorType": COPILOT_ERROR, "message": "400 bad",
            "_meta": { "copilotErrorType": "query", "statusCode": 400,
                       "errorCode": "mock_error" } } } })
        ]
    );
    assert_eq!(out.last(), Some(&Output::TurnEnded));
    t.begin_turn("t2");
    assert!(feed(&mut t, &[idle(3, false)]).is_empty());
    feed(&mut t, &[user_message("m2")]);
    assert_eq!(
        shape(&feed(&mut t, &[idle(4, false)])),
        ["chat/turnComplete"]
    );
}

#[test]
fn a_subagents_error_does_not_end_the_turn() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[agent_event(
            "agent-1",
            "session.error",
            json!({ "message": "boom" }),
        )],
    );
    assert!(out.is_empty());
    assert_eq!(t.turn_id(), Some("t1"));
}

#[test]
fn prompt_mode_lines_end_the_turn_at_their_result() {
    let mut t = Translator::new(session());
    t.begin_turn("t1");
    let line = |value: Value| value.to_string();
    let bare = |kind: &str, data: Value, at: &str| {
        line(json!({ "type": kind, "data": data, "id": "x", "timestamp": at, "parentId": null }))
    };
    let mut out = Vec::new();
    for text in [
        bare(
            "user.message",
            json!({ "content": "hi", "messageId": "m" }),
            "2026-11-30T09:44:52.683Z",
        ),
        bare(
            "assistant.message_delta",
            json!({ "messageId": "a", "deltaContent": "Hi" }),
            "2026-11-30T09:44:52.700Z",
        ),
        line(
            json!({ "type": "result", "timestamp": "2026-11-30T09:44:52.884Z",
                     "sessionId": "s", "exitCode": 0, "usage": {} }),
        ),
    ] {
        out.extend(t.on_message(&text).unwrap());
    }
    assert_eq!(shape(&out), ["chat/responsePart", "chat/turnComplete"]);
    assert_eq!(signals(&out)[1]["duration"], 201);
    assert_eq!(out.last(), Some(&Output::TurnEnded));

    let mut t = Translator::new(session());
    t.begin_turn("t1");
    let out = t
        .on_message(&line(json!({ "type": "result", "exitCode": 3 })))
        .unwrap();
    assert_eq!(
        signals(&out)[0]["part"]["error"],
        json!({ "errorType": COPILOT_ERROR, "message": "Copilot exited with code 3." })
    );
}

#[test]
fn a_steering_message_is_ignored() {
    let mut t = translator();
    let steering = event(
        "user.message",
        json!({ "content": "also this", "messageId": "m9", "delivery": "steering" }),
    );
    assert!(feed(&mut t, &[steering]).is_empty());
}

#[test]
fn fail_turn_reports_a_chat_error_once() {
    let mut t = translator();
    let signals = t.fail_turn(error_info("providerExited", "gone"));
    assert_eq!(signals.len(), 1);
    assert_eq!(signal_json(&signals[0])["type"], "chat/error");
    assert!(t.fail_turn(error_info("providerExited", "gone")).is_empty());
}

#[test]
fn unknown_event_types_and_malformed_known_messages() {
    let mut t = translator();
    assert!(feed(&mut t, &[event("brand.new_event", json!({ "x": [1] }))]).is_empty());
    for garbage in [
        "",
        "not json",
        "[1,2]",
        "42",
        "\"text\"",
        "{\"jsonrpc\":\"2.0\"}",
    ] {
        let error = t.on_message(garbage).unwrap_err();
        assert!(
            matches!(
                error.kind(),
                LineErrorKind::NotAnObject | LineErrorKind::Malformed { .. }
            ),
            "{garbage}"
        );
    }
    assert_eq!(
        t.on_message("[]").unwrap_err().kind(),
        &LineErrorKind::NotAnObject
    );
    for malformed in [
        json!({ "jsonrpc": "2.0", "method": "session.event", "params": { "sessionId": COPILOT } }),
        json!({ "jsonrpc": "2.0", "method": "session.event", "params": { "event": {} } }),
        json!({ "jsonrpc": "2.0", "method": "session.event",
                "params": { "sessionId": COPILOT, "event": { "data": {} } } }),
        event("tool.execution_start", json!({ "toolName": "bash" })),
        event("assistant.message_delta", json!({ "messageId": 5 })),
        json!({ "jsonrpc": "2.0", "method": 5 }),
        json!({ "jsonrpc": "2.0", "id": 1, "error": "no" }),
    ] {
        let error = t.on_message(&malformed.to_string()).unwrap_err();
        assert!(
            matches!(error.kind(), LineErrorKind::Malformed { .. }),
            "{malformed}: {error}"
        );
        assert!(
            error.to_string().starts_with("malformed message ("),
            "{error}"
        );
    }
}

#[test]
fn a_long_bad_message_is_quoted_shortly() {
    let long = "x".repeat(1000);
    let error = parse_message(&long).unwrap_err();
    assert_eq!(error.snippet().chars().count(), SNIPPET_CHARS + 1);
}

#[test]
fn timestamps_parse_to_epoch_milliseconds() {
    assert_eq!(timestamp_ms("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(timestamp_ms("1970-01-01T00:00:01.5Z"), Some(1500));
    assert_eq!(
        timestamp_ms("2026-11-30T09:46:30.212Z"),
        Some(1_796_031_990_212)
    );
    assert_eq!(
        timestamp_ms("2026-11-30T09:46:30.212609726Z"),
        Some(1_796_031_990_212)
    );
    assert_eq!(
        timestamp_ms("2026-11-30T10:46:30.212+01:00"),
        Some(1_796_031_990_212)
    );
    assert_eq!(timestamp_ms("2000-02-29T00:00:00Z"), Some(951_782_400_000));
    for bad in [
        "",
        "2026-11-30",
        "2026-13-01T00:00:00Z",
        "2026-11-30T25:00:00Z",
        "x-y-zT1:2:3Z",
        // Found by fuzzing (`fuzz/`): these overflowed instead of being refused.
        "4099276460824343300-11-30T09:47:50.564Z",
        "2026-11-30T09:47:50+9223372036854775807:00",
        "2026-11-30T09:47:50-00:9223372036854775807",
    ] {
        assert_eq!(timestamp_ms(bad), None, "{bad}");
    }
}

#[test]
fn map_transcript_names_the_line_it_could_not_read() {
    let text = format!("{}\n\nnot json\n", event("assistant.idle", json!({})));
    let error = map_transcript(session(), "t1", &text).unwrap_err();
    assert_eq!(error.line, 3);
    assert!(error.to_string().starts_with("line 3: not a JSON object"));
}

proptest! {
    #[test]
    fn garbage_never_panics(text in ".{0,200}") {
        let mut t = translator();
        let _ = t.on_message(&text);
    }

    #[test]
    fn json_of_any_shape_never_panics(
        kind in prop::sample::select(vec![
            "assistant.message_delta", "assistant.message", "tool.execution_start",
            "tool.execution_complete", "permission.requested", "permission.completed",
            "assistant.usage", "subagent.started", "session.idle", "session.error",
            "skill.invoked", "assistant.tool_call_delta", "user.message", "other",
        ]),
        data in prop::collection::hash_map(
            prop::sample::select(vec![
                "messageId", "toolCallId", "deltaContent", "content", "success", "requestId",
                "permissionRequest", "inputTokens", "aborted", "toolName", "arguments",
            ]),
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                "[a-z_]{0,8}".prop_map(Value::from),
                Just(json!({ "kind": "shell", "toolCallId": "c" })),
                Just(json!([1, "x"])),
            ],
            0..6,
        ),
        agent in prop::option::of(prop::sample::select(vec!["agent-1", "agent-2"])),
    ) {
        let mut t = translator();
        let data: serde_json::Map<String, Value> =
            data.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let _ = t.on_message(&event_at(kind, Value::Object(data), agent, 1).to_string());
        let _ = t.on_message(&idle(2, false).to_string());
    }
}

#[test]
fn the_main_models_limits_are_reported_for_the_advertised_model() {
    let turn_started = |agent: Option<&str>| {
        event_at(
            "model.turn_started",
            json!({ "kind": "turn_started", "model": "gpt-5.4",
                    "modelInfo": { "id": "gpt-5.4", "capabilities": { "limits": {
                        "max_prompt_tokens": 128000, "max_context_window_tokens": 1050000,
                        "vision": { "max_prompt_images": 1 } } } } }),
            agent,
            1,
        )
    };
    let mut t = translator();
    assert!(
        signals(&feed(&mut t, &[turn_started(None)])).is_empty(),
        "no signal before the advertised model is known"
    );
    t.set_model("gpt-5.4");
    assert_eq!(
        signals(&feed(&mut t, &[turn_started(None)])),
        vec![
            json!({ "signal": "modelLimits", "model": "gpt-5.4", "maxPromptTokens": 128000,
                     "maxContextWindow": 1050000, "maxOutputTokens": null })
        ]
    );
    assert!(
        signals(&feed(&mut t, &[turn_started(Some("sub-1"))])).is_empty(),
        "a subagent's model is not the conversation's"
    );
}

use agenthost_protocol::{SafeId, SessionUri};
use agenthost_provider_api::signal_json;
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "acp-1";

fn session() -> SessionUri {
    SessionUri::canonical(SafeId::new("s1").unwrap())
}

/// A translator following `SESSION`, in protocol turn `t1` whose prompt is request 7.
fn translator() -> Translator {
    let mut translator = Translator::new(session());
    translator.set_session(SESSION);
    translator.begin_turn("t1");
    translator.prompt_sent(json!(7));
    translator
}

fn feed(translator: &mut Translator, messages: &[Value]) -> Vec<Output> {
    messages
        .iter()
        .flat_map(|message| translator.on_line(&message.to_string()).unwrap())
        .collect()
}

fn rendered(outputs: &[Output]) -> Vec<Value> {
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
    rendered(outputs)
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

fn find(outputs: &[Output], kind: &str) -> Value {
    rendered(outputs)
        .into_iter()
        .find(|value| value.get("type").and_then(Value::as_str) == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} in {:#?}", rendered(outputs)))
}

fn update(update: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": "session/update",
            "params": { "sessionId": SESSION, "update": update } })
}

fn chunk(kind: &str, text: &str) -> Value {
    update(json!({ "sessionUpdate": kind, "content": { "type": "text", "text": text } }))
}

fn answer(stop: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": 7, "result": { "stopReason": stop } })
}

fn permission(id: u64, call: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "session/request_permission", "params": {
        "sessionId": SESSION,
        "toolCall": { "toolCallId": call, "title": "Write out.txt", "kind": "edit",
                      "rawInput": { "path": "out.txt" },
                      "locations": [{ "path": "/w/out.txt" }] },
        "options": [
            { "optionId": "yes", "kind": "allow_once", "name": "Allow" },
            { "optionId": "always", "kind": "allow_always", "name": "Always" },
            { "optionId": "no", "kind": "reject_once", "name": "Deny" },
        ],
    } })
}

#[test]
fn text_and_thoughts_stream_into_parts_and_end_turn_completes() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            chunk("agent_thought_chunk", "thinking"),
            chunk("agent_message_chunk", "Hel"),
            chunk("agent_message_chunk", "lo"),
            answer("end_turn"),
        ],
    );
    assert_eq!(
        shape(&out),
        // A part is created with its first piece of text.
        [
            "chat/responsePart",
            "chat/responsePart",
            "chat/delta",
            "chat/turnComplete"
        ]
    );
    assert_eq!(out.last(), Some(&Output::TurnEnded));
}

#[test]
fn a_tool_that_runs_unasked_is_ready_without_confirmation_and_shows_its_output() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            update(json!({ "sessionUpdate": "tool_call", "toolCallId": "c1",
                           "title": "List files", "kind": "execute", "status": "pending",
                           "rawInput": { "command": "ls" } })),
            update(
                json!({ "sessionUpdate": "tool_call_update", "toolCallId": "c1",
                           "status": "in_progress" }),
            ),
            update(
                json!({ "sessionUpdate": "tool_call_update", "toolCallId": "c1",
                           "content": [{ "type": "content",
                                         "content": { "type": "text", "text": "a.txt" } }] }),
            ),
            update(
                json!({ "sessionUpdate": "tool_call_update", "toolCallId": "c1",
                           "status": "completed",
                           "content": [{ "type": "content",
                                         "content": { "type": "text", "text": "a.txt\nb.txt" } }] }),
            ),
            answer("end_turn"),
        ],
    );
    assert_eq!(
        shape(&out),
        [
            "chat/toolCallStart",
            "chat/toolCallDelta",
            "chat/toolCallReady",
            "chat/toolCallContentChanged",
            "chat/toolCallComplete",
            "chat/turnComplete"
        ]
    );
    let start = find(&out, "chat/toolCallStart");
    assert_eq!(start["toolName"], "execute");
    assert_eq!(start["displayName"], "List files");
    assert_eq!(find(&out, "chat/toolCallReady")["confirmed"], "not-needed");
    let complete = find(&out, "chat/toolCallComplete");
    assert_eq!(complete["result"]["success"], true);
    assert_eq!(complete["result"]["content"][0]["text"], "a.txt\nb.txt");
}

#[test]
fn a_permission_request_is_a_pending_confirmation_and_a_denial_completes_as_denied() {
    let mut t = translator();
    let out = feed(&mut t, &[permission(3, "c1")]);
    assert_eq!(
        shape(&out),
        [
            "chat/toolCallStart",
            "chat/toolCallDelta",
            "chat/toolCallReady"
        ]
    );
    let Some(Output::PermissionRequest {
        request_id,
        tool_call_id,
        options,
    }) = out.last()
    else {
        panic!("no permission request: {out:?}");
    };
    assert_eq!((request_id, tool_call_id.as_str()), (&json!(3), "c1"));
    let pending = &rendered(&out)[2];
    assert!(pending.get("confirmed").is_none(), "{pending}");
    assert_eq!(pending["permissionKind"], "write", "{pending}");
    assert_eq!(pending["permissionPath"], "/w/out.txt");
    assert_eq!(pending["toolInput"], "{\"path\":\"out.txt\"}");
    let answer_line: Value =
        serde_json::from_str(&permission_answer(request_id, options, Some(false))).unwrap();
    assert_eq!(
        answer_line,
        json!({ "jsonrpc": "2.0", "id": 3,
                "result": { "outcome": { "outcome": "selected", "optionId": "no" } } })
    );
    assert!(t.record_decision("c1", false).is_empty());
    let out = feed(
        &mut t,
        &[
            update(
                json!({ "sessionUpdate": "tool_call_update", "toolCallId": "c1",
                           "status": "failed" }),
            ),
            answer("end_turn"),
        ],
    );
    let complete = find(&out, "chat/toolCallComplete");
    assert_eq!(complete["result"]["success"], false);
    assert_eq!(complete["result"]["error"]["code"], "denied", "{complete}");
}

#[test]
fn the_answer_picks_the_matching_option_and_falls_back_to_cancelled() {
    let option = |id: &str, kind: schema::PermissionOptionKind| {
        schema::PermissionOption::new(id.to_owned(), id.to_owned(), kind)
    };
    let only_always = [option("a", schema::PermissionOptionKind::AllowAlways)];
    let outcome = |line: String| serde_json::from_str::<Value>(&line).unwrap()["result"].clone();
    assert_eq!(
        outcome(permission_answer(&json!(1), &only_always, Some(true))),
        json!({ "outcome": { "outcome": "selected", "optionId": "a" } })
    );
    assert_eq!(
        outcome(permission_answer(&json!(1), &only_always, Some(false))),
        json!({ "outcome": { "outcome": "cancelled" } })
    );
    assert_eq!(
        outcome(permission_answer(&json!(1), &only_always, None)),
        json!({ "outcome": { "outcome": "cancelled" } })
    );
    // Of two rejections, the one that declines the call rather than cancelling the turn.
    let two_rejects = [
        option("cancel", schema::PermissionOptionKind::RejectOnce),
        option("decline", schema::PermissionOptionKind::RejectOnce),
    ];
    assert_eq!(
        outcome(permission_answer(&json!(1), &two_rejects, Some(false))),
        json!({ "outcome": { "outcome": "selected", "optionId": "decline" } })
    );
    assert_eq!(
        outcome(permission_answer(&json!(1), &two_rejects[..1], Some(false))),
        json!({ "outcome": { "outcome": "selected", "optionId": "cancel" } })
    );
}

#[test]
fn after_a_cancel_the_turn_says_nothing_whatever_stop_reason_comes() {
    let mut t = translator();
    feed(&mut t, &[chunk("agent_message_chunk", "working")]);
    t.abort_turn();
    // Copilot answers a cancel with `end_turn`.
    let out = feed(
        &mut t,
        &[chunk("agent_message_chunk", "late"), answer("end_turn")],
    );
    assert_eq!(out, [Output::TurnEnded]);
}

#[test]
fn stop_reasons_that_are_not_an_end_are_errors_saying_why() {
    for (reason, says) in [
        ("refusal", "refused"),
        ("max_tokens", "maximum number of output tokens"),
        ("max_turn_requests", "maximum number of model requests"),
    ] {
        let mut t = translator();
        let out = feed(&mut t, &[answer(reason)]);
        let error = find(&out, "chat/error");
        let message = error["part"]["error"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(message.contains(says), "{reason}: {error}");
    }
    // A cancel the host did not ask for is the agent stopping on its own.
    let mut t = translator();
    assert_eq!(
        shape(&feed(&mut t, &[answer("cancelled")])),
        ["chat/turnCancelled"]
    );
}

#[test]
fn an_error_answer_fails_the_turn_and_sign_in_errors_name_the_methods() {
    let mut t = translator();
    t.set_auth_methods(vec!["Log in: run `agent login`".to_owned()]);
    let out = feed(
        &mut t,
        &[json!({ "jsonrpc": "2.0", "id": 7,
                  "error": { "code": -32000, "message": "Authentication required" } })],
    );
    let error = find(&out, "chat/error");
    let message = error["part"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("sign in"), "{message}");
    assert!(message.contains("run `agent login`"), "{message}");
    assert_eq!(out.last(), Some(&Output::TurnEnded));
}

#[test]
fn usage_reports_tokens_from_the_answer_and_the_context_fill_in_meta() {
    let mut t = translator();
    t.set_model("m1");
    let out = feed(
        &mut t,
        &[
            update(
                json!({ "sessionUpdate": "usage_update", "used": 900, "size": 8000,
                           "cost": { "amount": 0.25, "currency": "USD" } }),
            ),
            json!({ "jsonrpc": "2.0", "id": 7, "result": { "stopReason": "end_turn",
                    "usage": { "inputTokens": 100, "outputTokens": 20, "totalTokens": 120,
                               "cachedReadTokens": 5 } } }),
        ],
    );
    assert_eq!(
        shape(&out),
        ["modelLimits", "chat/usage", "chat/turnComplete"]
    );
    let usage = find(&out, "chat/usage");
    assert_eq!(usage["usage"]["inputTokens"], 100);
    assert_eq!(usage["usage"]["outputTokens"], 20);
    assert_eq!(usage["usage"]["cacheReadTokens"], 5);
    let meta = &usage["usage"]["_meta"];
    assert_eq!(meta["agenthost.contextWindow"], 8000, "{usage}");
    assert_eq!(meta["agenthost.contextTokens"], 900);
    assert_eq!(
        meta["agenthost.cost"],
        json!({ "amount": 0.25, "currency": "USD" })
    );
    assert!(meta.get("cost").is_none(), "money never goes under `cost`");
}

#[test]
fn unknown_updates_other_sessions_and_updates_outside_a_turn_are_skipped() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            update(json!({ "sessionUpdate": "some_future_kind", "whatever": 1 })),
            json!({ "jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": "other", "update": { "sessionUpdate": "agent_message_chunk",
                "content": { "type": "text", "text": "not mine" } } } }),
            answer("end_turn"),
            chunk("agent_message_chunk", "straggler"),
        ],
    );
    assert_eq!(shape(&out), ["chat/turnComplete"]);
}

#[test]
fn requests_the_host_does_not_serve_get_method_not_found_and_strays_are_withdrawn() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            json!({ "jsonrpc": "2.0", "id": 9, "method": "fs/read_text_file",
                  "params": { "sessionId": SESSION, "path": "/etc/passwd" } }),
        ],
    );
    let [Output::Write(line)] = out.as_slice() else {
        panic!("{out:?}");
    };
    let line: Value = serde_json::from_str(line).unwrap();
    assert_eq!(line["id"], 9);
    assert_eq!(line["error"]["code"], METHOD_NOT_FOUND);
    // A permission request outside any turn is answered `cancelled` at once.
    feed(&mut t, &[answer("end_turn")]);
    let out = feed(&mut t, &[permission(4, "c9")]);
    let [Output::Write(line)] = out.as_slice() else {
        panic!("{out:?}");
    };
    let line: Value = serde_json::from_str(line).unwrap();
    assert_eq!(line["result"]["outcome"]["outcome"], "cancelled");
}

#[test]
fn a_replayed_history_is_dropped_and_the_title_renames_the_session() {
    let mut t = translator();
    t.set_replaying(true);
    let out = feed(
        &mut t,
        &[
            chunk("user_message_chunk", "old question"),
            chunk("agent_message_chunk", "old answer"),
            update(json!({ "sessionUpdate": "session_info_update", "title": "Old" })),
        ],
    );
    assert!(out.is_empty(), "{out:?}");
    t.set_replaying(false);
    let out = feed(
        &mut t,
        &[update(
            json!({ "sessionUpdate": "session_info_update", "title": "Fix the build" }),
        )],
    );
    assert_eq!(find(&out, "session/titleChanged")["title"], "Fix the build");
}

#[test]
fn a_plan_is_a_synthetic_tool_call_completed_when_the_turn_ends() {
    let mut t = translator();
    let plan = |status: &str| {
        update(json!({ "sessionUpdate": "plan", "entries": [
            { "content": "read", "priority": "high", "status": "completed" },
            { "content": "write", "priority": "low", "status": status },
        ] }))
    };
    let out = feed(
        &mut t,
        &[plan("pending"), plan("in_progress"), answer("end_turn")],
    );
    assert_eq!(
        shape(&out),
        [
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallContentChanged",
            "chat/toolCallContentChanged",
            "chat/toolCallComplete",
            "chat/turnComplete"
        ]
    );
    let changed: Vec<Value> = rendered(&out)
        .into_iter()
        .filter(|v| v["type"] == "chat/toolCallContentChanged")
        .collect();
    assert_eq!(changed[1]["content"][0]["text"], "- [x] read\n- [~] write");
}

#[test]
fn a_diff_is_a_file_edit_and_open_calls_are_settled_when_the_turn_ends() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            update(
                json!({ "sessionUpdate": "tool_call", "toolCallId": "e1", "title": "Edit",
                           "kind": "edit", "status": "in_progress" }),
            ),
            update(
                json!({ "sessionUpdate": "tool_call_update", "toolCallId": "e1",
                           "status": "completed", "content": [{ "type": "diff",
                           "path": "/w/a.txt", "oldText": "one\ntwo\n",
                           "newText": "one\nthree\nfour\n" }] }),
            ),
            update(
                json!({ "sessionUpdate": "tool_call", "toolCallId": "r1", "title": "Read",
                           "kind": "read", "status": "in_progress" }),
            ),
            answer("end_turn"),
        ],
    );
    let completes: Vec<Value> = rendered(&out)
        .into_iter()
        .filter(|v| v["type"] == "chat/toolCallComplete")
        .collect();
    let edit = &completes[0]["result"]["content"][0];
    assert_eq!(edit["type"], "fileEdit", "{edit}");
    assert_eq!(edit["after"]["uri"], "file:///w/a.txt");
    assert_eq!(edit["diff"], json!({ "added": 2, "removed": 1 }));
    assert_eq!(completes[1]["toolCallId"], "r1");
    assert_eq!(completes[1]["result"]["success"], false);
    assert_eq!(
        shape(&out).last().map(String::as_str),
        Some("chat/turnComplete")
    );
}

#[test]
fn garbage_and_malformed_known_messages_are_line_errors() {
    let mut t = translator();
    let error = t.on_line("npm WARN something").unwrap_err();
    assert!(error.to_string().contains("npm WARN something"), "{error}");
    let error = t
        .on_line(
            &update(json!({ "sessionUpdate": "tool_call", "toolCallId": 5, "title": 1 }))
                .to_string(),
        )
        .unwrap_err();
    assert!(error.to_string().contains("tool_call"), "{error}");
}

#[test]
fn a_failed_process_settles_open_calls_and_errors_the_turn_once() {
    let mut t = translator();
    feed(
        &mut t,
        &[update(
            json!({ "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Run",
                         "kind": "execute", "status": "in_progress" }),
        )],
    );
    let error = ErrorInfo {
        error_type: "exited".to_owned(),
        message: "the agent exited".to_owned(),
        stack: None,
        meta: None,
    };
    let signals: Vec<Value> = t.fail_turn(error.clone()).iter().map(signal_json).collect();
    let kinds: Vec<&str> = signals.iter().filter_map(|s| s["type"].as_str()).collect();
    assert_eq!(kinds, ["chat/toolCallComplete", "chat/error"]);
    assert!(t.fail_turn(error).is_empty());
}

use std::collections::HashSet;

use agenthost_protocol::error_info::error_info;
use agenthost_protocol::{SafeId, SessionUri};
use agenthost_provider_api::signal_json;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::control::{FieldKind, FormField};

const THREAD: &str = "th-1";
const APP_TURN: &str = "app-1";

fn session() -> SessionUri {
    SessionUri::canonical(SafeId::new("s1").unwrap())
}

/// A translator following `THREAD`, in protocol turn `t1`, which Codex started as `APP_TURN`.
fn translator() -> Translator {
    let mut translator = Translator::new(session());
    translator.set_thread(THREAD);
    translator.begin_turn("t1");
    let started = translator
        .on_line(&turn_started(APP_TURN).to_string())
        .unwrap();
    assert!(started.is_empty(), "{started:?}");
    translator
}

/// A translator following `THREAD`, in protocol turn `t1` whose Codex turn is not known yet.
fn unbound_translator() -> Translator {
    let mut translator = Translator::new(session());
    translator.set_thread(THREAD);
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

/// `type` (or `signal`) of each rendered signal.
fn shape(values: &[Value]) -> Vec<String> {
    values
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

fn notification(method: &str, params: Value) -> Value {
    json!({ "method": method, "params": params, "emittedAtMs": 1 })
}

fn turn_started(app_turn: &str) -> Value {
    notification(
        "turn/started",
        json!({ "threadId": THREAD, "turn": { "id": app_turn, "status": "inProgress", "items": [] } }),
    )
}

fn turn_completed(app_turn: &str, status: &str, extra: Value) -> Value {
    let mut turn = json!({ "id": app_turn, "status": status, "items": [], "durationMs": 42 });
    if let (Value::Object(turn), Value::Object(extra)) = (&mut turn, extra) {
        turn.extend(extra);
    }
    notification(
        "turn/completed",
        json!({ "threadId": THREAD, "turn": turn }),
    )
}

fn item(method: &str, item: Value) -> Value {
    notification(
        method,
        json!({ "threadId": THREAD, "turnId": APP_TURN, "item": item }),
    )
}

fn command(id: &str, status: &str, extra: Value) -> Value {
    let mut item = json!({
        "type": "commandExecution", "id": id, "command": "/bin/bash -lc 'echo hi > out.txt'",
        "cwd": "/w", "status": status, "aggregatedOutput": null, "exitCode": null,
    });
    if let (Value::Object(item), Value::Object(extra)) = (&mut item, extra) {
        item.extend(extra);
    }
    item
}

fn approval(request_id: Value, item_id: &str) -> Value {
    json!({
        "method": "item/commandExecution/requestApproval", "id": request_id,
        "params": { "threadId": THREAD, "turnId": APP_TURN, "itemId": item_id,
                    "reason": "Need to write out.txt",
                    "command": "/bin/bash -lc 'echo hi > out.txt'" }
    })
}

fn delta(method: &str, item_id: &str, text: &str) -> Value {
    notification(
        method,
        json!({ "threadId": THREAD, "turnId": APP_TURN, "itemId": item_id, "delta": text }),
    )
}

#[test]
fn a_completed_turn_ends_with_turn_complete_and_codex_s_duration() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            turn_started(APP_TURN),
            turn_completed(APP_TURN, "completed", json!({})),
        ],
    );
    assert_eq!(
        signals(&out),
        [json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 42 })]
    );
    assert_eq!(out.last(), Some(&Output::TurnEnded));
    assert_eq!(t.turn_id(), None);
}

#[test]
fn the_duration_falls_back_to_the_turn_s_timestamps() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[turn_completed(
            APP_TURN,
            "completed",
            json!({ "durationMs": null, "startedAt": 100, "completedAt": 103 }),
        )],
    );
    assert_eq!(signals(&out)[0]["duration"], 3000);
}

#[test]
fn an_interrupted_turn_is_cancelled_and_its_open_tools_fail() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            turn_started(APP_TURN),
            item("item/started", command("call_1", "inProgress", json!({}))),
            delta("item/commandExecution/outputDelta", "call_1", "partial"),
            turn_completed(APP_TURN, "interrupted", json!({})),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        shape(&rendered),
        [
            "chat/toolCallStart",
            "chat/toolCallDelta",
            "chat/toolCallReady",
            "chat/toolCallContentChanged",
            "chat/toolCallComplete",
            "chat/turnCancelled"
        ]
    );
    assert_eq!(
        rendered[4]["result"],
        json!({ "success": false, "pastTenseMessage": "Run shell command did not finish",
                "content": [{ "type": "text", "text": "partial" }],
                "error": { "message": "The turn was interrupted before the tool call finished." } })
    );
    assert_eq!(rendered[5]["duration"], 42);
}

#[test]
fn after_the_client_cancels_nothing_more_comes_for_that_turn() {
    let mut t = translator();
    feed(
        &mut t,
        &[
            turn_started(APP_TURN),
            item("item/started", command("call_1", "inProgress", json!({}))),
        ],
    );
    assert_eq!(t.app_turn_id(), Some(APP_TURN));
    t.abort_turn();
    assert_eq!(t.turn_id(), None);
    t.begin_turn("t2");
    let out = feed(
        &mut t,
        &[
            delta("item/commandExecution/outputDelta", "call_1", "late"),
            item(
                "item/completed",
                command("call_1", "completed", json!({ "exitCode": 0 })),
            ),
            turn_completed(APP_TURN, "interrupted", json!({})),
        ],
    );
    assert_eq!(out, Vec::new(), "the old turn's output is dropped");
    // The next app-server turn is the new protocol turn's.
    let out = feed(
        &mut t,
        &[
            turn_started("app-2"),
            turn_completed("app-2", "completed", json!({})),
        ],
    );
    assert_eq!(shape(&signals(&out)), ["chat/turnComplete"]);
    assert_eq!(signals(&out)[0]["turnId"], "t2");
}

#[test]
fn a_turn_cancelled_before_its_start_response_never_claims_that_turn() {
    let mut t = unbound_translator();
    t.turn_start_sent(&json!(7));
    t.abort_turn();
    t.begin_turn("t2");
    t.turn_start_sent(&json!(8));
    let out = feed(
        &mut t,
        &[
            json!({ "id": 7, "result": { "turn": { "id": "app-old", "status": "inProgress" } } }),
            turn_started("app-old"),
            turn_completed("app-old", "interrupted", json!({})),
            json!({ "id": 8, "result": { "turn": { "id": "app-new", "status": "inProgress" } } }),
        ],
    );
    assert!(signals(&out).is_empty());
    assert_eq!(t.app_turn_id(), Some("app-new"));
    let out = feed(&mut t, &[turn_completed("app-new", "completed", json!({}))]);
    assert_eq!(shape(&signals(&out)), ["chat/turnComplete"]);
}

#[test]
fn with_a_cancelled_start_unanswered_only_the_response_binds_the_new_turn() {
    let mut t = unbound_translator();
    t.turn_start_sent(&json!(7));
    t.abort_turn();
    t.begin_turn("t2");
    t.turn_start_sent(&json!(8));
    let out = feed(
        &mut t,
        &[
            // The old turn's notifications arrive before its response.
            turn_started("app-old"),
            item("item/started", command("call_old", "inProgress", json!({}))),
            json!({ "id": 7, "result": { "turn": { "id": "app-old" } } }),
            json!({ "id": 8, "result": { "turn": { "id": "app-new" } } }),
            turn_completed("app-old", "interrupted", json!({})),
            turn_completed("app-new", "completed", json!({})),
        ],
    );
    assert_eq!(shape(&signals(&out)), ["chat/turnComplete"]);
    assert_eq!(signals(&out)[0]["turnId"], "t2");
}

#[test]
fn a_cancelled_start_that_failed_is_forgotten() {
    let mut t = translator();
    t.turn_start_sent(&json!(7));
    t.abort_turn();
    t.begin_turn("t2");
    t.turn_start_sent(&json!(8));
    let out = feed(
        &mut t,
        &[
            json!({ "id": 7, "error": { "code": -32600, "message": "busy" } }),
            turn_started("app-new"),
            turn_completed("app-new", "completed", json!({})),
        ],
    );
    assert_eq!(shape(&signals(&out)), ["chat/turnComplete"]);
}

#[test]
fn responses_go_to_the_driver_with_their_ids() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            json!({ "id": 1, "result": { "userAgent": "x" } }),
            json!({ "id": "req-2", "error": { "code": -32600, "message": "gone" } }),
        ],
    );
    assert_eq!(
        out,
        [
            Output::Response {
                id: json!(1),
                result: Ok(json!({ "userAgent": "x" }))
            },
            Output::Response {
                id: json!("req-2"),
                result: Err(RpcError {
                    code: -32600,
                    message: "gone".into(),
                    data: None
                })
            },
        ]
    );
}

#[test]
fn the_first_thread_is_followed_and_reported_once() {
    let mut t = Translator::new(session());
    let out = feed(
        &mut t,
        &[
            json!({ "id": 2, "result": { "thread": { "id": "th-9", "model": "m" }, "model": "gpt-5.5" } }),
            notification("thread/started", json!({ "thread": { "id": "th-9" } })),
            notification(
                "thread/started",
                json!({ "thread": { "id": "th-child", "parentThreadId": "th-9" } }),
            ),
        ],
    );
    let threads: Vec<&Output> = out
        .iter()
        .filter(|output| matches!(output, Output::ThreadStarted(_)))
        .collect();
    assert_eq!(threads, [&Output::ThreadStarted("th-9".into())]);
    assert_eq!(t.thread_id(), Some("th-9"));
}

#[test]
fn notifications_of_other_threads_are_ignored() {
    let mut t = unbound_translator();
    let other = |method: &str, params: Value| {
        let mut params = params;
        params["threadId"] = json!("th-other");
        notification(method, params)
    };
    let out = feed(
        &mut t,
        &[
            other("turn/started", json!({ "turn": { "id": "app-x" } })),
            other(
                "item/started",
                json!({ "turnId": "app-x", "item": command("call_x", "inProgress", json!({})) }),
            ),
            other(
                "turn/completed",
                json!({ "turn": { "id": "app-x", "status": "completed" } }),
            ),
        ],
    );
    assert_eq!(out, Vec::new());
    assert_eq!(t.turn_id(), Some("t1"));
    assert_eq!(t.app_turn_id(), None);
}

#[test]
fn shell_wrappers_are_unwrapped_and_a_command_runs_without_asking() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            item("item/started", command("call_1", "inProgress", json!({}))),
            item(
                "item/completed",
                command(
                    "call_1",
                    "completed",
                    json!({ "exitCode": 0, "aggregatedOutput": "ok\n" }),
                ),
            ),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        rendered[..3],
        [
            json!({ "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "call_1",
                    "toolName": "shell", "displayName": "Run shell command",
                    "_meta": { "toolKind": "terminal" } }),
            json!({ "type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "call_1",
                    "content": "echo hi > out.txt" }),
            json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "call_1",
                    "invocationMessage": "Run `echo hi > out.txt`",
                    "toolInput": "echo hi > out.txt", "confirmed": "not-needed" }),
        ]
    );
    assert_eq!(
        rendered[3]["result"],
        json!({ "success": true, "pastTenseMessage": "Ran `echo hi > out.txt`",
                "content": [{ "type": "text", "text": "ok\n" }] })
    );
}

#[test]
fn a_command_that_exits_non_zero_or_fails_is_not_a_success() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            item(
                "item/completed",
                command("call_1", "failed", json!({ "exitCode": 2 })),
            ),
            item("item/completed", command("call_2", "failed", json!({}))),
        ],
    );
    let completions: Vec<Value> = signals(&out)
        .into_iter()
        .filter(|s| s["type"] == "chat/toolCallComplete")
        .map(|s| s["result"].clone())
        .collect();
    assert_eq!(
        completions,
        [
            json!({ "success": false, "pastTenseMessage": "Ran `echo hi > out.txt` (exit 2)",
                    "error": { "message": "The command exited with code 2." } }),
            json!({ "success": false, "pastTenseMessage": "Ran `echo hi > out.txt` (failed)",
                    "error": { "message": "The command failed." } }),
        ]
    );
}

#[test]
fn an_approval_parks_the_request_and_a_decline_completes_the_call_as_denied() {
    let mut t = translator();
    feed(
        &mut t,
        &[item(
            "item/started",
            command("call_1", "inProgress", json!({})),
        )],
    );
    let out = feed(&mut t, &[approval(json!(0), "call_1")]);
    let rendered = signals(&out);
    assert_eq!(
        rendered,
        [
            json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "call_1",
                 "invocationMessage": "Run `echo hi > out.txt`", "toolInput": "echo hi > out.txt",
                 "confirmationTitle": "Need to write out.txt", "permissionKind": "shell" })
        ]
    );
    assert_eq!(
        out.last(),
        Some(&Output::ApprovalRequest {
            request_id: json!(0),
            tool_call_id: "call_1".into(),
            kind: ApprovalKind::CommandExecution
        })
    );
    t.record_decision("call_1", false);
    // Codex may report the declined call as completed; the host's answer decides.
    let out = feed(
        &mut t,
        &[item(
            "item/completed",
            command("call_1", "completed", json!({})),
        )],
    );
    assert_eq!(
        signals(&out)[0]["result"],
        json!({ "success": false, "pastTenseMessage": "Did not run `echo hi > out.txt` (declined)",
                "error": { "code": "denied", "message": "The user declined to run this command." } })
    );
}

#[test]
fn a_declined_status_alone_completes_the_call_as_denied() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            item("item/started", command("call_1", "inProgress", json!({}))),
            item("item/completed", command("call_1", "declined", json!({}))),
        ],
    );
    assert_eq!(signals(&out)[3]["result"]["error"]["code"], "denied");
}

#[test]
fn approvals_nobody_can_answer_are_declined_right_away() {
    let mut t = translator();
    let decline = |id: Value| Output::Reply {
        request_id: id,
        result: json!({ "decision": "decline" }),
    };
    // An item the translator never saw start.
    let out = feed(&mut t, &[approval(json!(1), "call_unknown")]);
    assert_eq!(out, [decline(json!(1))]);
    // Another thread.
    let mut other = approval(json!(2), "call_1");
    other["params"]["threadId"] = json!("th-other");
    feed(
        &mut t,
        &[item(
            "item/started",
            command("call_1", "inProgress", json!({})),
        )],
    );
    assert_eq!(feed(&mut t, &[other]), [decline(json!(2))]);
    // A finished item.
    feed(
        &mut t,
        &[item(
            "item/completed",
            command("call_1", "completed", json!({})),
        )],
    );
    assert_eq!(
        feed(&mut t, &[approval(json!(3), "call_1")]),
        [decline(json!(3))]
    );
    // No turn at all.
    let mut idle = Translator::new(session());
    assert_eq!(
        feed(&mut idle, &[approval(json!(4), "call_1")]),
        [decline(json!(4))]
    );
}

fn permissions_request(request_id: Value, item_id: Option<&str>, reason: Option<&str>) -> Value {
    let mut params = json!({ "threadId": THREAD, "turnId": APP_TURN,
                             "permissions": { "network": { "enabled": true } } });
    if let Some(item_id) = item_id {
        params["itemId"] = json!(item_id);
    }
    if let Some(reason) = reason {
        params["reason"] = json!(reason);
    }
    json!({ "method": "item/permissions/requestApproval", "id": request_id, "params": params })
}

fn permissions_kind() -> ApprovalKind {
    ApprovalKind::Permissions {
        requested: json!({ "network": { "enabled": true } }),
    }
}

#[test]
fn a_permissions_request_for_an_open_item_asks_on_its_tool_call() {
    let mut t = translator();
    feed(
        &mut t,
        &[item(
            "item/started",
            command("call_1", "inProgress", json!({})),
        )],
    );
    let out = feed(
        &mut t,
        &[permissions_request(
            json!(11),
            Some("call_1"),
            Some("Fetch the crate index"),
        )],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "call_1",
                    "invocationMessage": "Allow network access",
                    "toolInput": r#"{"network":{"enabled":true}}"#,
                    "confirmationTitle": "Fetch the crate index",
                    "permissionKind": "permissions" })
        ]
    );
    assert_eq!(
        out.last(),
        Some(&Output::ApprovalRequest {
            request_id: json!(11),
            tool_call_id: "call_1".into(),
            kind: permissions_kind()
        })
    );
    assert_eq!(
        approval_answer(permissions_kind(), true),
        json!({ "permissions": { "network": { "enabled": true } }, "scope": "turn" })
    );
    // The item's own completion reports it; the decision completes nothing.
    assert_eq!(t.record_decision("call_1", true), Vec::new());
    let out = feed(
        &mut t,
        &[item(
            "item/completed",
            command("call_1", "completed", json!({ "exitCode": 0 })),
        )],
    );
    assert_eq!(signals(&out)[0]["result"]["success"], true);
}

#[test]
fn a_permissions_request_without_an_open_item_asks_on_a_synthetic_call() {
    let mut t = translator();
    let out = feed(&mut t, &[permissions_request(json!(12), None, None)]);
    let rendered = signals(&out);
    assert_eq!(
        rendered,
        [
            json!({ "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "permissions-12",
                    "toolName": "codex.permissions", "displayName": "Permissions" }),
            json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "permissions-12",
                    "invocationMessage": "Allow network access",
                    "toolInput": r#"{"network":{"enabled":true}}"#,
                    "confirmationTitle": "Allow extra permissions",
                    "permissionKind": "permissions" }),
        ]
    );
    assert_eq!(
        out.last(),
        Some(&Output::ApprovalRequest {
            request_id: json!(12),
            tool_call_id: "permissions-12".into(),
            kind: permissions_kind()
        })
    );
    // The host's answer completes it; the turn's end does not complete it again.
    let done: Vec<Value> = t
        .record_decision("permissions-12", true)
        .iter()
        .map(signal_json)
        .collect();
    assert_eq!(
        done,
        [
            json!({ "type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": "permissions-12",
                    "result": { "success": true, "pastTenseMessage": "Allowed network access" } })
        ]
    );
    let out = feed(&mut t, &[turn_completed(APP_TURN, "completed", json!({}))]);
    assert_eq!(shape(&signals(&out)), ["chat/turnComplete"]);
}

#[test]
fn a_declined_permissions_request_of_an_unknown_item_completes_its_synthetic_call_as_denied() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[permissions_request(json!("p-1"), Some("call_gone"), None)],
    );
    assert_eq!(
        out.last(),
        Some(&Output::ApprovalRequest {
            request_id: json!("p-1"),
            tool_call_id: "permissions-p-1".into(),
            kind: permissions_kind()
        })
    );
    assert_eq!(
        approval_answer(permissions_kind(), false),
        json!({ "permissions": {}, "scope": "turn" })
    );
    let done: Vec<Value> = t
        .record_decision("permissions-p-1", false)
        .iter()
        .map(signal_json)
        .collect();
    assert_eq!(
        done[0]["result"],
        json!({ "success": false, "pastTenseMessage": "Extra permissions were declined",
                "error": { "code": "denied",
                           "message": "The user declined the extra permissions." } })
    );
    assert_eq!(done.len(), 1);
}

#[test]
fn an_unanswered_synthetic_permissions_call_completes_at_the_turn_end() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            permissions_request(json!(13), None, Some("Write the cache")),
            turn_completed(APP_TURN, "completed", json!({})),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        shape(&rendered),
        [
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallComplete",
            "chat/turnComplete"
        ]
    );
    assert_eq!(rendered[1]["confirmationTitle"], "Write the cache");
    assert_eq!(rendered[2]["result"]["success"], false);
    assert_eq!(rendered[2]["toolCallId"], "permissions-13");
}

#[test]
fn permissions_requests_nobody_can_answer_are_declined_right_away() {
    let decline = |id: Value| Output::Reply {
        request_id: id,
        result: json!({ "permissions": {}, "scope": "turn" }),
    };
    // No turn at all.
    let mut idle = Translator::new(session());
    idle.set_thread(THREAD);
    assert_eq!(
        feed(&mut idle, &[permissions_request(json!(1), None, None)]),
        [decline(json!(1))]
    );
    // Another thread, another turn.
    let mut t = translator();
    let mut other_thread = permissions_request(json!(2), None, None);
    other_thread["params"]["threadId"] = json!("th-other");
    let mut other_turn = permissions_request(json!(3), None, None);
    other_turn["params"]["turnId"] = json!("app-other");
    assert_eq!(
        feed(&mut t, &[other_thread, other_turn]),
        [decline(json!(2)), decline(json!(3))]
    );
    // After the turn ended.
    feed(&mut t, &[turn_completed(APP_TURN, "completed", json!({}))]);
    assert_eq!(
        feed(&mut t, &[permissions_request(json!(4), None, None)]),
        [decline(json!(4))]
    );
}

#[test]
fn unknown_server_requests_are_unsupported() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[json!({ "method": "item/tool/call", "id": 5, "params": { "tool": "x" } })],
    );
    assert_eq!(
        out,
        [Output::UnsupportedRequest {
            request_id: json!(5),
            method: "item/tool/call".into()
        }]
    );
}

fn user_input(request_id: Value) -> Value {
    json!({ "method": "item/tool/requestUserInput", "id": request_id, "params": {
        "threadId": THREAD, "turnId": APP_TURN, "itemId": "call_ask",
        "questions": [
            { "id": "color", "header": "Color", "question": "Which color?", "isOther": true,
              "options": [{ "label": "Red", "description": "Warm" }, { "label": "Blue" }] },
            { "id": "name", "header": "", "question": "Your name?" },
        ] } })
}

fn elicitation(request_id: Value, extra: Value) -> Value {
    let mut params = json!({ "threadId": THREAD, "turnId": APP_TURN, "serverName": "tracker",
                             "mode": "form", "message": "Tell the tracker about it" });
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    json!({ "method": "mcpServer/elicitation/request", "id": request_id, "params": params })
}

#[test]
fn a_user_input_request_asks_its_questions_in_the_turn_and_is_parked() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            item(
                "item/started",
                json!({ "type": "agentMessage", "id": "m1", "text": "" }),
            ),
            delta("item/agentMessage/delta", "m1", "Let me ask."),
            user_input(json!(9)),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        rendered.last().unwrap(),
        &json!({ "type": "chat/inputRequested", "request": { "id": "input-9", "questions": [
            { "kind": "single-select", "id": "color", "title": "Color", "message": "Which color?",
              "options": [{ "id": "Red", "label": "Red", "description": "Warm" },
                          { "id": "Blue", "label": "Blue" }],
              "allowFreeformInput": true },
            { "kind": "text", "id": "name", "message": "Your name?" },
        ] } })
    );
    assert_eq!(
        out.last(),
        Some(&Output::InputRequest {
            request_id: json!(9),
            input_id: "input-9".into(),
            kind: InputKind::UserInput {
                questions: vec!["color".into(), "name".into()]
            },
        })
    );
    // The request closed the open message: text after it is a new part.
    let after = signals(&feed(
        &mut t,
        &[delta("item/agentMessage/delta", "m1", " More.")],
    ));
    assert_eq!(shape(&after), ["chat/responsePart"]);
}

#[test]
fn input_requests_nobody_can_answer_are_answered_at_once() {
    let empty = |id: Value| Output::Reply {
        request_id: id,
        result: json!({ "answers": { "color": { "answers": [] }, "name": { "answers": [] } } }),
    };
    let decline = |id: Value| Output::Reply {
        request_id: id,
        result: json!({ "action": "decline" }),
    };
    // No turn at all.
    let mut idle = Translator::new(session());
    idle.set_thread(THREAD);
    assert_eq!(feed(&mut idle, &[user_input(json!(1))]), [empty(json!(1))]);
    assert_eq!(
        feed(&mut idle, &[elicitation(json!(2), json!({}))]),
        [decline(json!(2))]
    );
    // Another thread, another turn.
    let mut t = translator();
    let mut other_thread = user_input(json!(3));
    other_thread["params"]["threadId"] = json!("th-other");
    let mut other_turn = elicitation(json!(4), json!({ "turnId": "app-other" }));
    other_turn["params"]["turnId"] = json!("app-other");
    assert_eq!(
        feed(&mut t, &[other_thread, other_turn]),
        [empty(json!(3)), decline(json!(4))]
    );
    // A request id seen before in this turn.
    let first = feed(&mut t, &[user_input(json!(5))]);
    assert!(matches!(first.last(), Some(Output::InputRequest { .. })));
    assert_eq!(feed(&mut t, &[user_input(json!(5))]), [empty(json!(5))]);
    // No questions at all.
    let mut none = user_input(json!(6));
    none["params"]["questions"] = json!([]);
    assert_eq!(
        feed(&mut t, &[none]),
        [Output::Reply {
            request_id: json!(6),
            result: json!({ "answers": {} })
        }]
    );
    // After the turn ended.
    feed(&mut t, &[turn_completed(APP_TURN, "completed", json!({}))]);
    assert_eq!(feed(&mut t, &[user_input(json!(7))]), [empty(json!(7))]);
}

#[test]
fn an_elicitation_form_asks_its_simple_fields() {
    let mut t = translator();
    let schema = json!({ "type": "object", "required": ["b_project", "c_count"], "properties": {
        "a_title": { "type": "string", "title": "Title", "description": "A short title",
                     "minLength": 3, "maxLength": 80, "format": "email", "default": "x" },
        "b_project": { "type": "string", "title": "Project", "enum": ["web", "api"],
                       "enumNames": ["Website", "API"] },
        "c_count": { "type": "integer", "minimum": 1, "maximum": 9, "default": 2 },
        "d_ratio": { "type": "number", "description": "How much" },
        "e_notify": { "type": "boolean", "title": "Notify", "default": false },
        "f_tags": { "type": "array", "items": { "anyOf": [{ "const": "bug", "title": "Bug" }] },
                    "maxItems": 1 },
        "g_nested": { "type": "object", "properties": {} },
        "h_level": { "type": "string", "oneOf": [{ "const": "hi", "title": "High" },
                                                   { "const": "lo", "title": "Low" }] },
    } });
    // No turn id: the elicitation belongs to the current turn.
    let out = feed(
        &mut t,
        &[elicitation(
            json!("e-1"),
            json!({ "turnId": null, "requestedSchema": schema }),
        )],
    );
    assert_eq!(
        signals(&out),
        [json!({ "type": "chat/inputRequested", "request": {
            "id": "input-e-1", "message": "Tell the tracker about it", "questions": [
            { "kind": "text", "id": "a_title", "title": "Title", "message": "A short title",
              "format": "email", "min": 3, "max": 80, "defaultValue": "x" },
            { "kind": "single-select", "id": "b_project", "title": "Project", "message": "Project",
              "required": true, "options": [{ "id": "web", "label": "Website" },
                                            { "id": "api", "label": "API" }] },
            { "kind": "integer", "id": "c_count", "message": "c_count", "required": true,
              "min": 1.0, "max": 9.0, "defaultValue": 2.0 },
            { "kind": "number", "id": "d_ratio", "message": "How much" },
            { "kind": "boolean", "id": "e_notify", "title": "Notify", "message": "Notify",
              "defaultValue": false },
            { "kind": "multi-select", "id": "f_tags", "message": "f_tags",
              "options": [{ "id": "bug", "label": "Bug" }], "max": 1 },
            { "kind": "single-select", "id": "h_level", "message": "h_level",
              "options": [{ "id": "hi", "label": "High" }, { "id": "lo", "label": "Low" }] },
        ] } })]
    );
    let field = |name: &str, kind: FieldKind| FormField {
        name: name.into(),
        kind,
    };
    assert_eq!(
        out.last(),
        Some(&Output::InputRequest {
            request_id: json!("e-1"),
            input_id: "input-e-1".into(),
            kind: InputKind::Elicitation {
                fields: Some(vec![
                    field("a_title", FieldKind::Text),
                    field("b_project", FieldKind::Text),
                    field("c_count", FieldKind::Integer),
                    field("d_ratio", FieldKind::Number),
                    field("e_notify", FieldKind::Boolean),
                    field("f_tags", FieldKind::Texts),
                    field("h_level", FieldKind::Text),
                ])
            },
        })
    );
}

#[test]
fn url_and_odd_elicitations_carry_just_the_message() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            elicitation(
                json!(1),
                json!({ "mode": "url", "message": "Sign in to the tracker",
                        "url": "https://tracker.example/login", "elicitationId": "e" }),
            ),
            elicitation(
                json!(2),
                json!({ "message": "", "requestedSchema": "nonsense" }),
            ),
            // A control character in a string request id never reaches the AHP id.
            elicitation(json!("a\nb"), json!({ "mode": "openai/somethingNew" })),
        ],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/inputRequested", "request": { "id": "input-1",
                "message": "Sign in to the tracker", "url": "https://tracker.example/login" } }),
            json!({ "type": "chat/inputRequested", "request": { "id": "input-2",
                "message": "The MCP server `tracker` asks for input." } }),
            json!({ "type": "chat/inputRequested", "request": { "id": "input-a_b",
                "message": "Tell the tracker about it" } }),
        ]
    );
    let kinds: Vec<&InputKind> = out
        .iter()
        .filter_map(|output| match output {
            Output::InputRequest { kind, .. } => Some(kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            &InputKind::Elicitation { fields: None },
            &InputKind::Elicitation {
                fields: Some(vec![])
            },
            &InputKind::Elicitation {
                fields: Some(vec![])
            },
        ]
    );
}

#[test]
fn a_retried_error_is_the_activity_until_the_next_item_or_the_end() {
    let mut t = translator();
    let retrying = |n: u32| {
        notification(
            "error",
            json!({ "threadId": THREAD, "turnId": APP_TURN, "willRetry": true,
                    "error": { "message": format!("Reconnecting… {n}/5") } }),
        )
    };
    let out = feed(
        &mut t,
        &[
            retrying(1),
            item("item/started", command("call_1", "inProgress", json!({}))),
            retrying(2),
            turn_completed(APP_TURN, "completed", json!({})),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        rendered[0],
        json!({ "type": "chat/activityChanged", "activity": "Reconnecting… 1/5 (retrying)" })
    );
    assert_eq!(rendered[1], json!({ "type": "chat/activityChanged" }));
    assert_eq!(
        shape(&rendered[2..]),
        [
            "chat/toolCallStart",
            "chat/toolCallDelta",
            "chat/toolCallReady",
            "chat/activityChanged",
            "chat/activityChanged",
            "chat/toolCallComplete",
            "chat/turnComplete",
        ]
    );
    assert_eq!(rendered[5]["activity"], "Reconnecting… 2/5 (retrying)");
    assert_eq!(rendered[6], json!({ "type": "chat/activityChanged" }));
    // Nothing to clear when nothing was shown; a cancelled turn clears what was.
    let mut t = translator();
    assert_eq!(t.abort_turn(), []);
    let mut t = translator();
    feed(&mut t, &[retrying(1)]);
    let cleared: Vec<Value> = t.abort_turn().iter().map(signal_json).collect();
    assert_eq!(cleared, [json!({ "type": "chat/activityChanged" })]);
}

#[test]
fn streamed_command_output_replaces_the_content_with_everything_so_far() {
    let mut t = translator();
    feed(
        &mut t,
        &[item(
            "item/started",
            command("call_1", "inProgress", json!({})),
        )],
    );
    let out = feed(
        &mut t,
        &[
            delta("item/commandExecution/outputDelta", "call_1", "one\n"),
            delta("item/commandExecution/outputDelta", "call_1", "two\n"),
            delta("item/commandExecution/outputDelta", "call_unknown", "x"),
            item(
                "item/completed",
                command("call_1", "completed", json!({ "exitCode": 0 })),
            ),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        rendered[1],
        json!({ "type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": "call_1",
                "content": [{ "type": "text", "text": "one\ntwo\n" }] })
    );
    // Without aggregated output, the completion keeps what streamed.
    assert_eq!(rendered[2]["result"]["content"][0]["text"], "one\ntwo\n");
}

#[test]
fn an_approved_command_shows_its_output_again() {
    let mut t = translator();
    feed(
        &mut t,
        &[
            item("item/started", command("call_1", "inProgress", json!({}))),
            approval(json!(0), "call_1"),
        ],
    );
    let while_asking = feed(
        &mut t,
        &[delta("item/commandExecution/outputDelta", "call_1", "a")],
    );
    assert!(signals(&while_asking).is_empty());
    t.record_decision("call_1", true);
    let out = feed(
        &mut t,
        &[delta("item/commandExecution/outputDelta", "call_1", "b")],
    );
    assert_eq!(signals(&out)[0]["content"][0]["text"], "ab");
}

#[test]
fn messages_stream_into_one_part_each_and_their_full_text_is_not_repeated() {
    let mut t = translator();
    let message = |method: &str, id: &str, text: &str| {
        item(
            method,
            json!({ "type": "agentMessage", "id": id, "text": text, "phase": "commentary" }),
        )
    };
    let out = feed(
        &mut t,
        &[
            delta("item/agentMessage/delta", "msg_0", "before start"),
            message("item/started", "msg_1", ""),
            delta("item/agentMessage/delta", "msg_1", "Hello"),
            delta("item/agentMessage/delta", "msg_1", " world"),
            message("item/completed", "msg_1", "Hello world"),
            message("item/started", "msg_2", ""),
            message("item/completed", "msg_2", "Unstreamed"),
        ],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/responsePart", "turnId": "t1",
                    "part": { "kind": "markdown", "id": "t1#msg_1", "content": "Hello" } }),
            json!({ "type": "chat/delta", "turnId": "t1", "partId": "t1#msg_1",
                    "content": " world" }),
            json!({ "type": "chat/responsePart", "turnId": "t1",
                    "part": { "kind": "markdown", "id": "t1#msg_2", "content": "Unstreamed" } }),
        ]
    );
}

#[test]
fn reasoning_summaries_and_raw_text_get_their_own_parts() {
    let mut t = translator();
    let reasoning_delta = |method: &str, index_key: &str, index: i64, text: &str| {
        notification(
            method,
            json!({ "threadId": THREAD, "turnId": APP_TURN, "itemId": "rs_1",
                    index_key: index, "delta": text }),
        )
    };
    let out = feed(
        &mut t,
        &[
            item("item/started", json!({ "type": "reasoning", "id": "rs_1" })),
            notification(
                "item/reasoning/summaryPartAdded",
                json!({ "threadId": THREAD, "turnId": APP_TURN, "itemId": "rs_1", "summaryIndex": 0 }),
            ),
            reasoning_delta("item/reasoning/summaryTextDelta", "summaryIndex", 0, "Plan"),
            reasoning_delta("item/reasoning/summaryTextDelta", "summaryIndex", 0, "ning"),
            reasoning_delta("item/reasoning/summaryTextDelta", "summaryIndex", 1, "Next"),
            reasoning_delta("item/reasoning/textDelta", "contentIndex", 0, "raw"),
            item(
                "item/completed",
                json!({ "type": "reasoning", "id": "rs_1", "summary": ["Planning", "Next"],
                        "content": ["raw"] }),
            ),
            item(
                "item/completed",
                json!({ "type": "reasoning", "id": "rs_2", "summary": [], "content": ["only raw"] }),
            ),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        shape(&rendered),
        [
            "chat/responsePart",
            "chat/reasoning",
            "chat/responsePart",
            "chat/responsePart",
            "chat/responsePart"
        ]
    );
    let parts: Vec<(&str, &str)> = rendered
        .iter()
        .filter_map(|s| Some((s["part"]["id"].as_str()?, s["part"]["content"].as_str()?)))
        .collect();
    assert_eq!(
        parts,
        [
            ("t1#rs_1:summary:0", "Plan"),
            ("t1#rs_1:summary:1", "Next"),
            ("t1#rs_1:text:0", "raw"),
            ("t1#rs_2:text:0", "only raw"),
        ]
    );
    assert!(rendered.iter().all(|s| s["part"]["kind"] != "markdown"));
}

#[test]
fn token_usage_reports_the_last_call_with_the_thread_s_model() {
    let mut t = translator();
    t.set_advertised_model("default");
    feed(
        &mut t,
        &[json!({ "id": 2, "result": { "thread": { "id": THREAD }, "model": "gpt-5.5" } })],
    );
    let out = feed(
        &mut t,
        &[
            turn_started(APP_TURN),
            notification(
                "thread/tokenUsage/updated",
                json!({ "threadId": THREAD, "turnId": APP_TURN, "tokenUsage": {
                "total": { "inputTokens": 900, "outputTokens": 90 },
                "last": { "inputTokens": 100, "cachedInputTokens": 40, "outputTokens": 20,
                          "reasoningOutputTokens": 5, "totalTokens": 120 },
                "modelContextWindow": 258400 } }),
            ),
        ],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "signal": "modelLimits", "model": "default", "maxPromptTokens": null,
                    "maxContextWindow": 258400, "maxOutputTokens": null }),
            json!({ "type": "chat/usage", "turnId": "t1", "usage": {
                "inputTokens": 100, "outputTokens": 20, "cacheReadTokens": 40, "model": "gpt-5.5",
                "_meta": { "reasoningOutputTokens": 5, "modelContextWindow": 258400,
                           "agenthost.contextTokens": 100, "agenthost.contextWindow": 258400 } } }),
            json!({ "signal": "modelCallCompleted", "turnId": "t1", "modelCallId": "app-1#1" }),
        ]
    );
}

#[test]
fn a_failed_turn_ends_in_a_codex_error() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            turn_started(APP_TURN),
            notification(
                "error",
                json!({ "threadId": THREAD, "turnId": APP_TURN, "willRetry": true,
                        "error": { "message": "Reconnecting… 1/5" } }),
            ),
            turn_completed(
                APP_TURN,
                "failed",
                json!({ "error": { "message": "unexpected status 400", "additionalDetails": "body",
                                    "codexErrorInfo": "badRequest" } }),
            ),
        ],
    );
    assert_eq!(
        signals(&out),
        [
            json!({ "type": "chat/activityChanged", "activity": "Reconnecting… 1/5 (retrying)" }),
            json!({ "type": "chat/activityChanged" }),
            json!({ "type": "chat/error", "turnId": "t1", "duration": 42, "part": {
            "kind": "error", "error": { "errorType": "CodexError",
            "message": "unexpected status 400", "stack": "body",
            "_meta": { "codexErrorInfo": "badRequest" } } } })
        ]
    );
    assert_eq!(out.last(), Some(&Output::TurnEnded));
}

#[test]
fn a_failed_turn_without_its_own_error_uses_the_last_error_notification() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            notification(
                "error",
                json!({ "threadId": THREAD, "turnId": APP_TURN, "willRetry": false,
                        "error": { "message": "stream disconnected" } }),
            ),
            turn_completed(APP_TURN, "failed", json!({ "error": null })),
        ],
    );
    assert_eq!(
        signals(&out)[0]["part"]["error"]["message"],
        "stream disconnected"
    );
}

#[test]
fn open_tools_are_recovered_from_the_turn_s_items() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            item("item/started", command("call_1", "inProgress", json!({}))),
            turn_completed(
                APP_TURN,
                "completed",
                json!({ "items": [
                    command("call_1", "completed", json!({ "exitCode": 0, "aggregatedOutput": "done" })),
                    { "type": "somethingNew", "id": "x" },
                    { "type": "commandExecution" },
                ] }),
            ),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        shape(&rendered)[3..],
        ["chat/toolCallComplete", "chat/turnComplete"]
    );
    assert_eq!(rendered[3]["result"]["success"], true);
    assert_eq!(rendered[3]["result"]["content"][0]["text"], "done");
}

#[test]
fn when_the_process_dies_open_tools_fail_then_the_turn_errors_once() {
    let mut t = translator();
    feed(
        &mut t,
        &[
            turn_started(APP_TURN),
            item("item/started", command("call_1", "inProgress", json!({}))),
        ],
    );
    let rendered: Vec<Value> = t
        .fail_turn(error_info("providerExited", "gone"))
        .iter()
        .map(signal_json)
        .collect();
    assert_eq!(shape(&rendered), ["chat/toolCallComplete", "chat/error"]);
    assert_eq!(rendered[1]["part"]["error"]["errorType"], "providerExited");
    assert_eq!(t.fail_turn(error_info("x", "y")), Vec::new());
    assert_eq!(
        feed(&mut t, &[turn_completed(APP_TURN, "failed", json!({}))]),
        Vec::new()
    );
}

#[test]
fn file_changes_show_their_patch_and_complete_with_the_diff() {
    let mut t = translator();
    let change = json!({ "path": "/w/a.txt", "kind": { "type": "add" }, "diff": "+hi\n" });
    let file_change = |status: &str| json!({ "type": "fileChange", "id": "fc_1", "changes": [change.clone()], "status": status });
    let out = feed(
        &mut t,
        &[
            item("item/started", file_change("inProgress")),
            notification(
                "item/fileChange/patchUpdated",
                json!({ "threadId": THREAD, "turnId": APP_TURN, "itemId": "fc_1",
                        "changes": [change.clone(), { "path": "/w/b.txt",
                                    "kind": { "type": "update", "move_path": "/w/c.txt" }, "diff": "" }] }),
            ),
            json!({ "method": "item/fileChange/requestApproval", "id": 9,
                    "params": { "threadId": THREAD, "turnId": APP_TURN, "itemId": "fc_1" } }),
            item("item/completed", file_change("completed")),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(
        rendered[..3],
        [
            json!({ "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "fc_1",
                    "toolName": "file_edit", "displayName": "Apply file changes" }),
            json!({ "type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "fc_1",
                    "content": "add /w/a.txt" }),
            json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "fc_1",
                    "invocationMessage": "Create `/w/a.txt`", "toolInput": "add /w/a.txt",
                    "confirmed": "not-needed" }),
        ]
    );
    assert_eq!(
        rendered[3]["content"][0]["text"],
        "add /w/a.txt\n+hi\n\nupdate /w/b.txt → /w/c.txt"
    );
    assert_eq!(rendered[4]["permissionKind"], "write");
    assert_eq!(rendered[4]["permissionPath"], "/w/a.txt");
    assert_eq!(rendered[4]["confirmationTitle"], "Apply file changes");
    assert!(out.contains(&Output::ApprovalRequest {
        request_id: json!(9),
        tool_call_id: "fc_1".into(),
        kind: ApprovalKind::FileChange
    }));
    assert_eq!(
        rendered[5]["result"],
        json!({ "success": true, "pastTenseMessage": "Created `/w/a.txt`",
                "content": [{ "type": "text", "text": "add /w/a.txt\n+hi" }] })
    );
}

#[test]
fn mcp_progress_carries_the_message_in_meta_and_the_result_is_kept() {
    let mut t = translator();
    let mcp = |status: &str, extra: Value| {
        let mut item = json!({ "type": "mcpToolCall", "id": "mcp_1", "server": "docs",
                               "tool": "search", "arguments": { "q": "x" }, "status": status });
        if let (Value::Object(item), Value::Object(extra)) = (&mut item, extra) {
            item.extend(extra);
        }
        item
    };
    let out = feed(
        &mut t,
        &[
            item("item/started", mcp("inProgress", json!({}))),
            notification(
                "item/mcpToolCall/progress",
                json!({ "threadId": THREAD, "turnId": APP_TURN, "itemId": "mcp_1",
                        "message": "50%" }),
            ),
            item(
                "item/completed",
                mcp(
                    "completed",
                    json!({ "result": { "content": [{ "type": "text", "text": "found" }],
                                        "structuredContent": { "hits": 1 } } }),
                ),
            ),
        ],
    );
    let rendered = signals(&out);
    assert_eq!(rendered[0]["toolName"], "docs.search");
    assert_eq!(rendered[1]["content"], r#"{"q":"x"}"#);
    assert_eq!(
        rendered[3],
        json!({ "type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": "mcp_1",
                "content": [{ "type": "text", "text": "50%" }],
                "_meta": { "progressMessage": "50%" } })
    );
    assert_eq!(
        rendered[4]["result"],
        json!({ "success": true, "pastTenseMessage": "Called `docs.search`",
                "content": [{ "type": "text", "text": "found" }],
                "structuredContent": { "hits": 1 } })
    );
}

#[test]
fn a_legacy_approval_starts_its_call_and_the_turn_end_closes_it() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            json!({ "method": "execCommandApproval", "id": 3, "params": {
                "conversationId": THREAD, "callId": "call_9",
                "command": ["/bin/bash", "-lc", "rm -rf build"], "cwd": "/w", "reason": null } }),
            turn_completed(APP_TURN, "completed", json!({})),
        ],
    );
    assert_eq!(
        shape(&signals(&out)),
        [
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallComplete",
            "chat/turnComplete"
        ]
    );
    assert_eq!(signals(&out)[1]["invocationMessage"], "Run `rm -rf build`");
    assert!(out.contains(&Output::ApprovalRequest {
        request_id: json!(3),
        tool_call_id: "call_9".into(),
        kind: ApprovalKind::ExecCommand
    }));
}

#[test]
fn other_tool_items_start_ready_and_complete() {
    let mut t = translator();
    let out = feed(
        &mut t,
        &[
            item(
                "item/started",
                json!({ "type": "webSearch", "id": "ws_1", "query": "" }),
            ),
            item(
                "item/completed",
                json!({ "type": "webSearch", "id": "ws_1", "query": "rust" }),
            ),
            item(
                "item/completed",
                json!({ "type": "contextCompaction", "id": "cc_1" }),
            ),
            item(
                "item/completed",
                json!({ "type": "imageGeneration", "id": "ig_1",
                                           "status": "completed", "result": "aGk=" }),
            ),
            item(
                "item/started",
                json!({ "type": "plan", "id": "p_1", "text": "later" }),
            ),
            item(
                "item/started",
                json!({ "type": "userMessage", "id": "u_1", "content": [] }),
            ),
        ],
    );
    let rendered = signals(&out);
    let completions: Vec<&Value> = rendered
        .iter()
        .filter(|s| s["type"] == "chat/toolCallComplete")
        .map(|s| &s["result"])
        .collect();
    assert_eq!(
        completions,
        [
            &json!({ "success": true, "pastTenseMessage": "Searched the web for `rust`" }),
            &json!({ "success": true, "pastTenseMessage": "Compacted the conversation" }),
            &json!({ "success": true, "pastTenseMessage": "Generated an image",
                     "content": [{ "type": "embeddedResource", "data": "aGk=",
                                   "contentType": "image/png" }] }),
        ]
    );
}

#[test]
fn garbage_lines_are_line_errors_and_unknown_messages_are_not() {
    let mut t = translator();
    for line in ["", "not json", "[1,2]", "42", "\"text\""] {
        assert_eq!(
            t.on_line(line).unwrap_err().kind(),
            &LineErrorKind::NotAnObject,
            "{line:?}"
        );
    }
    for line in [
        json!({}),
        json!({ "method": 7 }),
        json!({ "method": "item/started", "params": { "item": { "id": "x" } } }),
        json!({ "method": "item/started", "params": { "item": { "type": "agentMessage" } } }),
        json!({ "method": "turn/completed", "params": { "turn": "no" } }),
        json!({ "id": 1, "error": "text" }),
    ] {
        let error = t.on_line(&line.to_string()).unwrap_err();
        assert!(
            matches!(error.kind(), LineErrorKind::Malformed { .. }),
            "{line}: {error}"
        );
    }
    for line in [
        json!({ "method": "some/new/notification", "params": { "x": 1 } }),
        json!({ "method": "item/started", "params": { "item": { "type": "brandNew", "id": "y" } } }),
        json!({ "method": "thread/status/changed", "params": null }),
    ] {
        assert_eq!(t.on_line(&line.to_string()).unwrap(), Vec::new(), "{line}");
    }
}

#[test]
fn a_long_bad_line_is_quoted_in_part() {
    let line = "x".repeat(500);
    let error = parse_line(&line).unwrap_err();
    assert_eq!(error.snippet().chars().count(), SNIPPET_CHARS + 1);
    assert!(error.to_string().starts_with("not a JSON object: xxx"));
}

#[test]
fn map_transcript_names_the_bad_line() {
    let text = format!(
        "{}\n\n{}\nnot json\n",
        json!({ "id": 1, "result": {} }),
        turn_started(APP_TURN)
    );
    let error = map_transcript(session(), "t1", &text).unwrap_err();
    assert_eq!(error.line, 4);
    assert!(error.to_string().starts_with("line 4: not a JSON object"));
}

fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("id".to_owned()),
        Just("method".to_owned()),
        Just("params".to_owned()),
        Just("result".to_owned()),
        Just("error".to_owned()),
        Just("type".to_owned()),
        Just("item".to_owned()),
        Just("itemId".to_owned()),
        Just("turnId".to_owned()),
        Just("threadId".to_owned()),
        Just("turn".to_owned()),
        Just("thread".to_owned()),
        Just("status".to_owned()),
        Just("delta".to_owned()),
        Just("command".to_owned()),
        Just("changes".to_owned()),
        Just("items".to_owned()),
        "[a-z]{1,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just("turn/started"),
            Just("turn/completed"),
            Just("item/started"),
            Just("item/completed"),
            Just("item/agentMessage/delta"),
            Just("item/commandExecution/outputDelta"),
            Just("item/commandExecution/requestApproval"),
            Just("item/fileChange/requestApproval"),
            Just("execCommandApproval"),
            Just("thread/tokenUsage/updated"),
            Just("error"),
            Just("commandExecution"),
            Just("agentMessage"),
            Just("fileChange"),
            Just("reasoning"),
            Just("completed"),
            Just("interrupted"),
            Just("failed"),
            Just("declined"),
            Just(APP_TURN),
            Just(THREAD),
            Just("call_1"),
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
        let mut ends = 0;
        for line in &lines {
            if let Ok(outputs) = t.on_line(&line.to_string()) {
                for output in outputs {
                    match output {
                        Output::Signal(signal) => {
                            // Every signal renders, and part ids stay unique.
                            let value = signal_json(&signal);
                            if value["type"] == "chat/responsePart" {
                                prop_assert!(seen_ids.insert(value["part"]["id"].to_string()));
                            }
                        }
                        Output::TurnEnded => ends += 1,
                        _ => {}
                    }
                }
            }
        }
        prop_assert!(ends <= 1, "a turn ends once");
    }
}

#[test]
fn a_late_notification_of_an_earlier_turn_does_not_become_the_current_turn() {
    // A resumed thread reports the last usage of its previous turn after the new protocol turn
    // began; the new turn's own output must still be mapped.
    let mut translator = Translator::new(session());
    translator.set_thread(THREAD);
    translator.begin_turn("t2");
    let stale = notification(
        "thread/tokenUsage/updated",
        json!({ "threadId": THREAD, "turnId": "old-turn", "tokenUsage": {
            "total": { "totalTokens": 1, "inputTokens": 1, "cachedInputTokens": 0,
                       "outputTokens": 0, "reasoningOutputTokens": 0 },
            "last": { "totalTokens": 1, "inputTokens": 1, "cachedInputTokens": 0,
                      "outputTokens": 0, "reasoningOutputTokens": 0 } } }),
    );
    assert!(signals(&feed(&mut translator, &[stale])).is_empty());
    let outputs = feed(
        &mut translator,
        &[
            turn_started(APP_TURN),
            turn_completed(APP_TURN, "completed", json!({})),
        ],
    );
    let types: Vec<String> = signals(&outputs)
        .iter()
        .map(|s| s["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(types, ["chat/turnComplete"], "{outputs:?}");
}

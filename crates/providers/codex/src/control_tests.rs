use serde_json::{Value, json};

use super::*;

fn stdin_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn parsed(line: &str) -> Value {
    assert!(!line.contains('\n'), "one line: {line}");
    serde_json::from_str(line).unwrap()
}

/// Rebuilds every line a captured host wrote with the builders and compares the JSON.
#[test]
fn the_builders_reproduce_the_captured_stdin_lines() {
    for text in [
        include_str!("../tests/fixtures/appserver-escalate-accept.stdin.jsonl"),
        include_str!("../tests/fixtures/appserver-escalate-decline.stdin.jsonl"),
        include_str!("../tests/fixtures/appserver-readonly-noescalate.stdin.jsonl"),
        include_str!("../tests/fixtures/appserver-workspace-write.stdin.jsonl"),
    ] {
        for captured in stdin_lines(text) {
            let text = |pointer: &str| captured.pointer(pointer).and_then(Value::as_str).unwrap();
            let id = captured["id"].as_u64();
            let rebuilt = match captured["method"].as_str() {
                Some("initialize") => {
                    let mut params = initialize_params(
                        text("/params/clientInfo/name"),
                        text("/params/clientInfo/version"),
                    );
                    // The capture's driver also sent a display title; the host sends none.
                    params["clientInfo"]["title"] =
                        captured["params"]["clientInfo"]["title"].clone();
                    request(id.unwrap(), "initialize", &params)
                }
                Some("initialized") => notification("initialized", &Value::Null),
                Some("thread/start") => request(
                    id.unwrap(),
                    "thread/start",
                    &thread_start_params(
                        text("/params/cwd"),
                        Some(text("/params/model")),
                        text("/params/approvalPolicy"),
                        text("/params/sandbox"),
                    ),
                ),
                Some("turn/start") => request(
                    id.unwrap(),
                    "turn/start",
                    &turn_start_params(
                        text("/params/threadId"),
                        captured["params"]["input"].as_array().unwrap().clone(),
                    ),
                ),
                None => {
                    let approved = match text("/result/decision") {
                        "accept" => true,
                        "decline" => false,
                        other => panic!("{other}"),
                    };
                    reply(
                        &captured["id"],
                        &approval_answer(ApprovalKind::CommandExecution, approved),
                    )
                }
                Some(other) => panic!("{other}"),
            };
            assert_eq!(parsed(&rebuilt), captured);
        }
    }
}

#[test]
fn approval_answers_use_each_generation_s_words() {
    let answers: Vec<Value> = [
        (ApprovalKind::CommandExecution, true),
        (ApprovalKind::FileChange, false),
        (ApprovalKind::ExecCommand, true),
        (ApprovalKind::ApplyPatch, false),
    ]
    .into_iter()
    .map(|(kind, approved)| approval_answer(kind, approved)["decision"].clone())
    .collect();
    assert_eq!(answers, ["accept", "decline", "approved", "denied"]);
}

#[test]
fn a_permissions_answer_grants_the_requested_permissions_or_none_for_the_turn() {
    let requested = json!({ "network": { "enabled": true },
                            "fileSystem": { "write": ["/tmp/cache"] } });
    let kind = ApprovalKind::Permissions {
        requested: requested.clone(),
    };
    assert_eq!(
        approval_answer(kind.clone(), true),
        json!({ "permissions": requested, "scope": "turn" })
    );
    assert_eq!(
        approval_answer(kind, false),
        json!({ "permissions": {}, "scope": "turn" })
    );
    assert_eq!(
        parsed(&reply(
            &json!(7),
            &approval_answer(
                ApprovalKind::Permissions {
                    requested: json!({ "network": { "enabled": true } })
                },
                true
            )
        )),
        json!({ "id": 7, "result": { "permissions": { "network": { "enabled": true } },
                                      "scope": "turn" } })
    );
}

#[test]
fn other_lines_and_params_have_the_app_server_shapes() {
    assert_eq!(
        parsed(&error_reply(&json!("r-1"), METHOD_NOT_FOUND, "unsupported")),
        json!({ "id": "r-1", "error": { "code": -32601, "message": "unsupported" } })
    );
    assert_eq!(
        parsed(&notification("initialized", &json!({}))),
        json!({ "method": "initialized", "params": {} })
    );
    assert_eq!(thread_resume_params("th"), json!({ "threadId": "th" }));
    assert_eq!(
        turn_interrupt_params("th", "app-1"),
        json!({ "threadId": "th", "turnId": "app-1" })
    );
    assert_eq!(
        turn_steer_params(
            "th",
            vec![json!({ "type": "text", "text": "more" })],
            "app-1"
        ),
        json!({ "threadId": "th", "input": [{ "type": "text", "text": "more" }],
                "expectedTurnId": "app-1" })
    );
    assert_eq!(
        thread_start_params("/w", None, "never", "danger-full-access"),
        json!({ "cwd": "/w", "approvalPolicy": "never", "sandbox": "danger-full-access" })
    );
    assert!(!request(1, "x", &json!({})).contains("jsonrpc"));
}

/// The host's `response` with `answers` given as their AHP JSON.
fn input_response(response: ChatInputResponseKind, answers: Value) -> InputResponse {
    InputResponse {
        response,
        answers: serde_json::from_value(answers).unwrap(),
    }
}

fn submitted(value: Value) -> Value {
    json!({ "state": "submitted", "value": value })
}

#[test]
fn user_input_answers_carry_the_submitted_texts_or_nothing() {
    let kind = InputKind::UserInput {
        questions: vec!["color".into(), "name".into(), "size".into(), "mood".into()],
    };
    let answers = json!({
        "color": submitted(json!({ "kind": "selected", "value": "Red",
                                   "freeformValues": ["crimson"] })),
        "name": submitted(json!({ "kind": "text", "value": "Ada" })),
        "mood": { "state": "draft", "value": { "kind": "text", "value": "not sent" } },
    });
    assert_eq!(
        input_answer(
            &kind,
            &input_response(ChatInputResponseKind::Accept, answers.clone())
        ),
        json!({ "answers": {
            "color": { "answers": ["Red", "crimson"] },
            "name": { "answers": ["Ada"] },
            "size": { "answers": [] },
            "mood": { "answers": [] },
        } })
    );
    let empty = json!({ "answers": {
        "color": { "answers": [] }, "name": { "answers": [] },
        "size": { "answers": [] }, "mood": { "answers": [] },
    } });
    for response in [
        ChatInputResponseKind::Decline,
        ChatInputResponseKind::Cancel,
    ] {
        assert_eq!(
            input_answer(&kind, &input_response(response, answers.clone())),
            empty
        );
        assert_eq!(input_unanswered(&kind, response), empty);
    }
}

#[test]
fn elicitation_answers_are_typed_per_field() {
    let field = |name: &str, kind: FieldKind| FormField {
        name: name.into(),
        kind,
    };
    let kind = InputKind::Elicitation {
        fields: Some(vec![
            field("name", FieldKind::Text),
            field("project", FieldKind::Text),
            field("count", FieldKind::Integer),
            field("ratio", FieldKind::Number),
            field("typed", FieldKind::Number),
            field("notify", FieldKind::Boolean),
            field("typedFlag", FieldKind::Boolean),
            field("tags", FieldKind::Texts),
            field("skipped", FieldKind::Text),
            field("missing", FieldKind::Integer),
            field("fraction", FieldKind::Integer),
        ]),
    };
    let answers = json!({
        "name": submitted(json!({ "kind": "text", "value": "Ada" })),
        "project": submitted(json!({ "kind": "selected", "value": "web" })),
        "count": submitted(json!({ "kind": "number", "value": 3.0 })),
        "ratio": submitted(json!({ "kind": "number", "value": 0.5 })),
        "typed": submitted(json!({ "kind": "text", "value": " 12 " })),
        "notify": submitted(json!({ "kind": "boolean", "value": true })),
        "typedFlag": submitted(json!({ "kind": "text", "value": "false" })),
        "tags": submitted(json!({ "kind": "selected-many", "value": ["a", "b"] })),
        "skipped": { "state": "skipped" },
        "fraction": submitted(json!({ "kind": "number", "value": 2.5 })),
    });
    assert_eq!(
        input_answer(
            &kind,
            &input_response(ChatInputResponseKind::Accept, answers.clone())
        ),
        json!({ "action": "accept", "content": {
            "name": "Ada", "project": "web", "count": 3, "ratio": 0.5, "typed": 12,
            "notify": true, "typedFlag": false, "tags": ["a", "b"],
        } })
    );
    assert_eq!(
        input_answer(
            &kind,
            &input_response(ChatInputResponseKind::Decline, answers.clone())
        ),
        json!({ "action": "decline" })
    );
    assert_eq!(
        input_answer(
            &kind,
            &input_response(ChatInputResponseKind::Cancel, answers)
        ),
        json!({ "action": "cancel" })
    );
    assert_eq!(
        input_unanswered(&kind, ChatInputResponseKind::Decline),
        json!({ "action": "decline" })
    );
    // A URL elicitation is accepted without content.
    let url = InputKind::Elicitation { fields: None };
    assert_eq!(
        input_answer(
            &url,
            &input_response(ChatInputResponseKind::Accept, json!({}))
        ),
        json!({ "action": "accept" })
    );
}

use serde_json::{Value, json};

use super::*;

fn message(value: Value) -> Message {
    Message::from_value(value).unwrap()
}

#[test]
fn every_captured_line_decodes() {
    for text in [
        include_str!("../tests/fixtures/appserver-escalate-accept.stdout.jsonl"),
        include_str!("../tests/fixtures/appserver-escalate-decline.stdout.jsonl"),
        include_str!("../tests/fixtures/appserver-readonly-noescalate.stdout.jsonl"),
        include_str!("../tests/fixtures/appserver-workspace-write.stdout.jsonl"),
    ] {
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let value: Value = serde_json::from_str(line).unwrap();
            if let Err(error) = Message::from_value(value) {
                panic!("{error}: {line}");
            }
        }
    }
}

#[test]
fn lines_are_told_apart_by_id_and_method() {
    assert_eq!(
        message(json!({ "id": 3, "result": { "turn": { "id": "t" } } })),
        Message::Response(Response {
            id: json!(3),
            result: Ok(json!({ "turn": { "id": "t" } }))
        })
    );
    assert_eq!(
        message(json!({ "id": "a", "error": { "code": -32600, "message": "no", "data": [1] } })),
        Message::Response(Response {
            id: json!("a"),
            result: Err(RpcError {
                code: -32600,
                message: "no".into(),
                data: Some(json!([1]))
            })
        })
    );
    assert_eq!(
        message(json!({ "id": 4 })),
        Message::Response(Response {
            id: json!(4),
            result: Ok(Value::Null)
        })
    );
    assert_eq!(
        message(json!({ "method": "item/tool/call", "id": 0, "params": {} })),
        Message::Request(ServerRequest {
            id: json!(0),
            request: Request::Other {
                method: "item/tool/call".into()
            }
        })
    );
    assert_eq!(
        message(
            json!({ "method": "configWarning", "params": { "summary": "x" }, "emittedAtMs": 1 })
        ),
        Message::Notification(Notification::Other {
            method: "configWarning".into(),
            thread_id: None
        })
    );
    // A `null` id is a notification's.
    assert!(matches!(
        message(
            json!({ "method": "serverRequest/resolved", "id": null, "params": { "threadId": "t" } })
        ),
        Message::Notification(Notification::Other {
            thread_id: Some(_),
            ..
        })
    ));
}

#[test]
fn an_approval_request_decodes_with_the_fields_the_host_uses() {
    let Message::Request(request) = message(json!({
        "method": "item/commandExecution/requestApproval", "id": 0,
        "params": { "kind": "command", "threadId": "th", "turnId": "tu", "itemId": "call_1",
                    "reason": "why", "command": "/bin/bash -lc 'ls'", "cwd": "/w",
                    "availableDecisions": ["accept", { "acceptWithExecpolicyAmendment": {} }] }
    })) else {
        panic!("a request");
    };
    assert_eq!(request.request.method(), COMMAND_APPROVAL);
    assert_eq!(
        request.request,
        Request::CommandApproval(CommandApprovalParams {
            thread_id: Some("th".into()),
            turn_id: Some("tu".into()),
            item_id: "call_1".into(),
            reason: Some("why".into()),
            command: Some("/bin/bash -lc 'ls'".into()),
            cwd: Some("/w".into()),
        })
    );
}

#[test]
fn items_tolerate_nulls_and_unknown_types() {
    let item = ThreadItem::from_value(json!({
        "type": "reasoning", "id": "r", "summary": null, "content": null, "extra": 1
    }))
    .unwrap();
    assert_eq!(
        item,
        ThreadItem::Reasoning(ReasoningItem {
            id: "r".into(),
            summary: Vec::new(),
            content: Vec::new()
        })
    );
    assert_eq!(
        ThreadItem::from_value(json!({ "type": "hookPrompt", "id": "h", "fragments": [] }))
            .unwrap(),
        ThreadItem::Other {
            kind: "hookPrompt".into(),
            id: Some("h".into())
        }
    );
    let command = ThreadItem::from_value(json!({
        "type": "commandExecution", "id": "c", "command": "ls", "status": "somethingElse",
        "exitCode": null
    }))
    .unwrap();
    let ThreadItem::CommandExecution(command) = command else {
        panic!("a command");
    };
    assert_eq!(command.status, ItemStatus::Other("somethingElse".into()));
    assert!(ThreadItem::from_value(json!({ "type": 1, "id": "c" })).is_err());
    assert!(ThreadItem::from_value(json!({ "type": "commandExecution" })).is_err());
}

#[test]
fn turn_statuses_and_thread_ids_are_read() {
    let Message::Notification(notification) = message(json!({
        "method": "turn/completed",
        "params": { "threadId": "th", "turn": { "id": "tu", "status": "paused", "items": null } }
    })) else {
        panic!("a notification");
    };
    assert_eq!(notification.thread_id(), Some("th"));
    let Notification::TurnCompleted(params) = notification else {
        panic!("turn/completed");
    };
    assert_eq!(params.turn.status, TurnStatus::Other("paused".into()));
    assert!(params.turn.items.is_empty());
}

#[test]
fn known_messages_with_the_wrong_shape_are_errors() {
    for value in [
        json!({ "result": {} }),
        json!({ "method": ["x"] }),
        json!({ "method": "item/agentMessage/delta", "params": { "delta": "x" } }),
        json!({ "method": "item/commandExecution/requestApproval", "id": 1, "params": 5 }),
        json!({ "id": 1, "error": { "message": "no code" } }),
        json!([1]),
    ] {
        assert!(Message::from_value(value.clone()).is_err(), "{value}");
    }
}

#[test]
fn rpc_errors_read_for_people() {
    let error = RpcError {
        code: -32600,
        message: "Invalid request".into(),
        data: None,
    };
    assert_eq!(error.to_string(), "Invalid request (code -32600)");
}

#[test]
fn a_permissions_request_decodes_tolerantly() {
    let request = |params: Value| match message(json!({
        "method": "item/permissions/requestApproval", "id": 5, "params": params
    })) {
        Message::Request(ServerRequest {
            request: Request::PermissionsApproval(params),
            ..
        }) => params,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        request(
            json!({ "threadId": "th", "turnId": "tu", "itemId": "call_1",
                        "reason": "Need the network", "permissions": { "network": { "enabled": true } },
                        "somethingNew": 1 })
        ),
        PermissionsApprovalParams {
            thread_id: Some("th".into()),
            turn_id: Some("tu".into()),
            item_id: Some("call_1".into()),
            reason: Some("Need the network".into()),
            permissions: json!({ "network": { "enabled": true } }),
        }
    );
    // Missing, `null` or oddly typed fields are absent; absent permissions are none.
    let empty = PermissionsApprovalParams {
        thread_id: None,
        turn_id: None,
        item_id: None,
        reason: None,
        permissions: json!({}),
    };
    assert_eq!(request(Value::Null), empty);
    assert_eq!(
        request(json!({ "threadId": 3, "itemId": null, "reason": ["x"], "permissions": null })),
        empty
    );
    assert_eq!(request(json!("not an object")), empty);
    assert_eq!(
        Request::PermissionsApproval(empty).method(),
        "item/permissions/requestApproval"
    );
}

#[test]
fn user_input_questions_decode_with_their_options() {
    let Message::Request(ServerRequest {
        request: Request::RequestUserInput(params),
        ..
    }) = message(
        json!({ "method": "item/tool/requestUserInput", "id": 3, "params": {
        "threadId": "th", "turnId": "tu", "itemId": "call_1", "autoResolutionMs": null,
        "questions": [
            { "id": "color", "header": "Color", "question": "Which color?", "isOther": true,
              "isSecret": false,
              "options": [{ "label": "Red", "description": "Warm" }, { "label": "Blue" }] },
            { "id": "name", "header": null, "question": "Your name?", "options": null },
        ] } }),
    )
    else {
        panic!("not a requestUserInput")
    };
    assert_eq!(params.turn_id.as_deref(), Some("tu"));
    assert_eq!(params.item_id.as_deref(), Some("call_1"));
    let [color, name] = &params.questions[..] else {
        panic!("{params:?}")
    };
    assert_eq!(color.header.as_deref(), Some("Color"));
    assert!(color.is_other);
    assert_eq!(color.options.len(), 2);
    assert_eq!(color.options[0].description.as_deref(), Some("Warm"));
    assert_eq!(name.header, None);
    assert!(name.options.is_empty() && !name.is_other);
}

#[test]
fn an_elicitation_request_decodes_tolerantly() {
    let decode = |params: Value| match message(
        json!({ "method": "mcpServer/elicitation/request", "id": 1, "params": params }),
    ) {
        Message::Request(ServerRequest {
            request: Request::McpElicitation(params),
            ..
        }) => params,
        other => panic!("{other:?}"),
    };
    let form = decode(json!({
        "threadId": "th", "turnId": null, "serverName": "tracker", "mode": "form",
        "message": "Pick a project", "_meta": null,
        "requestedSchema": { "type": "object", "properties": { "p": { "type": "string" } } },
    }));
    assert_eq!(form.thread_id.as_deref(), Some("th"));
    assert_eq!(form.turn_id, None);
    assert_eq!(form.server_name.as_deref(), Some("tracker"));
    assert_eq!(form.mode.as_deref(), Some("form"));
    assert_eq!(form.message, "Pick a project");
    assert_eq!(
        form.requested_schema.unwrap()["properties"]["p"]["type"],
        "string"
    );
    let url = decode(
        json!({ "threadId": "th", "serverName": "auth", "mode": "url",
                             "message": "Sign in", "url": "https://example.com/login",
                             "elicitationId": "e1" }),
    );
    assert_eq!(url.url.as_deref(), Some("https://example.com/login"));
    assert_eq!(url.requested_schema, None);
    // Odd shapes are kept as absent, never an error.
    let odd = decode(json!({ "threadId": 7, "message": ["x"], "requestedSchema": "no" }));
    assert_eq!(odd.thread_id, None);
    assert_eq!(odd.message, "");
    assert_eq!(odd.requested_schema, None);
    assert_eq!(decode(Value::Null).mode, None);
}

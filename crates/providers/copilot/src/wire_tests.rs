use serde_json::json;

use super::*;

fn message(value: Value) -> Message {
    Message::from_value(value).unwrap()
}

fn fixture_messages(text: &str) -> Vec<Message> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| message(serde_json::from_str(line).unwrap()))
        .collect()
}

/// Every captured message decodes; the events the translator needs are typed.
#[test]
fn every_captured_message_decodes() {
    for text in [
        include_str!("../tests/fixtures/sdk-approve.stdout.jsonl"),
        include_str!("../tests/fixtures/sdk-reject.stdout.jsonl"),
        include_str!("../tests/fixtures/prompt-allowall.stdout.jsonl"),
        include_str!("../tests/fixtures/prompt-noallow.stdout.jsonl"),
        include_str!("../tests/fixtures/prompt-responses.stdout.jsonl"),
        include_str!("../tests/fixtures/prompt-anthropic.stdout.jsonl"),
        include_str!("../tests/fixtures/prompt-api-error.stdout.jsonl"),
    ] {
        let messages = fixture_messages(text);
        let typed = messages
            .iter()
            .filter(|message| {
                let event = match message {
                    Message::Notification(Notification::SessionEvent { event, .. }) => event,
                    Message::Event(event) => event,
                    _ => return false,
                };
                !matches!(event.data, EventData::Other { .. })
            })
            .count();
        assert!(typed >= 3, "{typed}");
    }
    let sdk = fixture_messages(include_str!("../tests/fixtures/sdk-approve.stdout.jsonl"));
    let permission = sdk
        .iter()
        .find_map(|message| match message {
            Message::Notification(Notification::SessionEvent { event, .. }) => match &event.data {
                EventData::PermissionRequested(data) => Some(data.clone()),
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    assert_eq!(permission.permission_request.kind, "shell");
    assert_eq!(
        permission.permission_request.full_command_text.as_deref(),
        Some("echo hi > out.txt")
    );
    let prompt = fixture_messages(include_str!(
        "../tests/fixtures/prompt-api-error.stdout.jsonl"
    ));
    assert!(matches!(
        prompt.last(),
        Some(Message::PromptResult(PromptResult {
            exit_code: Some(1),
            ..
        }))
    ));
}

#[test]
fn the_envelope_is_read_and_unknown_types_are_kept_by_name() {
    let decoded = message(json!({
        "jsonrpc": "2.0", "method": "session.event",
        "params": { "sessionId": "s", "event": {
            "type": "assistant.intent", "data": { "intent": "x" }, "id": "e1",
            "timestamp": "2026-01-01T00:00:00Z", "parentId": "e0", "ephemeral": true,
            "agentId": "a1" } }
    }));
    let Message::Notification(Notification::SessionEvent { session_id, event }) = decoded else {
        panic!("{decoded:?}");
    };
    assert_eq!(session_id, "s");
    assert_eq!(
        event,
        Event {
            id: Some("e1".into()),
            timestamp: Some("2026-01-01T00:00:00Z".into()),
            parent_id: Some("e0".into()),
            ephemeral: true,
            agent_id: Some("a1".into()),
            data: EventData::Other {
                kind: "assistant.intent".into()
            },
        }
    );
    assert_eq!(event.kind(), "assistant.intent");
}

#[test]
fn nulls_and_missing_optional_fields_default() {
    let decoded = message(json!({
        "type": "tool.execution_complete",
        "data": { "toolCallId": "c", "success": null, "result": null, "error": null,
                  "shellExecution": { "exitCode": 1.0 } }
    }));
    let Message::Event(Event {
        data: EventData::ToolExecutionComplete(data),
        ..
    }) = decoded
    else {
        panic!("{decoded:?}");
    };
    assert!(!data.success);
    assert_eq!(data.result, None);
    assert_eq!(data.shell_execution.unwrap().exit_code, Some(1));
    let usage = message(json!({ "type": "assistant.usage",
                                "data": { "inputTokens": 1.9, "outputTokens": -3,
                                          "cacheReadTokens": "many" } }));
    let Message::Event(Event {
        data: EventData::Usage(usage),
        ..
    }) = usage
    else {
        panic!("{usage:?}");
    };
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens
        ),
        (1, 0, None)
    );
    let idle = message(json!({ "type": "session.idle" }));
    assert!(matches!(
        idle,
        Message::Event(Event {
            data: EventData::SessionIdle(SessionIdleData { aborted: false, .. }),
            ..
        })
    ));
}

#[test]
fn requests_responses_and_other_notifications_are_told_apart() {
    assert_eq!(
        message(json!({ "jsonrpc": "2.0", "id": "r", "method": "x.y", "params": [1] })),
        Message::Request(ServerRequest {
            id: json!("r"),
            method: "x.y".into(),
            params: json!([1]),
        })
    );
    assert_eq!(
        message(json!({ "jsonrpc": "2.0", "id": 1 })),
        Message::Response(Response {
            id: json!(1),
            result: Ok(Value::Null),
        })
    );
    assert_eq!(
        message(json!({ "jsonrpc": "2.0", "id": 1, "result": null,
                        "error": { "code": -1, "message": null, "data": { "a": 1 } } })),
        Message::Response(Response {
            id: json!(1),
            result: Err(RpcError {
                code: -1,
                message: String::new(),
                data: Some(json!({ "a": 1 })),
            }),
        })
    );
    assert_eq!(
        message(json!({ "jsonrpc": "2.0", "method": "host.event", "params": {} })),
        Message::Notification(Notification::Other {
            method: "host.event".into()
        })
    );
    let error = RpcError {
        code: -32601,
        message: "nope".into(),
        data: None,
    };
    assert_eq!(error.to_string(), "nope (code -32601)");
}

#[test]
fn bare_objects_without_a_type_are_errors() {
    for value in [
        json!({}),
        json!({ "type": 5 }),
        json!({ "data": {} }),
        json!([]),
    ] {
        assert!(Message::from_value(value.clone()).is_err(), "{value}");
    }
}

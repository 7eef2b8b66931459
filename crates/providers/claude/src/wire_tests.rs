use serde_json::json;

use super::*;

const FIXTURES: &[&str] = &[
    include_str!("../tests/fixtures/print-allowed.stdout.jsonl"),
    include_str!("../tests/fixtures/print-api-error.stdout.jsonl"),
    include_str!("../tests/fixtures/print-default.stdout.jsonl"),
    include_str!("../tests/fixtures/print-partial.stdout.jsonl"),
    include_str!("../tests/fixtures/stdin-approve.stdout.jsonl"),
    include_str!("../tests/fixtures/stdin-deny.stdout.jsonl"),
    include_str!("../tests/fixtures/stdin-noflag.stdout.jsonl"),
    include_str!("../tests/fixtures/stdin-partial-thinking.stdout.jsonl"),
];

fn parse(value: serde_json::Value) -> CliLine {
    serde_json::from_value(value).unwrap()
}

#[test]
fn every_captured_line_decodes_to_a_known_type() {
    for transcript in FIXTURES {
        for line in transcript.lines().filter(|l| !l.trim().is_empty()) {
            let parsed: CliLine = serde_json::from_str(line).unwrap();
            assert!(!matches!(parsed, CliLine::Other { .. }), "{}", &line[..80]);
        }
    }
}

#[test]
fn a_result_decodes_whatever_its_key_order() {
    let line = parse(json!({
        "duration_ms": 5, "usage": { "input_tokens": 1, "output_tokens": 2 },
        "modelUsage": { "m": {} }, "is_error": true, "subtype": "success",
        "terminal_reason": "api_error", "result": "API Error", "type": "result"
    }));
    let CliLine::Result(result) = line else {
        panic!("{line:?}")
    };
    assert!(result.is_error);
    assert_eq!(result.duration_ms, Some(5));
    assert_eq!(result.terminal_reason.as_deref(), Some("api_error"));
    assert_eq!(result.usage.unwrap().output_tokens, Some(2));
}

#[test]
fn tool_use_result_is_an_object_on_success_and_a_string_on_denial() {
    let user = |result: serde_json::Value| match parse(json!({
        "type": "user", "message": { "role": "user", "content": [] },
        "tool_use_result": result
    })) {
        CliLine::User(user) => user.tool_use_result,
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        user(json!({ "stdout": "" })),
        Some(ToolUseResult::Object(_))
    ));
    assert_eq!(
        user(json!("Error: denied")),
        Some(ToolUseResult::Text("Error: denied".into()))
    );
    assert_eq!(user(json!(3)), Some(ToolUseResult::Other(json!(3))));
}

#[test]
fn unknown_types_and_subtypes_keep_their_names() {
    assert_eq!(
        parse(json!({ "type": "rate_limit", "x": 1 })),
        CliLine::Other {
            kind: "rate_limit".into()
        }
    );
    assert_eq!(
        parse(json!({ "type": "system", "subtype": "hook_started" })),
        CliLine::System(SystemLine::Other {
            subtype: "hook_started".into()
        })
    );
    let CliLine::ControlRequest(request) = parse(json!({
        "type": "control_request", "request_id": "r", "request": { "subtype": "mcp_message" }
    })) else {
        panic!()
    };
    assert_eq!(
        request.request,
        ControlRequest::Other {
            subtype: "mcp_message".into()
        }
    );
}

#[test]
fn unknown_events_blocks_and_deltas_decode_as_other() {
    let event = |event: serde_json::Value| match parse(json!({
        "type": "stream_event", "event": event
    })) {
        CliLine::StreamEvent(line) => line.event,
        other => panic!("{other:?}"),
    };
    assert_eq!(event(json!({ "type": "ping" })), StreamEvent::Other);
    assert_eq!(
        event(json!({ "type": "message_delta", "delta": {}, "usage": { "output_tokens": 20 } })),
        StreamEvent::MessageDelta {
            usage: Some(ApiUsage {
                output_tokens: Some(20),
                ..ApiUsage::default()
            })
        }
    );
    assert_eq!(
        event(json!({ "type": "content_block_start", "index": 2,
                      "content_block": { "type": "redacted_thinking", "data": "x" } })),
        StreamEvent::ContentBlockStart {
            index: 2,
            content_block: ContentBlock::Other
        }
    );
    assert_eq!(
        event(json!({ "type": "content_block_delta", "index": 0,
                      "delta": { "type": "signature_delta", "signature": "s" } })),
        StreamEvent::ContentBlockDelta {
            index: 0,
            delta: BlockDelta::SignatureDelta
        }
    );
}

#[test]
fn missing_optional_fields_default() {
    let CliLine::Assistant(line) = parse(json!({ "type": "assistant", "message": {} })) else {
        panic!()
    };
    assert_eq!(line.message.id, None);
    assert!(line.message.content.is_empty());
    assert!(!line.is_api_error_message);
    let CliLine::Result(result) = parse(json!({ "type": "result" })) else {
        panic!()
    };
    assert_eq!(result.subtype, "");
    assert!(!result.is_error);
}

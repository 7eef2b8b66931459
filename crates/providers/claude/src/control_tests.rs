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
        include_str!("../tests/fixtures/stdin-approve.stdin.jsonl"),
        include_str!("../tests/fixtures/stdin-deny.stdin.jsonl"),
        include_str!("../tests/fixtures/stdin-noflag.stdin.jsonl"),
        include_str!("../tests/fixtures/stdin-partial-thinking.stdin.jsonl"),
    ] {
        for captured in stdin_lines(text) {
            let rebuilt = match captured["type"].as_str().unwrap() {
                "control_request" => {
                    assert_eq!(captured["request"]["subtype"], "initialize");
                    initialize_request(captured["request_id"].as_str().unwrap())
                }
                "user" => user_message(&captured["message"]["content"], None),
                "control_response" => {
                    let response = &captured["response"];
                    let id = response["request_id"].as_str().unwrap();
                    match response["response"]["behavior"].as_str().unwrap() {
                        "allow" => allow(id, &response["response"]["updatedInput"]),
                        "deny" => deny(id, response["response"]["message"].as_str().unwrap()),
                        other => panic!("{other}"),
                    }
                }
                other => panic!("{other}"),
            };
            assert_eq!(parsed(&rebuilt), captured);
        }
    }
}

#[test]
fn a_user_message_carries_the_turn_id_as_uuid_when_given() {
    let blocks = json!([{ "type": "text", "text": "hi" }]);
    assert_eq!(
        parsed(&user_message(&blocks, Some("turn-1"))),
        json!({ "type": "user", "message": { "role": "user", "content": blocks },
                "parent_tool_use_id": null, "session_id": "", "uuid": "turn-1" })
    );
}

#[test]
fn interrupts_and_errors_have_the_control_shapes() {
    assert_eq!(
        parsed(&interrupt_request("intr-1")),
        json!({ "type": "control_request", "request_id": "intr-1",
                "request": { "subtype": "interrupt" } })
    );
    assert_eq!(
        parsed(&error_response("r9", "not supported")),
        json!({ "type": "control_response",
                "response": { "subtype": "error", "request_id": "r9", "error": "not supported" } })
    );
}

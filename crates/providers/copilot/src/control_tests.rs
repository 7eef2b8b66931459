use serde_json::{Value, json};

use super::*;

fn stdin_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn parsed(body: &str) -> Value {
    serde_json::from_str(body).unwrap()
}

/// Rebuilds every message a captured host wrote with the builders and compares the JSON.
#[test]
fn the_builders_reproduce_the_captured_stdin_messages() {
    for text in [
        include_str!("../tests/fixtures/sdk-approve.stdin.jsonl"),
        include_str!("../tests/fixtures/sdk-reject.stdin.jsonl"),
    ] {
        for captured in stdin_lines(text) {
            let text = |pointer: &str| captured.pointer(pointer).and_then(Value::as_str).unwrap();
            let id = captured["id"].as_u64().unwrap();
            let params = match captured["method"].as_str().unwrap() {
                PING => ping_params(text("/params/message")),
                SESSION_CREATE => {
                    let provider = ByokProvider {
                        kind: text("/params/provider/type").into(),
                        base_url: text("/params/provider/baseUrl").into(),
                        api_key: text("/params/provider/apiKey").into(),
                    };
                    session_create_params(
                        Some(text("/params/model")),
                        text("/params/workingDirectory"),
                        text("/params/clientName"),
                        Some(&provider),
                    )
                }
                SESSION_SEND => session_send_params(
                    text("/params/sessionId"),
                    text("/params/prompt"),
                    Vec::new(),
                    None,
                ),
                HANDLE_PERMISSION => {
                    let result = &captured["params"]["result"];
                    permission_answer_params(
                        text("/params/sessionId"),
                        text("/params/requestId"),
                        result["kind"] == "approve-once",
                        result["feedback"].as_str(),
                        false,
                    )
                }
                other => panic!("unexpected method {other}"),
            };
            let method = captured["method"].as_str().unwrap();
            let rebuilt = request(id, method, &params);
            assert!(!rebuilt.contains('\n'));
            assert_eq!(parsed(&rebuilt), captured);
        }
    }
}

#[test]
fn resume_abort_and_error_replies() {
    assert_eq!(
        session_resume_params("cop-1", None, "/w", "agenthost", None),
        json!({ "sessionId": "cop-1", "requestPermission": true, "streaming": true,
                "workingDirectory": "/w", "clientName": "agenthost" })
    );
    assert_eq!(
        parsed(&request(5, SESSION_ABORT, &session_abort_params("cop-1"))),
        json!({ "jsonrpc": "2.0", "id": 5, "method": "session.abort",
                "params": { "sessionId": "cop-1" } })
    );
    assert_eq!(
        parsed(&error_reply(
            &json!("r-1"),
            METHOD_NOT_FOUND,
            "tool.call is not supported"
        )),
        json!({ "jsonrpc": "2.0", "id": "r-1",
                "error": { "code": -32601, "message": "tool.call is not supported" } })
    );
}

#[test]
fn permission_answers_in_both_vocabularies() {
    let answer = |approved, feedback, legacy| {
        permission_answer_params("s", "r", approved, feedback, legacy)["result"].clone()
    };
    assert_eq!(
        answer(true, Some("ignored"), false),
        json!({ "kind": "approve-once" })
    );
    assert_eq!(
        answer(false, Some("No."), false),
        json!({ "kind": "reject", "feedback": "No." })
    );
    assert_eq!(answer(false, None, false), json!({ "kind": "reject" }));
    assert_eq!(answer(true, None, true), json!({ "kind": "approved" }));
    assert_eq!(
        answer(false, Some("No."), true),
        json!({ "kind": "denied-interactively-by-user", "feedback": "No." })
    );
}

#[test]
fn send_params_carry_attachments_only_when_there_are_some() {
    let blob = json!({ "type": "blob", "data": "eA==", "mimeType": "text/plain" });
    assert_eq!(
        session_send_params("s", "hi", vec![blob.clone()], None),
        json!({ "sessionId": "s", "prompt": "hi", "attachments": [blob] })
    );
    assert_eq!(
        session_send_params("s", "hi", Vec::new(), None),
        json!({ "sessionId": "s", "prompt": "hi" })
    );
}

#[test]
fn a_provider_never_shows_its_key() {
    let provider = ByokProvider {
        kind: "anthropic".into(),
        base_url: "http://127.0.0.1:1".into(),
        api_key: "sk-secret".into(),
    };
    assert_eq!(
        session_create_params(None, "/w", "agenthost", Some(&provider))["provider"],
        json!({ "type": "anthropic", "baseUrl": "http://127.0.0.1:1", "apiKey": "sk-secret" })
    );
    assert!(!format!("{provider:?}").contains("sk-secret"));
}

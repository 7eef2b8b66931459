//! The wire layer against what a real ACP agent wrote (`copilot --acp` 1.0.102, captured with
//! an approved and a rejected tool call) and against malformed input.
#![allow(clippy::unwrap_used)]

use agenthost_provider_acp::wire::{
    self, Message, SessionUpdate, initialize_response, new_session_response, parse_message,
    permission_request, prompt_response, schema,
};
use serde_json::{Value, json};

fn lines(name: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Every message of a captured run, parsed; the result of request `id` of the host.
fn result_of(messages: &[Message], wanted: u64) -> Value {
    messages
        .iter()
        .find_map(|message| match message {
            Message::Response { id, result } if id == &json!(wanted) => {
                Some(result.clone().unwrap())
            }
            _ => None,
        })
        .unwrap()
}

#[test]
fn a_captured_run_decodes_whole_and_says_what_the_agent_offers_and_asks() {
    for (capture, tokens) in [
        ("acp-allow.stdout.jsonl", (200, 40)),
        ("acp-reject.stdout.jsonl", (100, 20)),
    ] {
        let messages: Vec<Message> = lines(capture)
            .iter()
            .map(|line| parse_message(line).unwrap())
            .collect();
        let mut kinds = Vec::new();
        let mut permissions = 0;
        for message in &messages {
            match message {
                Message::Notification { method, params } if method == "session/update" => {
                    match wire::session_update(params).unwrap() {
                        SessionUpdate::Known { update, .. } => {
                            let tagged = serde_json::to_value(&*update).unwrap();
                            kinds.push(tagged["sessionUpdate"].as_str().unwrap().to_owned());
                        }
                        SessionUpdate::Skipped { kind, .. } => panic!("{capture}: skipped {kind}"),
                    }
                }
                Message::Request { method, params, .. } => {
                    assert_eq!(method, "session/request_permission");
                    let request = permission_request(params.clone()).unwrap();
                    let options: Vec<(String, schema::PermissionOptionKind)> = request
                        .options
                        .iter()
                        .map(|o| (o.option_id.0.to_string(), o.kind))
                        .collect();
                    assert_eq!(
                        options,
                        [
                            (
                                "allow_once".to_owned(),
                                schema::PermissionOptionKind::AllowOnce
                            ),
                            (
                                "allow_always".to_owned(),
                                schema::PermissionOptionKind::AllowAlways
                            ),
                            (
                                "reject_once".to_owned(),
                                schema::PermissionOptionKind::RejectOnce
                            ),
                        ]
                    );
                    permissions += 1;
                }
                _ => {}
            }
        }
        assert_eq!(permissions, 1, "{capture}");
        for kind in [
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "usage_update",
        ] {
            assert!(
                kinds.iter().any(|k| k == kind),
                "{capture}: no {kind} in {kinds:?}"
            );
        }
        let initialized = initialize_response(result_of(&messages, 0)).unwrap();
        assert_eq!(
            serde_json::to_value(initialized.protocol_version).unwrap(),
            json!(1)
        );
        assert!(initialized.agent_capabilities.load_session);
        let session = new_session_response(result_of(&messages, 1)).unwrap();
        let categories: Vec<String> = session
            .config_options
            .unwrap_or_default()
            .iter()
            .filter_map(|option| serde_json::to_value(option).ok())
            .filter_map(|option| option["category"].as_str().map(str::to_owned))
            .collect();
        assert!(categories.iter().any(|c| c == "mode"), "{categories:?}");
        let stopped = prompt_response(result_of(&messages, 2)).unwrap();
        assert_eq!(stopped.stop_reason, schema::StopReason::EndTurn);
        let usage = stopped.usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            tokens,
            "{capture}"
        );
    }
}

#[test]
fn an_update_of_a_kind_this_build_does_not_know_is_skipped_not_an_error() {
    let params = json!({ "sessionId": "s1", "update": { "sessionUpdate": "plan_update", "planId": "p", "entries": [] } });
    assert_eq!(
        wire::session_update(&params).unwrap(),
        SessionUpdate::Skipped {
            session_id: "s1".into(),
            kind: "plan_update".into()
        }
    );
}

#[test]
fn malformed_messages_and_bodies_are_errors_that_say_what_is_wrong() {
    assert!(
        parse_message("not json")
            .unwrap_err()
            .0
            .contains("not a JSON-RPC message")
    );
    assert!(
        parse_message(r#"{"jsonrpc":"2.0"}"#)
            .unwrap_err()
            .0
            .contains("neither an id nor a method")
    );
    // An array is no message, though a struct would deserialize from it (`[1]` as an answer to
    // request 1).
    assert!(
        parse_message("[1]")
            .unwrap_err()
            .0
            .contains("a message is a JSON object")
    );
    let known_but_broken =
        json!({ "sessionId": "s1", "update": { "sessionUpdate": "agent_message_chunk" } });
    let error = wire::session_update(&known_but_broken).unwrap_err();
    assert!(error.0.contains("agent_message_chunk"), "{error}");
    let untagged = json!({ "sessionId": "s1", "update": { "content": "x" } });
    assert!(wire::session_update(&untagged).is_err());
    assert!(permission_request(json!({ "sessionId": "s1" })).is_err());
    assert!(prompt_response(json!({ "stopReason": "tired" })).is_err());
}

#[test]
fn an_error_answer_keeps_its_code_and_message() {
    let message = parse_message(
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"Authentication required"}}"#,
    )
    .unwrap();
    let Message::Response { id, result } = message else {
        panic!("{message:?}");
    };
    assert_eq!(id, json!(3));
    let error = result.unwrap_err();
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32000, "Authentication required")
    );
    assert_eq!(error.to_string(), "Authentication required (code -32000)");
}

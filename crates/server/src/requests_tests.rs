use agenthost_protocol::commands::{AuthenticateParams, CompletionsParams};
use agenthost_protocol::state::{AgentInfo, SessionConfigState};
use serde_json::json;

use super::*;

fn agents() -> Vec<AgentInfo> {
    vec![
        serde_json::from_value(json!({
            "provider": "scripted", "displayName": "S", "description": "",
            "models": [{ "id": "m", "provider": "scripted", "name": "M" }]
        }))
        .unwrap(),
    ]
}

fn config() -> SessionConfigState {
    serde_json::from_value(json!({
        "schema": { "type": "object", "properties": {
            "unattended": { "type": "string", "title": "Unattended", "enum": ["off", "deny"],
                            "sessionMutable": true }
        }},
        "values": { "unattended": "off" }
    }))
    .unwrap()
}

fn resolve_params(value: serde_json::Value) -> ResolveSessionConfigParams {
    serde_json::from_value(value).unwrap()
}

#[test]
fn the_session_config_is_the_hosts_schema_with_the_clients_values_over_the_defaults() {
    let config = config();
    let result = resolve_session_config(
        resolve_params(json!({
            "channel": "ahp-root://", "provider": "scripted",
            "config": { "unattended": "deny", "notInTheSchema": 1 }
        })),
        Some(&config),
        &agents(),
    )
    .unwrap();
    assert_eq!(result.schema, config.schema);
    assert_eq!(json!(result.values), json!({ "unattended": "deny" }));
    let defaults = resolve_session_config(
        resolve_params(json!({ "channel": "ahp-root://" })),
        Some(&config),
        &agents(),
    )
    .unwrap();
    assert_eq!(json!(defaults.values), json!({ "unattended": "off" }));
}

#[test]
fn without_a_configured_schema_the_answer_is_an_empty_object_schema() {
    let result = resolve_session_config(
        resolve_params(json!({ "channel": "ahp-root://", "config": { "a": 1 } })),
        None,
        &agents(),
    )
    .unwrap();
    assert_eq!(
        json!(result),
        json!({ "schema": { "type": "object", "properties": {} }, "values": {} })
    );
}

#[test]
fn an_unknown_provider_is_refused() {
    let error = resolve_session_config(
        resolve_params(json!({ "channel": "ahp-root://", "provider": "nope" })),
        Some(&config()),
        &agents(),
    )
    .unwrap_err();
    assert_eq!(error.code, -32002, "{error:?}");
}

fn completion(text: &str, offset: i64) -> CompletionsParams {
    serde_json::from_value(json!({
        "channel": "ahp-chat:/c", "kind": "userMessage", "text": text, "offset": offset
    }))
    .unwrap()
}

#[test]
fn completions_are_empty_for_a_known_channel_and_refused_otherwise() {
    let ok = completions(&completion("hi @", 4), "ahp-chat:/c", true).unwrap();
    assert!(ok.items.is_empty());
    // Offsets count UTF-16 code units: "é😀" is 3 of them.
    assert!(completions(&completion("é😀", 3), "ahp-chat:/c", true).is_ok());
    for bad in [-1, 4] {
        let error = completions(&completion("é😀", bad), "ahp-chat:/c", true).unwrap_err();
        assert_eq!(error.code, -32602, "{bad}: {error:?}");
    }
    let error = completions(&completion("x", 0), "ahp-chat:/gone", false).unwrap_err();
    assert_eq!(error.code, -32008, "{error:?}");
}

#[test]
fn a_token_is_refused_and_not_echoed() {
    let params: AuthenticateParams = serde_json::from_value(json!({
        "channel": "ahp-root://", "resource": "https://api.github.com", "token": "secret-token-123"
    }))
    .unwrap();
    let error = authenticate(&params);
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("https://api.github.com"));
    assert!(!error.message.contains("secret-token-123"));
}

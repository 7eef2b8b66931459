use serde_json::json;

use super::*;

#[test]
fn decodes_requests_notifications_and_responses() {
    assert_eq!(
        decode(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"channel":"ahp-root://"}}"#)
            .unwrap(),
        Incoming::Request {
            id: 7,
            method: "ping".into(),
            params: Some(json!({"channel": "ahp-root://"})),
        }
    );
    assert_eq!(
        decode(r#"{"jsonrpc":"2.0","method":"unsubscribe"}"#).unwrap(),
        Incoming::Notification {
            method: "unsubscribe".into(),
            params: None,
        }
    );
    assert_eq!(
        decode(r#"{"jsonrpc":"2.0","id":3,"result":null}"#).unwrap(),
        Incoming::Response {
            id: 3,
            outcome: Ok(Value::Null),
        }
    );
    assert_eq!(
        decode(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32009,"message":"no","data":1}}"#)
            .unwrap(),
        Incoming::Response {
            id: 4,
            outcome: Err(RpcError::permission_denied("no").with_data(json!(1))),
        }
    );
}

#[test]
fn malformed_json_is_a_parse_error_with_null_id() {
    let error = decode("{not json").unwrap_err();
    assert_eq!(error.id, Value::Null);
    assert_eq!(error.error.code, -32700);
}

#[test]
fn structurally_invalid_messages_are_invalid_requests_echoing_the_id() {
    let cases = [
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, Value::Null),
        ("42", Value::Null),
        (r#"{"id":1,"method":"ping"}"#, json!(1)),
        (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, json!(1)),
        (
            r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#,
            json!("abc"),
        ),
        (r#"{"jsonrpc":"2.0","id":-1,"method":"ping"}"#, json!(-1)),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, json!(1.5)),
        (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, json!(1)),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            json!(1),
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, json!(1)),
        (r#"{"jsonrpc":"2.0"}"#, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}"#,
            json!(1),
        ),
    ];
    for (text, id) in cases {
        let error = decode(text).unwrap_err();
        assert_eq!(error.error.code, -32600, "{text}");
        assert_eq!(error.id, id, "{text}");
    }
}

#[test]
fn frames_are_json_rpc_2() {
    let success: Value = serde_json::from_str(&success_frame(5, &Value::Null).unwrap()).unwrap();
    assert_eq!(success, json!({"jsonrpc": "2.0", "id": 5, "result": null}));

    let error: Value =
        serde_json::from_str(&error_frame(&Value::Null, &RpcError::parse_error("bad"))).unwrap();
    assert_eq!(
        error,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}})
    );

    let notification: Value = serde_json::from_str(&notification_frame(
        "root/sessionRemoved",
        &json!({"session": "s"}),
    ))
    .unwrap();
    assert_eq!(
        notification,
        json!({"jsonrpc": "2.0", "method": "root/sessionRemoved", "params": {"session": "s"}})
    );
}

#[test]
fn unsupported_version_error_carries_supported_versions() {
    let error = RpcError::unsupported_protocol_version(&["1.0.0", "0.9.0"]);
    assert_eq!(error.code, -32005);
    assert_eq!(
        error.data,
        Some(json!({"supportedVersions": ["1.0.0", "0.9.0"]}))
    );
}

#[test]
fn constructors_use_the_ahp_codes() {
    let codes = [
        (RpcError::invalid_request("x").code, -32600),
        (RpcError::method_not_found("x").code, -32601),
        (RpcError::invalid_params("x").code, -32602),
        (RpcError::internal("x").code, -32603),
        (RpcError::session_not_found("x").code, -32001),
        (RpcError::provider_not_found("x").code, -32002),
        (RpcError::session_already_exists("x").code, -32003),
        (RpcError::turn_in_progress("x").code, -32004),
        (
            RpcError::auth_required(json!({"resources": []})).code,
            -32007,
        ),
        (RpcError::not_found("x").code, -32008),
        (RpcError::permission_denied("x").code, -32009),
        (RpcError::already_exists("x").code, -32010),
        (RpcError::conflict("x").code, -32011),
    ];
    for (actual, expected) in codes {
        assert_eq!(actual, expected);
    }
    assert_eq!(
        RpcError::method_not_found("createChat").message,
        "method not found: createChat"
    );
}

//! The server's JSON-RPC frame decoder (`agenthost_server`'s `rpc::decode`, through the hidden
//! `fuzz_decode_frame`): one WebSocket text frame → request / notification / response, or the
//! error frame the connection reader answers with. Never panics; what it accepts is a JSON-RPC
//! 2.0 object of the kind it says; what it refuses is answered with a well-formed `-32700` /
//! `-32600` error frame echoing the id when one could be read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // tungstenite hands out text frames only as valid UTF-8.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match agenthost_server::fuzz_decode_frame(text) {
        Ok((kind, id)) => {
            let value: Value = serde_json::from_str(text).expect("an accepted frame is JSON");
            let object = value.as_object().expect("an accepted frame is an object");
            assert_eq!(object.get("jsonrpc").and_then(Value::as_str), Some("2.0"));
            if let Some(params) = object.get("params") {
                assert!(params.is_object() || params.is_array(), "params {params}");
            }
            match kind {
                "request" => {
                    assert!(object.get("method").is_some_and(Value::is_string));
                    assert_eq!(object.get("id").and_then(Value::as_u64), id);
                }
                "notification" => {
                    assert!(object.get("method").is_some_and(Value::is_string));
                    assert!(object.get("id").is_none() && id.is_none());
                }
                "response" => {
                    assert!(object.get("method").is_none());
                    assert_eq!(object.get("id").and_then(Value::as_u64), id);
                    assert!(id.is_some());
                    assert!(object.contains_key("result") || object.contains_key("error"));
                }
                other => panic!("unknown kind {other}"),
            }
        }
        Err(frame) => {
            let answer: Value = serde_json::from_str(&frame).expect("the error frame is JSON");
            assert_eq!(answer["jsonrpc"], "2.0");
            let code = answer["error"]["code"].as_i64();
            assert!(matches!(code, Some(-32700 | -32600)), "code {code:?}");
            assert!(answer["error"]["message"].is_string());
            // The id echoed is the frame's own (null when there is none or it is not JSON),
            // as JSON prints and reads it back: serde_json's default float parsing is not
            // exactly round-trip, so a fractional number may come back in its last bit.
            let echoed = serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|value| value.get("id").cloned())
                .filter(|_| code == Some(-32600))
                .unwrap_or(Value::Null);
            let echoed: Value = serde_json::to_string(&echoed)
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok())
                .expect("a JSON value prints and reads back");
            assert_eq!(answer["id"], echoed);
        }
    }
});

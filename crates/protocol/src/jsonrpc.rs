//! JSON-RPC 2.0 framing: errors, decoding of inbound text frames, encoding of outbound frames.
//!
//! Decoding is done by hand over a `serde_json::Value` rather than through the untagged
//! `JsonRpcMessage`: that enum has `id: u64`, so a request with a string or fractional id would
//! silently decode as a *notification* and never be answered. Here such a request gets
//! `-32600` with its id echoed.

use std::sync::Arc;

use crate::errors::{ahp_error_codes as ahp, json_rpc_error_codes as jsonrpc};
use serde::Serialize;
use serde_json::Value;

/// A JSON-RPC error object (`code`, `message`, optional `data`), as a request handler returns it
/// and the client is sent it.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
pub struct RpcError {
    /// The error code (`json_rpc_error_codes` / `ahp_error_codes`).
    pub code: i32,
    /// A short human-readable description.
    pub message: String,
    /// Optional structured details (required for `-32005`, `-32007`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with an arbitrary code and no data.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32700`: the frame is not JSON.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(jsonrpc::PARSE_ERROR, message)
    }

    /// `-32600`: not a valid request (or not allowed in this connection state).
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(jsonrpc::INVALID_REQUEST, message)
    }

    /// `-32601`: the helper for a handler that does not know `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("method not found: {}", crate::uri::snippet(method)),
        )
    }

    /// `-32602`: the params do not fit the method.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(jsonrpc::INVALID_PARAMS, message)
    }

    /// `-32603`: the host failed.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(jsonrpc::INTERNAL_ERROR, message)
    }

    /// `-32001`: the session URI does not exist.
    pub fn session_not_found(session: &str) -> Self {
        Self::new(
            ahp::SESSION_NOT_FOUND,
            format!("session not found: {session}"),
        )
    }

    /// `-32002`: the provider is not registered.
    pub fn provider_not_found(provider: &str) -> Self {
        Self::new(
            ahp::PROVIDER_NOT_FOUND,
            format!("provider not found: {provider}"),
        )
    }

    /// `-32003`: a session with that URI already exists.
    pub fn session_already_exists(session: &str) -> Self {
        Self::new(
            ahp::SESSION_ALREADY_EXISTS,
            format!("session already exists: {session}"),
        )
    }

    /// `-32004`: the operation needs no active turn, but one is in progress.
    pub fn turn_in_progress(message: impl Into<String>) -> Self {
        Self::new(ahp::TURN_IN_PROGRESS, message)
    }

    /// `-32005` with `data.supportedVersions`.
    pub fn unsupported_protocol_version(supported: &[&str]) -> Self {
        Self::new(
            ahp::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "unsupported protocol version; this host speaks {}",
                supported.join(", ")
            ),
        )
        .with_data(serde_json::json!({ "supportedVersions": supported }))
    }

    /// `-32007` with `data` (`AuthRequiredErrorData`: `{resources: [...]}`).
    pub fn auth_required(data: Value) -> Self {
        Self::new(ahp::AUTH_REQUIRED, "authentication required").with_data(data)
    }

    /// `-32008`: the file, folder or URI does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ahp::NOT_FOUND, message)
    }

    /// `-32009`: not permitted (add `PermissionDeniedErrorData` with [`RpcError::with_data`]).
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ahp::PERMISSION_DENIED, message)
    }

    /// `-32010`: the target exists and may not be overwritten.
    pub fn already_exists(message: impl Into<String>) -> Self {
        Self::new(ahp::ALREADY_EXISTS, message)
    }

    /// `-32011`: an optimistic-concurrency precondition failed.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ahp::CONFLICT, message)
    }
}

/// One decoded inbound message.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: answer exactly once with `id`.
    Request {
        /// The request id (a non-negative integer).
        id: u64,
        /// The method name.
        method: String,
        /// The parameters, if any.
        params: Option<Value>,
    },
    /// A notification: never answered.
    Notification {
        /// The method name.
        method: String,
        /// The parameters, if any.
        params: Option<Value>,
    },
    /// The client's answer to a host-initiated request.
    Response {
        /// The id of the host's request.
        id: u64,
        /// Its `result`, or its `error`.
        outcome: Result<Value, RpcError>,
    },
}

/// Why a text frame was not a usable JSON-RPC message; each maps to one error response.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// The id to echo (`null` when none could be read).
    pub id: Value,
    /// The error to answer with.
    pub error: RpcError,
}

impl DecodeError {
    fn invalid(id: Value, message: impl Into<String>) -> Self {
        Self {
            id,
            error: RpcError::invalid_request(message),
        }
    }
}

/// Decodes one text frame.
pub fn decode(text: &str) -> Result<Incoming, Box<DecodeError>> {
    let value: Value = serde_json::from_str(text).map_err(|error| {
        Box::new(DecodeError {
            id: Value::Null,
            error: RpcError::parse_error(format!("parse error: {error}")),
        })
    })?;
    let Value::Object(mut object) = value else {
        let message = if value.is_array() {
            "batch requests are not supported"
        } else {
            "a JSON-RPC message must be an object"
        };
        return Err(Box::new(DecodeError::invalid(Value::Null, message)));
    };
    let raw_id = object.remove("id");
    let echo_id = raw_id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(Box::new(DecodeError::invalid(
            echo_id,
            r#""jsonrpc" must be "2.0""#,
        )));
    }
    let params = object.remove("params");
    if let Some(params) = &params
        && !params.is_object()
        && !params.is_array()
    {
        return Err(Box::new(DecodeError::invalid(
            echo_id,
            r#""params" must be an object or an array"#,
        )));
    }
    match object.remove("method") {
        Some(Value::String(method)) => match raw_id {
            None => Ok(Incoming::Notification { method, params }),
            Some(id) => match id.as_u64() {
                Some(id) => Ok(Incoming::Request { id, method, params }),
                None => Err(Box::new(DecodeError::invalid(
                    echo_id,
                    r#""id" must be a non-negative integer"#,
                ))),
            },
        },
        Some(_) => Err(Box::new(DecodeError::invalid(
            echo_id,
            r#""method" must be a string"#,
        ))),
        None => decode_response(raw_id, object),
    }
}

fn decode_response(
    raw_id: Option<Value>,
    mut object: serde_json::Map<String, Value>,
) -> Result<Incoming, Box<DecodeError>> {
    let echo_id = raw_id.clone().unwrap_or(Value::Null);
    let Some(id) = raw_id.as_ref().and_then(Value::as_u64) else {
        return Err(Box::new(DecodeError::invalid(
            echo_id,
            r#"neither a request ("method") nor a response with a numeric "id""#,
        )));
    };
    if let Some(result) = object.remove("result") {
        return Ok(Incoming::Response {
            id,
            outcome: Ok(result),
        });
    }
    let Some(error) = object.remove("error") else {
        return Err(Box::new(DecodeError::invalid(
            echo_id,
            r#"a response needs "result" or "error""#,
        )));
    };
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok());
    let message = error.get("message").and_then(Value::as_str);
    match (code, message) {
        (Some(code), Some(message)) => Ok(Incoming::Response {
            id,
            outcome: Err(RpcError {
                code,
                message: message.to_owned(),
                data: error.get("data").cloned(),
            }),
        }),
        _ => Err(Box::new(DecodeError::invalid(
            echo_id,
            r#"an error response needs an integer "code" and a string "message""#,
        ))),
    }
}

#[derive(Serialize)]
struct SuccessFrame<'a, T: ?Sized> {
    jsonrpc: &'static str,
    id: u64,
    result: &'a T,
}

#[derive(Serialize)]
struct ErrorFrame<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: &'a RpcError,
}

#[derive(Serialize)]
struct NotificationFrame<'a, T: ?Sized> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a T,
}

/// `{"jsonrpc":"2.0","id":…,"result":…}`. `Err` when `result` cannot be serialized: answer the
/// same id with [`RpcError::internal`] through [`error_frame`] instead.
pub fn success_frame<T: Serialize + ?Sized>(
    id: u64,
    result: &T,
) -> Result<Arc<str>, serde_json::Error> {
    let frame = SuccessFrame {
        jsonrpc: "2.0",
        id,
        result,
    };
    serde_json::to_string(&frame).map(Arc::from)
}

/// `{"jsonrpc":"2.0","id":…,"error":{…}}`; `id` may be `null`.
pub fn error_frame(id: &Value, error: &RpcError) -> Arc<str> {
    let frame = ErrorFrame {
        jsonrpc: "2.0",
        id,
        error,
    };
    match serde_json::to_string(&frame) {
        Ok(text) => text.into(),
        // Unreachable in practice (Values and strings always serialize); keep the id if we can.
        Err(_) => format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{},"message":"internal error"}}}}"#,
            id.as_u64()
                .map_or_else(|| "null".to_owned(), |id| id.to_string()),
            jsonrpc::INTERNAL_ERROR
        )
        .into(),
    }
}

/// A notification frame `{"jsonrpc":"2.0","method":…,"params":…}`, encoded once so one
/// broadcast is shared by every subscriber. Wire types always serialize (string keys only); if
/// `params` ever did not, the frame still is well-formed JSON-RPC, with `params: null` and the
/// error beside it.
pub fn notification_frame<T: Serialize + ?Sized>(method: &str, params: &T) -> Arc<str> {
    let frame = NotificationFrame {
        jsonrpc: "2.0",
        method,
        params,
    };
    match serde_json::to_string(&frame) {
        Ok(text) => Arc::from(text),
        Err(error) => Arc::from(
            serde_json::json!({
                "jsonrpc": "2.0", "method": method, "params": Value::Null, "error": error.to_string()
            })
            .to_string(),
        ),
    }
}

/// The `action` notification frame of an envelope.
pub fn action_frame(envelope: &crate::ActionEnvelope) -> Arc<str> {
    notification_frame("action", envelope)
}

#[cfg(test)]
#[path = "jsonrpc_tests.rs"]
mod tests;

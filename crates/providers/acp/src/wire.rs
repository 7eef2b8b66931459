//! What an ACP agent writes on stdout: newline-delimited JSON-RPC 2.0 messages, and the
//! protocol's bodies decoded into the official schema types ([`schema`]). The framing
//! ([`parse_message`], [`request`], [`notification`], [`result`], [`error_reply_with`]) is the
//! same both ways: `agenthost-acp-agent`, the host as an agent for editors, reads and writes
//! with it too.
//!
//! Decoding is tolerant where the protocol grows and strict where a message is malformed:
//! - a `session/update` whose kind this build does not know (a newer schema, or one behind an
//!   unstable feature not enabled here) is [`SessionUpdate::Skipped`] by its tag, never an
//!   error — the schema's `SessionUpdate` has no catch-all variant, so the tag is read first;
//! - a known kind, a permission request or a prompt answer that does not have the schema's shape
//!   is [`Undecodable`], naming what is wrong.

use agenthost_provider_api::Undecodable;
use agenthost_provider_api::tolerant::decode_body;
use serde::Deserialize;
use serde_json::{Value, json};

pub use agent_client_protocol::v1::schema;

/// `session/update` kinds this build decodes (the stable schema-v1 kinds of
/// `agent-client-protocol-schema` 1.17).
pub const KNOWN_UPDATES: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "notice",
    "compaction_update",
    "compaction_summary_chunk",
];

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RpcError {
    /// The error code (`-32000`: authentication required, `-32603`: internal error, …).
    pub code: i64,
    /// What went wrong.
    pub message: String,
    /// More detail, if the agent gave any.
    #[serde(default)]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error `code` saying `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32700: the line is not a JSON-RPC message.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(-32700, message)
    }

    /// -32600: not a request that can be answered (a second prompt during a turn, say).
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(-32600, message)
    }

    /// -32601: a method the answering side does not offer.
    pub fn method_not_found(message: impl Into<String>) -> Self {
        Self::new(-32601, message)
    }

    /// -32602: the parameters are wrong.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, message)
    }

    /// -32603: the answering side could not do it.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(-32603, message)
    }

    /// -32002: ACP's "resource not found" (an unknown session).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(-32002, message)
    }

    /// With `data` (ACP puts an error type there).
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// One message of the agent (or, read by an agent, of its client).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The answer to a request of the host.
    Response {
        /// The request's id.
        id: Value,
        /// Its result, or the agent's error.
        result: Result<Value, RpcError>,
    },
    /// A request of the agent (`session/request_permission`, …), answered with `id`.
    Request {
        /// The id to answer with.
        id: Value,
        /// The method.
        method: String,
        /// Its parameters (`null` when absent).
        params: Value,
    },
    /// A notification of the agent (`session/update`, …).
    Notification {
        /// The method.
        method: String,
        /// Its parameters (`null` when absent).
        params: Value,
    },
}

#[derive(Deserialize)]
struct RawMessage {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Value,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Parses one line of the agent's stdout.
pub fn parse_message(line: &str) -> Result<Message, Undecodable> {
    let value: Value = serde_json::from_str(line)
        .map_err(|error| Undecodable(format!("not a JSON-RPC message: {error}")))?;
    // A struct also deserializes from an array (`[1]` would be an answer to request 1).
    if !value.is_object() {
        return Err(Undecodable(
            "not a JSON-RPC message: a message is a JSON object".to_owned(),
        ));
    }
    let raw: RawMessage = serde_json::from_value(value)
        .map_err(|error| Undecodable(format!("not a JSON-RPC message: {error}")))?;
    match (raw.id, raw.method) {
        (Some(id), Some(method)) => Ok(Message::Request {
            id,
            method,
            params: raw.params,
        }),
        (None, Some(method)) => Ok(Message::Notification {
            method,
            params: raw.params,
        }),
        (Some(id), None) => {
            let result = match (raw.result, raw.error) {
                (_, Some(error)) => Err(error),
                (Some(result), None) => Ok(result),
                (None, None) => Ok(Value::Null),
            };
            Ok(Message::Response { id, result })
        }
        (None, None) => Err(Undecodable(
            "a JSON-RPC message with neither an id nor a method".to_owned(),
        )),
    }
}

/// A `session/update` notification.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionUpdate {
    /// An update this build knows.
    Known {
        /// The agent's session id.
        session_id: String,
        /// The update.
        update: Box<schema::SessionUpdate>,
    },
    /// An update of a kind this build does not know, skipped.
    Skipped {
        /// The agent's session id.
        session_id: String,
        /// Its `sessionUpdate` tag.
        kind: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateEnvelope {
    session_id: String,
    update: UpdateTag,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateTag {
    session_update: String,
}

/// Decodes the parameters of a `session/update` notification (see the module docs).
pub fn session_update(params: &Value) -> Result<SessionUpdate, Undecodable> {
    let envelope: UpdateEnvelope = serde_json::from_value(params.clone())
        .map_err(|error| Undecodable(format!("`session/update`: {error}")))?;
    let kind = envelope.update.session_update;
    if !KNOWN_UPDATES.contains(&kind.as_str()) {
        return Ok(SessionUpdate::Skipped {
            session_id: envelope.session_id,
            kind,
        });
    }
    let notification: schema::SessionNotification =
        decode_body(&format!("session/update {kind}"), params.clone())?;
    Ok(SessionUpdate::Known {
        session_id: envelope.session_id,
        update: Box::new(notification.update),
    })
}

/// Decodes the parameters of a `session/request_permission` request.
pub fn permission_request(params: Value) -> Result<schema::RequestPermissionRequest, Undecodable> {
    decode_body("session/request_permission", params)
}

/// Decodes the result of `session/prompt`: why the turn stopped, and its usage when the agent
/// reports it.
pub fn prompt_response(result: Value) -> Result<schema::PromptResponse, Undecodable> {
    decode_body("session/prompt", result)
}

/// Decodes the result of `initialize`: the agent's protocol version and capabilities.
pub fn initialize_response(result: Value) -> Result<schema::InitializeResponse, Undecodable> {
    decode_body("initialize", result)
}

/// Decodes the result of `session/new`: the session id, and its modes and config options.
pub fn new_session_response(result: Value) -> Result<schema::NewSessionResponse, Undecodable> {
    decode_body("session/new", result)
}

/// A JSON-RPC message of the host, with the `jsonrpc` member first.
#[derive(serde::Serialize)]
struct Outgoing<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a Value>,
}

impl Outgoing<'_> {
    fn line(&self) -> String {
        // Serializing borrowed JSON values cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The request `method` with `params`, numbered `id`.
pub fn request(id: u64, method: &str, params: &Value) -> String {
    let id = Value::from(id);
    Outgoing {
        jsonrpc: "2.0",
        id: Some(&id),
        method: Some(method),
        params: Some(params),
        result: None,
        error: None,
    }
    .line()
}

/// The notification `method` with `params`.
pub fn notification(method: &str, params: &Value) -> String {
    Outgoing {
        jsonrpc: "2.0",
        id: None,
        method: Some(method),
        params: Some(params),
        result: None,
        error: None,
    }
    .line()
}

/// The answer `result` to the agent's request `id`.
pub fn result(id: &Value, result: &Value) -> String {
    Outgoing {
        jsonrpc: "2.0",
        id: Some(id),
        method: None,
        params: None,
        result: Some(result),
        error: None,
    }
    .line()
}

/// The error answer `code` / `message` to the agent's request `id`.
pub fn error_reply(id: &Value, code: i64, message: &str) -> String {
    error_reply_with(id, code, message, None)
}

/// The error answer `code` / `message` to request `id`, with `data` (ACP puts an error type
/// there).
pub fn error_reply_with(id: &Value, code: i64, message: &str, data: Option<&Value>) -> String {
    let mut error = json!({ "code": code, "message": message });
    if let Some(data) = data {
        error["data"] = data.clone();
    }
    Outgoing {
        jsonrpc: "2.0",
        id: Some(id),
        method: None,
        params: None,
        result: None,
        error: Some(&error),
    }
    .line()
}

/// The answer to permission request `id`: the first offered option of the kinds `approved`
/// prefers (`allow_once`, then `allow_always`; `reject_once`, then `reject_always`) — of several
/// of one kind, the first that does not say it cancels — or `cancelled` when none is offered. `None` for `approved` withdraws the request (`cancelled`).
pub fn permission_answer(
    id: &Value,
    options: &[schema::PermissionOption],
    approved: Option<bool>,
) -> String {
    use schema::PermissionOptionKind as Kind;
    let preferred: &[Kind] = match approved {
        Some(true) => &[Kind::AllowOnce, Kind::AllowAlways],
        Some(false) => &[Kind::RejectOnce, Kind::RejectAlways],
        None => &[],
    };
    // Of two options of a kind, the one that does not stop the agent's turn: the host's denial
    // declines one tool call (cancelling the turn is the host's own cancel).
    let stops = |option: &&schema::PermissionOption| {
        let text = format!("{} {}", option.option_id.0, option.name).to_ascii_lowercase();
        text.contains("cancel")
    };
    let chosen = preferred.iter().find_map(|kind| {
        let mut of_kind = options.iter().filter(|option| option.kind == *kind);
        of_kind
            .clone()
            .find(|option| !stops(option))
            .or_else(|| of_kind.next())
    });
    let outcome = match chosen {
        Some(option) => json!({ "outcome": "selected", "optionId": option.option_id.0.as_ref() }),
        None => json!({ "outcome": "cancelled" }),
    };
    result(id, &json!({ "outcome": outcome }))
}

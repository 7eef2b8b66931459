//! Host → CLI messages (session requests, permission answers): each message builder returns one
//! frame body (a JSON-RPC 2.0 object with `"jsonrpc": "2.0"`, not yet framed — see
//! [`crate::framing::encode`]); the param builders return the `params` of the requests the
//! driver sends.

use std::fmt;

use serde_json::{Map, Value, json};

/// `ping`.
pub const PING: &str = "ping";
/// `session.create`.
pub const SESSION_CREATE: &str = "session.create";
/// `session.resume`.
pub const SESSION_RESUME: &str = "session.resume";
/// `session.send`.
pub const SESSION_SEND: &str = "session.send";
/// `session.abort`.
pub const SESSION_ABORT: &str = "session.abort";
/// `session.permissions.handlePendingPermissionRequest`.
pub const HANDLE_PERMISSION: &str = "session.permissions.handlePendingPermissionRequest";

/// JSON-RPC "method not found": the answer to a server request the host does not support.
pub const METHOD_NOT_FOUND: i64 = -32601;

fn body(value: &Value) -> String {
    // A `Value` always serializes.
    value.to_string()
}

/// A request: `{"jsonrpc": "2.0", "id": id, "method": method, "params": params}`.
pub fn request(id: u64, method: &str, params: &Value) -> String {
    body(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
}

/// An error answer to server request `request_id`.
pub fn error_reply(request_id: &Value, code: i64, message: &str) -> String {
    body(&json!({
        "jsonrpc": "2.0",
        "id": request_id,
        "error": { "code": code, "message": message },
    }))
}

/// `ping` params.
pub fn ping_params(message: &str) -> Value {
    json!({ "message": message })
}

/// A bring-your-own-key model provider for a session (`session.create`'s `provider`). The API
/// key is never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct ByokProvider {
    /// The API flavour: `openai`, `anthropic`, `azure`.
    pub kind: String,
    /// The API's base URL (for `anthropic` without `/v1`).
    pub base_url: String,
    /// The API key.
    pub api_key: String,
}

impl fmt::Debug for ByokProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByokProvider")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .finish()
    }
}

impl ByokProvider {
    fn to_json(&self) -> Value {
        json!({ "type": self.kind, "baseUrl": self.base_url, "apiKey": self.api_key })
    }
}

/// What `session.create` and `session.resume` share: permission requests and streaming on.
fn session_params(
    session_id: Option<&str>,
    model: Option<&str>,
    working_directory: &str,
    client_name: &str,
    provider: Option<&ByokProvider>,
) -> Value {
    let mut params = Map::new();
    if let Some(session_id) = session_id {
        params.insert("sessionId".into(), session_id.into());
    }
    if let Some(model) = model {
        params.insert("model".into(), model.into());
    }
    params.insert("requestPermission".into(), true.into());
    params.insert("streaming".into(), true.into());
    params.insert("workingDirectory".into(), working_directory.into());
    params.insert("clientName".into(), client_name.into());
    if let Some(provider) = provider {
        params.insert("provider".into(), provider.to_json());
    }
    Value::Object(params)
}

/// `session.create` params; the CLI's default model when `model` is `None`.
pub fn session_create_params(
    model: Option<&str>,
    working_directory: &str,
    client_name: &str,
    provider: Option<&ByokProvider>,
) -> Value {
    session_params(None, model, working_directory, client_name, provider)
}

/// `session.resume` params: `session.create`'s plus the session to resume.
pub fn session_resume_params(
    session_id: &str,
    model: Option<&str>,
    working_directory: &str,
    client_name: &str,
    provider: Option<&ByokProvider>,
) -> Value {
    session_params(
        Some(session_id),
        model,
        working_directory,
        client_name,
        provider,
    )
}

/// `session.send` params (`agentMode`: Copilot's `interactive`, `plan` or `autopilot` for this
/// message, left out when `None`); `attachments` is what [`crate::attachments::attachments`] built
/// (omitted when empty).
pub fn session_send_params(
    session_id: &str,
    prompt: &str,
    attachments: Vec<Value>,
    agent_mode: Option<&str>,
) -> Value {
    let mut params = json!({ "sessionId": session_id, "prompt": prompt });
    if let (false, Value::Object(object)) = (attachments.is_empty(), &mut params) {
        object.insert("attachments".into(), Value::Array(attachments));
    }
    if let (Some(mode), Value::Object(object)) = (agent_mode, &mut params) {
        object.insert("agentMode".into(), mode.into());
    }
    params
}

/// `session.permissions.handlePendingPermissionRequest` params: `{kind: "approve-once"}` or
/// `{kind: "reject", feedback?}`; with `legacy` the older CLIs' `approved` /
/// `denied-interactively-by-user` (retry with them when the first answer is refused).
pub fn permission_answer_params(
    session_id: &str,
    request_id: &str,
    approved: bool,
    feedback: Option<&str>,
    legacy: bool,
) -> Value {
    let kind = match (approved, legacy) {
        (true, false) => "approve-once",
        (false, false) => "reject",
        (true, true) => "approved",
        (false, true) => "denied-interactively-by-user",
    };
    let mut result = json!({ "kind": kind });
    if let (false, Some(feedback), Value::Object(object)) = (approved, feedback, &mut result) {
        object.insert("feedback".into(), feedback.into());
    }
    json!({ "sessionId": session_id, "requestId": request_id, "result": result })
}

/// `session.abort` params: stop the running turn (an aborted `session.idle` follows).
pub fn session_abort_params(session_id: &str) -> Value {
    json!({ "sessionId": session_id })
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;

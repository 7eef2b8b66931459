//! Host → app-server lines (`providers.md` §6.2–§6.3, §6.6): each line builder returns one JSON
//! object without a trailing newline and without a `"jsonrpc"` field; the param builders return
//! the `params` of the requests the driver sends.

use serde_json::{Map, Value, json};

fn line(value: &Value) -> String {
    // A `Value` always serializes.
    value.to_string()
}

/// A request: `{"id": id, "method": method, "params": params}`.
pub fn request(id: u64, method: &str, params: &Value) -> String {
    line(&json!({ "id": id, "method": method, "params": params }))
}

/// A notification: `{"method": method, "params": params}`, without `params` when it is
/// `null`.
pub fn notification(method: &str, params: &Value) -> String {
    let mut object = Map::new();
    object.insert("method".into(), method.into());
    if !params.is_null() {
        object.insert("params".into(), params.clone());
    }
    line(&Value::Object(object))
}

/// The answer to server request `request_id`: `{"id": request_id, "result": result}`.
pub fn reply(request_id: &Value, result: &Value) -> String {
    line(&json!({ "id": request_id, "result": result }))
}

/// An error answer to server request `request_id`.
pub fn error_reply(request_id: &Value, code: i64, message: &str) -> String {
    line(&json!({ "id": request_id, "error": { "code": code, "message": message } }))
}

/// JSON-RPC "method not found": the answer to a server request the host does not support.
pub const METHOD_NOT_FOUND: i64 = -32601;

/// Which approval request an answer is for: the requests use different words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalKind {
    /// `item/commandExecution/requestApproval` (`accept` / `decline`).
    CommandExecution,
    /// `item/fileChange/requestApproval` (`accept` / `decline`).
    FileChange,
    /// Legacy `execCommandApproval` (`approved` / `denied`).
    ExecCommand,
    /// Legacy `applyPatchApproval` (`approved` / `denied`).
    ApplyPatch,
    /// `item/permissions/requestApproval` (`{permissions, scope}`): approving grants the
    /// `requested` permissions for the turn, declining grants none.
    Permissions {
        /// The permissions Codex asked for, as it sent them.
        requested: Value,
    },
}

/// The scope of the permissions granted by an answer to `item/permissions/requestApproval`.
pub const PERMISSIONS_SCOPE: &str = "turn";

/// The `result` answering an approval request: `{"decision": "accept" | "decline"}`,
/// `"approved" | "denied"` for the legacy requests, and `{"permissions": <requested> | {},
/// "scope": "turn"}` for a permissions request.
pub fn approval_answer(kind: ApprovalKind, approved: bool) -> Value {
    let decision = match (kind, approved) {
        (ApprovalKind::CommandExecution | ApprovalKind::FileChange, true) => "accept",
        (ApprovalKind::CommandExecution | ApprovalKind::FileChange, false) => "decline",
        (ApprovalKind::ExecCommand | ApprovalKind::ApplyPatch, true) => "approved",
        (ApprovalKind::ExecCommand | ApprovalKind::ApplyPatch, false) => "denied",
        (ApprovalKind::Permissions { requested }, approved) => {
            let granted = if approved {
                requested
            } else {
                Value::Object(Map::new())
            };
            return json!({ "permissions": granted, "scope": PERMISSIONS_SCOPE });
        }
    };
    json!({ "decision": decision })
}

/// `initialize` params: `client_name` becomes the `originator` of Codex's model calls.
pub fn initialize_params(client_name: &str, version: &str) -> Value {
    json!({ "clientInfo": { "name": client_name, "version": version } })
}

/// `thread/start` params. `approval_policy`: `on-request` or `never`; `sandbox`: `read-only`,
/// `workspace-write` or `danger-full-access`; the model is Codex's default when `None`.
pub fn thread_start_params(
    cwd: &str,
    model: Option<&str>,
    approval_policy: &str,
    sandbox: &str,
) -> Value {
    let mut params = json!({
        "cwd": cwd,
        "approvalPolicy": approval_policy,
        "sandbox": sandbox,
    });
    if let (Some(model), Value::Object(object)) = (model, &mut params) {
        object.insert("model".into(), model.into());
    }
    params
}

/// `thread/resume` params.
pub fn thread_resume_params(thread_id: &str) -> Value {
    json!({ "threadId": thread_id })
}

/// `turn/start` params; `input` is what [`crate::attachments::user_input`] built.
pub fn turn_start_params(thread_id: &str, input: Vec<Value>) -> Value {
    json!({ "threadId": thread_id, "input": input })
}

/// `turn/steer` params: more input for the running app-server turn `expected_turn_id`.
pub fn turn_steer_params(thread_id: &str, input: Vec<Value>, expected_turn_id: &str) -> Value {
    json!({ "threadId": thread_id, "input": input, "expectedTurnId": expected_turn_id })
}

/// `turn/interrupt` params: the app-server turn (never the protocol turn id).
pub fn turn_interrupt_params(thread_id: &str, app_turn_id: &str) -> Value {
    json!({ "threadId": thread_id, "turnId": app_turn_id })
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;

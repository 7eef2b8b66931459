//! Host → app-server lines (the handshake, threads and turns, answers to approvals and input
//! requests): each line builder returns one JSON object without a trailing newline and without a
//! `"jsonrpc"` field; the param builders return the `params` of the requests the driver sends.

use agenthost_protocol::state::{ChatInputAnswer, ChatInputAnswerValue, ChatInputResponseKind};
use agenthost_provider_api::InputResponse;
use serde_json::{Map, Number, Value, json};

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

/// Which input request an answer is for, and what the answer needs to know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputKind {
    /// `item/tool/requestUserInput`: `{answers: {<question id>: {answers: [string…]}}}`.
    UserInput {
        /// The ids of the questions asked, in order.
        questions: Vec<String>,
    },
    /// `mcpServer/elicitation/request`: `{action: accept | decline | cancel, content?}`.
    Elicitation {
        /// The form fields asked as questions (the accepted `content` carries them, typed);
        /// `None` for a URL elicitation, accepted without content.
        fields: Option<Vec<FormField>>,
    },
}

/// One field of an elicitation form that was asked as a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormField {
    /// The property name (also the question id).
    pub name: String,
    /// How its value is written back.
    pub kind: FieldKind,
}

/// The JSON type of a form field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A string (free text or one of an enum).
    Text,
    /// A number.
    Number,
    /// An integer.
    Integer,
    /// A boolean.
    Boolean,
    /// An array of strings (several of an enum).
    Texts,
}

/// The `result` answering an input request with the host's `response`. `requestUserInput`:
/// each question's submitted answers as strings ([`InputResponse::answer_texts`]), every
/// question an empty array when declined or cancelled. An elicitation: `{action: "accept",
/// content: {<field>: <value typed per the schema>}}` (fields without a submitted answer left
/// out; no `content` for a URL elicitation), `{action: "decline"}` or `{action: "cancel"}`.
pub fn input_answer(kind: &InputKind, response: &InputResponse) -> Value {
    let accepted = response.response == ChatInputResponseKind::Accept;
    match kind {
        InputKind::UserInput { questions } => {
            let answers: Map<String, Value> = questions
                .iter()
                .map(|id| {
                    let texts = if accepted {
                        response.answer_texts(id)
                    } else {
                        Vec::new()
                    };
                    (id.clone(), json!({ "answers": texts }))
                })
                .collect();
            json!({ "answers": answers })
        }
        InputKind::Elicitation { fields } => match response.response {
            ChatInputResponseKind::Accept => match fields {
                Some(fields) => {
                    let content: Map<String, Value> = fields
                        .iter()
                        .filter_map(|field| {
                            Some((field.name.clone(), field_value(field, response)?))
                        })
                        .collect();
                    json!({ "action": "accept", "content": content })
                }
                None => json!({ "action": "accept" }),
            },
            ChatInputResponseKind::Decline => json!({ "action": "decline" }),
            ChatInputResponseKind::Cancel => json!({ "action": "cancel" }),
        },
    }
}

/// The answer to an input request nobody answered: `response` is
/// [`ChatInputResponseKind::Decline`] (nobody could be asked) or
/// [`ChatInputResponseKind::Cancel`] (the turn ended first).
pub fn input_unanswered(kind: &InputKind, response: ChatInputResponseKind) -> Value {
    input_answer(
        kind,
        &InputResponse {
            response,
            answers: Default::default(),
        },
    )
}

/// The value of `field` in an accepted elicitation's `content`, typed per its schema; `None`
/// when it has no submitted answer of a fitting type.
fn field_value(field: &FormField, response: &InputResponse) -> Option<Value> {
    let Some(ChatInputAnswer::Submitted(answered)) = response.answers.get(&field.name) else {
        return None;
    };
    let texts = response.answer_texts(&field.name);
    let text = texts.first();
    match (field.kind, &answered.value) {
        (FieldKind::Texts, _) => Some(json!(texts)),
        (FieldKind::Text, _) => text.map(|text| json!(text)),
        (FieldKind::Boolean, ChatInputAnswerValue::Boolean(value)) => Some(json!(value.value)),
        (FieldKind::Boolean, _) => match text.map(|text| text.trim()) {
            Some("true") => Some(json!(true)),
            Some("false") => Some(json!(false)),
            _ => None,
        },
        (FieldKind::Number | FieldKind::Integer, value) => {
            let number = match value {
                ChatInputAnswerValue::Number(number) => Some(number.value),
                _ => text.and_then(|text| text.trim().parse::<f64>().ok()),
            }?;
            number_value(number, field.kind == FieldKind::Integer)
        }
    }
}

/// `number` as JSON: an integer when the schema wants one (and it is whole) or when it is
/// whole anyway; nothing for NaN, infinities or a fractional integer.
fn number_value(number: f64, integer: bool) -> Option<Value> {
    // i64 covers ±2^63; whole floats inside it convert exactly.
    let whole = number.fract() == 0.0 && number.abs() < 9.2e18;
    if whole {
        return Some(json!(number as i64));
    }
    if integer {
        return None;
    }
    Number::from_f64(number).map(Value::Number)
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

/// The `turn/start` overrides of a turn in plan mode: a read-only sandbox and no approval
/// requests (a command that would change something fails inside the sandbox and the model is
/// told so). Codex keeps overrides for the turns after, so [`turn_policy_overrides`] puts the
/// configured policy back once the session leaves plan mode.
pub fn plan_overrides() -> [(&'static str, Value); 2] {
    [
        ("approvalPolicy", json!("never")),
        ("sandboxPolicy", json!({ "type": "readOnly" })),
    ]
}

/// The `turn/start` overrides restoring the configured `approval_policy` and `sandbox`
/// (`read-only`, `workspace-write`, `danger-full-access`) after a turn in plan mode.
pub fn turn_policy_overrides(approval_policy: &str, sandbox: &str) -> [(&'static str, Value); 2] {
    let sandbox_type = match sandbox {
        "read-only" => "readOnly",
        "danger-full-access" => "dangerFullAccess",
        _ => "workspaceWrite",
    };
    [
        ("approvalPolicy", json!(approval_policy)),
        ("sandboxPolicy", json!({ "type": sandbox_type })),
    ]
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

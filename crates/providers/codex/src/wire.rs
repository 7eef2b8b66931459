//! The `codex app-server` wire: one JSON-RPC-style message per line,
//! without a `"jsonrpc"` field.
//!
//! A line is a [`Message`]: a [`Response`] to one of the host's requests (`{id, result|error}`),
//! a [`Notification`] (`{method, params, emittedAtMs?}`) or a [`ServerRequest`]
//! (`{method, id, params}`). Ids are numbers or strings and are kept as JSON values. Codex adds
//! fields and methods between versions, so every field the host does not need is ignored,
//! optional ones default (also when `null`), and an unknown method or item type decodes to an
//! `Other` variant that keeps its name — never an error. Only a known method or item whose
//! fields have the wrong shape (a missing id, a string where an object belongs) is an error.

use agenthost_provider_api::Undecodable;
use agenthost_provider_api::tolerant::{decode_body, nullable};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

mod threads;
pub use threads::*;

/// One line `codex app-server` printed on stdout.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The answer to one of the host's requests.
    Response(Response),
    /// A notification (no answer expected).
    Notification(Notification),
    /// A request the host must answer.
    Request(ServerRequest),
}

impl Message {
    /// Classifies and decodes one parsed line. `Err` explains what is wrong with it.
    pub fn from_value(value: Value) -> Result<Self, Undecodable> {
        Self::decode_value(value).map_err(Undecodable)
    }

    fn decode_value(value: Value) -> Result<Self, String> {
        let Value::Object(mut object) = value else {
            return Err("a message is a JSON object".to_owned());
        };
        let id = object.remove("id").filter(|id| !id.is_null());
        match object.remove("method") {
            Some(Value::String(method)) => {
                let params = object.remove("params").unwrap_or(Value::Null);
                match id {
                    Some(id) => Ok(Self::Request(ServerRequest {
                        request: Request::decode(method, params)?,
                        id,
                    })),
                    None => Ok(Self::Notification(Notification::decode(method, params)?)),
                }
            }
            Some(other) => Err(format!("`method` is not a string: {other}")),
            None => {
                let Some(id) = id else {
                    return Err("neither a response, a notification nor a request".to_owned());
                };
                let result = match object.remove("error").filter(|error| !error.is_null()) {
                    Some(error) => Err(decode::<RpcError>(error)
                        .map_err(|error| format!("response error: {error}"))?),
                    None => Ok(object.remove("result").unwrap_or(Value::Null)),
                };
                Ok(Self::Response(Response { id, result }))
            }
        }
    }
}

fn decode<T: DeserializeOwned>(value: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(value)
}

/// The answer to one of the host's requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the host's request.
    pub id: Value,
    /// `result`, or `error`.
    pub result: Result<Value, RpcError>,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code (`-32601` method not found, …).
    pub code: i64,
    /// What went wrong.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
    /// Additional data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// A request from the app-server, with the id its answer carries.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRequest {
    /// The request id (a number or a string).
    pub id: Value,
    /// What is asked.
    pub request: Request,
}

/// What a server request asks, by method.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// `item/commandExecution/requestApproval`.
    CommandApproval(CommandApprovalParams),
    /// `item/fileChange/requestApproval`.
    FileChangeApproval(FileChangeApprovalParams),
    /// Legacy `execCommandApproval`.
    ExecCommandApproval(ExecCommandApprovalParams),
    /// Legacy `applyPatchApproval`.
    ApplyPatchApproval(ApplyPatchApprovalParams),
    /// `item/permissions/requestApproval`.
    PermissionsApproval(PermissionsApprovalParams),
    /// `item/tool/requestUserInput`.
    RequestUserInput(UserInputParams),
    /// `mcpServer/elicitation/request`.
    McpElicitation(ElicitationParams),
    /// Any other method.
    Other {
        /// The method.
        method: String,
    },
}

/// `item/commandExecution/requestApproval`.
pub const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
/// `item/fileChange/requestApproval`.
pub const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";
/// Legacy `execCommandApproval`.
pub const EXEC_COMMAND_APPROVAL: &str = "execCommandApproval";
/// Legacy `applyPatchApproval`.
pub const APPLY_PATCH_APPROVAL: &str = "applyPatchApproval";
/// `item/permissions/requestApproval`.
pub const PERMISSIONS_APPROVAL: &str = "item/permissions/requestApproval";
/// `item/tool/requestUserInput`.
pub const REQUEST_USER_INPUT: &str = "item/tool/requestUserInput";
/// `mcpServer/elicitation/request`.
pub const MCP_ELICITATION: &str = "mcpServer/elicitation/request";

impl Request {
    fn decode(method: String, params: Value) -> Result<Self, String> {
        Ok(match method.as_str() {
            COMMAND_APPROVAL => Self::CommandApproval(decode_body(&method, params)?),
            FILE_CHANGE_APPROVAL => Self::FileChangeApproval(decode_body(&method, params)?),
            EXEC_COMMAND_APPROVAL => Self::ExecCommandApproval(decode_body(&method, params)?),
            APPLY_PATCH_APPROVAL => Self::ApplyPatchApproval(decode_body(&method, params)?),
            PERMISSIONS_APPROVAL => {
                Self::PermissionsApproval(PermissionsApprovalParams::from_value(params))
            }
            REQUEST_USER_INPUT => Self::RequestUserInput(decode_body(&method, params)?),
            MCP_ELICITATION => Self::McpElicitation(ElicitationParams::from_value(params)),
            _ => Self::Other { method },
        })
    }

    /// The method name.
    pub fn method(&self) -> &str {
        match self {
            Self::CommandApproval(_) => COMMAND_APPROVAL,
            Self::FileChangeApproval(_) => FILE_CHANGE_APPROVAL,
            Self::ExecCommandApproval(_) => EXEC_COMMAND_APPROVAL,
            Self::ApplyPatchApproval(_) => APPLY_PATCH_APPROVAL,
            Self::PermissionsApproval(_) => PERMISSIONS_APPROVAL,
            Self::RequestUserInput(_) => REQUEST_USER_INPUT,
            Self::McpElicitation(_) => MCP_ELICITATION,
            Self::Other { method } => method,
        }
    }
}

/// `item/commandExecution/requestApproval` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandApprovalParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The `commandExecution` item (the tool call id).
    pub item_id: String,
    /// Why the agent asks (the model's justification).
    #[serde(default)]
    pub reason: Option<String>,
    /// The command line (absent for network-access prompts).
    #[serde(default)]
    pub command: Option<String>,
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// `item/fileChange/requestApproval` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeApprovalParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The `fileChange` item (the tool call id).
    pub item_id: String,
    /// Why the agent asks.
    #[serde(default)]
    pub reason: Option<String>,
    /// A root the agent wants write access under for the rest of the session.
    #[serde(default)]
    pub grant_root: Option<String>,
}

/// Legacy `execCommandApproval` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecCommandApprovalParams {
    /// The thread.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// The tool call.
    pub call_id: String,
    /// The command as argv.
    #[serde(default, deserialize_with = "nullable")]
    pub command: Vec<String>,
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Why the agent asks.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Legacy `applyPatchApproval` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyPatchApprovalParams {
    /// The thread.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// The tool call.
    pub call_id: String,
    /// The changes by path.
    #[serde(default, deserialize_with = "nullable")]
    pub file_changes: Map<String, Value>,
    /// Why the agent asks.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `item/permissions/requestApproval` params: Codex asks for extra sandbox permissions
/// (network access, more readable or writable roots) for an item.
///
/// Decoded tolerantly ([`Self::from_value`]): a field that is absent or not of the expected
/// type is `None`, so an odd request is still answered rather than failing the line.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionsApprovalParams {
    /// The thread.
    pub thread_id: Option<String>,
    /// The app-server's turn.
    pub turn_id: Option<String>,
    /// The item the permissions are for (the tool call id), when the request names one.
    pub item_id: Option<String>,
    /// Why the agent asks.
    pub reason: Option<String>,
    /// The requested permissions as Codex sent them (e.g. `{"network": {"enabled": true},
    /// "fileSystem": {"write": ["/tmp"]}}`); an empty object when absent or `null`.
    pub permissions: Value,
}

impl PermissionsApprovalParams {
    /// Reads the params of the request; never fails (see the type's documentation).
    pub fn from_value(params: Value) -> Self {
        let text = |key: &str| {
            params
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let permissions = match params.get("permissions") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(permissions) => permissions.clone(),
        };
        Self {
            thread_id: text("threadId"),
            turn_id: text("turnId"),
            item_id: text("itemId"),
            reason: text("reason"),
            permissions,
        }
    }
}

/// `item/tool/requestUserInput` params: the agent asks the user questions.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInputParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The tool item that asks.
    #[serde(default)]
    pub item_id: Option<String>,
    /// The questions.
    #[serde(default, deserialize_with = "nullable")]
    pub questions: Vec<UserInputQuestion>,
}

/// One question of `item/tool/requestUserInput`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInputQuestion {
    /// The question id (the answer is keyed by it).
    pub id: String,
    /// A short title.
    #[serde(default)]
    pub header: Option<String>,
    /// The question.
    #[serde(default)]
    pub question: Option<String>,
    /// The choices, when the question has some (the answer is the chosen label).
    #[serde(default, deserialize_with = "nullable")]
    pub options: Vec<UserInputOption>,
    /// Whether the user may answer something other than the choices.
    #[serde(default, deserialize_with = "nullable")]
    pub is_other: bool,
}

/// One choice of a [`UserInputQuestion`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UserInputOption {
    /// The label (also what the answer carries).
    #[serde(default, deserialize_with = "nullable")]
    pub label: String,
    /// What it means.
    #[serde(default)]
    pub description: Option<String>,
}

/// `mcpServer/elicitation/request` params: an MCP server asks the user for input, either with
/// a form (`mode: "form"`, a JSON schema of flat fields) or by sending them to a URL
/// (`mode: "url"`).
///
/// Decoded tolerantly ([`Self::from_value`]): a field that is absent or not of the expected
/// type is `None`, so an odd request is still answered rather than failing the line.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationParams {
    /// The thread.
    pub thread_id: Option<String>,
    /// The app-server's turn, when Codex could tell.
    pub turn_id: Option<String>,
    /// The MCP server that asks.
    pub server_name: Option<String>,
    /// `form`, `url`, or another mode.
    pub mode: Option<String>,
    /// What the server asks (empty when absent).
    pub message: String,
    /// The page to open (`url` mode).
    pub url: Option<String>,
    /// The form's JSON schema (`{type: "object", properties, required}`) as sent.
    pub requested_schema: Option<Value>,
}

impl ElicitationParams {
    /// Reads the params of the request; never fails (see the type's documentation).
    pub fn from_value(params: Value) -> Self {
        let text = |key: &str| {
            params
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        Self {
            thread_id: text("threadId"),
            turn_id: text("turnId"),
            server_name: text("serverName"),
            mode: text("mode"),
            message: text("message").unwrap_or_default(),
            url: text("url"),
            requested_schema: params
                .get("requestedSchema")
                .filter(|schema| schema.is_object())
                .cloned(),
        }
    }
}

/// A notification, by method.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    /// `thread/started`.
    ThreadStarted(ThreadStartedParams),
    /// `turn/started`.
    TurnStarted(TurnParams),
    /// `turn/completed`.
    TurnCompleted(TurnParams),
    /// `item/started`.
    ItemStarted(ItemParams),
    /// `item/completed`.
    ItemCompleted(ItemParams),
    /// `item/agentMessage/delta`.
    AgentMessageDelta(DeltaParams),
    /// `item/reasoning/summaryPartAdded`.
    ReasoningSummaryPartAdded(ReasoningPartParams),
    /// `item/reasoning/summaryTextDelta`.
    ReasoningSummaryTextDelta(ReasoningDeltaParams),
    /// `item/reasoning/textDelta`.
    ReasoningTextDelta(ReasoningDeltaParams),
    /// `item/commandExecution/outputDelta`.
    CommandOutputDelta(DeltaParams),
    /// `item/fileChange/outputDelta`.
    FileChangeOutputDelta(DeltaParams),
    /// `item/fileChange/patchUpdated`.
    FileChangePatchUpdated(PatchUpdatedParams),
    /// `item/mcpToolCall/progress`.
    McpToolCallProgress(McpProgressParams),
    /// `thread/tokenUsage/updated`.
    TokenUsageUpdated(TokenUsageParams),
    /// `error`.
    Error(ErrorParams),
    /// Any other method (`thread/status/changed`, `serverRequest/resolved`, `configWarning`, …).
    Other {
        /// The method.
        method: String,
        /// `params.threadId`, when present.
        thread_id: Option<String>,
    },
}

impl Notification {
    fn decode(method: String, params: Value) -> Result<Self, String> {
        let m = method.as_str();
        Ok(match m {
            "thread/started" => Self::ThreadStarted(decode_body(m, params)?),
            "turn/started" => Self::TurnStarted(decode_body(m, params)?),
            "turn/completed" => Self::TurnCompleted(decode_body(m, params)?),
            "item/started" => Self::ItemStarted(decode_body(m, params)?),
            "item/completed" => Self::ItemCompleted(decode_body(m, params)?),
            "item/agentMessage/delta" => Self::AgentMessageDelta(decode_body(m, params)?),
            "item/reasoning/summaryPartAdded" => {
                Self::ReasoningSummaryPartAdded(decode_body(m, params)?)
            }
            "item/reasoning/summaryTextDelta" => {
                Self::ReasoningSummaryTextDelta(decode_body(m, params)?)
            }
            "item/reasoning/textDelta" => Self::ReasoningTextDelta(decode_body(m, params)?),
            "item/commandExecution/outputDelta" => {
                Self::CommandOutputDelta(decode_body(m, params)?)
            }
            "item/fileChange/outputDelta" => Self::FileChangeOutputDelta(decode_body(m, params)?),
            "item/fileChange/patchUpdated" => Self::FileChangePatchUpdated(decode_body(m, params)?),
            "item/mcpToolCall/progress" => Self::McpToolCallProgress(decode_body(m, params)?),
            "thread/tokenUsage/updated" => Self::TokenUsageUpdated(decode_body(m, params)?),
            "error" => Self::Error(decode_body(m, params)?),
            _ => {
                let thread_id = params
                    .get("threadId")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Self::Other { method, thread_id }
            }
        })
    }

    /// The thread the notification is about, when it names one.
    pub fn thread_id(&self) -> Option<&str> {
        match self {
            Self::ThreadStarted(params) => Some(&params.thread.id),
            Self::TurnStarted(params) | Self::TurnCompleted(params) => params.thread_id.as_deref(),
            Self::ItemStarted(params) | Self::ItemCompleted(params) => params.thread_id.as_deref(),
            Self::AgentMessageDelta(params)
            | Self::CommandOutputDelta(params)
            | Self::FileChangeOutputDelta(params) => params.thread_id.as_deref(),
            Self::ReasoningSummaryPartAdded(params) => params.thread_id.as_deref(),
            Self::ReasoningSummaryTextDelta(params) | Self::ReasoningTextDelta(params) => {
                params.thread_id.as_deref()
            }
            Self::FileChangePatchUpdated(params) => params.thread_id.as_deref(),
            Self::McpToolCallProgress(params) => params.thread_id.as_deref(),
            Self::TokenUsageUpdated(params) => params.thread_id.as_deref(),
            Self::Error(params) => params.thread_id.as_deref(),
            Self::Other { thread_id, .. } => thread_id.as_deref(),
        }
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

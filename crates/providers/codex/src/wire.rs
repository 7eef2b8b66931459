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

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

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
    pub fn from_value(value: Value) -> Result<Self, String> {
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

/// `params` of a known method: an object (absent or `null` counts as empty).
fn decode_params<T: DeserializeOwned>(method: &str, params: Value) -> Result<T, String> {
    let params = match params {
        Value::Null => Value::Object(Map::new()),
        params => params,
    };
    decode(params).map_err(|error| format!("`{method}`: {error}"))
}

/// `null` or absent → the default value.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
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
            COMMAND_APPROVAL => Self::CommandApproval(decode_params(&method, params)?),
            FILE_CHANGE_APPROVAL => Self::FileChangeApproval(decode_params(&method, params)?),
            EXEC_COMMAND_APPROVAL => Self::ExecCommandApproval(decode_params(&method, params)?),
            APPLY_PATCH_APPROVAL => Self::ApplyPatchApproval(decode_params(&method, params)?),
            PERMISSIONS_APPROVAL => {
                Self::PermissionsApproval(PermissionsApprovalParams::from_value(params))
            }
            REQUEST_USER_INPUT => Self::RequestUserInput(decode_params(&method, params)?),
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
            "thread/started" => Self::ThreadStarted(decode_params(m, params)?),
            "turn/started" => Self::TurnStarted(decode_params(m, params)?),
            "turn/completed" => Self::TurnCompleted(decode_params(m, params)?),
            "item/started" => Self::ItemStarted(decode_params(m, params)?),
            "item/completed" => Self::ItemCompleted(decode_params(m, params)?),
            "item/agentMessage/delta" => Self::AgentMessageDelta(decode_params(m, params)?),
            "item/reasoning/summaryPartAdded" => {
                Self::ReasoningSummaryPartAdded(decode_params(m, params)?)
            }
            "item/reasoning/summaryTextDelta" => {
                Self::ReasoningSummaryTextDelta(decode_params(m, params)?)
            }
            "item/reasoning/textDelta" => Self::ReasoningTextDelta(decode_params(m, params)?),
            "item/commandExecution/outputDelta" => {
                Self::CommandOutputDelta(decode_params(m, params)?)
            }
            "item/fileChange/outputDelta" => Self::FileChangeOutputDelta(decode_params(m, params)?),
            "item/fileChange/patchUpdated" => {
                Self::FileChangePatchUpdated(decode_params(m, params)?)
            }
            "item/mcpToolCall/progress" => Self::McpToolCallProgress(decode_params(m, params)?),
            "thread/tokenUsage/updated" => Self::TokenUsageUpdated(decode_params(m, params)?),
            "error" => Self::Error(decode_params(m, params)?),
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

/// `thread/started` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ThreadStartedParams {
    /// The thread.
    pub thread: ThreadInfo,
}

/// What the host reads of a thread (`thread/started`, `thread/start` and `thread/resume`
/// responses).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadInfo {
    /// The thread id (what `thread/resume` takes).
    pub id: String,
    /// The model.
    #[serde(default)]
    pub model: Option<String>,
    /// The thread that spawned this one (a subagent's thread).
    #[serde(default)]
    pub parent_thread_id: Option<String>,
}

/// `turn/started` and `turn/completed` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The turn.
    pub turn: Turn,
}

/// An app-server turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// The app-server's turn id (never a protocol turn id).
    pub id: String,
    /// Its status.
    #[serde(default)]
    pub status: TurnStatus,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<TurnError>,
    /// Items of the turn, as raw JSON: decoded one by one with [`ThreadItem::from_value`], so
    /// one odd item never hides the turn's end.
    #[serde(default, deserialize_with = "nullable")]
    pub items: Vec<Value>,
    /// Its duration in milliseconds.
    #[serde(default)]
    pub duration_ms: Option<i64>,
    /// When it started (Unix seconds).
    #[serde(default)]
    pub started_at: Option<i64>,
    /// When it completed (Unix seconds).
    #[serde(default)]
    pub completed_at: Option<i64>,
}

/// A turn's status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TurnStatus {
    /// Still running.
    #[default]
    InProgress,
    /// Finished normally.
    Completed,
    /// Stopped by `turn/interrupt`.
    Interrupted,
    /// Ended by an error.
    Failed,
    /// A status this adapter does not know.
    Other(String),
}

impl<'de> Deserialize<'de> for TurnStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let status: Option<String> = Option::deserialize(deserializer)?;
        Ok(match status.as_deref() {
            None | Some("inProgress") => Self::InProgress,
            Some("completed") => Self::Completed,
            Some("interrupted") => Self::Interrupted,
            Some("failed") => Self::Failed,
            Some(other) => Self::Other(other.to_owned()),
        })
    }
}

/// Why a turn failed (also the `error` notification's payload).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// What went wrong.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
    /// Codex's classification of the error.
    #[serde(default)]
    pub codex_error_info: Option<Value>,
    /// More details (for example the API's response body).
    #[serde(default)]
    pub additional_details: Option<String>,
}

/// `item/started` and `item/completed` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemParams {
    /// The item.
    pub item: ThreadItem,
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
}

/// Deltas of one item (`item/agentMessage/delta`, `item/commandExecution/outputDelta`,
/// `item/fileChange/outputDelta`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeltaParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The item.
    pub item_id: String,
    /// The text to append.
    #[serde(default, deserialize_with = "nullable")]
    pub delta: String,
}

/// `item/reasoning/summaryPartAdded` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningPartParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The reasoning item.
    pub item_id: String,
    /// Which summary part.
    #[serde(default)]
    pub summary_index: i64,
}

/// `item/reasoning/summaryTextDelta` and `item/reasoning/textDelta` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningDeltaParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The reasoning item.
    pub item_id: String,
    /// The text to append.
    #[serde(default, deserialize_with = "nullable")]
    pub delta: String,
    /// Which summary part (`summaryTextDelta`).
    #[serde(default)]
    pub summary_index: Option<i64>,
    /// Which content part (`textDelta`).
    #[serde(default)]
    pub content_index: Option<i64>,
}

/// `item/fileChange/patchUpdated` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchUpdatedParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The `fileChange` item.
    pub item_id: String,
    /// The changes so far.
    #[serde(default, deserialize_with = "nullable")]
    pub changes: Vec<FileUpdateChange>,
}

/// `item/mcpToolCall/progress` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpProgressParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The `mcpToolCall` item.
    pub item_id: String,
    /// The progress message.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
}

/// `thread/tokenUsage/updated` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The counts.
    pub token_usage: ThreadTokenUsage,
}

/// Token counts of a thread.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    /// The whole thread so far.
    #[serde(default, deserialize_with = "nullable")]
    pub total: TokenBreakdown,
    /// The last model call.
    #[serde(default, deserialize_with = "nullable")]
    pub last: TokenBreakdown,
    /// The model's context window.
    #[serde(default)]
    pub model_context_window: Option<i64>,
}

/// One set of token counts.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenBreakdown {
    /// Input tokens.
    #[serde(default, deserialize_with = "nullable")]
    pub input_tokens: u64,
    /// Input tokens read from the cache.
    #[serde(default, deserialize_with = "nullable")]
    pub cached_input_tokens: u64,
    /// Output tokens.
    #[serde(default, deserialize_with = "nullable")]
    pub output_tokens: u64,
    /// Output tokens spent reasoning.
    #[serde(default, deserialize_with = "nullable")]
    pub reasoning_output_tokens: u64,
}

/// `error` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorParams {
    /// The thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The app-server's turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// What went wrong.
    #[serde(default, deserialize_with = "nullable")]
    pub error: TurnError,
    /// Codex retries on its own: nothing is lost yet.
    #[serde(default, deserialize_with = "nullable")]
    pub will_retry: bool,
}

/// An item of a turn, by `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum ThreadItem {
    /// `userMessage`: the host's own input.
    UserMessage {
        /// The item id.
        id: String,
    },
    /// `agentMessage`.
    AgentMessage(AgentMessageItem),
    /// `reasoning`.
    Reasoning(ReasoningItem),
    /// `commandExecution`.
    CommandExecution(CommandExecutionItem),
    /// `fileChange`.
    FileChange(FileChangeItem),
    /// `mcpToolCall`.
    McpToolCall(McpToolCallItem),
    /// `dynamicToolCall`.
    DynamicToolCall(DynamicToolCallItem),
    /// `collabAgentToolCall`.
    CollabAgentToolCall(CollabAgentToolCallItem),
    /// `webSearch`.
    WebSearch(WebSearchItem),
    /// `imageGeneration`.
    ImageGeneration(ImageGenerationItem),
    /// `contextCompaction`.
    ContextCompaction {
        /// The item id.
        id: String,
    },
    /// An item type this adapter does not know (`plan`, `hookPrompt`, `imageView`, …).
    Other {
        /// The item's `type`.
        kind: String,
        /// The item's `id`, if any.
        id: Option<String>,
    },
}

#[derive(Deserialize)]
struct IdOnly {
    id: String,
}

impl ThreadItem {
    /// Decodes one item.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let kind = match value.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            Some(other) => return Err(format!("item `type` is not a string: {other}")),
            None => return Err("an item without `type`".to_owned()),
        };
        let decoded = match kind.as_str() {
            "userMessage" => decode::<IdOnly>(value).map(|item| Self::UserMessage { id: item.id }),
            "agentMessage" => decode(value).map(Self::AgentMessage),
            "reasoning" => decode(value).map(Self::Reasoning),
            "commandExecution" => decode(value).map(Self::CommandExecution),
            "fileChange" => decode(value).map(Self::FileChange),
            "mcpToolCall" => decode(value).map(Self::McpToolCall),
            "dynamicToolCall" => decode(value).map(Self::DynamicToolCall),
            "collabAgentToolCall" => decode(value).map(Self::CollabAgentToolCall),
            "webSearch" => decode(value).map(Self::WebSearch),
            "imageGeneration" => decode(value).map(Self::ImageGeneration),
            "contextCompaction" => {
                decode::<IdOnly>(value).map(|item| Self::ContextCompaction { id: item.id })
            }
            _ => {
                let id = value.get("id").and_then(Value::as_str).map(str::to_owned);
                return Ok(Self::Other { kind, id });
            }
        };
        decoded.map_err(|error| format!("item `{kind}`: {error}"))
    }

    /// The item id.
    pub fn id(&self) -> Option<&str> {
        match self {
            Self::UserMessage { id } | Self::ContextCompaction { id } => Some(id),
            Self::AgentMessage(item) => Some(&item.id),
            Self::Reasoning(item) => Some(&item.id),
            Self::CommandExecution(item) => Some(&item.id),
            Self::FileChange(item) => Some(&item.id),
            Self::McpToolCall(item) => Some(&item.id),
            Self::DynamicToolCall(item) => Some(&item.id),
            Self::CollabAgentToolCall(item) => Some(&item.id),
            Self::WebSearch(item) => Some(&item.id),
            Self::ImageGeneration(item) => Some(&item.id),
            Self::Other { id, .. } => id.as_deref(),
        }
    }
}

impl<'de> Deserialize<'de> for ThreadItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::from_value(Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

/// An item's status (`inProgress`, `completed`, `failed`, `declined`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ItemStatus {
    /// Still running.
    #[default]
    InProgress,
    /// Finished.
    Completed,
    /// Failed.
    Failed,
    /// The user (or a policy) declined it.
    Declined,
    /// A status this adapter does not know.
    Other(String),
}

impl ItemStatus {
    /// Maps Codex's spelling (`inProgress` in the app-server, `in_progress` in `exec --json`).
    pub fn from_name(name: &str) -> Self {
        match name {
            "inProgress" | "in_progress" => Self::InProgress,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "declined" => Self::Declined,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl<'de> Deserialize<'de> for ItemStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let status: Option<String> = Option::deserialize(deserializer)?;
        Ok(status.as_deref().map_or(Self::InProgress, Self::from_name))
    }
}

/// `agentMessage`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AgentMessageItem {
    /// The item id.
    pub id: String,
    /// The full text (empty when the item starts).
    #[serde(default, deserialize_with = "nullable")]
    pub text: String,
    /// `commentary` for a preamble, `null` for a final answer.
    #[serde(default)]
    pub phase: Option<String>,
}

/// `reasoning`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReasoningItem {
    /// The item id.
    pub id: String,
    /// Summary parts.
    #[serde(default, deserialize_with = "nullable")]
    pub summary: Vec<String>,
    /// Raw reasoning parts.
    #[serde(default, deserialize_with = "nullable")]
    pub content: Vec<String>,
}

/// `commandExecution`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionItem {
    /// The item id (the model's call id).
    pub id: String,
    /// The command line, usually wrapped (`/bin/bash -lc '<cmd>'`).
    #[serde(default, deserialize_with = "nullable")]
    pub command: String,
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Its status.
    #[serde(default)]
    pub status: ItemStatus,
    /// stdout and stderr together.
    #[serde(default)]
    pub aggregated_output: Option<String>,
    /// The exit code.
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// How long it ran.
    #[serde(default)]
    pub duration_ms: Option<i64>,
}

/// `fileChange`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FileChangeItem {
    /// The item id.
    pub id: String,
    /// The changes.
    #[serde(default, deserialize_with = "nullable")]
    pub changes: Vec<FileUpdateChange>,
    /// Its status.
    #[serde(default)]
    pub status: ItemStatus,
}

/// One file of a `fileChange`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FileUpdateChange {
    /// The file.
    pub path: String,
    /// What happens to it.
    #[serde(default, deserialize_with = "nullable")]
    pub kind: PatchChangeKind,
    /// The unified diff.
    #[serde(default, deserialize_with = "nullable")]
    pub diff: String,
}

/// `{type: add | delete | update, move_path?}`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct PatchChangeKind {
    /// `add`, `delete` or `update`.
    #[serde(rename = "type", default, deserialize_with = "nullable")]
    pub kind: String,
    /// The new path of a moved file.
    #[serde(default, alias = "movePath")]
    pub move_path: Option<String>,
}

/// `mcpToolCall`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct McpToolCallItem {
    /// The item id.
    pub id: String,
    /// The MCP server.
    #[serde(default, deserialize_with = "nullable")]
    pub server: String,
    /// The tool.
    #[serde(default, deserialize_with = "nullable")]
    pub tool: String,
    /// Its status.
    #[serde(default)]
    pub status: ItemStatus,
    /// The arguments.
    #[serde(default)]
    pub arguments: Value,
    /// The MCP result (`{content, structuredContent}`).
    #[serde(default)]
    pub result: Option<Value>,
    /// The error (`{message}`).
    #[serde(default)]
    pub error: Option<Value>,
}

/// `dynamicToolCall` (a tool the client provides).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallItem {
    /// The item id.
    pub id: String,
    /// The tool's namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The tool.
    #[serde(default, deserialize_with = "nullable")]
    pub tool: String,
    /// The arguments.
    #[serde(default)]
    pub arguments: Value,
    /// Its status.
    #[serde(default)]
    pub status: ItemStatus,
    /// The output (`{type: inputText, text}` / `{type: inputImage, imageUrl}`).
    #[serde(default, deserialize_with = "nullable")]
    pub content_items: Vec<Value>,
    /// Whether it succeeded.
    #[serde(default)]
    pub success: Option<bool>,
}

/// `collabAgentToolCall` (Codex's own subagent tools).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CollabAgentToolCallItem {
    /// The item id.
    pub id: String,
    /// `spawnAgent`, `sendInput`, `resumeAgent`, `wait` or `closeAgent`.
    #[serde(default, deserialize_with = "nullable")]
    pub tool: String,
    /// Its status.
    #[serde(default)]
    pub status: ItemStatus,
    /// The prompt sent to the agent.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The agents' last known states, by thread id.
    #[serde(default, deserialize_with = "nullable")]
    pub agents_states: Map<String, Value>,
}

/// `webSearch`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WebSearchItem {
    /// The item id.
    pub id: String,
    /// The query (may be empty when the item starts).
    #[serde(default, deserialize_with = "nullable")]
    pub query: String,
}

/// `imageGeneration`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageGenerationItem {
    /// The item id.
    pub id: String,
    /// Its status (free text).
    #[serde(default, deserialize_with = "nullable")]
    pub status: String,
    /// The prompt the model used.
    #[serde(default)]
    pub revised_prompt: Option<String>,
    /// The image, base64-encoded PNG.
    #[serde(default, deserialize_with = "nullable")]
    pub result: String,
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

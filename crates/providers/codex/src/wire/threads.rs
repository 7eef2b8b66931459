//! The thread, turn and item shapes of the app-server protocol: `thread/*` and `turn/*` params and the `ThreadItem`s a turn is made of.

use super::*;
use agenthost_provider_api::Undecodable;

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
    pub fn from_value(value: Value) -> Result<Self, Undecodable> {
        Self::decode_value(value).map_err(Undecodable)
    }

    fn decode_value(value: Value) -> Result<Self, String> {
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

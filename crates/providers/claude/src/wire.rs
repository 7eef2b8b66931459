//! The stream-json wire of Claude Code: one JSON object per line.
//!
//! CLI → host lines are [`CliLine`]s, discriminated on `type` and then `subtype`. The CLI adds
//! fields and line types between versions and does not keep key order, so every field the host
//! does not need is ignored, optional ones default, and an unknown `type` or `subtype` decodes to
//! an `Other` variant that keeps its name — never an error. Host → CLI messages are the
//! `Serialize` types at the end; [`crate::control`] builds the lines.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// One line the CLI printed on stdout.
#[derive(Debug, Clone, PartialEq)]
pub enum CliLine {
    /// `type: system`, by subtype.
    System(SystemLine),
    /// `type: stream_event`: a raw Anthropic streaming event (with `--include-partial-messages`).
    StreamEvent(StreamEventLine),
    /// `type: assistant`: one content block of an assistant message.
    Assistant(AssistantLine),
    /// `type: user`: tool results, subagent prompts, replayed user messages.
    User(UserLine),
    /// `type: control_request`: the CLI asks the host (permission, hooks, …).
    ControlRequest(ControlRequestLine),
    /// `type: control_response`: the answer to a host request (or an echo of a host answer).
    ControlResponse(ControlResponseLine),
    /// `type: control_cancel_request`: the CLI withdrew one of its requests.
    ControlCancelRequest(ControlCancelRequestLine),
    /// `type: result`: the end of one user message's processing.
    Result(ResultLine),
    /// A line type this adapter does not know.
    Other {
        /// The line's `type`.
        kind: String,
    },
}

/// Decodes `value[tag]`-discriminated data: `known(tag)` picks the decoder, anything else is
/// `other(tag)`.
fn by_tag<E: serde::de::Error, T>(
    value: &Value,
    tag: &str,
    known: impl FnOnce(&str) -> Option<Result<T, serde_json::Error>>,
    other: impl FnOnce(String) -> T,
) -> Result<T, E> {
    let name = match value.get(tag) {
        Some(Value::String(name)) => name.clone(),
        Some(other) => return Err(E::custom(format!("`{tag}` is not a string: {other}"))),
        None => return Err(E::custom(format!("missing `{tag}`"))),
    };
    match known(&name) {
        Some(decoded) => decoded.map_err(|error| E::custom(format!("`{name}`: {error}"))),
        None => Ok(other(name)),
    }
}

fn decode<T: DeserializeOwned>(value: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(value)
}

impl<'de> Deserialize<'de> for CliLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if !value.is_object() {
            return Err(D::Error::custom("a line is a JSON object"));
        }
        by_tag(
            &value,
            "type",
            |name| {
                let value = value.clone();
                Some(match name {
                    "system" => decode(value).map(CliLine::System),
                    "stream_event" => decode(value).map(CliLine::StreamEvent),
                    "assistant" => decode(value).map(CliLine::Assistant),
                    "user" => decode(value).map(CliLine::User),
                    "control_request" => decode(value).map(CliLine::ControlRequest),
                    "control_response" => decode(value).map(CliLine::ControlResponse),
                    "control_cancel_request" => decode(value).map(CliLine::ControlCancelRequest),
                    "result" => decode(value).map(CliLine::Result),
                    _ => return None,
                })
            },
            |kind| CliLine::Other { kind },
        )
    }
}

/// A `system` line.
#[derive(Debug, Clone, PartialEq)]
pub enum SystemLine {
    /// `system/init`: the session is ready.
    Init(SystemInit),
    /// `system/status`: e.g. `requesting` before each model call.
    Status {
        /// The status, if any.
        status: Option<String>,
    },
    /// `system/permission_denied`: a tool was denied without anyone being asked.
    PermissionDenied(PermissionDenied),
    /// `system/task_started`: a background subagent started.
    TaskStarted(TaskEvent),
    /// `system/task_notification`: a background subagent changed status.
    TaskNotification(TaskEvent),
    /// Any other subtype (`thinking_tokens`, hooks, compaction, …).
    Other {
        /// The line's `subtype`.
        subtype: String,
    },
}

#[derive(Deserialize)]
struct StatusFields {
    #[serde(default)]
    status: Option<String>,
}

impl<'de> Deserialize<'de> for SystemLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        by_tag(
            &value,
            "subtype",
            |name| {
                let value = value.clone();
                Some(match name {
                    "init" => decode(value).map(SystemLine::Init),
                    "status" => decode::<StatusFields>(value).map(|fields| SystemLine::Status {
                        status: fields.status,
                    }),
                    "permission_denied" => decode(value).map(SystemLine::PermissionDenied),
                    "task_started" => decode(value).map(SystemLine::TaskStarted),
                    "task_notification" => decode(value).map(SystemLine::TaskNotification),
                    _ => return None,
                })
            },
            |subtype| SystemLine::Other { subtype },
        )
    }
}

/// `system/init`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SystemInit {
    /// The CLI's session id (what `--resume` takes).
    pub session_id: String,
    /// The default model.
    #[serde(default)]
    pub model: Option<String>,
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The permission mode.
    #[serde(default, rename = "permissionMode")]
    pub permission_mode: Option<String>,
    /// The CLI version.
    #[serde(default)]
    pub claude_code_version: Option<String>,
}

/// `system/permission_denied`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PermissionDenied {
    /// The tool.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The tool call.
    pub tool_use_id: String,
    /// Why.
    #[serde(default)]
    pub message: Option<String>,
}

/// `system/task_started` and `system/task_notification` (background subagents).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TaskEvent {
    /// The spawning tool call.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// The task's id.
    #[serde(default)]
    pub task_id: Option<String>,
    /// `completed`, `failed`, `stopped`, … (notifications).
    #[serde(default)]
    pub status: Option<String>,
}

/// A `stream_event` line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StreamEventLine {
    /// The raw streaming event.
    pub event: StreamEvent,
    /// The spawning tool call when a subagent produced it.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    /// The API message the event belongs to.
    #[serde(default)]
    pub api_message_id: Option<String>,
}

/// A raw Anthropic streaming event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A model call's message begins.
    MessageStart {
        /// The message (its id).
        message: StreamMessage,
    },
    /// A content block begins.
    ContentBlockStart {
        /// The block's index in the message.
        index: u64,
        /// The block (empty text, empty thinking, or a tool_use without input).
        content_block: ContentBlock,
    },
    /// A piece of a content block.
    ContentBlockDelta {
        /// The block's index in the message.
        index: u64,
        /// The piece.
        delta: BlockDelta,
    },
    /// A content block ends.
    ContentBlockStop {
        /// The block's index in the message.
        index: u64,
    },
    /// Message-level updates (stop reason, usage).
    MessageDelta {
        /// The message's usage so far (`output_tokens` is the count up to here).
        #[serde(default)]
        usage: Option<ApiUsage>,
    },
    /// The message ends.
    MessageStop,
    /// Any other event (`ping`, `error`, …).
    #[serde(other)]
    Other,
}

/// The message of a `message_start` event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StreamMessage {
    /// The API message id.
    pub id: String,
    /// The model.
    #[serde(default)]
    pub model: Option<String>,
    /// The call's usage at its start (input and cache counts; output so far).
    #[serde(default)]
    pub usage: Option<ApiUsage>,
}

/// The usage of one model call, as the Anthropic API reports it: `input_tokens` leaves out the
/// tokens read from and written to the prompt cache. Every field may be missing (a
/// `message_delta` carries only the counts that changed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct ApiUsage {
    /// Input tokens not read from or written to the cache.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// Input tokens read from the cache.
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    /// Input tokens written to the cache.
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
}

/// A `content_block_delta` payload.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockDelta {
    /// Text to append.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning to append.
    ThinkingDelta {
        /// The text.
        thinking: String,
    },
    /// A piece of a tool call's input JSON.
    InputJsonDelta {
        /// The piece.
        partial_json: String,
    },
    /// The thinking block's signature (not shown).
    SignatureDelta,
    /// Any other delta (citations, …).
    #[serde(other)]
    Other,
}

/// A content block of an assistant or user message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        #[serde(default)]
        text: String,
    },
    /// Reasoning.
    Thinking {
        /// The text.
        #[serde(default)]
        thinking: String,
    },
    /// A tool call.
    ToolUse {
        /// The tool call id.
        id: String,
        /// The tool.
        name: String,
        /// Its input.
        #[serde(default)]
        input: Value,
    },
    /// A tool's result (in user messages).
    ToolResult {
        /// The tool call.
        tool_use_id: String,
        /// A string or an array of content items.
        #[serde(default)]
        content: Value,
        /// Whether the tool failed (or was denied).
        #[serde(default)]
        is_error: Option<bool>,
    },
    /// Any other block (images, redacted thinking, server tools, …).
    #[serde(other)]
    Other,
}

/// An `assistant` line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AssistantLine {
    /// The message, with (usually exactly) one content block.
    pub message: AssistantMessage,
    /// The spawning tool call when a subagent produced it.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    /// A synthetic error line: not rendered, remembered for the `result`.
    #[serde(default)]
    pub is_api_error_message: bool,
    /// The HTTP status of an API error.
    #[serde(default)]
    pub api_error_status: Option<Value>,
    /// The API's error type.
    #[serde(default)]
    pub api_error_type: Option<String>,
}

/// The message of an `assistant` line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AssistantMessage {
    /// The API message id (shared by the blocks of one message).
    #[serde(default)]
    pub id: Option<String>,
    /// The model (`<synthetic>` for error lines).
    #[serde(default)]
    pub model: Option<String>,
    /// The content blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// The call's usage when the line was written (its output count may be partial).
    #[serde(default)]
    pub usage: Option<ApiUsage>,
}

/// A `user` line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UserLine {
    /// The message.
    pub message: UserMessage,
    /// The spawning tool call when it belongs to a subagent.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    /// An echo of a consumed user message (`--replay-user-messages`).
    #[serde(default, rename = "isReplay")]
    pub is_replay: bool,
    /// The line's uuid (the host's uuid for replays of its own messages).
    #[serde(default)]
    pub uuid: Option<String>,
    /// The tool's own result: an object on success, a string on denial.
    #[serde(default)]
    pub tool_use_result: Option<ToolUseResult>,
    /// How each tool call's permission was decided.
    #[serde(default)]
    pub tool_result_meta: Vec<ToolResultMeta>,
}

/// The message of a `user` line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UserMessage {
    /// A plain text or content blocks.
    #[serde(default)]
    pub content: UserContent,
}

/// The content of a user message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    /// Plain text.
    Text(String),
    /// Content blocks (tool results, text).
    Blocks(Vec<ContentBlock>),
}

impl Default for UserContent {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

/// `tool_use_result`: an object on success, a string (`"Error: …"`) on denial.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ToolUseResult {
    /// The tool's structured result.
    Object(Map<String, Value>),
    /// An error text.
    Text(String),
    /// Anything else.
    Other(Value),
}

/// One entry of `tool_result_meta`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolResultMeta {
    /// The tool call.
    pub id: String,
    /// How its permission was decided.
    #[serde(default)]
    pub permission_decision: Option<PermissionDecisionMeta>,
    /// Set when the tool did not run (`user-rejected`, `permission-rule`, …).
    #[serde(default)]
    pub non_execution_kind: Option<String>,
}

/// `permission_decision` of a tool result.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PermissionDecisionMeta {
    /// `accept` or `reject`.
    #[serde(default)]
    pub decision: Option<String>,
    /// `config`, `user_temporary`, `user_reject`, …
    #[serde(default)]
    pub source: Option<String>,
}

/// A `control_request` line from the CLI.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ControlRequestLine {
    /// The id the answer must carry.
    pub request_id: String,
    /// The request.
    pub request: ControlRequest,
}

/// The body of a CLI control request, by subtype.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlRequest {
    /// The CLI asks whether it may run a tool.
    CanUseTool(CanUseTool),
    /// Any other request (hooks, MCP messages, …): answered with an error.
    Other {
        /// The request's `subtype`.
        subtype: String,
    },
}

impl<'de> Deserialize<'de> for ControlRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        by_tag(
            &value,
            "subtype",
            |name| match name {
                "can_use_tool" => Some(decode(value.clone()).map(ControlRequest::CanUseTool)),
                _ => None,
            },
            |subtype| ControlRequest::Other { subtype },
        )
    }
}

/// `can_use_tool`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CanUseTool {
    /// The tool.
    pub tool_name: String,
    /// The tool's display name.
    #[serde(default)]
    pub display_name: Option<String>,
    /// The tool's input.
    #[serde(default)]
    pub input: Value,
    /// What the call does, in the agent's words.
    #[serde(default)]
    pub description: Option<String>,
    /// The path that needs the permission.
    #[serde(default)]
    pub blocked_path: Option<String>,
    /// The tool call.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// The subagent asking, if any.
    #[serde(default)]
    pub agent_id: Option<String>,
}

/// A `control_response` line from the CLI.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ControlResponseLine {
    /// The response.
    pub response: ControlResponseBody,
}

/// A `control_cancel_request` line: the CLI no longer needs an answer to `request_id`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ControlCancelRequestLine {
    /// The withdrawn request.
    pub request_id: String,
}

/// The body of a control response (either direction).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlResponseBody {
    /// `success` or `error`.
    pub subtype: String,
    /// The request answered.
    pub request_id: String,
    /// The payload of a success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// The text of an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A `result` line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ResultLine {
    /// `success` (even for API errors), `error_during_execution`, `error_max_turns`, …
    #[serde(default)]
    pub subtype: String,
    /// Whether the run failed.
    #[serde(default)]
    pub is_error: bool,
    /// The final text (or the error text).
    #[serde(default)]
    pub result: Option<String>,
    /// `completed`, `api_error`, …
    #[serde(default)]
    pub terminal_reason: Option<String>,
    /// The errors of an `error_during_execution` run.
    #[serde(default)]
    pub errors: Vec<Value>,
    /// Wall-clock duration.
    #[serde(default)]
    pub duration_ms: Option<i64>,
    /// Token usage.
    #[serde(default)]
    pub usage: Option<ApiUsage>,
    /// Usage per model.
    #[serde(default, rename = "modelUsage")]
    pub model_usage: Option<Map<String, Value>>,
    /// The cost (not used for accounting).
    #[serde(default)]
    pub total_cost_usd: Option<f64>,
    /// The HTTP status of an API error.
    #[serde(default)]
    pub api_error_status: Option<Value>,
    /// The API's error type.
    #[serde(default)]
    pub api_error_type: Option<String>,
    /// The CLI's session id.
    #[serde(default)]
    pub session_id: Option<String>,
}

// ─── Host → CLI ─────────────────────────────────────────────────────────────────────────────

/// A control request the host sends (`initialize`, `interrupt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostControlRequest {
    /// Always `control_request`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The id the answer will carry.
    pub request_id: String,
    /// `{"subtype": …, …}`.
    pub request: Value,
}

/// A user message the host sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostUserMessage {
    /// Always `user`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `{"role": "user", "content": <string or blocks>}`.
    pub message: Value,
    /// Always `null` for the host's messages.
    pub parent_tool_use_id: Option<String>,
    /// Empty: the CLI fills in its own.
    pub session_id: String,
    /// The protocol turn id, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

/// A control response the host sends (a permission answer or an error).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostControlResponse {
    /// Always `control_response`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The response.
    pub response: ControlResponseBody,
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

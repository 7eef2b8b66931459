//! The `data` of each session event Copilot sends: session start and context, messages, tools, permissions, usage, subagents.

use super::*;

/// `session.start` / `session.resume` data.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStartData {
    /// The Copilot session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Where the session runs.
    #[serde(default, deserialize_with = "nullable")]
    pub context: SessionContext,
}

/// The working context of a session.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionContext {
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// `session.title_changed` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitleChangedData {
    /// The new title.
    #[serde(default, deserialize_with = "nullable")]
    pub title: String,
}

/// `user.message` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessageData {
    /// The message as sent.
    #[serde(default, deserialize_with = "nullable")]
    pub content: String,
    /// The id `session.send` answered with.
    #[serde(default)]
    pub message_id: Option<String>,
    /// `idle`, `steering` or `queued`.
    #[serde(default)]
    pub delivery: Option<String>,
    /// Who sent it, when not the user (a system notification, a schedule, …).
    #[serde(default)]
    pub source: Option<String>,
}

/// `assistant.message_delta` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageDeltaData {
    /// The message the delta belongs to.
    pub message_id: String,
    /// The text to append.
    #[serde(default, deserialize_with = "nullable")]
    pub delta_content: String,
    /// Deprecated subagent routing.
    #[serde(default)]
    pub parent_tool_call_id: Option<String>,
}

/// `assistant.message` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessageData {
    /// The message.
    pub message_id: String,
    /// Its whole text.
    #[serde(default, deserialize_with = "nullable")]
    pub content: String,
    /// The tool calls the message asks for.
    #[serde(default, deserialize_with = "nullable")]
    pub tool_requests: Vec<ToolRequest>,
    /// Deprecated subagent routing.
    #[serde(default)]
    pub parent_tool_call_id: Option<String>,
}

/// One tool call of `assistant.message`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequest {
    /// The tool call.
    pub tool_call_id: String,
    /// The tool.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// What this call does, in a few words.
    #[serde(default)]
    pub intention_summary: Option<String>,
    /// The tool's title ("Running command").
    #[serde(default)]
    pub tool_title: Option<String>,
    /// The MCP server, for MCP tools.
    #[serde(default)]
    pub mcp_server_name: Option<String>,
}

/// `assistant.reasoning_delta` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningDeltaData {
    /// The reasoning block.
    pub reasoning_id: String,
    /// The text to append.
    #[serde(default, deserialize_with = "nullable")]
    pub delta_content: String,
}

/// `assistant.reasoning` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningData {
    /// The reasoning block.
    pub reasoning_id: String,
    /// Its whole text.
    #[serde(default, deserialize_with = "nullable")]
    pub content: String,
}

/// `assistant.tool_call_delta` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallDeltaData {
    /// The tool call.
    pub tool_call_id: String,
    /// The tool.
    #[serde(default, deserialize_with = "nullable")]
    pub tool_name: String,
    /// `function` or `custom` (grammar-based input that is not JSON).
    #[serde(default)]
    pub tool_type: Option<String>,
    /// A piece of the arguments.
    #[serde(default, deserialize_with = "nullable")]
    pub input_delta: String,
}

/// `tool.execution_start` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionStartData {
    /// The tool call.
    pub tool_call_id: String,
    /// The tool.
    #[serde(default, deserialize_with = "nullable")]
    pub tool_name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// The tool's title ("Running command").
    #[serde(default)]
    pub tool_title: Option<String>,
    /// The MCP server, for MCP tools.
    #[serde(default)]
    pub mcp_server_name: Option<String>,
    /// The tool's name on its MCP server.
    #[serde(default)]
    pub mcp_tool_name: Option<String>,
    /// Deprecated subagent routing.
    #[serde(default)]
    pub parent_tool_call_id: Option<String>,
}

/// `tool.execution_partial_result` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPartialResultData {
    /// The tool call.
    pub tool_call_id: String,
    /// The next piece of output.
    #[serde(default, deserialize_with = "nullable")]
    pub partial_output: String,
}

/// `tool.execution_progress` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolProgressData {
    /// The tool call.
    pub tool_call_id: String,
    /// What the tool is doing.
    #[serde(default, deserialize_with = "nullable")]
    pub progress_message: String,
}

/// `tool.execution_complete` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionCompleteData {
    /// The tool call.
    pub tool_call_id: String,
    /// Whether it succeeded.
    #[serde(default, deserialize_with = "nullable")]
    pub success: bool,
    /// The result of a successful call.
    #[serde(default)]
    pub result: Option<ToolResult>,
    /// Why it failed (`code: "denied"` for a declined call).
    #[serde(default)]
    pub error: Option<ToolFailure>,
    /// Exit data of shell tools.
    #[serde(default)]
    pub shell_execution: Option<ShellExecution>,
    /// Deprecated subagent routing.
    #[serde(default)]
    pub parent_tool_call_id: Option<String>,
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// What the model sees (possibly shortened).
    #[serde(default, deserialize_with = "nullable")]
    pub content: String,
    /// The full result for people; falls back to `content`.
    #[serde(default)]
    pub detailed_content: Option<String>,
}

/// A tool call's error.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFailure {
    /// What went wrong.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
    /// A machine-readable code (`denied`, …).
    #[serde(default)]
    pub code: Option<String>,
}

/// Shell exit data.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellExecution {
    /// The exit code.
    #[serde(default, deserialize_with = "opt_int")]
    pub exit_code: Option<i64>,
}

/// `permission.requested` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequestedData {
    /// The request id the answer names.
    pub request_id: String,
    /// What is asked.
    pub permission_request: PermissionRequest,
    /// A hook already answered it: no client action is needed.
    #[serde(default, deserialize_with = "nullable")]
    pub resolved_by_hook: bool,
}

/// What a permission request asks, by `kind` (`shell`, `write`, `read`, `mcp`, `url`,
/// `memory`, `custom-tool`, `hook`); only the fields the host shows.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    /// The kind.
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
    /// The tool call that asks; a request without one is rejected.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Why, in the agent's words.
    #[serde(default)]
    pub intention: Option<String>,
    /// `shell`: the command line.
    #[serde(default)]
    pub full_command_text: Option<String>,
    /// `write`: the file.
    #[serde(default)]
    pub file_name: Option<String>,
    /// `write`: the unified diff.
    #[serde(default)]
    pub diff: Option<String>,
    /// `write`: the whole new file, for a file the call creates.
    #[serde(default)]
    pub new_file_contents: Option<String>,
    /// `read`: the file or directory.
    #[serde(default)]
    pub path: Option<String>,
    /// `url`: the URL.
    #[serde(default)]
    pub url: Option<String>,
    /// `mcp`: the server.
    #[serde(default)]
    pub server_name: Option<String>,
    /// `mcp`, `custom-tool`, `hook`: the tool.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// `mcp`: the tool's title.
    #[serde(default)]
    pub tool_title: Option<String>,
    /// `mcp`, `custom-tool`: the arguments.
    #[serde(default)]
    pub args: Option<Value>,
    /// `hook`: the gated call's arguments.
    #[serde(default)]
    pub tool_args: Option<Value>,
    /// `hook`: why the hook asks.
    #[serde(default)]
    pub hook_message: Option<String>,
    /// `memory`: the fact to store.
    #[serde(default)]
    pub fact: Option<String>,
}

/// `permission.completed` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionCompletedData {
    /// The request.
    pub request_id: String,
    /// The tool call, when the CLI names it.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// How it was answered.
    #[serde(default, deserialize_with = "nullable")]
    pub result: PermissionOutcome,
}

/// How a permission request was answered.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOutcome {
    /// `approved`, `denied-interactively-by-user`, …
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
    /// The user's feedback on a rejection.
    #[serde(default)]
    pub feedback: Option<String>,
}

/// `assistant.usage` data (one model call).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageData {
    /// The model.
    #[serde(default)]
    pub model: Option<String>,
    /// Input tokens.
    #[serde(default, deserialize_with = "count")]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default, deserialize_with = "count")]
    pub output_tokens: u64,
    /// Tokens read from the prompt cache.
    #[serde(default, deserialize_with = "opt_count")]
    pub cache_read_tokens: Option<u64>,
    /// Tokens written to the prompt cache.
    #[serde(default, deserialize_with = "opt_count")]
    pub cache_write_tokens: Option<u64>,
    /// Reasoning tokens.
    #[serde(default, deserialize_with = "opt_count")]
    pub reasoning_tokens: Option<u64>,
    /// The billing multiplier.
    #[serde(default)]
    pub cost: Option<Value>,
    /// The call's duration in milliseconds.
    #[serde(default)]
    pub duration: Option<Value>,
    /// The provider's id of the call.
    #[serde(default)]
    pub api_call_id: Option<String>,
    /// Deprecated subagent routing.
    #[serde(default)]
    pub parent_tool_call_id: Option<String>,
}

/// `subagent.started` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentStartedData {
    /// The tool call that spawned the subagent.
    pub tool_call_id: String,
    /// Its internal name.
    #[serde(default, deserialize_with = "nullable")]
    pub agent_name: String,
    /// Its human-readable name.
    #[serde(default, deserialize_with = "nullable")]
    pub agent_display_name: String,
    /// What it does in general.
    #[serde(default)]
    pub agent_description: Option<String>,
}

/// `subagent.completed` / `subagent.failed` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentEndedData {
    /// The tool call that spawned the subagent.
    pub tool_call_id: String,
    /// Why it failed (`subagent.failed`).
    #[serde(default)]
    pub error: Option<String>,
}

/// `skill.invoked` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillInvokedData {
    /// The skill.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// Its `SKILL.md`.
    #[serde(default)]
    pub path: Option<String>,
    /// What it says (injected into the conversation).
    #[serde(default)]
    pub content: Option<String>,
}

/// `session.error` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionErrorData {
    /// Copilot's category (`query`, …).
    #[serde(default)]
    pub error_type: Option<String>,
    /// What went wrong.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
    /// The model API's HTTP status.
    #[serde(default, deserialize_with = "opt_int")]
    pub status_code: Option<i64>,
    /// The model API's error code.
    #[serde(default)]
    pub error_code: Option<String>,
    /// A stack trace.
    #[serde(default)]
    pub stack: Option<String>,
}

/// `session.idle` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionIdleData {
    /// The session mode (`interactive`, …).
    #[serde(default)]
    pub mode: Option<String>,
    /// The turn was aborted.
    #[serde(default, deserialize_with = "nullable")]
    pub aborted: bool,
}

/// `model.call_finished` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCallFinishedData {
    /// The model round (`"0"`, `"1"`, …).
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The interaction (one user message).
    #[serde(default)]
    pub interaction_id: Option<String>,
    /// `success`, `error`, …
    #[serde(default)]
    pub outcome: Option<String>,
}

/// `model.turn_started` data: the model of the round, as Copilot describes it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelTurnStartedData {
    /// The model's description (`{id, name, capabilities: {supports, limits}}`).
    #[serde(default)]
    pub model_info: Option<ModelInfoData>,
}

/// A model's description in Copilot's events and `models.list`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ModelInfoData {
    /// What the model can do and take.
    #[serde(default)]
    pub capabilities: Option<ModelCapabilitiesData>,
}

/// `capabilities` of a model.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ModelCapabilitiesData {
    /// Token limits; values that are not non-negative integers are ignored.
    #[serde(default)]
    pub limits: Option<serde_json::Map<String, Value>>,
}

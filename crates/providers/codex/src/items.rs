//! How Codex tool items look in a chat: one [`ToolCall`] per item, built
//! from the app-server's camelCase items or `exec --json`'s snake_case ones, and the
//! [`NormEvent`]s for its start, permission, live output and completion.

use agenthost_protocol::PermissionKind;
use agenthost_protocol::common::JsonObject;
use agenthost_protocol::state::{
    ToolResultContent, ToolResultEmbeddedResourceContent, ToolResultTextContent,
};
use agenthost_provider_api::{NormEvent, Scope, ToolError};
use base64::Engine as _;
use serde_json::{Map, Value};

use crate::shell;
use crate::wire::{FileUpdateChange, ItemStatus, ThreadItem};

mod events;

/// The tool name of a shell command.
pub const SHELL_TOOL: &str = "shell";
const SHELL_DISPLAY: &str = "Run shell command";
/// The tool name of a file change.
pub const FILE_EDIT_TOOL: &str = "file_edit";
const FILE_EDIT_DISPLAY: &str = "Apply file changes";
/// The tool name of the call shown for a permissions request that names no open item.
pub const PERMISSIONS_TOOL: &str = "codex.permissions";
const PERMISSIONS_DISPLAY: &str = "Permissions";
/// The permission kind of a request for extra sandbox permissions.
pub const PERMISSIONS_KIND: &str = "permissions";
/// The confirmation title of a permissions request that gives no reason.
const PERMISSIONS_TITLE: &str = "Allow extra permissions";
/// How many paths of one access a permissions description names.
const LISTED_PATHS: usize = 3;

/// A tool item, normalized.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    /// `commandExecution` / `command_execution`.
    Command {
        /// The command, shell wrapper removed.
        command: String,
        /// Its status.
        status: ItemStatus,
        /// Its exit code.
        exit_code: Option<i64>,
        /// stdout and stderr, when reported.
        output: Option<String>,
    },
    /// `fileChange` / `file_change`.
    FileChange {
        /// The files.
        changes: Vec<Change>,
        /// Its status.
        status: ItemStatus,
    },
    /// `mcpToolCall` / `mcp_tool_call`.
    Mcp {
        /// The MCP server.
        server: String,
        /// The tool.
        tool: String,
        /// The arguments.
        arguments: Value,
        /// Its status.
        status: ItemStatus,
        /// The MCP result (`{content, structuredContent}`).
        result: Option<Value>,
        /// The error message.
        error: Option<String>,
    },
    /// `dynamicToolCall`.
    Dynamic {
        /// The tool's namespace.
        namespace: Option<String>,
        /// The tool.
        tool: String,
        /// The arguments.
        arguments: Value,
        /// Its status.
        status: ItemStatus,
        /// The output items.
        content_items: Vec<Value>,
        /// Whether it succeeded.
        success: Option<bool>,
    },
    /// `collabAgentToolCall`.
    Collab {
        /// The collab tool (`spawnAgent`, …).
        tool: String,
        /// Its status.
        status: ItemStatus,
        /// The prompt sent to the agent.
        prompt: Option<String>,
        /// The agents' states by thread id.
        agents_states: Map<String, Value>,
    },
    /// `webSearch` / `web_search`.
    WebSearch {
        /// The query.
        query: String,
    },
    /// `imageGeneration`.
    ImageGeneration {
        /// Its status (free text).
        status: String,
        /// The prompt the model used.
        revised_prompt: Option<String>,
        /// The image, base64 PNG.
        result: String,
    },
    /// `contextCompaction`.
    ContextCompaction,
    /// Not an item: the call shown for an `item/permissions/requestApproval` that names no open
    /// item, so the host can still answer it. It completes with the host's decision.
    Permissions {
        /// The permissions Codex asked for.
        requested: Value,
    },
}

/// One file of a file change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file.
    pub path: String,
    /// `add`, `delete` or `update`.
    pub kind: String,
    /// The new path of a moved file.
    pub move_path: Option<String>,
    /// The unified diff, when known.
    pub diff: String,
}

impl From<&FileUpdateChange> for Change {
    fn from(change: &FileUpdateChange) -> Self {
        Self {
            path: change.path.clone(),
            kind: change.kind.kind.clone(),
            move_path: change.kind.move_path.clone(),
            diff: change.diff.clone(),
        }
    }
}

/// How a tool call ended, beyond what its item says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// As the item says.
    Reported,
    /// The host declined it.
    Declined,
}

impl ToolCall {
    /// The tool call of an app-server item; `None` for messages, reasoning and unknown types.
    pub fn from_item(item: &ThreadItem) -> Option<Self> {
        Some(match item {
            ThreadItem::CommandExecution(item) => Self::Command {
                command: shell::unwrap_command(&item.command),
                status: item.status.clone(),
                exit_code: item.exit_code,
                output: item.aggregated_output.clone(),
            },
            ThreadItem::FileChange(item) => Self::FileChange {
                changes: item.changes.iter().map(Change::from).collect(),
                status: item.status.clone(),
            },
            ThreadItem::McpToolCall(item) => Self::Mcp {
                server: item.server.clone(),
                tool: item.tool.clone(),
                arguments: item.arguments.clone(),
                status: item.status.clone(),
                result: item.result.clone(),
                error: item.error.as_ref().map(error_message),
            },
            ThreadItem::DynamicToolCall(item) => Self::Dynamic {
                namespace: item.namespace.clone(),
                tool: item.tool.clone(),
                arguments: item.arguments.clone(),
                status: item.status.clone(),
                content_items: item.content_items.clone(),
                success: item.success,
            },
            ThreadItem::CollabAgentToolCall(item) => Self::Collab {
                tool: item.tool.clone(),
                status: item.status.clone(),
                prompt: item.prompt.clone(),
                agents_states: item.agents_states.clone(),
            },
            ThreadItem::WebSearch(item) => Self::WebSearch {
                query: item.query.clone(),
            },
            ThreadItem::ImageGeneration(item) => Self::ImageGeneration {
                status: item.status.clone(),
                revised_prompt: item.revised_prompt.clone(),
                result: item.result.clone(),
            },
            ThreadItem::ContextCompaction { .. } => Self::ContextCompaction,
            ThreadItem::UserMessage { .. }
            | ThreadItem::AgentMessage(_)
            | ThreadItem::Reasoning(_)
            | ThreadItem::Other { .. } => return None,
        })
    }

    /// Whether the item has finished (its completion can be shown from it).
    pub fn is_finished(&self) -> bool {
        let status = match self {
            Self::Command { status, .. }
            | Self::FileChange { status, .. }
            | Self::Mcp { status, .. }
            | Self::Dynamic { status, .. }
            | Self::Collab { status, .. } => status,
            Self::WebSearch { .. } | Self::ImageGeneration { .. } | Self::ContextCompaction => {
                return true;
            }
            // It finishes with the host's answer, never from item data.
            Self::Permissions { .. } => return false,
        };
        *status != ItemStatus::InProgress
    }

    /// The tool's internal name.
    pub fn tool_name(&self) -> String {
        match self {
            Self::Command { .. } => SHELL_TOOL.to_owned(),
            Self::FileChange { .. } => FILE_EDIT_TOOL.to_owned(),
            Self::Mcp { server, tool, .. } => format!("{server}.{tool}"),
            Self::Dynamic {
                namespace, tool, ..
            } => match namespace {
                Some(namespace) if !namespace.is_empty() => format!("{namespace}.{tool}"),
                _ => tool.clone(),
            },
            Self::Collab { tool, .. } => format!("codex.{tool}"),
            Self::WebSearch { .. } => "web_search".to_owned(),
            Self::ImageGeneration { .. } => "image_generation".to_owned(),
            Self::ContextCompaction => "context_compaction".to_owned(),
            Self::Permissions { .. } => PERMISSIONS_TOOL.to_owned(),
        }
    }

    /// The tool's human-readable name.
    pub fn display_name(&self) -> String {
        match self {
            Self::Command { .. } => SHELL_DISPLAY.to_owned(),
            Self::FileChange { .. } => FILE_EDIT_DISPLAY.to_owned(),
            Self::Mcp { tool, .. } | Self::Dynamic { tool, .. } => tool.clone(),
            Self::Collab { tool, .. } => match tool.as_str() {
                "spawnAgent" => "Spawn agent".to_owned(),
                "sendInput" => "Send input to agent".to_owned(),
                "resumeAgent" => "Resume agent".to_owned(),
                "wait" => "Wait for agents".to_owned(),
                "closeAgent" => "Close agent".to_owned(),
                other => other.to_owned(),
            },
            Self::WebSearch { .. } => "Web search".to_owned(),
            Self::ImageGeneration { .. } => "Generate image".to_owned(),
            Self::ContextCompaction => "Compact context".to_owned(),
            Self::Permissions { .. } => PERMISSIONS_DISPLAY.to_owned(),
        }
    }

    fn meta(&self) -> Option<JsonObject> {
        let kind = match self {
            Self::Command { .. } => "terminal",
            _ => return None,
        };
        let mut meta = JsonObject::new();
        meta.insert("toolKind".into(), kind.into());
        Some(meta)
    }

    /// The tool's input as text (what a confirmation shows).
    fn input(&self) -> Option<String> {
        match self {
            Self::Command { command, .. } => Some(command.clone()),
            Self::FileChange { changes, .. } => Some(summary(changes)),
            Self::Mcp { arguments, .. } | Self::Dynamic { arguments, .. } => {
                (!arguments.is_null()).then(|| arguments.to_string())
            }
            Self::Collab { prompt, .. } => prompt.clone(),
            Self::WebSearch { query } => (!query.is_empty()).then(|| query.clone()),
            Self::ImageGeneration { revised_prompt, .. } => revised_prompt.clone(),
            Self::ContextCompaction => None,
            Self::Permissions { requested } => Some(requested.to_string()),
        }
    }

    /// What the tool will do, for people.
    pub fn invocation_message(&self) -> String {
        match self {
            Self::Command { command, .. } => format!("Run {}", code(command)),
            Self::FileChange { changes, .. } => match changes.as_slice() {
                [change] => format!("{} {}", verb(&change.kind, false), code(&change.path)),
                changes => format!("Edit {} files", changes.len()),
            },
            Self::Mcp { .. } | Self::Dynamic { .. } => format!("Call {}", code(&self.tool_name())),
            Self::Collab { prompt, .. } => prompt
                .clone()
                .filter(|prompt| !prompt.is_empty())
                .unwrap_or_else(|| self.display_name()),
            Self::WebSearch { query } if !query.is_empty() => {
                format!("Search the web for {}", code(query))
            }
            Self::WebSearch { .. } => "Search the web".to_owned(),
            Self::ImageGeneration { .. } => "Generate an image".to_owned(),
            Self::ContextCompaction => "Compact the conversation".to_owned(),
            Self::Permissions { requested } => permissions_message(requested, "Allow"),
        }
    }
}

struct Outcome {
    past_tense: String,
    content: Vec<ToolResultContent>,
    structured: Option<JsonObject>,
    error: Option<ToolError>,
}

/// `text` as inline code, with a fence longer than any backtick run inside it.
pub fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    if longest == 0 {
        return format!("`{text}`");
    }
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

/// `verb` and what a permissions request asks for, compactly: "Allow network access; write
/// access to `/a`, `/b`", or "… extra permissions" when it names nothing this adapter reads.
pub fn permissions_message(requested: &Value, verb: &str) -> String {
    let phrases = permission_phrases(requested);
    if phrases.is_empty() {
        format!("{verb} extra permissions")
    } else {
        format!("{verb} {}", phrases.join("; "))
    }
}

/// One phrase per permission: `network access`, `write access to `/a``, or `key: `json`` for
/// a shape this adapter does not know. Nothing for what is off or empty.
fn permission_phrases(requested: &Value) -> Vec<String> {
    let Some(object) = requested.as_object() else {
        return match requested {
            Value::Null => Vec::new(),
            other => vec![code(&other.to_string())],
        };
    };
    let mut phrases = Vec::new();
    for (key, value) in in_order(object, &["network", "fileSystem", "file_system"]) {
        match (key, value) {
            (_, Value::Null | Value::Bool(false)) => {}
            (_, Value::Object(inner)) if inner.is_empty() => {}
            ("network", value) => match value.get("enabled").unwrap_or(value) {
                Value::Bool(true) => phrases.push("network access".to_owned()),
                Value::Bool(false) | Value::Null => {}
                _ => phrases.push(format!("network: {}", code(&value.to_string()))),
            },
            ("fileSystem" | "file_system", Value::Object(accesses)) => {
                for (access, paths) in in_order(accesses, &["read", "write"]) {
                    if let Some(phrase) = path_phrase(access, paths) {
                        phrases.push(phrase);
                    }
                }
            }
            (key, value) => phrases.push(format!("{key}: {}", code(&value.to_string()))),
        }
    }
    phrases
}

/// The entries of `object`: the `first` keys in that order, then the others by name (whatever
/// order the map keeps).
fn in_order<'a>(object: &'a Map<String, Value>, first: &[&str]) -> Vec<(&'a str, &'a Value)> {
    let mut entries: Vec<(&str, &Value)> = object
        .iter()
        .map(|(key, value)| (key.as_str(), value))
        .collect();
    entries.sort_by_key(|(key, _)| {
        let rank = first
            .iter()
            .position(|known| known == key)
            .unwrap_or(first.len());
        (rank, *key)
    });
    entries
}

/// `<access> access to `/a`, `/b`` (and how many more), for a list of paths (or one path).
fn path_phrase(access: &str, paths: &Value) -> Option<String> {
    let listed: Vec<String> = match paths {
        Value::Null => return None,
        Value::String(path) => vec![path.clone()],
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(path) => path.clone(),
                other => other.to_string(),
            })
            .collect(),
        other => return Some(format!("{access}: {}", code(&other.to_string()))),
    };
    if listed.is_empty() {
        return None;
    }
    let mut named: Vec<String> = listed
        .iter()
        .take(LISTED_PATHS)
        .map(|path| code(path))
        .collect();
    if listed.len() > LISTED_PATHS {
        named.push(format!("{} more", listed.len() - LISTED_PATHS));
    }
    Some(format!("{access} access to {}", named.join(", ")))
}

fn verb(kind: &str, past: bool) -> &'static str {
    match (kind, past) {
        ("add", false) => "Create",
        ("add", true) => "Created",
        ("delete", false) => "Delete",
        ("delete", true) => "Deleted",
        (_, false) => "Edit",
        (_, true) => "Edited",
    }
}

/// One line per file: `add a.txt`, `update b.rs`, `update c.rs → d.rs`.
pub fn summary(changes: &[Change]) -> String {
    changes
        .iter()
        .map(|change| {
            let kind = if change.kind.is_empty() {
                "update"
            } else {
                &change.kind
            };
            match &change.move_path {
                Some(to) => format!("{kind} {} → {to}", change.path),
                None => format!("{kind} {}", change.path),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each file's summary line followed by its diff.
fn rendered(changes: &[Change]) -> String {
    changes
        .iter()
        .map(|change| {
            let line = summary(std::slice::from_ref(change));
            if change.diff.is_empty() {
                line
            } else {
                format!("{line}\n{}", change.diff.trim_end_matches('\n'))
            }
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn join_nonempty(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|part| !part.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `text` as one text block; nothing when empty.
pub fn text_content(text: String) -> Vec<ToolResultContent> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![ToolResultContent::Text(ToolResultTextContent { text })]
    }
}

/// `{message}` or a bare string.
fn error_message(error: &Value) -> String {
    match error {
        Value::String(message) => message.clone(),
        other => other
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_owned),
    }
}

/// One MCP content block: text, an image, or the block as JSON text.
fn mcp_content(block: &Value) -> ToolResultContent {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => ToolResultContent::Text(ToolResultTextContent {
            text: block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }),
        Some("image" | "audio") => {
            match (
                block.get("data").and_then(Value::as_str),
                block.get("mimeType").and_then(Value::as_str),
            ) {
                (Some(data), Some(content_type)) => {
                    ToolResultContent::EmbeddedResource(ToolResultEmbeddedResourceContent {
                        data: data.to_owned(),
                        content_type: content_type.to_owned(),
                    })
                }
                _ => json_text(block),
            }
        }
        _ => json_text(block),
    }
}

/// One dynamic tool output item: `inputText`, or `inputImage` (a data URL is embedded).
fn dynamic_content(item: &Value) -> ToolResultContent {
    match item.get("type").and_then(Value::as_str) {
        Some("inputText") => ToolResultContent::Text(ToolResultTextContent {
            text: item
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }),
        Some("inputImage") => {
            let url = item
                .get("imageUrl")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match data_url(url) {
                Some((content_type, data)) => {
                    ToolResultContent::EmbeddedResource(ToolResultEmbeddedResourceContent {
                        data,
                        content_type,
                    })
                }
                None => ToolResultContent::Text(ToolResultTextContent {
                    text: url.to_owned(),
                }),
            }
        }
        _ => json_text(item),
    }
}

/// `data:<type>;base64,<data>` → (type, data), when the data is valid base64.
fn data_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let content_type = header.strip_suffix(";base64")?;
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()
        .map(|_| (content_type.to_owned(), data.to_owned()))
}

fn json_text(value: &Value) -> ToolResultContent {
    ToolResultContent::Text(ToolResultTextContent {
        text: value.to_string(),
    })
}

/// `_meta` of a usage report: reasoning tokens and the model's context window.
pub fn usage_meta(reasoning_output_tokens: u64, context_window: Option<i64>) -> JsonObject {
    let mut meta = JsonObject::new();
    meta.insert(
        "reasoningOutputTokens".into(),
        reasoning_output_tokens.into(),
    );
    if let Some(window) = context_window {
        meta.insert("modelContextWindow".into(), window.into());
    }
    meta
}

#[cfg(test)]
#[path = "items_tests.rs"]
mod tests;

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

    /// `ToolStarted`, the arguments as one delta, and `ToolReady` (the agent runs it on its own).
    pub fn started(&self, scope: &Scope, id: &str) -> Vec<NormEvent> {
        let mut events = vec![NormEvent::ToolStarted {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            tool_name: self.tool_name(),
            display_name: self.display_name(),
            contributor: None,
            meta: self.meta(),
        }];
        let input = self.input();
        if let Some(input) = input.clone().filter(|input| !input.is_empty()) {
            events.push(NormEvent::ToolArgsDelta {
                scope: scope.clone(),
                tool_call_id: id.to_owned(),
                partial_json: input,
            });
        }
        events.push(NormEvent::ToolReady {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            invocation_message: self.invocation_message(),
            tool_input: input,
            auto_approved: true,
            meta: None,
        });
        events
    }

    /// The permission request of a command or a file change; `reason` is the agent's.
    pub fn permission(&self, scope: &Scope, id: &str, reason: Option<&str>) -> NormEvent {
        if let Self::Permissions { requested } = self {
            return self.permissions_asked(scope, id, requested, reason);
        }
        let (kind, path) = match self {
            Self::Command { .. } => (PermissionKind::Shell, None),
            Self::FileChange { changes, .. } => (
                PermissionKind::Write,
                changes.first().map(|change| change.path.clone()),
            ),
            Self::Mcp { .. } => (PermissionKind::Mcp, None),
            _ => (PermissionKind::Other(self.tool_name()), None),
        };
        let title = reason
            .filter(|reason| !reason.trim().is_empty())
            .map_or_else(|| self.display_name(), str::to_owned);
        NormEvent::PermissionAsked {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            tool_name: self.tool_name(),
            display_name: self.display_name(),
            kind,
            path,
            title,
            invocation_message: self.invocation_message(),
            input: self.input(),
        }
    }

    /// The request for extra sandbox permissions (`item/permissions/requestApproval`) for this
    /// call: kind `permissions`, titled with `reason` (or "Allow extra permissions"), the
    /// requested permissions described for people and as the input (JSON).
    pub fn permissions_asked(
        &self,
        scope: &Scope,
        id: &str,
        requested: &Value,
        reason: Option<&str>,
    ) -> NormEvent {
        let title = reason
            .filter(|reason| !reason.trim().is_empty())
            .unwrap_or(PERMISSIONS_TITLE)
            .to_owned();
        NormEvent::PermissionAsked {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            tool_name: self.tool_name(),
            display_name: self.display_name(),
            kind: PermissionKind::Other(PERMISSIONS_KIND.to_owned()),
            path: None,
            title,
            invocation_message: permissions_message(requested, "Allow"),
            input: Some(requested.to_string()),
        }
    }

    /// The live content of a running call: `streamed` output, or the changes of a file change.
    pub fn live_output(&self, scope: &Scope, id: &str, streamed: &str) -> NormEvent {
        let text = match self {
            Self::FileChange { changes, .. } => join_nonempty(&[&rendered(changes), streamed]),
            _ => streamed.to_owned(),
        };
        NormEvent::ToolOutput {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            content: text_content(text),
            meta: None,
        }
    }

    /// The completion of a finished call; `streamed` is the output seen live.
    pub fn completed(&self, scope: &Scope, id: &str, streamed: &str, ending: Ending) -> NormEvent {
        let declined = ending == Ending::Declined || self.status() == Some(&ItemStatus::Declined);
        let outcome = if declined {
            self.declined()
        } else {
            self.finished(streamed)
        };
        NormEvent::ToolCompleted {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            success: outcome.error.is_none(),
            past_tense_message: Some(outcome.past_tense),
            content: outcome.content,
            structured_content: outcome.structured,
            error: outcome.error,
        }
    }

    /// The completion of a call still open when its turn ended.
    pub fn abandoned(&self, scope: &Scope, id: &str, reason: &str, streamed: &str) -> NormEvent {
        NormEvent::ToolCompleted {
            scope: scope.clone(),
            tool_call_id: id.to_owned(),
            success: false,
            past_tense_message: Some(format!("{} did not finish", self.display_name())),
            content: text_content(streamed.to_owned()),
            structured_content: None,
            error: Some(ToolError::new(reason)),
        }
    }

    fn status(&self) -> Option<&ItemStatus> {
        match self {
            Self::Command { status, .. }
            | Self::FileChange { status, .. }
            | Self::Mcp { status, .. }
            | Self::Dynamic { status, .. }
            | Self::Collab { status, .. } => Some(status),
            _ => None,
        }
    }

    fn declined(&self) -> Outcome {
        let (past_tense, message) = match self {
            Self::Command { command, .. } => (
                format!("Did not run {} (declined)", code(command)),
                "The user declined to run this command.".to_owned(),
            ),
            Self::FileChange { .. } => (
                "File changes were declined".to_owned(),
                "The user declined these file changes.".to_owned(),
            ),
            Self::Permissions { .. } => (
                "Extra permissions were declined".to_owned(),
                "The user declined the extra permissions.".to_owned(),
            ),
            _ => (
                format!("{} was declined", self.display_name()),
                "The user declined this tool call.".to_owned(),
            ),
        };
        Outcome {
            past_tense,
            content: Vec::new(),
            structured: None,
            error: Some(ToolError::denied(message)),
        }
    }

    fn finished(&self, streamed: &str) -> Outcome {
        match self {
            Self::Command {
                command,
                status,
                exit_code,
                output,
            } => {
                let output = output
                    .as_deref()
                    .filter(|output| !output.is_empty())
                    .unwrap_or(streamed);
                let ran = format!("Ran {}", code(command));
                let (past_tense, error) = match (status, exit_code) {
                    (_, Some(code)) if *code != 0 => (
                        format!("{ran} (exit {code})"),
                        Some(format!("The command exited with code {code}.")),
                    ),
                    (ItemStatus::Failed, _) => (
                        format!("{ran} (failed)"),
                        Some("The command failed.".to_owned()),
                    ),
                    _ => (ran, None),
                };
                Outcome {
                    past_tense,
                    content: text_content(output.to_owned()),
                    structured: None,
                    error: error.map(ToolError::new),
                }
            }
            Self::FileChange { changes, status } => {
                let content = text_content(join_nonempty(&[&rendered(changes), streamed]));
                if *status == ItemStatus::Failed {
                    return Outcome {
                        past_tense: "Could not apply the file changes".to_owned(),
                        content,
                        structured: None,
                        error: Some(ToolError::new("The file changes could not be applied.")),
                    };
                }
                let past_tense = match changes.as_slice() {
                    [change] => format!("{} {}", verb(&change.kind, true), code(&change.path)),
                    changes => format!("Edited {} files", changes.len()),
                };
                Outcome {
                    past_tense,
                    content,
                    structured: None,
                    error: None,
                }
            }
            Self::Mcp {
                status,
                result,
                error,
                ..
            } => {
                let name = code(&self.tool_name());
                let mut content = Vec::new();
                let mut structured = None;
                if let Some(result) = result {
                    if let Some(items) = result.get("content").and_then(Value::as_array) {
                        content.extend(items.iter().map(mcp_content));
                    }
                    structured = result
                        .get("structuredContent")
                        .or_else(|| result.get("structured_content"))
                        .and_then(Value::as_object)
                        .cloned();
                }
                let error = match (error, status) {
                    (Some(message), _) => Some(message.clone()),
                    (None, ItemStatus::Failed) => Some("The tool call failed.".to_owned()),
                    _ => None,
                };
                Outcome {
                    past_tense: if error.is_some() {
                        format!("{name} failed")
                    } else {
                        format!("Called {name}")
                    },
                    content,
                    structured,
                    error: error.map(ToolError::new),
                }
            }
            Self::Dynamic {
                status,
                content_items,
                success,
                ..
            } => {
                let name = code(&self.tool_name());
                let succeeded = success.unwrap_or(*status != ItemStatus::Failed);
                Outcome {
                    past_tense: if succeeded {
                        format!("Called {name}")
                    } else {
                        format!("{name} failed")
                    },
                    content: content_items.iter().map(dynamic_content).collect(),
                    structured: None,
                    error: (!succeeded).then(|| ToolError::new("The tool call failed.")),
                }
            }
            Self::Collab {
                status,
                agents_states,
                ..
            } => {
                let states = agents_states
                    .iter()
                    .map(|(thread, state)| {
                        let status = state.get("status").and_then(Value::as_str).unwrap_or("?");
                        match state.get("message").and_then(Value::as_str) {
                            Some(message) => format!("{thread}: {status} — {message}"),
                            None => format!("{thread}: {status}"),
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let failed = *status == ItemStatus::Failed;
                Outcome {
                    past_tense: format!(
                        "{}{}",
                        self.display_name(),
                        if failed { " failed" } else { "" }
                    ),
                    content: text_content(states),
                    structured: None,
                    error: failed.then(|| ToolError::new("The agent tool call failed.")),
                }
            }
            Self::WebSearch { query } => Outcome {
                past_tense: if query.is_empty() {
                    "Searched the web".to_owned()
                } else {
                    format!("Searched the web for {}", code(query))
                },
                content: Vec::new(),
                structured: None,
                error: None,
            },
            Self::ImageGeneration { status, result, .. } => {
                let failed = status == "failed";
                let content = if result.is_empty() {
                    Vec::new()
                } else {
                    vec![ToolResultContent::EmbeddedResource(
                        ToolResultEmbeddedResourceContent {
                            data: result.clone(),
                            content_type: "image/png".to_owned(),
                        },
                    )]
                };
                Outcome {
                    past_tense: if failed {
                        "Could not generate the image".to_owned()
                    } else {
                        "Generated an image".to_owned()
                    },
                    content,
                    structured: None,
                    error: failed.then(|| ToolError::new("Image generation failed.")),
                }
            }
            Self::ContextCompaction => Outcome {
                past_tense: "Compacted the conversation".to_owned(),
                content: Vec::new(),
                structured: None,
                error: None,
            },
            Self::Permissions { requested } => Outcome {
                past_tense: permissions_message(requested, "Allowed"),
                content: Vec::new(),
                structured: None,
                error: None,
            },
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

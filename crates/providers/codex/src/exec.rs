//! `codex exec --json`: the one-shot JSONL vocabulary, mapped like the
//! app-server's so captured `exec-*` transcripts replay through the same mapper. The adapter
//! drives `codex app-server`; this exists for `agent-host map` and the fixture tests.
//!
//! `exec` reports messages and reasoning only when complete (no deltas), never asks for
//! approval, and gives no turn duration (the mapper measures it). A line is
//! `{type: thread.started | turn.started | turn.completed | turn.failed | item.started |
//! item.updated | item.completed | error, …}`; unknown types and item types are ignored.

use std::collections::HashMap;

use agenthost_protocol::SessionUri;
use agenthost_protocol::state::ErrorInfo;
use agenthost_provider_api::{Mapper, NormEvent, Scope, UsageKind};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::items::{Change, Ending, ToolCall, usage_meta};
use crate::shell;
use crate::translate::{CODEX_ERROR, LineError, LineErrorKind, Output, parse_object};
use crate::wire::ItemStatus;

/// One `exec --json` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExecEvent {
    /// `thread.started`.
    ThreadStarted {
        /// The thread id.
        thread_id: String,
    },
    /// `turn.started`.
    TurnStarted,
    /// `turn.completed` with the turn's usage.
    TurnCompleted {
        /// Token counts of the turn.
        usage: ExecUsage,
    },
    /// `turn.failed`.
    TurnFailed {
        /// What went wrong.
        message: String,
    },
    /// `item.started`, `item.updated`.
    ItemStarted(ExecItem),
    /// `item.completed`.
    ItemCompleted(ExecItem),
    /// `error`: a fatal error (a `turn.failed` follows).
    Error {
        /// What went wrong.
        message: String,
    },
    /// Any other type.
    Other {
        /// The line's `type`.
        kind: String,
    },
}

/// `turn.completed` usage.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct ExecUsage {
    /// Input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Input tokens read from the cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Output tokens spent reasoning.
    #[serde(default)]
    pub reasoning_output_tokens: u64,
}

/// An `exec` item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExecItem {
    /// The item id (`item_N`, per turn).
    pub id: String,
    /// What it is.
    pub details: ExecItemDetails,
}

/// What an `exec` item is, by `type`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExecItemDetails {
    /// `agent_message`.
    AgentMessage {
        /// The text.
        text: String,
    },
    /// `reasoning` (a summary).
    Reasoning {
        /// The text.
        text: String,
    },
    /// A tool call (`command_execution`, `file_change`, `mcp_tool_call`, `web_search`,
    /// `collab_tool_call`).
    Tool(Box<ToolCall>),
    /// Any other type (`todo_list`, `error`, `plan`, …).
    Other {
        /// The item's `type`.
        kind: String,
    },
}

#[derive(Deserialize)]
struct ThreadStartedFields {
    thread_id: String,
}

#[derive(Deserialize)]
struct TurnCompletedFields {
    #[serde(default)]
    usage: Option<ExecUsage>,
}

#[derive(Deserialize)]
struct MessageFields {
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct TurnFailedFields {
    #[serde(default)]
    error: Option<MessageFields>,
}

#[derive(Deserialize)]
struct ItemFields {
    item: Value,
}

#[derive(Deserialize)]
struct TextFields {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct CommandFields {
    #[serde(default)]
    command: String,
    #[serde(default)]
    aggregated_output: Option<String>,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default)]
    status: Option<String>,
}

#[derive(Deserialize)]
struct FileChangeFields {
    #[serde(default)]
    changes: Vec<ExecChange>,
    #[serde(default)]
    status: Option<String>,
}

#[derive(Deserialize)]
struct ExecChange {
    path: String,
    #[serde(default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct McpFields {
    #[serde(default)]
    server: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    arguments: Value,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<MessageFields>,
    #[serde(default)]
    status: Option<String>,
}

#[derive(Deserialize)]
struct WebSearchFields {
    #[serde(default)]
    query: String,
}

#[derive(Deserialize)]
struct CollabFields {
    #[serde(default)]
    tool: String,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    agents_states: Map<String, Value>,
    #[serde(default)]
    status: Option<String>,
}

fn status(name: Option<&str>) -> ItemStatus {
    name.map_or(ItemStatus::InProgress, ItemStatus::from_name)
}

fn decode<T: for<'de> Deserialize<'de>>(kind: &str, value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|error| format!("`{kind}`: {error}"))
}

impl ExecEvent {
    /// Decodes one parsed line.
    pub(crate) fn from_value(value: Value) -> Result<Self, String> {
        let kind = match value.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            Some(other) => return Err(format!("`type` is not a string: {other}")),
            None => return Err("missing `type`".to_owned()),
        };
        Ok(match kind.as_str() {
            "thread.started" => {
                let fields: ThreadStartedFields = decode(&kind, value)?;
                Self::ThreadStarted {
                    thread_id: fields.thread_id,
                }
            }
            "turn.started" => Self::TurnStarted,
            "turn.completed" => {
                let fields: TurnCompletedFields = decode(&kind, value)?;
                Self::TurnCompleted {
                    usage: fields.usage.unwrap_or_default(),
                }
            }
            "turn.failed" => {
                let fields: TurnFailedFields = decode(&kind, value)?;
                Self::TurnFailed {
                    message: fields
                        .error
                        .and_then(|error| error.message)
                        .unwrap_or_default(),
                }
            }
            "error" => {
                let fields: MessageFields = decode(&kind, value)?;
                Self::Error {
                    message: fields.message.unwrap_or_default(),
                }
            }
            "item.started" | "item.updated" | "item.completed" => {
                let fields: ItemFields = decode(&kind, value)?;
                let item = ExecItem::from_value(fields.item)?;
                if kind == "item.completed" {
                    Self::ItemCompleted(item)
                } else {
                    Self::ItemStarted(item)
                }
            }
            _ => Self::Other { kind },
        })
    }
}

impl ExecItem {
    /// Decodes one item.
    pub(crate) fn from_value(value: Value) -> Result<Self, String> {
        let id = match value.get("id") {
            Some(Value::String(id)) => id.clone(),
            _ => return Err("an item without a string `id`".to_owned()),
        };
        let kind = match value.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            _ => return Err(format!("item {id} without a string `type`")),
        };
        let details = match kind.as_str() {
            "agent_message" => ExecItemDetails::AgentMessage {
                text: decode::<TextFields>(&kind, value)?.text.unwrap_or_default(),
            },
            "reasoning" => ExecItemDetails::Reasoning {
                text: decode::<TextFields>(&kind, value)?.text.unwrap_or_default(),
            },
            "command_execution" => {
                let fields: CommandFields = decode(&kind, value)?;
                ExecItemDetails::Tool(Box::new(ToolCall::Command {
                    command: shell::unwrap_command(&fields.command),
                    status: status(fields.status.as_deref()),
                    exit_code: fields.exit_code,
                    output: fields.aggregated_output,
                }))
            }
            "file_change" => {
                let fields: FileChangeFields = decode(&kind, value)?;
                ExecItemDetails::Tool(Box::new(ToolCall::FileChange {
                    changes: fields
                        .changes
                        .into_iter()
                        .map(|change| Change {
                            path: change.path,
                            kind: change.kind.unwrap_or_default(),
                            move_path: None,
                            diff: String::new(),
                        })
                        .collect(),
                    status: status(fields.status.as_deref()),
                }))
            }
            "mcp_tool_call" => {
                let fields: McpFields = decode(&kind, value)?;
                ExecItemDetails::Tool(Box::new(ToolCall::Mcp {
                    server: fields.server,
                    tool: fields.tool,
                    arguments: fields.arguments,
                    status: status(fields.status.as_deref()),
                    result: fields.result,
                    error: fields.error.map(|error| error.message.unwrap_or_default()),
                }))
            }
            "web_search" => ExecItemDetails::Tool(Box::new(ToolCall::WebSearch {
                query: decode::<WebSearchFields>(&kind, value)?.query,
            })),
            "collab_tool_call" => {
                let fields: CollabFields = decode(&kind, value)?;
                ExecItemDetails::Tool(Box::new(ToolCall::Collab {
                    tool: snake_to_camel(&fields.tool),
                    status: status(fields.status.as_deref()),
                    prompt: fields.prompt,
                    agents_states: fields.agents_states,
                }))
            }
            _ => ExecItemDetails::Other { kind },
        };
        Ok(Self { id, details })
    }
}

/// `spawn_agent` → `spawnAgent` (the app-server's spelling of collab tools).
fn snake_to_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Parses one `exec --json` line.
pub(crate) fn parse_exec_line(line: &str) -> Result<ExecEvent, LineError> {
    ExecEvent::from_value(parse_object(line)?)
        .map_err(|reason| LineError::new(LineErrorKind::Malformed { reason }, line))
}

/// The translator of one `codex exec --json` run.
#[derive(Debug)]
pub struct ExecTranslator {
    mapper: Mapper,
    thread: Option<String>,
    turn: Option<ExecTurn>,
}

#[derive(Debug)]
struct ExecTurn {
    id: String,
    /// Tool items by id, with whether they completed.
    tools: HashMap<String, (ToolCall, bool)>,
    /// Tool items in start order.
    order: Vec<String>,
    /// The last `error` line.
    error: Option<String>,
}

impl ExecTranslator {
    /// A translator for a run in `session`, with no turn yet.
    pub fn new(session: SessionUri) -> Self {
        Self {
            mapper: Mapper::new(session),
            thread: None,
            turn: None,
        }
    }

    /// Starts protocol turn `turn_id` (the run's one turn).
    pub fn begin_turn(&mut self, turn_id: &str) {
        self.mapper.begin_turn(turn_id);
        self.turn = Some(ExecTurn {
            id: turn_id.to_owned(),
            tools: HashMap::new(),
            order: Vec::new(),
            error: None,
        });
    }

    /// The protocol turn in progress.
    pub fn turn_id(&self) -> Option<&str> {
        self.turn.as_ref().map(|turn| turn.id.as_str())
    }

    /// The run's thread, once reported.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread.as_deref()
    }

    /// Translates one line: signals, [`Output::ThreadStarted`] and [`Output::TurnEnded`].
    pub fn on_line(&mut self, line: &str) -> Result<Vec<Output>, LineError> {
        let event = parse_exec_line(line)?;
        let mut out = Vec::new();
        match event {
            ExecEvent::ThreadStarted { thread_id } => {
                self.thread = Some(thread_id.clone());
                out.push(Output::ThreadStarted(thread_id));
            }
            ExecEvent::TurnStarted => {}
            ExecEvent::ItemStarted(item) => self.item(item, false, &mut out),
            ExecEvent::ItemCompleted(item) => self.item(item, true, &mut out),
            ExecEvent::Error { message } => {
                if let Some(turn) = &mut self.turn {
                    turn.error = Some(message);
                }
            }
            ExecEvent::TurnCompleted { usage } => {
                if self.turn.is_some() {
                    self.end_orphans(&mut out);
                    self.emit(
                        NormEvent::Usage {
                            scope: Scope::Root,
                            // `codex exec` reports the turn's usage once, at its end; its
                            // input count includes the cached tokens already.
                            kind: UsageKind::Total,
                            input: usage.input_tokens,
                            output: usage.output_tokens,
                            cache_read: Some(usage.cached_input_tokens),
                            cache_write: None,
                            model: None,
                            meta: Some(usage_meta(usage.reasoning_output_tokens, None)),
                        },
                        &mut out,
                    );
                    self.end(
                        NormEvent::Idle {
                            aborted: false,
                            duration_ms: None,
                        },
                        &mut out,
                    );
                }
            }
            ExecEvent::TurnFailed { message } => {
                if let Some(turn) = &self.turn {
                    let message = if message.is_empty() {
                        turn.error.clone().unwrap_or_default()
                    } else {
                        message
                    };
                    self.end_orphans(&mut out);
                    self.end(
                        NormEvent::Failed {
                            error: readable_error(&message),
                            duration_ms: None,
                        },
                        &mut out,
                    );
                }
            }
            ExecEvent::Other { kind } => tracing::trace!(kind, "ignoring an exec line"),
        }
        Ok(out)
    }

    fn emit(&mut self, event: NormEvent, out: &mut Vec<Output>) {
        out.extend(self.mapper.map(event).into_iter().map(Output::Signal));
    }

    fn item(&mut self, item: ExecItem, completed: bool, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        let stream_id = item.id;
        match item.details {
            ExecItemDetails::AgentMessage { text } if completed => self.emit(
                NormEvent::TextFull {
                    scope: Scope::Root,
                    stream_id,
                    text,
                },
                out,
            ),
            ExecItemDetails::Reasoning { text } if completed => self.emit(
                NormEvent::ReasoningFull {
                    scope: Scope::Root,
                    stream_id,
                    text,
                },
                out,
            ),
            ExecItemDetails::Tool(call) => {
                let call = *call;
                let id = stream_id;
                let mut events = Vec::new();
                let known = match turn.tools.get_mut(&id) {
                    Some((_, true)) => return,
                    Some((known, done)) => {
                        *known = call.clone();
                        *done = completed;
                        true
                    }
                    None => false,
                };
                if !known {
                    events.extend(call.started(&Scope::Root, &id));
                    turn.order.push(id.clone());
                    turn.tools.insert(id.clone(), (call.clone(), completed));
                }
                if completed {
                    events.push(call.completed(&Scope::Root, &id, "", Ending::Reported));
                }
                for event in events {
                    self.emit(event, out);
                }
            }
            ExecItemDetails::AgentMessage { .. } | ExecItemDetails::Reasoning { .. } => {}
            ExecItemDetails::Other { kind } => tracing::trace!(kind, "ignoring an exec item"),
        }
    }

    /// Completes the tools still open as failed.
    fn end_orphans(&mut self, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        let events: Vec<NormEvent> = std::mem::take(&mut turn.order)
            .into_iter()
            .filter_map(|id| match turn.tools.get(&id) {
                Some((call, false)) => Some(call.abandoned(
                    &Scope::Root,
                    &id,
                    "The turn ended before the tool call finished.",
                    "",
                )),
                _ => None,
            })
            .collect();
        for event in events {
            self.emit(event, out);
        }
    }

    fn end(&mut self, terminal: NormEvent, out: &mut Vec<Output>) {
        self.emit(terminal, out);
        self.turn = None;
        out.push(Output::TurnEnded);
    }
}

/// The `chat/error` of a failed run. Codex passes the API's error body through as the message;
/// when it is JSON with `error.message`, that message is shown and the body kept as the stack.
fn readable_error(message: &str) -> ErrorInfo {
    let inner = serde_json::from_str::<Value>(message)
        .ok()
        .and_then(|body| {
            body.get("error")
                .and_then(|error| error.get("message"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    let (message, stack) = match inner {
        Some(inner) if !inner.is_empty() => (inner, Some(message.to_owned())),
        _ if message.is_empty() => ("Codex reported an error.".to_owned(), None),
        _ => (message.to_owned(), None),
    };
    ErrorInfo {
        error_type: CODEX_ERROR.to_owned(),
        message,
        stack,
        meta: None,
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;

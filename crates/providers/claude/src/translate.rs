//! The Claude Code translator: stream-json lines in, [`Output`]s out.
//!
//! The translator is thin on purpose. It turns each line into provider-neutral [`NormEvent`]s and
//! feeds them to one [`Mapper`], which owns every AHP ordering rule. What it knows that the mapper
//! cannot: which API message a streamed block belongs to (part ids `<turnId>#<messageId>#<block>`,
//! in both partial and non-partial mode, so the full `assistant` line after streamed deltas never
//! duplicates text), how a tool result tells a denial from a failure, which tool calls spawned
//! subagents, and how a `result` ends the turn. Everything that needs the process — answering
//! permission requests and `AskUserQuestion`'s questions, control responses, the session id for
//! `--resume` — comes out as an [`Output`] for the driver.

use std::collections::{HashMap, HashSet};
use std::fmt;

use agenthost_protocol::common::JsonObject;
use agenthost_protocol::state::{ErrorInfo, ToolResultContent, ToolResultTextContent};
use agenthost_protocol::{AgentSignal, SessionUri, StateAction};
use agenthost_provider_api::{Mapper, NormEvent, Scope, ToolError};
use serde_json::{Value, json};

use crate::questions;
use crate::tools::{self, Outcome};
use crate::wire::{
    AssistantLine, BlockDelta, CanUseTool, CliLine, ContentBlock, ControlRequest,
    ControlResponseLine, ResultLine, StreamEvent, StreamEventLine, SystemLine, ToolUseResult,
    UserContent, UserLine,
};

/// What one stdout line asks of the driver.
// Outputs live for one line and are moved into a `Vec` once: boxing the signal buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A signal for the host.
    Signal(AgentSignal),
    /// `can_use_tool`: the driver parks `request_id` under `tool_use_id` and answers it when the
    /// host does. The `PendingConfirmation` signal was emitted just before, as [`Output::Signal`].
    PermissionRequest {
        /// The CLI's request id (the answer carries it).
        request_id: String,
        /// The tool call.
        tool_use_id: String,
        /// The tool's input (an `allow` answer sends it back, possibly edited).
        input: Value,
    },
    /// `can_use_tool` for `AskUserQuestion`: the driver parks `request_id` under
    /// `input_request_id` and answers it when the host answers the input request. The
    /// `chat/inputRequested` signal was emitted just before, as [`Output::Signal`].
    InputRequest {
        /// The CLI's request id (the answer carries it).
        request_id: String,
        /// The protocol input request id (`ask-<tool_use_id>`).
        input_request_id: String,
        /// The tool's input (an `allow` answer sends it back with the answers added).
        input: Value,
    },
    /// A permission request nobody can be asked about (no turn, no tool call id, questions that
    /// cannot be shown): the driver answers `deny` with `message` right away.
    DenyPermission {
        /// The CLI's request id.
        request_id: String,
        /// Why, for the agent.
        message: String,
    },
    /// Any other `control_request` from the CLI: the driver answers with an error response.
    UnsupportedControlRequest {
        /// The CLI's request id.
        request_id: String,
        /// The request's subtype.
        subtype: String,
    },
    /// The CLI withdrew its request `request_id` (a parked permission request needs no answer).
    RequestCancelled {
        /// The CLI's request id.
        request_id: String,
    },
    /// A `control_response` to one of the host's requests (initialize, interrupt).
    ControlResponse {
        /// The host's request id.
        request_id: String,
        /// Whether it succeeded.
        success: bool,
        /// The error text of a failure.
        error: Option<String>,
    },
    /// The CLI's session id (from `system/init` or a `result`): what `--resume` takes. Reported
    /// when it is first seen or changes.
    SessionId(String),
    /// The protocol turn ended (after its terminal signal).
    TurnEnded,
}

/// A stdout line the translator could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    kind: LineErrorKind,
    snippet: String,
}

/// What was wrong with a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineErrorKind {
    /// Not JSON at all, or JSON but not an object.
    NotAnObject,
    /// A known line type whose fields do not have the expected shape.
    Malformed {
        /// The decoder's explanation.
        reason: String,
    },
}

/// How much of a bad line an error quotes.
const SNIPPET_CHARS: usize = 200;

impl LineError {
    fn new(kind: LineErrorKind, line: &str) -> Self {
        let mut snippet: String = line.chars().take(SNIPPET_CHARS).collect();
        if snippet.len() < line.len() {
            snippet.push('…');
        }
        Self { kind, snippet }
    }

    /// What was wrong.
    pub fn kind(&self) -> &LineErrorKind {
        &self.kind
    }

    /// The beginning of the offending line.
    pub fn snippet(&self) -> &str {
        &self.snippet
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            LineErrorKind::NotAnObject => write!(f, "not a JSON object: {}", self.snippet),
            LineErrorKind::Malformed { reason } => {
                write!(f, "malformed line ({reason}): {}", self.snippet)
            }
        }
    }
}

impl std::error::Error for LineError {}

/// Parses one stdout line.
pub fn parse_line(line: &str) -> Result<CliLine, LineError> {
    let value: Value =
        serde_json::from_str(line).map_err(|_| LineError::new(LineErrorKind::NotAnObject, line))?;
    if !value.is_object() {
        return Err(LineError::new(LineErrorKind::NotAnObject, line));
    }
    serde_json::from_value(value).map_err(|error| {
        LineError::new(
            LineErrorKind::Malformed {
                reason: error.to_string(),
            },
            line,
        )
    })
}

/// The translator of one Claude Code conversation.
#[derive(Debug)]
pub struct Translator {
    mapper: Mapper,
    /// Present while a protocol turn runs.
    turn: Option<TurnTrack>,
    session_id: Option<String>,
    /// The CLI's own control requests (request id → tool call): a `control_response` carrying
    /// one is the echo of the host's answer (`--replay-user-messages`), not an answer to the
    /// host. The echo precedes the tool's result, which forgets the request.
    cli_requests: HashMap<String, Option<String>>,
    /// `result`s still owed by aborted turns. The CLI handles user messages one after the other,
    /// so until they arrive every line belongs to an aborted turn and is dropped.
    stale_results: usize,
    /// The CLI's main model (`system/init`'s `model`): its `modelUsage` entry carries the limits.
    cli_model: Option<String>,
}

/// A content block streamed with `--include-partial-messages`.
#[derive(Debug)]
enum StreamBlock {
    Text,
    Thinking,
    Tool { id: String, buffer: String },
}

#[derive(Debug)]
struct ToolInfo {
    name: String,
    scope: Scope,
    input: Option<Value>,
    ready: bool,
}

/// What a `Task` / `Agent` call asked for.
#[derive(Debug, Default)]
struct Spawn {
    description: Option<String>,
    agent: Option<String>,
    prompt: Option<String>,
    background: bool,
}

/// A synthetic API error line, remembered for the `result`.
#[derive(Debug)]
struct ApiError {
    text: Option<String>,
    status: Option<Value>,
    error_type: Option<String>,
}

/// Per-turn state.
#[derive(Debug, Default)]
struct TurnTrack {
    /// API messages seen in stream events: their full `assistant` lines add no text.
    streamed: HashSet<String>,
    /// The message being streamed, per scope.
    current_message: HashMap<Scope, String>,
    blocks: HashMap<(String, u64), StreamBlock>,
    /// Blocks counted so far per non-streamed message (each is its own `assistant` line).
    unstreamed_blocks: HashMap<String, u64>,
    anonymous_messages: u64,
    tools: HashMap<String, ToolInfo>,
    spawns: HashMap<String, Spawn>,
    subagents: HashSet<String>,
    /// Tool calls denied without anyone being asked (`system/permission_denied`).
    denied: HashSet<String>,
    api_error: Option<ApiError>,
}

impl Translator {
    /// A translator for a conversation of `session`, with no turn yet.
    pub fn new(session: SessionUri) -> Self {
        Self {
            mapper: Mapper::new(session),
            turn: None,
            session_id: None,
            cli_requests: HashMap::new(),
            stale_results: 0,
            cli_model: None,
        }
    }

    /// The model this conversation runs on, by the id the host advertises it under (`default`,
    /// `sonnet`, …): the limits Claude Code reports for its main model reach the host's model list.
    pub fn set_model(&mut self, model: impl Into<String>) {
        self.mapper.set_model(model);
    }

    /// Starts protocol turn `turn_id` (the driver then writes the user message).
    pub fn begin_turn(&mut self, turn_id: &str) {
        self.mapper.begin_turn(turn_id);
        self.turn = Some(TurnTrack::default());
    }

    /// The protocol turn in progress.
    pub fn turn_id(&self) -> Option<&str> {
        self.turn.as_ref().and(self.mapper.turn_id())
    }

    /// Whether a turn began and has not ended.
    pub fn turn_active(&self) -> bool {
        self.turn.is_some() && !self.mapper.turn_ended()
    }

    /// The CLI's session id, once it reported one.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Translates one stdout line. `Err` only for a line that is not a JSON object or a known
    /// line type with fields of the wrong shape; unknown types give `Ok(vec![])`.
    pub fn on_line(&mut self, line: &str) -> Result<Vec<Output>, LineError> {
        let parsed = parse_line(line)?;
        let mut out = Vec::new();
        if self.stale_results > 0 {
            self.stale_line(parsed, &mut out);
            return Ok(out);
        }
        match parsed {
            CliLine::System(system) => self.system(system, &mut out),
            CliLine::StreamEvent(event) => self.stream_event(event, &mut out),
            CliLine::Assistant(assistant) => self.assistant(assistant, &mut out),
            CliLine::User(user) => self.user(user, &mut out),
            CliLine::ControlRequest(request) => {
                self.control_request(request.request_id, request.request, &mut out);
            }
            CliLine::ControlResponse(response) => self.control_response(response, &mut out),
            CliLine::ControlCancelRequest(cancel) => {
                self.cli_requests.remove(&cancel.request_id);
                out.push(Output::RequestCancelled {
                    request_id: cancel.request_id,
                });
            }
            CliLine::Result(result) => self.result(result, &mut out),
            CliLine::Other { kind } => tracing::debug!(kind, "ignoring an unknown line type"),
        }
        Ok(out)
    }

    /// A line of an aborted turn whose `result` has not arrived yet: only what the driver needs
    /// regardless of turns (session id, control traffic) comes out.
    fn stale_line(&mut self, line: CliLine, out: &mut Vec<Output>) {
        match line {
            CliLine::Result(result) => {
                self.stale_results -= 1;
                if let Some(id) = &result.session_id {
                    self.session_id_seen(id, out);
                }
            }
            CliLine::System(SystemLine::Init(init)) => self.session_id_seen(&init.session_id, out),
            CliLine::ControlRequest(request) => match request.request {
                ControlRequest::CanUseTool(_) => out.push(Output::DenyPermission {
                    request_id: request.request_id,
                    message: "The turn was cancelled.".to_owned(),
                }),
                other => self.control_request(request.request_id, other, out),
            },
            CliLine::ControlResponse(response) => self.control_response(response, out),
            CliLine::ControlCancelRequest(cancel) => out.push(Output::RequestCancelled {
                request_id: cancel.request_id,
            }),
            _ => tracing::debug!("dropping output of an aborted turn"),
        }
    }

    /// The driver replaced the CLI process: nothing more will arrive from the old one (no
    /// `result` of an aborted turn, no echo of an answer).
    pub fn process_replaced(&mut self) {
        self.stale_results = 0;
        self.cli_requests.clear();
    }

    /// The driver cancelled the turn (the client already dispatched `chat/turnCancelled`):
    /// forget it, emit nothing. What the CLI still prints for it, up to its `result`, is
    /// dropped — also after the next [`Translator::begin_turn`].
    pub fn abort_turn(&mut self) {
        if self.turn.take().is_some() {
            self.stale_results += 1;
            // An aborted idle only ends the mapper's turn: it produces no signal.
            self.mapper.map(NormEvent::Idle {
                aborted: true,
                duration_ms: None,
            });
        }
    }

    /// The process died or the stream broke mid-turn: `chat/error` with `error` unless the turn
    /// already ended. (The driver calls [`Translator::process_replaced`] when it starts another
    /// process.)
    pub fn fail_turn(&mut self, error: ErrorInfo) -> Vec<AgentSignal> {
        if self.turn.take().is_none() {
            return Vec::new();
        }
        self.mapper.fail(error)
    }

    fn emit(&mut self, event: NormEvent, out: &mut Vec<Output>) {
        out.extend(self.mapper.map(event).into_iter().map(Output::Signal));
    }

    fn session_id_seen(&mut self, id: &str, out: &mut Vec<Output>) {
        if !id.is_empty() && self.session_id.as_deref() != Some(id) {
            self.session_id = Some(id.to_owned());
            out.push(Output::SessionId(id.to_owned()));
        }
    }

    /// The main model's `contextWindow` and `maxOutputTokens` from a `result`'s `modelUsage`
    /// (Claude Code reports no prompt limit of its own: none is derived).
    fn report_limits(&mut self, result: &ResultLine, out: &mut Vec<Output>) {
        let (Some(models), Some(model)) = (&result.model_usage, &self.cli_model) else {
            return;
        };
        let Some(usage) = models.get(model) else {
            return;
        };
        let value = |key: &str| usage.get(key).and_then(serde_json::Value::as_u64);
        let limits = agenthost_protocol::ModelLimits {
            max_prompt_tokens: None,
            max_context_window: value("contextWindow"),
            max_output_tokens: value("maxOutputTokens"),
        };
        self.emit(NormEvent::ModelLimits { limits }, out);
    }

    fn system(&mut self, system: SystemLine, out: &mut Vec<Output>) {
        match system {
            SystemLine::Init(init) => {
                if init.model.is_some() {
                    self.cli_model.clone_from(&init.model);
                }
                self.session_id_seen(&init.session_id, out);
            }
            SystemLine::PermissionDenied(denied) => {
                // The error tool result follows; remember that it is a denial.
                if let Some(turn) = &mut self.turn {
                    turn.denied.insert(denied.tool_use_id);
                }
            }
            SystemLine::TaskStarted(task) => {
                if let (Some(turn), Some(id)) = (&mut self.turn, task.tool_use_id) {
                    turn.spawns.entry(id).or_default().background = true;
                }
            }
            SystemLine::TaskNotification(task) => {
                let finished = matches!(
                    task.status.as_deref(),
                    Some("completed" | "failed" | "stopped" | "killed")
                );
                if let (true, Some(id), true) = (finished, task.tool_use_id, self.turn.is_some()) {
                    self.emit(
                        NormEvent::SubagentEnded {
                            parent_tool_call_id: id,
                        },
                        out,
                    );
                }
            }
            SystemLine::Status { .. } | SystemLine::Other { .. } => {}
        }
    }

    /// Announces the subagent of `scope` with what its spawning call asked, before its first
    /// event (the mapper would announce it anyway, but without a name or a task).
    fn enter_scope(&mut self, scope: &Scope, out: &mut Vec<Output>) {
        let (Some(parent), Some(turn)) = (scope.parent_tool_call_id(), &mut self.turn) else {
            return;
        };
        if !turn.subagents.insert(parent.to_owned()) {
            return;
        }
        let spawn = turn.spawns.get(parent);
        let agent = spawn.and_then(|spawn| spawn.agent.clone());
        let event = NormEvent::SubagentStarted {
            parent_tool_call_id: parent.to_owned(),
            agent_name: agent.clone().unwrap_or_else(|| "subagent".to_owned()),
            display_name: agent.unwrap_or_else(|| "Subagent".to_owned()),
            description: spawn.and_then(|spawn| spawn.description.clone()),
            prompt: spawn.and_then(|spawn| spawn.prompt.clone()),
            grandparent: turn
                .tools
                .get(parent)
                .and_then(|tool| tool.scope.parent_tool_call_id())
                .map(str::to_owned),
        };
        self.emit(event, out);
    }

    fn stream_event(&mut self, line: StreamEventLine, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            tracing::debug!("ignoring a stream event outside a turn");
            return;
        };
        let scope = Scope::from_parent(line.parent_tool_use_id.as_deref());
        let message = |turn: &TurnTrack| {
            turn.current_message
                .get(&scope)
                .cloned()
                .or_else(|| line.api_message_id.clone())
        };
        match line.event {
            StreamEvent::MessageStart { message } => {
                turn.streamed.insert(message.id.clone());
                turn.current_message.insert(scope, message.id);
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let Some(message) = message(turn) else {
                    tracing::warn!("a streamed block outside any message");
                    return;
                };
                turn.streamed.insert(message.clone());
                let stream_id = format!("{message}#{index}");
                let (block, event) = match content_block {
                    ContentBlock::Text { text } => (
                        StreamBlock::Text,
                        NormEvent::TextDelta {
                            scope: scope.clone(),
                            stream_id,
                            text,
                        },
                    ),
                    ContentBlock::Thinking { thinking } => (
                        StreamBlock::Thinking,
                        NormEvent::ReasoningDelta {
                            scope: scope.clone(),
                            stream_id,
                            text: thinking,
                        },
                    ),
                    ContentBlock::ToolUse { id, name, .. } => {
                        turn.blocks.insert(
                            (message, index),
                            StreamBlock::Tool {
                                id: id.clone(),
                                buffer: String::new(),
                            },
                        );
                        self.tool_started(&scope, id, name, out);
                        return;
                    }
                    ContentBlock::ToolResult { .. } | ContentBlock::Other => return,
                };
                turn.blocks.insert((message, index), block);
                self.enter_scope(&scope, out);
                self.emit(event, out);
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                let Some(message) = message(turn) else {
                    return;
                };
                let stream_id = format!("{message}#{index}");
                let event = match delta {
                    BlockDelta::TextDelta { text } => NormEvent::TextDelta {
                        scope: scope.clone(),
                        stream_id,
                        text,
                    },
                    BlockDelta::ThinkingDelta { thinking } => NormEvent::ReasoningDelta {
                        scope: scope.clone(),
                        stream_id,
                        text: thinking,
                    },
                    BlockDelta::InputJsonDelta { partial_json } => {
                        let Some(StreamBlock::Tool { id, buffer }) =
                            turn.blocks.get_mut(&(message, index))
                        else {
                            tracing::warn!(index, "input for a block that is not a tool call");
                            return;
                        };
                        buffer.push_str(&partial_json);
                        NormEvent::ToolArgsDelta {
                            scope: scope.clone(),
                            tool_call_id: id.clone(),
                            partial_json,
                        }
                    }
                    BlockDelta::SignatureDelta | BlockDelta::Other => return,
                };
                self.emit(event, out);
            }
            StreamEvent::ContentBlockStop { index } => {
                let Some(message) = message(turn) else {
                    return;
                };
                if let Some(StreamBlock::Tool { id, buffer }) =
                    turn.blocks.remove(&(message, index))
                {
                    // Usually the full `assistant` line made it ready already.
                    let input = match serde_json::from_str::<Value>(&buffer) {
                        Ok(input) => input,
                        Err(_) if buffer.is_empty() => json!({}),
                        Err(_) => Value::String(buffer),
                    };
                    self.tool_ready(&id, input, out);
                }
            }
            StreamEvent::MessageStop => {
                if let Some(message) = turn.current_message.remove(&scope) {
                    self.emit(
                        NormEvent::ModelCallCompleted {
                            model_call_id: message,
                        },
                        out,
                    );
                }
            }
            StreamEvent::MessageDelta | StreamEvent::Other => {}
        }
    }

    fn tool_started(&mut self, scope: &Scope, id: String, name: String, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if turn.tools.contains_key(&id) {
            return;
        }
        turn.tools.insert(
            id.clone(),
            ToolInfo {
                name: name.clone(),
                scope: scope.clone(),
                input: None,
                ready: false,
            },
        );
        self.enter_scope(scope, out);
        self.emit(
            NormEvent::ToolStarted {
                scope: scope.clone(),
                tool_call_id: id,
                display_name: tools::display_name(&name),
                tool_name: name,
                contributor: None,
                meta: None,
            },
            out,
        );
    }

    /// The tool's input is final: `ready (not-needed)` — the CLI runs it, or asks first with a
    /// `can_use_tool` that moves it back to pending confirmation.
    fn tool_ready(&mut self, id: &str, input: Value, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        let Some(tool) = turn.tools.get_mut(id) else {
            return;
        };
        if tool.ready {
            return;
        }
        tool.ready = true;
        tool.input = Some(input.clone());
        let mut meta = None;
        if tools::is_spawning(&tool.name) {
            let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
            let spawn = turn.spawns.entry(id.to_owned()).or_default();
            spawn.description = text("description");
            spawn.agent = text("subagent_type");
            spawn.prompt = text("prompt");
            let mut object = JsonObject::new();
            if let Some(description) = &spawn.description {
                object.insert("subagentDescription".into(), description.clone().into());
            }
            if let Some(agent) = &spawn.agent {
                object.insert("subagentAgentName".into(), agent.clone().into());
            }
            meta = (!object.is_empty()).then_some(object);
        }
        let event = NormEvent::ToolReady {
            scope: tool.scope.clone(),
            tool_call_id: id.to_owned(),
            invocation_message: tools::invocation_message(&tool.name, &input),
            tool_input: Some(input_text(&input)),
            auto_approved: true,
            meta,
        };
        self.emit(event, out);
    }

    fn assistant(&mut self, line: AssistantLine, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            tracing::warn!("dropping assistant output outside a turn");
            return;
        };
        if line.is_api_error_message {
            let text = line.message.content.iter().find_map(|block| match block {
                ContentBlock::Text { text } => Some(text.clone()),
                _ => None,
            });
            turn.api_error = Some(ApiError {
                text,
                status: line.api_error_status,
                error_type: line.api_error_type,
            });
            return;
        }
        let scope = Scope::from_parent(line.parent_tool_use_id.as_deref());
        let message = line.message.id.unwrap_or_else(|| {
            turn.anonymous_messages += 1;
            format!("message-{}", turn.anonymous_messages)
        });
        let streamed = turn.streamed.contains(&message);
        for block in line.message.content {
            // Without partial messages each block is its own line: count them to number the
            // blocks as the stream would.
            let stream_id = match &mut self.turn {
                Some(turn) if !streamed => {
                    let index = turn.unstreamed_blocks.entry(message.clone()).or_insert(0);
                    *index += 1;
                    Some(format!("{message}#{}", *index - 1))
                }
                _ => None,
            };
            match block {
                ContentBlock::Text { text } => {
                    if let Some(stream_id) = stream_id {
                        self.enter_scope(&scope, out);
                        let scope = scope.clone();
                        self.emit(
                            NormEvent::TextFull {
                                scope,
                                stream_id,
                                text,
                            },
                            out,
                        );
                    }
                }
                ContentBlock::Thinking { thinking } => {
                    if let Some(stream_id) = stream_id {
                        self.enter_scope(&scope, out);
                        let scope = scope.clone();
                        self.emit(
                            NormEvent::ReasoningFull {
                                scope,
                                stream_id,
                                text: thinking,
                            },
                            out,
                        );
                    }
                }
                ContentBlock::ToolUse { id, name, input } => {
                    self.tool_started(&scope, id.clone(), name, out);
                    self.tool_ready(&id, input, out);
                }
                ContentBlock::ToolResult { .. } | ContentBlock::Other => {}
            }
        }
    }

    fn user(&mut self, line: UserLine, out: &mut Vec<Output>) {
        if line.is_replay {
            // The echo of a consumed user message: nothing to show.
            return;
        }
        let UserContent::Blocks(blocks) = line.message.content else {
            // A subagent's prompt, or a text the CLI injected: not part of the transcript.
            return;
        };
        let results: Vec<(String, Value, bool)> = blocks
            .into_iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => Some((tool_use_id, content, is_error.unwrap_or(false))),
                _ => None,
            })
            .collect();
        if results.is_empty() {
            return;
        }
        if self.turn.is_none() {
            tracing::warn!("dropping tool results outside a turn");
            return;
        }
        let single = results.len() == 1;
        for (id, content, is_error) in results {
            let meta = line.tool_result_meta.iter().find(|meta| meta.id == id);
            let rejected = meta.is_some_and(|meta| {
                meta.non_execution_kind.is_some()
                    || meta
                        .permission_decision
                        .as_ref()
                        .is_some_and(|decision| decision.decision.as_deref() == Some("reject"))
            });
            let structured = match (&line.tool_use_result, single) {
                (Some(ToolUseResult::Object(object)), true) => Some(object.clone()),
                _ => None,
            };
            self.tool_result(id, &content, is_error, rejected, structured, out);
        }
    }

    fn tool_result(
        &mut self,
        id: String,
        content: &Value,
        is_error: bool,
        rejected: bool,
        structured: Option<JsonObject>,
        out: &mut Vec<Output>,
    ) {
        self.cli_requests
            .retain(|_, tool| tool.as_deref() != Some(id.as_str()));
        let Some(turn) = &mut self.turn else {
            return;
        };
        let denied = rejected || turn.denied.contains(&id);
        let outcome = match (denied, is_error) {
            (true, _) => Outcome::Denied,
            (false, true) => Outcome::Failed,
            (false, false) => Outcome::Succeeded,
        };
        let text = result_text(content);
        let tool = turn.tools.get(&id);
        let scope = tool.map_or(Scope::Root, |tool| tool.scope.clone());
        let past_tense =
            tool.map(|tool| tools::past_tense_message(&tool.name, tool.input.as_ref(), outcome));
        let foreground_spawn = tool.is_some_and(|tool| tools::is_spawning(&tool.name))
            && !turn.spawns.get(&id).is_some_and(|spawn| spawn.background);
        let error = match outcome {
            Outcome::Denied => Some(ToolError::denied(non_empty(&text, "denied"))),
            Outcome::Failed => Some(ToolError::new(non_empty(&text, "the tool failed"))),
            Outcome::Succeeded => None,
        };
        if foreground_spawn {
            self.emit(
                NormEvent::SubagentEnded {
                    parent_tool_call_id: id.clone(),
                },
                out,
            );
        }
        let content = if text.is_empty() {
            Vec::new()
        } else {
            vec![ToolResultContent::Text(ToolResultTextContent { text })]
        };
        self.emit(
            NormEvent::ToolCompleted {
                scope,
                tool_call_id: id,
                success: outcome == Outcome::Succeeded,
                past_tense_message: past_tense,
                content,
                structured_content: structured,
                error,
            },
            out,
        );
    }

    fn control_request(
        &mut self,
        request_id: String,
        request: ControlRequest,
        out: &mut Vec<Output>,
    ) {
        match request {
            ControlRequest::CanUseTool(request) => {
                self.cli_requests
                    .insert(request_id.clone(), request.tool_use_id.clone());
                self.can_use_tool(request_id, request, out);
            }
            ControlRequest::Other { subtype } => {
                out.push(Output::UnsupportedControlRequest {
                    request_id,
                    subtype,
                });
            }
        }
    }

    fn can_use_tool(&mut self, request_id: String, request: CanUseTool, out: &mut Vec<Output>) {
        let deny = |message: &str| Output::DenyPermission {
            request_id: request_id.clone(),
            message: message.to_owned(),
        };
        let Some(turn) = &self.turn else {
            out.push(deny(
                "No turn is running, so nobody can approve this tool call.",
            ));
            return;
        };
        let Some(tool_use_id) = request.tool_use_id else {
            out.push(deny(
                "The request names no tool call, so it cannot be shown for approval.",
            ));
            return;
        };
        let scope = turn
            .tools
            .get(&tool_use_id)
            .map_or(Scope::Root, |tool| tool.scope.clone());
        if request.tool_name == tools::ASK_USER_QUESTION {
            self.ask_user_question(request_id, &tool_use_id, scope, request.input, out);
            return;
        }
        self.enter_scope(&scope, out);
        let display_name = request
            .display_name
            .unwrap_or_else(|| tools::display_name(&request.tool_name));
        let event = NormEvent::PermissionAsked {
            scope,
            tool_call_id: tool_use_id.clone(),
            kind: tools::permission_kind(&request.tool_name),
            path: tools::permission_path(request.blocked_path.as_deref(), &request.input),
            title: tools::confirmation_title(&request.tool_name),
            invocation_message: tools::invocation_message(&request.tool_name, &request.input),
            input: Some(input_text(&request.input)),
            tool_name: request.tool_name,
            display_name,
        };
        let signals = self.mapper.map(event);
        let asked = signals
            .iter()
            .any(|signal| matches!(signal, AgentSignal::PendingConfirmation(_)));
        out.extend(signals.into_iter().map(Output::Signal));
        if asked {
            out.push(Output::PermissionRequest {
                request_id,
                tool_use_id,
                input: request.input,
            });
        } else {
            out.push(deny("This tool call cannot be shown for approval."));
        }
    }

    /// `AskUserQuestion`: its questions as `chat/inputRequested`, then the request
    /// for the driver to park. Its tool call stays as it is (running after the synthetic ready)
    /// and completes from the `tool_result` that follows the answer.
    fn ask_user_question(
        &mut self,
        request_id: String,
        tool_use_id: &str,
        scope: Scope,
        input: Value,
        out: &mut Vec<Output>,
    ) {
        let deny = |request_id: String| Output::DenyPermission {
            request_id,
            message: "These questions cannot be shown to the user; continue without the answers."
                .to_owned(),
        };
        let Some(request) =
            questions::request_id(tool_use_id).and_then(|id| questions::input_request(id, &input))
        else {
            out.push(deny(request_id));
            return;
        };
        let input_request_id = request.id.clone();
        self.enter_scope(&scope, out);
        let signals = self.mapper.map(NormEvent::InputAsked { scope, request });
        let asked = signals.iter().any(|signal| {
            matches!(signal, AgentSignal::Action(action)
                if matches!(action.action, StateAction::ChatInputRequested(_)))
        });
        out.extend(signals.into_iter().map(Output::Signal));
        if asked {
            out.push(Output::InputRequest {
                request_id,
                input_request_id,
                input,
            });
        } else {
            out.push(deny(request_id));
        }
    }

    fn control_response(&mut self, line: ControlResponseLine, out: &mut Vec<Output>) {
        let response = line.response;
        if self.cli_requests.remove(&response.request_id).is_some() {
            // The echo of the host's own answer (`--replay-user-messages`).
            return;
        }
        out.push(Output::ControlResponse {
            success: response.subtype == "success",
            request_id: response.request_id,
            error: response.error,
        });
    }

    fn result(&mut self, result: ResultLine, out: &mut Vec<Output>) {
        if let Some(id) = &result.session_id {
            self.session_id_seen(id, out);
        }
        let Some(turn) = self.turn.take() else {
            tracing::debug!("a result outside a turn");
            return;
        };
        self.report_limits(&result, out);
        if let Some(usage) = &result.usage {
            let model = result
                .model_usage
                .as_ref()
                .and_then(|models| models.keys().next().cloned());
            let meta = result.total_cost_usd.map(|cost| {
                let mut meta = JsonObject::new();
                meta.insert("totalCostUsd".into(), cost.into());
                meta
            });
            self.emit(
                NormEvent::Usage {
                    scope: Scope::Root,
                    input: usage.input_tokens.unwrap_or(0),
                    output: usage.output_tokens.unwrap_or(0),
                    cache_read: usage.cache_read_input_tokens,
                    model,
                    meta,
                },
                out,
            );
        }
        let terminal = match terminal_error(&result, turn.api_error.as_ref()) {
            Some(error) => NormEvent::Failed {
                error,
                duration_ms: result.duration_ms,
            },
            None => NormEvent::Idle {
                aborted: false,
                duration_ms: result.duration_ms,
            },
        };
        self.emit(terminal, out);
        out.push(Output::TurnEnded);
    }
}

/// The error a `result` ends the turn with, if any.
fn terminal_error(result: &ResultLine, api_error: Option<&ApiError>) -> Option<ErrorInfo> {
    let message = if result.subtype == "error_during_execution" {
        let errors: Vec<String> = result
            .errors
            .iter()
            .map(|error| match error {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .collect();
        if errors.is_empty() {
            result.result.clone()
        } else {
            Some(errors.join("\n"))
        }
    } else if result.subtype.starts_with("error_") || !result.is_error {
        // `error_max_turns` and friends end the turn normally.
        return None;
    } else {
        result
            .result
            .clone()
            .or_else(|| api_error.and_then(|error| error.text.clone()))
    };
    let error_type = if result.subtype == "error_during_execution" {
        result.subtype.clone()
    } else {
        result
            .terminal_reason
            .clone()
            .unwrap_or_else(|| result.subtype.clone())
    };
    let status = result
        .api_error_status
        .clone()
        .filter(|status| !status.is_null())
        .or_else(|| api_error.and_then(|error| error.status.clone()));
    let api_type = result
        .api_error_type
        .clone()
        .or_else(|| api_error.and_then(|error| error.error_type.clone()));
    let mut meta = JsonObject::new();
    if let Some(status) = status {
        meta.insert("apiErrorStatus".into(), status);
    }
    if let Some(api_type) = api_type {
        meta.insert("apiErrorType".into(), api_type.into());
    }
    Some(ErrorInfo {
        error_type: if error_type.is_empty() {
            "error".to_owned()
        } else {
            error_type
        },
        message: message
            .filter(|message| !message.is_empty())
            .unwrap_or_else(|| "Claude Code reported an error.".to_owned()),
        stack: None,
        meta: (!meta.is_empty()).then_some(meta),
    })
}

/// A tool input as the protocol's inline text.
fn input_text(input: &Value) -> String {
    match input {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The text of a tool result: a string, or the text items of an array joined by newlines.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|item| match item.get("type").and_then(Value::as_str) {
                Some("text") => item.get("text").and_then(Value::as_str).map(str::to_owned),
                Some(other) => Some(format!("[{other}]")),
                None => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn non_empty(text: &str, fallback: &str) -> String {
    if text.is_empty() {
        fallback.to_owned()
    } else {
        text.to_owned()
    }
}

/// Maps a whole stdout transcript as one turn `turn_id`: every non-empty line, in order; the
/// signals only (what `agent-host map` prints and the fixture tests check).
pub fn map_transcript(
    session: SessionUri,
    turn_id: &str,
    text: &str,
) -> Result<Vec<AgentSignal>, TranscriptError> {
    let mut translator = Translator::new(session);
    translator.begin_turn(turn_id);
    let mut signals = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let outputs = translator.on_line(line).map_err(|error| TranscriptError {
            line: index + 1,
            error,
        })?;
        for output in outputs {
            if let Output::Signal(signal) = output {
                signals.push(signal);
            }
        }
    }
    Ok(signals)
}

/// A transcript line [`map_transcript`] could not read, with its 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {error}")]
pub struct TranscriptError {
    /// The 1-based line number.
    pub line: usize,
    /// What was wrong with it.
    pub error: LineError,
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;

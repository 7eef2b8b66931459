//! The Copilot translator: decoded messages in, [`Output`]s out.
//!
//! It is thin on purpose: session events become provider-neutral [`NormEvent`]s for one
//! [`Mapper`], which owns every AHP ordering rule. What it knows that the mapper cannot: which
//! Copilot session and which events belong to the protocol turn (Copilot's `turnId`s are model
//! rounds inside it, never protocol turns), which subagent an `agentId` is, what a Copilot tool
//! looks like to people ([`crate::tools`]), which permission requests the host may answer on
//! its own, and how `session.idle`, `session.error` and prompt mode's `result` end the turn.
//! Everything that needs the process — answering a request, a permission, a server request —
//! comes out as an [`Output`] for the driver.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Component, Path};

use agenthost_protocol::common::JsonObject;
use agenthost_protocol::state::{
    ContentRef, ErrorInfo, FileEdit, FileEditCollection, FileEditDiffStats, FileEditSide,
    ToolResultContent, ToolResultTextContent,
};
use agenthost_protocol::uri::path_to_file_uri;
use agenthost_protocol::{AgentSignal, ModelLimits, SessionUri};
use agenthost_provider_api::{Mapper, NormEvent, Scope, ToolError};
use base64::Engine as _;
use serde_json::{Value, json};

use crate::tools::{self, Call, Outcome};
use crate::wire::{
    AssistantMessageData, Event, EventData, Message, Notification, PermissionCompletedData,
    PermissionRequest, PermissionRequestedData, PromptResult, Response, RpcError, SessionErrorData,
    SkillInvokedData, SubagentStartedData, ToolCallDeltaData, ToolExecutionCompleteData,
    ToolExecutionStartData, UsageData,
};

/// The error type of a turn that Copilot reported as failed.
pub const COPILOT_ERROR: &str = "CopilotError";

/// What the CLI is told when the host rejects a permission request on its own.
const NO_TOOL_CALL: &str = "The host cannot show a permission request that names no tool call.";
const NO_TURN: &str = "No turn is running in the host.";
const NOT_SHOWN: &str = "The host could not show this tool call.";

/// What one message asks of the driver.
// Outputs live for one message and are moved into a `Vec` once: boxing the signal buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A signal for the host.
    Signal(AgentSignal),
    /// A response to one of the host's requests (the driver matches `id` to its waiter).
    Response {
        /// The id of the host's request.
        id: Value,
        /// `result` or `error`.
        result: Result<Value, RpcError>,
    },
    /// `permission.requested`: the `PendingConfirmation` signal was emitted just before, as
    /// [`Output::Signal`]. The driver parks `request_id` (Copilot's `requestId`) under
    /// `tool_call_id` and answers it with `session.permissions.handlePendingPermissionRequest`
    /// when the host does (and tells [`Translator::record_decision`]).
    PermissionRequest {
        /// Copilot's request id.
        request_id: String,
        /// The tool call.
        tool_call_id: String,
    },
    /// A permission request the translator answers itself right away (no tool call id, no
    /// turn, or the agent's own session state and spilled outputs, approved automatically): the
    /// driver sends the answer.
    AnswerPermission {
        /// Copilot's request id.
        request_id: String,
        /// Approve or reject.
        approved: bool,
        /// Why, for the agent, on a rejection.
        feedback: Option<String>,
    },
    /// Any server → client request: the driver answers JSON-RPC error -32601 naming `method`.
    UnsupportedRequest {
        /// The CLI's request id.
        request_id: Value,
        /// The method.
        method: String,
    },
    /// The protocol turn ended (after its terminal signal).
    TurnEnded,
}

/// A message the translator could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    kind: LineErrorKind,
    snippet: String,
}

/// What was wrong with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineErrorKind {
    /// Not JSON at all, or JSON but not an object.
    NotAnObject,
    /// A known message whose fields do not have the expected shape.
    Malformed {
        /// The decoder's explanation.
        reason: String,
    },
}

/// How much of a bad message an error quotes.
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

    /// The beginning of the offending message.
    pub fn snippet(&self) -> &str {
        &self.snippet
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            LineErrorKind::NotAnObject => write!(f, "not a JSON object: {}", self.snippet),
            LineErrorKind::Malformed { reason } => {
                write!(f, "malformed message ({reason}): {}", self.snippet)
            }
        }
    }
}

impl std::error::Error for LineError {}

/// Parses one message (a frame body or a prompt-mode line).
pub fn parse_message(body: &str) -> Result<Message, LineError> {
    let value = match serde_json::from_str::<Value>(body) {
        Ok(value) if value.is_object() => value,
        _ => return Err(LineError::new(LineErrorKind::NotAnObject, body)),
    };
    Message::from_value(value)
        .map_err(|reason| LineError::new(LineErrorKind::Malformed { reason }, body))
}

/// The translator of one Copilot conversation (one Copilot session).
#[derive(Debug)]
pub struct Translator {
    mapper: Mapper,
    copilot_session: Option<String>,
    /// The session's working directory (a redundant `cd <cwd> &&` is hidden).
    cwd: Option<String>,
    /// The CLI's own directory of this session (`workspacePath`): reading and writing it is
    /// approved without asking.
    session_state_dir: Option<String>,
    /// The OS temporary directory, where the CLI spills large tool outputs.
    temp_dir: Option<String>,
    /// Present while a protocol turn runs.
    turn: Option<TurnTrack>,
    /// `session.idle`s owed by turns that ended before the CLI said so (the client cancelled,
    /// or `session.error`). Until the idle or the next turn's `user.message` arrives, events
    /// belong to such a turn and are dropped.
    owed_idles: usize,
}

/// Per protocol turn.
#[derive(Debug)]
struct TurnTrack {
    id: String,
    /// The timestamp (ms) of the turn's `user.message`, else of its first event.
    started_at: Option<i64>,
    user_message_seen: bool,
    /// The host's `session.send` request (as JSON text), when the driver said.
    send_request: Option<String>,
    /// The message id `session.send` answered with.
    message_id: Option<String>,
    tools: HashMap<String, ToolTrack>,
    /// Hidden tool calls (intent reports): none of their events are shown.
    hidden: HashSet<String>,
    /// What `assistant.message` said about its tool calls.
    requests: HashMap<String, RequestInfo>,
    /// Subagents: `agentId` → the tool call that started it.
    agents: HashMap<String, String>,
    /// Parked permission requests: request id → tool call.
    permissions: HashMap<String, String>,
    /// Tool calls the host declined.
    declined: HashSet<String>,
    /// An activity line is shown (cleared at the end of the turn).
    activity: bool,
    /// Synthesized skill reads so far (ids for events without one).
    skills: usize,
}

#[derive(Debug)]
struct ToolTrack {
    name: String,
    scope: Scope,
    mcp_tool: Option<String>,
    /// The final arguments, once `tool.execution_start` told (`Null` before).
    arguments: Value,
    /// The arguments streamed so far.
    streamed: String,
    /// The invocation message last sent while streaming.
    streamed_message: Option<String>,
    /// Live output so far.
    output: String,
    completed: bool,
}

impl ToolTrack {
    fn new(name: &str, scope: Scope, mcp_tool: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            scope,
            mcp_tool,
            arguments: Value::Null,
            streamed: String::new(),
            streamed_message: None,
            output: String::new(),
            completed: false,
        }
    }
}

#[derive(Debug, Default)]
struct RequestInfo {
    name: String,
    arguments: Option<Value>,
    intention: Option<String>,
    title: Option<String>,
}

impl TurnTrack {
    fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            started_at: None,
            user_message_seen: false,
            send_request: None,
            message_id: None,
            tools: HashMap::new(),
            hidden: HashSet::new(),
            requests: HashMap::new(),
            agents: HashMap::new(),
            permissions: HashMap::new(),
            declined: HashSet::new(),
            activity: false,
            skills: 0,
        }
    }

    fn duration(&self, ended_at: Option<i64>) -> Option<i64> {
        let (start, end) = (self.started_at?, ended_at?);
        (end >= start).then_some(end - start)
    }
}

impl Translator {
    /// A translator for a conversation of `session`, with no Copilot session and no turn yet.
    pub fn new(session: SessionUri) -> Self {
        Self {
            mapper: Mapper::new(session),
            copilot_session: None,
            cwd: None,
            session_state_dir: None,
            temp_dir: None,
            turn: None,
            owed_idles: 0,
        }
    }

    /// The model this conversation runs on, by the id the host advertises it under: limits
    /// Copilot reports for it reach the host's model list.
    pub fn set_model(&mut self, model: impl Into<String>) {
        self.mapper.set_model(model);
    }

    /// Follows Copilot session `id`: events of other sessions are ignored. (Without it, the
    /// session of the first `session.create` / `session.resume` response or event is followed.)
    pub fn set_copilot_session(&mut self, id: &str) {
        self.copilot_session = Some(id.to_owned());
    }

    /// The Copilot session this conversation follows.
    pub fn copilot_session(&self) -> Option<&str> {
        self.copilot_session.as_deref()
    }

    /// The session's working directory (also learned from `session.start`).
    pub fn set_working_directory(&mut self, cwd: &str) {
        self.cwd = Some(cwd.to_owned());
    }

    /// The CLI's directory of this session (also learned from the `workspacePath` of the
    /// `session.create` / `session.resume` response): the agent reads and writes it without
    /// asking.
    pub fn set_session_state_dir(&mut self, dir: &str) {
        self.session_state_dir = Some(dir.to_owned());
    }

    /// The OS temporary directory: the agent reads its spilled tool outputs there
    /// (`…copilot-tool-output-….txt`) without asking.
    pub fn set_temp_dir(&mut self, dir: &str) {
        self.temp_dir = Some(dir.to_owned());
    }

    /// Starts protocol turn `turn_id`, before `session.send` is written. A turn still running
    /// is forgotten (its later output is dropped by the mapper).
    pub fn begin_turn(&mut self, turn_id: &str) {
        if let Some(previous) = self.turn.take() {
            tracing::warn!(
                previous = previous.id,
                turn = turn_id,
                "a new turn begins before the previous one ended"
            );
        }
        self.mapper.begin_turn(turn_id);
        self.turn = Some(TurnTrack::new(turn_id));
    }

    /// The host wrote `session.send` for the current turn as request `request_id`: its
    /// response names the turn's message, so the turn's `user.message` is recognised even when
    /// a cancelled turn's events are still arriving.
    pub fn send_sent(&mut self, request_id: &Value) {
        if let Some(turn) = &mut self.turn {
            turn.send_request = Some(request_id.to_string());
        }
    }

    /// The protocol turn in progress.
    pub fn turn_id(&self) -> Option<&str> {
        self.turn.as_ref().map(|turn| turn.id.as_str())
    }

    /// The client cancelled the turn (and dispatched `chat/turnCancelled` itself): nothing more
    /// is emitted for it. Its remaining events and its aborted `session.idle` are dropped.
    pub fn abort_turn(&mut self) {
        if self.turn.take().is_some() {
            self.owed_idles += 1;
            // An aborted idle only ends the mapper's turn: it produces no signal.
            self.mapper.map(NormEvent::Idle {
                aborted: true,
                duration_ms: None,
            });
        }
    }

    /// The process died or the stream broke mid-turn: `chat/error` with `error`, unless no
    /// turn is running. Open tool calls are left to the reducer (cancelled at the turn's end).
    pub fn fail_turn(&mut self, error: ErrorInfo) -> Vec<AgentSignal> {
        if self.turn.take().is_none() {
            return Vec::new();
        }
        self.mapper.fail(error)
    }

    /// The host answered the permission request of tool call `tool_call_id`: a declined call
    /// completes as denied, an approved one shows its live output.
    pub fn record_decision(&mut self, tool_call_id: &str, approved: bool) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if !approved {
            turn.declined.insert(tool_call_id.to_owned());
        }
        let scope = turn
            .tools
            .get(tool_call_id)
            .map_or(Scope::Root, |tool| tool.scope.clone());
        self.mapper.map(NormEvent::PermissionResolved {
            scope,
            tool_call_id: tool_call_id.to_owned(),
            approved,
        });
    }

    /// Translates one decoded message (a frame body, or a line of `copilot -p --output-format
    /// json`). `Err` only for a message that is not a JSON object or a known message with
    /// fields of the wrong shape; unknown methods and event types give `Ok(vec![])`.
    pub fn on_message(&mut self, body: &str) -> Result<Vec<Output>, LineError> {
        let message = parse_message(body)?;
        let mut out = Vec::new();
        match message {
            Message::Response(response) => self.response(response, &mut out),
            Message::Notification(Notification::SessionEvent { session_id, event }) => {
                if self.ours(&session_id) {
                    self.event(event, &mut out);
                } else {
                    tracing::debug!(session_id, "ignoring an event of another Copilot session");
                }
            }
            Message::Notification(Notification::Other { method }) => {
                tracing::trace!(method, "ignoring a notification");
            }
            Message::Request(request) => out.push(Output::UnsupportedRequest {
                request_id: request.id,
                method: request.method,
            }),
            Message::Event(event) => self.event(event, &mut out),
            Message::PromptResult(result) => self.prompt_result(&result, &mut out),
        }
        Ok(out)
    }

    fn ours(&mut self, session_id: &str) -> bool {
        match &self.copilot_session {
            Some(ours) => ours == session_id,
            None => {
                self.copilot_session = Some(session_id.to_owned());
                true
            }
        }
    }

    fn emit(&mut self, event: NormEvent, out: &mut Vec<Output>) {
        out.extend(self.mapper.map(event).into_iter().map(Output::Signal));
    }

    fn response(&mut self, response: Response, out: &mut Vec<Output>) {
        if let Ok(result) = &response.result {
            let text = |key: &str| result.get(key).and_then(Value::as_str);
            if let Some(session_id) = text("sessionId")
                && self.ours(session_id)
                && let Some(path) = text("workspacePath")
                && self.session_state_dir.is_none()
            {
                self.session_state_dir = Some(path.to_owned());
            }
            if let (Some(turn), Some(message_id)) = (&mut self.turn, text("messageId"))
                && turn.send_request.as_deref() == Some(response.id.to_string().as_str())
            {
                turn.message_id = Some(message_id.to_owned());
            }
        }
        out.push(Output::Response {
            id: response.id,
            result: response.result,
        });
    }

    fn event(&mut self, event: Event, out: &mut Vec<Output>) {
        let at = event.timestamp.as_deref().and_then(timestamp_ms);
        // Session-level events, whatever the turn.
        match &event.data {
            EventData::SessionStart(data) | EventData::SessionResume(data) => {
                if let (None, Some(cwd)) = (&self.cwd, &data.context.cwd) {
                    self.cwd = Some(cwd.clone());
                }
                return;
            }
            EventData::TitleChanged(data) => {
                if !data.title.trim().is_empty() {
                    self.emit(
                        NormEvent::Title {
                            title: data.title.clone(),
                        },
                        out,
                    );
                }
                return;
            }
            EventData::ModelTurnStarted(data) => {
                // The main agent's model only (a subagent may run on another one).
                if event.agent_id.is_none()
                    && let Some(limits) = data
                        .model_info
                        .as_ref()
                        .and_then(|info| info.capabilities.as_ref())
                        .and_then(|capabilities| capabilities.limits.as_ref())
                {
                    let value = |key: &str| limits.get(key).and_then(Value::as_u64);
                    let limits = ModelLimits {
                        max_prompt_tokens: value("max_prompt_tokens"),
                        max_context_window: value("max_context_window_tokens"),
                        max_output_tokens: value("max_output_tokens"),
                    };
                    self.emit(NormEvent::ModelLimits { limits }, out);
                }
                return;
            }
            EventData::SessionIdle(data) => {
                if event.agent_id.is_some() {
                    // The session's idle is the main agent's; a subagent's ends nothing.
                    tracing::trace!("ignoring a subagent's idle");
                    return;
                }
                return self.idle(data.aborted, at, out);
            }
            _ => {}
        }
        if !self.belongs_to_turn(&event) {
            tracing::debug!(
                event = event.kind(),
                "dropping an event of a turn that already ended"
            );
            if let EventData::PermissionRequested(data) = &event.data {
                reject(out, &data.request_id, NO_TURN);
            }
            return;
        }
        let Some(turn) = &mut self.turn else {
            tracing::trace!(event = event.kind(), "ignoring an event outside a turn");
            if let EventData::PermissionRequested(data) = &event.data {
                reject(out, &data.request_id, NO_TURN);
            }
            return;
        };
        if turn.started_at.is_none() {
            turn.started_at = at;
        }
        let agent = event.agent_id.as_deref();
        match event.data {
            EventData::UserMessage(data) => {
                // Steering (a message delivered into a running turn) is not implemented: the
                // first user message (the one `session.send` answered with, when known) starts
                // the turn's clock and later ones are ignored.
                let other_message = matches!(
                    (&turn.message_id, &data.message_id),
                    (Some(expected), Some(id)) if expected != id
                );
                if agent.is_none() && !turn.user_message_seen && !other_message {
                    turn.user_message_seen = true;
                    if at.is_some() {
                        turn.started_at = at;
                    }
                    tracing::trace!(delivery = data.delivery, "the turn's user message");
                }
            }
            EventData::MessageDelta(data) => {
                if let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) {
                    self.emit(
                        NormEvent::TextDelta {
                            scope,
                            stream_id: data.message_id,
                            text: data.delta_content,
                        },
                        out,
                    );
                }
            }
            EventData::Message(data) => self.assistant_message(agent, data, out),
            EventData::ReasoningDelta(data) => {
                if let Some(scope) = self.scope(agent, None) {
                    self.emit(
                        NormEvent::ReasoningDelta {
                            scope,
                            stream_id: data.reasoning_id,
                            text: data.delta_content,
                        },
                        out,
                    );
                }
            }
            EventData::Reasoning(data) => {
                if let Some(scope) = self.scope(agent, None) {
                    self.emit(
                        NormEvent::ReasoningFull {
                            scope,
                            stream_id: data.reasoning_id,
                            text: data.content,
                        },
                        out,
                    );
                }
            }
            EventData::ToolCallDelta(data) => self.tool_call_delta(agent, data, out),
            EventData::ToolExecutionStart(data) => self.tool_started(agent, data, out),
            EventData::ToolPartialResult(data) => {
                self.tool_output(&data.tool_call_id, &data.partial_output, None, out);
            }
            EventData::ToolProgress(data) => {
                self.tool_output(&data.tool_call_id, "", Some(&data.progress_message), out);
            }
            EventData::ToolExecutionComplete(data) => self.tool_completed(agent, data, out),
            EventData::PermissionRequested(data) => self.permission(agent, *data, out),
            EventData::PermissionCompleted(data) => self.permission_completed(data),
            EventData::Usage(data) => self.usage(agent, data, out),
            EventData::SubagentStarted(data) => self.subagent_started(agent, data, out),
            EventData::SubagentCompleted(data) | EventData::SubagentFailed(data) => {
                self.emit(
                    NormEvent::SubagentEnded {
                        parent_tool_call_id: data.tool_call_id,
                    },
                    out,
                );
            }
            EventData::SkillInvoked(data) => {
                self.skill_invoked(agent, event.id.as_deref(), data, out);
            }
            EventData::SessionError(data) => self.session_error(agent, &data, at, out),
            EventData::ModelCallFinished(data) => {
                let model_call_id = match (data.interaction_id, data.turn_id) {
                    (Some(interaction), Some(round)) => format!("{interaction}#{round}"),
                    _ => event.id.unwrap_or_default(),
                };
                if !model_call_id.is_empty() {
                    self.emit(NormEvent::ModelCallCompleted { model_call_id }, out);
                }
            }
            // Handled above.
            EventData::SessionStart(_)
            | EventData::SessionResume(_)
            | EventData::TitleChanged(_)
            | EventData::ModelTurnStarted(_)
            | EventData::SessionIdle(_) => {}
            EventData::Other { kind } => tracing::trace!(kind, "ignoring an event"),
        }
    }

    /// Whether `event` may belong to the current turn: not while a turn that ended early still
    /// owes its `session.idle` — until the current turn's own `user.message` shows up.
    fn belongs_to_turn(&mut self, event: &Event) -> bool {
        if self.owed_idles == 0 {
            return true;
        }
        let Some(turn) = &self.turn else {
            return false;
        };
        if turn.user_message_seen {
            return true;
        }
        let EventData::UserMessage(data) = &event.data else {
            return false;
        };
        let ours = event.agent_id.is_none()
            && match (&turn.message_id, &data.message_id) {
                (Some(expected), Some(id)) => expected == id,
                _ => true,
            };
        if ours {
            // Whatever the ended turns still owe comes before this message, or never.
            self.owed_idles = 0;
        }
        ours
    }

    /// The scope of an event of `agent` (`None`: the main agent); `None` drops the event (an
    /// unknown subagent).
    fn scope(&mut self, agent: Option<&str>, parent_tool_call_id: Option<&str>) -> Option<Scope> {
        let turn = self.turn.as_mut()?;
        let Some(agent) = agent else {
            return Some(Scope::from_parent(parent_tool_call_id));
        };
        if let Some(parent) = turn.agents.get(agent) {
            return Some(Scope::subagent(parent.clone()));
        }
        if let Some(parent) = parent_tool_call_id {
            turn.agents.insert(agent.to_owned(), parent.to_owned());
            return Some(Scope::subagent(parent));
        }
        tracing::warn!(agent, "dropping an event of an unknown subagent");
        None
    }

    fn idle(&mut self, aborted: bool, at: Option<i64>, out: &mut Vec<Output>) {
        let current_started = self.turn.as_ref().is_some_and(|t| t.user_message_seen);
        if self.owed_idles > 0 && !current_started {
            self.owed_idles -= 1;
            tracing::debug!("the idle of a turn that already ended");
            return;
        }
        let Some(turn) = self.turn.take() else {
            tracing::trace!("an idle outside a turn");
            return;
        };
        if turn.activity {
            self.emit(NormEvent::Activity { text: None }, out);
        }
        let duration_ms = turn.duration(at);
        let terminal = if aborted {
            // The CLI stopped on its own: the client did not cancel (that removes the turn).
            NormEvent::Cancelled { duration_ms }
        } else {
            NormEvent::Idle {
                aborted: false,
                duration_ms,
            }
        };
        self.emit(terminal, out);
        out.push(Output::TurnEnded);
    }

    fn session_error(
        &mut self,
        agent: Option<&str>,
        data: &SessionErrorData,
        at: Option<i64>,
        out: &mut Vec<Output>,
    ) {
        if agent.is_some() {
            tracing::warn!(
                message = data.message,
                "a subagent reported an error; its end follows"
            );
            return;
        }
        let Some(turn) = self.turn.take() else {
            return;
        };
        // Headless mode may still send the failed turn's idle.
        self.owed_idles += 1;
        let duration_ms = turn.duration(at);
        self.emit(
            NormEvent::Failed {
                error: failure(data),
                duration_ms,
            },
            out,
        );
        out.push(Output::TurnEnded);
    }

    /// The `result` line of prompt mode: the run is over.
    fn prompt_result(&mut self, result: &PromptResult, out: &mut Vec<Output>) {
        self.owed_idles = 0;
        let Some(turn) = self.turn.take() else {
            return;
        };
        let at = result.timestamp.as_deref().and_then(timestamp_ms);
        let duration_ms = turn.duration(at);
        if turn.activity {
            self.emit(NormEvent::Activity { text: None }, out);
        }
        let terminal = match result.exit_code {
            Some(code) if code != 0 => NormEvent::Failed {
                error: ErrorInfo {
                    error_type: COPILOT_ERROR.to_owned(),
                    message: format!("Copilot exited with code {code}."),
                    stack: None,
                    meta: None,
                },
                duration_ms,
            },
            _ => NormEvent::Idle {
                aborted: false,
                duration_ms,
            },
        };
        self.emit(terminal, out);
        out.push(Output::TurnEnded);
    }

    fn assistant_message(
        &mut self,
        agent: Option<&str>,
        data: AssistantMessageData,
        out: &mut Vec<Output>,
    ) {
        let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) else {
            return;
        };
        if let Some(turn) = &mut self.turn {
            for request in data.tool_requests {
                turn.requests.insert(
                    request.tool_call_id,
                    RequestInfo {
                        name: request.name,
                        arguments: request.arguments,
                        intention: request.intention_summary,
                        title: request.tool_title,
                    },
                );
            }
        }
        self.emit(
            NormEvent::TextFull {
                scope,
                stream_id: data.message_id,
                text: data.content,
            },
            out,
        );
    }

    /// Starts tool call `id` unless it is known; returns whether it is (now) tracked.
    fn ensure_started(
        &mut self,
        scope: &Scope,
        id: &str,
        name: &str,
        mcp: Option<(&str, &str)>,
        out: &mut Vec<Output>,
    ) -> bool {
        let Some(turn) = &mut self.turn else {
            return false;
        };
        if turn.tools.contains_key(id) {
            return true;
        }
        let mcp_tool = mcp.map(|(_, tool)| tool.to_owned());
        turn.tools.insert(
            id.to_owned(),
            ToolTrack::new(name, scope.clone(), mcp_tool.clone()),
        );
        let meta = mcp.map(|(server, tool)| {
            let mut meta = JsonObject::new();
            meta.insert("mcpServerName".into(), server.into());
            meta.insert("mcpToolName".into(), tool.into());
            meta
        });
        self.emit(
            NormEvent::ToolStarted {
                scope: scope.clone(),
                tool_call_id: id.to_owned(),
                tool_name: name.to_owned(),
                display_name: tools::display_name(name, mcp_tool.as_deref()),
                contributor: None,
                meta,
            },
            out,
        );
        true
    }

    fn tool_call_delta(
        &mut self,
        agent: Option<&str>,
        data: ToolCallDeltaData,
        out: &mut Vec<Output>,
    ) {
        let id = data.tool_call_id;
        let Some(turn) = &mut self.turn else {
            return;
        };
        if tools::is_hidden(&data.tool_name) {
            turn.hidden.insert(id);
            return;
        }
        if turn.hidden.contains(&id) {
            return;
        }
        let Some(scope) = self.scope(agent, None) else {
            return;
        };
        if !self.ensure_started(&scope, &id, &data.tool_name, None, out) {
            return;
        }
        let cwd = self.cwd.clone();
        let Some(tool) = self.turn.as_mut().and_then(|turn| turn.tools.get_mut(&id)) else {
            return;
        };
        tool.streamed.push_str(&data.input_delta);
        let is_json = data.tool_type.as_deref() != Some("custom");
        let message = is_json
            .then(|| tools::streaming_invocation(&tool.name, &tool.streamed, cwd.as_deref()))
            .flatten()
            .filter(|message| tool.streamed_message.as_ref() != Some(message));
        if let Some(message) = &message {
            tool.streamed_message = Some(message.clone());
        }
        let partial_json = (!data.input_delta.is_empty()).then_some(data.input_delta);
        self.emit(
            NormEvent::ToolDelta {
                scope,
                tool_call_id: id,
                partial_json,
                invocation_message: message,
            },
            out,
        );
    }

    fn tool_started(
        &mut self,
        agent: Option<&str>,
        data: ToolExecutionStartData,
        out: &mut Vec<Output>,
    ) {
        let id = data.tool_call_id;
        let arguments = data.arguments.unwrap_or(Value::Null);
        if tools::is_hidden(&data.tool_name) {
            let Some(turn) = &mut self.turn else {
                return;
            };
            turn.hidden.insert(id);
            let intent = arguments.get("intent").and_then(Value::as_str);
            if let (None, Some(intent)) = (agent, intent.filter(|i| !i.trim().is_empty())) {
                turn.activity = true;
                self.emit(
                    NormEvent::Activity {
                        text: Some(intent.to_owned()),
                    },
                    out,
                );
            }
            return;
        }
        let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) else {
            return;
        };
        let mcp = data.mcp_server_name.as_deref().map(|server| {
            (
                server,
                data.mcp_tool_name.as_deref().unwrap_or(&data.tool_name),
            )
        });
        if !self.ensure_started(&scope, &id, &data.tool_name, mcp, out) {
            return;
        }
        let cwd = self.cwd.clone();
        let Some(turn) = &mut self.turn else {
            return;
        };
        let request = turn.requests.get(&id);
        let fallback = request
            .and_then(|request| request.intention.clone())
            .or(data.tool_title)
            .or_else(|| request.and_then(|request| request.title.clone()));
        let Some(tool) = turn.tools.get_mut(&id) else {
            return;
        };
        tool.arguments = arguments.clone();
        let call = Call {
            tool: &tool.name,
            arguments: &arguments,
            cwd: cwd.as_deref(),
            mcp_tool: tool.mcp_tool.as_deref(),
        };
        let invocation_message = tools::invocation_message(call, fallback.as_deref());
        let tool_input = (!arguments.is_null()).then(|| arguments.to_string());
        self.emit(
            NormEvent::ToolReady {
                scope,
                tool_call_id: id,
                invocation_message,
                tool_input,
                auto_approved: true,
                meta: None,
            },
            out,
        );
    }

    /// Live output: `chunk` is appended to the output so far; a progress message is shown
    /// while there is no output.
    fn tool_output(
        &mut self,
        id: &str,
        chunk: &str,
        progress: Option<&str>,
        out: &mut Vec<Output>,
    ) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if turn.hidden.contains(id) {
            return;
        }
        let Some(tool) = turn.tools.get_mut(id).filter(|tool| !tool.completed) else {
            tracing::debug!(tool_call_id = id, "dropping output of an unknown tool call");
            return;
        };
        tool.output.push_str(chunk);
        if chunk.is_empty() && progress.is_none() {
            return;
        }
        let text = if tool.output.is_empty() {
            progress.unwrap_or_default().to_owned()
        } else {
            tool.output.clone()
        };
        if text.is_empty() {
            return;
        }
        let meta = progress.map(|message| {
            let mut meta = JsonObject::new();
            meta.insert("progressMessage".into(), message.into());
            meta
        });
        let scope = tool.scope.clone();
        self.emit(
            NormEvent::ToolOutput {
                scope,
                tool_call_id: id.to_owned(),
                content: vec![text_content(text)],
                meta,
            },
            out,
        );
    }

    fn tool_completed(
        &mut self,
        agent: Option<&str>,
        data: ToolExecutionCompleteData,
        out: &mut Vec<Output>,
    ) {
        let id = data.tool_call_id;
        let Some(turn) = &mut self.turn else {
            return;
        };
        if turn.hidden.remove(&id) {
            return;
        }
        if !turn.tools.contains_key(&id) {
            // Never announced: start it from what the message said about it, if anything.
            let Some(name) = turn.requests.get(&id).map(|request| request.name.clone()) else {
                tracing::warn!(
                    tool_call_id = id,
                    "dropping the completion of an unknown tool call"
                );
                return;
            };
            let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) else {
                return;
            };
            self.ensure_started(&scope, &id, &name, None, out);
        }
        let cwd = self.cwd.clone();
        let Some(turn) = &mut self.turn else {
            return;
        };
        let declined = turn.declined.contains(&id);
        let request_arguments = turn
            .requests
            .get(&id)
            .and_then(|request| request.arguments.clone());
        let Some(tool) = turn.tools.get_mut(&id) else {
            return;
        };
        tool.completed = true;
        let arguments = if tool.arguments.is_null() {
            request_arguments.unwrap_or(Value::Null)
        } else {
            tool.arguments.clone()
        };
        let error = data.error.unwrap_or_default();
        let denied = !data.success && (declined || error.code.as_deref() == Some("denied"));
        let outcome = match (data.success, denied) {
            (true, _) => Outcome::Succeeded,
            (false, true) => Outcome::Denied,
            (false, false) => Outcome::Failed,
        };
        let call = Call {
            tool: &tool.name,
            arguments: &arguments,
            cwd: cwd.as_deref(),
            mcp_tool: tool.mcp_tool.as_deref(),
        };
        let past_tense_message = tools::past_tense_message(call, outcome);
        let text = if data.success {
            let result = data.result.unwrap_or_default();
            result
                .detailed_content
                .filter(|text| !text.trim().is_empty())
                .unwrap_or(result.content)
        } else {
            error.message.clone()
        };
        let content = if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![text_content(text)]
        };
        let error = (!data.success).then(|| {
            let message = if error.message.is_empty() {
                past_tense_message.clone()
            } else {
                error.message
            };
            match (denied, error.code) {
                (true, _) => ToolError::denied(message),
                (false, code) => ToolError {
                    message,
                    code: code.filter(|code| !code.is_empty()),
                },
            }
        });
        let structured_content =
            data.shell_execution
                .and_then(|shell| shell.exit_code)
                .map(|code| {
                    let mut structured = JsonObject::new();
                    structured.insert("exitCode".into(), code.into());
                    structured
                });
        let scope = tool.scope.clone();
        self.emit(
            NormEvent::ToolCompleted {
                scope,
                tool_call_id: id,
                success: data.success,
                past_tense_message: Some(past_tense_message),
                content,
                structured_content,
                error,
            },
            out,
        );
    }

    fn permission(
        &mut self,
        agent: Option<&str>,
        data: PermissionRequestedData,
        out: &mut Vec<Output>,
    ) {
        if data.resolved_by_hook {
            tracing::debug!(
                request = data.request_id,
                "a hook already answered a permission"
            );
            return;
        }
        let request = data.permission_request;
        let Some(tool_call_id) = request.tool_call_id.clone().filter(|id| !id.is_empty()) else {
            return reject(out, &data.request_id, NO_TOOL_CALL);
        };
        if self.auto_approved(&request) {
            tracing::debug!(kind = request.kind, "approving the agent's own bookkeeping");
            out.push(Output::AnswerPermission {
                request_id: data.request_id,
                approved: true,
                feedback: None,
            });
            return;
        }
        let Some(turn) = &self.turn else {
            return reject(out, &data.request_id, NO_TURN);
        };
        let known = turn.tools.get(&tool_call_id);
        let scope = match known {
            Some(tool) => Some(tool.scope.clone()),
            None => self.scope(agent, None),
        };
        let Some(scope) = scope else {
            return reject(out, &data.request_id, NOT_SHOWN);
        };
        let Some(turn) = &mut self.turn else {
            return;
        };
        let (tool_name, mcp_tool) = match turn.tools.get(&tool_call_id) {
            Some(tool) => (tool.name.clone(), tool.mcp_tool.clone()),
            None => {
                let name = match turn.requests.get(&tool_call_id) {
                    Some(info) => info.name.clone(),
                    None => tools::permission_tool(&request),
                };
                // The mapper starts the call with the request; its later events find it here.
                turn.tools.insert(
                    tool_call_id.clone(),
                    ToolTrack::new(&name, scope.clone(), None),
                );
                (name, None)
            }
        };
        let event = NormEvent::PermissionAsked {
            scope,
            tool_call_id: tool_call_id.clone(),
            display_name: tools::display_name(&tool_name, mcp_tool.as_deref()),
            tool_name,
            kind: tools::permission_kind(&request.kind),
            path: tools::permission_path(&request),
            title: tools::confirmation_title(&request),
            invocation_message: tools::permission_message(&request, self.cwd.as_deref()),
            input: tools::permission_input(&request),
        };
        let mut signals = self.mapper.map(event);
        let mut asked = false;
        for signal in &mut signals {
            if let AgentSignal::PendingConfirmation(pending) = signal {
                asked = true;
                pending.state.edits = self.edits_preview(&request);
            }
        }
        out.extend(signals.into_iter().map(Output::Signal));
        if !asked {
            return reject(out, &data.request_id, NOT_SHOWN);
        }
        if let Some(turn) = &mut self.turn {
            turn.permissions
                .insert(data.request_id.clone(), tool_call_id.clone());
        }
        out.push(Output::PermissionRequest {
            request_id: data.request_id,
            tool_call_id,
        });
    }

    fn permission_completed(&mut self, data: PermissionCompletedData) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        let parked = turn.permissions.remove(&data.request_id);
        let Some(tool_call_id) = data.tool_call_id.or(parked) else {
            return;
        };
        let approved = data.result.kind.starts_with("approve");
        self.record_decision(&tool_call_id, approved);
    }

    /// Auto-approved: the agent reading or writing its own session state, or reading a tool
    /// output it spilled to the temporary directory, is not the user's business.
    fn auto_approved(&self, request: &PermissionRequest) -> bool {
        let in_session_state = |path: &str| {
            self.session_state_dir
                .as_deref()
                .is_some_and(|dir| is_within(path, dir))
        };
        let spilled = |path: &str| {
            let Some(temp) = self.temp_dir.as_deref() else {
                return false;
            };
            let path = Path::new(path);
            let name = path.file_name().and_then(|name| name.to_str());
            is_within(&path.to_string_lossy(), temp)
                && path.parent() == Some(Path::new(temp))
                && name.is_some_and(|name| {
                    name.contains("copilot-tool-output-") && name.ends_with(".txt")
                })
        };
        match request.kind.as_str() {
            "read" => request
                .path
                .as_deref()
                .is_some_and(|path| in_session_state(path) || spilled(path)),
            "write" => request.file_name.as_deref().is_some_and(in_session_state),
            _ => false,
        }
    }

    /// A preview of the file a `write` request creates.
    fn edits_preview(&self, request: &PermissionRequest) -> Option<FileEditCollection> {
        if request.kind != "write" {
            return None;
        }
        let contents = request.new_file_contents.as_deref()?;
        let file = request.file_name.as_deref()?;
        let path = match (Path::new(file).is_absolute(), self.cwd.as_deref()) {
            (true, _) => Path::new(file).to_path_buf(),
            (false, Some(cwd)) => Path::new(cwd).join(file),
            (false, None) => return None,
        };
        let uri = path_to_file_uri(&path).ok()?;
        let data = base64::engine::general_purpose::STANDARD.encode(contents);
        let added = i64::try_from(contents.lines().count()).unwrap_or(i64::MAX);
        Some(FileEditCollection {
            items: vec![FileEdit {
                before: None,
                after: Some(FileEditSide {
                    uri,
                    content: ContentRef {
                        uri: format!("data:text/plain;charset=utf-8;base64,{data}"),
                        size_hint: i64::try_from(contents.len()).ok(),
                        content_type: Some("text/plain".to_owned()),
                        nonce: None,
                    },
                }),
                diff: Some(FileEditDiffStats {
                    added: Some(added),
                    removed: Some(0),
                }),
            }],
        })
    }

    fn usage(&mut self, agent: Option<&str>, data: UsageData, out: &mut Vec<Output>) {
        let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) else {
            return;
        };
        // A subagent's usage goes to its own chat; the root keeps its context's numbers.
        let mut meta = JsonObject::new();
        if let Some(tokens) = data.cache_write_tokens {
            meta.insert("cacheWriteTokens".into(), tokens.into());
        }
        if let Some(tokens) = data.reasoning_tokens {
            meta.insert("reasoningTokens".into(), tokens.into());
        }
        if let Some(cost) = data.cost.filter(Value::is_number) {
            meta.insert("cost".into(), cost);
        }
        self.emit(
            NormEvent::Usage {
                scope,
                input: data.input_tokens,
                output: data.output_tokens,
                cache_read: data.cache_read_tokens,
                model: data.model,
                meta: (!meta.is_empty()).then_some(meta),
            },
            out,
        );
    }

    fn subagent_started(
        &mut self,
        agent: Option<&str>,
        data: SubagentStartedData,
        out: &mut Vec<Output>,
    ) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if let Some(agent) = agent {
            turn.agents
                .insert(agent.to_owned(), data.tool_call_id.clone());
        }
        let spawn = turn.tools.get(&data.tool_call_id);
        let arguments = spawn
            .map(|tool| tool.arguments.clone())
            .filter(|arguments| !arguments.is_null())
            .or_else(|| {
                turn.requests
                    .get(&data.tool_call_id)
                    .and_then(|request| request.arguments.clone())
            })
            .unwrap_or(Value::Null);
        let text = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let grandparent = spawn
            .and_then(|tool| tool.scope.parent_tool_call_id())
            .map(str::to_owned);
        let agent_name = if data.agent_name.is_empty() {
            "subagent".to_owned()
        } else {
            data.agent_name
        };
        let display_name = if data.agent_display_name.is_empty() {
            agent_name.clone()
        } else {
            data.agent_display_name
        };
        let event = NormEvent::SubagentStarted {
            parent_tool_call_id: data.tool_call_id,
            agent_name,
            display_name,
            description: text("description"),
            prompt: text("prompt"),
            grandparent,
        };
        let description = data.agent_description.filter(|text| !text.is_empty());
        for mut signal in self.mapper.map(event) {
            if let AgentSignal::SubagentStarted(started) = &mut signal {
                started.agent_description.clone_from(&description);
            }
            out.push(Output::Signal(signal));
        }
    }

    /// A skill loaded outside a `skill` tool call is shown as a read of its file.
    fn skill_invoked(
        &mut self,
        agent: Option<&str>,
        event_id: Option<&str>,
        data: SkillInvokedData,
        out: &mut Vec<Output>,
    ) {
        let Some(scope) = self.scope(agent, None) else {
            return;
        };
        let Some(turn) = &mut self.turn else {
            return;
        };
        let shown = turn
            .tools
            .values()
            .any(|tool| tool.name == tools::SKILL && !tool.completed && tool.scope == scope);
        if shown {
            return;
        }
        turn.skills += 1;
        let id = match event_id {
            Some(id) => format!("skill-{id}"),
            None => format!("skill-{}-{}", turn.id, turn.skills),
        };
        let name = if data.name.is_empty() {
            "skill".to_owned()
        } else {
            data.name
        };
        let message = format!("Read skill {name}");
        let input = data.path.map(|path| json!({ "path": path }).to_string());
        if !self.ensure_started(&scope, &id, tools::SKILL, None, out) {
            return;
        }
        if let Some(tool) = self.turn.as_mut().and_then(|turn| turn.tools.get_mut(&id)) {
            tool.completed = true;
        }
        self.emit(
            NormEvent::ToolReady {
                scope: scope.clone(),
                tool_call_id: id.clone(),
                invocation_message: message.clone(),
                tool_input: input,
                auto_approved: true,
                meta: None,
            },
            out,
        );
        self.emit(
            NormEvent::ToolCompleted {
                scope,
                tool_call_id: id,
                success: true,
                past_tense_message: Some(message),
                content: Vec::new(),
                structured_content: None,
                error: None,
            },
            out,
        );
    }
}

fn reject(out: &mut Vec<Output>, request_id: &str, why: &str) {
    tracing::debug!(request_id, why, "rejecting a permission request");
    out.push(Output::AnswerPermission {
        request_id: request_id.to_owned(),
        approved: false,
        feedback: Some(why.to_owned()),
    });
}

fn text_content(text: String) -> ToolResultContent {
    ToolResultContent::Text(ToolResultTextContent { text })
}

/// The `chat/error` of a `session.error`.
fn failure(data: &SessionErrorData) -> ErrorInfo {
    let mut meta = JsonObject::new();
    if let Some(kind) = &data.error_type {
        meta.insert("copilotErrorType".into(), kind.clone().into());
    }
    if let Some(status) = data.status_code {
        meta.insert("statusCode".into(), status.into());
    }
    if let Some(code) = &data.error_code {
        meta.insert("errorCode".into(), code.clone().into());
    }
    ErrorInfo {
        error_type: COPILOT_ERROR.to_owned(),
        message: if data.message.trim().is_empty() {
            "Copilot reported an error.".to_owned()
        } else {
            data.message.clone()
        },
        stack: data.stack.clone().filter(|stack| !stack.is_empty()),
        meta: (!meta.is_empty()).then_some(meta),
    }
}

/// Whether absolute `path` lies in absolute directory `dir`, with no `..` to climb out.
fn is_within(path: &str, dir: &str) -> bool {
    let (path, dir) = (Path::new(path), Path::new(dir));
    path.is_absolute()
        && dir.is_absolute()
        && !path
            .components()
            .any(|component| matches!(component, Component::ParentDir))
        && path.starts_with(dir)
}

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp (`2026-11-30T09:46:30.212Z`,
/// offsets `±HH:MM` allowed); `None` when it is not one.
pub(crate) fn timestamp_ms(text: &str) -> Option<i64> {
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut date_parts = date.splitn(3, '-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: i64 = date_parts.next()?.parse().ok()?;
    let day: i64 = date_parts.next()?.parse().ok()?;
    let (clock, offset_minutes) = if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        (clock, 0)
    } else {
        let split = time.rfind(['+', '-'])?;
        let (clock, offset) = time.split_at(split);
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let (hours, minutes) = offset[1..].split_once(':')?;
        let (hours, minutes) = (hours.parse::<i64>().ok()?, minutes.parse::<i64>().ok()?);
        // Bounded before any arithmetic: a hostile offset must not overflow.
        if !(0..24).contains(&hours) || !(0..60).contains(&minutes) {
            return None;
        }
        (clock, sign * (hours * 60 + minutes))
    };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut hms_parts = hms.splitn(3, ':');
    let hour: i64 = hms_parts.next()?.parse().ok()?;
    let minute: i64 = hms_parts.next()?.parse().ok()?;
    let second: i64 = hms_parts.next()?.parse().ok()?;
    // RFC 3339 years have four digits; larger ones would overflow the arithmetic below.
    let valid = (0..=9999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0..=60).contains(&second)
        && fraction.bytes().all(|b| b.is_ascii_digit());
    if !valid {
        return None;
    }
    let millis: i64 = format!("{:0<3}", &fraction[..fraction.len().min(3)])
        .parse()
        .ok()?;
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Maps a whole transcript — decoded headless frames (`sdk-*`: one JSON-RPC message per line)
/// or `copilot -p --output-format json` lines (`prompt-*`), told apart per line — as one turn
/// `turn_id`: the signals only (what `agent-host map` prints and the fixture tests check).
/// The Copilot session followed is the one of the first `session.create` response or event.
pub fn map_transcript(
    session: SessionUri,
    turn_id: &str,
    text: &str,
) -> Result<Vec<AgentSignal>, TranscriptError> {
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty());
    let mut translator = Translator::new(session);
    if let Some(id) = lines.clone().find_map(|(_, line)| transcript_session(line)) {
        translator.set_copilot_session(&id);
    }
    translator.begin_turn(turn_id);
    let mut signals = Vec::new();
    for (index, line) in lines {
        let outputs = translator
            .on_message(line)
            .map_err(|error| TranscriptError {
                line: index + 1,
                error,
            })?;
        signals.extend(outputs.into_iter().filter_map(|output| match output {
            Output::Signal(signal) => Some(signal),
            _ => None,
        }));
    }
    Ok(signals)
}

/// The Copilot session a transcript line names: a response carrying `sessionId`, or a
/// `session.event`.
fn transcript_session(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    let id = if value.get("method").and_then(Value::as_str) == Some(crate::wire::SESSION_EVENT) {
        value.get("params")?.get("sessionId")?
    } else {
        value.get("result")?.get("sessionId")?
    };
    id.as_str().map(str::to_owned)
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

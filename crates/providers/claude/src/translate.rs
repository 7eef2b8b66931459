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

mod control;
mod lines;
mod messages;
mod usage;

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
    /// The turn's model calls and their usage.
    calls: usage::Calls,
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
    agenthost_provider_api::replay_lines(text, |line| {
        let outputs = translator.on_line(line)?;
        Ok(outputs
            .into_iter()
            .filter_map(|output| match output {
                Output::Signal(signal) => Some(signal),
                _ => None,
            })
            .collect())
    })
}

/// A transcript line [`map_transcript`] could not read, with its 1-based line number.
pub type TranscriptError = agenthost_provider_api::TranscriptError<LineError>;

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;

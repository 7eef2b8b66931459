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
use agenthost_provider_api::{Mapper, NormEvent, Scope, ToolError, UsageKind};
use base64::Engine as _;
use serde_json::{Value, json};

use crate::tools::{self, Call, Outcome};
use crate::wire::{
    AssistantMessageData, Event, EventData, Message, Notification, PermissionCompletedData,
    PermissionRequest, PermissionRequestedData, PromptResult, Response, RpcError, SessionErrorData,
    SkillInvokedData, SubagentStartedData, ToolCallDeltaData, ToolExecutionCompleteData,
    ToolExecutionStartData, UsageData,
};

mod events;
mod tool_calls;
mod usage;

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
    Message::from_value(value).map_err(|error| {
        let reason = error.to_string();
        LineError::new(LineErrorKind::Malformed { reason }, body)
    })
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
    let mut translator = Translator::new(session);
    if let Some(id) = text.lines().find_map(transcript_session) {
        translator.set_copilot_session(&id);
    }
    translator.begin_turn(turn_id);
    agenthost_provider_api::replay_lines(text, |line| {
        let outputs = translator.on_message(line)?;
        Ok(outputs
            .into_iter()
            .filter_map(|output| match output {
                Output::Signal(signal) => Some(signal),
                _ => None,
            })
            .collect())
    })
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
pub type TranscriptError = agenthost_provider_api::TranscriptError<LineError>;

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;

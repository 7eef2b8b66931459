//! The app-server translator: stdout lines in, [`Output`]s out.
//!
//! It is thin on purpose: notifications become provider-neutral [`NormEvent`]s for one
//! [`Mapper`], which owns every AHP ordering rule. What it knows that the mapper cannot: which
//! thread and which app-server turn belong to the protocol turn (Codex turn ids are never
//! protocol ids), how an item looks as a tool call ([`crate::items`]), which approval belongs to
//! which item and what the host answered, and how `turn/completed` ends the turn. Anything that
//! needs the process — answering a request, the thread id for `thread/resume` — comes out as an
//! [`Output`] for the driver.

use std::collections::{HashMap, HashSet};
use std::fmt;

use agenthost_protocol::common::JsonObject;
use agenthost_protocol::state::{
    ChatInputRequest, ChatInputResponseKind, ErrorInfo, ToolResultContent, ToolResultTextContent,
};
use agenthost_protocol::{AgentSignal, SessionUri, StateAction};
use agenthost_provider_api::{Mapper, NormEvent, Scope, UsageKind};
use serde_json::Value;

pub use crate::control::{ApprovalKind, InputKind};
use crate::control::{approval_answer, input_unanswered};
use crate::input::{elicitation_request, input_id, user_input_request};
use crate::items::{Change, Ending, ToolCall, usage_meta};
use crate::shell;
use crate::wire::{
    ApplyPatchApprovalParams, CommandApprovalParams, DeltaParams, ElicitationParams, ErrorParams,
    ExecCommandApprovalParams, FileChangeApprovalParams, ItemStatus, Message, Notification,
    PermissionsApprovalParams, Request, Response, RpcError, ServerRequest, ThreadInfo, ThreadItem,
    TokenUsageParams, Turn, TurnError, TurnStatus, UserInputParams,
};

mod notifications;
mod requests;

/// The error type of a turn that Codex reported as failed.
pub const CODEX_ERROR: &str = "CodexError";

/// What one stdout line asks of the driver.
// Outputs live for one line and are moved into a `Vec` once: boxing the signal buys nothing.
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
    /// An approval request for tool call `tool_call_id` (the item id, or the synthetic call of a
    /// permissions request that names no open item). The `PendingConfirmation` signal was
    /// emitted just before, as [`Output::Signal`]; the driver parks `request_id` and answers it
    /// with [`approval_answer`]`(kind, approved)` when the host does (and tells
    /// [`Translator::record_decision`], sending the signals it returns).
    ApprovalRequest {
        /// The app-server's request id.
        request_id: Value,
        /// The tool call.
        tool_call_id: String,
        /// Which approval it is (the answer's vocabulary depends on it).
        kind: ApprovalKind,
    },
    /// An input request (`requestUserInput`, an MCP elicitation) shown to the host as
    /// `chat/inputRequested` for AHP request `input_id` (the signal was emitted just before, as
    /// [`Output::Signal`]): the driver parks `request_id` and answers it with
    /// [`crate::control::input_answer`]`(kind, response)` when the host calls
    /// `respond_to_input`, or as cancelled ([`crate::control::input_unanswered`]) when the
    /// turn ends first.
    InputRequest {
        /// The app-server's request id.
        request_id: Value,
        /// The id of the AHP input request (`input-<request id>`).
        input_id: String,
        /// Which request it is (the answer's shape depends on it).
        kind: InputKind,
    },
    /// A server request the translator answers itself right away (an approval or an input
    /// request nobody can be asked about → decline, empty answers): the driver writes
    /// [`crate::control::reply`]`(request_id, result)`.
    Reply {
        /// The app-server's request id.
        request_id: Value,
        /// The `result` to send.
        result: Value,
    },
    /// Any other server request: the driver answers JSON-RPC error -32601 naming `method`.
    UnsupportedRequest {
        /// The app-server's request id.
        request_id: Value,
        /// The method.
        method: String,
    },
    /// The app-server reported the thread id this conversation follows (`thread/started` or a
    /// `thread/start` / `thread/resume` response); reported when first seen.
    ThreadStarted(String),
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
    /// A known message whose fields do not have the expected shape.
    Malformed {
        /// The decoder's explanation.
        reason: String,
    },
}

/// How much of a bad line an error quotes.
const SNIPPET_CHARS: usize = 200;

impl LineError {
    pub(crate) fn new(kind: LineErrorKind, line: &str) -> Self {
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

/// Parses one line into a JSON object, or says why it is not one.
pub(crate) fn parse_object(line: &str) -> Result<Value, LineError> {
    match serde_json::from_str::<Value>(line) {
        Ok(value) if value.is_object() => Ok(value),
        _ => Err(LineError::new(LineErrorKind::NotAnObject, line)),
    }
}

/// Parses one app-server line.
pub fn parse_line(line: &str) -> Result<Message, LineError> {
    Message::from_value(parse_object(line)?).map_err(|error| {
        let reason = error.to_string();
        LineError::new(LineErrorKind::Malformed { reason }, line)
    })
}

/// The translator of one Codex conversation (one app-server thread).
#[derive(Debug)]
pub struct Translator {
    mapper: Mapper,
    thread: Option<String>,
    reported_thread: Option<String>,
    /// The thread's model, for usage reports.
    model: Option<String>,
    /// Present while a protocol turn runs.
    turn: Option<TurnTrack>,
    /// App-server turns of protocol turns that were cancelled or failed: their output is
    /// dropped, their `turn/completed` ends nothing.
    stale_turns: HashSet<String>,
    /// `turn/start` requests (as JSON text) of protocol turns cancelled before the response
    /// named their app-server turn.
    stale_starts: HashSet<String>,
}

/// Per protocol turn.
#[derive(Debug)]
struct TurnTrack {
    id: String,
    /// The app-server turn that carries it, once known.
    app_turn: Option<String>,
    /// The host's `turn/start` request (as JSON text), when the driver said.
    start_request: Option<String>,
    items: HashMap<String, ItemTrack>,
    /// Tool items in the order they started, to complete orphans deterministically.
    tool_order: Vec<String>,
    /// Tool calls the host declined.
    declined: HashSet<String>,
    /// The last `error` notification that Codex will not retry.
    error: Option<TurnError>,
    model_calls: u64,
    /// A retried error is shown as the chat's activity (cleared by the next item or the end).
    activity: bool,
    /// The AHP ids of the input requests asked in this turn.
    inputs: HashSet<String>,
}

#[derive(Debug)]
enum ItemTrack {
    Message,
    Reasoning,
    Tool {
        call: Box<ToolCall>,
        /// Output streamed so far.
        output: String,
        done: bool,
    },
}

impl TurnTrack {
    fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            app_turn: None,
            start_request: None,
            items: HashMap::new(),
            tool_order: Vec::new(),
            declined: HashSet::new(),
            error: None,
            model_calls: 0,
            activity: false,
            inputs: HashSet::new(),
        }
    }

    /// The open tool item `id`, if the turn has one.
    fn open_tool(&mut self, id: &str) -> Option<(&mut ToolCall, &mut String)> {
        match self.items.get_mut(id) {
            Some(ItemTrack::Tool {
                call,
                output,
                done: false,
            }) => Some((call, output)),
            _ => None,
        }
    }
}

impl Translator {
    /// A translator for a conversation of `session`, with no thread and no turn yet.
    pub fn new(session: SessionUri) -> Self {
        Self {
            mapper: Mapper::new(session),
            thread: None,
            reported_thread: None,
            model: None,
            turn: None,
            stale_turns: HashSet::new(),
            stale_starts: HashSet::new(),
        }
    }

    /// The model this conversation runs on, by the id the host advertises it under: the
    /// context window Codex reports for it reaches the host's model list. (Not the model name
    /// Codex reports in `thread/started`, which usage carries.)
    pub fn set_advertised_model(&mut self, model: impl Into<String>) {
        self.mapper.set_model(model);
    }

    /// Starts protocol turn `turn_id`, before `turn/start` is sent. A turn still running is
    /// forgotten (its later output is dropped).
    pub fn begin_turn(&mut self, turn_id: &str) {
        if let Some(previous) = self.turn.take() {
            tracing::warn!(
                previous = previous.id,
                turn = turn_id,
                "a new turn begins before the previous one ended"
            );
            self.forget(previous);
        }
        self.mapper.begin_turn(turn_id);
        self.turn = Some(TurnTrack::new(turn_id));
    }

    /// The host wrote `turn/start` for the current protocol turn as request `request_id`: its
    /// response names the app-server turn, even when the protocol turn is cancelled before it
    /// arrives. Without this, the first app-server turn seen during the protocol turn is taken.
    pub fn turn_start_sent(&mut self, request_id: &Value) {
        if let Some(turn) = &mut self.turn {
            turn.start_request = Some(request_id.to_string());
        }
    }

    /// The protocol turn in progress.
    pub fn turn_id(&self) -> Option<&str> {
        self.turn.as_ref().map(|turn| turn.id.as_str())
    }

    /// The app-server turn carrying the protocol turn in progress, once known (what
    /// `turn/interrupt` takes).
    pub fn app_turn_id(&self) -> Option<&str> {
        self.turn.as_ref().and_then(|turn| turn.app_turn.as_deref())
    }

    /// Follows thread `thread_id`: notifications of other threads are ignored. (The first
    /// thread the app-server reports is followed on its own when none is set.)
    pub fn set_thread(&mut self, thread_id: &str) {
        self.thread = Some(thread_id.to_owned());
        self.reported_thread = Some(thread_id.to_owned());
    }

    /// The thread this conversation follows.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread.as_deref()
    }

    /// The client cancelled the turn (and dispatches `chat/turnCancelled` itself): nothing
    /// more is emitted for it; its later output and its `turn/completed (interrupted)` are
    /// dropped. The returned signals (an activity line shown for a retried error is cleared) go
    /// out before the cancellation.
    pub fn abort_turn(&mut self) -> Vec<AgentSignal> {
        let Some(turn) = self.turn.take() else {
            return Vec::new();
        };
        let signals = self.clear_activity(turn.activity);
        self.forget(turn);
        // An aborted idle only ends the mapper's turn: it produces no signal.
        self.mapper.map(NormEvent::Idle {
            aborted: true,
            duration_ms: None,
        });
        signals
    }

    /// `Activity { text: None }` when an activity line is shown.
    fn clear_activity(&mut self, shown: bool) -> Vec<AgentSignal> {
        if shown {
            self.mapper.map(NormEvent::Activity { text: None })
        } else {
            Vec::new()
        }
    }

    /// The process died or the stream broke mid-turn: the open tool calls fail, then
    /// `chat/error` with `error` — unless no turn is running.
    pub fn fail_turn(&mut self, error: ErrorInfo) -> Vec<AgentSignal> {
        let Some(mut turn) = self.turn.take() else {
            return Vec::new();
        };
        let mut signals = self.clear_activity(turn.activity);
        for event in orphans(
            &mut turn,
            &[],
            "The agent stopped before the tool call finished.",
        ) {
            signals.extend(self.mapper.map(event));
        }
        signals.extend(self.mapper.fail(error));
        self.forget(turn);
        signals
    }

    /// The host answered the approval of tool call `item_id`: a declined call completes as
    /// denied, an approved one shows its live output again. The synthetic call of a
    /// permissions request completes right away (approved → success, declined → denied): the
    /// returned signals, which the driver sends before it answers Codex. Nothing for the other
    /// calls, which complete from their items.
    pub fn record_decision(&mut self, item_id: &str, approved: bool) -> Vec<AgentSignal> {
        let Some(turn) = &mut self.turn else {
            return Vec::new();
        };
        if !approved {
            turn.declined.insert(item_id.to_owned());
        }
        let synthetic = match turn.items.get_mut(item_id) {
            Some(ItemTrack::Tool {
                call,
                done: done @ false,
                ..
            }) if matches!(**call, ToolCall::Permissions { .. }) => {
                *done = true;
                Some((**call).clone())
            }
            _ => None,
        };
        let mut signals = self.mapper.map(NormEvent::PermissionResolved {
            scope: Scope::Root,
            tool_call_id: item_id.to_owned(),
            approved,
        });
        if let Some(call) = synthetic {
            let ending = if approved {
                Ending::Reported
            } else {
                Ending::Declined
            };
            signals.extend(
                self.mapper
                    .map(call.completed(&Scope::Root, item_id, "", ending)),
            );
        }
        signals
    }

    /// Translates one stdout line. `Err` only for a line that is not a JSON object or a known
    /// message with fields of the wrong shape; unknown methods and items give `Ok(vec![])`.
    pub fn on_line(&mut self, line: &str) -> Result<Vec<Output>, LineError> {
        let message = parse_line(line)?;
        let mut out = Vec::new();
        match message {
            Message::Response(response) => self.response(response, &mut out),
            Message::Notification(notification) => self.notification(notification, &mut out),
            Message::Request(request) => self.request(request, &mut out),
        }
        Ok(out)
    }

    /// Remembers that `turn`'s app-server output, whenever it comes, belongs to nobody.
    fn forget(&mut self, turn: TurnTrack) {
        match (turn.app_turn, turn.start_request) {
            (Some(app_turn), _) => {
                self.stale_turns.insert(app_turn);
            }
            (None, Some(request)) => {
                self.stale_starts.insert(request);
            }
            (None, None) => {}
        }
    }

    fn emit(&mut self, event: NormEvent, out: &mut Vec<Output>) {
        out.extend(self.mapper.map(event).into_iter().map(Output::Signal));
    }

    fn emit_all(&mut self, events: Vec<NormEvent>, out: &mut Vec<Output>) {
        for event in events {
            self.emit(event, out);
        }
    }

    /// Whether output of app-server turn `app_turn` belongs to the protocol turn in progress.
    /// Output without a turn id is taken as the current turn's. An unbound protocol turn binds
    /// only at `turn/started` (or the `turn/start` response): a late notification of an earlier
    /// turn (a resumed thread reports its last usage, for one) never becomes the current turn.
    fn route(&mut self, app_turn: Option<&str>) -> bool {
        self.route_binding(app_turn, false)
    }

    /// [`Self::route`]; `may_bind` at `turn/started`.
    fn route_binding(&mut self, app_turn: Option<&str>, may_bind: bool) -> bool {
        let Some(turn) = &mut self.turn else {
            return false;
        };
        let Some(app_turn) = app_turn else {
            return true;
        };
        if self.stale_turns.contains(app_turn) {
            return false;
        }
        match &turn.app_turn {
            Some(bound) => bound == app_turn,
            // A cancelled turn's start is still unanswered: only responses tell the turns
            // apart now.
            None if turn.start_request.is_some() && !self.stale_starts.is_empty() => false,
            None if !may_bind => false,
            None => {
                turn.app_turn = Some(app_turn.to_owned());
                true
            }
        }
    }

    fn ours(&self, thread_id: Option<&str>) -> bool {
        match (&self.thread, thread_id) {
            (Some(ours), Some(theirs)) => ours == theirs,
            _ => true,
        }
    }

    fn response(&mut self, response: Response, out: &mut Vec<Output>) {
        if response.result.is_err() {
            // A cancelled turn whose start failed has no app-server turn to drop.
            self.stale_starts.remove(&response.id.to_string());
        }
        if let Ok(result) = &response.result {
            if let Some(thread) = result
                .get("thread")
                .and_then(|thread| serde_json::from_value::<ThreadInfo>(thread.clone()).ok())
            {
                let model = result.get("model").and_then(Value::as_str);
                self.thread_seen(thread, model, out);
            }
            if let Some(app_turn) = result
                .get("turn")
                .and_then(|turn| turn.get("id"))
                .and_then(Value::as_str)
            {
                self.turn_start_answered(&response.id, app_turn);
            }
        }
        out.push(Output::Response {
            id: response.id,
            result: response.result,
        });
    }

    fn turn_start_answered(&mut self, request_id: &Value, app_turn: &str) {
        let request = request_id.to_string();
        if self.stale_starts.remove(&request) {
            self.stale_turns.insert(app_turn.to_owned());
            return;
        }
        if self.stale_turns.contains(app_turn) {
            return;
        }
        let Some(turn) = &mut self.turn else {
            return;
        };
        let expected = turn
            .start_request
            .as_ref()
            .is_none_or(|expected| *expected == request);
        if turn.app_turn.is_none() && expected {
            turn.app_turn = Some(app_turn.to_owned());
        }
    }

    fn thread_seen(&mut self, thread: ThreadInfo, model: Option<&str>, out: &mut Vec<Output>) {
        match &self.thread {
            None => self.thread = Some(thread.id.clone()),
            Some(ours) if *ours == thread.id => {}
            Some(_) => {
                tracing::debug!(thread = thread.id, "ignoring another thread");
                return;
            }
        }
        if let Some(model) = model.map(str::to_owned).or(thread.model) {
            self.model = Some(model);
        }
        if self.reported_thread.as_deref() != Some(thread.id.as_str()) {
            self.reported_thread = Some(thread.id.clone());
            out.push(Output::ThreadStarted(thread.id));
        }
    }
}

/// Completes every tool of `turn` still open: from `finished` item data when the app-server
/// reported it, else as failed with `reason`.
fn orphans(turn: &mut TurnTrack, finished: &[(String, ToolCall)], reason: &str) -> Vec<NormEvent> {
    let mut events = Vec::new();
    for id in std::mem::take(&mut turn.tool_order) {
        let Some(ItemTrack::Tool {
            call,
            output,
            done: false,
        }) = turn.items.get(&id)
        else {
            continue;
        };
        let declined = turn.declined.contains(&id);
        let event = match finished.iter().find(|(finished_id, _)| *finished_id == id) {
            Some((_, data)) => {
                let ending = if declined {
                    Ending::Declined
                } else {
                    Ending::Reported
                };
                data.completed(&Scope::Root, &id, output, ending)
            }
            None if declined => call.completed(&Scope::Root, &id, output, Ending::Declined),
            None => call.abandoned(&Scope::Root, &id, reason, output),
        };
        events.push(event);
    }
    events
}

/// The `chat/error` of a failed turn.
fn failure(error: Option<TurnError>) -> ErrorInfo {
    let error = error.unwrap_or_default();
    let meta = error.codex_error_info.map(|info| {
        let mut meta = JsonObject::new();
        meta.insert("codexErrorInfo".into(), info);
        meta
    });
    ErrorInfo {
        error_type: CODEX_ERROR.to_owned(),
        message: if error.message.is_empty() {
            "Codex reported an error.".to_owned()
        } else {
            error.message
        },
        stack: error
            .additional_details
            .filter(|details| !details.is_empty()),
        meta,
    }
}

/// A legacy `applyPatchApproval` change: `{add: {content}}`, `{delete: …}`,
/// `{update: {unified_diff, move_path}}` (or `{type: …}`).
fn legacy_change(path: &str, change: &Value) -> Change {
    let kind = change
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            change
                .as_object()
                .and_then(|object| object.keys().next().cloned())
        })
        .unwrap_or_else(|| "update".to_owned());
    let body = change.get(&kind).unwrap_or(change);
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    Change {
        path: path.to_owned(),
        move_path: text("move_path").or_else(|| text("movePath")),
        diff: text("unified_diff")
            .or_else(|| text("unifiedDiff"))
            .or_else(|| text("content"))
            .unwrap_or_default(),
        kind,
    }
}

/// The id of the synthetic call of permissions request `request_id`: `permissions-<id>`.
fn synthetic_id(request_id: &Value) -> String {
    match request_id {
        Value::String(id) => format!("permissions-{id}"),
        other => format!("permissions-{other}"),
    }
}

/// Maps a whole stdout transcript — `codex app-server` lines or `codex exec --json` lines,
/// told apart by the first non-empty line — as one turn `turn_id`: the signals only (what
/// `agent-host map` prints and the fixture tests check).
pub fn map_transcript(
    session: SessionUri,
    turn_id: &str,
    text: &str,
) -> Result<Vec<AgentSignal>, TranscriptError> {
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty());
    let is_exec = lines
        .clone()
        .next()
        .and_then(|(_, line)| serde_json::from_str::<Value>(line).ok())
        .is_some_and(|first| first.get("type").is_some_and(Value::is_string));
    let mut signals = Vec::new();
    let collect = |outputs: Vec<Output>, signals: &mut Vec<AgentSignal>| {
        signals.extend(outputs.into_iter().filter_map(|output| match output {
            Output::Signal(signal) => Some(signal),
            _ => None,
        }));
    };
    let error = |index: usize, error: LineError| TranscriptError {
        line: index + 1,
        error,
    };
    if is_exec {
        let mut translator = crate::exec::ExecTranslator::new(session);
        translator.begin_turn(turn_id);
        for (index, line) in lines {
            let outputs = translator.on_line(line).map_err(|e| error(index, e))?;
            collect(outputs, &mut signals);
        }
    } else {
        let mut translator = Translator::new(session);
        if let Some(thread) = lines.clone().find_map(|(_, line)| transcript_thread(line)) {
            translator.set_thread(&thread);
        }
        translator.begin_turn(turn_id);
        for (index, line) in lines {
            let outputs = translator.on_line(line).map_err(|e| error(index, e))?;
            collect(outputs, &mut signals);
        }
    }
    Ok(signals)
}

/// The thread a transcript line reports (`thread/started`, or a response carrying a thread).
fn transcript_thread(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    let thread = if value.get("method").and_then(Value::as_str) == Some("thread/started") {
        value.get("params")?.get("thread")?
    } else {
        value.get("result")?.get("thread")?
    };
    thread.get("id")?.as_str().map(str::to_owned)
}

/// A transcript line [`map_transcript`] could not read, with its 1-based line number.
pub type TranscriptError = agenthost_provider_api::TranscriptError<LineError>;

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;

//! The ACP translator: one line of the agent's stdout in, [`Output`]s out.
//!
//! It is pure — no I/O, no clock beyond the shared [`Mapper`]'s turn durations — so captured
//! transcripts replay it exactly ([`map_transcript`]). `session/update` kinds become
//! provider-neutral [`NormEvent`]s; the mapper owns every AHP ordering rule. What the translator
//! knows that the mapper cannot:
//!
//! - **Which session and which turn.** Updates of another ACP session are ignored; updates while
//!   no turn runs (the agent's announcements after `session/new`, a stopped turn's stragglers,
//!   the history `session/load` replays) are dropped quietly. The turn ends with the answer to
//!   its `session/prompt`: `end_turn` → `chat/turnComplete`; `cancelled` the host did not ask
//!   for → `chat/turnCancelled`; `refusal`, `max_tokens` and `max_turn_requests` → `chat/error`
//!   with a message saying which; an error answer → `chat/error` (-32000, authentication
//!   required, names the agent's sign-in methods). After the host cancels
//!   ([`Translator::abort_turn`]) the turn says nothing more — whatever stop reason the agent
//!   gives (Copilot answers a cancel with `end_turn`).
//! - **Text.** `agent_message_chunk` / `agent_thought_chunk` text streams into markdown /
//!   reasoning parts; a tool call or the other kind of chunk starts a new part.
//! - **Tools.** `tool_call` starts a call (its name, else its kind; its title for people) and
//!   `tool_call_update` moves it on (an update for an unknown id starts it): `in_progress` on a
//!   call nobody asked about is ready without confirmation; content (text, and a `diff` as a
//!   file edit) is live output while it runs; `completed` / `failed` complete it (`denied` when
//!   the host or the user declined it). `session/request_permission` is a pending confirmation
//!   ([`Output::PermissionRequest`]); the driver answers it with the agent's matching option.
//!   Calls still open when the turn ends are completed as failed.
//! - **Plan.** `plan` becomes a synthetic "Plan" tool call whose live output is the entries as a
//!   checklist, completed when the turn ends.
//! - **Usage.** `usage_update` is the context's fill (`used` of `size` tokens, and a cost in a
//!   currency): it reports the model's context window and goes into the turn's usage `_meta`;
//!   token counts come from the prompt answer's `usage`, reported before the turn ends.
//! - **Session state.** `session_info_update`'s title renames the session;
//!   `available_commands_update` and `config_option_update` are kept ([`Translator::commands`],
//!   [`Translator::config_options`]) — the driver picks the model from the latter;
//!   `current_mode_update` updates the kept mode option.
//! - **Requests.** Any other request of the agent (`fs/*`, `terminal/*`, elicitations — never
//!   advertised) is answered with JSON-RPC error -32601.

use std::collections::HashMap;
use std::fmt;

use agenthost_protocol::common::JsonObject;
use agenthost_protocol::state::{ErrorInfo, ToolResultContent};
use agenthost_protocol::usage::{CONTEXT_TOKENS, CONTEXT_WINDOW};
use agenthost_protocol::{AgentSignal, ModelLimits, SessionUri};
use agenthost_provider_api::{Mapper, NormEvent, Scope, ToolError, UsageKind};
use serde_json::{Value, json};

use crate::wire::{self, Message, RpcError, SessionUpdate, error_reply, permission_answer, schema};

mod tools;
pub use tools::kind_name;

/// The error type of a turn the agent ended without finishing it (`refusal`, `max_tokens`,
/// `max_turn_requests`) or failed with an error answer.
pub const ACP_ERROR: &str = "AcpError";

/// JSON-RPC: the method is not known (what the host answers requests it does not serve with).
pub const METHOD_NOT_FOUND: i64 = -32601;

/// ACP: the agent needs the user to sign in first.
pub const AUTH_REQUIRED: i64 = -32000;

/// What one line of the agent asks of the driver.
// Outputs live for one message and are moved into a `Vec` once: boxing the signal buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A signal for the host.
    Signal(AgentSignal),
    /// The answer to one of the host's requests other than the running prompt (the driver
    /// matches `id` to its waiter).
    Response {
        /// The id of the host's request.
        id: Value,
        /// Its result, or the agent's error.
        result: Result<Value, RpcError>,
    },
    /// `session/request_permission` for a call of the running turn: the pending confirmation
    /// went out just before, as [`Output::Signal`]. The driver parks `request_id` under
    /// `tool_call_id` until the host answers, then answers with [`permission_answer`] over
    /// `options`.
    PermissionRequest {
        /// The agent's request id.
        request_id: Value,
        /// The tool call.
        tool_call_id: String,
        /// The answers the agent offers.
        options: Vec<schema::PermissionOption>,
    },
    /// A message to write to the agent right away (the answer to a request the host does not
    /// serve, or a permission request outside any turn, withdrawn).
    Write(String),
    /// The answer to the turn's `session/prompt` came: the turn is over (after its terminal
    /// signal, if the host had not cancelled it already).
    TurnEnded,
}

/// A line the translator could not read: what was wrong and the start of the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// What was wrong.
    pub reason: String,
    /// The start of the line.
    pub snippet: String,
}

/// How much of a bad line an error quotes.
const SNIPPET_CHARS: usize = 200;

impl LineError {
    fn new(reason: impl Into<String>, line: &str) -> Self {
        let mut snippet: String = line.chars().take(SNIPPET_CHARS).collect();
        if snippet.len() < line.len() {
            snippet.push('…');
        }
        Self {
            reason: reason.into(),
            snippet,
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unreadable ACP message ({}): {}",
            self.reason, self.snippet
        )
    }
}

impl std::error::Error for LineError {}

/// What the translator keeps of one tool call of the turn.
#[derive(Debug, Clone, Default)]
struct ToolTrack {
    title: String,
    kind: Option<schema::ToolKind>,
    /// A ready (with or without confirmation) was emitted.
    ready: bool,
    /// The host declined it.
    denied: bool,
}

/// The protocol turn the translator maps.
#[derive(Debug, Default)]
struct TurnTrack {
    tools: HashMap<String, ToolTrack>,
    /// Tool call ids in the order they started (settled in that order at the end).
    order: Vec<String>,
    /// The kind of the open text part (`true`: reasoning) and its number.
    text: Option<bool>,
    segment: u32,
    /// The synthetic plan call, once a plan came.
    plan: Option<String>,
    /// The host cancelled it: it says nothing more.
    aborted: bool,
}

/// Turns an ACP agent's stdout lines into [`Output`]s for one chat.
#[derive(Debug)]
pub struct Translator {
    mapper: Mapper,
    /// The ACP session followed (learned from the first session id seen when unset).
    session_id: Option<String>,
    /// The id of the running turn's `session/prompt`.
    prompt_id: Option<Value>,
    /// Transcript replay: any answer carrying a stop reason is the prompt's.
    transcript: bool,
    /// `session/load` is replaying the conversation: updates are dropped.
    replaying: bool,
    turn: Option<TurnTrack>,
    /// The context's fill: `(used, size)` tokens, and its cost.
    context: Option<(u64, u64, Option<schema::Cost>)>,
    model: Option<String>,
    commands: Vec<schema::AvailableCommand>,
    config_options: Vec<schema::SessionConfigOption>,
    /// The sign-in methods the agent named in `initialize`.
    auth_methods: Vec<String>,
}

impl Translator {
    /// A translator for a chat of `session`, with no turn yet.
    pub fn new(session: SessionUri) -> Self {
        Self {
            mapper: Mapper::new(session),
            session_id: None,
            prompt_id: None,
            transcript: false,
            replaying: false,
            turn: None,
            context: None,
            model: None,
            commands: Vec::new(),
            config_options: Vec::new(),
            auth_methods: Vec::new(),
        }
    }

    /// Follows ACP session `id` (updates of other sessions are ignored).
    pub fn set_session(&mut self, id: &str) {
        self.session_id = Some(id.to_owned());
    }

    /// The ACP session followed.
    pub fn session(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The model the conversation runs on, by the id the host advertises it under.
    pub fn set_model(&mut self, model: impl Into<String>) {
        let model = model.into();
        self.mapper.set_model(model.clone());
        self.model = Some(model);
    }

    /// The agent's sign-in methods (from `initialize`), named when it answers -32000.
    pub fn set_auth_methods(&mut self, methods: Vec<String>) {
        self.auth_methods = methods;
    }

    /// Whether `session/load` is replaying the conversation (its updates are dropped: the host
    /// already has the history).
    pub fn set_replaying(&mut self, replaying: bool) {
        self.replaying = replaying;
    }

    /// The commands the agent offers (`available_commands_update`).
    pub fn commands(&self) -> &[schema::AvailableCommand] {
        &self.commands
    }

    /// The session's config options, as the agent last reported them.
    pub fn config_options(&self) -> &[schema::SessionConfigOption] {
        &self.config_options
    }

    /// Keeps `options` (from `session/new`, `session/load` or `session/resume`).
    pub fn set_config_options(&mut self, options: Vec<schema::SessionConfigOption>) {
        self.config_options = options;
    }

    /// Starts protocol turn `turn_id`.
    pub fn begin_turn(&mut self, turn_id: &str) {
        self.mapper.begin_turn(turn_id);
        self.turn = Some(TurnTrack::default());
        self.prompt_id = None;
    }

    /// The turn's `session/prompt` went out as request `id`: its answer ends the turn.
    pub fn prompt_sent(&mut self, id: Value) {
        self.prompt_id = Some(id);
    }

    /// The host cancelled the turn: it says nothing more (the client dispatched
    /// `chat/turnCancelled`).
    pub fn abort_turn(&mut self) {
        if self.live() {
            self.mapper.map(NormEvent::Idle {
                aborted: true,
                duration_ms: None,
            });
        }
        if let Some(turn) = &mut self.turn {
            turn.aborted = true;
        }
    }

    /// The turn failed outside the agent's own reporting (its process died, its output was
    /// unreadable): `chat/error`, unless the turn ended already.
    pub fn fail_turn(&mut self, error: ErrorInfo) -> Vec<AgentSignal> {
        let mut out = Vec::new();
        if self.live() {
            self.settle(
                &mut out,
                "The agent stopped before this tool call finished.",
            );
        }
        let mut signals = signals(out);
        signals.extend(self.mapper.fail(error));
        self.turn = None;
        self.prompt_id = None;
        signals
    }

    /// The host answered the permission request of `tool_call_id`.
    pub fn record_decision(&mut self, tool_call_id: &str, approved: bool) -> Vec<AgentSignal> {
        if let Some(tool) = self
            .turn
            .as_mut()
            .and_then(|turn| turn.tools.get_mut(tool_call_id))
        {
            tool.denied = !approved;
        }
        if !self.live() {
            return Vec::new();
        }
        self.mapper.map(NormEvent::PermissionResolved {
            scope: Scope::Root,
            tool_call_id: tool_call_id.to_owned(),
            approved,
        })
    }

    /// Whether a turn runs that has not ended nor been cancelled.
    fn live(&self) -> bool {
        self.turn.as_ref().is_some_and(|turn| !turn.aborted) && !self.mapper.turn_ended()
    }

    fn emit(&mut self, event: NormEvent, out: &mut Vec<Output>) {
        out.extend(self.mapper.map(event).into_iter().map(Output::Signal));
    }

    /// Translates one line of the agent's stdout.
    pub fn on_line(&mut self, line: &str) -> Result<Vec<Output>, LineError> {
        let message = wire::parse_message(line).map_err(|e| LineError::new(e.0, line))?;
        let mut out = Vec::new();
        match message {
            Message::Response { id, result } => self.response(id, result, &mut out, line)?,
            Message::Request { id, method, params } => {
                self.request(id, &method, params, &mut out, line)?;
            }
            Message::Notification { method, params } => {
                if method == "session/update" {
                    self.update(&params, &mut out, line)?;
                } else {
                    tracing::debug!(method, "ignoring a notification of the agent");
                }
            }
        }
        Ok(out)
    }

    fn is_prompt_answer(&self, id: &Value, result: &Result<Value, RpcError>) -> bool {
        match &self.prompt_id {
            Some(prompt) => prompt == id,
            None => {
                self.transcript
                    && self.turn.is_some()
                    && matches!(result, Ok(value) if value.get("stopReason").is_some())
            }
        }
    }

    fn response(
        &mut self,
        id: Value,
        result: Result<Value, RpcError>,
        out: &mut Vec<Output>,
        line: &str,
    ) -> Result<(), LineError> {
        if !self.is_prompt_answer(&id, &result) {
            if self.transcript
                && self.session_id.is_none()
                && let Ok(value) = &result
                && let Some(session) = value.get("sessionId").and_then(Value::as_str)
            {
                self.session_id = Some(session.to_owned());
            }
            out.push(Output::Response { id, result });
            return Ok(());
        }
        self.prompt_id = None;
        if self.live() {
            match result {
                Ok(value) => {
                    let answer =
                        wire::prompt_response(value).map_err(|e| LineError::new(e.0, line))?;
                    self.stopped(answer, out);
                }
                Err(error) => {
                    self.settle(out, "The turn failed before this tool call finished.");
                    let error = self.error_info(&error);
                    self.emit(
                        NormEvent::Failed {
                            error,
                            duration_ms: None,
                        },
                        out,
                    );
                }
            }
        }
        self.turn = None;
        out.push(Output::TurnEnded);
        Ok(())
    }

    /// What an error answer to the prompt tells the user.
    fn error_info(&self, error: &RpcError) -> ErrorInfo {
        let message = if error.code == AUTH_REQUIRED {
            let methods = if self.auth_methods.is_empty() {
                String::new()
            } else {
                format!(" (it offers: {})", self.auth_methods.join("; "))
            };
            format!(
                "The agent needs you to sign in before it can work{methods}: {}",
                error.message
            )
        } else {
            format!("The agent failed the turn: {error}")
        };
        ErrorInfo {
            error_type: ACP_ERROR.to_owned(),
            message,
            stack: None,
            meta: None,
        }
    }

    /// The prompt's answer for a live turn: its usage, then how it ended.
    fn stopped(&mut self, answer: schema::PromptResponse, out: &mut Vec<Output>) {
        use schema::StopReason;
        self.usage(answer.usage.as_ref(), out);
        let failure = match answer.stop_reason {
            StopReason::EndTurn => None,
            StopReason::Cancelled => {
                self.settle(
                    out,
                    "The agent cancelled the turn before this tool call finished.",
                );
                self.emit(NormEvent::Cancelled { duration_ms: None }, out);
                return;
            }
            StopReason::Refusal => Some(("refusal", "The agent refused to go on with this turn.")),
            StopReason::MaxTokens => Some((
                "maxTokens",
                "The agent stopped: the model reached its maximum number of output tokens.",
            )),
            StopReason::MaxTurnRequests => Some((
                "maxTurnRequests",
                "The agent stopped: the turn reached its maximum number of model requests.",
            )),
            _ => None,
        };
        self.settle(out, "The turn ended before this tool call finished.");
        if let Some(plan) = self.turn.as_mut().and_then(|turn| turn.plan.take()) {
            self.emit(
                NormEvent::ToolCompleted {
                    scope: Scope::Root,
                    tool_call_id: plan,
                    success: true,
                    past_tense_message: Some("Planned".to_owned()),
                    content: Vec::new(),
                    structured_content: None,
                    error: None,
                },
                out,
            );
        }
        let event = match failure {
            None => NormEvent::Idle {
                aborted: false,
                duration_ms: None,
            },
            Some((reason, message)) => NormEvent::Failed {
                error: ErrorInfo {
                    error_type: ACP_ERROR.to_owned(),
                    message: message.to_owned(),
                    stack: None,
                    meta: Some(JsonObject::from_iter([(
                        "stopReason".to_owned(),
                        Value::from(reason),
                    )])),
                },
                duration_ms: None,
            },
        };
        self.emit(event, out);
    }

    /// Completes the turn's open tool calls (not the plan) as failed with `message`.
    fn settle(&mut self, out: &mut Vec<Output>, message: &str) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        let open: Vec<String> = std::mem::take(&mut turn.order);
        turn.tools.clear();
        for tool_call_id in open {
            self.emit(
                NormEvent::ToolCompleted {
                    scope: Scope::Root,
                    tool_call_id,
                    success: false,
                    past_tense_message: None,
                    content: Vec::new(),
                    structured_content: None,
                    error: Some(ToolError::new(message)),
                },
                out,
            );
        }
    }

    /// The turn's usage: token counts from the prompt's answer, the context's fill in `_meta`.
    fn usage(&mut self, usage: Option<&schema::Usage>, out: &mut Vec<Output>) {
        let mut meta = JsonObject::new();
        if let Some((used, size, cost)) = &self.context {
            meta.insert(CONTEXT_WINDOW.into(), (*size).into());
            meta.insert(CONTEXT_TOKENS.into(), (*used).into());
            if let Some(cost) = cost {
                // Not `cost`: clients read that as credits, and this is money.
                meta.insert(
                    "agenthost.cost".into(),
                    json!({ "amount": cost.amount, "currency": cost.currency }),
                );
            }
        }
        let Some(usage) = usage else {
            if meta.is_empty() {
                return;
            }
            self.emit(
                NormEvent::Usage {
                    scope: Scope::Root,
                    // No token counts: nothing to add, only the context's fill.
                    kind: UsageKind::Call,
                    input: 0,
                    output: 0,
                    cache_read: None,
                    cache_write: None,
                    model: self.model.clone(),
                    meta: Some(meta),
                },
                out,
            );
            return;
        };
        if let Some(tokens) = usage.thought_tokens {
            meta.insert("reasoningTokens".into(), tokens.into());
        }
        self.emit(
            NormEvent::Usage {
                scope: Scope::Root,
                // The prompt's answer covers the whole turn.
                kind: UsageKind::Total,
                input: inclusive_input(usage),
                output: usage.output_tokens,
                cache_read: usage.cached_read_tokens,
                cache_write: usage.cached_write_tokens,
                model: self.model.clone(),
                meta: (!meta.is_empty()).then_some(meta),
            },
            out,
        );
    }

    /// Whether updates of ACP session `id` belong to this chat (the first one seen is followed
    /// when none is set yet).
    fn follows(&mut self, id: &str) -> bool {
        match &self.session_id {
            Some(followed) => followed == id,
            None => {
                self.session_id = Some(id.to_owned());
                true
            }
        }
    }

    fn update(
        &mut self,
        params: &Value,
        out: &mut Vec<Output>,
        line: &str,
    ) -> Result<(), LineError> {
        let (session_id, update) = match wire::session_update(params) {
            Ok(SessionUpdate::Known { session_id, update }) => (session_id, update),
            Ok(SessionUpdate::Skipped { kind, .. }) => {
                tracing::debug!(kind, "skipping a session update of an unknown kind");
                return Ok(());
            }
            Err(error) => return Err(LineError::new(error.0, line)),
        };
        if !self.follows(&session_id) {
            tracing::debug!(session_id, "ignoring an update of another ACP session");
            return Ok(());
        }
        if self.replaying {
            return Ok(());
        }
        use schema::SessionUpdate as U;
        // Session state, kept whether or not a turn runs.
        match *update {
            U::AvailableCommandsUpdate(update) => {
                self.commands = update.available_commands;
                return Ok(());
            }
            U::ConfigOptionUpdate(update) => {
                self.config_options = update.config_options;
                return Ok(());
            }
            U::CurrentModeUpdate(update) => {
                self.mode_changed(update.current_mode_id.0.as_ref());
                return Ok(());
            }
            U::SessionInfoUpdate(update) => {
                if let Some(title) = update.title.take()
                    && !title.trim().is_empty()
                {
                    self.emit(NormEvent::Title { title }, out);
                }
                return Ok(());
            }
            U::UsageUpdate(update) => {
                if update.size > 0 {
                    self.emit(
                        NormEvent::ModelLimits {
                            limits: ModelLimits {
                                max_context_window: Some(update.size),
                                ..ModelLimits::default()
                            },
                        },
                        out,
                    );
                }
                self.context = Some((update.used, update.size, update.cost));
                return Ok(());
            }
            update if !self.live() => {
                tracing::debug!(
                    kind = update_kind(&update),
                    "dropping a session update outside the running turn"
                );
                return Ok(());
            }
            U::AgentMessageChunk(chunk) => self.chunk(false, chunk, out),
            U::AgentThoughtChunk(chunk) => self.chunk(true, chunk, out),
            U::ToolCall(call) => self.tool_call(call, out),
            U::ToolCallUpdate(update) => self.tool_call_update(update, out),
            U::Plan(plan) => self.plan(&plan, out),
            other => {
                tracing::debug!(
                    kind = update_kind(&other),
                    "a session update with no AHP form"
                );
            }
        }
        Ok(())
    }

    fn mode_changed(&mut self, mode: &str) {
        for option in &mut self.config_options {
            if option.category == Some(schema::SessionConfigOptionCategory::Mode)
                && let schema::SessionConfigKind::Select(select) = &mut option.kind
            {
                select.current_value = schema::SessionConfigValueId::new(mode);
            }
        }
    }

    fn chunk(&mut self, reasoning: bool, chunk: schema::ContentChunk, out: &mut Vec<Output>) {
        let schema::ContentBlock::Text(text) = chunk.content else {
            tracing::debug!("skipping a non-text message chunk");
            return;
        };
        if text.text.is_empty() {
            return;
        }
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        if turn.text != Some(reasoning) {
            turn.text = Some(reasoning);
            turn.segment += 1;
        }
        let prefix = if reasoning { "thought" } else { "message" };
        let stream_id = match &chunk.message_id {
            Some(id) => format!("{prefix}-{}-{}", id.0, turn.segment),
            None => format!("{prefix}-{}", turn.segment),
        };
        let event = if reasoning {
            NormEvent::ReasoningDelta {
                scope: Scope::Root,
                stream_id,
                text: text.text,
            }
        } else {
            NormEvent::TextDelta {
                scope: Scope::Root,
                stream_id,
                text: text.text,
            }
        };
        self.emit(event, out);
    }
}

fn update_kind(update: &schema::SessionUpdate) -> &'static str {
    use schema::SessionUpdate as U;
    match update {
        U::UserMessageChunk(_) => "user_message_chunk",
        U::AgentMessageChunk(_) => "agent_message_chunk",
        U::AgentThoughtChunk(_) => "agent_thought_chunk",
        U::ToolCall(_) => "tool_call",
        U::ToolCallUpdate(_) => "tool_call_update",
        U::Plan(_) => "plan",
        U::Notice(_) => "notice",
        U::CompactionUpdate(_) => "compaction_update",
        U::CompactionSummaryChunk(_) => "compaction_summary_chunk",
        _ => "session state",
    }
}

fn signals(out: Vec<Output>) -> Vec<AgentSignal> {
    out.into_iter()
        .filter_map(|output| match output {
            Output::Signal(signal) => Some(signal),
            _ => None,
        })
        .collect()
}

/// Maps a whole captured transcript — the agent's stdout, one JSON-RPC message per line — as
/// one turn `turn_id`: the signals only (what `agent-host map --provider acp` prints). The
/// session followed is the first one named; the prompt's answer is the first answer carrying a
/// stop reason.
pub fn map_transcript(
    session: SessionUri,
    turn_id: &str,
    text: &str,
) -> Result<Vec<AgentSignal>, TranscriptError> {
    let mut translator = Translator::new(session);
    translator.transcript = true;
    translator.begin_turn(turn_id);
    agenthost_provider_api::replay_lines(text, |line| translator.on_line(line).map(signals))
}

/// A transcript line [`map_transcript`] could not read, with its 1-based line number.
pub type TranscriptError = agenthost_provider_api::TranscriptError<LineError>;

/// The input tokens of `usage`, cache reads and writes included. ACP leaves open whether
/// `inputTokens` counts the cached tokens (agents on Anthropic models leave them out, OpenAI's
/// count them); `totalTokens` is the sum of every kind, so when it covers the input, the
/// output and the cached tokens side by side, the input left them out and they are added.
fn inclusive_input(usage: &schema::Usage) -> u64 {
    let cached = usage
        .cached_read_tokens
        .unwrap_or(0)
        .saturating_add(usage.cached_write_tokens.unwrap_or(0));
    let separate = usage
        .input_tokens
        .saturating_add(usage.output_tokens)
        .saturating_add(cached);
    if cached > 0 && usage.total_tokens >= separate {
        usage.input_tokens.saturating_add(cached)
    } else {
        usage.input_tokens
    }
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;

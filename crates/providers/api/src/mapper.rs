//! The shared, provider-neutral mapper: [`NormEvent`]s in, [`AgentSignal`]s out.
//!
//! Every provider translator (Claude Code, Codex, Copilot CLI) turns its CLI's native events into
//! the same small [`NormEvent`] vocabulary; one [`Mapper`] per provider conversation turns that
//! into signals. The AHP part and tool-call ordering rules live here and
//! nowhere else, so translators stay thin:
//!
//! - a markdown or reasoning part exists before any delta for it; a full block whose stream
//!   already has a part is ignored (the deltas covered it);
//! - `ToolStarted` closes the open parts of its scope, so text after a tool starts a new part; a
//!   duplicate start is ignored;
//! - a tool completed without a ready first gets a synthetic `ready (confirmed: not-needed)`, a
//!   permission request for a running tool is a second ready without `confirmed` (legal), and
//!   live output is shown only while a tool runs (an approved permission runs it again);
//! - exactly one terminal action per turn: `Failed` → `chat/error`, `Idle` → `chat/turnComplete`,
//!   `Cancelled` → `chat/turnCancelled` (the agent stopped on its own), `Idle { aborted: true }`
//!   → nothing (the client already dispatched `chat/turnCancelled`);
//! - scoped events carry `parent_tool_call_id`, and the first event of a new subagent scope is
//!   preceded by `SubagentStarted`; subagents still open when the turn ends are completed just
//!   before its terminal action;
//! - usage accumulates per scope for the turn: a call's report is added, a total replaces, and
//!   each `chat/usage` carries the scope's running total (cache writes under
//!   `agenthost.cacheWriteTokens`), since a later `chat/usage` replaces an earlier one.
//!
//! Input from a CLI is never trusted: an id that cannot be a [`SafeId`], an event for an unknown
//! tool call or an event outside a turn is dropped with a `tracing` warning, never a panic.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use agenthost_protocol::actions::{
    ChatActivityChangedAction, ChatDeltaAction, ChatErrorAction, ChatInputRequestedAction,
    ChatReasoningAction, ChatResponsePartAction, ChatToolCallCompleteAction,
    ChatToolCallContentChangedAction, ChatToolCallDeltaAction, ChatToolCallStartAction,
    ChatTurnCancelledAction, ChatTurnCompleteAction, ChatUsageAction, SessionTitleChangedAction,
};
use agenthost_protocol::common::JsonObject;
use agenthost_protocol::error_info::error_part;
use agenthost_protocol::state::{
    ChatInputRequest, ErrorInfo, MarkdownResponsePart, ReasoningResponsePart, ResponsePart,
    ToolCallContributor, ToolCallPendingConfirmationState, ToolCallResult, ToolInput,
    ToolResultContent, UsageInfo,
};
use agenthost_protocol::usage::{CACHE_WRITE_TOKENS, CONTEXT_TOKENS, CONTEXT_WINDOW};
use agenthost_protocol::{
    ActionSignal, AgentSignal, ModelCallCompleted, ModelLimits, ModelLimitsReported,
    PendingConfirmation, PermissionKind, SafeId, SessionUri, StateAction, SteeringConsumed,
    StringOrMarkdown, SubagentCompleted, SubagentStarted,
};
use serde_json::json;

mod events;
mod parts;
mod subagents;
mod tools;

/// Where an event happened: the top-level conversation or a subagent's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The chat's own conversation.
    Root,
    /// A subagent's conversation, started by tool call `parent_tool_call_id`.
    Subagent {
        /// The tool call that started the subagent.
        parent_tool_call_id: String,
    },
}

impl Scope {
    /// The scope of the subagent started by `parent_tool_call_id`.
    pub fn subagent(parent_tool_call_id: impl Into<String>) -> Self {
        Self::Subagent {
            parent_tool_call_id: parent_tool_call_id.into(),
        }
    }

    /// `Root` for `None`, else the subagent of that tool call.
    pub fn from_parent(parent_tool_call_id: Option<&str>) -> Self {
        parent_tool_call_id.map_or(Self::Root, Self::subagent)
    }

    /// The tool call that started the subagent; `None` at top level.
    pub fn parent_tool_call_id(&self) -> Option<&str> {
        match self {
            Self::Root => None,
            Self::Subagent {
                parent_tool_call_id,
            } => Some(parent_tool_call_id),
        }
    }
}

/// The provider-neutral events translators produce.
///
/// Deliberately absent for now: input requests (ask-user questions) and permission responders —
/// the driver that received a permission request keeps it and answers it itself.
#[derive(Debug, Clone, PartialEq)]
pub enum NormEvent {
    /// A piece of streamed assistant text.
    TextDelta {
        /// Where it happened.
        scope: Scope,
        /// The SDK's id of the streamed block (message id, item id, …): one part per stream.
        stream_id: String,
        /// The text to append.
        text: String,
    },
    /// A whole text block, for a stream that was not streamed.
    TextFull {
        /// Where it happened.
        scope: Scope,
        /// The SDK's id of the block; ignored when that stream already has a part.
        stream_id: String,
        /// The full text.
        text: String,
    },
    /// A piece of streamed reasoning.
    ReasoningDelta {
        /// Where it happened.
        scope: Scope,
        /// The SDK's id of the streamed block.
        stream_id: String,
        /// The text to append.
        text: String,
    },
    /// A whole reasoning block, for a stream that was not streamed.
    ReasoningFull {
        /// Where it happened.
        scope: Scope,
        /// The SDK's id of the block; ignored when that stream already has a part.
        stream_id: String,
        /// The full text.
        text: String,
    },
    /// A tool call began (its arguments may still stream).
    ToolStarted {
        /// Where it happened.
        scope: Scope,
        /// The SDK's tool call id (must be a valid [`SafeId`]).
        tool_call_id: String,
        /// The tool's internal name.
        tool_name: String,
        /// The tool's human-readable name.
        display_name: String,
        /// Who provides the tool (a client, an MCP server), when not the agent itself.
        contributor: Option<ToolCallContributor>,
        /// Provider-specific metadata for the tool call.
        meta: Option<JsonObject>,
    },
    /// A piece of a tool call's streamed arguments.
    ToolArgsDelta {
        /// Where it happened.
        scope: Scope,
        /// The tool call.
        tool_call_id: String,
        /// The partial JSON to append.
        partial_json: String,
    },
    /// A piece of a tool call's streamed arguments and/or what the call will do, recomputed from
    /// the arguments so far: one `chat/toolCallDelta` carrying both (nothing when both are
    /// absent or the tool is no longer streaming). The invocation message is also what a
    /// synthetic ready shows until a [`NormEvent::ToolReady`] says otherwise.
    ToolDelta {
        /// Where it happened.
        scope: Scope,
        /// The tool call.
        tool_call_id: String,
        /// The partial JSON to append.
        partial_json: Option<String>,
        /// What the tool will do, for people, as far as the arguments tell yet.
        invocation_message: Option<String>,
    },
    /// A tool call's arguments are final.
    ToolReady {
        /// Where it happened.
        scope: Scope,
        /// The tool call.
        tool_call_id: String,
        /// What the tool will do, for people.
        invocation_message: String,
        /// The final input, as text (usually JSON).
        tool_input: Option<String>,
        /// The agent runs it without asking: `chat/toolCallReady { confirmed: not-needed }`.
        /// When `false` nothing is emitted yet: a [`NormEvent::PermissionAsked`] follows.
        auto_approved: bool,
        /// Provider-specific metadata (replaces the start's when present).
        meta: Option<JsonObject>,
    },
    /// The agent asks permission to run a tool call.
    PermissionAsked {
        /// Where it happened.
        scope: Scope,
        /// The tool call (started on the fly if the mapper has not seen it).
        tool_call_id: String,
        /// The tool's internal name.
        tool_name: String,
        /// The tool's human-readable name.
        display_name: String,
        /// What the permission is about.
        kind: PermissionKind,
        /// The file or directory concerned, if any.
        path: Option<String>,
        /// Short title of the confirmation prompt.
        title: String,
        /// What the tool will do, for people.
        invocation_message: String,
        /// The tool's input, as text (usually JSON).
        input: Option<String>,
    },
    /// Live output of a running tool call (replaces the previous live content).
    ToolOutput {
        /// Where it happened.
        scope: Scope,
        /// The tool call.
        tool_call_id: String,
        /// The content so far.
        content: Vec<ToolResultContent>,
        /// Provider-specific metadata (a progress message, …); replaces the tool call's.
        meta: Option<JsonObject>,
    },
    /// The host answered a permission request of tool call `tool_call_id`. Nothing is emitted
    /// (the client dispatched `chat/toolCallConfirmed`); an approved call runs again, so its
    /// live output is shown.
    PermissionResolved {
        /// Where it happened.
        scope: Scope,
        /// The tool call.
        tool_call_id: String,
        /// Whether the host approved it.
        approved: bool,
    },
    /// A tool call finished.
    ToolCompleted {
        /// Where it happened.
        scope: Scope,
        /// The tool call.
        tool_call_id: String,
        /// Whether it succeeded.
        success: bool,
        /// What the tool did, in the past tense; derived from the display name when `None`.
        past_tense_message: Option<String>,
        /// The result content.
        content: Vec<ToolResultContent>,
        /// A structured result object, if the agent reports one.
        structured_content: Option<JsonObject>,
        /// The error message and code (`"denied"` for a user-declined call).
        error: Option<ToolError>,
    },
    /// The agent asks the user for input (questions, a confirmation of a plan, an MCP
    /// elicitation): `chat/inputRequested` in the scope's chat. The provider parks its own
    /// responder under `request.id` until the host calls
    /// [`crate::ProviderSession::respond_to_input`]. Closes the scope's open text parts, so text
    /// after the request starts a new part.
    InputAsked {
        /// Where it happened.
        scope: Scope,
        /// The request as the client sees it.
        request: ChatInputRequest,
    },
    /// A subagent started by tool call `parent_tool_call_id`.
    SubagentStarted {
        /// The tool call that started the subagent (must be a valid [`SafeId`]).
        parent_tool_call_id: String,
        /// The agent's internal name.
        agent_name: String,
        /// The agent's human-readable name.
        display_name: String,
        /// What the subagent was asked to do, in short.
        description: Option<String>,
        /// The full prompt it received.
        prompt: Option<String>,
        /// The tool call of the subagent that started this one, when nested.
        grandparent: Option<String>,
    },
    /// The subagent started by `parent_tool_call_id` finished.
    SubagentEnded {
        /// The tool call that started it.
        parent_tool_call_id: String,
    },
    /// Token usage: one model call's ([`UsageKind::Call`], added to the scope's total for the
    /// turn) or the scope's whole turn so far ([`UsageKind::Total`], replacing it). The mapper
    /// reports the scope's running total as `chat/usage` either way.
    ///
    /// Token meanings are normalised by the provider (see `agenthost_protocol::usage`): `input`
    /// counts every input token, cached or not; `cache_read` and `cache_write` are parts of it.
    Usage {
        /// Where it happened.
        scope: Scope,
        /// Whether this is one call's usage or the turn's so far.
        kind: UsageKind,
        /// Input tokens, cache reads and writes included.
        input: u64,
        /// Output tokens.
        output: u64,
        /// Input tokens read from the cache.
        cache_read: Option<u64>,
        /// Input tokens written to the cache.
        cache_write: Option<u64>,
        /// The model.
        model: Option<String>,
        /// Provider-specific metadata. VS Code renders a numeric `cost` as "N credits" in the
        /// response footer, so `cost` is never a money amount (dollars go under an
        /// `agenthost.` key, as Claude's `agenthost.agentCostUsd`); the mapper drops a `cost` that is not a number ≥ 0 and every
        /// `quotaSnapshots` (it would overwrite the user's Copilot quota display).
        meta: Option<JsonObject>,
    },
    /// What the agent is doing now; `None` clears it.
    Activity {
        /// The activity line.
        text: Option<String>,
    },
    /// The agent renamed the conversation.
    Title {
        /// The new title.
        title: String,
    },
    /// A queued steering message was consumed.
    SteeringConsumed {
        /// The steering message id.
        id: String,
    },
    /// The agent reported the limits of the conversation's model (the one
    /// [`Mapper::set_model`] names); nothing is signalled while that model is unknown or the
    /// limits are empty.
    ModelLimits {
        /// What the agent said.
        limits: ModelLimits,
    },
    /// One model call of the turn finished.
    ModelCallCompleted {
        /// The provider's id of the call.
        model_call_id: String,
    },
    /// The turn failed: `chat/error`, which ends it.
    Failed {
        /// What went wrong.
        error: ErrorInfo,
        /// The turn's duration as the agent measured it; the mapper's clock when `None`.
        duration_ms: Option<i64>,
    },
    /// The agent stopped the turn on its own (it was interrupted without the client asking):
    /// `chat/turnCancelled`, which ends it.
    Cancelled {
        /// The turn's duration as the agent measured it; the mapper's clock when `None`.
        duration_ms: Option<i64>,
    },
    /// The agent is idle: the turn is over.
    Idle {
        /// The turn was cancelled (the client already dispatched `chat/turnCancelled`).
        aborted: bool,
        /// The turn's duration as the agent measured it; the mapper's clock when `None`.
        duration_ms: Option<i64>,
    },
}

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// What went wrong, for people.
    pub message: String,
    /// A machine-readable code; `"denied"` marks a user-declined call.
    pub code: Option<String>,
}

/// The error code of a tool call the user (or a policy) declined.
pub const DENIED: &str = "denied";

impl ToolError {
    /// An error with a message and no code.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: None,
        }
    }

    /// A declined call: code [`DENIED`].
    pub fn denied(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: Some(DENIED.to_owned()),
        }
    }
}

/// What a [`NormEvent::Usage`] report covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageKind {
    /// One model call (added to the turn's total).
    Call,
    /// The turn so far (replaces the total).
    Total,
}

/// The token counts of one scope of a turn, summed over its reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TokenTotals {
    pub(crate) input: u64,
    pub(crate) output: u64,
    pub(crate) cache_read: Option<u64>,
    pub(crate) cache_write: Option<u64>,
}

impl TokenTotals {
    /// Applies one report.
    pub(crate) fn apply(&mut self, kind: UsageKind, report: TokenTotals) {
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        match kind {
            UsageKind::Total => *self = report,
            UsageKind::Call => {
                self.input = self.input.saturating_add(report.input);
                self.output = self.output.saturating_add(report.output);
                self.cache_read = add(self.cache_read, report.cache_read);
                self.cache_write = add(self.cache_write, report.cache_write);
            }
        }
    }
}

/// Turns one provider conversation's [`NormEvent`]s into [`AgentSignal`]s, one protocol turn at
/// a time.
#[derive(Debug)]
pub struct Mapper {
    session: SessionUri,
    turn: Option<TurnMap>,
    /// The conversation's model, by the id the host advertises it under.
    model: Option<String>,
    /// The context window the agent last reported for its model.
    context_window: Option<u64>,
}

impl Mapper {
    /// A mapper for a conversation of `session`, with no turn yet.
    pub fn new(session: SessionUri) -> Self {
        Self {
            session,
            turn: None,
            model: None,
            context_window: None,
        }
    }

    /// The model the conversation runs on, by the id the host advertises it under (the
    /// agent's `models[].id`): reported limits are signalled for it.
    pub fn set_model(&mut self, model: impl Into<String>) {
        self.model = Some(model.into());
    }

    /// The session the signals belong to.
    pub fn session(&self) -> &SessionUri {
        &self.session
    }

    /// Starts protocol turn `turn_id`: every per-turn map (open parts, tools, subagents) starts
    /// empty, and durations are measured from now.
    pub fn begin_turn(&mut self, turn_id: &str) {
        if let Some(previous) = &self.turn
            && !previous.ended
        {
            tracing::warn!(
                previous = previous.id,
                turn = turn_id,
                "a new turn begins before the previous one ended; forgetting it"
            );
        }
        self.turn = Some(TurnMap::new(turn_id));
    }

    /// The id of the most recently begun turn (also once it ended).
    pub fn turn_id(&self) -> Option<&str> {
        self.turn.as_ref().map(|turn| turn.id.as_str())
    }

    /// Whether the current turn has ended (its terminal action was produced, or it was aborted);
    /// `true` when no turn has begun.
    pub fn turn_ended(&self) -> bool {
        self.turn.as_ref().is_none_or(|turn| turn.ended)
    }

    /// Maps one event.
    pub fn map(&mut self, event: NormEvent) -> Vec<AgentSignal> {
        let mut out = Emitter {
            session: &self.session,
            signals: Vec::new(),
        };
        // Events that do not belong to a turn.
        match event {
            NormEvent::Activity { text } => {
                out.action(
                    None,
                    StateAction::ChatActivityChanged(ChatActivityChangedAction { activity: text }),
                );
                return out.signals;
            }
            NormEvent::Title { title } => {
                out.action(
                    None,
                    StateAction::SessionTitleChanged(SessionTitleChangedAction { title }),
                );
                return out.signals;
            }
            NormEvent::SteeringConsumed { id } => {
                out.signals
                    .push(AgentSignal::SteeringConsumed(SteeringConsumed {
                        session: self.session.clone(),
                        id,
                    }));
                return out.signals;
            }
            // Limits belong to the model, not to a turn: reported whenever the agent says them.
            NormEvent::ModelLimits { limits } => {
                if let Some(window) = limits.max_context_window {
                    self.context_window = Some(window);
                }
                if let Some(model) = self.model.clone().filter(|_| !limits.is_empty()) {
                    out.signals
                        .push(AgentSignal::ModelLimits(ModelLimitsReported {
                            session: self.session.clone(),
                            model,
                            limits,
                        }));
                }
                return out.signals;
            }
            event => {
                let Some(turn) = self.turn.as_mut() else {
                    tracing::warn!(event = kind(&event), "dropping an event outside any turn");
                    return out.signals;
                };
                if turn.ended {
                    tracing::warn!(
                        turn = turn.id,
                        event = kind(&event),
                        "dropping an event after the turn ended"
                    );
                    return out.signals;
                }
                turn.map(with_context(event, self.context_window), &mut out);
            }
        }
        out.signals
    }

    /// The turn failed outside the agent's own reporting (the process died, the stream broke):
    /// `chat/error` with `error`, unless the turn already ended.
    pub fn fail(&mut self, error: ErrorInfo) -> Vec<AgentSignal> {
        if self.turn_ended() {
            return Vec::new();
        }
        self.map(NormEvent::Failed {
            error,
            duration_ms: None,
        })
    }
}

/// A short name of an event, for logs.
fn kind(event: &NormEvent) -> &'static str {
    match event {
        NormEvent::TextDelta { .. } => "textDelta",
        NormEvent::TextFull { .. } => "textFull",
        NormEvent::ReasoningDelta { .. } => "reasoningDelta",
        NormEvent::ReasoningFull { .. } => "reasoningFull",
        NormEvent::ToolStarted { .. } => "toolStarted",
        NormEvent::ToolArgsDelta { .. } => "toolArgsDelta",
        NormEvent::ToolDelta { .. } => "toolDelta",
        NormEvent::ToolReady { .. } => "toolReady",
        NormEvent::PermissionAsked { .. } => "permissionAsked",
        NormEvent::ToolOutput { .. } => "toolOutput",
        NormEvent::PermissionResolved { .. } => "permissionResolved",
        NormEvent::ToolCompleted { .. } => "toolCompleted",
        NormEvent::InputAsked { .. } => "inputAsked",
        NormEvent::SubagentStarted { .. } => "subagentStarted",
        NormEvent::SubagentEnded { .. } => "subagentEnded",
        NormEvent::Usage { .. } => "usage",
        NormEvent::Activity { .. } => "activity",
        NormEvent::Title { .. } => "title",
        NormEvent::SteeringConsumed { .. } => "steeringConsumed",
        NormEvent::ModelCallCompleted { .. } => "modelCallCompleted",
        NormEvent::ModelLimits { .. } => "modelLimits",
        NormEvent::Failed { .. } => "failed",
        NormEvent::Cancelled { .. } => "cancelled",
        NormEvent::Idle { .. } => "idle",
    }
}

/// Collects the signals of one event.
struct Emitter<'a> {
    session: &'a SessionUri,
    signals: Vec<AgentSignal>,
}

impl Emitter<'_> {
    fn action(&mut self, parent: Option<&SafeId>, action: StateAction) {
        self.signals.push(AgentSignal::Action(ActionSignal {
            session: self.session.clone(),
            action,
            parent_tool_call_id: parent.cloned(),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PartKind {
    Markdown,
    Reasoning,
}

#[derive(Debug)]
struct OpenPart {
    stream_id: String,
    part_id: String,
}

/// The open parts of one scope.
#[derive(Debug, Default)]
struct ScopeParts {
    markdown: Option<OpenPart>,
    reasoning: Option<OpenPart>,
}

impl ScopeParts {
    fn open(&mut self, kind: PartKind) -> &mut Option<OpenPart> {
        match kind {
            PartKind::Markdown => &mut self.markdown,
            PartKind::Reasoning => &mut self.reasoning,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolStatus {
    /// Started; arguments may still stream. A completion needs a synthetic ready first.
    Streaming,
    /// Ready and confirmed (or auto-approved).
    Running,
    /// Waiting for the host's answer.
    Pending,
    Completed,
}

#[derive(Debug)]
struct ToolTrack {
    scope: Option<SafeId>,
    display_name: String,
    status: ToolStatus,
    invocation_message: Option<String>,
    tool_input: Option<String>,
    meta: Option<JsonObject>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubagentStatus {
    Open,
    Closed,
}

/// The per-turn state of the mapper.
#[derive(Debug)]
struct TurnMap {
    id: String,
    started: Instant,
    ended: bool,
    /// Open parts per scope (keyed by the parent tool call id; `None` is the root).
    scopes: HashMap<Option<String>, ScopeParts>,
    /// Every part id used in this turn.
    part_ids: HashSet<String>,
    /// Streams that already have a part, by kind and scope.
    streams: HashSet<(PartKind, Option<String>, String)>,
    tools: HashMap<String, ToolTrack>,
    subagents: HashMap<String, SubagentStatus>,
    /// Subagents in the order they started, to close the open ones deterministically.
    subagent_order: Vec<SafeId>,
    /// The usage of the turn so far, per scope (keyed like `scopes`).
    usage: HashMap<Option<String>, TokenTotals>,
}

impl TurnMap {
    fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            started: Instant::now(),
            ended: false,
            scopes: HashMap::new(),
            part_ids: HashSet::new(),
            streams: HashSet::new(),
            tools: HashMap::new(),
            subagents: HashMap::new(),
            subagent_order: Vec::new(),
            usage: HashMap::new(),
        }
    }
}

/// `chat/toolCallReady { confirmed: not-needed }` from what the mapper knows of the tool.
fn ready_not_needed(turn_id: String, tool_call_id: &str, tool: &ToolTrack) -> StateAction {
    crate::render::running_without_confirmation(
        turn_id,
        tool_call_id.to_owned(),
        tool.invocation_message
            .clone()
            .unwrap_or_else(|| tool.display_name.clone()),
        tool.tool_input.clone().map(ToolInput::Inline),
        tool.meta.clone(),
    )
}

/// `id` as a [`SafeId`], or `None` with a warning.
fn valid_id(id: &str, what: &str) -> Option<SafeId> {
    match SafeId::new(id) {
        Ok(id) => Some(id),
        Err(error) => {
            tracing::warn!(%error, what, "dropping an event with an invalid id");
            None
        }
    }
}

/// A provider's usage `_meta` as clients may see it: no `quotaSnapshots` (VS Code would show it as
/// the user's Copilot quota) and a `cost` only when it is a number ≥ 0 (VS Code shows it as
/// credits); `None` when nothing is left.
fn usage_meta(mut meta: JsonObject) -> Option<JsonObject> {
    meta.remove("quotaSnapshots");
    if meta
        .get("cost")
        .is_some_and(|cost| !cost.as_f64().is_some_and(|n| n >= 0.0))
    {
        meta.remove("cost");
    }
    (!meta.is_empty()).then_some(meta)
}

/// A usage report with the context's fill in `_meta`: the tokens of the latest call (a call
/// report's input; a total report says them itself, when it can) and the model's window when
/// the agent reported it.
fn with_context(mut event: NormEvent, window: Option<u64>) -> NormEvent {
    if let NormEvent::Usage {
        kind, input, meta, ..
    } = &mut event
    {
        let fill = meta.get_or_insert_with(JsonObject::new);
        if *kind == UsageKind::Call && *input > 0 {
            fill.insert(CONTEXT_TOKENS.into(), (*input).into());
        }
        if let Some(window) = window.filter(|_| fill.contains_key(CONTEXT_TOKENS)) {
            fill.insert(CONTEXT_WINDOW.into(), window.into());
        }
        if fill.is_empty() {
            *meta = None;
        }
    }
    event
}

fn tokens(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

#[cfg(test)]
#[path = "mapper_tests.rs"]
mod tests;

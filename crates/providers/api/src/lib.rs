//! The provider contract: what every agent adapter (Claude Code, Codex, Copilot CLI, the scripted
//! provider) implements, and how it talks back to the host.
//!
//! The central decision: **a provider never touches host state.** It receives turns through
//! [`ProviderSession::send_turn`] and reports everything that happens as [`AgentSignal`]s on its
//! [`SignalSink`]; the host routes each signal to its chat (or subagent chat), reduces it and
//! broadcasts it. Permission answers come back through
//! [`ProviderSession::respond_to_permission`]. The host owns turn history (its store keeps every
//! completed turn); a provider is never asked for its own, only for a resume handle
//! ([`ProviderSession::resume_handle`]) to continue the agent's conversation after a restart.
//!
//! The [`mapper`] is shared by every CLI adapter: translators turn their CLI's events into
//! [`NormEvent`]s and one [`Mapper`] per conversation turns those into signals, so the AHP
//! ordering rules live in one place. [`signal_json`] renders a signal for people and snapshots.
//!
//! Deliberately absent: process management, SDK event formats, AHP routing — they live in the
//! provider crates and the host.
#![deny(missing_docs)]

mod attachments;
mod cli;
pub mod history;
pub mod mapper;
mod render;
mod resume;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tolerant;

pub use attachments::{
    NoModelText, decode_base64, media_type, simple_text, unsendable, unsupported_attachment,
};
pub use cli::{AgentConfig, CliSettings, DEFAULT_MODEL};
pub use mapper::{DENIED, Mapper, NormEvent, Scope, ToolError, UsageKind};
pub use render::{
    awaiting_confirmation, pending_ready_action, running_without_confirmation, signal_json,
    stderr_suffix, system_notice, turn_cancelled,
};
pub use resume::{MAX_RESUME_ID_LEN, ResumeKey, is_valid_resume_id};

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use agenthost_protocol::ahp_types::state::{
    AgentInfo, ChatInputAnswer, ChatInputAnswerValue, ChatInputResponseKind, ErrorInfo,
    MessageAttachment, ModelSelection, SessionModelInfo, ToolCallResult,
};
use agenthost_protocol::error_info::{PROVIDER_EXITED, error_info};
use agenthost_protocol::{AgentSignal, ChatUri, SessionUri};
use futures::future::BoxFuture;
use tokio::sync::mpsc;

/// A message of an agent's wire protocol that does not decode, with what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Undecodable(pub String);

impl From<Undecodable> for String {
    fn from(error: Undecodable) -> Self {
        error.0
    }
}

/// A provider configuration the agent would refuse, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidConfig(pub String);

/// Why a provider operation failed. Messages are written for the person reading the chat error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The agent could not be started (binary missing, bad arguments, start timeout).
    #[error("the agent could not be started: {message}")]
    StartFailed {
        /// What went wrong.
        message: String,
    },
    /// The agent process exited while the host still needed it.
    #[error("the agent exited unexpectedly ({status}){}", tail_suffix(.stderr_tail))]
    Exited {
        /// The exit status as text.
        status: String,
        /// The last lines the agent wrote to stderr.
        stderr_tail: String,
    },
    /// The agent sent something the adapter could not understand.
    #[error("the agent sent an unreadable message: {message}")]
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// The agent answered one of the host's requests with an error.
    #[error("the agent refused the request: {message}")]
    Refused {
        /// What the agent answered.
        message: String,
    },
    /// The operation needs a running turn or session that is not there.
    #[error("{message}")]
    NotRunning {
        /// What is missing.
        message: String,
    },
    /// The provider does not support the operation.
    #[error("the agent does not support {operation}")]
    Unsupported {
        /// The operation.
        operation: &'static str,
    },
}

fn tail_suffix(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", tail.trim())
    }
}

impl ProviderError {
    /// The agent no longer reads its stdin (writing a line failed with `error`); `stderr_tail`
    /// is what it last wrote to stderr, if it was collected.
    pub fn input_closed(error: impl fmt::Display, stderr_tail: String) -> Self {
        ProviderError::Exited {
            status: format!("its input is closed: {error}"),
            stderr_tail,
        }
    }

    /// The `ErrorInfo` a chat error carries for this failure.
    pub fn to_error_info(&self) -> ErrorInfo {
        let error_type = match self {
            ProviderError::StartFailed { .. } => "providerStartFailed",
            ProviderError::Exited { .. } => PROVIDER_EXITED,
            ProviderError::Protocol { .. } => "providerProtocol",
            ProviderError::Refused { .. } => "providerRefused",
            ProviderError::NotRunning { .. } => "providerNotRunning",
            ProviderError::Unsupported { .. } => "providerUnsupported",
        };
        error_info(error_type, self.to_string())
    }
}

/// The models a CLI provider lists: each configured model id (`default`, the CLI's own
/// default, is shown as "Default model"), or the default alone when none is configured.
pub fn listed_models(
    provider: &str,
    default: &str,
    configured: &[String],
) -> Vec<SessionModelInfo> {
    let entry = |id: &str| {
        let name = if id == default { "Default model" } else { id };
        model_info(provider, id, name)
    };
    if configured.is_empty() {
        vec![entry(default)]
    } else {
        configured.iter().map(|id| entry(id)).collect()
    }
}

/// A model entry of [`AgentInfo::models`] with only its id, provider and display name.
pub fn model_info(provider: &str, id: &str, name: &str) -> SessionModelInfo {
    SessionModelInfo {
        id: id.to_owned(),
        provider: provider.to_owned(),
        name: name.to_owned(),
        max_context_window: None,
        max_output_tokens: None,
        max_prompt_tokens: None,
        supports_vision: None,
        policy_state: None,
        config_schema: None,
        meta: None,
    }
}

/// Puts `limits` on the model `model` of `provider`'s entry in `agents` (only the limits that
/// are known; a known one replaces what was there). Returns whether anything changed.
pub fn apply_model_limits(
    agents: &mut [AgentInfo],
    provider: &str,
    model: &str,
    limits: &agenthost_protocol::ModelLimits,
) -> bool {
    let Some(entry) = agents
        .iter_mut()
        .filter(|agent| agent.provider == provider)
        .flat_map(|agent| agent.models.iter_mut())
        .find(|entry| entry.id == model)
    else {
        return false;
    };
    let before = (
        entry.max_prompt_tokens,
        entry.max_context_window,
        entry.max_output_tokens,
    );
    let count = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
    if let Some(value) = limits.max_prompt_tokens {
        entry.max_prompt_tokens = Some(count(value));
    }
    if let Some(value) = limits.max_context_window {
        entry.max_context_window = Some(count(value));
    }
    if let Some(value) = limits.max_output_tokens {
        entry.max_output_tokens = Some(count(value));
    }
    before
        != (
            entry.max_prompt_tokens,
            entry.max_context_window,
            entry.max_output_tokens,
        )
}

/// The model limits in `agents`, as JSON for the store:
/// `{"<provider>": {"<model>": {"maxPromptTokens": n, "maxContextWindow": n, "maxOutputTokens": n}}}`
/// (models without any limit left out).
pub fn model_limits_json(agents: &[AgentInfo]) -> serde_json::Value {
    let mut providers = serde_json::Map::new();
    for agent in agents {
        let mut models = serde_json::Map::new();
        for model in &agent.models {
            let mut limits = serde_json::Map::new();
            for (key, value) in [
                ("maxPromptTokens", model.max_prompt_tokens),
                ("maxContextWindow", model.max_context_window),
                ("maxOutputTokens", model.max_output_tokens),
            ] {
                if let Some(value) = value {
                    limits.insert(key.into(), value.into());
                }
            }
            if !limits.is_empty() {
                models.insert(model.id.clone(), limits.into());
            }
        }
        if !models.is_empty() {
            providers.insert(agent.provider.clone(), models.into());
        }
    }
    providers.into()
}

/// Applies limits stored by [`model_limits_json`] to `agents` (models the agents no longer
/// advertise, and values that are not non-negative integers, are skipped).
pub fn apply_stored_model_limits(agents: &mut [AgentInfo], stored: &serde_json::Value) {
    let Some(providers) = stored.as_object() else {
        return;
    };
    for (provider, models) in providers {
        for (model, limits) in models.as_object().into_iter().flatten() {
            let value = |key: &str| limits.get(key).and_then(serde_json::Value::as_u64);
            let limits = agenthost_protocol::ModelLimits {
                max_prompt_tokens: value("maxPromptTokens"),
                max_context_window: value("maxContextWindow"),
                max_output_tokens: value("maxOutputTokens"),
            };
            apply_model_limits(agents, provider, model, &limits);
        }
    }
}

/// A provider signal tagged with the chat whose provider session produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutedSignal {
    /// The chat the producing provider session belongs to.
    pub chat: ChatUri,
    /// The signal.
    pub signal: AgentSignal,
}

/// The host has stopped listening (it is shutting the session down).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the host no longer receives signals for this chat")]
pub struct SinkClosed;

/// Where a provider session sends its signals. Bounded: a provider producing faster than the host
/// reduces waits, it never grows memory without limit.
#[derive(Debug, Clone)]
pub struct SignalSink {
    chat: ChatUri,
    tx: mpsc::Sender<RoutedSignal>,
}

impl SignalSink {
    /// A sink tagging every signal with `chat`.
    pub fn new(chat: ChatUri, tx: mpsc::Sender<RoutedSignal>) -> Self {
        Self { chat, tx }
    }

    /// The chat this sink reports for.
    pub fn chat(&self) -> &ChatUri {
        &self.chat
    }

    /// Sends one signal, waiting while the host's queue is full.
    pub async fn send(&self, signal: impl Into<AgentSignal>) -> Result<(), SinkClosed> {
        self.tx
            .send(RoutedSignal {
                chat: self.chat.clone(),
                signal: signal.into(),
            })
            .await
            .map_err(|_| SinkClosed)
    }

    /// Sends `signals` in order; once the host stops listening to the chat the rest are
    /// dropped (logged at `debug`: the chat went away, nothing is wrong).
    pub async fn send_all(&self, signals: impl IntoIterator<Item = AgentSignal>) {
        for signal in signals {
            if self.send(signal).await.is_err() {
                tracing::debug!(chat = %self.chat, "the host no longer listens to this chat");
                return;
            }
        }
    }
}

/// The channel signals travel on: the host keeps the receiver, providers get [`SignalSink`]s.
pub fn signal_channel(
    capacity: usize,
) -> (mpsc::Sender<RoutedSignal>, mpsc::Receiver<RoutedSignal>) {
    mpsc::channel(capacity.max(1))
}

/// What a provider needs to start a conversation for one chat.
#[derive(Debug, Clone)]
pub struct StartSession {
    /// The session the chat belongs to.
    pub session: SessionUri,
    /// The chat this provider session serves.
    pub chat: ChatUri,
    /// Where the agent works.
    pub working_directory: PathBuf,
    /// The model the client selected, if any.
    pub model: Option<ModelSelection>,
    /// Where to send signals.
    pub signals: SignalSink,
}

/// A line of a captured agent transcript that a provider's translator could not read (its
/// `map_transcript`), with the 1-based line number; `E` is the translator's own error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {error}")]
pub struct TranscriptError<E> {
    /// The 1-based line number.
    pub line: usize,
    /// What was wrong with it.
    pub error: E,
}

/// Replays a captured transcript: `translate` gets every non-blank line in order and returns
/// that line's signals; the first line it cannot read stops the replay, with its number.
pub fn replay_lines<E>(
    text: &str,
    mut translate: impl FnMut(&str) -> Result<Vec<AgentSignal>, E>,
) -> Result<Vec<AgentSignal>, TranscriptError<E>> {
    let mut signals = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let translated = translate(line).map_err(|error| TranscriptError {
            line: index + 1,
            error,
        })?;
        signals.extend(translated);
    }
    Ok(signals)
}

/// What a provider needs to resume an earlier conversation.
#[derive(Debug, Clone)]
pub struct RestoreSession {
    /// As for a new session.
    pub start: StartSession,
    /// The handle [`ProviderSession::resume_handle`] returned before the host restarted.
    pub resume_handle: serde_json::Value,
    /// The chat's finished turns, oldest first: what a provider whose agent cannot resume the
    /// conversation gives the new one as text ([`history::transcript`]). Empty when unknown.
    pub history: Vec<agenthost_protocol::ahp_types::state::Turn>,
}

impl RestoreSession {
    /// A restore of the conversation `resume_handle` names, for `start`, with the chat's earlier
    /// turns.
    pub fn new(
        start: StartSession,
        resume_handle: serde_json::Value,
        history: Vec<agenthost_protocol::ahp_types::state::Turn>,
    ) -> Self {
        Self {
            start,
            resume_handle,
            history,
        }
    }
}

/// One turn to run: the final text after the outgoing-turn contributions, their instructions,
/// and the original attachments.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    /// The turn id the client chose.
    pub turn_id: String,
    /// The message text to send.
    pub text: String,
    /// Host instructions added by contributions (empty when none).
    pub instructions: Vec<String>,
    /// The message's attachments.
    pub attachments: Vec<MessageAttachment>,
    /// The model selected for this turn, if any.
    pub model: Option<ModelSelection>,
    /// How the agent works this turn (the session's `mode` config value).
    pub mode: AgentMode,
}

impl TurnRequest {
    /// The id of this turn's model in the host's model list: the client's choice, else
    /// `session_default` (the model the session started with), else `default` (a model set in
    /// a provider's own configuration runs under that entry). Reported model limits go there.
    pub fn listed_model(&self, session_default: Option<&str>, default: &str) -> String {
        self.model
            .as_ref()
            .map(|model| model.id.clone())
            .or_else(|| session_default.map(str::to_owned))
            .unwrap_or_else(|| default.to_owned())
    }
}

/// The session config key of the agent mode (VS Code's "Agent Mode" picker).
pub const MODE_KEY: &str = "mode";

/// How the agent works, as the session's `mode` config value says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum AgentMode {
    /// `interactive`: step by step, asking where the user's approval is needed.
    #[default]
    Interactive,
    /// `plan`: plan first, change nothing. Each agent is put in its own plan mode (Claude Code
    /// `--permission-mode plan`, Copilot's `plan` agent mode, Codex in a read-only sandbox that
    /// asks for nothing) and the host denies every confirmation the agent still asks for.
    Plan,
    /// `autopilot`: work to the end without the user; the host answers the agent's questions.
    Autopilot,
}

impl AgentMode {
    /// The mode a config value names; `None` for anything else.
    pub fn from_value(value: &str) -> Option<Self> {
        match value {
            "interactive" => Some(Self::Interactive),
            "plan" => Some(Self::Plan),
            "autopilot" => Some(Self::Autopilot),
            _ => None,
        }
    }

    /// The mode of a session's config values (`interactive` when unset or unknown).
    pub fn of_config(values: &serde_json::Map<String, serde_json::Value>) -> Self {
        values
            .get(MODE_KEY)
            .and_then(serde_json::Value::as_str)
            .and_then(Self::from_value)
            .unwrap_or_default()
    }

    /// The mode of a session (its config values').
    pub fn of_session(session: &agenthost_protocol::state::SessionState) -> Self {
        session
            .config
            .as_ref()
            .map(|config| Self::of_config(&config.values))
            .unwrap_or_default()
    }

    /// The config value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Interactive => "interactive",
            Self::Plan => "plan",
            Self::Autopilot => "autopilot",
        }
    }
}

/// The host's answer to a pending confirmation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Run the tool.
    Approve,
    /// Do not run it.
    Deny {
        /// Why, for the agent (a user suggestion or a policy reason).
        reason: Option<String>,
    },
}

/// The host's answer to an input request (`chat/inputCompleted`).
#[derive(Debug, Clone, PartialEq)]
pub struct InputResponse {
    /// Accept (with the answers), decline, or cancel.
    pub response: ChatInputResponseKind,
    /// The final answers keyed by question id: the completion's own, else the drafts the
    /// request collected (empty when declined or cancelled without any).
    pub answers: HashMap<String, ChatInputAnswer>,
}

impl InputResponse {
    /// The submitted answer to question `id` as plain strings (a text, a number, a boolean, the
    /// selected options and any free-form values); empty when it was not answered or skipped.
    pub fn answer_texts(&self, id: &str) -> Vec<String> {
        let Some(answer) = self.answers.get(id) else {
            return Vec::new();
        };
        let ChatInputAnswer::Submitted(answered) = answer else {
            return Vec::new();
        };
        match &answered.value {
            ChatInputAnswerValue::Text(text) => vec![text.value.clone()],
            ChatInputAnswerValue::Number(number) => vec![number.value.to_string()],
            ChatInputAnswerValue::Boolean(boolean) => vec![boolean.value.to_string()],
            ChatInputAnswerValue::Selected(selected) => std::iter::once(selected.value.clone())
                .chain(selected.freeform_values.iter().flatten().cloned())
                .collect(),
            ChatInputAnswerValue::SelectedMany(many) => many
                .value
                .iter()
                .chain(many.freeform_values.iter().flatten())
                .cloned()
                .collect(),
            ChatInputAnswerValue::Unknown(raw) => vec![raw.to_string()],
        }
    }
}

/// A running conversation of one chat with an agent.
pub trait ProviderSession: Send + Sync {
    /// Starts a turn. Returns once the agent has accepted it; everything the turn produces
    /// arrives as signals, ending with `chat/turnComplete`, `chat/turnCancelled` or `chat/error`.
    fn send_turn(&self, turn: TurnRequest) -> BoxFuture<'_, Result<(), ProviderError>>;

    /// Answers the pending confirmation of `tool_call_id`.
    fn respond_to_permission<'a>(
        &'a self,
        tool_call_id: &'a str,
        decision: PermissionDecision,
    ) -> BoxFuture<'a, Result<(), ProviderError>>;

    /// Answers the input request `request_id` the agent asked with
    /// [`NormEvent::InputAsked`]. Agents that never ask for input keep the default, which
    /// reports the operation unsupported.
    fn respond_to_input<'a>(
        &'a self,
        request_id: &'a str,
        response: InputResponse,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        let _ = (request_id, response);
        Box::pin(async {
            Err(ProviderError::Unsupported {
                operation: "input requests",
            })
        })
    }

    /// Hands the agent the outcome of its call `tool_call_id` to a client-contributed tool
    /// (one it started with a `{kind: client}` contributor): the owning client's
    /// `chat/toolCallComplete`, or the host's failed completion for a client that went away.
    /// The host has already applied the completion to the chat, so the agent must not report
    /// its own completion of the call; it only continues with `result`. Agents that never call
    /// client tools keep the default, which reports the operation unsupported.
    fn complete_client_tool<'a>(
        &'a self,
        tool_call_id: &'a str,
        result: ToolCallResult,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        let _ = (tool_call_id, result);
        Box::pin(async {
            Err(ProviderError::Unsupported {
                operation: "client tools",
            })
        })
    }

    /// Cancels the running turn `turn_id`; the agent reports `chat/turnCancelled`.
    fn cancel<'a>(&'a self, turn_id: &'a str) -> BoxFuture<'a, Result<(), ProviderError>>;

    /// What the host persists to resume this conversation after a restart; `None` when the
    /// agent cannot resume.
    fn resume_handle(&self) -> Option<serde_json::Value>;

    /// Stops the conversation and releases its resources (processes are terminated and reaped).
    fn dispose(&self) -> BoxFuture<'_, ()>;
}

/// An agent backend: advertises itself and starts conversations.
pub trait Provider: Send + Sync {
    /// The provider id (`scripted`, `claude`, `codex`, `copilot`); never contains `-`.
    fn id(&self) -> &str;

    /// What the root state advertises (display name, description, a non-empty model list).
    fn agent_info(&self) -> AgentInfo;

    /// Starts a new conversation for a chat.
    fn start_session(
        &self,
        request: StartSession,
    ) -> BoxFuture<'_, Result<Arc<dyn ProviderSession>, ProviderError>>;

    /// Resumes a conversation from a persisted handle.
    fn restore_session(
        &self,
        request: RestoreSession,
    ) -> BoxFuture<'_, Result<Arc<dyn ProviderSession>, ProviderError>>;
}

impl fmt::Debug for dyn Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider").field("id", &self.id()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sinks_tag_signals_with_their_chat_and_report_a_closed_host() {
        let (tx, mut rx) = signal_channel(4);
        let session = SessionUri::parse("ahp-session:/s1").unwrap();
        let sink = SignalSink::new(ChatUri::parse("ahp-chat:/c1").unwrap(), tx);
        let signal = AgentSignal::SteeringConsumed(agenthost_protocol::SteeringConsumed {
            session: session.clone(),
            id: "m1".into(),
        });
        sink.send(signal.clone()).await.unwrap();
        let routed = rx.recv().await.unwrap();
        assert_eq!(routed.chat, "ahp-chat:/c1");
        assert_eq!(routed.signal, signal);
        drop(rx);
        assert_eq!(sink.send(signal).await, Err(SinkClosed));
    }

    #[test]
    fn errors_map_to_chat_error_infos_with_the_stderr_tail() {
        let error = ProviderError::Exited {
            status: "exit status: 1".into(),
            stderr_tail: "boom\n".into(),
        };
        let info = error.to_error_info();
        assert_eq!(info.error_type, PROVIDER_EXITED);
        assert_eq!(
            info.message,
            "the agent exited unexpectedly (exit status: 1): boom"
        );
        let quiet = ProviderError::Exited {
            status: "signal 9".into(),
            stderr_tail: " ".into(),
        };
        assert_eq!(
            quiet.to_string(),
            "the agent exited unexpectedly (signal 9)"
        );
    }
}

#[cfg(test)]
mod limits_tests {
    use super::*;

    fn agents() -> Vec<AgentInfo> {
        let agent = |provider: &str| AgentInfo {
            provider: provider.into(),
            display_name: provider.into(),
            description: String::new(),
            models: vec![
                model_info(provider, "default", "Default"),
                model_info(provider, "big", "Big"),
            ],
            protected_resources: Some(Vec::new()),
            customizations: None,
            capabilities: None,
        };
        vec![agent("claude"), agent("codex")]
    }

    #[test]
    fn reported_limits_go_to_one_model_and_round_trip_through_the_store_form() {
        let mut agents = agents();
        let limits = agenthost_protocol::ModelLimits {
            max_prompt_tokens: None,
            max_context_window: Some(200_000),
            max_output_tokens: Some(8_000),
        };
        assert!(apply_model_limits(&mut agents, "codex", "big", &limits));
        assert!(
            !apply_model_limits(&mut agents, "codex", "big", &limits),
            "unchanged"
        );
        assert!(!apply_model_limits(&mut agents, "codex", "gone", &limits));
        assert!(!apply_model_limits(&mut agents, "nobody", "big", &limits));
        let big = &agents[1].models[1];
        assert_eq!(
            (
                big.max_prompt_tokens,
                big.max_context_window,
                big.max_output_tokens
            ),
            (None, Some(200_000), Some(8_000))
        );
        assert_eq!(
            agents[0].models[1].max_context_window, None,
            "another agent's model"
        );
        let stored = model_limits_json(&agents);
        assert_eq!(
            stored,
            serde_json::json!({ "codex": { "big": { "maxContextWindow": 200_000, "maxOutputTokens": 8_000 } } })
        );
        let mut fresh = self::agents();
        apply_stored_model_limits(&mut fresh, &stored);
        assert_eq!(fresh, agents);
        // Garbage in the stored form is skipped, never applied.
        apply_stored_model_limits(
            &mut fresh,
            &serde_json::json!({ "codex": { "big": { "maxContextWindow": -1, "maxOutputTokens": "x" } }, "x": 3 }),
        );
        assert_eq!(fresh, agents);
    }
}

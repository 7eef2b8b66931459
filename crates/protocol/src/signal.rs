//! Provider → host signals.
//!
//! Provider adapters never dispatch actions themselves: they emit [`AgentSignal`]s and the host
//! applies side effects (auto-approve rules, routing to subagent chats, checkpoints, `inputNeeded`
//! upkeep) before dispatching. Each signal's payload is its own struct so handlers can take it by
//! value.
//!
//! Subagent traffic is scoped by `parent_tool_call_id`: the id of the tool call that started the
//! subagent. The subagent's chat is derived from the session and that id
//! ([`ChatUri::subagent`]), so routing needs no lookup table.

use crate::StateAction;
use crate::state::ToolCallPendingConfirmationState;
use crate::uri::{ChatUri, SafeId, SessionUri};

/// A signal from a provider adapter to the host.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentSignal {
    /// An action to dispatch.
    Action(ActionSignal),
    /// A tool call that needs the user's (or an auto-approve rule's) permission.
    PendingConfirmation(PendingConfirmation),
    /// A subagent started; its child chat must exist before any of its actions arrive.
    SubagentStarted(SubagentStarted),
    /// A subagent finished; its child chat can be closed.
    SubagentCompleted(SubagentCompleted),
    /// A queued steering message was consumed by the agent.
    SteeringConsumed(SteeringConsumed),
    /// One model call finished (accounting and telemetry).
    ModelCallCompleted(ModelCallCompleted),
    /// The agent reported the limits of the model the session runs on.
    ModelLimits(ModelLimitsReported),
}

impl AgentSignal {
    /// The session the signal belongs to.
    pub fn session(&self) -> &SessionUri {
        match self {
            Self::Action(signal) => &signal.session,
            Self::PendingConfirmation(signal) => &signal.session,
            Self::SubagentStarted(signal) => &signal.session,
            Self::SubagentCompleted(signal) => &signal.session,
            Self::SteeringConsumed(signal) => &signal.session,
            Self::ModelCallCompleted(signal) => &signal.session,
            Self::ModelLimits(signal) => &signal.session,
        }
    }

    /// The tool call that started the subagent this signal is scoped to; `None` at top level.
    pub fn parent_tool_call_id(&self) -> Option<&SafeId> {
        match self {
            Self::Action(signal) => signal.parent_tool_call_id.as_ref(),
            Self::PendingConfirmation(signal) => signal.parent_tool_call_id.as_ref(),
            Self::SubagentStarted(signal) => signal.parent_tool_call_id.as_ref(),
            Self::SubagentCompleted(_)
            | Self::SteeringConsumed(_)
            | Self::ModelCallCompleted(_)
            | Self::ModelLimits(_) => None,
        }
    }

    /// The subagent chat this signal is scoped to (derived from [`Self::parent_tool_call_id`]);
    /// `None` when it belongs to the session's top-level chat.
    pub fn scope_chat(&self) -> Option<ChatUri> {
        self.parent_tool_call_id()
            .map(|parent| ChatUri::subagent(self.session(), parent))
    }
}

/// An action to dispatch, routed to a subagent chat when `parent_tool_call_id` is set.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionSignal {
    /// The session the action belongs to.
    pub session: SessionUri,
    /// The action.
    pub action: StateAction,
    /// The tool call that started the subagent producing this action.
    pub parent_tool_call_id: Option<SafeId>,
}

/// What a permission request is about, as the provider CLIs categorise it.
///
/// Auto-approve rules match on it (shell rules, write rules, …).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PermissionKind {
    /// Running a shell command.
    Shell,
    /// Writing or editing a file.
    Write,
    /// Reading a file.
    Read,
    /// Fetching a URL.
    Url,
    /// Calling an MCP tool.
    Mcp,
    /// Any other kind, by the provider's name.
    Other(String),
}

impl PermissionKind {
    /// Maps a provider's lowercase kind name (`shell`, `write`, `read`, `url`, `mcp`).
    pub fn from_name(name: &str) -> Self {
        match name {
            "shell" => Self::Shell,
            "write" => Self::Write,
            "read" => Self::Read,
            "url" => Self::Url,
            "mcp" => Self::Mcp,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The lowercase name; the inverse of [`Self::from_name`].
    pub fn as_str(&self) -> &str {
        match self {
            Self::Shell => "shell",
            Self::Write => "write",
            Self::Read => "read",
            Self::Url => "url",
            Self::Mcp => "mcp",
            Self::Other(name) => name,
        }
    }
}

/// A tool call waiting for permission.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingConfirmation {
    /// The session the tool call belongs to.
    pub session: SessionUri,
    /// The protocol turn id.
    pub turn_id: String,
    /// The tool call, as it would appear once `chat/toolCallReady` without `confirmed` applies.
    pub state: ToolCallPendingConfirmationState,
    /// What the permission is about.
    pub permission_kind: PermissionKind,
    /// The file or directory concerned, when the provider names one.
    pub permission_path: Option<String>,
    /// The tool call that started the subagent asking.
    pub parent_tool_call_id: Option<SafeId>,
}

/// A subagent started by tool call `tool_call_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentStarted {
    /// The session.
    pub session: SessionUri,
    /// The tool call that started the subagent.
    pub tool_call_id: SafeId,
    /// The agent's internal name.
    pub agent_name: String,
    /// The agent's human-readable name.
    pub agent_display_name: String,
    /// What the agent does in general.
    pub agent_description: Option<String>,
    /// What the agent was asked to do, in short.
    pub task_description: Option<String>,
    /// The full prompt the agent received.
    pub task_prompt: Option<String>,
    /// Set when the subagent was itself started by a subagent.
    pub parent_tool_call_id: Option<SafeId>,
}

impl SubagentStarted {
    /// The subagent's child chat.
    pub fn chat(&self) -> ChatUri {
        ChatUri::subagent(&self.session, &self.tool_call_id)
    }
}

/// A subagent started by tool call `tool_call_id` finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentCompleted {
    /// The session.
    pub session: SessionUri,
    /// The tool call that started the subagent.
    pub tool_call_id: SafeId,
}

impl SubagentCompleted {
    /// The subagent's child chat.
    pub fn chat(&self) -> ChatUri {
        ChatUri::subagent(&self.session, &self.tool_call_id)
    }
}

/// A steering message was consumed: the host removes its pending bubble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SteeringConsumed {
    /// The session.
    pub session: SessionUri,
    /// The steering message id.
    pub id: String,
}

/// One model call of a turn finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCallCompleted {
    /// The session.
    pub session: SessionUri,
    /// The protocol turn id.
    pub turn_id: String,
    /// The provider's id for the model call.
    pub model_call_id: String,
}

/// A model's token limits, as an agent reported them; each is left out when the agent did not
/// say it (the host never estimates one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelLimits {
    /// The most tokens a prompt may have.
    pub max_prompt_tokens: Option<u64>,
    /// The model's context window, in tokens.
    pub max_context_window: Option<u64>,
    /// The most tokens one response may have.
    pub max_output_tokens: Option<u64>,
}

impl ModelLimits {
    /// Whether no limit is known.
    pub fn is_empty(&self) -> bool {
        self.max_prompt_tokens.is_none()
            && self.max_context_window.is_none()
            && self.max_output_tokens.is_none()
    }
}

/// The limits of the model a session runs on, as its agent reported them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLimitsReported {
    /// The session.
    pub session: SessionUri,
    /// The model, by the id the host advertises it under (the agent's `models[].id`).
    pub model: String,
    /// What the agent said.
    pub limits: ModelLimits,
}

macro_rules! impl_from_payload {
    ($($payload:ident => $variant:ident),* $(,)?) => {
        $(impl From<$payload> for AgentSignal {
            fn from(signal: $payload) -> Self {
                Self::$variant(signal)
            }
        })*
    };
}

impl_from_payload! {
    ActionSignal => Action,
    PendingConfirmation => PendingConfirmation,
    SubagentStarted => SubagentStarted,
    SubagentCompleted => SubagentCompleted,
    SteeringConsumed => SteeringConsumed,
    ModelCallCompleted => ModelCallCompleted,
    ModelLimitsReported => ModelLimits,
}

#[cfg(test)]
#[path = "signal_tests.rs"]
mod tests;

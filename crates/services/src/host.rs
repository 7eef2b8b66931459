//! [`HostState`] and [`ServerDispatch`]: reading the host's AHP state and changing it.

use std::sync::Arc;

use agenthost_protocol::ahp_types::state::{ChatState, SessionInputRequest, SessionState};
use agenthost_protocol::{ChatUri, SessionUri, StateAction};
use agenthost_reducers::projection::desired_input_needed;
use agenthost_state::StateManager;

/// Read access to the host's authoritative AHP state. Synchronous (the admission gate reads
/// it). Each call is one consistent read; two calls may see different states.
pub trait HostState: Send + Sync {
    /// A chat's current state (a copy: prefer the narrower methods on hot paths).
    fn chat(&self, chat: &str) -> Option<ChatState>;
    /// A session's current state (a copy).
    fn session(&self, session: &str) -> Option<SessionState>;
    /// The session that owns `chat`.
    fn chat_session(&self, chat: &str) -> Option<SessionUri>;
    /// The chats of `session`, in catalog order.
    fn session_chats(&self, session: &str) -> Vec<ChatUri>;
    /// The title of a chat.
    fn chat_title(&self, chat: &str) -> Option<String>;

    /// The entries `chat` should have in its session's `inputNeeded` list, derived from its
    /// current state by the reducers' projection; `None` for an unknown chat. A narrow read for
    /// the dispatched-action hot path (the default copies the whole chat).
    fn chat_input_needed(&self, chat: &str) -> Option<Vec<SessionInputRequest>> {
        self.chat(chat)
            .map(|state| desired_input_needed(chat, &state))
    }

    /// A session's current `inputNeeded` list (empty when absent); `None` for an unknown
    /// session. A narrow read (the default copies the whole session).
    fn session_input_needed(&self, session: &str) -> Option<Vec<SessionInputRequest>> {
        self.session(session)
            .map(|state| state.input_needed.unwrap_or_default())
    }
}

/// A server action the host refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the host refused an action on {channel}: {reason}")]
pub struct DispatchError {
    /// The channel.
    pub channel: String,
    /// Why (unknown channel, a host invariant).
    pub reason: String,
}

/// Dispatches actions of the host itself (server actions) on a channel: reduced, numbered,
/// broadcast and observed like every other action.
pub trait ServerDispatch: Send + Sync {
    /// Dispatches `action` on `channel`; returns its `serverSeq`. Never call it while holding
    /// a read of [`HostState`] (there is no such guard in this API, by design).
    fn dispatch(&self, channel: &str, action: StateAction) -> Result<u64, DispatchError>;
}

/// [`HostState`] over the state manager.
#[derive(Debug, Clone)]
pub struct StateHostState {
    state: Arc<StateManager>,
}

impl StateHostState {
    /// Reads `state`.
    pub fn new(state: Arc<StateManager>) -> Self {
        Self { state }
    }
}

impl HostState for StateHostState {
    fn chat(&self, chat: &str) -> Option<ChatState> {
        self.state.read(|h| h.chat(chat).cloned())
    }

    fn session(&self, session: &str) -> Option<SessionState> {
        self.state.read(|h| h.session(session).cloned())
    }

    fn chat_session(&self, chat: &str) -> Option<SessionUri> {
        self.state.read(|h| h.chat_session(chat).cloned())
    }

    fn session_chats(&self, session: &str) -> Vec<ChatUri> {
        self.state.read(|h| {
            h.session_chats(session)
                .map(|(uri, _)| uri.clone())
                .collect()
        })
    }

    fn chat_title(&self, chat: &str) -> Option<String> {
        self.state.read(|h| h.chat(chat).map(|c| c.title.clone()))
    }

    fn chat_input_needed(&self, chat: &str) -> Option<Vec<SessionInputRequest>> {
        self.state
            .read(|h| h.chat(chat).map(|state| desired_input_needed(chat, state)))
    }

    fn session_input_needed(&self, session: &str) -> Option<Vec<SessionInputRequest>> {
        self.state.read(|h| {
            h.session(session)
                .map(|state| state.input_needed.clone().unwrap_or_default())
        })
    }
}

/// [`ServerDispatch`] over the state manager.
#[derive(Debug, Clone)]
pub struct StateServerDispatch {
    state: Arc<StateManager>,
}

impl StateServerDispatch {
    /// Dispatches into `state`.
    pub fn new(state: Arc<StateManager>) -> Self {
        Self { state }
    }
}

impl ServerDispatch for StateServerDispatch {
    fn dispatch(&self, channel: &str, action: StateAction) -> Result<u64, DispatchError> {
        match self.state.dispatch_server(channel, action) {
            Ok(envelope) => Ok(envelope.server_seq),
            Err(error) => {
                tracing::debug!(channel, %error, "host action not applied");
                Err(DispatchError {
                    channel: channel.to_owned(),
                    reason: error.to_string(),
                })
            }
        }
    }
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;

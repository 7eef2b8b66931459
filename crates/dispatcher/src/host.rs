//! The host bridge: the two members a contribution may use to reach the orchestrator.

use std::fmt;
use std::sync::Arc;

use agenthost_protocol::ahp_types::state::Message;
use agenthost_protocol::{ChatUri, SessionUri};

use crate::payload::{ClientContext, Stopwatch};

/// How the host process was launched; the fallback client context for queued-turn telemetry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchKind {
    /// `agent-host serve`.
    Serve,
    /// `agent-host demo`.
    Demo,
    /// `agent-host run` (the terminal client hosting in-process).
    Run,
    /// Embedded in another program, with its name.
    Embedded(String),
}

impl fmt::Display for LaunchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchKind::Serve => f.write_str("serve"),
            LaunchKind::Demo => f.write_str("demo"),
            LaunchKind::Run => f.write_str("run"),
            LaunchKind::Embedded(name) => write!(f, "embedded:{name}"),
        }
    }
}

/// Input of [`HostBridge::send_turn_message`]: an admitted turn for the shared send tail.
#[derive(Debug, Clone)]
pub struct SendTurnMessageOptions {
    /// The provider id the turn starter resolved for the session.
    pub agent: String,
    /// The session.
    pub session: SessionUri,
    /// The chat; the turn's actions go to it.
    pub chat: ChatUri,
    /// The message to send.
    pub message: Message,
    /// The turn id.
    pub turn_id: String,
    /// The client that queued or sent the message, when known.
    pub sender_client_id: Option<String>,
    /// Telemetry identity of the sender.
    pub client_context: ClientContext,
    /// When the turn started, for duration telemetry.
    pub turn_stopwatch: Stopwatch,
}

/// The bridge from contributions back to the orchestrator. Exactly two members, pinned by
/// `cargo xtask lint`: collaborators are real services, never smuggled through the bridge.
pub trait HostBridge: Send + Sync {
    /// How the host process was launched.
    fn launch_kind(&self) -> LaunchKind;

    /// Hands an admitted turn to the orchestrator's shared send tail. Fire-and-forget.
    fn send_turn_message(&self, options: SendTurnMessageOptions);
}

/// Why a host could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BridgeError {
    /// A host is already registered; dispose its registration first.
    #[error("Chat contribution host already registered")]
    AlreadyRegistered,
}

/// The slot holding the registered host.
pub(crate) type HostSlot = std::sync::Mutex<Option<Arc<dyn HostBridge>>>;

/// Unregisters the host when dropped — but only if the slot still holds that same host, so a
/// stale handle never clears a newer host.
#[must_use = "dropping the registration unregisters the host"]
pub struct HostRegistration {
    pub(crate) slot: std::sync::Weak<crate::dispatcher::Inner>,
    pub(crate) host: Arc<dyn HostBridge>,
}

impl fmt::Debug for HostRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostRegistration").finish_non_exhaustive()
    }
}

impl Drop for HostRegistration {
    fn drop(&mut self) {
        if let Some(inner) = self.slot.upgrade() {
            let mut slot = inner.host.lock().unwrap_or_else(|e| e.into_inner());
            if slot.as_ref().is_some_and(|h| Arc::ptr_eq(h, &self.host)) {
                *slot = None;
            }
        }
    }
}

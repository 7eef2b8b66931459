//! The application layer of agenthost: every use case of the host, once.
//!
//! The central decision: **one method per use case, composing the components one call per
//! step.** [`AgentService`] answers each client or host command — a client action (intake,
//! then the orchestrator: `onDidDispatchAction`, the admission gate and
//! `onDidApplyClientAction` in that one call), create / dispose / delete / evict a session,
//! create a chat with its initial message, subscriptions, the `x-checkpoint/*` commands,
//! shutdown — over [`SessionService`] (state and store: sessions with their default chat at
//! VS Code's derived URI, chats, restore with `onHydrateChat` for every chat of a restored
//! session, disposal, the intake's validation) and the orchestrator of
//! `agenthost-side-effects` (agents). Features are not here: they are contributions. The
//! transport (`agenthost-server`) depends on this crate and the protocol alone; the types it
//! needs from lower layers are re-exported here. `cargo xtask lint` keeps an allowlist of every
//! function here with its reason.
//!
//! Creation resolves the session's working directories before anything is stored: for
//! `config.isolation = "worktree"` they become the new linked worktrees the injected
//! `WorktreeIsolation` service creates ([`SessionService::set_worktrees`]), which is what the
//! baseline checkpoint and the agent see; a folder that cannot be isolated fails
//! `createSession` and leaves nothing behind. Deletion removes the worktrees again.
#![deny(missing_docs)]

mod agent;
mod error;
mod sessions;
mod summaries;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;

pub use agent::{AgentService, DEFAULT_SHUTDOWN_WRITE_TIMEOUT, HostParts, Reattached};
pub use agenthost_services::ResumeHandles;
pub use error::ServiceError;
pub use sessions::{ServiceConfig, SessionService, root_state, state_for};

// What the transport (`agenthost-server`) needs of the crates below, so that it depends on this
// crate and the protocol alone.
pub use agenthost_dispatcher::{ClientContext, LaunchKind, RegistrationSet};
pub use agenthost_services::{
    bounded, checkpoint_commands, resources, sandbox, session_config_with, spend,
};
pub use agenthost_state::{
    ClientDispatch, Outbox, ReconnectOutcome, SubscriberId, action_frame, notification_frame,
};

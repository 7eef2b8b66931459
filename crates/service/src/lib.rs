//! Session lifecycle: create, dispose, list, client-action intake.
//!
//! The central decision: **lifecycle only.** This crate turns protocol commands into state
//! changes (sessions with their default chat at VS Code's derived URI, chats, disposal) and
//! validates every client dispatch through the reducers; it starts no provider turn and runs no
//! feature — the orchestrator (`agenthost-side-effects`) and the contributions do. `cargo xtask
//! lint` keeps an allowlist of every function here with its reason.
//!
//! Creation resolves the session's working directories before anything is stored: for
//! `config.isolation = "worktree"` they become the new linked worktrees the injected
//! `WorktreeIsolation` service creates ([`SessionService::set_worktrees`]), which is what the
//! baseline checkpoint and the agent see; a folder that cannot be isolated fails
//! `createSession` and leaves nothing behind. Deletion removes the worktrees again.
#![deny(missing_docs)]

mod agent;
mod error;
mod persistence;
mod sessions;
mod summaries;

pub use agent::{AgentService, DEFAULT_SHUTDOWN_WRITE_TIMEOUT, HostParts, Reattached};
pub use error::ServiceError;
pub use persistence::ResumeHandles;
pub use sessions::{ServiceConfig, SessionService, root_state, state_for};

// What the transport (`agenthost-server`) needs of the crates below, so that it depends on this
// crate and the protocol alone.
pub use agenthost_dispatcher::{ClientContext, LaunchKind, RegistrationSet};
pub use agenthost_services::{bounded, checkpoint_commands, sandbox};
pub use agenthost_state::{
    ClientDispatch, Outbox, ReconnectOutcome, SubscriberId, action_frame, notification_frame,
};

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

mod error;
mod persistence;
mod sessions;

pub use error::ServiceError;
pub use persistence::ResumeHandles;
pub use sessions::{ServiceConfig, SessionService, root_state, state_for};

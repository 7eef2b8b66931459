//! Pure host-side reduction for agenthost.
//!
//! The central decision: **state transitions belong to the canonical reducers of the `ahp` crate**
//! (`ahp::reducers::apply_action_to_*`). This crate never re-ports them. It adds only what a host
//! needs around them and the crate does not provide:
//!
//! - [`HostState`]: every channel state addressed by URI, with a chat → session index (chat URIs do
//!   not encode their session). Applying an [`ActionEnvelope`](agenthost_protocol::ActionEnvelope)
//!   routes the action to its channel's reducer and reports applied, no-op or rejected.
//! - [`validation`]: the rules of AHP §6 for client-dispatched actions — which actions a client may
//!   send at all, on which channel, and the per-action preconditions (a tool call must await
//!   confirmation before it is confirmed, only the owning client completes a client tool, …). A
//!   rejection carries a human-readable reason for the envelope's `rejectionReason`.
//! - [`projection`]: derived views of state that the host keeps in sync by dispatching ordinary
//!   server actions — the desired `inputNeeded` entries of a chat, the minimal set/remove actions
//!   that bring a session's list to the union over its chats, chat summaries and the aggregated
//!   session status of the root catalog.
//!
//! Architecture invariants: no I/O, no async, no clocks, no randomness. Every function is
//! deterministic over its inputs, and nothing here panics on input a client can send.
#![deny(missing_docs)]

pub mod chat_config;
mod host_state;
pub mod projection;
pub mod server_actions;
pub mod states;
pub mod turn_ids;
pub mod validation;

#[cfg(test)]
#[path = "fixtures_tests.rs"]
mod fixtures;
#[cfg(test)]
#[path = "proptest_tests.rs"]
mod proptests;

pub use host_state::{ApplyError, ChannelKind, ChannelState, HostState, Reduced, StateError};
pub use validation::{Rejection, is_client_dispatchable};

//! The contribution contract of agenthost.
//!
//! A *contribution* is a self-contained, explicitly registered unit of host behaviour that reacts
//! at a named moment of the chat lifecycle. The central decision: **cross-cutting behaviour lives
//! in contributions behind seven hooks, never in the orchestrator.** This crate is the contract
//! and nothing else:
//!
//! - [`ChatContribution`]: the seven optional hooks — the incoming-request gate (synchronous,
//!   fails closed), turn end, applied client action, dispatched action (observers, isolated),
//!   outgoing turn (instructions appended, text threaded), turn and chat hydration (pipelines that
//!   keep the previous value when a stage fails).
//! - [`Contribution`]: a contribution type's static identity (`ID`, `ORDER`, `HOOKS`) and its
//!   factory, which takes the [`ContributionContext`] first and resolves services from the typed
//!   [`ServiceRegistry`] after.
//! - [`Dispatcher`]: the registry. Duplicate ids are refused before construction; each hook runs
//!   its implementers sorted by `(order, registration index)`; the sorted order is cached per hook
//!   so an observer dispatch allocates nothing.
//! - [`ContributionContext`]: identity plus centrally evicted mementos — never services or
//!   callbacks.
//! - [`HostBridge`]: the two members a contribution may use to reach the orchestrator.
//!
//! What a dispatch sees when registrations change during it: every dispatch works on the
//! snapshot of registrations taken when it started. A contribution registered mid-dispatch is not
//! called by that dispatch; one unregistered mid-dispatch may still be called by it (the snapshot
//! keeps it alive until the dispatch ends), and is dropped afterwards.
#![deny(missing_docs)]

mod context;
mod contribution;
mod dispatcher;
mod hooks;
mod host;
mod memento;
mod ordering;
mod payload;
mod services;
mod turn_starter;

pub use context::ContributionContext;
pub use contribution::{
    ChatContribution, Contribution, ContributionError, Descriptor, HookFuture, HookResult,
};
pub use dispatcher::{
    Dispatcher, HookTrace, HostAccess, Registration, RegistrationError, RegistrationSet,
};
pub use hooks::{Hook, HookSet};
pub use host::{BridgeError, HostBridge, HostRegistration, LaunchKind, SendTurnMessageOptions};
pub use memento::{ChatKey, KeySegment, Memento, SessionKey};
pub use ordering::render_order;
pub use payload::{
    AppliedClientAction, ClientContext, DispatchedAction, Disposition, HydrationContext,
    IncomingRequest, OutgoingTurn, OutgoingTurnResult, QueuedMessageSender, RejectStage,
    RequestSource, RestoredChat, SendContribution, TurnEnd, TurnEndReason,
};
pub use services::{MissingService, ServiceRegistry};
pub use turn_starter::TurnStarterPorts;

#[cfg(test)]
#[path = "test_support_tests.rs"]
mod test_support;

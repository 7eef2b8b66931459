//! The tool-execution engine of agenthost: it answers every obligation in a session's
//! `SessionState.inputNeeded` list — runs client-contributed tools, drives their confirmations,
//! and applies the unattended policy to what nobody claims.
//!
//! **Central design decision: the session's `inputNeeded` queue is the trigger, and one engine
//! per session is its single executor and single dispatcher.** An obligation is answered
//! because the session says it is outstanding, never because some view of a chat happens to be
//! alive. Observers (client views, or on the host: live chat subscriptions) only render and
//! *claim*; claims are a reference-counted multiset whose oldest live claimant is the execution
//! context. The decision for an entry is a pure function of (entry, claims, start marker,
//! policy), re-applied whenever any of them changes:
//!
//! | Situation | Action |
//! |---|---|
//! | the call already carries a start marker | attach to the running record, nothing else |
//! | claimed | run with the oldest claimant as context |
//! | unclaimed, tool may not ask for confirmation | run headless, now |
//! | unclaimed, confirmable (or a user-facing kind) | grace window, then the policy's answer |
//!
//! The grace window re-arms every time the last claim goes away while the entry is still
//! pending and unanswered — it is derived state, never a one-shot check.
//!
//! Per-tool-call state (shared invocation, lease, start marker, funnel, execution record) is
//! keyed on [`ToolCallKey`](agenthost_protocol::ToolCallKey), never on entry ids, and is held
//! by a lease that bridges the confirmation → execution remove-before-add gap. A call starts at
//! most once (the marker is set synchronously before any await); every await is followed by
//! re-validation; outbound answers pass a first-answer-wins funnel.
//!
//! The engine's state lives in one synchronous state machine behind one lock (nothing awaits
//! under it); a timer driver task sleeps until the earliest deadline, and each local run is a
//! task that re-enters the state machine after every await. Answers leave through an
//! [`AnswerSink`] as ordinary chat actions; client tools run through a [`ToolRunner`].
//!
//! The same crate runs in a client (its own tools, its own views' claims, every user-facing
//! kind set to [`AutoAnswer::Wait`]) and in the host ([`UnattendedPolicy`]: no client id,
//! subscriptions as claims via [`SubscriptionClaims`]).
#![deny(missing_docs)]

pub mod answers;
mod cancel;
mod config;
mod core;
mod engine;
mod entry;
mod invocation;
mod keys;
mod policy;
mod registry;
mod runner;
mod update;

#[cfg(test)]
#[path = "fixtures_tests.rs"]
mod fixtures;
#[cfg(test)]
#[path = "harness_tests.rs"]
mod harness;
#[cfg(test)]
#[path = "proptest_tests.rs"]
mod proptests;
#[cfg(test)]
#[path = "scenarios_tests.rs"]
mod scenarios;

pub use cancel::CancelToken;
pub use config::{AutoAnswer, ClientConfirmationMode, DEFAULT_GRACE, EngineConfig};
pub use core::{AnswerOutcome, EngineStats};
pub use engine::{AnswerSink, ClaimGuard, EngineError, SessionEngine};
pub use invocation::{
    InvocationSnapshot, InvocationStatus, LocalDecision, Presentation, SharedInvocation,
    SubagentGroup,
};
pub use keys::{ClaimId, ClaimKey, ClaimScope, Claimant};
pub use policy::{PolicyParseError, UnattendedPolicy};
pub use registry::{EngineRegistry, SubscriptionClaims};
pub use runner::{
    BoxFuture, LocalCall, LocalGate, NoLocalTools, ToolDescriptor, ToolLookup, ToolRunner,
};
pub use update::SessionUpdate;

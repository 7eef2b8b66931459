//! The state manager: the host's authoritative AHP state and everything that orders and
//! delivers its changes.
//!
//! The central decision: **one lock orders everything.** Reducing an action, assigning its
//! `serverSeq`, appending it to the replay log and handing its frame to every subscriber happen
//! under one short critical section, so the order of application equals the order of numbers and
//! a snapshot plus the envelopes after it never miss or repeat an action. Nothing inside the
//! section blocks, with one deliberate exception: the [`CommitHook`]s, where the host's session
//! service runs one SQLite transaction for an action that changes a chat's durable history (a
//! chat added, a turn started or finished, a truncation), so no client is ever told of what a
//! crash could lose. Retrying a write the store refused happens outside the lock. Each envelope
//! is serialized once and offered to each subscriber's bounded outbox with a non-blocking push;
//! a subscriber whose outbox is full is dropped (its connection reconnects and gets a replay or
//! a snapshot) instead of stalling the host.
//!
//! Envelope observers (the orchestrator's bridge to `onDidDispatchAction`) run after the section,
//! outside the lock, for accepted and rejected envelopes alike, so they may dispatch further
//! actions.
#![deny(missing_docs)]

mod manager;
mod outbox;

pub use manager::{
    ClientDispatch, CommitHook, EnvelopeObserver, ObservedEnvelope, ReconnectOutcome,
    SEQ_RESERVATION, SeqReservation, StateConfig, StateError, StateManager,
};
pub use outbox::{Outbox, SubscriberId, action_frame, notification_frame};

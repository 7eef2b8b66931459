//! The vocabulary of agenthost: the words every other crate speaks, and nothing else.
//!
//! **Central design decision: vocabulary only — no I/O, no async.** This crate holds the AHP
//! wire types (re-exported from Microsoft's generated `ahp-types`, never forked or redefined),
//! validated URI newtypes for the channels the host serves, the keys the host indexes pending
//! work by, the signals provider adapters send to the host, and the pure translations of the
//! wire ([`jsonrpc`] framing, [`negotiation`], VS Code's [`dialect`], [`machine`] facts shaped
//! for the root state). Every function here is a constructor, accessor, parser, formatter or
//! translation. Behaviour (reducing, dispatching,
//! persistence, transports) lives in higher crates, so this crate stays small, stable and cheap
//! to depend on.
//!
//! Parsers never panic on input: hostile strings give a [`UriError`] whose message names the
//! problem and shows (a truncated copy of) the offending input.

#![deny(missing_docs)]

pub mod dialect;
pub mod error_info;
mod host_records;
pub mod ids;
pub mod jsonrpc;
pub mod machine;
pub mod negotiation;
pub mod signal;
pub mod uri;
pub mod usage;

/// The AHP 1.0 wire types, unchanged. Prefer the re-exports below for everyday use.
pub use ahp_types;
pub use ahp_types::{ActionEnvelope, ActionOrigin, ActionType, StateAction};
pub use ahp_types::{
    AhpErrorCode, JsonRpcErrorCode, PROTOCOL_VERSION, ROOT_RESOURCE_URI,
    SUPPORTED_PROTOCOL_VERSIONS, StringOrMarkdown, Uri, negotiate_protocol_version,
};
pub use ahp_types::{actions, commands, common, errors, messages, notifications, state, version};

pub use host_records::{AuditRecord, TitleSource, UnknownTitleSource};
pub use ids::{InputKey, ToolCallKey};
pub use jsonrpc::{RpcError, action_frame, notification_frame};
pub use negotiation::{NegotiatedVersion, WireSurface};
pub use signal::{
    ActionSignal, AgentSignal, ModelCallCompleted, ModelLimits, ModelLimitsReported,
    PendingConfirmation, PermissionKind, SteeringConsumed, SubagentCompleted, SubagentStarted,
};
pub use uri::{Channel, ChatUri, SafeId, SessionUri, UriError};

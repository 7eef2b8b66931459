//! The orchestrator: the routing fabric between providers, host state and contributions.
//!
//! The central decision: **this crate holds routing, correctness invariants and the dispatcher's
//! call sites — nothing else.** Every lifecycle feature (titles, checkpoints, queues, unread
//! marks, the `inputNeeded` mirror, …) is a contribution reached through
//! [`agenthost_dispatcher::Dispatcher`]; `cargo xtask lint` keeps an allowlist of every function
//! here with its reason.
//!
//! What it does:
//! - **Signal routing**: every provider signal is resolved to its chat — or to the subagent chat
//!   derived from the session and the parent tool call id — before it changes state; actions of
//!   a turn that is no longer active are dropped; subagent signals that arrive before their chat
//!   exists are buffered (bounded, with a start timeout; on failure their pending confirmations are
//!   denied and a notice is posted on the parent chat); subagent actions are remapped onto the
//!   subagent chat's own turn id.
//! - **The turn starter and send tail**: the incoming-request gate, provider lookup, the
//!   outgoing-turn contributions and the provider call; refusals end as `chat/error` on the
//!   started turn.
//! - **Call sites**: `onTurnEnd` with the reason of the call-site table, `onDidApplyClientAction`
//!   after the host's own handling of an accepted client action, `onDidDispatchAction` for every
//!   envelope (an envelope observer on the state manager).
#![deny(missing_docs)]

mod orchestrator;
mod routing;
mod turns;

pub use orchestrator::{DispatchObserver, Orchestrator, OrchestratorConfig, OrchestratorError};
pub use routing::MODEL_LIMITS_KEY;

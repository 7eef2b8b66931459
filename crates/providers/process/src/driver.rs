//! What every agent-CLI provider drives its child process with, besides the process itself: a
//! provider is its wire types, its translator, its configuration and a thin adapter onto these
//! pieces.
//!
//! - [`ProcessSlot`]: the current process of a conversation and its generation, so output of a
//!   process that was replaced or stopped is recognised and dropped.
//! - [`spawn_reader`]: the stdout reader task — one message at a time from a
//!   [`MessageSource`] (bounded lines, [`LineReader`](crate::LineReader), or a provider's own
//!   framing) to a [`MessageHandler`], ending with [`MessageHandler::process_ended`].
//! - [`Waiters`] and [`await_answer`]: request/response correlation — a request registers a
//!   waiter, the reader resolves it, a timeout or the end of the process fails it with the
//!   stderr tail.
//! - [`Engine`] over a [`Protocol`]: a conversation written once — the lifecycle lock, turn
//!   admission, message handling (state changes before signals, then the answers), unreadable
//!   output and process exits failing the turn, cancel, dispose; a provider's protocol says only
//!   how its agent is spoken to.
//! - [`AgentConversation`] and [`Conversation`]: the `ProviderSession` a provider hands the
//!   host, written once over a conversation's async methods; [`AgentCli`] and [`CliProvider`]:
//!   the `Provider`, written once over what distinguishes one CLI from another.
//! - [`DriverState`], [`install_process`], [`stop_process`], [`reap_process`],
//!   [`ChatBinding`]: the process start and teardown, and the per-chat fields (and what is said
//!   to the chat: notices, a cancelled turn) every conversation shares.
//! - [`Turns`] and [`TurnState`]: the running turn and the agent's requests parked until the
//!   host answers, with admitting a turn, taking a parked request, cancelling, winding down
//!   ([`wind_down`]) and disposing written once.

mod conversation;
mod engine;
mod provider;
mod reader;
mod slot;
mod state;
mod turns;
mod waiters;

pub use conversation::{AgentConversation, Conversation};
pub use engine::{Engine, Protocol, Reply, resume_or_start};
pub use provider::{AgentCli, CliProvider, ConfigOf};
pub use reader::{MessageHandler, MessageSource, SourceError, spawn_reader};
pub use slot::{Live, ProcessSlot};
pub use state::{
    ChatBinding, DriverState, admit_turn, create_home, current_generation, current_process,
    elapsed_ms, fail_requests, install_process, new_request, reap_process, request,
    resolve_response, send_request, spawn_agent, stop_process, take_process, unreadable_output,
};
pub use turns::{
    AgentState, Ended, EndedOf, ProviderState, RunningTurn, TurnState, Turns, admit, begin_turn,
    cancel_turn, dispose_state, end_turn, take_input, take_permission, terminate, wind_down,
};
pub use waiters::{Answer, Taken, Waiters, await_answer, fail_waiters};

/// How long to wait for the stderr reader to catch up before quoting the tail in an error.
pub const STDERR_SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

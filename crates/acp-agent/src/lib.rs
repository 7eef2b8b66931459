//! The agent host as an Agent Client Protocol agent.
//!
//! Editors that speak ACP (Zed, JetBrains IDEs, Neovim and Emacs plugins) start an agent as a
//! child process and talk JSON-RPC over its stdin and stdout. [`serve`] is that agent: each ACP
//! session is a host session (its default chat), reached as an AHP client through
//! [`agenthost_client::HostConnection`] — so the sessions an editor makes are the same ones VS
//! Code, `agent-host run` and `agent-host sessions` see, with the host's providers, checkpoints,
//! session database and unattended policy.
//!
//! The central decision: **a client of the host, not a second way into it.** The bridge holds no
//! session state of its own beyond a mirror of each open chat; whatever another client does to
//! a session (answer a confirmation, start a turn) reaches the editor as it happens.
//!
//! What the editor can do (protocol version 1, stable methods only): `initialize`,
//! `authenticate` (nothing to authenticate), `session/new`, `session/list`, `session/load`
//! (replays the history), `session/resume`, `session/close`, `session/prompt`,
//! `session/cancel`, `session/set_config_option`, `session/set_mode` (the session's config:
//! agent mode, approvals, unattended policy). What it gets: `session/update` with `user_message_chunk`,
//! `agent_message_chunk`, `agent_thought_chunk`, `tool_call` and `tool_call_update`, and
//! `session/request_permission` for every confirmation the session waits for (allow once or
//! reject once) — the subagents' chats' included — withdrawn with `$/cancel_request` when it
//! is settled elsewhere; an input request
//! is `elicitation/create` (a form) for an editor that advertised form elicitation, and is
//! declined, with a notice saying why, in the editor's own turns otherwise.
#![deny(missing_docs)]

mod bridge;
mod config;
mod input;
mod rpc;
mod session;
mod updates;

pub use bridge::{AgentOptions, Host, PROTOCOL_VERSION, serve};
pub use rpc::RpcError;

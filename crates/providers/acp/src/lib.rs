//! The Agent Client Protocol (ACP) provider: any agent that speaks ACP on stdio — Gemini CLI,
//! `copilot --acp`, Claude Code and Codex through their ACP adapters — driven by command, each
//! configured agent advertised as provider `acp.NAME`.
//!
//! - [`wire`] reads the agent's newline-delimited JSON-RPC and decodes the protocol's bodies into
//!   the official schema types (`agent-client-protocol`, pinned exactly, re-exported as
//!   [`wire::schema`]), skipping `session/update` kinds this build does not know instead of
//!   failing on them.
//! - [`Translator`] is pure and line-driven: `session/update`s become provider-neutral events
//!   for the shared [`Mapper`](agenthost_provider_api::Mapper), the prompt's answer ends the turn,
//!   a permission request becomes a pending confirmation. [`map_transcript`] replays a captured
//!   transcript (`agent-host map --provider acp`).
//! - [`AgentsFile`] and [`AcpAgentConfig`]: which agents run and how (TOML, or `NAME=PROGRAM`).
//! - The driver ([`AcpProvider`], [`AcpSession`], feature `driver`): one process per chat in its
//!   own process group, `initialize` within `start_timeout` (no file system, no terminal
//!   advertised), `session/new` — or `session/resume`, else `session/load` with its replay
//!   dropped, for a restored chat; a new session carrying the chat's earlier turns as text when
//!   neither works — then `session/prompt`; the model and mode picked through the
//!   session's config options; permission answers with the agent's `allow_once` / `reject_once`
//!   option; cancel answers waiting permissions `cancelled`, sends `session/cancel` and, when no
//!   stop reason comes within `cancel_grace`, ends the turn itself and terminates the process
//!   group. [`discover_models`] is the probe that learns the models an agent offers.
#![deny(missing_docs)]

pub mod attachments;
mod config;
#[cfg(feature = "driver")]
mod provider;
#[cfg(feature = "driver")]
mod session;
mod translate;
pub mod wire;

pub use config::{
    AcpAgentConfig, AgentsFile, EnvValue, PROVIDER_PREFIX, WorkingDirectory, is_valid_agent_name,
    provider_id,
};
#[cfg(feature = "driver")]
pub use provider::{Acp, AcpProvider, discover_models};
#[cfg(feature = "driver")]
pub use session::{AcpConversation, AcpSession, PROTOCOL_VERSION, offered_models};
pub use translate::{
    ACP_ERROR, AUTH_REQUIRED, LineError, METHOD_NOT_FOUND, Output, TranscriptError, Translator,
    kind_name, map_transcript,
};
pub use wire::{error_reply, notification, permission_answer, request, result};

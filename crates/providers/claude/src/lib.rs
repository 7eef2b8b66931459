//! The Claude Code provider: drives `claude` over stream-json with the control protocol and maps
//! its events to AHP actions.
//!
//! **Central design decision: the translator is pure and line-driven.** [`Translator::on_line`]
//! takes one stdout line and returns [`Output`]s — signals for the host and requests for the
//! driver (answer this permission or these questions, this session id resumes the conversation,
//! the turn ended).
//! It does no I/O and keeps no clock, so the captured transcripts in `tests/fixtures` replay it
//! exactly; the AHP ordering rules themselves live in the shared
//! [`Mapper`](agenthost_provider_api::Mapper). The host → CLI lines ([`control`]) and the
//! attachment serializer ([`attachments`]) are plain functions for the same reason.
//!
//! Around it, the driver ([`ClaudeProvider`], [`ClaudeSession`]) owns the process: one `claude`
//! per chat in a process group of its own, started on the first turn with a start timeout,
//! interrupted on cancel (terminated when it does not wind down in time), resumed with
//! `--resume` after a restart, and killed with its whole group on dispose. A crash or an
//! unreadable line ends the running turn in `chat/error` with the tail of the CLI's stderr.
//!
//! `can_use_tool` for `AskUserQuestion` is not a permission: its questions become
//! `chat/inputRequested` (request id `ask-<tool_use_id>`, question ids `q<i>`, option ids
//! `o<j>`, free-form answers allowed) and the session parks the request until
//! [`ProviderSession::respond_to_input`](agenthost_provider_api::ProviderSession::respond_to_input).
//! Accepting answers `allow` with the tool input plus `answers: {<question text>: <answer>}`
//! (several selections joined with `", "`); declining or cancelling answers `deny`, and so does a
//! turn that ends, is cancelled or is disposed while the question waits. The tool call the
//! `tool_use` started completes from the `tool_result` as any other.
//! See this crate's README for the full table.
#![deny(missing_docs)]

pub mod attachments;
mod config;
pub mod control;
#[cfg(feature = "driver")]
mod provider;
mod questions;
#[cfg(feature = "driver")]
mod session;
mod tools;
mod translate;
pub mod wire;

pub use config::{ClaudeConfig, DEFAULT_MODEL, PERMISSION_MODES};
#[cfg(feature = "driver")]
pub use provider::{Claude, ClaudeProvider, PROVIDER_ID, is_valid_cli_session_id};
#[cfg(feature = "driver")]
pub use session::{ClaudeConversation, ClaudeSession, DECLINED_MESSAGE};
pub use translate::{
    LineError, LineErrorKind, Output, TranscriptError, Translator, map_transcript, parse_line,
};

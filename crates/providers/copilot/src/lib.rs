//! The GitHub Copilot CLI provider: drives `copilot --headless --stdio` over `Content-Length`
//! framed JSON-RPC 2.0 and maps its session events to AHP actions.
//!
//! **Central design decision: the translator is pure and message-driven.** [`FrameDecoder`]
//! cuts the CLI's stdout into frame bodies; [`Translator::on_message`] takes one body and
//! returns [`Output`]s — signals for the host and requests for the driver (a response for a
//! waiter, a permission request to park, a permission to answer now, a server request to refuse,
//! the turn ended). It does no I/O and keeps no clock (durations come from the events'
//! timestamps), so the captured transcripts in `tests/fixtures` replay it exactly; the AHP
//! ordering rules themselves live in the shared [`Mapper`](agenthost_provider_api::Mapper). The
//! host → CLI messages ([`control`]) and the attachment serializer ([`attachments`]) are plain
//! functions for the same reason.
//!
//! What the translator does with Copilot's vocabulary:
//!
//! - **Turns.** The host owns protocol turn ids. One protocol turn spans several Copilot model
//!   rounds (`assistant.turn_start {turnId: "0"}`, `"1"`, …), which never start or end it; it
//!   ends at `session.idle` (`chat/turnComplete`; an aborted idle the client did not ask for is
//!   `chat/turnCancelled`), `session.error` (`chat/error`) or, in prompt mode, the `result`
//!   line. After the client cancels ([`Translator::abort_turn`]) or an error, the ended turn's
//!   remaining events and its idle are dropped until the next turn's `user.message`. Events of
//!   other Copilot sessions are ignored.
//! - **Messages.** Message and reasoning deltas stream into parts keyed by `messageId` /
//!   `reasoningId`; the final `assistant.message` / `assistant.reasoning` adds a part only when
//!   nothing streamed.
//! - **Tools.** The first `assistant.tool_call_delta` of a visible tool starts it early; later
//!   deltas stream its arguments with an invocation message recomputed from them.
//!   `tool.execution_start` readies it (`not-needed`: Copilot runs it on its own, a redundant
//!   `cd <cwd> &&` hidden); `report_intent` is shown as the activity line only.
//!   `permission.requested` is a second ready without `confirmed` (a pending confirmation;
//!   running → pending-confirmation is legal), answered by the host — except requests without
//!   a tool call (rejected) and the agent's own session state and spilled outputs (approved).
//!   Partial results and progress become live content; `tool.execution_complete` completes the
//!   call, `error.code` passing through (`denied` for a declined call).
//! - **Subagents.** `subagent.started` maps its `agentId` to the spawning tool call; that
//!   subagent's events are routed there (events of an unknown `agentId` are dropped with a
//!   warning), and its usage goes to its own chat. `skill.invoked` outside a `skill` tool call
//!   becomes a synthesized read of the skill file.
//! - **Not ported:** steering (`user.message` delivered into a running turn is ignored; the
//!   host never sends `mode: "immediate"`), user-input and elicitation requests, and the ACP
//!   mode (`copilot --acp`): the host drives the headless protocol only, whose session events
//!   are richer than ACP's `session/update` (model rounds, subagents, permission kinds), so
//!   the `acp-*` fixtures are kept for reference and not mapped.
//!
//! [`map_transcript`] replays a whole captured transcript — decoded headless frames or
//! `copilot -p --output-format json` lines — for `agent-host map` and the fixture tests.
//!
//! Around it, the driver ([`CopilotProvider`], [`CopilotSession`]) owns the process: one
//! `copilot --headless --stdio --no-auto-update --no-auto-login` per chat in its own process
//! group (`agenthost-provider-process`), `ping` within `start_timeout`, `session.create` (or
//! `session.resume` for a restored chat and after a restart of the process) on the first turn,
//! `session.send`, permission answers through
//! `session.permissions.handlePendingPermissionRequest` (retried with the older result kinds
//! when refused; a rejection always carries feedback, so Copilot tells the model), -32601 for
//! any server request, cancel = `session.abort` — and since Copilot leaves a command already
//! running in its shell after an abort, a cancel that interrupted tools (or that does not go
//! idle within `cli.cancel_grace`) terminates the process group; the next turn resumes the session.
//! Bring-your-own-key ([`ByokProvider`]) runs offline (`COPILOT_OFFLINE=true`, the provider in
//! the environment, GitHub token variables removed unless asked for).
#![deny(missing_docs)]

pub mod attachments;
mod config;
pub mod control;
pub mod framing;
#[cfg(feature = "driver")]
mod provider;
#[cfg(feature = "driver")]
mod session;
mod tools;
mod translate;
pub mod wire;

pub use config::{BASE_ARGS, BYOK_TYPES, CopilotConfig, DEFAULT_MODEL, GITHUB_TOKEN_VARS};
pub use control::ByokProvider;
pub use framing::{FrameDecoder, FrameError, encode};
#[cfg(feature = "driver")]
pub use provider::{Copilot, CopilotProvider, PROVIDER_ID};
#[cfg(feature = "driver")]
pub use session::{
    CLIENT_NAME, CopilotConversation, CopilotSession, DECLINED_MESSAGE, is_valid_copilot_session_id,
};
pub use translate::{
    COPILOT_ERROR, LineError, LineErrorKind, Output, TranscriptError, Translator, map_transcript,
    parse_message,
};
pub use wire::RpcError;

//! The Codex provider: drives `codex app-server` over JSON-RPC lines and maps its notifications
//! to AHP actions.
//!
//! **Central design decision: the translator is pure and line-driven.** [`Translator::on_line`]
//! takes one stdout line and returns [`Output`]s — signals for the host and requests for the
//! driver (a response to match with its waiter, an approval or an input request to park, a
//! server request to answer now, the thread id, the turn ended). It does no I/O and keeps no clock (durations come from
//! Codex's `durationMs`), so the captured transcripts in `tests/fixtures` replay it exactly; the
//! AHP ordering rules themselves live in the shared [`Mapper`](agenthost_provider_api::Mapper).
//! The host → app-server lines ([`control`]) and the attachment serializer ([`attachments`])
//! are plain functions for the same reason.
//!
//! What the translator does with Codex's vocabulary:
//!
//! - **Turns.** The host owns protocol turn ids: the app-server turn of a protocol turn is
//!   learned from the `turn/start` response (exactly, when the driver reports the request with
//!   [`Translator::turn_start_sent`]) or from `turn/started`; every notification of another
//!   turn or another thread is ignored (a resumed thread reports its previous turn's usage
//!   after the new protocol turn began). `turn/completed`
//!   ends the turn: `completed` → `chat/turnComplete`, `interrupted` → `chat/turnCancelled`
//!   (nothing when the client cancelled: [`Translator::abort_turn`]), `failed` → `chat/error`
//!   (`CodexError`, the turn's or the last non-retried `error`'s message, `additionalDetails`
//!   as the stack). Tool calls still open are completed first with `success: false`, or from
//!   the turn's items when Codex reports them finished there. An `error` Codex retries
//!   (`willRetry: true`) is the chat's activity (`"<message> (retrying)"`), cleared when the
//!   next item starts or the turn ends.
//! - **Messages.** Each `agentMessage` (commentary or final) is its own markdown part, created
//!   by its first delta (or its completed text when nothing streamed) — no `"\n\n"` joining.
//!   Reasoning summary and raw parts stream into reasoning parts keyed `<item>:summary:<n>` /
//!   `<item>:text:<n>`.
//! - **Tools.** Command executions (shell wrapper removed), file changes, MCP, dynamic and
//!   collab tool calls, web searches, image generation and compaction start with a ready
//!   (`not-needed`) — Codex runs them on its own — and complete from `item/completed`;
//!   streamed output becomes `chat/toolCallContentChanged`. An approval request for a running
//!   call is a second ready without `confirmed` (legal); the host's decline completes the call
//!   with `error.code: "denied"`.
//! - **Permissions.** `item/permissions/requestApproval` (extra sandbox permissions such as
//!   network access or writable roots) is a pending confirmation too (`permissionKind:
//!   "permissions"`, titled with Codex's `reason`, the requested permissions described and as
//!   the tool input): on the open tool call it names, else on a synthetic `codex.permissions`
//!   call (`permissions-<request id>`) that completes with the host's decision (or, unanswered,
//!   at the turn's end). The answer is `{permissions: <requested> | {}, scope: "turn"}`
//!   ([`ApprovalKind::Permissions`]); without a turn to ask in, it is declined at once.
//! - **Questions.** `item/tool/requestUserInput` and `mcpServer/elicitation/request` become
//!   `chat/inputRequested` (request id `input-<request id>`), parked until the host calls
//!   `respond_to_input`. User input: one question each — single-select over the options'
//!   labels (free-form too when `isOther`), else text; `header` → title, `question` →
//!   message; the answer is `{answers: {<id>: {answers: [string…]}}}`, empty arrays when
//!   declined or cancelled. Elicitation: the message; a URL elicitation's `url`; a form's
//!   fields of a simple type as questions (string, enum → single-select, number, integer,
//!   boolean, array of enum → multi-select; other fields are not asked); the answer is
//!   `{action: "accept", content: {<field>: <typed value>}}`, `{action: "decline"}` or
//!   `{action: "cancel"}` ([`InputKind`]). Without a turn to ask in, the answer goes at once
//!   (empty answers / decline); a request still waiting when the turn ends, is cancelled or
//!   the chat is disposed is answered as cancelled.
//! - **Not ported** (no fixture needs them): the deferred-response queue (a message announced
//!   while a command runs gets its own part after the tool call anyway), sandbox pre-flight
//!   coalescing, `acceptForSession` for commands accepted before, subagent routing of
//!   `collabAgentToolCall` threads (a spawned agent's thread is ignored like any other),
//!   input requests Codex resolves on its own (`serverRequest/resolved`, e.g. after
//!   `autoResolutionMs`): they stay open in the chat until the host answers or the turn ends.
//!
//! [`exec`] maps `codex exec --json` output the same way (captured transcripts only).
//!
//! Around it, the driver ([`CodexProvider`], [`CodexSession`]) owns the process: one `codex
//! app-server` per chat in its own process group (`agenthost-provider-process`), `initialize`
//! within `start_timeout`, the thread started on the first turn (approval policy, sandbox,
//! model, cwd) or resumed with `thread/resume` for a restored chat and after a restart of the
//! process, requests answered within `request_timeout`, approvals and input requests parked
//! until the host answers, unknown server requests answered with -32601, cancel = `turn/interrupt` (and the
//! group terminated when the turn does not end within `cli.cancel_grace`), a crash or an
//! unreadable line → `chat/error` with the stderr tail. See this crate's README.
#![deny(missing_docs)]

pub mod attachments;
mod config;
pub mod control;
pub mod exec;
mod input;
mod items;
#[cfg(feature = "driver")]
mod provider;
#[cfg(feature = "driver")]
mod session;
mod shell;
mod translate;
pub mod wire;

pub use config::{
    APPROVAL_POLICIES, CodexConfig, DEFAULT_MODEL, HYGIENE_ARGS, ModelProvider, SANDBOX_MODES,
    WIRE_APIS,
};
pub use control::{ApprovalKind, FieldKind, FormField, InputKind};
pub use exec::ExecTranslator;
#[cfg(feature = "driver")]
pub use provider::{Codex, CodexProvider, PROVIDER_ID};
#[cfg(feature = "driver")]
pub use session::{CLIENT_NAME, CodexConversation, CodexSession, is_valid_thread_id};
pub use translate::{
    CODEX_ERROR, LineError, LineErrorKind, Output, TranscriptError, Translator, map_transcript,
    parse_line,
};

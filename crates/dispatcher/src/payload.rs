//! What the hooks receive and return.

use std::time::Instant;

use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{ErrorInfo, Message};
use agenthost_protocol::{ActionOrigin, ChatUri, SessionUri, StateAction};

use crate::host::LaunchKind;

/// Telemetry identity of whoever sent a message or action: "unknown" plus the host's launch kind
/// when the sender is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientContext {
    /// The sending client's id, when known.
    pub client_id: Option<String>,
    /// The sending client's kind as it announced itself (`vscode`, `cli`, …), when known.
    pub client_kind: Option<String>,
    /// How the host process was launched.
    pub launch_kind: LaunchKind,
    /// The name of the connection token the client presented (`serve` for the primary one),
    /// when the sender is a connection.
    pub token: Option<String>,
}

impl ClientContext {
    /// The context used when the sender is unknown.
    pub fn unknown(launch_kind: LaunchKind) -> Self {
        Self {
            client_id: None,
            client_kind: None,
            launch_kind,
            token: None,
        }
    }
}

/// Why a turn ended. Contributions discriminate on the variant; anything that finalizes started
/// turns ignores [`TurnEndReason::Rejected`]. No failure stage is carried on purpose.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEndReason {
    /// The started turn completed.
    Success,
    /// Cancelled by the client or the provider.
    Cancelled,
    /// The started turn failed; `resumable` means the logical turn is not over.
    Error {
        /// What failed.
        error: ErrorInfo,
        /// Whether a retry may reopen the turn.
        resumable: bool,
    },
    /// Refused or unroutable before a turn started (admission reject, no agent, gate failure):
    /// nothing to finalize, no checkpoint.
    Rejected {
        /// Why.
        error: ErrorInfo,
    },
    /// A host-handled command finished.
    LocalCommand,
}

/// Payload of `onTurnEnd`.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    /// The owning session.
    pub session: SessionUri,
    /// The chat the turn ran in: the session's default chat, a peer chat or a subagent chat.
    pub chat: ChatUri,
    /// Absent only for a provider turn-complete that arrived with no active turn.
    pub turn_id: Option<String>,
    /// Why it ended.
    pub reason: TurnEndReason,
    /// Who started the turn, when known.
    pub client_context: Option<ClientContext>,
}

/// Payload of `onOutgoingTurn`: the full committed message of a turn about to be sent. Each
/// contribution sees the message as threaded by the contributions before it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingTurn {
    /// The owning session.
    pub session: SessionUri,
    /// The chat the turn runs in.
    pub chat: ChatUri,
    /// The message, with the text replacements of earlier contributions applied.
    pub message: Message,
    /// The turn id.
    pub turn_id: String,
}

/// What one contribution adds to an outgoing turn.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SendContribution {
    /// Host instructions to append (an empty list adds nothing).
    pub instructions: Option<Vec<String>>,
    /// A replacement for the message text; an empty string counts as a replacement.
    pub text: Option<String>,
}

/// The dispatcher's composition of every [`SendContribution`].
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingTurnResult {
    /// The instructions added, in contribution order; `None` when none were added.
    pub instructions: Option<Vec<String>>,
    /// The final message: the original when nothing replaced its text, else a copy with the last
    /// replacement. Attachments, model, agent, origin and metadata are never replaced.
    pub message: Message,
}

/// How a turn request reached the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestSource {
    /// A client started the turn.
    Direct,
    /// The host started it from the chat's queue.
    Queued,
}

/// Payload of `onIncomingRequest`. It carries no provider information: the gate runs before the
/// provider lookup.
#[derive(Debug, Clone, PartialEq)]
pub struct IncomingRequest {
    /// The owning session.
    pub session: SessionUri,
    /// The chat the turn is for; the turn's actions go to it.
    pub chat: ChatUri,
    /// The message that starts the turn.
    pub message: Message,
    /// The turn id.
    pub turn_id: String,
    /// Direct or queued.
    pub source: RequestSource,
    /// The client that sent it, when known.
    pub client_id: Option<String>,
    /// Telemetry identity of the sender.
    pub client_context: ClientContext,
}

/// Where a refusal happened; `validation` in practice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectStage {
    /// Admission validation.
    Validation,
}

/// The gate's answer. A contribution returning `None` accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum Disposition {
    /// Proceed to the provider.
    Accept,
    /// The host already did the work (a local command): stop, no provider sees it.
    Handled,
    /// Refuse the turn: it ends with `chat/error` carrying `error`.
    Reject {
        /// Why.
        error: ErrorInfo,
        /// Where.
        stage: RejectStage,
    },
}

/// The chat whose turns or state are being restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HydrationContext {
    /// The owning session.
    pub session: SessionUri,
    /// The chat.
    pub chat: ChatUri,
}

/// Host-owned chat state restored for every chat before it enters the catalog.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RestoredChat {
    /// The chat's title.
    pub title: Option<String>,
    /// The chat's unsent draft.
    pub draft: Option<Message>,
    /// The chat's own configuration values.
    pub config: Option<JsonObject>,
}

/// Payload of `onDidApplyClientAction`: an accepted client action, already reduced. Borrowed so
/// the dispatch copies nothing.
#[derive(Debug, Clone, Copy)]
pub struct AppliedClientAction<'a> {
    /// The channel it was dispatched on.
    pub channel: &'a str,
    /// The session owning that channel (the channel itself for a session); `None` for the root
    /// and other channels no session owns.
    pub session: Option<&'a SessionUri>,
    /// The channel as a chat, when it is one.
    pub chat: Option<&'a ChatUri>,
    /// The action.
    pub action: &'a StateAction,
    /// The dispatching client.
    pub client_id: Option<&'a str>,
    /// Telemetry identity of the dispatcher.
    pub client_context: &'a ClientContext,
}

impl<'a> AppliedClientAction<'a> {
    /// The session, when the action was dispatched on the session's own channel (not on one of
    /// its chats or another channel it owns).
    pub fn session_channel(&self) -> Option<&'a SessionUri> {
        self.session.filter(|session| **session == self.channel)
    }
}

/// Payload of `onDidDispatchAction`: any action from any origin, once its outcome is known —
/// rejected ones included (check [`rejection_reason`](Self::rejection_reason)).
#[derive(Debug, Clone, Copy)]
pub struct DispatchedAction<'a> {
    /// The channel.
    pub channel: &'a str,
    /// The session owning that channel (the channel itself for a session); `None` for the root
    /// and other channels no session owns.
    pub session: Option<&'a SessionUri>,
    /// The channel as a chat, when it is one.
    pub chat: Option<&'a ChatUri>,
    /// The action.
    pub action: &'a StateAction,
    /// The dispatching client, for client actions.
    pub origin: Option<&'a ActionOrigin>,
    /// Set when the action was rejected and never reduced.
    pub rejection_reason: Option<&'a str>,
}

impl<'a> DispatchedAction<'a> {
    /// The session, when the action was dispatched on the session's own channel (not on one of
    /// its chats or another channel it owns).
    pub fn session_channel(&self) -> Option<&'a SessionUri> {
        self.session.filter(|session| **session == self.channel)
    }
}

/// Who queued a message, for attribution when it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMessageSender {
    /// The client, when known.
    pub client_id: Option<String>,
    /// Its telemetry identity.
    pub client_context: ClientContext,
}

/// Keeps [`Instant`] in the public vocabulary for the bridge's turn stopwatch.
pub(crate) type Stopwatch = Instant;

//! The rows of the store as plain Rust values: what callers write and read back.
//!
//! Every field is public. Wire shapes (turns, messages, origins, errors, usage) are the
//! `ahp-types` structs themselves; the store keeps them as their AHP JSON text.

use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{
    ChatInteractivity, ChatOrigin, ErrorInfo, Message, Turn, UsageInfo,
};
use agenthost_protocol::{ChatUri, SessionUri, Uri};
use serde_json::Value;

pub use agenthost_protocol::TitleSource;

/// One session of the catalog: everything the host needs to list it and restore it at start.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// The session's URI (primary key).
    pub uri: SessionUri,
    /// The id of the provider (agent) that runs the session.
    pub provider: String,
    /// The session's title.
    pub title: String,
    /// Who chose `title`.
    pub title_source: TitleSource,
    /// Creation time, ISO 8601 as on the wire (e.g. `2026-03-10T18:42:03.123Z`).
    pub created_at: String,
    /// Last modification time, ISO 8601. The catalog is ordered by it, newest first, comparing
    /// the text: the host writes every timestamp in one fixed-width UTC format.
    pub modified_at: String,
    /// The working directories the session's agent may use, as wire URIs.
    pub working_directories: Vec<Uri>,
    /// Whether the user has seen the session's latest activity.
    pub read: bool,
    /// Whether the user archived the session.
    pub archived: bool,
    /// The chat that receives input when none is selected. The store clears it when that chat
    /// is deleted.
    pub default_chat: Option<ChatUri>,
}

/// One chat of a session: its catalog entry and the chat-level state that must survive a
/// restart. Its completed turns are [`TurnRecord`]s.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRecord {
    /// The chat's URI (primary key).
    pub uri: ChatUri,
    /// The session that owns the chat. Deleting the session deletes the chat.
    pub session: SessionUri,
    /// Catalog position within the session: [`Store::chats`](crate::Store::chats) lists chats
    /// by ascending position (ties by URI).
    pub position: i64,
    /// The chat's title.
    pub title: String,
    /// Who chose `title`.
    pub title_source: TitleSource,
    /// Last modification time, ISO 8601 (the chat state's `modifiedAt`). Appending a turn
    /// advances it.
    pub modified_at: String,
    /// How the chat came into existence (AHP `ChatOrigin`), when known.
    pub origin: Option<ChatOrigin>,
    /// How the user may interact with the chat; absent means full.
    pub interactivity: Option<ChatInteractivity>,
    /// Whether the user has seen the chat's latest activity.
    pub read: bool,
    /// Whether the user archived the chat.
    pub archived: bool,
    /// The user's unsent draft (AHP `Message`).
    pub draft: Option<Message>,
    /// The chat's configuration values.
    pub config: Option<JsonObject>,
    /// The provider's opaque handle to resume its conversation for this chat.
    pub resume_handle: Option<Value>,
    /// Whether the chat is a subagent's chat (spawned by a tool call in another chat).
    pub subagent: bool,
}

/// One completed turn of a chat, stored whole: restoring a chat needs nothing else.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    /// The complete turn as on the wire; its `id` is the turn's key within the chat.
    pub turn: Turn,
    /// The provider's own id for the event or message that produced the turn, when it has one
    /// (used to line the host's history up with the provider's when resuming).
    pub provider_event_id: Option<String>,
    /// A reference to the workspace checkpoint taken at the end of the turn (for example a git
    /// ref written by the checkpoint crate).
    pub checkpoint_ref: Option<String>,
    /// The usage the host accounts to the turn, summed over its model calls; kept apart from
    /// `turn.usage` (what the client was shown) so totals never need the turn's JSON.
    pub usage: Option<UsageInfo>,
}

impl TurnRecord {
    /// A record holding just `turn`.
    pub fn new(turn: Turn) -> Self {
        Self {
            turn,
            provider_event_id: None,
            checkpoint_ref: None,
            usage: None,
        }
    }
}

/// A turn that failed before it could complete, recorded so the failure can be shown after a
/// restart at the place in the history where it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedTurnRecord {
    /// The failed turn's id (unique within the chat; recording it again replaces the record).
    pub turn_id: String,
    /// The id of the last completed turn before the failure, or `None` when it came before
    /// every completed turn.
    pub anchor_turn_id: Option<String>,
    /// What went wrong (AHP `ErrorInfo`).
    pub error: ErrorInfo,
    /// When the failure was recorded, ISO 8601.
    pub recorded_at: String,
}

/// A delegation of a chat: a value a contribution attached to one of the chat's turns.
#[derive(Debug, Clone, PartialEq)]
pub struct DelegationRecord {
    /// The turn the delegation belongs to.
    pub turn_id: String,
    /// The delegation's value, JSON.
    pub value: Value,
}

/// The owner of a metadata entry: a session or a chat.
///
/// Metadata of a session or chat is deleted with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaOwner<'a> {
    /// Session-scoped metadata.
    Session(&'a SessionUri),
    /// Chat-scoped metadata.
    Chat(&'a ChatUri),
}

impl<'a> MetaOwner<'a> {
    /// The spelling of the `scope` column.
    pub fn scope(self) -> &'static str {
        match self {
            Self::Session(_) => "session",
            Self::Chat(_) => "chat",
        }
    }

    /// The owner's URI.
    pub fn uri(self) -> &'a str {
        match self {
            Self::Session(uri) => uri.as_str(),
            Self::Chat(uri) => uri.as_str(),
        }
    }
}

//! [`SessionDataStore`]: what contributions persist per session and per chat.

use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{ActiveTurn, Message, Turn, UsageInfo};
use agenthost_protocol::{ChatUri, SessionUri};
use futures::future::BoxFuture;
use serde_json::Value;

pub use agenthost_protocol::TitleSource;

/// The future of a [`SessionDataStore`] call.
pub type DataFuture<T> = BoxFuture<'static, Result<T, DataError>>;

/// Why a session-data call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The store failed (including writing for a session or chat it does not hold).
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// A value could not be encoded.
    #[error("cannot encode {what}: {reason}")]
    Encode {
        /// What was being written.
        what: &'static str,
        /// The encoder's message.
        reason: String,
    },
    /// Any other implementation's failure (fakes script it).
    #[error("session data unavailable: {0}")]
    Unavailable(String),
}

/// Whose data: a session or a chat.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DataOwner {
    /// Session-scoped.
    Session(SessionUri),
    /// Chat-scoped.
    Chat(ChatUri),
}

/// Session metadata key of a session's persisted configuration values (a JSON object): written
/// by the `sessionFlags` contribution, read by the session service when it restores a session.
pub const SESSION_CONFIG_KEY: &str = "sessionConfig";

/// Session metadata key of the `_meta` object the client sent with `createSession` (JSON),
/// kept as it came when it is at most [`MAX_CREATION_META_BYTES`]: written by the session
/// service at creation, read by contributions that act on how a session was created
/// (`remoteSessionOrigin`).
pub const CREATION_META_KEY: &str = "creationMeta";

/// The largest `createSession` `_meta` kept under [`CREATION_META_KEY`], serialized.
pub const MAX_CREATION_META_BYTES: usize = 64 * 1024;

/// One turn's estimated spend, for the spend ledger (see `agenthost_protocol::usage`).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSpend {
    /// The chat whose own model calls it covers (a subagent's chat has its own).
    pub chat: ChatUri,
    /// The turn.
    pub turn_id: String,
    /// The session's provider.
    pub provider: String,
    /// US dollars; `None` when no model call of the turn had a known price.
    pub cost_usd: Option<f64>,
    /// Whether calls without a known price were left out of `cost_usd`.
    pub incomplete: bool,
    /// When it was last updated (RFC 3339, UTC).
    pub at: String,
}

/// A stored title and who chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTitle {
    /// The title.
    pub title: String,
    /// Who chose it.
    pub source: TitleSource,
}

/// The read and archived flags of a session or chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags {
    /// The user has seen the latest activity.
    pub read: bool,
    /// The user archived it.
    pub archived: bool,
}

/// Per-session / per-chat persistent data of the contributions: free metadata, turn usage,
/// delegations, drafts, chat configuration, titles and flags. Writes need the session or chat
/// to be stored (they fail otherwise); reads of a missing one answer `None` / empty. Each call
/// is one transaction. `None` as a value deletes.
pub trait SessionDataStore: Send + Sync {
    /// A metadata entry.
    fn meta(&self, owner: DataOwner, key: &str) -> DataFuture<Option<String>>;
    /// Sets or deletes a metadata entry.
    fn set_meta(&self, owner: DataOwner, key: &str, value: Option<String>) -> DataFuture<()>;
    /// Every metadata entry of `owner` (turn usage included, under `turnUsage/<turn>`), by key.
    fn meta_entries(&self, owner: DataOwner) -> DataFuture<Vec<(String, String)>>;
    /// Sets or deletes the usage of a turn.
    fn set_turn_usage(
        &self,
        chat: ChatUri,
        turn_id: &str,
        usage: Option<UsageInfo>,
    ) -> DataFuture<()>;
    /// The stored usage of every turn of `chat`, by turn id; malformed rows are skipped.
    fn turn_usages(&self, chat: ChatUri) -> DataFuture<Vec<(String, UsageInfo)>>;
    /// Sets or deletes the delegation of a turn.
    fn set_delegation(&self, chat: ChatUri, turn_id: &str, value: Option<Value>) -> DataFuture<()>;
    /// The delegations of `chat`, in the order they were first set.
    fn delegations(&self, chat: ChatUri) -> DataFuture<Vec<(String, Value)>>;
    /// Sets or clears the chat's draft.
    fn set_draft(&self, chat: ChatUri, draft: Option<Message>) -> DataFuture<()>;
    /// The chat's draft.
    fn draft(&self, chat: ChatUri) -> DataFuture<Option<Message>>;
    /// Sets or clears the chat's own configuration.
    fn set_chat_config(&self, chat: ChatUri, config: Option<JsonObject>) -> DataFuture<()>;
    /// The chat's own configuration.
    fn chat_config(&self, chat: ChatUri) -> DataFuture<Option<JsonObject>>;
    /// Sets the title of a session or chat.
    fn set_title(&self, owner: DataOwner, title: &str, source: TitleSource) -> DataFuture<()>;
    /// The title of a session or chat.
    fn title(&self, owner: DataOwner) -> DataFuture<Option<StoredTitle>>;
    /// Sets the flags of a session or chat.
    fn set_flags(&self, owner: DataOwner, flags: Flags) -> DataFuture<()>;
    /// The flags of a session or chat.
    fn flags(&self, owner: DataOwner) -> DataFuture<Option<Flags>>;
    /// Records (or replaces) a turn's spend in the spend ledger. The default refuses: it has
    /// no ledger to write to.
    fn set_turn_spend(&self, spend: TurnSpend) -> DataFuture<()> {
        let _ = spend;
        Box::pin(async {
            Err(DataError::Unavailable(
                "this session data store keeps no spend ledger".into(),
            ))
        })
    }
    /// The open turn of `chat`: one that started and was never stored as finished — the host
    /// stopped during it. `None` when there is none (the default: an implementation that keeps
    /// no markers knows of none).
    fn open_turn(&self, chat: ChatUri) -> DataFuture<Option<ActiveTurn>> {
        let _ = chat;
        Box::pin(async { Ok(None) })
    }
    /// Stores `turn` as the finished form of `chat`'s open turn (same id), deleting the marker
    /// in the same transaction. The default refuses: it has nothing to store into.
    fn finish_open_turn(&self, chat: ChatUri, turn: Turn) -> DataFuture<()> {
        let _ = (chat, turn);
        Box::pin(async {
            Err(DataError::Unavailable(
                "this session data store keeps no open turns".into(),
            ))
        })
    }
}

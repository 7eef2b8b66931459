//! [`SessionDataStore`]: what contributions persist per session and per chat.

use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{ActiveTurn, Message, Turn, UsageInfo};
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_store::{MetaOwner, Store, StoreError, TurnRecord};
use futures::future::BoxFuture;
use serde_json::Value;

pub use agenthost_store::TitleSource;

/// The future of a [`SessionDataStore`] call.
pub type DataFuture<T> = BoxFuture<'static, Result<T, DataError>>;

/// Why a session-data call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The store failed (including writing for a session or chat it does not hold).
    #[error(transparent)]
    Store(#[from] StoreError),
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

impl DataOwner {
    fn as_meta(&self) -> MetaOwner<'_> {
        match self {
            Self::Session(uri) => MetaOwner::Session(uri),
            Self::Chat(uri) => MetaOwner::Chat(uri),
        }
    }
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

/// The metadata key of a turn's usage.
fn usage_key(turn_id: &str) -> String {
    format!("{USAGE_PREFIX}{turn_id}")
}

const USAGE_PREFIX: &str = "turnUsage/";

/// [`SessionDataStore`] over the host's SQLite store: metadata and turn usage in its
/// `metadata` table, delegations in `delegations`, drafts, configuration, titles and flags in
/// the columns of `sessions` / `chats` (the ones the session service restores from). Calls run
/// on tokio's blocking pool, so they must be awaited inside a tokio runtime.
#[derive(Debug, Clone)]
pub struct StoreSessionData {
    store: Store,
}

impl StoreSessionData {
    /// Persists into `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, DataError> + Send + 'static,
    ) -> DataFuture<T> {
        let store = self.store.clone();
        Box::pin(async move {
            match store.blocking(move |store| Ok(f(store))).await {
                Ok(outcome) => outcome,
                Err(error) => Err(DataError::Store(error)),
            }
        })
    }
}

fn encode_usage(usage: &UsageInfo) -> Result<String, DataError> {
    serde_json::to_string(usage).map_err(|error| DataError::Encode {
        what: "turn usage",
        reason: error.to_string(),
    })
}

impl SessionDataStore for StoreSessionData {
    fn open_turn(&self, chat: ChatUri) -> DataFuture<Option<ActiveTurn>> {
        self.run(move |store| Ok(store.open_turn_of(&chat)?))
    }

    fn finish_open_turn(&self, chat: ChatUri, turn: Turn) -> DataFuture<()> {
        self.run(move |store| {
            let modified_at = turn.started_at.clone().unwrap_or_default();
            Ok(store.append_turn(&chat, &TurnRecord::new(turn), &modified_at)?)
        })
    }

    fn meta(&self, owner: DataOwner, key: &str) -> DataFuture<Option<String>> {
        let key = key.to_owned();
        self.run(move |store| Ok(store.meta(owner.as_meta(), &key)?))
    }

    fn set_meta(&self, owner: DataOwner, key: &str, value: Option<String>) -> DataFuture<()> {
        let key = key.to_owned();
        self.run(move |store| Ok(store.set_meta(owner.as_meta(), &key, value.as_deref())?))
    }

    fn meta_entries(&self, owner: DataOwner) -> DataFuture<Vec<(String, String)>> {
        self.run(move |store| Ok(store.meta_entries(owner.as_meta())?))
    }

    fn set_turn_usage(
        &self,
        chat: ChatUri,
        turn_id: &str,
        usage: Option<UsageInfo>,
    ) -> DataFuture<()> {
        let key = usage_key(turn_id);
        self.run(move |store| {
            let value = usage.as_ref().map(encode_usage).transpose()?;
            Ok(store.set_meta(MetaOwner::Chat(&chat), &key, value.as_deref())?)
        })
    }

    fn turn_usages(&self, chat: ChatUri) -> DataFuture<Vec<(String, UsageInfo)>> {
        self.run(move |store| {
            let entries = store.meta_entries(MetaOwner::Chat(&chat))?;
            Ok(decode_usages(chat.as_str(), entries))
        })
    }

    fn set_delegation(&self, chat: ChatUri, turn_id: &str, value: Option<Value>) -> DataFuture<()> {
        let turn_id = turn_id.to_owned();
        self.run(move |store| Ok(store.set_delegation(&chat, &turn_id, value.as_ref())?))
    }

    fn delegations(&self, chat: ChatUri) -> DataFuture<Vec<(String, Value)>> {
        self.run(move |store| {
            Ok(store
                .delegations(&chat)?
                .into_iter()
                .map(|d| (d.turn_id, d.value))
                .collect())
        })
    }

    fn set_draft(&self, chat: ChatUri, draft: Option<Message>) -> DataFuture<()> {
        self.run(move |store| Ok(store.set_draft(&chat, draft.as_ref())?))
    }

    fn draft(&self, chat: ChatUri) -> DataFuture<Option<Message>> {
        self.run(move |store| Ok(store.chat(&chat)?.and_then(|c| c.draft)))
    }

    fn set_chat_config(&self, chat: ChatUri, config: Option<JsonObject>) -> DataFuture<()> {
        self.run(move |store| Ok(store.set_chat_config(&chat, config.as_ref())?))
    }

    fn chat_config(&self, chat: ChatUri) -> DataFuture<Option<JsonObject>> {
        self.run(move |store| Ok(store.chat(&chat)?.and_then(|c| c.config)))
    }

    fn set_title(&self, owner: DataOwner, title: &str, source: TitleSource) -> DataFuture<()> {
        let title = title.to_owned();
        self.run(move |store| {
            match &owner {
                DataOwner::Session(uri) => store.set_session_title(uri, &title, source)?,
                DataOwner::Chat(uri) => store.set_chat_title(uri, &title, source)?,
            }
            Ok(())
        })
    }

    fn title(&self, owner: DataOwner) -> DataFuture<Option<StoredTitle>> {
        self.run(move |store| {
            Ok(match &owner {
                DataOwner::Session(uri) => store.session(uri)?.map(|s| StoredTitle {
                    title: s.title,
                    source: s.title_source,
                }),
                DataOwner::Chat(uri) => store.chat(uri)?.map(|c| StoredTitle {
                    title: c.title,
                    source: c.title_source,
                }),
            })
        })
    }

    fn set_flags(&self, owner: DataOwner, flags: Flags) -> DataFuture<()> {
        self.run(move |store| {
            match &owner {
                DataOwner::Session(uri) => {
                    store.set_session_flags(uri, flags.read, flags.archived)?
                }
                DataOwner::Chat(uri) => store.set_chat_flags(uri, flags.read, flags.archived)?,
            }
            Ok(())
        })
    }

    fn flags(&self, owner: DataOwner) -> DataFuture<Option<Flags>> {
        self.run(move |store| {
            Ok(match &owner {
                DataOwner::Session(uri) => store.session(uri)?.map(|s| Flags {
                    read: s.read,
                    archived: s.archived,
                }),
                DataOwner::Chat(uri) => store.chat(uri)?.map(|c| Flags {
                    read: c.read,
                    archived: c.archived,
                }),
            })
        })
    }
}

/// The usage rows among a chat's metadata entries; a row that does not decode is skipped with
/// a warning (a restore must not fail over one bad row).
pub(crate) fn decode_usages(
    chat: &str,
    entries: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, UsageInfo)> {
    entries
        .into_iter()
        .filter_map(|(key, value)| {
            let turn_id = key.strip_prefix(USAGE_PREFIX)?.to_owned();
            match serde_json::from_str(&value) {
                Ok(usage) => Some((turn_id, usage)),
                Err(error) => {
                    tracing::warn!(chat, turn_id, %error, "skipped a malformed stored turn usage");
                    None
                }
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "session_data_tests.rs"]
mod tests;

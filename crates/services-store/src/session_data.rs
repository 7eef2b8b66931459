//! [`StoreSessionData`]: the session data contributions persist, in the host's SQLite store.

use agenthost_protocol::ChatUri;
use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{ActiveTurn, Message, Turn, UsageInfo};
use agenthost_services::{
    DataError, DataFuture, DataOwner, Flags, SessionDataStore, StoredTitle, TitleSource, TurnSpend,
};
use agenthost_store::{MetaOwner, SpendRecord, Store, StoreError, TurnRecord};
use serde_json::Value;

/// The store's key for `owner`'s metadata.
fn meta_owner(owner: &DataOwner) -> MetaOwner<'_> {
    match owner {
        DataOwner::Session(uri) => MetaOwner::Session(uri),
        DataOwner::Chat(uri) => MetaOwner::Chat(uri),
    }
}

/// The metadata key of a turn's usage.
fn usage_key(turn_id: &str) -> String {
    format!("{USAGE_PREFIX}{turn_id}")
}

const USAGE_PREFIX: &str = "turnUsage/";

/// A failure inside a store call: the store's own, or one of the contract's.
enum Failure {
    Store(StoreError),
    Data(DataError),
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

impl From<DataError> for Failure {
    fn from(error: DataError) -> Self {
        Self::Data(error)
    }
}

impl From<Failure> for DataError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Store(error) => DataError::Store(Box::new(error)),
            Failure::Data(error) => error,
        }
    }
}

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
        f: impl FnOnce(&Store) -> Result<T, Failure> + Send + 'static,
    ) -> DataFuture<T> {
        let store = self.store.clone();
        Box::pin(async move {
            match store.blocking(move |store| Ok(f(store))).await {
                Ok(outcome) => outcome.map_err(DataError::from),
                Err(error) => Err(DataError::Store(Box::new(error))),
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
        self.run(move |store| Ok(store.meta(meta_owner(&owner), &key)?))
    }

    fn set_meta(&self, owner: DataOwner, key: &str, value: Option<String>) -> DataFuture<()> {
        let key = key.to_owned();
        self.run(move |store| Ok(store.set_meta(meta_owner(&owner), &key, value.as_deref())?))
    }

    fn meta_entries(&self, owner: DataOwner) -> DataFuture<Vec<(String, String)>> {
        self.run(move |store| Ok(store.meta_entries(meta_owner(&owner))?))
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

    fn set_turn_spend(&self, spend: TurnSpend) -> DataFuture<()> {
        self.run(move |store| {
            Ok(store.set_turn_spend(&SpendRecord {
                chat: spend.chat,
                turn_id: spend.turn_id,
                provider: spend.provider,
                cost_usd: spend.cost_usd,
                incomplete: spend.incomplete,
                at: spend.at,
            })?)
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

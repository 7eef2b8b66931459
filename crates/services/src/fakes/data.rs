//! Recording fakes: `SessionDataStore`.

use super::*;

/// A call to [`FakeSessionData`].
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum DataCall {
    Meta {
        owner: DataOwner,
        key: String,
    },
    SetMeta {
        owner: DataOwner,
        key: String,
        value: Option<String>,
    },
    MetaEntries {
        owner: DataOwner,
    },
    SetTurnUsage {
        chat: ChatUri,
        turn_id: String,
        usage: Option<UsageInfo>,
    },
    TurnUsages {
        chat: ChatUri,
    },
    SetDelegation {
        chat: ChatUri,
        turn_id: String,
        value: Option<Value>,
    },
    Delegations {
        chat: ChatUri,
    },
    SetDraft {
        chat: ChatUri,
        draft: Option<Message>,
    },
    Draft {
        chat: ChatUri,
    },
    SetChatConfig {
        chat: ChatUri,
        config: Option<JsonObject>,
    },
    ChatConfig {
        chat: ChatUri,
    },
    SetTitle {
        owner: DataOwner,
        title: String,
        source: TitleSource,
    },
    Title {
        owner: DataOwner,
    },
    SetFlags {
        owner: DataOwner,
        flags: Flags,
    },
    Flags {
        owner: DataOwner,
    },
    SetTurnSpend {
        spend: TurnSpend,
    },
}

/// The fake's storage (it behaves like an empty store that accepts every owner) and its
/// scripted failure.
#[derive(Debug, Clone, Default)]
pub struct DataAnswers {
    /// Fail every call with [`DataError::Unavailable`] carrying this text.
    pub fail: Option<String>,
    /// Metadata by owner and key.
    pub meta: HashMap<DataOwner, BTreeMap<String, String>>,
    /// Turn usage by chat and turn.
    pub usage: HashMap<ChatUri, BTreeMap<String, UsageInfo>>,
    /// Delegations by chat, in the order first set.
    pub delegations: HashMap<ChatUri, Vec<(String, Value)>>,
    /// Drafts by chat.
    pub drafts: HashMap<ChatUri, Message>,
    /// Chat configuration by chat.
    pub configs: HashMap<ChatUri, JsonObject>,
    /// Titles by owner.
    pub titles: HashMap<DataOwner, StoredTitle>,
    /// Flags by owner.
    pub flags: HashMap<DataOwner, Flags>,
    /// The spend ledger, by chat and turn.
    pub spend: BTreeMap<(String, String), TurnSpend>,
}

fake!(
    /// Recording, in-memory [`SessionDataStore`].
    FakeSessionData, DataCall, DataAnswers
);

impl FakeSessionData {
    fn answer<T: Send + 'static>(
        &self,
        call: DataCall,
        f: impl FnOnce(&mut DataAnswers) -> T,
    ) -> DataFuture<T> {
        self.record(call);
        let mut answers = self.answers();
        let result = match &answers.fail {
            Some(reason) => Err(DataError::Unavailable(reason.clone())),
            None => Ok(f(&mut answers)),
        };
        Box::pin(async move { result })
    }
}

fn put<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>, key: K, value: Option<V>) {
    match value {
        Some(value) => map.insert(key, value),
        None => map.remove(&key),
    };
}

impl SessionDataStore for FakeSessionData {
    fn meta(&self, owner: DataOwner, key: &str) -> DataFuture<Option<String>> {
        let call = DataCall::Meta {
            owner: owner.clone(),
            key: key.into(),
        };
        self.answer(call, |a| {
            a.meta.get(&owner).and_then(|m| m.get(key)).cloned()
        })
    }
    fn set_meta(&self, owner: DataOwner, key: &str, value: Option<String>) -> DataFuture<()> {
        let call = DataCall::SetMeta {
            owner: owner.clone(),
            key: key.into(),
            value: value.clone(),
        };
        self.answer(call, |a| {
            let entries = a.meta.entry(owner).or_default();
            match value {
                Some(value) => entries.insert(key.to_owned(), value),
                None => entries.remove(key),
            };
        })
    }
    fn meta_entries(&self, owner: DataOwner) -> DataFuture<Vec<(String, String)>> {
        let call = DataCall::MetaEntries {
            owner: owner.clone(),
        };
        self.answer(call, |a| {
            a.meta
                .get(&owner)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default()
        })
    }
    fn set_turn_usage(
        &self,
        chat: ChatUri,
        turn_id: &str,
        usage: Option<UsageInfo>,
    ) -> DataFuture<()> {
        let call = DataCall::SetTurnUsage {
            chat: chat.clone(),
            turn_id: turn_id.into(),
            usage: usage.clone(),
        };
        self.answer(call, |a| {
            let entries = a.usage.entry(chat).or_default();
            match usage {
                Some(usage) => entries.insert(turn_id.to_owned(), usage),
                None => entries.remove(turn_id),
            };
        })
    }
    fn turn_usages(&self, chat: ChatUri) -> DataFuture<Vec<(String, UsageInfo)>> {
        let call = DataCall::TurnUsages { chat: chat.clone() };
        self.answer(call, |a| {
            a.usage
                .get(&chat)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default()
        })
    }
    fn set_delegation(&self, chat: ChatUri, turn_id: &str, value: Option<Value>) -> DataFuture<()> {
        let call = DataCall::SetDelegation {
            chat: chat.clone(),
            turn_id: turn_id.into(),
            value: value.clone(),
        };
        self.answer(call, |a| {
            let entries = a.delegations.entry(chat).or_default();
            match (entries.iter_mut().find(|(t, _)| t == turn_id), value) {
                (Some(entry), Some(value)) => entry.1 = value,
                (None, Some(value)) => entries.push((turn_id.to_owned(), value)),
                (_, None) => entries.retain(|(t, _)| t != turn_id),
            }
        })
    }
    fn delegations(&self, chat: ChatUri) -> DataFuture<Vec<(String, Value)>> {
        let call = DataCall::Delegations { chat: chat.clone() };
        self.answer(call, |a| {
            a.delegations.get(&chat).cloned().unwrap_or_default()
        })
    }
    fn set_draft(&self, chat: ChatUri, draft: Option<Message>) -> DataFuture<()> {
        let call = DataCall::SetDraft {
            chat: chat.clone(),
            draft: draft.clone(),
        };
        self.answer(call, |a| put(&mut a.drafts, chat, draft))
    }
    fn draft(&self, chat: ChatUri) -> DataFuture<Option<Message>> {
        let call = DataCall::Draft { chat: chat.clone() };
        self.answer(call, |a| a.drafts.get(&chat).cloned())
    }
    fn set_chat_config(&self, chat: ChatUri, config: Option<JsonObject>) -> DataFuture<()> {
        let call = DataCall::SetChatConfig {
            chat: chat.clone(),
            config: config.clone(),
        };
        self.answer(call, |a| put(&mut a.configs, chat, config))
    }
    fn chat_config(&self, chat: ChatUri) -> DataFuture<Option<JsonObject>> {
        let call = DataCall::ChatConfig { chat: chat.clone() };
        self.answer(call, |a| a.configs.get(&chat).cloned())
    }
    fn set_title(&self, owner: DataOwner, title: &str, source: TitleSource) -> DataFuture<()> {
        let call = DataCall::SetTitle {
            owner: owner.clone(),
            title: title.into(),
            source,
        };
        let stored = StoredTitle {
            title: title.into(),
            source,
        };
        self.answer(call, |a| put(&mut a.titles, owner, Some(stored)))
    }
    fn title(&self, owner: DataOwner) -> DataFuture<Option<StoredTitle>> {
        let call = DataCall::Title {
            owner: owner.clone(),
        };
        self.answer(call, |a| a.titles.get(&owner).cloned())
    }
    fn set_flags(&self, owner: DataOwner, flags: Flags) -> DataFuture<()> {
        let call = DataCall::SetFlags {
            owner: owner.clone(),
            flags,
        };
        self.answer(call, |a| put(&mut a.flags, owner, Some(flags)))
    }
    fn flags(&self, owner: DataOwner) -> DataFuture<Option<Flags>> {
        let call = DataCall::Flags {
            owner: owner.clone(),
        };
        self.answer(call, |a| a.flags.get(&owner).copied())
    }
    fn set_turn_spend(&self, spend: TurnSpend) -> DataFuture<()> {
        let call = DataCall::SetTurnSpend {
            spend: spend.clone(),
        };
        self.answer(call, |a| {
            let key = (spend.chat.to_string(), spend.turn_id.clone());
            a.spend.insert(key, spend);
        })
    }
}

//! Restoring what the store holds into live state: a channel a client names, a session with
//! its chats' hydration, a chat with its history.

use super::*;

impl SessionService {
    /// Makes sure the channel a client names is live, restoring its session (and, for a chat,
    /// the chat with its hydrated history) from the store. Unknown channels are left alone.
    pub async fn ensure_channel(&self, channel: &str) -> Result<(), ServiceError> {
        match Channel::parse(channel) {
            Ok(Channel::Session(session)) => self.ensure_session(&session).await,
            Ok(Channel::Chat(chat)) => self.ensure_chat(&chat).await,
            Ok(Channel::Changeset(_)) => self.ensure_changeset(channel).await,
            _ => Ok(()),
        }
    }

    /// A changeset channel: its session restored, then the changeset computed into state.
    pub(super) async fn ensure_changeset(&self, channel: &str) -> Result<(), ServiceError> {
        let Some(changesets) = self.changesets.as_ref() else {
            return Ok(());
        };
        let uri = agenthost_protocol::uri::ChangesetUri::parse(channel)?;
        self.ensure_session(uri.session_uri()).await?;
        let unknown =
            |ChangesetError::UnknownSession { session, .. }| ServiceError::SessionNotFound(session);
        changesets.materialize(&uri).await.map_err(unknown)
    }

    pub(crate) async fn ensure_session(&self, session: &SessionUri) -> Result<(), ServiceError> {
        if self.state.read(|h| h.session(session.as_str()).is_some()) {
            return Ok(());
        }
        let key = session.clone();
        let loaded = self
            .store
            .blocking(move |store| {
                let Some(record) = store.session(&key)? else {
                    return Ok(None);
                };
                let chats = store.chats(&key)?;
                let values = store.meta(MetaOwner::Session(&key), SESSION_CONFIG_KEY)?;
                let isolated = store
                    .meta(MetaOwner::Session(&key), WORKTREE_META_KEY)?
                    .is_some();
                let spend = store.session_spend(&key)?;
                Ok(Some((record, chats, values, isolated, spend)))
            })
            .await?;
        let Some((record, chats, values, isolated, spend)) = loaded else {
            return Err(ServiceError::SessionNotFound(session.to_string()));
        };
        let mut restored = restored_session(&record, &chats);
        restored.meta = spend_meta(&spend);
        let hydrated = self.hydrate_chats(session, &chats).await;
        for summary in &mut restored.chats {
            if let Some(title) = hydrated
                .get(&summary.resource)
                .and_then(|c| c.title.clone())
            {
                summary.title = title;
            }
        }
        restored.changesets = self.changesets.as_ref().map(|c| c.catalog(session));
        // Malformed persisted values are ignored: the session gets the defaults.
        let values = values.and_then(|v| serde_json::from_str::<JsonObject>(&v).ok());
        restored.config = self.session_config_with(values.as_ref(), false);
        if let Some(config) = restored.config.as_mut() {
            show_isolation(config, isolated);
        }
        // A concurrent restore may have won: that is fine.
        let _ = self.state.insert_session(session, restored);
        self.hydrated_chats().insert(session.to_string(), hydrated);
        Ok(())
    }

    pub(super) fn hydrated_chats(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<String, RestoredChat>>> {
        self.hydrated.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `onHydrateChat` for every chat of a session being restored, each with an empty value:
    /// the contributions restore what they own (title, draft, configuration) from the store.
    pub(super) async fn hydrate_chats(
        &self,
        session: &SessionUri,
        chats: &[agenthost_store::ChatRecord],
    ) -> HashMap<String, RestoredChat> {
        let mut hydrated = HashMap::new();
        for chat in chats {
            let context = HydrationContext {
                session: session.clone(),
                chat: chat.uri.clone(),
            };
            let restored = self
                .dispatcher
                .hydrate_chat(&context, RestoredChat::default())
                .await;
            hydrated.insert(chat.uri.to_string(), restored);
        }
        hydrated
    }

    pub(crate) async fn ensure_chat(&self, chat: &ChatUri) -> Result<(), ServiceError> {
        if self.state.read(|h| h.chat(chat).is_some()) {
            return Ok(());
        }
        let key = chat.clone();
        let loaded = self
            .store
            .blocking(move |store| {
                let Some(record) = store.chat(&key)? else {
                    return Ok(None);
                };
                let turns = store
                    .turns(&key)?
                    .into_iter()
                    .map(|t| t.turn)
                    .collect::<Vec<_>>();
                Ok(Some((record, turns)))
            })
            .await?;
        let Some((record, turns)) = loaded else {
            return Err(ServiceError::ChatNotFound(chat.to_string()));
        };
        self.ensure_session(&record.session).await?;
        let context = HydrationContext {
            session: record.session.clone(),
            chat: chat.clone(),
        };
        let turns = self.dispatcher.hydrate_turns(&context, turns).await;
        // What `onHydrateChat` returned when the session was restored; a chat stored since then
        // is hydrated now.
        let taken = self
            .hydrated_chats()
            .get_mut(record.session.as_str())
            .and_then(|chats| chats.remove(chat.as_str()));
        let restored = match taken {
            Some(restored) => restored,
            None => {
                self.dispatcher
                    .hydrate_chat(&context, RestoredChat::default())
                    .await
            }
        };
        let mut state = restored_chat(&record, turns, restored.title);
        state.draft = restored.draft.or(state.draft);
        // The chat's own configuration (its working-directory subset), as `chatConfig` restored
        // it; a malformed stored value keeps the chat inheriting the session's directories.
        let config = restored.config.unwrap_or_default();
        if let Err(error) = agenthost_reducers::chat_config::apply_chat_config(&config, &mut state)
        {
            tracing::warn!(chat = chat.as_str(), %error, "the chat's stored configuration was not applied");
        }
        let _ = self.state.insert_chat(&record.session, chat, state);
        Ok(())
    }
}

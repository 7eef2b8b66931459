//! The `chatConfig` contribution (order 650, `onDidDispatchAction` + `onHydrateChat`).
//!
//! The central decision: **a chat's own configuration is persisted as a snapshot of its
//! current state after every accepted change, in the background; a restore prefers what is
//! already known over storage.**
//!
//! - The chat's own configuration is what AHP lets a client change on a chat channel apart from
//!   history, title and draft: its working-directory subset (`ChatState.workingDirectories`,
//!   changed by `chat/workingDirectorySet` and `chat/workingDirectoryRemoved`). This host has no
//!   chat-scoped configuration values of its own. The stored form is the JSON object
//!   `{"workingDirectories": [...]}` ([`WORKING_DIRECTORIES_KEY`]); a chat that inherits the
//!   session's whole set (subset absent) has no stored configuration.
//! - `onDidDispatchAction`: for a **non-rejected** chat working-directory action on a chat
//!   channel, the chat's post-reduction state is read from [`HostState`] and the whole current
//!   configuration ([`config_of`]) is written through [`SessionDataStore::set_chat_config`].
//!   Rejected envelopes are skipped (the reducers reject a directory outside the session's
//!   set).
//! - The hook is synchronous and the store is not: writes go to a [`WriteQueue`], run one at a
//!   time in queue order by a task on the current tokio runtime, so the last change lands last.
//!   [`ChatConfig::flush`] waits for the queue. A failing write is logged (`warn`) and dropped;
//!   the hook has already returned `Ok`, so later contributions run.
//! - `onHydrateChat`: a configuration already restored (the session service fills
//!   `RestoredChat::config` from the same `chats.config` column this contribution writes)
//!   passes through untouched, **without reading storage**. Otherwise the chat's newest queued,
//!   not yet written configuration, if any (it is newer than storage), else the stored one. A
//!   failing read fails the hook, so the dispatcher keeps the previous value.
//! - Applying a restored configuration to the chat's state is the session service's job when it
//!   registers the chat; [`apply_config`] is the inverse of [`config_of`] for that.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookFuture,
    HookResult, HookSet, HydrationContext, MissingService, RestoredChat, ServiceRegistry,
};
use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::ChatState;
use agenthost_protocol::{ChatUri, StateAction};
use agenthost_services::{HostState, SessionDataStore, WriteQueue};

pub use agenthost_reducers::chat_config::WORKING_DIRECTORIES_KEY;

/// The chat's own configuration as stored: `None` when the chat has nothing of its own (it
/// inherits the session's working directories). The projection lives in
/// `agenthost_reducers::chat_config`, shared with the session service that applies it.
pub fn config_of(chat: &ChatState) -> Option<JsonObject> {
    agenthost_reducers::chat_config::chat_config(chat)
}

/// Applies a stored configuration to `chat` (the inverse of [`config_of`]). A malformed value
/// is ignored with a warning and leaves the chat unchanged; returns whether the chat changed.
pub fn apply_config(config: &JsonObject, chat: &mut ChatState) -> bool {
    match agenthost_reducers::chat_config::apply_chat_config(config, chat) {
        Ok(changed) => changed,
        Err(error) => {
            tracing::warn!(
                chat = chat.resource.as_str(),
                %error,
                "chatConfig: ignored a malformed stored configuration"
            );
            false
        }
    }
}

/// The `chatConfig` contribution. Register it with `dispatcher.register::<ChatConfig>()`; it
/// needs `dyn SessionDataStore` and `dyn HostState` in the registry, and a tokio runtime where
/// its hooks are called.
pub struct ChatConfig {
    data: Arc<dyn SessionDataStore>,
    state: Arc<dyn HostState>,
    writes: Arc<WriteQueue>,
    unwritten: Arc<Unwritten>,
}

impl std::fmt::Debug for ChatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatConfig").finish_non_exhaustive()
    }
}

/// The newest queued, not yet written configuration of each chat, tagged with the number of
/// its write so an older write finishing does not forget a newer one.
#[derive(Default)]
struct Unwritten {
    entries: Mutex<UnwrittenEntries>,
}

#[derive(Default)]
struct UnwrittenEntries {
    next: u64,
    by_chat: HashMap<ChatUri, (u64, Option<JsonObject>)>,
}

impl Unwritten {
    fn lock(&self) -> MutexGuard<'_, UnwrittenEntries> {
        // Every mutation completes before the guard drops: a poisoned map is still valid.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `config` as the newest of `chat`; returns the number of its write.
    fn record(&self, chat: ChatUri, config: Option<JsonObject>) -> u64 {
        let mut entries = self.lock();
        entries.next += 1;
        let number = entries.next;
        entries.by_chat.insert(chat, (number, config));
        number
    }

    /// The write `number` of `chat` finished (or failed): forgets it unless a newer one waits.
    fn finished(&self, chat: &ChatUri, number: u64) {
        let mut entries = self.lock();
        if entries.by_chat.get(chat).is_some_and(|(n, _)| *n == number) {
            entries.by_chat.remove(chat);
        }
    }

    /// The newest configuration of `chat` not yet in storage: `Some(None)` for a clear.
    fn get(&self, chat: &ChatUri) -> Option<Option<JsonObject>> {
        self.lock()
            .by_chat
            .get(chat)
            .map(|(_, config)| config.clone())
    }
}

/// Forgets write `number` of `chat` in [`Unwritten`] when dropped.
struct Written {
    unwritten: Arc<Unwritten>,
    chat: ChatUri,
    number: u64,
}

impl Drop for Written {
    fn drop(&mut self) {
        self.unwritten.finished(&self.chat, self.number);
    }
}

impl ChatConfig {
    /// Persists and restores through `data`, reading the chats' current state from `state`.
    pub fn new(data: Arc<dyn SessionDataStore>, state: Arc<dyn HostState>) -> Self {
        Self {
            data,
            state,
            writes: Arc::new(WriteQueue::new(<Self as Contribution>::ID)),
            unwritten: Arc::default(),
        }
    }

    /// Resolves `dyn SessionDataStore` and `dyn HostState` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn SessionDataStore>()?,
            services.get::<dyn HostState>()?,
        ))
    }

    /// Waits until every write queued so far has finished (or failed and been logged).
    pub async fn flush(&self) {
        self.writes.flush().await;
    }

    /// Queues the write of `chat`'s current configuration.
    fn persist(&self, chat: ChatUri) {
        let Some(state) = self.state.chat(chat.as_str()) else {
            tracing::debug!(
                chat = chat.as_str(),
                "chatConfig: chat not in state, nothing persisted"
            );
            return;
        };
        let config = config_of(&state);
        let number = self.unwritten.record(chat.clone(), config.clone());
        // Forgets the unwritten value once the write ran, failed, or was dropped unrun.
        let written = Written {
            unwritten: Arc::clone(&self.unwritten),
            chat: chat.clone(),
            number,
        };
        let data = Arc::clone(&self.data);
        self.writes.push(Box::pin(async move {
            let _written = written;
            let cleared = config.is_none();
            if let Err(error) = data.set_chat_config(chat.clone(), config).await {
                tracing::warn!(chat = chat.as_str(), cleared, %error, "chatConfig: the chat configuration was not persisted");
            }
        }));
    }
}

impl Contribution for ChatConfig {
    const ID: &'static str = "chatConfig";
    const ORDER: i32 = 650;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction, Hook::HydrateChat]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for ChatConfig {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        if action.rejection_reason.is_some() {
            return Ok(());
        }
        let (StateAction::ChatWorkingDirectorySet(_) | StateAction::ChatWorkingDirectoryRemoved(_)) =
            action.action
        else {
            return Ok(());
        };
        // The reducers accept these on chat channels only; the check keeps it that way.
        let Some(chat) = action.chat else {
            return Ok(());
        };
        self.persist(chat.clone());
        Ok(())
    }

    fn on_hydrate_chat<'a>(
        &'a self,
        context: &'a HydrationContext,
        chat: &'a RestoredChat,
    ) -> HookFuture<'a, RestoredChat> {
        Box::pin(async move {
            if chat.config.is_some() {
                return Ok(chat.clone());
            }
            let uri = context.chat.clone();
            let config = match self.unwritten.get(&uri) {
                Some(config) => config,
                None => self.data.chat_config(uri).await?,
            };
            Ok(RestoredChat {
                config,
                ..chat.clone()
            })
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

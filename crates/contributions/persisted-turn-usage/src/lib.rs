//! `persistedTurnUsage` (order 100, `onDidDispatchAction` + `onHydrateTurns`): keeps each turn's
//! token usage in the session data store and fills it back into restored turns.
//!
//! - **Observe**: a `chat/usage` on a chat channel persists its `usage` keyed by turn id through
//!   [`SessionDataStore::set_turn_usage`] (the store's `turnUsage/<turn>` metadata row of the
//!   chat; the latest report of a turn wins, as in the reducer). Subagent chats
//!   (`ahp-chat://subagent/…`, see [`ChatUri::subagent_parent`]) and empty turn ids are skipped.
//!   `chat/usage` is a server action, so a rejected envelope cannot carry one; it is skipped
//!   anyway.
//! - **Hydrate**: a restored turn without `usage` gets its stored row; a turn whose usage is
//!   partial gets the missing fields from the row, and the two `_meta` objects merged with the
//!   stored values winning. Malformed rows are skipped by the store; turns without a row pass
//!   through unchanged. A failed read is a hook error: the dispatcher logs it and passes the
//!   previous stage's turns on.
//!
//! The central decision: **the observer never waits for the store.** `onDidDispatchAction` is
//! synchronous and runs right after a reduction, so a write is queued and run by a task on the
//! current tokio runtime; queued writes run one at a time in queue order (a later report of a
//! turn never lands before an earlier one). A failing write is logged (`warn`) and dropped —
//! usage is advisory and the turn itself is persisted with its usage by the session service.
//! [`PersistedTurnUsage::flush`] waits for the queue.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, DispatchedAction, Hook, HookFuture,
    HookResult, HookSet, HydrationContext, MissingService, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::{Turn, UsageInfo};
use agenthost_protocol::{ChatUri, StateAction};
use agenthost_services::SessionDataStore;

use agenthost_services::WriteQueue;

/// The `persistedTurnUsage` contribution. Register it with
/// `dispatcher.register::<PersistedTurnUsage>()`; it needs `dyn SessionDataStore` in the
/// registry.
pub struct PersistedTurnUsage {
    data: Arc<dyn SessionDataStore>,
    writes: Arc<WriteQueue>,
}

impl std::fmt::Debug for PersistedTurnUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistedTurnUsage").finish_non_exhaustive()
    }
}

impl PersistedTurnUsage {
    /// Persists through `data`.
    pub fn new(data: Arc<dyn SessionDataStore>) -> Self {
        Self {
            data,
            writes: Arc::new(WriteQueue::new(<Self as Contribution>::ID)),
        }
    }

    /// Resolves `dyn SessionDataStore` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(services.get::<dyn SessionDataStore>()?))
    }

    /// Waits until every usage write queued so far has finished (or failed and been logged).
    pub async fn flush(&self) {
        self.writes.flush().await;
    }
}

/// The chat a usage report on `chat` is persisted for: a chat that is not a subagent's (a URI
/// with the subagent prefix that does not decode counts as one).
fn persisted_chat(chat: Option<&ChatUri>) -> Option<ChatUri> {
    chat.filter(|chat| matches!(chat.subagent_parent(), Ok(None)))
        .cloned()
}

/// `turn` with its usage completed from `stored`: absent usage is replaced, absent fields are
/// filled, and `_meta` keys are merged with the stored values winning.
fn fill_usage(turn: &mut Turn, stored: &UsageInfo) {
    let Some(usage) = turn.usage.as_mut() else {
        turn.usage = Some(stored.clone());
        return;
    };
    usage.input_tokens = usage.input_tokens.or(stored.input_tokens);
    usage.output_tokens = usage.output_tokens.or(stored.output_tokens);
    usage.cache_read_tokens = usage.cache_read_tokens.or(stored.cache_read_tokens);
    if usage.model.is_none() {
        usage.model.clone_from(&stored.model);
    }
    if let Some(stored_meta) = &stored.meta {
        let meta = usage.meta.get_or_insert_with(Default::default);
        for (key, value) in stored_meta {
            meta.insert(key.clone(), value.clone());
        }
    }
}

impl Contribution for PersistedTurnUsage {
    const ID: &'static str = "persistedTurnUsage";
    const ORDER: i32 = 100;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidDispatchAction, Hook::HydrateTurns]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for PersistedTurnUsage {
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        let StateAction::ChatUsage(usage) = action.action else {
            return Ok(());
        };
        if action.rejection_reason.is_some() || usage.turn_id.is_empty() {
            return Ok(());
        }
        let Some(chat) = persisted_chat(action.chat) else {
            return Ok(());
        };
        let turn_id = usage.turn_id.clone();
        let write = self
            .data
            .set_turn_usage(chat.clone(), &turn_id, Some(usage.usage.clone()));
        self.writes.push(Box::pin(async move {
            if let Err(error) = write.await {
                tracing::warn!(chat = %chat, turn_id, %error, "persistedTurnUsage: could not persist the turn's usage");
            }
        }));
        Ok(())
    }

    fn on_hydrate_turns<'a>(
        &'a self,
        context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> HookFuture<'a, Vec<Turn>> {
        Box::pin(async move {
            let chat = match persisted_chat(Some(&context.chat)) {
                Some(chat) if !turns.is_empty() => chat,
                // Nothing was persisted for it, or there is nothing to fill.
                _ => return Ok(turns.to_vec()),
            };
            let stored = self.data.turn_usages(chat).await?;
            let mut turns = turns.to_vec();
            if stored.is_empty() {
                return Ok(turns);
            }
            let stored: std::collections::HashMap<_, _> = stored.into_iter().collect();
            for turn in &mut turns {
                if let Some(usage) = stored.get(&turn.id) {
                    fill_usage(turn, usage);
                }
            }
            Ok(turns)
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

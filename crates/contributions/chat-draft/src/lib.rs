//! The `chatDraft` contribution (order 600, `onDidApplyClientAction` + `onHydrateChat`).
//!
//! The central decision: **the draft a client syncs into a chat is persisted from the applied
//! client action, in the background, last value wins; a restore prefers what is already
//! known over storage.**
//!
//! - `onDidApplyClientAction`: an accepted `chat/draftChanged` on a chat channel is written
//!   through [`SessionDataStore::set_draft`]; a cleared draft (`draft` absent) deletes the stored
//!   one. Only accepted client actions reach this hook, so a rejected draft (one that is not a
//!   user message) is never written, and the host's own actions never are.
//! - The hook is synchronous and the store is not: writes go to a per-contribution queue drained
//!   by one task on the current tokio runtime, so two changes of the same chat are written in
//!   order, and a change that arrives while an older one waits replaces it (only the latest
//!   draft of a chat is worth writing). [`ChatDraft::flushed`] waits for the queue to drain.
//! - A failing write is logged (`warn`) and dropped; the hook has already returned `Ok`, so
//!   later contributions run as usual. Without a tokio runtime nothing can be written: the
//!   change is logged and dropped.
//! - `onHydrateChat`: a draft already restored passes through untouched, **without reading
//!   storage**. Otherwise the chat's unwritten queued draft, if any (it is newer than storage),
//!   else the stored one. A failing read fails the hook, so the dispatcher keeps the previous
//!   value.
#![deny(missing_docs)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_dispatcher::{
    AppliedClientAction, ChatContribution, Contribution, ContributionContext, Hook, HookFuture,
    HookResult, HookSet, HydrationContext, MissingService, RestoredChat, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::Message;
use agenthost_protocol::{ChatUri, StateAction};
use agenthost_services::SessionDataStore;
use tokio::sync::Notify;

/// The `chatDraft` contribution. Register it with `dispatcher.register::<ChatDraft>()`; it needs
/// `dyn SessionDataStore` in the registry, and a tokio runtime where its hooks are called.
pub struct ChatDraft {
    data: Arc<dyn SessionDataStore>,
    writes: Arc<Writes>,
}

impl std::fmt::Debug for ChatDraft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatDraft").finish_non_exhaustive()
    }
}

/// A draft to write: `None` deletes the stored one.
type DraftWrite = (ChatUri, Option<Message>);

/// The write queue shared with the draining task.
#[derive(Default)]
struct Writes {
    queue: Mutex<WriteQueue>,
    /// Woken when the queue drains.
    idle: Notify,
}

#[derive(Default)]
struct WriteQueue {
    /// The latest unwritten draft of each chat, in the order the chats first changed.
    pending: VecDeque<DraftWrite>,
    /// The write being awaited.
    writing: Option<DraftWrite>,
    /// Whether a task is draining the queue.
    draining: bool,
}

impl Writes {
    fn queue(&self) -> MutexGuard<'_, WriteQueue> {
        // Every mutation completes before the guard drops: a poisoned queue is still valid.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `write` (replacing an older unwritten draft of the same chat); returns whether
    /// the caller must start draining.
    fn push(&self, write: DraftWrite) -> bool {
        let mut queue = self.queue();
        match queue.pending.iter_mut().find(|(chat, _)| *chat == write.0) {
            Some(queued) => queued.1 = write.1,
            None => queue.pending.push_back(write),
        }
        !std::mem::replace(&mut queue.draining, true)
    }

    /// The next write, recorded as the one in flight; `None` (and the queue idle) when empty.
    fn next(&self) -> Option<DraftWrite> {
        let mut queue = self.queue();
        queue.writing = queue.pending.pop_front();
        if queue.writing.is_none() {
            queue.draining = false;
            self.idle.notify_waiters();
        }
        queue.writing.clone()
    }

    /// The newest draft of `chat` not yet in storage: `Some(None)` for a clear.
    fn unwritten(&self, chat: &ChatUri) -> Option<Option<Message>> {
        let queue = self.queue();
        queue
            .pending
            .iter()
            .chain(&queue.writing)
            .find(|(queued, _)| queued == chat)
            .map(|(_, draft)| draft.clone())
    }
}

/// Frees the queue when the draining task ends abnormally (a panicking store, a runtime shutting
/// down), so the next change starts a new one.
struct DrainGuard(Arc<Writes>);

impl Drop for DrainGuard {
    fn drop(&mut self) {
        let mut queue = self.0.queue();
        if queue.draining {
            queue.writing = None;
            queue.draining = false;
            self.0.idle.notify_waiters();
        }
    }
}

async fn drain(data: Arc<dyn SessionDataStore>, writes: Arc<Writes>) {
    let _guard = DrainGuard(Arc::clone(&writes));
    while let Some((chat, draft)) = writes.next() {
        let cleared = draft.is_none();
        if let Err(error) = data.set_draft(chat.clone(), draft).await {
            tracing::warn!(chat = chat.as_str(), cleared, %error, "chatDraft: the draft was not persisted");
        }
    }
}

impl ChatDraft {
    /// Persists and restores drafts through `data`.
    pub fn new(data: Arc<dyn SessionDataStore>) -> Self {
        Self {
            data,
            writes: Arc::default(),
        }
    }

    /// Resolves `dyn SessionDataStore` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(services.get::<dyn SessionDataStore>()?))
    }

    /// Resolves when every queued draft has been written (or has failed and been logged).
    pub async fn flushed(&self) {
        loop {
            let mut notified = std::pin::pin!(self.writes.idle.notified());
            notified.as_mut().enable();
            if !self.writes.queue().draining {
                return;
            }
            notified.await;
        }
    }

    fn persist(&self, chat: ChatUri, draft: Option<Message>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                chat = chat.as_str(),
                "chatDraft: no tokio runtime, the draft was not persisted"
            );
            return;
        };
        if self.writes.push((chat, draft)) {
            // Counted from now: a graceful shutdown waits for the drafts to be written.
            let pending = agenthost_services::PendingWork::begin();
            let drained = drain(Arc::clone(&self.data), Arc::clone(&self.writes));
            runtime.spawn(async move {
                drained.await;
                drop(pending);
            });
        }
    }
}

impl Contribution for ChatDraft {
    const ID: &'static str = "chatDraft";
    const ORDER: i32 = 600;
    const HOOKS: HookSet = HookSet::of(&[Hook::DidApplyClientAction, Hook::HydrateChat]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for ChatDraft {
    fn on_did_apply_client_action(&self, action: &AppliedClientAction<'_>) -> HookResult {
        let StateAction::ChatDraftChanged(change) = action.action else {
            return Ok(());
        };
        // The reducers accept the action on chat channels only; the check keeps it that way.
        let Some(chat) = action.chat else {
            return Ok(());
        };
        self.persist(chat.clone(), change.draft.clone());
        Ok(())
    }

    fn on_hydrate_chat<'a>(
        &'a self,
        context: &'a HydrationContext,
        chat: &'a RestoredChat,
    ) -> HookFuture<'a, RestoredChat> {
        Box::pin(async move {
            if chat.draft.is_some() {
                return Ok(chat.clone());
            }
            let uri = context.chat.clone();
            let draft = match self.writes.unwritten(&uri) {
                Some(draft) => draft,
                None => self.data.draft(uri).await?,
            };
            Ok(RestoredChat {
                draft,
                ..chat.clone()
            })
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

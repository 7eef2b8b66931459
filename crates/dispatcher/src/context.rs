//! The per-contribution context: identity plus centrally evicted mementos — nothing else.

use std::sync::Arc;

use crate::memento::{ChatKey, KeySegment, Memento, MementoStore, SessionKey};

/// Handed to a contribution's factory as its first argument. It holds the contribution's identity
/// and its mementos only; services are injected separately and callbacks never live here (the
/// members are pinned by `cargo xtask lint`).
#[derive(Debug, Clone)]
pub struct ContributionContext {
    id: &'static str,
    mementos: Arc<MementoStore>,
}

impl ContributionContext {
    pub(crate) fn new(id: &'static str) -> Self {
        Self {
            id,
            mementos: Arc::new(MementoStore::default()),
        }
    }

    pub(crate) fn store(&self) -> &Arc<MementoStore> {
        &self.mementos
    }

    /// The contribution's id.
    pub fn id(&self) -> &'static str {
        self.id
    }

    /// The cell of `key` for `chat` (owned by `session`, as the host's chat → session index
    /// says), created from the key's factory on first use.
    pub fn chat_memento<T: Send + 'static>(
        &self,
        key: &ChatKey<T>,
        session: &str,
        chat: &str,
        extra: &[KeySegment],
    ) -> Memento<T> {
        self.mementos.chat(key, session, chat, extra)
    }

    /// The cell of `key` for `session`, created from the key's factory on first use.
    pub fn session_memento<T: Send + 'static>(
        &self,
        key: &SessionKey<T>,
        session: &str,
        extra: &[KeySegment],
    ) -> Memento<T> {
        self.mementos.session(key, session, extra)
    }

    /// Drops exactly that chat entry; the next [`chat_memento`](Self::chat_memento) call starts
    /// from the factory again.
    pub fn delete_chat_memento<T: 'static>(
        &self,
        key: &ChatKey<T>,
        session: &str,
        chat: &str,
        extra: &[KeySegment],
    ) {
        self.mementos.delete_chat(key, session, chat, extra);
    }

    /// Drops exactly that session entry.
    pub fn delete_session_memento<T: 'static>(
        &self,
        key: &SessionKey<T>,
        session: &str,
        extra: &[KeySegment],
    ) {
        self.mementos.delete_session(key, session, extra);
    }
}

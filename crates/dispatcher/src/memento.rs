//! Mementos: per-contribution state keyed by chat or session, evicted centrally when the chat or
//! session is disposed.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// A typed extra key segment. Segments are part of an entry's identity: use them only for
/// bounded identities such as a queued message id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeySegment {
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// A number.
    Int(i64),
}

impl From<&str> for KeySegment {
    fn from(value: &str) -> Self {
        KeySegment::Str(value.to_owned())
    }
}

impl From<String> for KeySegment {
    fn from(value: String) -> Self {
        KeySegment::Str(value)
    }
}

impl From<bool> for KeySegment {
    fn from(value: bool) -> Self {
        KeySegment::Bool(value)
    }
}

impl From<i64> for KeySegment {
    fn from(value: i64) -> Self {
        KeySegment::Int(value)
    }
}

/// A chat-scoped memento key: one cell per chat (and extra segments), evicted when the chat or
/// its session is disposed. Creating a key registers nothing.
pub struct ChatKey<T> {
    pub(crate) debug_name: &'static str,
    pub(crate) create: fn() -> T,
}

/// A session-scoped memento key: one cell per session (and extra segments), evicted when the
/// session is disposed or evicted for idleness.
pub struct SessionKey<T> {
    pub(crate) debug_name: &'static str,
    pub(crate) create: fn() -> T,
}

impl<T> ChatKey<T> {
    /// A key; `create` gives the initial value of each new cell. The debug name identifies the
    /// key within its contribution (two contributions may use the same name without colliding).
    pub const fn new(debug_name: &'static str, create: fn() -> T) -> Self {
        Self { debug_name, create }
    }
}

impl<T> SessionKey<T> {
    /// A key; see [`ChatKey::new`].
    pub const fn new(debug_name: &'static str, create: fn() -> T) -> Self {
        Self { debug_name, create }
    }
}

/// A shared settable cell. Every `memento` call for the same key, resource and segments returns
/// the same cell until the entry is deleted or evicted; eviction drops the entry, not the value,
/// so code still holding an old cell keeps reading the old value.
pub struct Memento<T> {
    cell: Arc<Mutex<T>>,
}

impl<T> Clone for Memento<T> {
    fn clone(&self) -> Self {
        Self {
            cell: Arc::clone(&self.cell),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Memento<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Memento").field(&*self.lock()).finish()
    }
}

impl<T> Memento<T> {
    fn lock(&self) -> MutexGuard<'_, T> {
        // A panic while holding the lock cannot leave a cell half-written: every write is a
        // whole-value replacement or a closure the caller owns.
        self.cell.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of the value.
    pub fn get(&self) -> T
    where
        T: Clone,
    {
        self.lock().clone()
    }

    /// Replaces the value. Setting "nothing" (`None` for an `Option`) keeps the entry.
    pub fn set(&self, value: T) {
        *self.lock() = value;
    }

    /// Runs `f` on the value in place and returns its result.
    pub fn update<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.lock())
    }

    /// Whether two handles share one cell.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    Chat { session: String, chat: String },
    Session { session: String },
}

struct Entry {
    scope: Scope,
    debug_name: &'static str,
    type_id: TypeId,
    extra: Vec<KeySegment>,
    cell: Box<dyn Any + Send + Sync>,
}

impl Entry {
    fn matches(
        &self,
        scope: &Scope,
        debug_name: &str,
        type_id: TypeId,
        extra: &[KeySegment],
    ) -> bool {
        self.debug_name == debug_name
            && self.type_id == type_id
            && self.scope == *scope
            && self.extra == extra
    }
}

/// One contribution's mementos. Entries live in a list: a contribution holds few, and eviction
/// scans them all anyway.
#[derive(Default)]
pub(crate) struct MementoStore {
    entries: Mutex<Vec<Entry>>,
}

impl fmt::Debug for MementoStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MementoStore")
            .field("entries", &self.lock().len())
            .finish()
    }
}

impl MementoStore {
    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        // Entries are pushed or removed whole; a poisoned lock holds a consistent list.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get_or_create<T: Send + 'static>(
        &self,
        scope: Scope,
        debug_name: &'static str,
        create: fn() -> T,
        extra: &[KeySegment],
    ) -> Memento<T> {
        let type_id = TypeId::of::<T>();
        let mut entries = self.lock();
        let existing = entries
            .iter()
            .find(|e| e.matches(&scope, debug_name, type_id, extra))
            .and_then(|e| e.cell.downcast_ref::<Memento<T>>());
        if let Some(memento) = existing {
            return memento.clone();
        }
        let memento = Memento {
            cell: Arc::new(Mutex::new(create())),
        };
        entries.push(Entry {
            scope,
            debug_name,
            type_id,
            extra: extra.to_vec(),
            cell: Box::new(memento.clone()),
        });
        memento
    }

    fn delete<T: 'static>(&self, scope: &Scope, debug_name: &str, extra: &[KeySegment]) {
        let type_id = TypeId::of::<T>();
        self.lock()
            .retain(|e| !e.matches(scope, debug_name, type_id, extra));
    }

    pub(crate) fn chat<T: Send + 'static>(
        &self,
        key: &ChatKey<T>,
        session: &str,
        chat: &str,
        extra: &[KeySegment],
    ) -> Memento<T> {
        let scope = Scope::Chat {
            session: session.to_owned(),
            chat: chat.to_owned(),
        };
        self.get_or_create(scope, key.debug_name, key.create, extra)
    }

    pub(crate) fn session<T: Send + 'static>(
        &self,
        key: &SessionKey<T>,
        session: &str,
        extra: &[KeySegment],
    ) -> Memento<T> {
        let scope = Scope::Session {
            session: session.to_owned(),
        };
        self.get_or_create(scope, key.debug_name, key.create, extra)
    }

    pub(crate) fn delete_chat<T: 'static>(
        &self,
        key: &ChatKey<T>,
        session: &str,
        chat: &str,
        extra: &[KeySegment],
    ) {
        let scope = Scope::Chat {
            session: session.to_owned(),
            chat: chat.to_owned(),
        };
        self.delete::<T>(&scope, key.debug_name, extra);
    }

    pub(crate) fn delete_session<T: 'static>(
        &self,
        key: &SessionKey<T>,
        session: &str,
        extra: &[KeySegment],
    ) {
        let scope = Scope::Session {
            session: session.to_owned(),
        };
        self.delete::<T>(&scope, key.debug_name, extra);
    }

    /// Drops every chat entry of `chat`, all keys and segments.
    pub(crate) fn evict_chat(&self, chat: &str) {
        self.lock()
            .retain(|e| !matches!(&e.scope, Scope::Chat { chat: c, .. } if c == chat));
    }

    /// Drops every entry of `session` and every chat entry of its chats.
    pub(crate) fn evict_session(&self, session: &str) {
        self.lock().retain(|e| match &e.scope {
            Scope::Chat { session: s, .. } | Scope::Session { session: s } => s != session,
        });
    }
}

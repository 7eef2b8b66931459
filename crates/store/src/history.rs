//! [`HistoryWriter`]: the writes that make a chat's history durable — its catalog record, the
//! open-turn marker, finished turns, truncations — applied in order per chat, and kept (bounded)
//! while the store refuses them.
//!
//! Order matters only within a chat: a turn needs its chat's record, a truncation must land
//! after the turns it cuts. So each chat has its own queue, and a write the store refuses holds
//! back that chat's later writes only — never another chat's. A refusal that can be repaired
//! (the chat's record is missing: the caller can rebuild it) is repaired on the spot; one that
//! cannot (a full disk, a read-only file) is kept and tried again. Each cause is logged once,
//! when it first appears, and once more when the backlog has drained.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use agenthost_protocol::ChatUri;
use agenthost_protocol::ahp_types::state::ActiveTurn;
use serde_json::Value;

use crate::error::StoreError;
use crate::records::{ChatRecord, TurnRecord};
use crate::store::Store;

/// One write of a chat's history.
#[derive(Debug, Clone)]
pub enum HistoryWrite {
    /// The chat's catalog record, inserted unless the chat is stored already.
    Chat(Box<ChatRecord>),
    /// A turn started: its open-turn marker ([`Store::open_turn`]).
    Opened(Box<ActiveTurn>),
    /// A finished turn ([`Store::append_turn`]; with `resume_handle`, in the same transaction
    /// as the agent's handle).
    Turn {
        /// The turn.
        record: Box<TurnRecord>,
        /// The chat's modification time after it.
        modified_at: String,
        /// The agent's handle to resume the conversation, when it has one.
        resume_handle: Option<Value>,
    },
    /// A truncation keeping the turns through `keep_through` (`None`: none).
    Truncate {
        /// The last turn kept.
        keep_through: Option<String>,
    },
}

/// Rebuilds the catalog record of a chat whose record the store does not have (the caller's
/// live state knows it); `None` when the chat is gone.
pub type Repair<'a> = &'a dyn Fn(&ChatUri) -> Option<ChatRecord>;

/// The default number of kept writes past which [`HistoryWriter::refusal`] refuses new turns.
pub const DEFAULT_BACKLOG_LIMIT: usize = 4096;

/// Applies [`HistoryWrite`]s in order per chat; see the module documentation.
pub struct HistoryWriter {
    store: Store,
    limit: AtomicUsize,
    backlog: Mutex<Backlog>,
}

impl std::fmt::Debug for HistoryWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryWriter")
            .field("limit", &self.limit.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Backlog {
    chats: BTreeMap<String, (ChatUri, VecDeque<HistoryWrite>)>,
    len: usize,
    peak: usize,
    /// Causes logged since the backlog was last empty.
    reported: HashSet<String>,
    /// The latest cause, for the refusal message.
    cause: Option<String>,
}

/// What became of one attempt at a chat's front write.
enum Attempt {
    Written,
    Dropped,
    Kept(StoreError),
}

impl HistoryWriter {
    /// A writer over `store` that refuses new turns once `limit` writes are kept.
    pub fn new(store: Store, limit: usize) -> Self {
        Self {
            store,
            limit: AtomicUsize::new(limit.max(1)),
            backlog: Mutex::default(),
        }
    }

    /// Changes the number of kept writes past which new turns are refused.
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit.max(1), Ordering::Relaxed);
    }

    fn backlog(&self) -> MutexGuard<'_, Backlog> {
        self.backlog.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `write` behind `chat`'s kept writes and writes what it can of that chat's queue
    /// now (when nothing is kept, exactly `write`: one transaction). Other chats' kept writes
    /// wait for [`flush`](Self::flush).
    pub fn submit(&self, chat: &ChatUri, write: HistoryWrite, repair: Repair<'_>) {
        let mut backlog = self.backlog();
        let entry = backlog
            .chats
            .entry(chat.as_str().to_owned())
            .or_insert_with(|| (chat.clone(), VecDeque::new()));
        entry.1.push_back(write);
        backlog.len += 1;
        self.drain(&mut backlog, Some(chat.as_str()), repair);
        backlog.peak = backlog.peak.max(backlog.len);
    }

    /// Tries every kept write again, in order per chat; returns how many are still kept.
    pub fn flush(&self, repair: Repair<'_>) -> usize {
        let mut backlog = self.backlog();
        self.drain(&mut backlog, None, repair);
        backlog.len
    }

    /// The chats with kept writes.
    pub fn kept_chats(&self) -> Vec<ChatUri> {
        self.backlog()
            .chats
            .values()
            .map(|(chat, _)| chat.clone())
            .collect()
    }

    /// How many writes are kept now.
    pub fn pending(&self) -> usize {
        self.backlog().len
    }

    /// The most writes ever kept at once (0 while the store took every write at once).
    pub fn peak(&self) -> usize {
        self.backlog().peak
    }

    /// Why a new turn must be refused: the kept writes reached the limit (more turns would only
    /// grow them). `None` while the backlog is below it.
    pub fn refusal(&self) -> Option<String> {
        let backlog = self.backlog();
        (backlog.len >= self.limit.load(Ordering::Relaxed)).then(|| {
            format!(
                "the host cannot store chat history: {} writes are waiting for the session \
                 database ({}); new turns are refused until it takes them again",
                backlog.len,
                backlog.cause.as_deref().unwrap_or("no cause reported"),
            )
        })
    }

    /// Writes the front of `only`'s queue (or of every chat's) until one is refused.
    fn drain(&self, backlog: &mut Backlog, only: Option<&str>, repair: Repair<'_>) {
        let keys: Vec<String> = match only {
            Some(chat) => vec![chat.to_owned()],
            None => backlog.chats.keys().cloned().collect(),
        };
        for key in keys {
            while let Some((chat, queue)) = backlog.chats.get_mut(&key) {
                let Some(front) = queue.front() else {
                    backlog.chats.remove(&key);
                    break;
                };
                let chat = chat.clone();
                match self.attempt(&chat, front, repair) {
                    Attempt::Written | Attempt::Dropped => {
                        queue.pop_front();
                        backlog.len -= 1;
                    }
                    Attempt::Kept(error) => {
                        let cause = error.to_string();
                        if backlog.reported.insert(cause.clone()) {
                            tracing::error!(chat = %chat, %error, kept = backlog.len,
                                "chat history could not be stored; it is kept (in order, per chat) and written once the session database takes it");
                        }
                        backlog.cause = Some(cause);
                        break;
                    }
                }
            }
        }
        if backlog.len == 0 && !backlog.reported.is_empty() {
            tracing::info!(
                "the session database takes writes again; every kept history write is stored"
            );
            backlog.reported.clear();
            backlog.cause = None;
        }
    }

    /// One write, with the chat's record repaired once when the store does not have it.
    fn attempt(&self, chat: &ChatUri, write: &HistoryWrite, repair: Repair<'_>) -> Attempt {
        let mut result = self.apply(chat, write);
        if matches!(result, Err(StoreError::NotFound { kind: "chat", .. }))
            && let Some(record) = repair(chat)
        {
            result = self
                .store
                .ensure_chat(&record)
                .and_then(|_| self.apply(chat, write));
        }
        match result {
            Ok(()) => Attempt::Written,
            Err(error @ StoreError::NotFound { .. }) => {
                // A chat the host no longer has, a deleted session, a truncation to a turn that
                // was never stored: waiting would not change that.
                tracing::warn!(chat = %chat, %error, "a history write that cannot apply was dropped");
                Attempt::Dropped
            }
            Err(error) => Attempt::Kept(error),
        }
    }

    fn apply(&self, chat: &ChatUri, write: &HistoryWrite) -> crate::Result<()> {
        match write {
            HistoryWrite::Chat(record) => self.store.ensure_chat(record).map(|_| ()),
            HistoryWrite::Opened(turn) => self.store.open_turn(chat, turn),
            HistoryWrite::Turn {
                record,
                modified_at,
                resume_handle: Some(handle),
            } => self
                .store
                .append_turn_with_resume_handle(chat, record, modified_at, Some(handle)),
            HistoryWrite::Turn {
                record,
                modified_at,
                resume_handle: None,
            } => self.store.append_turn(chat, record, modified_at),
            HistoryWrite::Truncate { keep_through } => self
                .store
                .truncate_turns(chat, keep_through.as_deref())
                .map(|_| ()),
        }
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;

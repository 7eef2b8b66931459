//! [`TurnTracker`]: the lifecycle of each chat's active turn.

use std::sync::Mutex;
use std::time::Instant;

use agenthost_protocol::ahp_types::state::UsageInfo;

use crate::bounded::BoundedMap;

/// Where a turn is between its start and its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStage {
    /// Admitted; the send tail is preparing it (working directories, checkpoint, model).
    Preparing,
    /// Handed to the provider.
    Sending,
    /// The provider is producing output.
    Responding,
}

/// What blocks a turn: the owner of the blocking entry of the session's `inputNeeded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnBlock {
    /// A tool call waits for confirmation.
    ToolConfirmation,
    /// A client runs a tool.
    ClientExecution,
    /// A tool needs authentication.
    ToolAuthentication,
    /// The agent asked the user for input.
    UserInput,
}

/// How a tracked turn ended (the turn-end reasons that finish a started turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnCompletion {
    /// Completed.
    Success,
    /// Cancelled by the client or the provider.
    Cancelled,
    /// Failed; `resumable` means a retry may reopen it.
    Error {
        /// Whether the logical turn is over.
        resumable: bool,
    },
    /// Refused before it started.
    Rejected,
    /// A host command handled it.
    LocalCommand,
}

/// A tracked turn, as a query returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSnapshot {
    /// The turn id.
    pub turn_id: String,
    /// Where it is.
    pub stage: TurnStage,
    /// What blocks it, if anything (the most recent block).
    pub blocked: Option<TurnBlock>,
    /// How many times it was blocked.
    pub times_blocked: u32,
    /// Whether a steering message was handed to the provider during the turn.
    pub steered: bool,
    /// The usage reported so far (the latest report).
    pub usage: Option<UsageInfo>,
    /// When the tracker saw it start.
    pub started_at: Instant,
}

/// Tunables of the in-memory trackers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrackerConfig {
    /// Most entries held (turns: one per chat; tool calls: one per call). Past it the oldest
    /// entry is dropped with a warning — a missed completion must not grow memory forever.
    pub capacity: usize,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        Self { capacity: 10_000 }
    }
}

/// Per-chat turn lifecycle, for telemetry and the hang watchdog. Calls about a turn that is not
/// the chat's tracked turn are ignored. `chat` is the chat's URI.
pub trait TurnTracker: Send + Sync {
    /// A turn started in `chat` (replacing any turn still tracked there).
    fn turn_started(&self, chat: &str, turn_id: &str);
    /// The turn reached `stage`.
    fn turn_stage(&self, chat: &str, turn_id: &str, stage: TurnStage);
    /// The turn waits on `block`.
    fn turn_blocked(&self, chat: &str, turn_id: &str, block: TurnBlock);
    /// Nothing blocks the turn any more.
    fn turn_unblocked(&self, chat: &str, turn_id: &str);
    /// A steering message reached the provider during the turn.
    fn steering_received(&self, chat: &str, turn_id: &str);
    /// The turn's usage so far.
    fn usage(&self, chat: &str, turn_id: &str, usage: &UsageInfo);
    /// The turn ended; it is no longer tracked.
    fn turn_completed(&self, chat: &str, turn_id: &str, completion: TurnCompletion);
    /// The chat went away; its turn is no longer tracked.
    fn clear_chat(&self, chat: &str);
    /// The tracked turn of `chat`.
    fn active_turn(&self, chat: &str) -> Option<TurnSnapshot>;
}

/// In-memory, bounded: one entry per chat with a turn in flight, removed on completion or
/// clear. Every transition is a `tracing` event (target `agenthost_services::turns`).
#[derive(Debug)]
pub struct DefaultTurnTracker {
    turns: Mutex<BoundedMap<String, TurnSnapshot>>,
}

impl Default for DefaultTurnTracker {
    fn default() -> Self {
        Self::new(TrackerConfig::default())
    }
}

impl DefaultTurnTracker {
    /// A tracker holding at most `config.capacity` turns.
    pub fn new(config: TrackerConfig) -> Self {
        Self {
            turns: Mutex::new(BoundedMap::new(config.capacity)),
        }
    }

    /// How many turns are tracked.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no turn is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BoundedMap<String, TurnSnapshot>> {
        // Updates are single field writes: a poisoned lock still holds valid entries.
        self.turns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, chat: &str, turn_id: &str, f: impl FnOnce(&mut TurnSnapshot)) {
        let mut turns = self.lock();
        match turns.get_mut(&chat.to_owned()) {
            Some(turn) if turn.turn_id == turn_id => f(turn),
            _ => tracing::debug!(chat, turn_id, "turn tracker: not the tracked turn, ignored"),
        }
    }
}

impl TurnTracker for DefaultTurnTracker {
    fn turn_started(&self, chat: &str, turn_id: &str) {
        tracing::debug!(chat, turn_id, "turn started");
        let snapshot = TurnSnapshot {
            turn_id: turn_id.to_owned(),
            stage: TurnStage::Preparing,
            blocked: None,
            times_blocked: 0,
            steered: false,
            usage: None,
            started_at: Instant::now(),
        };
        if let Some((evicted, turn)) = self.lock().insert(chat.to_owned(), snapshot) {
            tracing::warn!(chat = %evicted, turn_id = %turn.turn_id,
                "turn tracker full: dropped the oldest turn (its completion was never reported)");
        }
    }

    fn turn_stage(&self, chat: &str, turn_id: &str, stage: TurnStage) {
        tracing::debug!(chat, turn_id, ?stage, "turn stage");
        self.update(chat, turn_id, |turn| turn.stage = stage);
    }

    fn turn_blocked(&self, chat: &str, turn_id: &str, block: TurnBlock) {
        tracing::debug!(chat, turn_id, ?block, "turn blocked");
        self.update(chat, turn_id, |turn| {
            if turn.blocked.is_none() {
                turn.times_blocked = turn.times_blocked.saturating_add(1);
            }
            turn.blocked = Some(block);
        });
    }

    fn turn_unblocked(&self, chat: &str, turn_id: &str) {
        tracing::debug!(chat, turn_id, "turn unblocked");
        self.update(chat, turn_id, |turn| turn.blocked = None);
    }

    fn steering_received(&self, chat: &str, turn_id: &str) {
        tracing::debug!(chat, turn_id, "steering received");
        self.update(chat, turn_id, |turn| turn.steered = true);
    }

    fn usage(&self, chat: &str, turn_id: &str, usage: &UsageInfo) {
        self.update(chat, turn_id, |turn| turn.usage = Some(usage.clone()));
    }

    fn turn_completed(&self, chat: &str, turn_id: &str, completion: TurnCompletion) {
        let mut turns = self.lock();
        let key = chat.to_owned();
        if turns.get(&key).is_some_and(|turn| turn.turn_id == turn_id)
            && let Some(turn) = turns.remove(&key)
        {
            tracing::info!(
                chat,
                turn_id,
                ?completion,
                elapsed_ms =
                    u64::try_from(turn.started_at.elapsed().as_millis()).unwrap_or(u64::MAX),
                times_blocked = turn.times_blocked,
                "turn completed"
            );
        }
    }

    fn clear_chat(&self, chat: &str) {
        if self.lock().remove(&chat.to_owned()).is_some() {
            tracing::debug!(chat, "turn tracker: chat cleared");
        }
    }

    fn active_turn(&self, chat: &str) -> Option<TurnSnapshot> {
        self.lock().get(&chat.to_owned()).cloned()
    }
}

#[cfg(test)]
#[path = "turns_tests.rs"]
mod tests;

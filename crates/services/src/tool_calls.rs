//! [`ToolCallTracker`]: the lifecycle of each tool call.

use std::sync::Mutex;
use std::time::Instant;

use agenthost_protocol::ToolCallKey;

use crate::bounded::BoundedMap;
use crate::turns::TrackerConfig;

/// Where a tool call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallPhase {
    /// Announced by the agent.
    Started,
    /// Running.
    Executing,
}

/// What a tool call waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallBlock {
    /// Confirmation (before running, or of its result).
    Confirmation,
    /// A client executes it.
    ClientExecution,
    /// Authentication.
    Authentication,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallOutcome {
    /// It ran and succeeded.
    Success,
    /// It ran and failed.
    Failure,
    /// The user or a policy denied it.
    Denied,
    /// Its turn ended before it completed.
    Cancelled,
}

/// A tracked tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallSnapshot {
    /// The tool's name.
    pub tool_name: String,
    /// Where it is.
    pub phase: ToolCallPhase,
    /// What it waits on, if anything.
    pub blocked: Option<ToolCallBlock>,
    /// When the tracker saw it start.
    pub started_at: Instant,
}

/// Per-tool-call lifecycle telemetry. Calls about an untracked call are ignored (except
/// `started`).
pub trait ToolCallTracker: Send + Sync {
    /// The agent announced the call.
    fn started(&self, call: &ToolCallKey, tool_name: &str);
    /// The call runs.
    fn executing(&self, call: &ToolCallKey);
    /// The call waits on `block`.
    fn blocked(&self, call: &ToolCallKey, block: ToolCallBlock);
    /// The call no longer waits.
    fn unblocked(&self, call: &ToolCallKey);
    /// The call ended; it is no longer tracked.
    fn completed(&self, call: &ToolCallKey, outcome: ToolCallOutcome);
    /// Every call of `chat` still tracked is dropped (the turn ended, the chat was truncated or
    /// disposed). With `turn_id`, only that turn's calls.
    fn clear(&self, chat: &str, turn_id: Option<&str>);
    /// A tracked call.
    fn get(&self, call: &ToolCallKey) -> Option<ToolCallSnapshot>;
}

/// In-memory, bounded: one entry per call in flight, removed on completion or clear. Every
/// transition is a `tracing` event.
#[derive(Debug)]
pub struct DefaultToolCallTracker {
    calls: Mutex<BoundedMap<ToolCallKey, ToolCallSnapshot>>,
}

impl Default for DefaultToolCallTracker {
    fn default() -> Self {
        Self::new(TrackerConfig::default())
    }
}

impl DefaultToolCallTracker {
    /// A tracker holding at most `config.capacity` calls.
    pub fn new(config: TrackerConfig) -> Self {
        Self {
            calls: Mutex::new(BoundedMap::new(config.capacity)),
        }
    }

    /// How many calls are tracked.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no call is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BoundedMap<ToolCallKey, ToolCallSnapshot>> {
        // Updates are single field writes: a poisoned lock still holds valid entries.
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, call: &ToolCallKey, f: impl FnOnce(&mut ToolCallSnapshot)) {
        match self.lock().get_mut(call) {
            Some(snapshot) => f(snapshot),
            None => tracing::debug!(%call, "tool-call tracker: untracked call, ignored"),
        }
    }
}

impl ToolCallTracker for DefaultToolCallTracker {
    fn started(&self, call: &ToolCallKey, tool_name: &str) {
        tracing::debug!(%call, tool_name, "tool call started");
        let snapshot = ToolCallSnapshot {
            tool_name: tool_name.to_owned(),
            phase: ToolCallPhase::Started,
            blocked: None,
            started_at: Instant::now(),
        };
        if let Some((evicted, _)) = self.lock().insert(call.clone(), snapshot) {
            tracing::warn!(call = %evicted,
                "tool-call tracker full: dropped the oldest call (its completion was never reported)");
        }
    }

    fn executing(&self, call: &ToolCallKey) {
        tracing::debug!(%call, "tool call executing");
        self.update(call, |c| c.phase = ToolCallPhase::Executing);
    }

    fn blocked(&self, call: &ToolCallKey, block: ToolCallBlock) {
        tracing::debug!(%call, ?block, "tool call blocked");
        self.update(call, |c| c.blocked = Some(block));
    }

    fn unblocked(&self, call: &ToolCallKey) {
        tracing::debug!(%call, "tool call unblocked");
        self.update(call, |c| c.blocked = None);
    }

    fn completed(&self, call: &ToolCallKey, outcome: ToolCallOutcome) {
        if let Some(snapshot) = self.lock().remove(call) {
            tracing::info!(
                %call, tool_name = %snapshot.tool_name, ?outcome,
                elapsed_ms = u64::try_from(snapshot.started_at.elapsed().as_millis()).unwrap_or(u64::MAX),
                "tool call completed"
            );
        }
    }

    fn clear(&self, chat: &str, turn_id: Option<&str>) {
        let removed = self
            .lock()
            .retain(|key, _| key.chat != chat || turn_id.is_some_and(|turn| key.turn_id != turn));
        if removed > 0 {
            tracing::debug!(chat, turn_id, removed, "tool calls cleared");
        }
    }

    fn get(&self, call: &ToolCallKey) -> Option<ToolCallSnapshot> {
        self.lock().get(call).cloned()
    }
}

#[cfg(test)]
#[path = "tool_calls_tests.rs"]
mod tests;

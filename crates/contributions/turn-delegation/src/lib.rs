//! `turnDelegation` (order 50, `onOutgoingTurn` + `onHydrateTurns`): keeps the agent-delegation
//! mark of a turn — the turn was handed over by an agent (another chat or thread) rather than
//! typed by the user — across a restart.
//!
//! AHP 1.0 has no delegation field: the mark travels in the message's open `_meta` bag under
//! [`DELEGATION_META_KEY`] (`vscode.chat.delegation`, the key VS Code's agent host reads and
//! writes), as an object naming its source — either `{sourceThreadId}` or `{sourceSession,
//! sourceChat?, sourceTurnId?, messageId?, revision?}`. [`delegation_of`] reads and validates it;
//! unrecognised fields are dropped, a value naming no source is not a delegation.
//!
//! - **Outgoing**: a message carrying a delegation has it persisted keyed by turn id in the
//!   chat's store through [`SessionDataStore::set_delegation`] (the store's `delegations`
//!   table; a later write for the same turn replaces the row). The hook contributes nothing to
//!   the send — no instruction, the text unchanged. Messages without a delegation, empty turn
//!   ids and channels that are not chats write nothing.
//! - **Hydrate**: a restored turn whose id has a stored delegation, and whose message does not
//!   already carry a valid one, gets it back: its origin becomes `agent` and the delegation is
//!   merged into its `_meta` (other keys kept). A turn that already carries one is left as it
//!   is (it was stored with the turn and is at least as recent); malformed stored values and
//!   turns without a row pass through unchanged. A failed read is a hook error: the dispatcher
//!   logs it and passes the previous stage's turns on.
//!
//! The central decision: **the send never waits for the store.** The write is queued and run by
//! a task on the current tokio runtime (queued writes run one at a time in queue order); a
//! failing write is logged (`warn`) and dropped, never a failed hook or a panic — losing the
//! mark costs only its restoration. Hydration first waits for the queue so a mark written a
//! moment earlier is visible. [`TurnDelegation::flush`] waits for the queue.
//!
//! Matching restored turns through the provider's own turn / event id (a second way to find
//! them) needs an event-id bridge that `SessionDataStore` does not offer yet; turns are matched by
//! their protocol turn id only.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookFuture, HookSet,
    HydrationContext, MissingService, OutgoingTurn, SendContribution, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::{Message, MessageKind, MessageOrigin, Turn};
use agenthost_services::{SessionDataStore, WriteQueue};
use serde_json::{Map, Value};

/// The `_meta` key of a message's delegation metadata.
pub const DELEGATION_META_KEY: &str = "vscode.chat.delegation";

/// The `turnDelegation` contribution. Register it with
/// `dispatcher.register::<TurnDelegation>()`; it needs `dyn SessionDataStore` in the registry.
pub struct TurnDelegation {
    data: Arc<dyn SessionDataStore>,
    writes: Arc<WriteQueue>,
}

impl std::fmt::Debug for TurnDelegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnDelegation").finish_non_exhaustive()
    }
}

impl TurnDelegation {
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

    /// Waits until every delegation write queued so far has finished (or failed and been
    /// logged).
    pub async fn flush(&self) {
        self.writes.flush().await;
    }
}

/// The validated delegation metadata of `message` (its `_meta` entry under
/// [`DELEGATION_META_KEY`]), or `None` when it carries none or one naming no source.
pub fn delegation_of(message: &Message) -> Option<Value> {
    parse_delegation(message.meta.as_ref()?.get(DELEGATION_META_KEY)?)
}

/// `value` reduced to the recognised delegation fields: `{sourceThreadId}` when it names a
/// thread, else `{sourceSession, sourceChat?, sourceTurnId?, messageId?, revision?}`; `None`
/// when it is not an object naming a non-empty source.
pub fn parse_delegation(value: &Value) -> Option<Value> {
    let candidate = value.as_object()?;
    let non_empty = |key: &str| {
        candidate
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| Value::String(s.to_owned()))
    };
    let mut parsed = Map::new();
    if let Some(thread) = non_empty("sourceThreadId") {
        parsed.insert("sourceThreadId".into(), thread);
        return Some(Value::Object(parsed));
    }
    parsed.insert("sourceSession".into(), non_empty("sourceSession")?);
    for key in ["sourceChat", "sourceTurnId"] {
        if let Some(Value::String(s)) = candidate.get(key) {
            parsed.insert(key.into(), Value::String(s.clone()));
        }
    }
    if let Some(message_id) = non_empty("messageId") {
        parsed.insert("messageId".into(), message_id);
    }
    if let Some(revision) = candidate
        .get("revision")
        .and_then(Value::as_u64)
        .filter(|r| *r > 0)
    {
        parsed.insert("revision".into(), Value::from(revision));
    }
    Some(Value::Object(parsed))
}

/// `turn` marked as delegated: origin `agent`, `delegation` merged into its message's `_meta`.
fn apply_delegation(turn: &mut Turn, delegation: Value) {
    turn.message.origin = MessageOrigin {
        kind: MessageKind::Agent,
    };
    turn.message
        .meta
        .get_or_insert_with(Default::default)
        .insert(DELEGATION_META_KEY.to_owned(), delegation);
}

impl Contribution for TurnDelegation {
    const ID: &'static str = "turnDelegation";
    const ORDER: i32 = 50;
    const HOOKS: HookSet = HookSet::of(&[Hook::OutgoingTurn, Hook::HydrateTurns]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for TurnDelegation {
    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            let Some(delegation) = delegation_of(&turn.message) else {
                return Ok(None);
            };
            if turn.turn_id.is_empty() {
                return Ok(None);
            }
            let chat = turn.chat.clone();
            let turn_id = turn.turn_id.clone();
            let write = self
                .data
                .set_delegation(chat.clone(), &turn_id, Some(delegation));
            self.writes.push(Box::pin(async move {
                if let Err(error) = write.await {
                    tracing::warn!(chat = %chat, turn_id, %error, "turnDelegation: could not persist the turn's delegation");
                }
            }));
            // Nothing for the send: no instruction, the text unchanged.
            Ok(None)
        })
    }

    fn on_hydrate_turns<'a>(
        &'a self,
        context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> HookFuture<'a, Vec<Turn>> {
        Box::pin(async move {
            if turns.is_empty() {
                return Ok(Vec::new());
            }
            let chat = context.chat.clone();
            // A delegation queued a moment ago must be visible to the read.
            self.writes.flush().await;
            let stored = self.data.delegations(chat).await?;
            let mut turns = turns.to_vec();
            if stored.is_empty() {
                return Ok(turns);
            }
            let stored: HashMap<_, _> = stored.into_iter().collect();
            for turn in &mut turns {
                if delegation_of(&turn.message).is_some() {
                    continue;
                }
                if let Some(delegation) = stored.get(&turn.id).and_then(parse_delegation) {
                    apply_delegation(turn, delegation);
                }
            }
            Ok(turns)
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

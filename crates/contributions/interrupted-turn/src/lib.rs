//! `interruptedTurn` (order 150, `onHydrateTurns`): a turn the host died during comes back as an
//! interrupted turn. See the crate README for the marker's life cycle.
//!
//! On hydration the chat's open turn ([`SessionDataStore::open_turn`]) — a turn that started
//! and was never stored as finished — is appended after the stored turns as the user's message
//! and an `executionInterrupted` error part ([`INTERRUPTED_MESSAGE`], not resumable), and stored
//! as the chat's finished turn ([`SessionDataStore::finish_open_turn`], which deletes the marker
//! in the same transaction). A marker whose turn is stored (a resumed turn) replaces it in
//! place. A failed
//! read is a hook error (the dispatcher keeps the previous stage's turns); a failed write is
//! logged and the turn still shown — it is appended again on the next restore.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookFuture, HookSet,
    HydrationContext, MissingService, ServiceRegistry,
};
use agenthost_protocol::ahp_types::state::{ActiveTurn, ErrorInfo, ErrorResponsePart, Turn};
use agenthost_reducers::states::errored_turn;
use agenthost_services::SessionDataStore;

/// The error type of an interrupted turn's error part.
pub const INTERRUPTED_ERROR_TYPE: &str = "executionInterrupted";

/// The message of an interrupted turn's error part.
pub const INTERRUPTED_MESSAGE: &str = "The agent was interrupted before this request finished.";

/// The `interruptedTurn` contribution. Register it with
/// `dispatcher.register::<InterruptedTurn>()`; it needs `dyn SessionDataStore` in the registry.
pub struct InterruptedTurn {
    data: Arc<dyn SessionDataStore>,
}

impl std::fmt::Debug for InterruptedTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterruptedTurn").finish_non_exhaustive()
    }
}

impl InterruptedTurn {
    /// Reads and finishes open turns through `data`.
    pub fn new(data: Arc<dyn SessionDataStore>) -> Self {
        Self { data }
    }
}

/// The finished form of an open turn: its message and what it had when the marker was last
/// written, tool calls still in flight cancelled (as the canonical reducer ends a turn on
/// `chat/error`), then the interruption; state `error`, duration unknown.
pub fn interrupted(open: ActiveTurn) -> Turn {
    errored_turn(
        open,
        ErrorResponsePart {
            error: ErrorInfo {
                error_type: INTERRUPTED_ERROR_TYPE.to_owned(),
                message: INTERRUPTED_MESSAGE.to_owned(),
                stack: None,
                meta: None,
            },
            resumable: Some(false),
        },
    )
}

impl Contribution for InterruptedTurn {
    const ID: &'static str = "interruptedTurn";
    const ORDER: i32 = 150;
    const HOOKS: HookSet = HookSet::of(&[Hook::HydrateTurns]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self::new(services.get::<dyn SessionDataStore>()?))
    }
}

impl ChatContribution for InterruptedTurn {
    fn on_hydrate_turns<'a>(
        &'a self,
        context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> HookFuture<'a, Vec<Turn>> {
        Box::pin(async move {
            let mut turns = turns.to_vec();
            let chat = context.chat.clone();
            let Some(open) = self.data.open_turn(chat.clone()).await? else {
                return Ok(turns);
            };
            // A marker is deleted in the transaction that stores its finished turn, so one that
            // names a stored turn is newer than it: that turn was resumed (`chat/turnResume`)
            // and the host died before it finished again. It is replaced in place.
            let turn = interrupted(open);
            match turns.iter_mut().find(|t| t.id == turn.id) {
                Some(stored) => *stored = turn.clone(),
                None => turns.push(turn.clone()),
            }
            if let Err(error) = self.data.finish_open_turn(chat, turn).await {
                tracing::warn!(chat = context.chat.as_str(), %error,
                    "interruptedTurn: the interrupted turn could not be stored; it is shown and stored at the next restore");
            }
            Ok(turns)
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

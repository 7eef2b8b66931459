//! `checkpointAndChangeset` (order 100, `onTurnEnd`): when a turn really ends — `success`, or
//! an `error` that is not resumable — captures the turn's git checkpoint and refreshes the
//! session's changesets. Cancelled turns, rejected requests, local commands and resumable errors
//! are left alone: the logical turn is not over, or never started.
//!
//! The sequence, per turn end:
//!
//! 1. at once, [`ChangesetService::schedule_recompute`] marks the live changesets of the turn
//!    and of the session `recomputing`;
//! 2. the checkpoint capture starts (session, chat, turn id, the effective working directories
//!    from [`Configuration::working_directories`]) **without being awaited** — the hook returns
//!    while git works;
//! 3. when the capture settles, either way, [`ChangesetService::refresh_session`] recomputes
//!    the session's changesets (`auto`);
//! 4. a failed capture logs exactly one warning:
//!    `Turn checkpoint capture failed for <session>/<turnId>: <message>`.
//!
//! Order 100 puts the capture before any later changeset-related work of the same turn end.
//! Captures run in turn-end order on the contribution's [`WriteQueue`] (so the host's graceful
//! shutdown waits for them); without a tokio runtime nothing can run one and it is dropped with
//! a warning. [`CheckpointAndChangeset::flush`] waits for the captures queued so far.
//!
//! The baseline (when a session's working directories are resolved) and the turn-start
//! capture (right before the send) are send mechanics: the session service and the
//! orchestrator do them.
#![deny(missing_docs)]

use std::path::PathBuf;
use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookResult, HookSet, MissingService,
    ServiceRegistry, TurnEnd, TurnEndReason,
};
use agenthost_protocol::uri::file_uri_to_path;
use agenthost_services::{ChangesetService, CheckpointService, Configuration, WriteQueue};

/// Whether a turn that ended for `reason` gets a turn-end checkpoint: `success` and errors that
/// are not resumable.
pub fn captures(reason: &TurnEndReason) -> bool {
    match reason {
        TurnEndReason::Success => true,
        TurnEndReason::Error { resumable, .. } => !resumable,
        TurnEndReason::Cancelled | TurnEndReason::Rejected { .. } | TurnEndReason::LocalCommand => {
            false
        }
    }
}

/// The warning a failed capture logs.
pub fn failure_message(session: &str, turn_id: &str, error: &dyn std::fmt::Display) -> String {
    format!("Turn checkpoint capture failed for {session}/{turn_id}: {error}")
}

/// The `checkpointAndChangeset` contribution. Register it with
/// `dispatcher.register::<CheckpointAndChangeset>()`; it needs `dyn CheckpointService`,
/// `dyn ChangesetService` and `dyn Configuration` in the registry.
pub struct CheckpointAndChangeset {
    checkpoints: Arc<dyn CheckpointService>,
    changesets: Arc<dyn ChangesetService>,
    configuration: Arc<dyn Configuration>,
    captures: Arc<WriteQueue>,
}

impl std::fmt::Debug for CheckpointAndChangeset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointAndChangeset")
            .finish_non_exhaustive()
    }
}

impl CheckpointAndChangeset {
    /// Captures through `checkpoints`, refreshes `changesets`, reads the directories from
    /// `configuration`.
    pub fn new(
        checkpoints: Arc<dyn CheckpointService>,
        changesets: Arc<dyn ChangesetService>,
        configuration: Arc<dyn Configuration>,
    ) -> Self {
        Self {
            checkpoints,
            changesets,
            configuration,
            captures: Arc::new(WriteQueue::new(<Self as Contribution>::ID)),
        }
    }

    /// Resolves the three services from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn CheckpointService>()?,
            services.get::<dyn ChangesetService>()?,
            services.get::<dyn Configuration>()?,
        ))
    }

    /// Waits until every capture queued so far has settled and its refresh has run.
    pub async fn flush(&self) {
        self.captures.flush().await;
    }

    fn capture(&self, turn: &TurnEnd, turn_id: String) {
        self.changesets
            .schedule_recompute(&turn.session, &turn.chat, Some(&turn_id));
        let (session, chat) = (turn.session.clone(), turn.chat.clone());
        let directories: Vec<PathBuf> = self
            .configuration
            .working_directories(&turn.session, Some(&turn.chat))
            .iter()
            .filter_map(|uri| file_uri_to_path(uri).ok())
            .collect();
        let checkpoints = self.checkpoints.clone();
        let changesets = self.changesets.clone();
        self.captures.push(Box::pin(async move {
            let captured = checkpoints
                .capture_turn_end(&session, &chat, &turn_id, &directories)
                .await;
            if let Err(error) = captured {
                tracing::warn!("{}", failure_message(session.as_str(), &turn_id, &error));
            }
            changesets.refresh_session(&session).await;
        }));
    }
}

impl Contribution for CheckpointAndChangeset {
    const ID: &'static str = "checkpointAndChangeset";
    const ORDER: i32 = 100;
    const HOOKS: HookSet = HookSet::of(&[Hook::TurnEnd]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for CheckpointAndChangeset {
    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        if !captures(&turn.reason) {
            return Ok(());
        }
        let Some(turn_id) = turn.turn_id.clone() else {
            return Ok(());
        };
        self.capture(turn, turn_id);
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

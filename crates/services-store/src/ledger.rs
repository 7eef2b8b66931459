//! [`StoreLedger`]: the [`CheckpointLedger`] kept in the session database, so the checkpoint
//! ref of every turn survives a host restart.
//!
//! It answers exactly as [`agenthost_checkpoint_api::MemoryLedger`] does: the store keeps each
//! session's rows in turn order and this type derives every answer from them. Its methods block
//! on SQLite, as the trait requires (the service calls them from its blocking tasks).

use std::sync::Arc;

use agenthost_checkpoint_api::{CheckpointLedger, LedgerError};
use agenthost_protocol::SessionUri;
use agenthost_store::Store;

/// A [`CheckpointLedger`] over the host's [`Store`] (its `checkpoint_turns` table).
#[derive(Debug, Clone)]
pub struct StoreLedger {
    store: Arc<Store>,
}

impl StoreLedger {
    /// A ledger writing to `store`.
    pub fn new(store: Arc<Store>) -> Self {
        Self { store }
    }

    /// Forgets the session's rows (the refs stay in git). Deleting the session from the store
    /// does this too.
    pub fn remove_session(&self, session: &SessionUri) -> Result<(), LedgerError> {
        self.store
            .delete_checkpoint_rows(session)
            .map_err(LedgerError::new)
    }

    /// The session's rows as `(turn, checkpoint ref)`, in turn order.
    fn rows(&self, session: &SessionUri) -> Result<Vec<(String, Option<String>)>, LedgerError> {
        self.store
            .checkpoint_rows(session)
            .map_err(LedgerError::new)
    }
}

impl CheckpointLedger for StoreLedger {
    fn ensure_turn(&self, session: &SessionUri, turn: &str) -> Result<(), LedgerError> {
        self.store
            .checkpoint_ensure_turn(session, turn)
            .map_err(LedgerError::new)
    }

    fn set_turn_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
        ref_name: &str,
    ) -> Result<(), LedgerError> {
        self.store
            .set_checkpoint_ref(session, turn, ref_name)
            .map_err(LedgerError::new)
    }

    fn turn_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
    ) -> Result<Option<String>, LedgerError> {
        Ok(self
            .rows(session)?
            .into_iter()
            .find(|(row_turn, _)| row_turn == turn)
            .and_then(|(_, checkpoint_ref)| checkpoint_ref))
    }

    fn previous_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
    ) -> Result<Option<String>, LedgerError> {
        let mut rows = self.rows(session)?;
        if let Some(position) = rows.iter().position(|(row_turn, _)| row_turn == turn) {
            rows.truncate(position);
        }
        Ok(rows
            .into_iter()
            .rev()
            .find_map(|(_, checkpoint_ref)| checkpoint_ref))
    }

    fn all_checkpoint_refs(&self, session: &SessionUri) -> Result<Vec<String>, LedgerError> {
        Ok(self
            .rows(session)?
            .into_iter()
            .filter_map(|(_, checkpoint_ref)| checkpoint_ref)
            .collect())
    }
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;

//! [`CheckpointLedger`]: where the service records which ref belongs to which turn — the
//! session database's `turns.checkpoint_ref` column, behind a trait because this crate
//! may not depend on the store.

use std::collections::HashMap;
use std::sync::Mutex;

use agenthost_protocol::SessionUri;

/// A ledger failure, boxed from whatever the implementation uses.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LedgerError(pub Box<dyn std::error::Error + Send + Sync>);

impl LedgerError {
    /// Wraps any error.
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(error.into())
    }
}

/// The per-session record of turns and their checkpoint refs, in turn order.
///
/// Methods block (they are called from the service's blocking tasks). A turn is identified by
/// its protocol turn id or by the agent SDK's event id for it.
pub trait CheckpointLedger: Send + Sync {
    /// Inserts a row for `turn` if there is none (at the end: insertion order is turn order).
    fn ensure_turn(&self, session: &SessionUri, turn: &str) -> Result<(), LedgerError>;

    /// Inserts the row if missing, then sets its checkpoint ref.
    fn set_turn_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
        ref_name: &str,
    ) -> Result<(), LedgerError>;

    /// The checkpoint ref of `turn`.
    fn turn_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
    ) -> Result<Option<String>, LedgerError>;

    /// The newest non-null checkpoint ref among the rows strictly before `turn`'s row (all rows
    /// when `turn` has none).
    fn previous_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
    ) -> Result<Option<String>, LedgerError>;

    /// Every non-null checkpoint ref, in row order.
    fn all_checkpoint_refs(&self, session: &SessionUri) -> Result<Vec<String>, LedgerError>;
}

/// One row of [`MemoryLedger`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    turn: String,
    checkpoint_ref: Option<String>,
}

/// An in-memory [`CheckpointLedger`] (tests, and hosts without a session database).
#[derive(Debug, Default)]
pub struct MemoryLedger {
    sessions: Mutex<HashMap<SessionUri, Vec<Row>>>,
}

impl MemoryLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Deletes `turn`'s row and every row after it (a truncated chat). The refs stay in git.
    pub fn truncate_from(&self, session: &SessionUri, turn: &str) {
        let mut sessions = self.lock();
        if let Some(rows) = sessions.get_mut(session)
            && let Some(position) = rows.iter().position(|row| row.turn == turn)
        {
            rows.truncate(position);
        }
    }

    /// Forgets the session.
    pub fn remove_session(&self, session: &SessionUri) {
        self.lock().remove(session);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionUri, Vec<Row>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl CheckpointLedger for MemoryLedger {
    fn ensure_turn(&self, session: &SessionUri, turn: &str) -> Result<(), LedgerError> {
        let mut sessions = self.lock();
        let rows = sessions.entry(session.clone()).or_default();
        if !rows.iter().any(|row| row.turn == turn) {
            rows.push(Row {
                turn: turn.to_owned(),
                checkpoint_ref: None,
            });
        }
        Ok(())
    }

    fn set_turn_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
        ref_name: &str,
    ) -> Result<(), LedgerError> {
        let mut sessions = self.lock();
        let rows = sessions.entry(session.clone()).or_default();
        match rows.iter_mut().find(|row| row.turn == turn) {
            Some(row) => row.checkpoint_ref = Some(ref_name.to_owned()),
            None => rows.push(Row {
                turn: turn.to_owned(),
                checkpoint_ref: Some(ref_name.to_owned()),
            }),
        }
        Ok(())
    }

    fn turn_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
    ) -> Result<Option<String>, LedgerError> {
        Ok(self.lock().get(session).and_then(|rows| {
            rows.iter()
                .find(|row| row.turn == turn)
                .and_then(|row| row.checkpoint_ref.clone())
        }))
    }

    fn previous_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
    ) -> Result<Option<String>, LedgerError> {
        let sessions = self.lock();
        let Some(rows) = sessions.get(session) else {
            return Ok(None);
        };
        let end = rows
            .iter()
            .position(|row| row.turn == turn)
            .unwrap_or(rows.len());
        Ok(rows[..end]
            .iter()
            .rev()
            .find_map(|row| row.checkpoint_ref.clone()))
    }

    fn all_checkpoint_refs(&self, session: &SessionUri) -> Result<Vec<String>, LedgerError> {
        Ok(self
            .lock()
            .get(session)
            .map(|rows| {
                rows.iter()
                    .filter_map(|row| row.checkpoint_ref.clone())
                    .collect()
            })
            .unwrap_or_default())
    }
}

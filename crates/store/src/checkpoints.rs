//! The checkpoint ledger: per session, its turns in turn order and the git checkpoint ref of
//! each, so a restarted host still finds the refs of earlier turns.
//!
//! Rows are keyed by `(session, turn_id)` and ordered by `seq` (insertion order is turn order).
//! They do not require the session row — the ledger may be written before the session's own
//! write lands — and a trigger deletes them when the session is deleted.

use agenthost_protocol::SessionUri;

use crate::error::Result;
use crate::store::Store;

impl Store {
    /// Appends a row without a checkpoint ref for `turn` of `session`, unless it has one.
    pub fn checkpoint_ensure_turn(&self, session: &SessionUri, turn: &str) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO checkpoint_turns (session, turn_id) VALUES (?1, ?2) \
                 ON CONFLICT (session, turn_id) DO NOTHING",
            )?
            .execute((session.as_str(), turn))?;
            Ok(())
        })
    }

    /// Sets the checkpoint ref of `turn` of `session` to `ref_name`, appending its row if there
    /// is none (an existing row keeps its place).
    pub fn set_checkpoint_ref(
        &self,
        session: &SessionUri,
        turn: &str,
        ref_name: &str,
    ) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO checkpoint_turns (session, turn_id, checkpoint_ref) \
                 VALUES (?1, ?2, ?3) \
                 ON CONFLICT (session, turn_id) \
                 DO UPDATE SET checkpoint_ref = excluded.checkpoint_ref",
            )?
            .execute((session.as_str(), turn, ref_name))?;
            Ok(())
        })
    }

    /// Every ledger row of `session` as `(turn id, checkpoint ref)`, in turn order.
    pub fn checkpoint_rows(&self, session: &SessionUri) -> Result<Vec<(String, Option<String>)>> {
        self.read(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT turn_id, checkpoint_ref FROM checkpoint_turns \
                 WHERE session = ?1 ORDER BY seq",
            )?;
            let rows = statement
                .query_map([session.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// Deletes every ledger row of `session` (the refs themselves stay in git). Deleting the
    /// session does this too.
    pub fn delete_checkpoint_rows(&self, session: &SessionUri) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached("DELETE FROM checkpoint_turns WHERE session = ?1")?
                .execute([session.as_str()])?;
            Ok(())
        })
    }
}

#[cfg(test)]
#[path = "checkpoints_tests.rs"]
mod tests;

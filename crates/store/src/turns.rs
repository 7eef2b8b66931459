//! Completed turns and failed-turn records of a chat.

use agenthost_protocol::ChatUri;
use rusqlite::{OptionalExtension, Transaction};

use crate::chats::session_of;
use crate::codec::{Cell, opt_json, to_json};
use crate::error::{Result, StoreError};
use crate::records::{FailedTurnRecord, TurnRecord};
use crate::store::{Failure, Store};
use agenthost_protocol::ahp_types::state::ActiveTurn;

impl Store {
    /// Appends the completed `record` to the chat `chat` and advances the `modified_at` of the
    /// chat and of its session to `modified_at` (never backwards), all in one transaction: after
    /// a crash either the turn and the new times are there, or neither is.
    ///
    /// Appending a turn id the chat already holds replaces that turn in place (same position):
    /// a retried append is harmless.
    pub fn append_turn(
        &self,
        chat: &ChatUri,
        record: &TurnRecord,
        modified_at: &str,
    ) -> Result<()> {
        self.append(chat, record, modified_at, None)
    }

    /// [`append_turn`](Self::append_turn) and [`set_resume_handle`](Self::set_resume_handle) in
    /// one transaction: the agent's handle to resume its conversation never disagrees with the
    /// stored history, whatever moment the process dies at.
    pub fn append_turn_with_resume_handle(
        &self,
        chat: &ChatUri,
        record: &TurnRecord,
        modified_at: &str,
        resume_handle: Option<&serde_json::Value>,
    ) -> Result<()> {
        self.append(chat, record, modified_at, Some(resume_handle))
    }

    fn append(
        &self,
        chat: &ChatUri,
        record: &TurnRecord,
        modified_at: &str,
        resume_handle: Option<Option<&serde_json::Value>>,
    ) -> Result<()> {
        let handle = match resume_handle {
            Some(handle) => Some(opt_json("resume handle", handle)?),
            None => None,
        };
        let turn = to_json("turn", &record.turn)?;
        let usage = opt_json("turn usage", record.usage.as_ref())?;
        self.write(|tx| {
            let session = session_of(tx, chat.as_str())?;
            tx.prepare_cached(
                "INSERT INTO turns (chat, ordinal, turn_id, provider_event_id, turn, \
                 checkpoint_ref, usage) \
                 VALUES (?1, (SELECT COALESCE(MAX(ordinal) + 1, 0) FROM turns WHERE chat = ?1), \
                 ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (chat, turn_id) DO UPDATE SET \
                 provider_event_id = excluded.provider_event_id, turn = excluded.turn, \
                 checkpoint_ref = excluded.checkpoint_ref, usage = excluded.usage",
            )?
            .execute((
                chat.as_str(),
                &record.turn.id,
                &record.provider_event_id,
                &turn,
                &record.checkpoint_ref,
                &usage,
            ))?;
            tx.prepare_cached(
                "UPDATE chats SET modified_at = MAX(modified_at, ?2) WHERE uri = ?1",
            )?
            .execute((chat.as_str(), modified_at))?;
            tx.prepare_cached(
                "UPDATE sessions SET modified_at = MAX(modified_at, ?2) WHERE uri = ?1",
            )?
            .execute((&session, modified_at))?;
            if let Some(handle) = &handle {
                tx.prepare_cached("UPDATE chats SET resume_handle = ?2 WHERE uri = ?1")?
                    .execute((chat.as_str(), handle))?;
            }
            // The finished turn replaces its open-turn marker in the same transaction, so a
            // kill at any instant leaves exactly one of the two.
            tx.prepare_cached("DELETE FROM open_turns WHERE chat = ?1 AND turn_id = ?2")?
                .execute((chat.as_str(), &record.turn.id))?;
            Ok(())
        })
    }

    /// Records that the turn `turn` of `chat` has started and is not finished (its user
    /// message, as the chat's active turn holds it at the start). A chat has at most one open
    /// turn: a newer one replaces the marker. Storing the finished turn
    /// ([`append_turn`](Self::append_turn)) deletes it in the same transaction; a marker still
    /// there when the host starts again is a turn the host died during.
    pub fn open_turn(&self, chat: &ChatUri, turn: &ActiveTurn) -> Result<()> {
        let json = to_json("open turn", turn)?;
        self.write(|tx| {
            session_of(tx, chat.as_str())?;
            tx.prepare_cached(
                "INSERT INTO open_turns (chat, turn_id, turn) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (chat) DO UPDATE SET turn_id = excluded.turn_id, turn = excluded.turn",
            )?
            .execute((chat.as_str(), &turn.id, &json))?;
            Ok(())
        })
    }

    /// The open turn of `chat` (see [`open_turn`](Self::open_turn)), if there is one.
    pub fn open_turn_of(&self, chat: &ChatUri) -> Result<Option<ActiveTurn>> {
        self.read(|conn| {
            let row: Option<(String, String)> = conn
                .prepare_cached("SELECT turn_id, turn FROM open_turns WHERE chat = ?1")?
                .query_row([chat.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            let Some((turn_id, json)) = row else {
                return Ok(None);
            };
            let key = format!("{chat} {turn_id}");
            let cell = Cell {
                table: "open_turns",
                key: &key,
                column: "turn",
            };
            Ok(Some(cell.json(&json)?))
        })
    }

    /// Forgets the open turn `turn_id` of `chat` without storing a finished turn (a turn that
    /// ended without a record, such as one the host refused). Returns whether it was there.
    pub fn close_open_turn(&self, chat: &ChatUri, turn_id: &str) -> Result<bool> {
        self.write(|tx| {
            let removed = tx
                .prepare_cached("DELETE FROM open_turns WHERE chat = ?1 AND turn_id = ?2")?
                .execute((chat.as_str(), turn_id))?;
            Ok(removed > 0)
        })
    }

    /// The completed turns of `chat`, oldest first; empty for an unknown chat.
    pub fn turns(&self, chat: &ChatUri) -> Result<Vec<TurnRecord>> {
        self.read(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT turn_id, turn, provider_event_id, checkpoint_ref, usage FROM turns \
                 WHERE chat = ?1 ORDER BY ordinal",
            )?;
            let rows = statement
                .query_map([chat.as_str()], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, Option<String>>(2)?,
                        row.get::<_, Option<String>>(3)?,
                        row.get::<_, Option<String>>(4)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter()
                .map(
                    |(turn_id, turn, provider_event_id, checkpoint_ref, usage)| {
                        let key = format!("{chat} {turn_id}");
                        let cell = |column| Cell {
                            table: "turns",
                            key: &key,
                            column,
                        };
                        let turn: agenthost_protocol::state::Turn = cell("turn").json(&turn)?;
                        if turn.id != turn_id {
                            return Err(cell("turn").fail(format!(
                                "the stored turn has id `{}`, the row says `{turn_id}`",
                                turn.id
                            )));
                        }
                        Ok(TurnRecord {
                            turn,
                            provider_event_id,
                            checkpoint_ref,
                            usage: cell("usage").opt_json(usage.as_deref())?,
                        })
                    },
                )
                .collect()
        })
    }

    /// How many completed turns `chat` holds.
    pub fn turn_count(&self, chat: &ChatUri) -> Result<u64> {
        self.read(|conn| {
            let count: i64 = conn
                .prepare_cached("SELECT COUNT(*) FROM turns WHERE chat = ?1")?
                .query_row([chat.as_str()], |row| row.get(0))?;
            Ok(u64::try_from(count).unwrap_or_default())
        })
    }

    /// Discards the history of `chat` after the turn `keep_through` (AHP `chat/truncated`):
    /// its completed turns after it, the failed turns recorded after it (anchored at it or
    /// later) and the delegations of everything removed. `None` clears every turn and failed
    /// turn. One transaction; returns how many completed turns were removed.
    ///
    /// An unknown `keep_through` is [`StoreError::NotFound`] and removes nothing.
    pub fn truncate_turns(&self, chat: &ChatUri, keep_through: Option<&str>) -> Result<u64> {
        self.write(|tx| {
            session_of(tx, chat.as_str())?;
            // Completed turns from `cut` on go; failed turns anchored from `anchor_cut` on go.
            let (cut, anchor_cut) = match keep_through {
                None => (0, None),
                Some(turn_id) => {
                    let ordinal = ordinal_of(tx, chat, turn_id)?;
                    (ordinal + 1, Some(ordinal))
                }
            };
            // ?1 chat, ?2 first removed ordinal, ?3 first ordinal whose failed turns go (NULL:
            // every failed turn goes, anchored or not).
            const FAILED: &str = "chat = ?1 AND (?3 IS NULL OR anchor_turn_id IN \
                                  (SELECT turn_id FROM turns WHERE chat = ?1 AND ordinal >= ?3))";
            let params = rusqlite::params![chat.as_str(), cut, anchor_cut];
            tx.prepare_cached(&format!(
                "DELETE FROM delegations WHERE chat = ?1 AND turn_id IN \
                 (SELECT turn_id FROM turns WHERE chat = ?1 AND ordinal >= ?2 \
                  UNION SELECT turn_id FROM failed_turns WHERE {FAILED})"
            ))?
            .execute(params)?;
            tx.prepare_cached(&format!("DELETE FROM failed_turns WHERE {FAILED}"))?
                .execute(params)?;
            let removed = tx
                .prepare_cached("DELETE FROM turns WHERE chat = ?1 AND ordinal >= ?2")?
                .execute((chat.as_str(), cut))?;
            Ok(u64::try_from(removed).unwrap_or_default())
        })
    }

    /// Records (or re-records) a failed turn of `chat`. Its anchor, when given, must be a
    /// completed turn of the chat.
    pub fn record_failed_turn(&self, chat: &ChatUri, failed: &FailedTurnRecord) -> Result<()> {
        let error = to_json("turn error", &failed.error)?;
        self.write(|tx| {
            session_of(tx, chat.as_str())?;
            if let Some(anchor) = &failed.anchor_turn_id {
                ordinal_of(tx, chat, anchor)?;
            }
            tx.prepare_cached(
                "INSERT INTO failed_turns (chat, turn_id, anchor_turn_id, error, recorded_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (chat, turn_id) DO UPDATE SET \
                 anchor_turn_id = excluded.anchor_turn_id, error = excluded.error, \
                 recorded_at = excluded.recorded_at",
            )?
            .execute((
                chat.as_str(),
                &failed.turn_id,
                &failed.anchor_turn_id,
                &error,
                &failed.recorded_at,
            ))?;
            Ok(())
        })
    }

    /// The failed turns of `chat`, in the order they were first recorded.
    pub fn failed_turns(&self, chat: &ChatUri) -> Result<Vec<FailedTurnRecord>> {
        self.read(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT turn_id, anchor_turn_id, error, recorded_at FROM failed_turns \
                 WHERE chat = ?1 ORDER BY seq",
            )?;
            let rows = statement
                .query_map([chat.as_str()], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, Option<String>>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter()
                .map(|(turn_id, anchor_turn_id, error, recorded_at)| {
                    let key = format!("{chat} {turn_id}");
                    let cell = Cell {
                        table: "failed_turns",
                        key: &key,
                        column: "error",
                    };
                    Ok(FailedTurnRecord {
                        error: cell.json(&error)?,
                        turn_id,
                        anchor_turn_id,
                        recorded_at,
                    })
                })
                .collect()
        })
    }
}

/// The ordinal of the completed turn `turn_id` of `chat`, or [`StoreError::NotFound`].
fn ordinal_of(
    tx: &Transaction<'_>,
    chat: &ChatUri,
    turn_id: &str,
) -> std::result::Result<i64, Failure> {
    tx.prepare_cached("SELECT ordinal FROM turns WHERE chat = ?1 AND turn_id = ?2")?
        .query_row((chat.as_str(), turn_id), |row| row.get(0))
        .optional()?
        .ok_or_else(|| StoreError::not_found("turn", format!("{turn_id}` of chat `{chat}")).into())
}

#[cfg(test)]
#[path = "turns_tests.rs"]
mod tests;

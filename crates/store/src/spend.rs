//! The spend ledger: what each turn of each chat cost, by the host's estimate, and when it was
//! last updated — for session totals that survive restarts and `agent-host sessions --since`.

use agenthost_protocol::{ChatUri, SessionUri};

use crate::chats::session_of;
use crate::codec::Cell;
use crate::error::Result;
use crate::store::Store;

/// One turn's spend.
#[derive(Debug, Clone, PartialEq)]
pub struct SpendRecord {
    /// The chat (a subagent's chat counts its own calls).
    pub chat: ChatUri,
    /// The turn.
    pub turn_id: String,
    /// The session's provider.
    pub provider: String,
    /// US dollars; `None` when no model call of the turn had a known price.
    pub cost_usd: Option<f64>,
    /// Whether calls without a known price were left out of `cost_usd`.
    pub incomplete: bool,
    /// When it was last updated (RFC 3339, UTC).
    pub at: String,
}

/// A sum of spend records.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpendTotal {
    /// US dollars over the priced turns.
    pub cost_usd: f64,
    /// Turns with a known cost.
    pub priced_turns: u64,
    /// Turns whose cost is unknown or incomplete.
    pub unpriced_turns: u64,
}

/// The spend of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSpend {
    /// The session.
    pub session: SessionUri,
    /// Its provider.
    pub provider: String,
    /// Its total.
    pub total: SpendTotal,
}

impl Store {
    /// Records (or replaces) the spend of `record`'s turn. The chat must be stored.
    pub fn set_turn_spend(&self, record: &SpendRecord) -> Result<()> {
        self.write(|tx| {
            let session = session_of(tx, record.chat.as_str())?;
            tx.prepare_cached(
                "INSERT INTO spend (session, chat, turn_id, provider, cost_usd, incomplete, at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                 ON CONFLICT (chat, turn_id) DO UPDATE SET provider = excluded.provider, \
                 cost_usd = excluded.cost_usd, incomplete = excluded.incomplete, at = excluded.at",
            )?
            .execute((
                session,
                record.chat.as_str(),
                &record.turn_id,
                &record.provider,
                record.cost_usd,
                record.incomplete,
                &record.at,
            ))?;
            Ok(())
        })
    }

    /// The total spend of `session` (every chat, subagents' included).
    pub fn session_spend(&self, session: &SessionUri) -> Result<SpendTotal> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT COALESCE(SUM(cost_usd), 0.0), \
                     COUNT(cost_usd), \
                     SUM(CASE WHEN cost_usd IS NULL OR incomplete THEN 1 ELSE 0 END) \
                     FROM spend WHERE session = ?1",
                )?
                .query_row([session.as_str()], total_of)?)
        })
    }

    /// The spend of every session with a turn updated at or after `since` (RFC 3339; every
    /// session with spend when `None`), counting those turns only; most expensive first.
    pub fn spend_since(&self, since: Option<&str>) -> Result<Vec<SessionSpend>> {
        self.read(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT session, provider, COALESCE(SUM(cost_usd), 0.0), COUNT(cost_usd), \
                 SUM(CASE WHEN cost_usd IS NULL OR incomplete THEN 1 ELSE 0 END) \
                 FROM spend WHERE ?1 IS NULL OR at >= ?1 \
                 GROUP BY session, provider ORDER BY 3 DESC, session",
            )?;
            let rows = statement.query_map([since], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    SpendTotal {
                        cost_usd: row.get(2)?,
                        priced_turns: row.get::<_, i64>(3)?.try_into().unwrap_or(0),
                        unpriced_turns: row.get::<_, i64>(4)?.try_into().unwrap_or(0),
                    },
                ))
            })?;
            let mut spend = Vec::new();
            for row in rows {
                let (session, provider, total) = row?;
                spend.push(SessionSpend {
                    session: Cell {
                        table: "spend",
                        key: &session,
                        column: "session",
                    }
                    .session_uri(&session)?,
                    provider,
                    total,
                });
            }
            Ok(spend)
        })
    }
}

fn total_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<SpendTotal> {
    Ok(SpendTotal {
        cost_usd: row.get(0)?,
        priced_turns: row.get::<_, i64>(1)?.try_into().unwrap_or(0),
        unpriced_turns: row
            .get::<_, Option<i64>>(2)?
            .unwrap_or(0)
            .try_into()
            .unwrap_or(0),
    })
}

#[cfg(test)]
#[path = "spend_tests.rs"]
mod tests;

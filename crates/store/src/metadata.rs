//! What contributions keep: metadata key/values of sessions and chats, and delegations.

use agenthost_protocol::ChatUri;
use rusqlite::OptionalExtension;
use serde_json::Value;

use crate::chats::session_of;
use crate::codec::{Cell, to_json};
use crate::error::Result;
use crate::records::{DelegationRecord, MetaOwner};
use crate::sessions::require_session;
use crate::store::Store;

impl Store {
    /// Sets the metadata entry `key` of `owner` to `value`, or deletes it with `None`. Setting
    /// requires the owner to be stored (entries are deleted with their owner); deleting an absent
    /// entry is not an error.
    pub fn set_meta(&self, owner: MetaOwner<'_>, key: &str, value: Option<&str>) -> Result<()> {
        self.write(|tx| {
            let Some(value) = value else {
                tx.prepare_cached(
                    "DELETE FROM metadata WHERE scope = ?1 AND uri = ?2 AND key = ?3",
                )?
                .execute((owner.scope(), owner.uri(), key))?;
                return Ok(());
            };
            match owner {
                MetaOwner::Session(uri) => require_session(tx, uri.as_str())?,
                MetaOwner::Chat(uri) => {
                    session_of(tx, uri.as_str())?;
                }
            }
            tx.prepare_cached(
                "INSERT INTO metadata (scope, uri, key, value) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (scope, uri, key) DO UPDATE SET value = excluded.value",
            )?
            .execute((owner.scope(), owner.uri(), key, value))?;
            Ok(())
        })
    }

    /// The metadata entry `key` of `owner`, if set.
    pub fn meta(&self, owner: MetaOwner<'_>, key: &str) -> Result<Option<String>> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT value FROM metadata WHERE scope = ?1 AND uri = ?2 AND key = ?3",
                )?
                .query_row((owner.scope(), owner.uri(), key), |row| row.get(0))
                .optional()?)
        })
    }

    /// Every metadata entry of `owner` as `(key, value)`, ordered by key (to hydrate a
    /// contribution in one query).
    pub fn meta_entries(&self, owner: MetaOwner<'_>) -> Result<Vec<(String, String)>> {
        self.read(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT key, value FROM metadata WHERE scope = ?1 AND uri = ?2 ORDER BY key",
            )?;
            let entries = statement
                .query_map((owner.scope(), owner.uri()), |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(entries)
        })
    }

    /// Sets the delegation of `turn_id` in `chat` to `value`, or deletes it with `None`. Setting
    /// requires the chat to be stored; deleting an absent delegation is not an error.
    pub fn set_delegation(
        &self,
        chat: &ChatUri,
        turn_id: &str,
        value: Option<&Value>,
    ) -> Result<()> {
        let value = value
            .map(|value| to_json("delegation", value))
            .transpose()?;
        self.write(|tx| {
            let Some(value) = value else {
                tx.prepare_cached("DELETE FROM delegations WHERE chat = ?1 AND turn_id = ?2")?
                    .execute((chat.as_str(), turn_id))?;
                return Ok(());
            };
            session_of(tx, chat.as_str())?;
            tx.prepare_cached(
                "INSERT INTO delegations (chat, turn_id, value) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (chat, turn_id) DO UPDATE SET value = excluded.value",
            )?
            .execute((chat.as_str(), turn_id, value))?;
            Ok(())
        })
    }

    /// The delegations of `chat`, in the order they were first set.
    pub fn delegations(&self, chat: &ChatUri) -> Result<Vec<DelegationRecord>> {
        self.read(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT turn_id, value FROM delegations WHERE chat = ?1 ORDER BY seq",
            )?;
            let rows = statement
                .query_map([chat.as_str()], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter()
                .map(|(turn_id, value)| {
                    let key = format!("{chat} {turn_id}");
                    let cell = Cell {
                        table: "delegations",
                        key: &key,
                        column: "value",
                    };
                    Ok(DelegationRecord {
                        value: cell.json(&value)?,
                        turn_id,
                    })
                })
                .collect()
        })
    }
}

#[cfg(test)]
#[path = "metadata_tests.rs"]
mod tests;

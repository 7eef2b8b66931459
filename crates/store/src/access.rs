//! Who may connect and what they decided: named connection tokens (a hash of each, never the
//! token) and the audit log.

use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::store::{Failure, Store};

/// A named connection token as stored: its SHA-256 (hex), never the token itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// The name the operator gave it (unique).
    pub name: String,
    /// The token's SHA-256, lower-case hex.
    pub hash: String,
    /// What it may do (`full`, `observe`, `session:<uri>`), as text.
    pub scope: String,
    /// When it was added (RFC 3339).
    pub created_at: String,
}

pub use agenthost_protocol::AuditRecord;

impl Store {
    /// Adds a named token; a name already taken is [`StoreError::AlreadyExists`].
    pub fn add_token(&self, token: &TokenRecord) -> Result<()> {
        self.write(|tx| {
            let taken: Option<String> = tx
                .prepare_cached("SELECT name FROM tokens WHERE name = ?1 OR hash = ?2")?
                .query_row((&token.name, &token.hash), |row| row.get(0))
                .optional()?;
            if let Some(name) = taken {
                return Err(Failure::Store(StoreError::AlreadyExists {
                    kind: "token",
                    key: name,
                }));
            }
            tx.prepare_cached(
                "INSERT INTO tokens (name, hash, scope, created_at) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute((&token.name, &token.hash, &token.scope, &token.created_at))?;
            Ok(())
        })
    }

    /// Every named token, by name.
    pub fn tokens(&self) -> Result<Vec<TokenRecord>> {
        self.read(|conn| {
            let mut statement = conn
                .prepare_cached("SELECT name, hash, scope, created_at FROM tokens ORDER BY name")?;
            let rows = statement.query_map((), |row| {
                Ok(TokenRecord {
                    name: row.get(0)?,
                    hash: row.get(1)?,
                    scope: row.get(2)?,
                    created_at: row.get(3)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Removes the token `name`; whether there was one.
    pub fn revoke_token(&self, name: &str) -> Result<bool> {
        self.write(|tx| {
            let removed = tx
                .prepare_cached("DELETE FROM tokens WHERE name = ?1")?
                .execute([name])?;
            Ok(removed > 0)
        })
    }

    /// Appends one entry to the audit log.
    pub fn append_audit(&self, entry: &AuditRecord) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO audit (at, token, client_id, channel, action, detail) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute((
                &entry.at,
                &entry.token,
                &entry.client_id,
                &entry.channel,
                &entry.action,
                &entry.detail,
            ))?;
            Ok(())
        })
    }

    /// The last `limit` audit entries, oldest first.
    pub fn audit(&self, limit: usize) -> Result<Vec<AuditRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|conn| {
            let mut statement = conn.prepare_cached(
                "SELECT at, token, client_id, channel, action, detail FROM \
                 (SELECT * FROM audit ORDER BY id DESC LIMIT ?1) ORDER BY id",
            )?;
            let rows = statement.query_map([limit], |row| {
                Ok(AuditRecord {
                    at: row.get(0)?,
                    token: row.get(1)?,
                    client_id: row.get(2)?,
                    channel: row.get(3)?,
                    action: row.get(4)?,
                    detail: row.get(5)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;

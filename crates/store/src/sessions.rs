//! Sessions: the catalog the host lists at start.

use agenthost_protocol::SessionUri;
use rusqlite::{Connection, OptionalExtension, Row};

use crate::codec::{Cell, to_json};
use crate::error::{Result, StoreError};
use crate::records::{SessionRecord, TitleSource};
use crate::store::{Failure, Store};

const COLUMNS: &str = "uri, provider, title, title_source, created_at, modified_at, \
                       working_directories, read, archived, default_chat";

/// A `sessions` row as SQLite returns it, before decoding.
struct Raw {
    uri: String,
    provider: String,
    title: String,
    title_source: String,
    created_at: String,
    modified_at: String,
    working_directories: String,
    read: bool,
    archived: bool,
    default_chat: Option<String>,
}

impl Raw {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            uri: row.get(0)?,
            provider: row.get(1)?,
            title: row.get(2)?,
            title_source: row.get(3)?,
            created_at: row.get(4)?,
            modified_at: row.get(5)?,
            working_directories: row.get(6)?,
            read: row.get(7)?,
            archived: row.get(8)?,
            default_chat: row.get(9)?,
        })
    }

    fn decode(self) -> std::result::Result<SessionRecord, Failure> {
        let cell = |column| Cell {
            table: "sessions",
            key: &self.uri,
            column,
        };
        Ok(SessionRecord {
            uri: cell("uri").session_uri(&self.uri)?,
            title_source: cell("title_source").title_source(&self.title_source)?,
            working_directories: cell("working_directories").json(&self.working_directories)?,
            default_chat: self
                .default_chat
                .as_deref()
                .map(|text| cell("default_chat").chat_uri(text))
                .transpose()?,
            provider: self.provider,
            title: self.title,
            created_at: self.created_at,
            modified_at: self.modified_at,
            read: self.read,
            archived: self.archived,
        })
    }
}

impl Store {
    /// Inserts `session`, or updates every field of the session with its URI. Updating never
    /// touches the session's chats, turns or metadata.
    pub fn put_session(&self, session: &SessionRecord) -> Result<()> {
        let directories = to_json("working directories", &session.working_directories)?;
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO sessions (uri, provider, title, title_source, created_at, \
                 modified_at, working_directories, read, archived, default_chat) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
                 ON CONFLICT (uri) DO UPDATE SET provider = excluded.provider, \
                 title = excluded.title, title_source = excluded.title_source, \
                 created_at = excluded.created_at, modified_at = excluded.modified_at, \
                 working_directories = excluded.working_directories, read = excluded.read, \
                 archived = excluded.archived, default_chat = excluded.default_chat",
            )?
            .execute((
                session.uri.as_str(),
                &session.provider,
                &session.title,
                session.title_source.as_str(),
                &session.created_at,
                &session.modified_at,
                &directories,
                session.read,
                session.archived,
                session.default_chat.as_ref().map(|chat| chat.as_str()),
            ))?;
            Ok(())
        })
    }

    /// The session at `uri`, if stored.
    pub fn session(&self, uri: &SessionUri) -> Result<Option<SessionRecord>> {
        self.read(|conn| {
            let raw = conn
                .prepare_cached(&format!("SELECT {COLUMNS} FROM sessions WHERE uri = ?1"))?
                .query_row([uri.as_str()], Raw::from_row)
                .optional()?;
            raw.map(Raw::decode).transpose()
        })
    }

    /// Every session, most recently modified first (ties by URI): the catalog, in one query.
    pub fn sessions(&self) -> Result<Vec<SessionRecord>> {
        self.read(|conn| {
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM sessions ORDER BY modified_at DESC, uri"
            ))?;
            let rows = statement
                .query_map([], Raw::from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter().map(Raw::decode).collect()
        })
    }

    /// At most `limit` sessions after the position `after` (`(modified_at, uri)` of the last one
    /// seen) in the catalog order — most recently modified first, ties by URI — in one indexed
    /// query, whatever the number of sessions.
    pub fn sessions_page(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<SessionRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|conn| {
            let rows = match after {
                None => conn
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM sessions ORDER BY modified_at DESC, uri LIMIT ?1"
                    ))?
                    .query_map([limit], Raw::from_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
                Some((modified_at, uri)) => conn
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM sessions \
                         WHERE modified_at < ?1 OR (modified_at = ?1 AND uri > ?2) \
                         ORDER BY modified_at DESC, uri LIMIT ?3"
                    ))?
                    .query_map((modified_at, uri, limit), Raw::from_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
            };
            rows.into_iter().map(Raw::decode).collect()
        })
    }

    /// Deletes the session and, in the same transaction, everything it owns: its chats, their
    /// turns, failed turns, delegations and metadata, and the session's metadata. Returns
    /// whether the session existed.
    pub fn delete_session(&self, uri: &SessionUri) -> Result<bool> {
        self.write(|tx| {
            let deleted = tx
                .prepare_cached("DELETE FROM sessions WHERE uri = ?1")?
                .execute([uri.as_str()])?;
            Ok(deleted > 0)
        })
    }

    /// Sets the session's title and who chose it.
    pub fn set_session_title(
        &self,
        uri: &SessionUri,
        title: &str,
        source: TitleSource,
    ) -> Result<()> {
        self.update_session(
            uri,
            "UPDATE sessions SET title = ?2, title_source = ?3 WHERE uri = ?1",
            (uri.as_str(), title, source.as_str()),
        )
    }

    /// Sets the session's read and archived flags.
    pub fn set_session_flags(&self, uri: &SessionUri, read: bool, archived: bool) -> Result<()> {
        self.update_session(
            uri,
            "UPDATE sessions SET read = ?2, archived = ?3 WHERE uri = ?1",
            (uri.as_str(), read, archived),
        )
    }

    /// Sets the session's modification time (ISO 8601), which orders the catalog.
    pub fn touch_session(&self, uri: &SessionUri, modified_at: &str) -> Result<()> {
        self.update_session(
            uri,
            "UPDATE sessions SET modified_at = ?2 WHERE uri = ?1",
            (uri.as_str(), modified_at),
        )
    }

    fn update_session(
        &self,
        uri: &SessionUri,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<()> {
        self.write(|tx| {
            if tx.prepare_cached(sql)?.execute(params)? == 0 {
                return Err(StoreError::not_found("session", uri.as_str()).into());
            }
            Ok(())
        })
    }
}

/// Fails with [`StoreError::NotFound`] unless the session `uri` is stored.
pub(crate) fn require_session(conn: &Connection, uri: &str) -> std::result::Result<(), Failure> {
    let found = conn
        .prepare_cached("SELECT 1 FROM sessions WHERE uri = ?1")?
        .exists([uri])?;
    if found {
        Ok(())
    } else {
        Err(StoreError::not_found("session", uri).into())
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;

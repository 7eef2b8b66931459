//! Chats: each session's catalog of chats and their chat-level state.

use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::Message;
use agenthost_protocol::{ChatUri, SessionUri};
use rusqlite::{Connection, OptionalExtension, Row};
use serde_json::Value;

use crate::codec::{self, Cell, opt_json};
use crate::error::{Result, StoreError};
use crate::records::{ChatRecord, TitleSource};
use crate::sessions::require_session;
use crate::store::{Failure, Store};

const COLUMNS: &str = "uri, session, position, title, title_source, modified_at, origin, \
                       interactivity, read, archived, draft, config, resume_handle, subagent";

/// A `chats` row as SQLite returns it, before decoding.
struct Raw {
    uri: String,
    session: String,
    position: i64,
    title: String,
    title_source: String,
    modified_at: String,
    origin: Option<String>,
    interactivity: Option<String>,
    read: bool,
    archived: bool,
    draft: Option<String>,
    config: Option<String>,
    resume_handle: Option<String>,
    subagent: bool,
}

impl Raw {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            uri: row.get(0)?,
            session: row.get(1)?,
            position: row.get(2)?,
            title: row.get(3)?,
            title_source: row.get(4)?,
            modified_at: row.get(5)?,
            origin: row.get(6)?,
            interactivity: row.get(7)?,
            read: row.get(8)?,
            archived: row.get(9)?,
            draft: row.get(10)?,
            config: row.get(11)?,
            resume_handle: row.get(12)?,
            subagent: row.get(13)?,
        })
    }

    fn decode(self) -> std::result::Result<ChatRecord, Failure> {
        let cell = |column| Cell {
            table: "chats",
            key: &self.uri,
            column,
        };
        Ok(ChatRecord {
            uri: cell("uri").chat_uri(&self.uri)?,
            session: cell("session").session_uri(&self.session)?,
            title_source: cell("title_source").title_source(&self.title_source)?,
            origin: cell("origin").opt_json(self.origin.as_deref())?,
            interactivity: cell("interactivity").interactivity(self.interactivity.as_deref())?,
            draft: cell("draft").opt_json(self.draft.as_deref())?,
            config: cell("config").opt_json(self.config.as_deref())?,
            resume_handle: cell("resume_handle").opt_json(self.resume_handle.as_deref())?,
            position: self.position,
            title: self.title,
            modified_at: self.modified_at,
            read: self.read,
            archived: self.archived,
            subagent: self.subagent,
        })
    }
}

impl Store {
    /// Inserts `chat`, or updates every field of the chat with its URI (a changed `session`
    /// moves it, with its turns). Its session must be stored. Updating never touches the
    /// chat's turns, failed turns, delegations or metadata.
    pub fn put_chat(&self, chat: &ChatRecord) -> Result<()> {
        self.insert_chat(chat, true).map(|_| ())
    }

    /// Inserts `chat` unless a chat with its URI is stored already (which is left exactly as
    /// it is: a title or draft written since is kept). Its session must be stored. Returns
    /// whether it was inserted.
    pub fn ensure_chat(&self, chat: &ChatRecord) -> Result<bool> {
        self.insert_chat(chat, false)
    }

    fn insert_chat(&self, chat: &ChatRecord, replace: bool) -> Result<bool> {
        let origin = opt_json("chat origin", chat.origin.as_ref())?;
        let interactivity = codec::interactivity(chat.interactivity)?;
        let draft = opt_json("chat draft", chat.draft.as_ref())?;
        let config = opt_json("chat config", chat.config.as_ref())?;
        let resume_handle = opt_json("resume handle", chat.resume_handle.as_ref())?;
        let conflict = if replace {
            "DO UPDATE SET session = excluded.session, \
             position = excluded.position, title = excluded.title, \
             title_source = excluded.title_source, modified_at = excluded.modified_at, \
             origin = excluded.origin, interactivity = excluded.interactivity, \
             read = excluded.read, archived = excluded.archived, draft = excluded.draft, \
             config = excluded.config, resume_handle = excluded.resume_handle, \
             subagent = excluded.subagent"
        } else {
            "DO NOTHING"
        };
        self.write(|tx| {
            require_session(tx, chat.session.as_str())?;
            let changed = tx
                .prepare_cached(&format!(
                    "INSERT INTO chats (uri, session, position, title, title_source, \
                     modified_at, origin, interactivity, read, archived, draft, config, \
                     resume_handle, subagent) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) \
                     ON CONFLICT (uri) {conflict}"
                ))?
                .execute(rusqlite::params![
                    chat.uri.as_str(),
                    chat.session.as_str(),
                    chat.position,
                    &chat.title,
                    chat.title_source.as_str(),
                    &chat.modified_at,
                    origin,
                    interactivity,
                    chat.read,
                    chat.archived,
                    draft,
                    config,
                    resume_handle,
                    chat.subagent,
                ])?;
            Ok(changed > 0)
        })
    }

    /// The chat at `uri`, if stored.
    pub fn chat(&self, uri: &ChatUri) -> Result<Option<ChatRecord>> {
        self.read(|conn| {
            let raw = conn
                .prepare_cached(&format!("SELECT {COLUMNS} FROM chats WHERE uri = ?1"))?
                .query_row([uri.as_str()], Raw::from_row)
                .optional()?;
            raw.map(Raw::decode).transpose()
        })
    }

    /// The chats of `session` in catalog order (ascending position, ties by URI); empty for an
    /// unknown session.
    pub fn chats(&self, session: &SessionUri) -> Result<Vec<ChatRecord>> {
        self.read(|conn| {
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM chats WHERE session = ?1 ORDER BY position, uri"
            ))?;
            let rows = statement
                .query_map([session.as_str()], Raw::from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter().map(Raw::decode).collect()
        })
    }

    /// Deletes the chat and, in the same transaction, its turns, failed turns, delegations and
    /// metadata; a session whose default chat it was loses its default. Returns whether the
    /// chat existed.
    pub fn delete_chat(&self, uri: &ChatUri) -> Result<bool> {
        self.write(|tx| {
            let deleted = tx
                .prepare_cached("DELETE FROM chats WHERE uri = ?1")?
                .execute([uri.as_str()])?;
            Ok(deleted > 0)
        })
    }

    /// Sets the chat's title and who chose it.
    pub fn set_chat_title(&self, uri: &ChatUri, title: &str, source: TitleSource) -> Result<()> {
        self.update_chat(
            uri,
            "UPDATE chats SET title = ?2, title_source = ?3 WHERE uri = ?1",
            (uri.as_str(), title, source.as_str()),
        )
    }

    /// Sets (or, with `None`, clears) the chat's unsent draft.
    pub fn set_draft(&self, uri: &ChatUri, draft: Option<&Message>) -> Result<()> {
        let draft = opt_json("chat draft", draft)?;
        self.update_chat(
            uri,
            "UPDATE chats SET draft = ?2 WHERE uri = ?1",
            (uri.as_str(), draft),
        )
    }

    /// Sets (or, with `None`, clears) the chat's configuration values.
    pub fn set_chat_config(&self, uri: &ChatUri, config: Option<&JsonObject>) -> Result<()> {
        let config = opt_json("chat config", config)?;
        self.update_chat(
            uri,
            "UPDATE chats SET config = ?2 WHERE uri = ?1",
            (uri.as_str(), config),
        )
    }

    /// Sets the chat's read and archived flags.
    pub fn set_chat_flags(&self, uri: &ChatUri, read: bool, archived: bool) -> Result<()> {
        self.update_chat(
            uri,
            "UPDATE chats SET read = ?2, archived = ?3 WHERE uri = ?1",
            (uri.as_str(), read, archived),
        )
    }

    /// Sets (or, with `None`, clears) the provider's resume handle of the chat.
    pub fn set_resume_handle(&self, uri: &ChatUri, handle: Option<&Value>) -> Result<()> {
        let handle = opt_json("resume handle", handle)?;
        self.update_chat(
            uri,
            "UPDATE chats SET resume_handle = ?2 WHERE uri = ?1",
            (uri.as_str(), handle),
        )
    }

    fn update_chat(&self, uri: &ChatUri, sql: &str, params: impl rusqlite::Params) -> Result<()> {
        self.write(|tx| {
            if tx.prepare_cached(sql)?.execute(params)? == 0 {
                return Err(StoreError::not_found("chat", uri.as_str()).into());
            }
            Ok(())
        })
    }
}

/// The session of the chat `uri`, or [`StoreError::NotFound`].
pub(crate) fn session_of(conn: &Connection, uri: &str) -> std::result::Result<String, Failure> {
    conn.prepare_cached("SELECT session FROM chats WHERE uri = ?1")?
        .query_row([uri], |row| row.get(0))
        .optional()?
        .ok_or_else(|| StoreError::not_found("chat", uri).into())
}

#[cfg(test)]
#[path = "chats_tests.rs"]
mod tests;

//! The schema, its versioned migrations, and the checks that decide whether a file is ours.
//!
//! A database is recognised by `PRAGMA application_id` ([`APPLICATION_ID`]) and versioned by
//! `PRAGMA user_version` ([`SCHEMA_VERSION`]). Both live in the file header, are written inside
//! the migration transaction, and so change atomically with the tables they describe.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{BUSY_TIMEOUT_MS, StoreError};

/// `PRAGMA application_id` of an agenthost session database: ASCII `AHST`.
pub const APPLICATION_ID: i32 = 0x4148_5354;

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: u32 = 6;

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// The WAL may grow during a burst of writes; after a checkpoint it is truncated back to this.
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// One step of the schema's history: the SQL that takes version `version - 1` to `version`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// The version this step produces.
    pub version: u32,
    /// The step's DDL.
    pub sql: &'static str,
}

/// Version 1: the conversation — sessions, chats, completed turns, and the `meta` key/values.
pub(crate) const V1_CONVERSATION: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE sessions (
    uri                 TEXT PRIMARY KEY NOT NULL,
    provider            TEXT NOT NULL,
    title               TEXT NOT NULL,
    title_source        TEXT NOT NULL CHECK (title_source IN ('default', 'generated', 'user')),
    created_at          TEXT NOT NULL,
    modified_at         TEXT NOT NULL,
    working_directories TEXT NOT NULL DEFAULT '[]',
    read                INTEGER NOT NULL DEFAULT 0 CHECK (read IN (0, 1)),
    archived            INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    default_chat        TEXT
) STRICT;
CREATE INDEX sessions_by_modified_at ON sessions (modified_at DESC, uri);

CREATE TABLE chats (
    uri           TEXT PRIMARY KEY NOT NULL,
    session       TEXT NOT NULL REFERENCES sessions (uri) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    title         TEXT NOT NULL,
    title_source  TEXT NOT NULL CHECK (title_source IN ('default', 'generated', 'user')),
    modified_at   TEXT NOT NULL,
    origin        TEXT,
    interactivity TEXT,
    read          INTEGER NOT NULL DEFAULT 0 CHECK (read IN (0, 1)),
    archived      INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    draft         TEXT,
    config        TEXT,
    resume_handle TEXT,
    subagent      INTEGER NOT NULL DEFAULT 0 CHECK (subagent IN (0, 1))
) STRICT;
CREATE INDEX chats_by_session ON chats (session, position, uri);

-- A session's default chat is a plain reference (the chat row needs its session first):
-- deleting the chat clears it.
CREATE TRIGGER chats_clear_default_chat AFTER DELETE ON chats BEGIN
    UPDATE sessions SET default_chat = NULL WHERE default_chat = OLD.uri;
END;

CREATE TABLE turns (
    chat              TEXT NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
    ordinal           INTEGER NOT NULL CHECK (ordinal >= 0),
    turn_id           TEXT NOT NULL,
    provider_event_id TEXT,
    turn              TEXT NOT NULL,
    checkpoint_ref    TEXT,
    usage             TEXT,
    PRIMARY KEY (chat, ordinal),
    UNIQUE (chat, turn_id)
) STRICT;
";

/// Version 2: what contributions keep — failed-turn records, metadata key/values and
/// delegations — with the triggers that delete metadata together with its owner.
pub(crate) const V2_CONTRIBUTIONS: &str = "
CREATE TABLE failed_turns (
    seq            INTEGER PRIMARY KEY,
    chat           TEXT NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
    turn_id        TEXT NOT NULL,
    anchor_turn_id TEXT,
    error          TEXT NOT NULL,
    recorded_at    TEXT NOT NULL,
    UNIQUE (chat, turn_id)
) STRICT;

CREATE TABLE metadata (
    scope TEXT NOT NULL CHECK (scope IN ('session', 'chat')),
    uri   TEXT NOT NULL,
    key   TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (scope, uri, key)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER sessions_drop_metadata AFTER DELETE ON sessions BEGIN
    DELETE FROM metadata WHERE scope = 'session' AND uri = OLD.uri;
END;
CREATE TRIGGER chats_drop_metadata AFTER DELETE ON chats BEGIN
    DELETE FROM metadata WHERE scope = 'chat' AND uri = OLD.uri;
END;

CREATE TABLE delegations (
    seq     INTEGER PRIMARY KEY,
    chat    TEXT NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
    turn_id TEXT NOT NULL,
    value   TEXT NOT NULL,
    UNIQUE (chat, turn_id)
) STRICT;
";

/// Version 3: the checkpoint ledger — which git checkpoint ref belongs to which turn of a
/// session, in turn order. No foreign key: the ledger may be written before the session row
/// lands, so a trigger deletes the rows with their session instead.
pub(crate) const V3_CHECKPOINT_LEDGER: &str = "
CREATE TABLE checkpoint_turns (
    seq            INTEGER PRIMARY KEY,
    session        TEXT NOT NULL,
    turn_id        TEXT NOT NULL,
    checkpoint_ref TEXT,
    UNIQUE (session, turn_id)
) STRICT;

CREATE TRIGGER sessions_drop_checkpoint_turns AFTER DELETE ON sessions BEGIN
    DELETE FROM checkpoint_turns WHERE session = OLD.uri;
END;
";

/// Version 4: open-turn markers — the user's message of a turn that started and has not been
/// stored as finished yet. Written in the commit that starts the turn, deleted in the
/// transaction that stores the finished turn: a marker still there when the host starts again
/// is a turn the host died during.
pub(crate) const V4_OPEN_TURNS: &str = "
CREATE TABLE open_turns (
    chat    TEXT PRIMARY KEY NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
    turn_id TEXT NOT NULL,
    turn    TEXT NOT NULL
) STRICT;
";

/// Version 5: named connection tokens (only a hash of each is kept) and the audit log of what
/// clients decided (confirmation answers, cancels, rollbacks), with the token and client id.
pub(crate) const V5_ACCESS: &str = "
CREATE TABLE tokens (
    name       TEXT PRIMARY KEY NOT NULL,
    hash       TEXT NOT NULL UNIQUE,
    scope      TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;

CREATE TABLE audit (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,
    token     TEXT NOT NULL,
    client_id TEXT NOT NULL,
    channel   TEXT NOT NULL,
    action    TEXT NOT NULL,
    detail    TEXT NOT NULL
) STRICT;
";

/// Version 6: the spend ledger — each turn's estimated cost per chat, with the session (so a
/// session's total is one indexed sum) and the time it was last updated (for a spend report
/// over a period). Rows go with their chat.
pub(crate) const V6_SPEND: &str = "
CREATE TABLE spend (
    session    TEXT NOT NULL,
    chat       TEXT NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
    turn_id    TEXT NOT NULL,
    provider   TEXT NOT NULL,
    cost_usd   REAL CHECK (cost_usd IS NULL OR cost_usd >= 0),
    incomplete INTEGER NOT NULL CHECK (incomplete IN (0, 1)),
    at         TEXT NOT NULL,
    PRIMARY KEY (chat, turn_id)
) STRICT;
CREATE INDEX spend_by_session ON spend (session);
CREATE INDEX spend_by_time ON spend (at);
";

/// The schema's history, oldest first. Append a step to change the schema; never edit one that
/// has shipped.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: V1_CONVERSATION,
    },
    Migration {
        version: 2,
        sql: V2_CONTRIBUTIONS,
    },
    Migration {
        version: 3,
        sql: V3_CHECKPOINT_LEDGER,
    },
    Migration {
        version: 4,
        sql: V4_OPEN_TURNS,
    },
    Migration {
        version: 5,
        sql: V5_ACCESS,
    },
    Migration {
        version: 6,
        sql: V6_SPEND,
    },
];

/// Looks at the first bytes of `path` before SQLite touches it. Returns whether the file
/// existed. A file that exists and is not empty must start with the SQLite header: anything else
/// is refused here, so SQLite never gets the chance to write to it.
pub(crate) fn check_file(path: &Path) -> Result<bool, StoreError> {
    let open_error = |reason: String| StoreError::Open {
        path: path.to_path_buf(),
        reason,
    };
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(open_error(error.to_string())),
    };
    let metadata = file
        .metadata()
        .map_err(|error| open_error(error.to_string()))?;
    if metadata.is_dir() {
        return Err(open_error("it is a directory".to_owned()));
    }
    let mut header = [0_u8; 16];
    let mut filled = 0;
    while filled < header.len() {
        match file.read(&mut header[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(open_error(error.to_string())),
        }
    }
    if filled == 0 {
        // An empty file is an empty SQLite database: SQLite initialises it.
        return Ok(true);
    }
    if filled < header.len() || &header != SQLITE_HEADER {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
        });
    }
    Ok(true)
}

/// What the header and catalog of an opened database say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// No tables, no application id: a new (or empty) file, ours to initialise.
    Fresh,
    /// An agenthost database at this schema version.
    Ours(u32),
}

/// Reads `application_id`, `user_version` and the list of schema objects — reads only, so a
/// foreign database is never modified — and decides whether the database is ours.
pub(crate) fn inspect(conn: &Connection, path: &Path) -> Result<Found, StoreError> {
    let sqlite = |error| StoreError::sqlite(path, error);
    let application_id: i32 = conn
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .map_err(sqlite)?;
    let user_version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sqlite)?;
    let mut statement = conn
        .prepare(
            "SELECT type || ' ' || name FROM sqlite_master \
             WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name",
        )
        .map_err(sqlite)?;
    let objects = statement
        .query_map([], |row| row.get::<_, String>(0))
        .map_err(sqlite)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sqlite)?;

    if application_id == APPLICATION_ID {
        let version = u32::try_from(user_version).unwrap_or(u32::MAX);
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        return Ok(Found::Ours(version));
    }
    if application_id != 0 {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            detail: format!(
                "application_id {application_id:#010x}, agenthost's is {APPLICATION_ID:#010x}"
            ),
        });
    }
    if objects.is_empty() && user_version == 0 {
        return Ok(Found::Fresh);
    }
    let mut detail = format!("no agenthost application_id, user_version {user_version}");
    if !objects.is_empty() {
        let shown: Vec<&str> = objects.iter().take(5).map(String::as_str).collect();
        let more = objects.len().saturating_sub(shown.len());
        detail.push_str(&format!(", unknown schema objects: {}", shown.join(", ")));
        if more > 0 {
            detail.push_str(&format!(" and {more} more"));
        }
    }
    Err(StoreError::Foreign {
        path: path.to_path_buf(),
        detail,
    })
}

/// Sets the per-connection pragmas. File databases switch to WAL (persistent in the file) with
/// `synchronous = NORMAL`; see the crate documentation for why.
pub(crate) fn configure(conn: &Connection, path: &Path, file: bool) -> Result<(), StoreError> {
    let sqlite = |error| StoreError::sqlite(path, error);
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))
        .map_err(sqlite)?;
    if file {
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(sqlite)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Open {
                path: path.to_path_buf(),
                reason: format!(
                    "SQLite kept journal mode `{mode}` instead of `wal` (is the file on a \
                     filesystem without shared memory support?)"
                ),
            });
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sqlite)?;
        conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)
            .map_err(sqlite)?;
    }
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(sqlite)?;
    Ok(())
}

/// Brings the database to the last version of `migrations`, in one `IMMEDIATE` transaction:
/// every step, the new `user_version` and the `application_id` commit together or not at all.
pub(crate) fn migrate(
    conn: &mut Connection,
    path: &Path,
    migrations: &[Migration],
) -> Result<(), StoreError> {
    let target = migrations.last().map_or(0, |step| step.version);
    let mut from = 0;
    let result = (|| -> rusqlite::Result<()> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Read again under the write lock: another process may have migrated meanwhile.
        let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
        from = u32::try_from(version).unwrap_or(u32::MAX);
        for step in migrations.iter().filter(|step| step.version > from) {
            tx.execute_batch(step.sql)?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.pragma_update(None, "user_version", i64::from(target.max(from)))?;
        tx.commit()
    })();
    result.map_err(|error| StoreError::Migration {
        path: path.to_path_buf(),
        from,
        to: target,
        reason: Box::new(StoreError::sqlite(path, error)),
    })
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;

//! [`StoreError`]: every way the store can fail, each with a message that says what to do.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// Why a store operation failed.
///
/// Every variant that concerns the database file names it, so an operator reading a log line
/// knows which file to look at. Writes that fail leave the database as it was before the call:
/// each logical write is one transaction, rolled back on any error.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file could not be opened or created (missing directory, no permission, a directory
    /// in its place, …).
    #[error(
        "cannot open the session database {}: {reason}. Check that its directory exists and that \
         the host may read and write there",
        path.display()
    )]
    Open {
        /// The database file.
        path: PathBuf,
        /// What the operating system or SQLite reported.
        reason: String,
    },

    /// Another process holds the database's directory (its exclusive lock, taken by
    /// [`crate::hold_exclusively`]): two hosts must never write one database.
    #[error(
        "the session database {} is in use by another process (it holds the lock on {})",
        path.display(),
        directory.display()
    )]
    Locked {
        /// The database file.
        path: PathBuf,
        /// The directory whose lock is held.
        directory: PathBuf,
    },

    /// The file exists but is not an SQLite database at all. It was left untouched.
    #[error(
        "{} is not an SQLite database (its first bytes are not the SQLite header); it was left \
         untouched. Move it away or point the host at another data directory",
        path.display()
    )]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },

    /// The file is an SQLite database whose pages are damaged. It was left untouched.
    #[error(
        "the session database {} is corrupted ({reason}); it was left untouched. Restore it from \
         a backup, or move it away to start with an empty database",
        path.display()
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported.
        reason: String,
    },

    /// The file is an SQLite database of another application. It was left untouched.
    #[error(
        "{} is an SQLite database of another application ({detail}); it was left untouched. Point \
         the host at its own data directory",
        path.display()
    )]
    Foreign {
        /// The database file.
        path: PathBuf,
        /// Why it is not ours: its `application_id`, or the tables it holds.
        detail: String,
    },

    /// The database was written by a newer agenthost whose schema this build does not know.
    #[error(
        "the session database {} has schema version {found}, newer than version {supported} that \
         this build of agenthost supports; it was left untouched. Upgrade agenthost",
        path.display()
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// The schema version found in the file.
        found: u32,
        /// The newest schema version this build knows.
        supported: u32,
    },

    /// Upgrading an older schema failed; the migration transaction was rolled back, so the file
    /// still holds the old version.
    #[error(
        "cannot migrate the session database {} from schema version {from} to {to}: {reason}. \
         Nothing was changed; fix the cause and start the host again",
        path.display()
    )]
    Migration {
        /// The database file.
        path: PathBuf,
        /// The version found.
        from: u32,
        /// The version the migration was heading for.
        to: u32,
        /// The underlying failure (its message says which).
        reason: Box<StoreError>,
    },

    /// The database (or its directory) cannot be written.
    #[error(
        "the session database {} is read-only ({reason}); the write was rolled back. Give the \
         host write access to the file, its `-wal`/`-shm` companions and their directory",
        path.display()
    )]
    ReadOnly {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported.
        reason: String,
    },

    /// The disk (or the database's size limit) is full.
    #[error(
        "the disk holding the session database {} is full; the write was rolled back and the \
         database is unchanged. Free some space and retry",
        path.display()
    )]
    DiskFull {
        /// The database file.
        path: PathBuf,
    },

    /// Another process held the database locked for longer than the busy timeout.
    #[error(
        "the session database {} stayed locked by another process for longer than {timeout_ms} \
         ms; the write was rolled back. Is a second host using the same data directory?",
        path.display()
    )]
    Busy {
        /// The database file.
        path: PathBuf,
        /// The busy timeout that expired.
        timeout_ms: u64,
    },

    /// `PRAGMA integrity_check` or `PRAGMA foreign_key_check` found problems.
    #[error(
        "the session database {} failed its integrity check: {report}. Restore it from a backup",
        path.display()
    )]
    Integrity {
        /// The database file.
        path: PathBuf,
        /// The first problems SQLite reported.
        report: String,
    },

    /// A stored value could not be read back as the type it was written as.
    #[error(
        "the session database {} holds an unreadable {column} in {table} row `{key}`: {reason}. \
         It was probably written by an incompatible build; restore a backup or delete that row",
        path.display()
    )]
    Decode {
        /// The database file.
        path: PathBuf,
        /// The table.
        table: &'static str,
        /// The row's key (a URI, or URI and turn id).
        key: String,
        /// The column.
        column: &'static str,
        /// Why it could not be read.
        reason: String,
    },

    /// A value could not be encoded as JSON (a map with non-string keys, a non-finite float …).
    #[error("cannot encode the {what} as JSON: {source}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },

    /// A host value key reserved for the store itself.
    #[error("`{0}` is the store's own key and cannot be set as a host value")]
    InvalidKey(String),

    /// The session, chat or turn a write refers to is not in the store.
    #[error("a {kind} named `{key}` already exists in the session database; choose another name")]
    AlreadyExists {
        /// What kind of record.
        kind: &'static str,
        /// Its name.
        key: String,
    },

    /// A record that must exist does not.
    #[error("no {kind} `{key}` in the session database; create it before writing to it")]
    NotFound {
        /// `"session"`, `"chat"` or `"turn"`.
        kind: &'static str,
        /// Its URI (for a turn: the chat URI and the turn id).
        key: String,
    },

    /// Any other SQLite failure.
    #[error("the session database {} failed: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },

    /// A closure run through [`Store::blocking`](crate::Store::blocking) panicked or its task was
    /// cancelled by a runtime shutting down.
    #[error("the blocking store task did not finish: {reason}")]
    Task {
        /// The panic or cancellation reported by tokio.
        reason: String,
    },
}

/// A convenience alias for results of this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// How long a connection waits for another process's lock before giving up.
pub(crate) const BUSY_TIMEOUT_MS: u64 = 5_000;

impl StoreError {
    /// Classifies an SQLite error on the database at `path` into the variant an operator can
    /// act on.
    pub(crate) fn sqlite(path: &Path, error: rusqlite::Error) -> Self {
        let Some(code) = error.sqlite_error_code() else {
            return Self::Sqlite {
                path: path.to_path_buf(),
                source: error,
            };
        };
        // SQLite's message, without the path it sometimes appends (the variant names the file).
        let reason = error
            .to_string()
            .replace(&format!(": {}", path.display()), "");
        let path = path.to_path_buf();
        match code {
            ErrorCode::DiskFull => Self::DiskFull { path },
            ErrorCode::ReadOnly => Self::ReadOnly { path, reason },
            ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => Self::Corrupt { path, reason },
            ErrorCode::CannotOpen | ErrorCode::PermissionDenied => Self::Open { path, reason },
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => Self::Busy {
                path,
                timeout_ms: BUSY_TIMEOUT_MS,
            },
            _ => Self::Sqlite {
                path,
                source: error,
            },
        }
    }

    /// An encoding error for `what`.
    pub(crate) fn encode(what: &'static str, source: serde_json::Error) -> Self {
        Self::Encode { what, source }
    }

    /// A missing `kind` named `key`.
    pub(crate) fn not_found(kind: &'static str, key: impl Into<String>) -> Self {
        Self::NotFound {
            kind,
            key: key.into(),
        }
    }
}

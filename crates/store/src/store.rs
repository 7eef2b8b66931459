//! [`Store`]: the handle, opening and configuring the database, and the transaction plumbing the
//! typed methods (in `sessions`, `chats`, `turns`, `metadata`) are built on.

use std::fs;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};

use crate::error::{Result, StoreError};
use crate::schema::{self, Found, MIGRATIONS, SCHEMA_VERSION};

/// The `meta` key of the `serverSeq` high-water mark.
const SERVER_SEQ_HIGH_WATER: &str = "server_seq_high_water";

/// The durable session database of one host.
///
/// A cheap handle: clones share one SQLite connection behind a mutex, so every call is
/// serialised and every logical write is one `IMMEDIATE` transaction — a call either fully
/// happens or not at all.
///
/// **Every method blocks** on SQLite (and, for writes, on the disk). Async callers must not call
/// them on a runtime worker thread: wrap the calls in [`Store::blocking`] (or
/// `tokio::task::spawn_blocking` directly).
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Mutex<Connection>,
    /// The database file, or `:memory:`; named in every error.
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

/// A failure inside a transaction: SQLite's own, or one of ours. Turned into a [`StoreError`]
/// naming the file once the transaction is rolled back.
#[derive(Debug)]
pub(crate) enum Failure {
    /// An SQLite error, classified by [`StoreError::sqlite`].
    Sql(rusqlite::Error),
    /// A stored value that cannot be decoded.
    Decode {
        table: &'static str,
        key: String,
        column: &'static str,
        reason: String,
    },
    /// Any other error, already complete.
    Store(StoreError),
}

impl From<rusqlite::Error> for Failure {
    fn from(error: rusqlite::Error) -> Self {
        Self::Sql(error)
    }
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

/// The directories this process holds locked ([`hold_exclusively`]), each with its open file.
static HELD: Mutex<Vec<(PathBuf, fs::File)>> = Mutex::new(Vec::new());

/// Takes, for the rest of this process, an exclusive advisory lock (`flock`) on the directory of
/// the database at `path`: two host processes must never write one database. The lock belongs
/// to the open file, so a process that dies releases it; taking it again in the same process
/// does nothing (tests and embedders run several hosts on one directory in one process, one
/// after the other). A lock another process holds is [`StoreError::Locked`]. Plain opens
/// ([`Store::open`]: a tool writing tokens while a host runs) are not held back.
pub fn hold_exclusively(path: &Path) -> Result<()> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let open_error = |reason: String| StoreError::Open {
        path: path.to_path_buf(),
        reason,
    };
    let key = directory
        .canonicalize()
        .map_err(|error| open_error(format!("cannot resolve {}: {error}", directory.display())))?;
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    if held.iter().any(|(dir, _)| *dir == key) {
        return Ok(());
    }
    let lock = fs::File::open(&key).map_err(|error| {
        open_error(format!("cannot open {} to lock it: {error}", key.display()))
    })?;
    match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {
            held.push((key, lock));
            Ok(())
        }
        Err(rustix::io::Errno::WOULDBLOCK) => Err(StoreError::Locked {
            path: path.to_path_buf(),
            directory: key,
        }),
        Err(error) => Err(open_error(format!(
            "cannot lock {}: {error}",
            key.display()
        ))),
    }
}

impl Store {
    /// Opens the database at `path` (by convention `<data-dir>/agenthost.db`), creating it when
    /// missing and migrating an older schema in one transaction.
    ///
    /// Refuses, naming the file and leaving it untouched: a file that is not SQLite
    /// ([`StoreError::NotADatabase`]), a damaged one ([`StoreError::Corrupt`]), another
    /// application's database ([`StoreError::Foreign`]) and one written by a newer schema
    /// ([`StoreError::TooNew`]). The directory must exist. When creating a new file fails
    /// (read-only directory, disk full), whatever was created is removed again.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let existed = schema::check_file(path)?;
        // Files this call may create, to remove again if creating the database fails.
        let created: Vec<PathBuf> = if existed {
            Vec::new()
        } else {
            database_files(path)
                .into_iter()
                .filter(|file| !file.exists())
                .collect()
        };
        let opened = Self::open_file(path);
        if opened.is_err() {
            for file in created {
                // Best effort: the open error is what the caller needs to see.
                let _ = fs::remove_file(file);
            }
        }
        opened
    }

    /// [`Store::open`] for a host: the database's directory is locked first ([`hold_exclusively`]),
    /// so a second host process on it is refused ([`StoreError::Locked`]) and nothing is opened.
    pub fn open_exclusive(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        hold_exclusively(path)?;
        Self::open(path)
    }

    fn open_file(path: &Path) -> Result<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(path, flags)
            .map_err(|error| StoreError::sqlite(path, error))?;
        conn.busy_timeout(std::time::Duration::from_millis(
            crate::error::BUSY_TIMEOUT_MS,
        ))
        .map_err(|error| StoreError::sqlite(path, error))?;
        // Reads only: a foreign file is refused before any pragma could write to it.
        let found = schema::inspect(&conn, path)?;
        schema::configure(&conn, path, true)?;
        if found != Found::Ours(SCHEMA_VERSION) {
            schema::migrate(&mut conn, path, MIGRATIONS)?;
        }
        Ok(Self::from_connection(conn, path.to_path_buf()))
    }

    /// A private database in memory, gone when the last clone is dropped. For tests and tools.
    pub fn open_in_memory() -> Result<Self> {
        let path = PathBuf::from(":memory:");
        let mut conn =
            Connection::open_in_memory().map_err(|error| StoreError::sqlite(&path, error))?;
        schema::configure(&conn, &path, false)?;
        schema::migrate(&mut conn, &path, MIGRATIONS)?;
        Ok(Self::from_connection(conn, path))
    }

    fn from_connection(conn: Connection, path: PathBuf) -> Self {
        Self {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                path,
            }),
        }
    }

    /// The database file (`:memory:` for [`Store::open_in_memory`]).
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` with this store on tokio's blocking pool, for async callers.
    ///
    /// ```no_run
    /// # async fn demo(store: agenthost_store::Store) -> agenthost_store::Result<()> {
    /// let sessions = store.blocking(|store| store.sessions()).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// The work starts when the future is first polled, which must be inside a tokio runtime.
    /// A panic in `f` comes back as [`StoreError::Task`]; the connection stays usable (an open
    /// transaction is rolled back as the panic unwinds).
    pub fn blocking<R, F>(&self, f: F) -> impl Future<Output = Result<R>> + Send + 'static
    where
        F: FnOnce(&Store) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let store = self.clone();
        async move {
            tokio::task::spawn_blocking(move || f(&store))
                .await
                .map_err(|error| StoreError::Task {
                    reason: error.to_string(),
                })?
        }
    }

    /// Checks the whole file: `PRAGMA integrity_check` must answer `ok` and
    /// `PRAGMA foreign_key_check` must find nothing. Reads every page: meant for tools, tests and
    /// an operator's explicit request, not for every start.
    pub fn integrity_check(&self) -> Result<()> {
        let conn = self.lock();
        let sqlite = |error| StoreError::sqlite(self.path(), error);
        let mut statement = conn.prepare("PRAGMA integrity_check(20)").map_err(sqlite)?;
        let lines = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(sqlite)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sqlite)?;
        if lines != ["ok"] {
            return Err(StoreError::Integrity {
                path: self.path().to_path_buf(),
                report: lines.join("; "),
            });
        }
        let mut statement = conn.prepare("PRAGMA foreign_key_check").map_err(sqlite)?;
        let violations = statement
            .query_map([], |row| {
                Ok(format!(
                    "{} row {} refers to a missing {} row",
                    row.get::<_, String>(0)?,
                    row.get::<_, Option<i64>>(1)?.unwrap_or_default(),
                    row.get::<_, String>(2)?,
                ))
            })
            .map_err(sqlite)?
            .take(20)
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sqlite)?;
        if !violations.is_empty() {
            return Err(StoreError::Integrity {
                path: self.path().to_path_buf(),
                report: violations.join("; "),
            });
        }
        Ok(())
    }

    /// The highest `serverSeq` ever recorded with
    /// [`raise_server_seq_high_water`](Self::raise_server_seq_high_water); 0 for a new database.
    /// A restarted host continues numbering above it.
    pub fn server_seq_high_water(&self) -> Result<u64> {
        self.read(read_high_water)
    }

    /// Raises the `serverSeq` high-water mark to `seq`; a lower `seq` leaves it unchanged (it
    /// never goes down). Returns the mark after the call.
    pub fn raise_server_seq_high_water(&self, seq: u64) -> Result<u64> {
        self.write(|tx| {
            let current = read_high_water(tx)?;
            if seq <= current {
                return Ok(current);
            }
            tx.prepare_cached(
                "INSERT INTO meta (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )?
            .execute((SERVER_SEQ_HIGH_WATER, seq.to_string()))?;
            Ok(seq)
        })
    }

    /// A host-wide value stored under `key` (the host's own settings and what it learned, e.g.
    /// the model limits agents reported); `None` when unset. The `serverSeq` high-water mark is
    /// not one of them.
    pub fn host_value(&self, key: &str) -> Result<Option<String>> {
        if key == SERVER_SEQ_HIGH_WATER {
            return Ok(None);
        }
        self.read(|conn| {
            Ok(conn
                .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
                .query_row([key], |row| row.get(0))
                .optional()?)
        })
    }

    /// Sets (`Some`) or removes (`None`) the host-wide value under `key`. The `serverSeq`
    /// high-water mark cannot be written this way.
    pub fn set_host_value(&self, key: &str, value: Option<&str>) -> Result<()> {
        if key == SERVER_SEQ_HIGH_WATER {
            return Err(StoreError::InvalidKey(key.to_owned()));
        }
        self.write(|tx| {
            match value {
                Some(value) => tx
                    .prepare_cached(
                        "INSERT INTO meta (key, value) VALUES (?1, ?2) \
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    )?
                    .execute((key, value))?,
                None => tx
                    .prepare_cached("DELETE FROM meta WHERE key = ?1")?
                    .execute([key])?,
            };
            Ok(())
        })
    }

    /// Locks the connection. A panic while it was held cannot have left a transaction open (its
    /// guard rolls back while unwinding), so a poisoned lock is simply taken over.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Connection> {
        self.inner
            .conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` in one `IMMEDIATE` transaction, committed when `f` succeeds and rolled back when
    /// it (or the commit) fails.
    pub(crate) fn write<R>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> std::result::Result<R, Failure>,
    ) -> Result<R> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|error| self.fail(Failure::Sql(error)))?;
        let value = f(&tx).map_err(|failure| self.fail(failure))?;
        tx.commit()
            .map_err(|error| self.fail(Failure::Sql(error)))?;
        Ok(value)
    }

    /// Runs the reads of `f` on the connection.
    pub(crate) fn read<R>(
        &self,
        f: impl FnOnce(&Connection) -> std::result::Result<R, Failure>,
    ) -> Result<R> {
        let conn = self.lock();
        f(&conn).map_err(|failure| self.fail(failure))
    }

    /// The [`StoreError`] of `failure`, naming this store's file.
    fn fail(&self, failure: Failure) -> StoreError {
        match failure {
            Failure::Sql(error) => StoreError::sqlite(self.path(), error),
            Failure::Decode {
                table,
                key,
                column,
                reason,
            } => StoreError::Decode {
                path: self.path().to_path_buf(),
                table,
                key,
                column,
                reason,
            },
            Failure::Store(error) => error,
        }
    }

    /// Test access to the raw connection (to simulate a full disk and the like).
    #[cfg(test)]
    pub(crate) fn with_connection<R>(&self, f: impl FnOnce(&Connection) -> R) -> R {
        f(&self.lock())
    }
}

fn read_high_water(conn: &Connection) -> std::result::Result<u64, Failure> {
    let text: Option<String> = conn
        .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([SERVER_SEQ_HIGH_WATER], |row| row.get(0))
        .optional()?;
    let Some(text) = text else { return Ok(0) };
    text.parse()
        .map_err(|error: std::num::ParseIntError| Failure::Decode {
            table: "meta",
            key: SERVER_SEQ_HIGH_WATER.to_owned(),
            column: "value",
            reason: error.to_string(),
        })
}

/// The database file and its companions (`-wal`, `-shm`, `-journal`).
fn database_files(path: &Path) -> Vec<PathBuf> {
    let mut files = vec![path.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        files.push(PathBuf::from(name));
    }
    files
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;

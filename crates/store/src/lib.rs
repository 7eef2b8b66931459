//! The durable session database of agenthost: sessions, chats, completed turns and what
//! contributions keep, in SQLite.
//!
//! **Central design decision: one database per host** — `<data-dir>/agenthost.db`, not a file
//! per session. The host lists every session at start: with one database that is one indexed
//! query ([`Store::sessions`]); with a file per session, 1 000 sessions would mean opening,
//! locking and recovering 1 000 files (and 1 000 WAL files) before the catalog could be shown.
//! One file also means one WAL and one transaction scope, so the writes that must agree — a
//! turn and its session's `modified_at`, a session and everything it owns on deletion, the
//! `serverSeq` high-water mark — are atomic across sessions without any protocol of our own.
//! Sessions are small next to their turns, so one file stays cheap to back up and to check.
//!
//! # Crash safety
//!
//! - **WAL journal, `synchronous = NORMAL`.** A commit appends the transaction to the WAL with
//!   `write(2)` before it returns, so once a method returns its data is in the operating
//!   system's page cache: killing the process (even `SIGKILL`, mid-transaction) loses nothing
//!   that was committed and never leaves a half-written transaction — SQLite ignores WAL frames
//!   without a commit record on recovery. What `NORMAL` gives up against `FULL` is an `fsync`
//!   per commit: after a **power loss or kernel crash** the last transactions since the previous
//!   checkpoint may be lost (rolled back as a whole; the file stays consistent). A completed
//!   turn surviving `SIGKILL` is the requirement; a power cut loses the host's live state
//!   anyway, and an `fsync` on every draft, flag and turn would be held under the store's lock.
//! - **Every logical write is one `IMMEDIATE` transaction** ([`Store`]'s methods), rolled back
//!   on any error — a full disk or a read-only file leaves the database as it was.
//! - **Foreign keys are on**, so deleting a session or chat cascades inside its transaction;
//!   triggers delete metadata with its owner and clear a deleted default chat.
//! - A **busy timeout** of 5 s covers another process (a backup, the `sqlite3` shell) briefly
//!   holding the file.
//!
//! # Versions
//!
//! `PRAGMA application_id` ([`APPLICATION_ID`]) marks the file as agenthost's, `PRAGMA
//! user_version` holds the schema version ([`SCHEMA_VERSION`]). [`Store::open`] creates a
//! missing file, migrates an older schema in one transaction, and refuses — naming the file,
//! never modifying it — a file that is not SQLite, a corrupted one, another application's
//! database, and one written by a newer schema (naming both versions).
//!
//! # Locking and async
//!
//! A [`Store`] is a cheap, cloneable handle on one connection behind a mutex: calls are
//! serialised, which is what SQLite does with writers anyway. Every method blocks; async
//! callers go through [`Store::blocking`] (tokio's blocking pool).
//!
//! All JSON columns hold AHP wire JSON (the `ahp-types` structs through `serde_json`), so what
//! is stored is exactly what a client would be sent. The schema is in the crate's README.
#![deny(missing_docs)]

mod access;
mod chats;
mod checkpoints;
mod codec;
mod error;
mod history;
mod metadata;
mod records;
mod schema;
mod sessions;
mod spend;
mod store;
mod turns;

pub use access::{AuditRecord, TokenRecord};
pub use error::{Result, StoreError};
pub use history::{DEFAULT_BACKLOG_LIMIT, HistoryWrite, HistoryWriter, Repair};
pub use records::{
    ChatRecord, DelegationRecord, FailedTurnRecord, MetaOwner, SessionRecord, TitleSource,
    TurnRecord,
};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use spend::{SessionSpend, SpendRecord, SpendTotal};
pub use store::{Store, hold_exclusively};

#[cfg(test)]
#[path = "fixtures_tests.rs"]
mod fixtures;

#[cfg(test)]
#[path = "crash_tests.rs"]
mod crash_tests;

#[cfg(test)]
#[path = "proptest_tests.rs"]
mod proptests;

//! The services of `agenthost-services` kept in the session database (`agenthost-store`,
//! SQLite): the implementations a host with a data directory registers.
//!
//! | Contract | Implementation here |
//! |---|---|
//! | `SessionDataStore` | [`StoreSessionData`]: metadata, turn usage, drafts, configuration, titles and flags in the catalog's tables; calls run on tokio's blocking pool |
//! | `AuditLog` | [`StoreAuditLog`]: the `audit` table, written in order off the calling thread |
//! | `CheckpointLedger` (`agenthost-checkpoint-api`) | [`StoreLedger`]: each turn's checkpoint ref, so it survives a restart |
//! | the lifecycle's persistence | [`persistence`]: the catalog, completed turns, and their restore into live state |
//!
//! [`stored_isolation`] reads a session's worktree record synchronously (the path checks of a
//! client's request need it before any await).
#![deny(missing_docs)]

mod audit;
mod isolation;
mod ledger;
pub mod persistence;
mod session_data;

pub use audit::StoreAuditLog;
pub use isolation::stored_isolation;
pub use ledger::StoreLedger;
pub use session_data::StoreSessionData;

//! The checkpoint contract of agenthost, without git: the [`CheckpointService`] trait the host
//! and its contributions capture and read checkpoints through, the [`CheckpointLedger`] it
//! records turn refs in, [`CheckpointError`], and the plain data they exchange (changesets,
//! rollback reports, repository summaries, linked worktrees).
//!
//! The implementation over git lives in `agenthost-checkpoint` (gix); this crate depends on
//! neither gix nor a database, so a contribution or a test can name the contract and use
//! [`NullCheckpointService`] or [`MemoryLedger`] without compiling git.
//!
//! ```
//! use std::sync::Arc;
//!
//! use agenthost_checkpoint_api::{CheckpointLedger, CheckpointService, MemoryLedger, NullCheckpointService};
//! use agenthost_protocol::SessionUri;
//!
//! let session: SessionUri = "copilot:/s1".parse().unwrap();
//! let ledger = MemoryLedger::new();
//! ledger.set_turn_checkpoint_ref(&session, "t1", "refs/agenthost/s1/turn/1").unwrap();
//! assert_eq!(ledger.all_checkpoint_refs(&session).unwrap(), ["refs/agenthost/s1/turn/1"]);
//!
//! // A host without checkpoints hands contributions the null service.
//! let checkpoints: Arc<dyn CheckpointService> = Arc::new(NullCheckpointService);
//! # drop(checkpoints);
//! ```
#![deny(missing_docs)]

mod error;
mod ledger;
mod service;
mod types;

pub use error::CheckpointError;
pub use ledger::{CheckpointLedger, LedgerError, MemoryLedger};
pub use service::{CheckpointService, NullCheckpointService};
pub use types::{
    BlobRef, ChangeKind, CheckpointPair, FileChange, ObjectFormat, RemoteInfo, RepoInfo,
    RollbackReport, Worktree, WorktreeInfo, WorktreeRefusal,
};

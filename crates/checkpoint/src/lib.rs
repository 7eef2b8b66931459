//! Per-turn git checkpoints for agenthost: the working tree of every repository a session works
//! in is captured at the start and at the end of each turn as commits kept alive by
//! session-private refs (`refs/agents/<session>/checkpoints/turn/<N>`), so a turn's diff shows
//! everything the turn changed — terminal commands included — and can be rolled back.
//!
//! **Central design decision: captures run in process on a private index kept alive between
//! captures, driven by a work-tree watcher — never on the user's index, never through git
//! processes.** Each repository gets one in-memory index of our own that mirrors the previous
//! capture's tree with stat data (built from `HEAD`'s tree, so the result is exactly git's
//! temporary-index sequence `read-tree HEAD; add -A; write-tree`, whatever the user staged). An
//! inotify watcher (Linux) reports which paths changed since the previous capture; a capture
//! runs gix's status on those paths only, hashes only changed and new files, and edits the
//! previous tree along the changed paths. Cost grows with the changed files, not the tree: a
//! capture with nothing changed examines nothing. Without a watcher (other platforms, inotify
//! limits, queue overflow, changed ignore rules, a moved `HEAD`) a capture falls back to a full
//! status pass over the private index, where clean files cost one `lstat`. The user's index,
//! `HEAD`, branches and work tree are never written: captures write objects only; refs are
//! written only under `refs/agents/`, without reflog or hooks.
//!
//! Layers, bottom up:
//!
//! - [`Repo`]: one opened repository — capture ([`Repo::capture_tree`]), commits with a fixed
//!   identity, ref transactions, [changesets](Repo::changeset), [rollback](Repo::rollback),
//!   [repository information](Repo::info). Blocking.
//! - [`repository_state`]: root, branch and remote URL of a folder's repository, without opening
//!   a [`Repo`]. Blocking.
//! - [`create_worktree`], [`remove_worktree`], [`worktree_exists`]: linked worktrees isolating a
//!   session (`<root>.worktrees/<name>` on branch `agents/<name>`), in process through gix's
//!   `worktree-mutation` feature like the rest of the crate (no `git` binary; no hooks run).
//!   Blocking.
//! - [`Checkpointer`]: the service's logic (baseline, turn start and end, overlapping turns,
//!   reading pairs, deletion, comparison) over a [`CheckpointLedger`] — the session database,
//!   behind a trait. Blocking.
//! - [`CheckpointService`]: the async contract; [`GitCheckpointService`] serializes each
//!   session's operations and runs them on tokio's blocking pool within a time budget;
//!   [`NullCheckpointService`] does nothing.
//!
//! Everything is best effort: a failed capture is logged and means "no checkpoint for this
//! turn"; it never fails the turn. The crate's README has the ref layout, the guarantees and the
//! measured numbers.

#![deny(missing_docs)]

mod capture;
mod changeset;
mod checkpointer;
mod config;
mod error;
mod info;
mod ledger;
mod refname;
mod repo;
mod repo_state;
mod service;
mod unified;
mod watch;

#[cfg(test)]
mod testutil;

pub use capture::{Capture, CaptureStats, SkippedFile};
pub use changeset::{BlobRef, ChangeKind, FileChange, RollbackReport};
pub use checkpointer::{CheckpointPair, Checkpointer};
pub use config::{CheckpointConfig, CommitTime, Identity};
pub use error::CheckpointError;
pub use info::{RemoteInfo, RepoInfo, WorktreeInfo};
pub use ledger::{CheckpointLedger, LedgerError, MemoryLedger};
pub use refname::{
    LEGACY_REF_ROOT, REF_ROOT, RefNameRule, SessionNamespace, sanitize_session_id,
    session_ref_component, turn_number, validate_ref_name,
};
pub use repo::{ObjectFormat, Repo};
pub use repo_state::{RepositoryState, repository_state};
pub use service::{CheckpointService, GitCheckpointService, NullCheckpointService};
pub use unified::unified_diff;

mod worktree;
pub use worktree::{
    MAX_WORKTREE_NAME_LEN, WORKTREE_BRANCH_PREFIX, WORKTREES_DIR_SUFFIX, Worktree, WorktreeRefusal,
    WorktreeRemoval, create_worktree, remove_worktree, validate_worktree_name, worktree_exists,
};

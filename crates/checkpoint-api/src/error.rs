//! [`CheckpointError`]: every way a checkpoint operation can fail.

use std::path::PathBuf;

/// Why a checkpoint operation failed.
///
/// Capture methods of the service never return this: they log it and carry on (a failed
/// checkpoint never fails a turn). Read and consumer methods (changesets, rollback, repository
/// information) return it so the caller can fall back to the edits it tracked itself.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The directory is not inside a git work tree (or is inside a bare repository).
    #[error("{} is not inside a git work tree", path.display())]
    NotAWorkTree {
        /// The directory that was asked about.
        path: PathBuf,
    },

    /// The repository uses an object format this build does not support.
    #[error(
        "{} uses the {format} object format, which this build of agenthost cannot write checkpoints for",
        path.display()
    )]
    UnsupportedObjectFormat {
        /// The repository's work tree.
        path: PathBuf,
        /// The object format (`sha1`, `sha256`).
        format: String,
    },

    /// The raw session id is empty, so no ref namespace can be derived from it.
    #[error("the session id is empty; no checkpoint refs can be named after it")]
    EmptySessionId,

    /// A ref name built by this crate failed git's ref-name rules (it is never used).
    #[error("`{name}` is not a valid git ref name: {reason}")]
    InvalidRefName {
        /// The rejected name.
        name: String,
        /// Which rule it broke.
        reason: String,
    },

    /// A revision (ref name or object id) does not resolve in the repository.
    #[error("`{rev}` does not resolve to a commit in {}", path.display())]
    UnknownRevision {
        /// The repository's work tree.
        path: PathBuf,
        /// The revision that was asked for.
        rev: String,
    },

    /// The operation needs a git-backed session (a baseline and turn checkpoints), and there is none.
    #[error("{what} requires a git-backed session: {reason}")]
    NotGitBacked {
        /// What was attempted (`comparison`, `rollback`, …).
        what: &'static str,
        /// Which piece is missing.
        reason: String,
    },

    /// The work took longer than the configured budget and was abandoned.
    #[error("the checkpoint operation exceeded its time budget of {budget_ms} ms")]
    Timeout {
        /// The budget, in milliseconds.
        budget_ms: u128,
    },

    /// Reading or writing a working-tree file failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`read`, `write`, `remove`, …).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// The checkpoint ledger (the session database) failed.
    #[error("the checkpoint ledger failed: {0}")]
    Ledger(#[from] crate::LedgerError),

    /// git (gix) reported an error while doing `context`.
    #[error("git failed to {context}: {source:#}")]
    Git {
        /// What was being done.
        context: &'static str,
        /// git's error (gix's, in `agenthost-checkpoint`), boxed: it is large.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A linked worktree name is unusable (see `agenthost_checkpoint::validate_worktree_name`).
    #[error("`{name}` is not a valid worktree name: {reason}")]
    InvalidWorktreeName {
        /// The rejected name.
        name: String,
        /// Which rule it broke.
        reason: String,
    },

    /// A linked worktree cannot be created: its directory or its branch is already there, or the
    /// repository has nothing to branch from.
    #[error("cannot create a worktree for {}: {refusal}", repo.display())]
    WorktreeRefused {
        /// The repository's work tree.
        repo: PathBuf,
        /// Why.
        refusal: crate::WorktreeRefusal,
    },

    /// A blocking task panicked or was cancelled.
    #[error("the checkpoint worker stopped unexpectedly: {0}")]
    Worker(String),
}

impl CheckpointError {
    /// Whether the operation failed because a work-tree file shrank while it was read (another
    /// writer rewrote it): reading it again, later, can succeed.
    pub fn is_file_changed_while_read(&self) -> bool {
        let root: &(dyn std::error::Error + 'static) = match self {
            Self::Git { source, .. } => &**source,
            Self::Io { source, .. } => source,
            _ => return false,
        };
        let mut current = Some(root);
        while let Some(error) = current {
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
            {
                return true;
            }
            current = error.source();
        }
        // gix may flatten its causes into text: recognise the kind by name then.
        format!("{root:#}").contains("UnexpectedEof")
            || format!("{root:?}").contains("UnexpectedEof")
    }
}

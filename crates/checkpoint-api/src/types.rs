//! The plain data of checkpoints: changesets, rollback reports, turn pairs, repository
//! summaries and linked worktrees.

use std::path::PathBuf;

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// The file is new.
    Added,
    /// The file changed (content, mode, or file ↔ symlink).
    Modified,
    /// The file is gone.
    Deleted,
    /// The file moved (similarity ≥ 50 %), possibly with edits.
    Renamed,
}

/// Where to read one side's content: the file `path` at revision `rev` (never the live file).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlobRef {
    /// The revision (ref name or commit id) as the caller gave it.
    pub rev: String,
    /// Repo-relative, `/`-separated path at that revision.
    pub path: String,
}

/// One changed file between two checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// How it changed.
    pub kind: ChangeKind,
    /// Repo-relative, `/`-separated path; the new path of a rename.
    pub path: String,
    /// The old path of a rename.
    pub old_path: Option<String>,
    /// Lines added (0 for binary content).
    pub lines_added: u32,
    /// Lines removed (0 for binary content).
    pub lines_removed: u32,
    /// Whether either side is binary (a NUL byte in its first 8 000 bytes).
    pub binary: bool,
    /// The old content; `None` for [`ChangeKind::Added`].
    pub before: Option<BlobRef>,
    /// The new content; `None` for [`ChangeKind::Deleted`].
    pub after: Option<BlobRef>,
}

/// What a rollback did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollbackReport {
    /// Paths whose start content was written back (modified, deleted, rename sources).
    pub restored: Vec<String>,
    /// Paths the turn had added (or renamed to) that were deleted.
    pub removed: Vec<String>,
    /// Paths that changed again after the turn (the work tree no longer matched the turn's end
    /// state): their later changes were overwritten.
    pub changed_since: Vec<String>,
    /// Paths left alone (nested repositories, which cannot be restored from a tree).
    pub skipped: Vec<String>,
}

/// The two sides of a turn's diff: `parent` is the turn's start commit (an object id) — or,
/// for turns recorded by the older single-commit design, a ref name equal to `current` —
/// and `current` is the turn's ref name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointPair {
    /// The start of the turn (object id or ref name).
    pub parent: String,
    /// The end of the turn (ref name).
    pub current: String,
}

impl CheckpointPair {
    /// Whether the pair spans nothing (a legacy no-op turn): the changeset is empty without
    /// touching git.
    pub fn is_empty(&self) -> bool {
        self.parent == self.current
    }
}

/// A remote and its URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteInfo {
    /// The remote's name (`origin`).
    pub name: String,
    /// The fetch URL, if configured.
    pub fetch_url: Option<String>,
    /// The push URL (the fetch URL unless `pushurl` is set).
    pub push_url: Option<String>,
}

/// A linked worktree of the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeInfo {
    /// Its id (the directory name under `.git/worktrees/`).
    pub id: String,
    /// Its work tree directory.
    pub path: PathBuf,
    /// The branch checked out there (short name), `None` when detached or unreadable.
    pub branch: Option<String>,
    /// Whether it is locked.
    pub locked: bool,
}

/// A summary of a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoInfo {
    /// The work tree's top-level directory.
    pub root: PathBuf,
    /// The current branch (short name, `main`); `None` when `HEAD` is detached.
    pub branch: Option<String>,
    /// The commit `HEAD` points at; `None` for an unborn `HEAD`.
    pub head: Option<String>,
    /// Whether this work tree is a linked worktree (not the main one).
    pub is_linked_worktree: bool,
    /// The object format.
    pub object_format: ObjectFormat,
    /// The remotes, sorted by name.
    pub remotes: Vec<RemoteInfo>,
    /// The linked worktrees of the repository (excluding the main work tree).
    pub worktrees: Vec<WorktreeInfo>,
}

/// The object format of a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectFormat {
    /// SHA-1: 40 hex digits.
    Sha1,
    /// SHA-256: 64 hex digits.
    Sha256,
}

impl ObjectFormat {
    /// `sha1` or `sha256`, as in `extensions.objectFormat`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sha1 => "sha1",
            Self::Sha256 => "sha256",
        }
    }
}

/// A linked worktree created by `agenthost_checkpoint::create_worktree`; keep it to remove the worktree later.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Worktree {
    /// The top-level directory (canonical) of the work tree the worktree was created from.
    pub repo_root: PathBuf,
    /// The linked worktree's directory: `<repo_root>.worktrees/<name>`.
    pub path: PathBuf,
    /// The branch checked out in it (short name): `agents/<name>`.
    pub branch: String,
    /// The commit id the branch started at (the commit `HEAD` pointed at on creation).
    pub base: String,
}

/// Why `agenthost_checkpoint::create_worktree` refused to create a worktree
/// ([`CheckpointError::WorktreeRefused`](crate::CheckpointError::WorktreeRefused)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeRefusal {
    /// Something already exists at the worktree's path.
    PathExists(PathBuf),
    /// The branch (short name) already exists.
    BranchExists(String),
    /// The repository has no commit yet (`HEAD` is unborn): there is nothing to branch from.
    UnbornHead,
    /// The repository root has no parent directory to put `<root>.worktrees/` in.
    NoParentDirectory,
}

impl std::fmt::Display for WorktreeRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::PathExists(path) => write!(f, "{} already exists", path.display()),
            Self::BranchExists(branch) => write!(f, "the branch `{branch}` already exists"),
            Self::UnbornHead => f.write_str("the repository has no commit yet"),
            Self::NoParentDirectory => {
                f.write_str("the repository root has no parent directory for its worktrees")
            }
        }
    }
}

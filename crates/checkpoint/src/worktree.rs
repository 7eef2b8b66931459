//! Linked worktrees that isolate an agent session from the user's work tree: [`create_worktree`],
//! [`remove_worktree`], [`worktree_exists`].
//!
//! A session's worktree lives next to the repository, at `<repo-root>.worktrees/<name>`
//! (`/x/proj` → `/x/proj.worktrees/<name>`), on a new branch `agents/<name>` that starts at the
//! commit `HEAD` points at. The user's `HEAD`, index, branches and work tree are never written:
//! creation writes the new branch, the worktree's private administration
//! (`.git/worktrees/<id>/`) and the new checkout only.
//!
//! **Done in process through gix** (`Repository::add_worktree` and `worktree::Proxy::remove`,
//! gix's `worktree-mutation` feature), like everything else in this crate: no `git` binary is
//! needed, nothing is parsed from a child process's output, and the branch is created and
//! deleted with compare-and-swap ref edits. The checkout honours the repository's attributes,
//! filters and sparse-checkout patterns, and writes the layout `git worktree` writes (git lists,
//! uses and removes these worktrees). Unlike `git worktree add`, no `post-checkout` hook runs.
//!
//! Every function blocks: call them from a blocking thread.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use gix::bstr::ByteSlice;
use gix::hash::ObjectId;
use gix::refs::transaction::{Change, PreviousValue, RefEdit, RefLog};

pub use agenthost_checkpoint_api::{Worktree, WorktreeRefusal};

use crate::error::{CheckpointError, GitContext};
use crate::repo::work_tree_root;

/// The namespace of the branches [`create_worktree`] creates: `agents/<name>`.
pub const WORKTREE_BRANCH_PREFIX: &str = "agents/";

/// The suffix of the directory next to the repository root that holds the worktrees:
/// `<repo-root>.worktrees/`.
pub const WORKTREES_DIR_SUFFIX: &str = ".worktrees";

/// The longest accepted worktree name, in bytes (names are ASCII).
pub const MAX_WORKTREE_NAME_LEN: usize = 100;

/// What [`remove_worktree`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorktreeRemoval {
    /// The worktree's directory existed and was deleted.
    pub removed_dir: bool,
    /// The worktree's registration (`.git/worktrees/<id>/`) was deleted — also when the directory
    /// was already gone (git calls this pruning).
    pub unregistered: bool,
    /// The branch still pointed at [`Worktree::base`] (nothing was committed on it) and was
    /// deleted.
    pub branch_deleted: bool,
    /// The branch exists and was left alone: it has commits of its own (it no longer points at
    /// [`Worktree::base`]), it is checked out in another work tree, or it is not an `agents/`
    /// branch. Nothing the user committed is ever lost.
    pub branch_kept: bool,
}

/// Checks a worktree name: not empty, at most [`MAX_WORKTREE_NAME_LEN`] characters, only ASCII
/// letters, digits, `.`, `_` and `-`, not starting with `.` or `-`, and `agents/<name>` a valid
/// branch name (no `..`, no `.lock` or `.` at the end). Such a name is one plain path component
/// everywhere, so it can never point outside `<repo-root>.worktrees/`.
pub fn validate_worktree_name(name: &str) -> Result<(), CheckpointError> {
    let invalid = |reason: String| CheckpointError::InvalidWorktreeName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("it is empty".into()));
    }
    if name.len() > MAX_WORKTREE_NAME_LEN {
        return Err(invalid(format!(
            "it is longer than {MAX_WORKTREE_NAME_LEN} characters"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(invalid(format!(
            "{bad:?} is not allowed (only ASCII letters, digits, '.', '_' and '-')"
        )));
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Err(invalid("it may not start with '.' or '-'".into()));
    }
    let full = branch_ref(&format!("{WORKTREE_BRANCH_PREFIX}{name}"));
    gix::refs::FullName::try_from(full.as_str()).map_err(|error| {
        invalid(format!(
            "`{WORKTREE_BRANCH_PREFIX}{name}` is not a valid branch name: {error}"
        ))
    })?;
    Ok(())
}

/// Creates a linked worktree for the repository whose work tree contains `dir`, at
/// `<repo-root>.worktrees/<name>`, on a new branch `agents/<name>` starting at the commit `HEAD`
/// points at. The files of that commit are checked out; the user's uncommitted changes stay
/// where they are.
///
/// When `dir` is inside a linked worktree, that worktree's top-level directory is the root.
///
/// Errors: [`CheckpointError::InvalidWorktreeName`] (see [`validate_worktree_name`]),
/// [`CheckpointError::NotAWorkTree`] (not in a work tree, or a bare repository),
/// [`CheckpointError::WorktreeRefused`] (the path or the branch already exists, or `HEAD` is
/// unborn) — all before anything is written; [`CheckpointError::Git`] or
/// [`CheckpointError::Io`] when the creation itself fails, after undoing what it did. It never
/// reuses an existing worktree: idempotence is the caller's job.
pub fn create_worktree(dir: &Path, name: &str) -> Result<Worktree, CheckpointError> {
    validate_worktree_name(name)?;
    let repo = gix::discover(dir).map_err(|error| {
        tracing::debug!(dir = %dir.display(), %error, "not a git work tree");
        CheckpointError::NotAWorkTree {
            path: dir.to_owned(),
        }
    })?;
    let root = work_tree_root(&repo, dir)?;
    let refused = |refusal| CheckpointError::WorktreeRefused {
        repo: root.clone(),
        refusal,
    };

    let base = repo
        .head()
        .git("read HEAD")?
        .try_peel_to_id()
        .git("resolve HEAD")?
        .map(gix::Id::detach)
        .ok_or_else(|| refused(WorktreeRefusal::UnbornHead))?;
    let path =
        worktree_path(&root, name).ok_or_else(|| refused(WorktreeRefusal::NoParentDirectory))?;
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(refused(WorktreeRefusal::PathExists(path)));
    }
    let branch = format!("{WORKTREE_BRANCH_PREFIX}{name}");
    let full = full_branch_name(&branch)?;
    if repo
        .try_find_reference(full.as_ref())
        .git("look up a branch")?
        .is_some()
    {
        return Err(refused(WorktreeRefusal::BranchExists(branch)));
    }

    let container = path
        .parent()
        .ok_or_else(|| refused(WorktreeRefusal::NoParentDirectory))?
        .to_owned();
    let created_container = std::fs::symlink_metadata(&container).is_err();
    std::fs::create_dir_all(&container).map_err(|source| CheckpointError::Io {
        action: "create",
        path: container.clone(),
        source,
    })?;
    // Undoes a failed creation: the container if we made it (and it is empty), the branch if
    // it still points where we put it.
    let undo = |branch_created: bool| {
        if branch_created && let Err(error) = delete_branch_if_at(&repo, &full, base) {
            tracing::warn!(branch = %branch, %error, "cannot delete the branch of a failed worktree");
        }
        if created_container {
            let _ = std::fs::remove_dir(&container);
        }
    };

    // git's message for `git branch <name> <start>` / `git worktree add -b`.
    if let Err(error) = repo.reference(
        full.clone(),
        base,
        PreviousValue::MustNotExist,
        format!("branch: Created from {base}"),
    ) {
        undo(false);
        return Err(error).git("create the worktree's branch");
    }
    if let Err(error) = repo.add_worktree(
        &path,
        gix::worktree::add::Head::Attached(full.clone()),
        gix::progress::Discard,
        &AtomicBool::new(false),
    ) {
        undo(true);
        return Err(error).git("add a linked worktree");
    }
    tracing::debug!(root = %root.display(), path = %path.display(), %branch, %base, "created a linked worktree");
    Ok(Worktree {
        repo_root: root,
        path,
        branch,
        base: base.to_string(),
    })
}

/// Removes a linked worktree made by [`create_worktree`]: deletes its directory — uncommitted
/// changes included, like `git worktree remove --force` — and its registration. A directory
/// already deleted by hand is fine: the registration is still removed (pruned); a worktree that
/// is no longer registered at all is left alone.
///
/// Then deletes the branch only if it still points at [`Worktree::base`] (nothing was committed
/// on it) and no other work tree has it checked out; otherwise the branch is kept and
/// [`WorktreeRemoval::branch_kept`] says so, so commits made in the worktree are never lost.
///
/// Errors: [`CheckpointError::NotAWorkTree`] when `repo_root` is no longer a repository;
/// [`CheckpointError::Git`] when the worktree is locked or cannot be deleted.
pub fn remove_worktree(worktree: &Worktree) -> Result<WorktreeRemoval, CheckpointError> {
    let repo = gix::open(&worktree.repo_root).map_err(|error| {
        tracing::debug!(root = %worktree.repo_root.display(), %error, "not a git work tree");
        CheckpointError::NotAWorkTree {
            path: worktree.repo_root.clone(),
        }
    })?;
    let mut removal = WorktreeRemoval::default();

    let wanted = normalized(&worktree.path);
    let registration = repo
        .worktrees()
        .git("list linked worktrees")?
        .into_iter()
        .find(|proxy| proxy.base().is_ok_and(|base| normalized(&base) == wanted));
    if let Some(proxy) = registration {
        let existed = std::fs::symlink_metadata(&worktree.path).is_ok();
        proxy
            .remove(
                gix::worktree::remove::Force::DiscardChanges,
                gix::progress::Discard,
            )
            .git("remove a linked worktree")?;
        removal.removed_dir = existed;
        removal.unregistered = true;
    } else if std::fs::symlink_metadata(&worktree.path).is_ok() {
        tracing::warn!(
            path = %worktree.path.display(),
            "not a registered worktree of {}; its directory is left alone",
            worktree.repo_root.display()
        );
    }

    let ours = worktree.branch.starts_with(WORKTREE_BRANCH_PREFIX);
    let (Ok(full), Some(base)) = (
        full_branch_name(&worktree.branch),
        ObjectId::from_hex(worktree.base.as_bytes()).ok(),
    ) else {
        // A record we did not write: never delete anything on its word.
        removal.branch_kept = branch_exists(&repo, &worktree.branch);
        return Ok(removal);
    };
    let Some(reference) = repo
        .try_find_reference(full.as_ref())
        .git("look up a branch")?
    else {
        return Ok(removal);
    };
    let at_base = reference.target().try_id() == Some(base.as_ref());
    if !ours || !at_base || checked_out(&repo, &full) {
        removal.branch_kept = true;
        return Ok(removal);
    }
    match delete_branch_if_at(&repo, &full, base) {
        Ok(()) => removal.branch_deleted = true,
        Err(error) => {
            // Moved in the meantime (or the ref store refused): keep it.
            tracing::warn!(branch = %worktree.branch, %error, "kept the worktree's branch");
            removal.branch_kept = true;
        }
    }
    Ok(removal)
}

/// Whether `worktree.path` is a linked work tree of the repository at `worktree.repo_root`: its
/// `.git` links to a private directory of that repository. False for the main work tree, for
/// missing directories, for plain folders and for worktrees of other repositories.
pub fn worktree_exists(worktree: &Worktree) -> bool {
    let Ok(linked) = gix::open(&worktree.path) else {
        return false;
    };
    if !matches!(linked.kind(), gix::repository::Kind::LinkedWorkTree) {
        return false;
    }
    let Some(workdir) = linked.workdir() else {
        return false;
    };
    if normalized(workdir) != normalized(&worktree.path) {
        return false;
    }
    let Ok(main) = gix::open(&worktree.repo_root) else {
        return false;
    };
    normalized(linked.common_dir()) == normalized(main.common_dir())
}

/// `<root>.worktrees/<name>`, or `None` for a root without a parent (`/`).
fn worktree_path(root: &Path, name: &str) -> Option<PathBuf> {
    let parent = root.parent()?;
    let mut container: OsString = root.file_name()?.to_owned();
    container.push(WORKTREES_DIR_SUFFIX);
    Some(parent.join(container).join(name))
}

/// `refs/heads/<branch>`.
fn branch_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

fn full_branch_name(branch: &str) -> Result<gix::refs::FullName, CheckpointError> {
    let full = branch_ref(branch);
    gix::refs::FullName::try_from(full.as_str()).map_err(|error| CheckpointError::InvalidRefName {
        name: full.clone(),
        reason: error.to_string(),
    })
}

fn branch_exists(repo: &gix::Repository, branch: &str) -> bool {
    repo.try_find_reference(branch_ref(branch).as_str())
        .ok()
        .flatten()
        .is_some()
}

/// Deletes `full` (and its reflog) if, and only if, it still points at `base` — one
/// compare-and-swap transaction, so a commit made concurrently is never dropped.
fn delete_branch_if_at(
    repo: &gix::Repository,
    full: &gix::refs::FullName,
    base: ObjectId,
) -> Result<(), CheckpointError> {
    repo.edit_reference(RefEdit {
        change: Change::Delete {
            expected: PreviousValue::MustExistAndMatch(gix::refs::Target::Object(base)),
            log: RefLog::AndReference,
        },
        name: full.clone(),
        deref: false,
    })
    .git("delete the worktree's branch")?;
    Ok(())
}

/// Whether any work tree of the repository (main or linked) has `full` checked out. Unreadable
/// work trees count as having it, so in doubt the branch is kept.
fn checked_out(repo: &gix::Repository, full: &gix::refs::FullName) -> bool {
    let Ok(worktrees) = repo.worktrees_including_main() else {
        return true;
    };
    for worktree in worktrees {
        let Ok(worktree) = worktree else {
            return true;
        };
        if let Ok(Some(head)) = worktree.head_name()
            && head.as_bstr().as_bytes() == full.as_bstr().as_bytes()
        {
            return true;
        }
    }
    false
}

/// `path` with symlinks resolved: canonical when it exists, else its canonical parent joined
/// with its last component, else as given.
fn normalized(path: &Path) -> PathBuf {
    if let Ok(path) = std::fs::canonicalize(path) {
        return path;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map_or_else(|_| path.to_owned(), |parent| parent.join(name)),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
#[path = "worktree_tests.rs"]
mod tests;

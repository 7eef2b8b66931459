//! [`RepoInfo`]: what other crates need to know about a repository (branch, remotes, linked
//! worktrees) — all git access of the workspace goes through this crate.

use std::path::PathBuf;

use gix::bstr::ByteSlice;

use crate::error::{CheckpointError, GitContext};
use crate::repo::{ObjectFormat, Repo};

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

impl Repo {
    /// Reads the branch, remotes and linked worktrees.
    pub fn info(&self) -> Result<RepoInfo, CheckpointError> {
        let repo = self.gix();
        let branch = repo
            .head_name()
            .git("read HEAD")?
            .map(|name| name.shorten().to_str_lossy().into_owned());
        let head = repo.head_id().ok().map(|id| id.to_string());
        let mut remotes = Vec::new();
        for name in repo.remote_names() {
            let Ok(remote) = repo.find_remote(name.as_bstr()) else {
                continue;
            };
            let url = |direction| {
                remote
                    .url(direction)
                    .map(|url| url.to_bstring().to_str_lossy().into_owned())
            };
            remotes.push(RemoteInfo {
                name: name.to_str_lossy().into_owned(),
                fetch_url: url(gix::remote::Direction::Fetch),
                push_url: url(gix::remote::Direction::Push),
            });
        }
        remotes.sort_by(|a, b| a.name.cmp(&b.name));
        let mut worktrees = Vec::new();
        for proxy in repo.worktrees().git("list linked worktrees")? {
            let id = proxy
                .id()
                .map(|id| id.to_str_lossy().into_owned())
                .unwrap_or_default();
            let Ok(path) = proxy.base() else { continue };
            let locked = proxy.is_locked();
            let branch = proxy
                .into_repo_with_possibly_inaccessible_worktree()
                .ok()
                .and_then(|linked| linked.head_name().ok().flatten())
                .map(|name| name.shorten().to_str_lossy().into_owned());
            worktrees.push(WorktreeInfo {
                id,
                path,
                branch,
                locked,
            });
        }
        worktrees.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(RepoInfo {
            root: self.root().to_owned(),
            branch,
            head,
            is_linked_worktree: repo.kind() == gix::repository::Kind::LinkedWorkTree,
            object_format: self.object_format(),
            remotes,
            worktrees,
        })
    }
}

#[cfg(test)]
#[path = "info_tests.rs"]
mod tests;

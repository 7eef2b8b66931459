//! [`repository_state`]: the few facts about the repository a folder belongs to that a caller
//! needs to name it elsewhere (root, branch, remote URL) — a cheap read that does not set up
//! the capture machinery of [`Repo`](crate::Repo).

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;

use crate::error::{CheckpointError, GitContext};

/// The repository a folder belongs to, as far as naming it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryState {
    /// The work tree's top-level directory (canonical).
    pub root: PathBuf,
    /// The current branch (short name, `main`); `None` when `HEAD` is detached.
    pub branch: Option<String>,
    /// The fetch URL of the `origin` remote, or of the first remote by name when there is no
    /// `origin`; `None` without remotes.
    pub remote_url: Option<String>,
}

/// Reads the root, current branch and remote URL of the work tree containing `dir` (searching
/// upwards). Bare repositories and directories outside any repository give
/// [`CheckpointError::NotAWorkTree`]. Blocking: call it from a blocking thread.
pub fn repository_state(dir: &Path) -> Result<RepositoryState, CheckpointError> {
    let not_a_work_tree = || CheckpointError::NotAWorkTree {
        path: dir.to_owned(),
    };
    let repo = gix::discover(dir).map_err(|error| {
        tracing::debug!(dir = %dir.display(), %error, "not a git work tree");
        not_a_work_tree()
    })?;
    let root = crate::repo::work_tree_root(&repo, dir)?;
    let branch = repo
        .head_name()
        .git("read HEAD")?
        .map(|name| name.shorten().to_str_lossy().into_owned());
    let mut names: Vec<String> = repo
        .remote_names()
        .into_iter()
        .map(|name| name.to_str_lossy().into_owned())
        .collect();
    names.sort();
    let preferred = names
        .iter()
        .position(|name| name == "origin")
        .map_or(names.first(), |index| names.get(index));
    let remote_url = preferred.and_then(|name| {
        let remote = repo.find_remote(name.as_str()).ok()?;
        remote
            .url(gix::remote::Direction::Fetch)
            .map(|url| url.to_bstring().to_str_lossy().into_owned())
    });
    Ok(RepositoryState {
        root,
        branch,
        remote_url,
    })
}

#[cfg(test)]
#[path = "repo_state_tests.rs"]
mod tests;

//! [`RepoInfo`]: what other crates need to know about a repository (branch, remotes, linked
//! worktrees) — all git access of the workspace goes through this crate.

use gix::bstr::ByteSlice;

pub use agenthost_checkpoint_api::{RemoteInfo, RepoInfo, WorktreeInfo};

use crate::error::{CheckpointError, GitContext};
use crate::repo::Repo;

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

//! The services of `agenthost-services` that reach git and GitHub: the implementations a host
//! registers for a folder's repository reference and for isolated worktrees.
//!
//! | Contract | Implementation here |
//! |---|---|
//! | `GitState` | [`GitHubGitState`]: remote and branch through `agenthost-checkpoint` (gix), the branch's pull request through GitHub's REST API (hyper, rustls); degrades to remote + branch |
//! | `WorktreeIsolation` | [`GitWorktrees`]: linked worktrees next to each repository, recorded as session metadata |
//!
//! [`github_slug`] and [`without_credentials`] are the remote-URL helpers the GitHub lookup
//! uses.
#![deny(missing_docs)]

mod github;
mod worktrees;

pub use github::{
    DEFAULT_GITHUB_API, GitHubConfig, GitHubGitState, GitHubSlug, github_slug, without_credentials,
};
pub use worktrees::{GitWorktrees, worktree_name};

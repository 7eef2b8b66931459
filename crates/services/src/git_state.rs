//! [`GitState`]: the repository reference of a folder — remote, branch and, when GitHub can
//! tell, the pull request for the branch.
//!
//! [`GitHubGitState`] reads the repository through `agenthost-checkpoint` (the only crate that
//! talks to git) on a blocking thread, then asks the GitHub REST API for the branch's pull
//! request over HTTP or HTTPS (rustls with the platform's root certificates). The GitHub step is
//! best effort: no token, no network, a timeout, an error status, an unreadable answer or a
//! remote that is not on GitHub all degrade to remote + branch, with the reason logged at
//! `debug`. Only a folder that is not a repository (or cannot be read) is an error.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;

/// A pull request of the branch, as GitHub reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// Its number in the repository.
    pub number: u64,
    /// Its web page (`html_url`).
    pub url: String,
    /// `open`, `closed` or `merged` (a closed pull request with a merge time).
    pub state: String,
    /// Its title.
    pub title: String,
}

/// The repository reference of a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryReference {
    /// The work tree's top-level directory.
    pub root: PathBuf,
    /// The URL of the `origin` remote (or of the first remote); `None` without remotes.
    pub remote: Option<String>,
    /// The current branch; `None` when `HEAD` is detached.
    pub branch: Option<String>,
    /// The branch's most recent pull request, when GitHub could be asked and has one.
    pub pull_request: Option<PullRequest>,
    /// GitHub should have been asked (a GitHub remote, a branch) but could not be (no network,
    /// a rate limit, a server error): `pull_request` is `None` for want of an answer, not
    /// because the branch has none — a caller keeps what it knew.
    pub pull_request_unknown: bool,
}

/// Why a folder has no repository reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitStateError {
    /// The folder is not inside a git work tree.
    #[error("{} is not inside a git work tree", folder.display())]
    NotARepository {
        /// The folder that was asked about.
        folder: PathBuf,
    },
    /// The repository could not be read.
    #[error("could not read the repository of {}: {reason}", folder.display())]
    Unreadable {
        /// The folder that was asked about.
        folder: PathBuf,
        /// What failed.
        reason: String,
    },
}

/// Reads the repository reference of a folder.
pub trait GitState: Send + Sync {
    /// The reference of the repository containing `folder`. Errors only when the folder is not
    /// in a readable repository; a pull request that cannot be looked up is `None`.
    fn reference(
        &self,
        folder: &Path,
    ) -> BoxFuture<'static, Result<RepositoryReference, GitStateError>>;
}

#[cfg(feature = "fakes")]
pub(crate) mod fake {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    use futures::future::BoxFuture;

    use super::{GitState, GitStateError, RepositoryReference};

    /// A call to [`FakeGitState`].
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum GitStateCall {
        /// `reference(folder)`.
        Reference(PathBuf),
    }

    /// A recording [`GitState`] (feature `fakes`): answers from `references` by folder, and
    /// [`GitStateError::NotARepository`] for any other folder.
    #[derive(Debug, Default)]
    pub struct FakeGitState {
        calls: Mutex<Vec<GitStateCall>>,
        references: Mutex<BTreeMap<PathBuf, Result<RepositoryReference, GitStateError>>>,
    }

    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }

    impl FakeGitState {
        /// Every call so far, in order.
        pub fn calls(&self) -> Vec<GitStateCall> {
            lock(&self.calls).clone()
        }

        /// Scripts the answer for `folder`.
        pub fn answer(
            &self,
            folder: impl Into<PathBuf>,
            answer: Result<RepositoryReference, GitStateError>,
        ) {
            lock(&self.references).insert(folder.into(), answer);
        }
    }

    impl GitState for FakeGitState {
        fn reference(
            &self,
            folder: &Path,
        ) -> BoxFuture<'static, Result<RepositoryReference, GitStateError>> {
            lock(&self.calls).push(GitStateCall::Reference(folder.to_owned()));
            let answer = lock(&self.references)
                .get(folder)
                .cloned()
                .unwrap_or_else(|| {
                    Err(GitStateError::NotARepository {
                        folder: folder.to_owned(),
                    })
                });
            Box::pin(async move { answer })
        }
    }
}

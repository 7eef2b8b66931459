//! [`GitWorktrees`]: host-owned isolated worktrees through `agenthost_checkpoint`'s linked
//! worktrees, recorded in the session data store.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agenthost_checkpoint::{CheckpointError, Worktree, create_worktree, remove_worktree};
use agenthost_protocol::ahp_types::state::Turn;
use agenthost_protocol::uri::{file_uri_to_path, path_to_file_uri};
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_services::{
    DataError, DataOwner, IsolatedSession, IsolationError, SessionDataStore, WORKTREE_META_KEY,
    WorktreeIsolation, with_announcement,
};
use futures::future::BoxFuture;

/// [`WorktreeIsolation`] with `agenthost_checkpoint`'s linked worktrees, recorded in the
/// session data store.
pub struct GitWorktrees {
    data: Arc<dyn SessionDataStore>,
}

impl std::fmt::Debug for GitWorktrees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitWorktrees").finish_non_exhaustive()
    }
}

impl GitWorktrees {
    /// Records isolation in `data`.
    pub fn new(data: Arc<dyn SessionDataStore>) -> Self {
        Self { data }
    }

    async fn load(&self, session: &SessionUri) -> Option<IsolatedSession> {
        let raw = match self
            .data
            .meta(DataOwner::Session(session.clone()), WORKTREE_META_KEY)
            .await
        {
            Ok(raw) => raw?,
            Err(error) => {
                tracing::warn!(%session, %error, "cannot read the session's worktree record");
                return None;
            }
        };
        match serde_json::from_str(&raw) {
            Ok(record) => Some(record),
            Err(error) => {
                tracing::warn!(%session, %error, "ignoring an unreadable worktree record");
                None
            }
        }
    }

    async fn store(
        &self,
        session: &SessionUri,
        record: &IsolatedSession,
    ) -> Result<(), IsolationError> {
        let json = serde_json::to_string(record).map_err(|error| DataError::Encode {
            what: "worktree record",
            reason: error.to_string(),
        })?;
        self.data
            .set_meta(
                DataOwner::Session(session.clone()),
                WORKTREE_META_KEY,
                Some(json),
            )
            .await?;
        Ok(())
    }
}

/// The worktree name of `session`: its URI's id part reduced to the characters a worktree name
/// allows, bounded, prefixed `session-`; `attempt > 0` appends `-<attempt+1>`.
pub fn worktree_name(session: &SessionUri, attempt: usize) -> String {
    let raw = session.as_str();
    let id = raw
        .rsplit([':', '/'])
        .find(|s| !s.is_empty())
        .unwrap_or(raw);
    let mut name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    name = name.trim_matches('-').to_owned();
    if name.is_empty() {
        name.push_str("session");
    }
    let mut name = format!("session-{name}");
    if attempt > 0 {
        name.push_str(&format!("-{}", attempt + 1));
    }
    name
}

/// How many names [`create_for`] tries when the worktree path or branch is taken.
const NAME_ATTEMPTS: usize = 5;

/// Creates the worktree of `dir` for `session`, trying the next name when one is taken.
fn create_for(dir: &Path, session: &SessionUri) -> Result<Worktree, CheckpointError> {
    let mut attempt = 0;
    loop {
        match create_worktree(dir, &worktree_name(session, attempt)) {
            Err(CheckpointError::WorktreeRefused { refusal, .. })
                if attempt + 1 < NAME_ATTEMPTS
                    && matches!(
                        refusal,
                        agenthost_checkpoint::WorktreeRefusal::PathExists(_)
                            | agenthost_checkpoint::WorktreeRefusal::BranchExists(_)
                    ) =>
            {
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Blocking: the worktrees of `directories`, one per repository, or the first error after
/// removing what was created.
fn isolate_blocking(
    session: &SessionUri,
    directories: &[String],
) -> Result<IsolatedSession, IsolationError> {
    if directories.is_empty() {
        return Err(IsolationError::NoDirectory);
    }
    let mut record = IsolatedSession {
        worktrees: Vec::new(),
        requested: directories.to_vec(),
        directories: Vec::new(),
        announced: false,
    };
    let result = (|| {
        for uri in directories {
            let dir = file_uri_to_path(uri).map_err(|_| IsolationError::NotLocal(uri.clone()))?;
            let refused = |error: CheckpointError| IsolationError::Refused {
                directory: dir.display().to_string(),
                reason: error.to_string(),
            };
            let canonical = dir
                .canonicalize()
                .map_err(|error| IsolationError::Refused {
                    directory: dir.display().to_string(),
                    reason: error.to_string(),
                })?;
            let existing = record
                .worktrees
                .iter()
                .find(|w| canonical.starts_with(&w.repo_root))
                .cloned();
            let worktree = match existing {
                Some(worktree) => worktree,
                None => {
                    let created = create_for(&canonical, session).map_err(refused)?;
                    record.worktrees.push(created.clone());
                    created
                }
            };
            let inside = relocate(&canonical, &worktree);
            let inside_uri =
                path_to_file_uri(&inside).map_err(|_| IsolationError::NotLocal(uri.clone()))?;
            record.directories.push(inside_uri);
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(record),
        Err(error) => {
            release_blocking(&record);
            Err(error)
        }
    }
}

/// `dir` (inside `worktree.repo_root`) as the same path inside the worktree.
fn relocate(dir: &Path, worktree: &Worktree) -> PathBuf {
    match dir.strip_prefix(&worktree.repo_root) {
        Ok(relative) if !relative.as_os_str().is_empty() => worktree.path.join(relative),
        _ => worktree.path.clone(),
    }
}

fn release_blocking(record: &IsolatedSession) {
    for worktree in &record.worktrees {
        match remove_worktree(worktree) {
            Ok(removal) => tracing::info!(
                path = %worktree.path.display(),
                branch = worktree.branch,
                removed_dir = removal.removed_dir,
                branch_kept = removal.branch_kept,
                "removed a session worktree"
            ),
            Err(error) => tracing::warn!(
                path = %worktree.path.display(),
                %error,
                "cannot remove a session worktree"
            ),
        }
    }
}

impl WorktreeIsolation for GitWorktrees {
    fn isolate<'a>(
        &'a self,
        session: &'a SessionUri,
        directories: &'a [String],
    ) -> BoxFuture<'a, Result<IsolatedSession, IsolationError>> {
        let session = session.clone();
        let directories = directories.to_vec();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || isolate_blocking(&session, &directories))
                .await
                .map_err(|error| IsolationError::Refused {
                    directory: String::new(),
                    reason: format!("the worktree task failed: {error}"),
                })?
        })
    }

    fn record<'a>(
        &'a self,
        session: &'a SessionUri,
        record: &'a IsolatedSession,
    ) -> BoxFuture<'a, Result<(), IsolationError>> {
        Box::pin(self.store(session, record))
    }

    fn isolation<'a>(&'a self, session: &'a SessionUri) -> BoxFuture<'a, Option<IsolatedSession>> {
        Box::pin(self.load(session))
    }

    fn take_live_announcement<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            if *chat != ChatUri::default_for(session) {
                return None;
            }
            let mut record = self.load(session).await?;
            if record.announced {
                return None;
            }
            record.announced = true;
            if let Err(error) = self.store(session, &record).await {
                // Shown anyway: a second showing after a failed write beats none.
                tracing::warn!(%session, %error, "cannot mark the worktree announcement shown");
            }
            Some(record.announcement())
        })
    }

    fn restore_announcement<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turns: Vec<Turn>,
    ) -> BoxFuture<'a, Vec<Turn>> {
        Box::pin(async move {
            if *chat != ChatUri::default_for(session) || turns.is_empty() {
                return turns;
            }
            match self.load(session).await {
                Some(record) => with_announcement(turns, &record.announcement()),
                None => turns,
            }
        })
    }

    fn release<'a>(&'a self, record: &'a IsolatedSession) -> BoxFuture<'a, ()> {
        let record = record.clone();
        Box::pin(async move {
            if let Err(error) = tokio::task::spawn_blocking(move || release_blocking(&record)).await
            {
                tracing::warn!(%error, "the worktree removal task failed");
            }
        })
    }
}

#[cfg(test)]
#[path = "worktrees_tests.rs"]
mod tests;

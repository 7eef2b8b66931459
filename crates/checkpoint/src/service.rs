//! [`GitCheckpointService`]: the async face of the crate. It runs every operation of a session
//! in order, on tokio's blocking pool, within the time budget. The trait it implements,
//! [`CheckpointService`], and [`NullCheckpointService`] live in `agenthost-checkpoint-api`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agenthost_protocol::{ChatUri, SessionUri};
use futures::future::BoxFuture;

pub use agenthost_checkpoint_api::{CheckpointService, NullCheckpointService};

use crate::changeset::{FileChange, RollbackReport};
use crate::checkpointer::{CheckpointPair, Checkpointer};
use crate::config::CheckpointConfig;
use crate::error::CheckpointError;
use crate::info::RepoInfo;
use crate::ledger::CheckpointLedger;

/// The git-backed service: a [`Checkpointer`] behind a per-session sequencer, run on blocking
/// threads with the configured time budget.
#[derive(Clone)]
pub struct GitCheckpointService {
    core: Arc<Checkpointer>,
    sequencers: Arc<Mutex<HashMap<SessionUri, Arc<tokio::sync::Mutex<()>>>>>,
}

impl std::fmt::Debug for GitCheckpointService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitCheckpointService")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl GitCheckpointService {
    /// A service recording turn refs in `ledger`.
    pub fn new(config: CheckpointConfig, ledger: Arc<dyn CheckpointLedger>) -> Self {
        Self {
            core: Arc::new(Checkpointer::new(config, ledger)),
            sequencers: Arc::default(),
        }
    }

    /// The blocking engine (for synchronous callers and tests).
    pub fn checkpointer(&self) -> &Arc<Checkpointer> {
        &self.core
    }

    fn sequencer(&self, session: &SessionUri) -> Arc<tokio::sync::Mutex<()>> {
        self.sequencers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(session.clone())
            .or_default()
            .clone()
    }

    /// Runs `work` on the blocking pool after the session's earlier operations, within the
    /// budget. The session stays locked until the work really ends, even after a timeout (the
    /// work is told to stop and does so at its next check).
    async fn run<T: Send + 'static>(
        &self,
        session: Option<&SessionUri>,
        work: impl FnOnce(&Checkpointer, &AtomicBool) -> T + Send + 'static,
    ) -> Result<T, CheckpointError> {
        let guard = match session {
            Some(session) => Some(self.sequencer(session).lock_owned().await),
            None => None,
        };
        let core = self.core.clone();
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let handle = tokio::task::spawn_blocking(move || {
            let _guard = guard;
            work(&core, &flag)
        });
        let budget = self.core.config().budget;
        match tokio::time::timeout(budget, handle).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(CheckpointError::Worker(error.to_string())),
            Err(_) => {
                cancel.store(true, Ordering::Relaxed);
                Err(CheckpointError::Timeout {
                    budget_ms: budget.as_millis(),
                })
            }
        }
    }

    /// Like [`run`](Self::run) for capture methods: errors are logged, never returned.
    async fn run_logged(
        &self,
        session: &SessionUri,
        what: &'static str,
        work: impl FnOnce(&Checkpointer, &AtomicBool) + Send + 'static,
    ) {
        if let Err(error) = self.run(Some(session), work).await {
            tracing::warn!(%session, %error, "{what} did not complete");
        }
    }
}

impl CheckpointService for GitCheckpointService {
    fn capture_baseline<'a>(
        &'a self,
        session: &'a SessionUri,
        dirs: &'a [PathBuf],
    ) -> BoxFuture<'a, ()> {
        let (owned, dirs) = (session.clone(), dirs.to_vec());
        Box::pin(
            self.run_logged(session, "baseline checkpoint", move |core, cancel| {
                core.capture_baseline(&owned, &dirs, cancel);
            }),
        )
    }

    fn capture_turn_start<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turn: &'a str,
        dirs: &'a [PathBuf],
    ) -> BoxFuture<'a, ()> {
        let (owned, chat, turn, dirs) = (
            session.clone(),
            chat.clone(),
            turn.to_owned(),
            dirs.to_vec(),
        );
        Box::pin(
            self.run_logged(session, "turn-start checkpoint", move |core, cancel| {
                core.capture_turn_start(&owned, &chat, &turn, &dirs, cancel);
            }),
        )
    }

    fn capture_turn_end<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turn: &'a str,
        dirs: &'a [PathBuf],
    ) -> BoxFuture<'a, Result<Option<String>, CheckpointError>> {
        let (owned, chat, turn, dirs) = (
            session.clone(),
            chat.clone(),
            turn.to_owned(),
            dirs.to_vec(),
        );
        Box::pin(async move {
            self.run(Some(session), move |core, cancel| {
                core.capture_turn_end(&owned, &chat, &turn, &dirs, cancel)
            })
            .await?
        })
    }

    fn discard_turn_start<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turn: &'a str,
    ) -> BoxFuture<'a, ()> {
        let (owned, chat, turn) = (session.clone(), chat.clone(), turn.to_owned());
        Box::pin(
            self.run_logged(session, "discarding a turn start", move |core, _| {
                core.discard_turn_start(&owned, &chat, &turn);
            }),
        )
    }

    fn discard_chat_turn_starts<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
    ) -> BoxFuture<'a, ()> {
        let (owned, chat) = (session.clone(), chat.clone());
        Box::pin(self.run_logged(
            session,
            "discarding a chat's turn starts",
            move |core, _| {
                core.discard_chat_turn_starts(&owned, &chat);
            },
        ))
    }

    fn turn_pair<'a>(
        &'a self,
        session: &'a SessionUri,
        turn: &'a str,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Option<CheckpointPair>> {
        let (owned, turn, dir) = (session.clone(), turn.to_owned(), dir.map(Path::to_owned));
        Box::pin(async move {
            let result = self
                .run(Some(session), move |core, _| {
                    core.turn_pair(&owned, &turn, dir.as_deref())
                })
                .await;
            flatten_read(session, "reading a turn's checkpoints", result)
        })
    }

    fn baseline<'a>(
        &'a self,
        session: &'a SessionUri,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Option<String>> {
        let (owned, dir) = (session.clone(), dir.map(Path::to_owned));
        Box::pin(async move {
            let result = self
                .run(Some(session), move |core, _| {
                    core.baseline(&owned, dir.as_deref())
                })
                .await;
            flatten_read(session, "reading the baseline", result)
        })
    }

    fn latest_checkpoint<'a>(&'a self, session: &'a SessionUri) -> BoxFuture<'a, Option<String>> {
        let owned = session.clone();
        Box::pin(async move {
            let result = self
                .run(Some(session), move |core, _| core.latest_checkpoint(&owned))
                .await;
            flatten_read(session, "reading the newest checkpoint", result)
        })
    }

    fn delete_all<'a>(&'a self, session: &'a SessionUri, dirs: &'a [PathBuf]) -> BoxFuture<'a, ()> {
        let (owned, dirs) = (session.clone(), dirs.to_vec());
        Box::pin(async move {
            self.run_logged(session, "deleting checkpoints", move |core, _| {
                core.delete_all(&owned, &dirs);
            })
            .await;
            self.sequencers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(session);
        })
    }

    fn changeset<'a>(
        &'a self,
        dir: &'a Path,
        from: &'a str,
        to: &'a str,
    ) -> BoxFuture<'a, Result<Vec<FileChange>, CheckpointError>> {
        let (dir, from, to) = (dir.to_owned(), from.to_owned(), to.to_owned());
        Box::pin(async move {
            if from == to {
                return Ok(Vec::new());
            }
            self.run(None, move |core, _| core.changeset(&dir, &from, &to))
                .await?
        })
    }

    fn turn_changeset<'a>(
        &'a self,
        session: &'a SessionUri,
        turn: &'a str,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Vec<FileChange>>, CheckpointError>> {
        let (owned, turn, dir) = (session.clone(), turn.to_owned(), dir.map(Path::to_owned));
        Box::pin(async move {
            self.run(Some(session), move |core, _| {
                core.turn_changeset(&owned, &turn, dir.as_deref())
            })
            .await?
        })
    }

    fn compare_turns<'a>(
        &'a self,
        session: &'a SessionUri,
        original: Option<&'a str>,
        modified: &'a str,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Vec<FileChange>, CheckpointError>> {
        let owned = session.clone();
        let (original, modified, dir) = (
            original.map(str::to_owned),
            modified.to_owned(),
            dir.map(Path::to_owned),
        );
        Box::pin(async move {
            self.run(Some(session), move |core, _| {
                core.compare_turns(&owned, original.as_deref(), &modified, dir.as_deref())
            })
            .await?
        })
    }

    fn rollback_turn<'a>(
        &'a self,
        session: &'a SessionUri,
        turn: &'a str,
        dir: &'a Path,
    ) -> BoxFuture<'a, Result<RollbackReport, CheckpointError>> {
        let (owned, turn, dir) = (session.clone(), turn.to_owned(), dir.to_owned());
        Box::pin(async move {
            self.run(Some(session), move |core, _| {
                core.rollback_turn(&owned, &turn, &dir)
            })
            .await?
        })
    }

    fn repo_info<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<RepoInfo, CheckpointError>> {
        let dir = dir.to_owned();
        Box::pin(async move { self.run(None, move |core, _| core.repo_info(&dir)).await? })
    }

    fn unified_diff<'a>(
        &'a self,
        dir: &'a Path,
        changes: &'a [FileChange],
    ) -> BoxFuture<'a, Result<String, CheckpointError>> {
        let (dir, changes) = (dir.to_owned(), changes.to_vec());
        Box::pin(async move {
            self.run(None, move |core, _| core.unified_diff(&dir, &changes))
                .await?
        })
    }
}

/// A read's answer, with failures logged and turned into "nothing".
fn flatten_read<T>(
    session: &SessionUri,
    what: &'static str,
    result: Result<Result<Option<T>, CheckpointError>, CheckpointError>,
) -> Option<T> {
    match result.and_then(|inner| inner) {
        Ok(value) => value,
        Err(error) => {
            tracing::warn!(%session, %error, "{what} failed");
            None
        }
    }
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;

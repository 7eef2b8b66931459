//! [`FakeCheckpoints`]: a recording `CheckpointService` (feature `fakes`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agenthost_checkpoint_api::{
    CheckpointError, CheckpointPair, CheckpointService, FileChange, NullCheckpointService,
    RepoInfo, RollbackReport,
};
use agenthost_protocol::{ChatUri, SessionUri};
use futures::future::BoxFuture;

/// What the reads answer.
static NULL: NullCheckpointService = NullCheckpointService;

/// A call to [`FakeCheckpoints`] (the captures; reads are not recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointCall {
    /// `capture_baseline(session, dirs)`.
    Baseline(String, Vec<PathBuf>),
    /// `capture_turn_start(session, chat, turn, dirs)`.
    TurnStart(String, String, String, Vec<PathBuf>),
    /// `capture_turn_end(session, chat, turn, dirs)`, recorded when the capture starts.
    TurnEnd(String, String, String, Vec<PathBuf>),
    /// `discard_turn_start(session, chat, turn)`.
    DiscardTurnStart(String, String, String),
}

/// A recording checkpoint service (feature `fakes`): captures are recorded; the turn-end
/// capture answers [`answer_turn_end`](Self::answer_turn_end) (default `Ok(None)`) and waits
/// while the fake is [`hold`](Self::hold)ed. Everything else answers like
/// [`NullCheckpointService`].
#[derive(Debug)]
pub struct FakeCheckpoints {
    calls: Mutex<Vec<CheckpointCall>>,
    turn_end: Mutex<Result<Option<String>, String>>,
    held: tokio::sync::watch::Sender<bool>,
}

impl Default for FakeCheckpoints {
    fn default() -> Self {
        Self {
            calls: Mutex::default(),
            turn_end: Mutex::new(Ok(None)),
            held: tokio::sync::watch::Sender::new(false),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl FakeCheckpoints {
    /// Every capture so far, in order.
    pub fn calls(&self) -> Vec<CheckpointCall> {
        lock(&self.calls).clone()
    }

    /// What the turn-end captures answer (`Err(message)` becomes a worker error).
    pub fn answer_turn_end(&self, answer: Result<Option<String>, String>) {
        *lock(&self.turn_end) = answer;
    }

    /// Makes turn-end captures wait until [`release`](Self::release).
    pub fn hold(&self) {
        self.held.send_replace(true);
    }

    /// Lets held turn-end captures finish.
    pub fn release(&self) {
        self.held.send_replace(false);
    }

    fn record(&self, call: CheckpointCall) {
        lock(&self.calls).push(call);
    }
}

impl CheckpointService for FakeCheckpoints {
    fn capture_baseline<'a>(
        &'a self,
        session: &'a SessionUri,
        dirs: &'a [PathBuf],
    ) -> BoxFuture<'a, ()> {
        self.record(CheckpointCall::Baseline(session.to_string(), dirs.to_vec()));
        Box::pin(async {})
    }

    fn capture_turn_start<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turn: &'a str,
        dirs: &'a [PathBuf],
    ) -> BoxFuture<'a, ()> {
        self.record(CheckpointCall::TurnStart(
            session.to_string(),
            chat.to_string(),
            turn.to_owned(),
            dirs.to_vec(),
        ));
        Box::pin(async {})
    }

    fn capture_turn_end<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turn: &'a str,
        dirs: &'a [PathBuf],
    ) -> BoxFuture<'a, Result<Option<String>, CheckpointError>> {
        self.record(CheckpointCall::TurnEnd(
            session.to_string(),
            chat.to_string(),
            turn.to_owned(),
            dirs.to_vec(),
        ));
        let mut held = self.held.subscribe();
        Box::pin(async move {
            // A dropped sender cannot happen while `self` lives; either way, go on.
            let _ = held.wait_for(|held| !held).await;
            lock(&self.turn_end)
                .clone()
                .map_err(CheckpointError::Worker)
        })
    }

    fn discard_turn_start<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turn: &'a str,
    ) -> BoxFuture<'a, ()> {
        self.record(CheckpointCall::DiscardTurnStart(
            session.to_string(),
            chat.to_string(),
            turn.to_owned(),
        ));
        Box::pin(async {})
    }

    fn discard_chat_turn_starts<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
    ) -> BoxFuture<'a, ()> {
        NULL.discard_chat_turn_starts(session, chat)
    }

    fn turn_pair<'a>(
        &'a self,
        session: &'a SessionUri,
        turn: &'a str,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Option<CheckpointPair>> {
        NULL.turn_pair(session, turn, dir)
    }

    fn baseline<'a>(
        &'a self,
        session: &'a SessionUri,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Option<String>> {
        NULL.baseline(session, dir)
    }

    fn latest_checkpoint<'a>(&'a self, session: &'a SessionUri) -> BoxFuture<'a, Option<String>> {
        NULL.latest_checkpoint(session)
    }

    fn delete_all<'a>(&'a self, session: &'a SessionUri, dirs: &'a [PathBuf]) -> BoxFuture<'a, ()> {
        NULL.delete_all(session, dirs)
    }

    fn changeset<'a>(
        &'a self,
        dir: &'a Path,
        from: &'a str,
        to: &'a str,
    ) -> BoxFuture<'a, Result<Vec<FileChange>, CheckpointError>> {
        NULL.changeset(dir, from, to)
    }

    fn turn_changeset<'a>(
        &'a self,
        session: &'a SessionUri,
        turn: &'a str,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Vec<FileChange>>, CheckpointError>> {
        NULL.turn_changeset(session, turn, dir)
    }

    fn compare_turns<'a>(
        &'a self,
        session: &'a SessionUri,
        original: Option<&'a str>,
        modified: &'a str,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Vec<FileChange>, CheckpointError>> {
        NULL.compare_turns(session, original, modified, dir)
    }

    fn rollback_turn<'a>(
        &'a self,
        session: &'a SessionUri,
        turn: &'a str,
        dir: &'a Path,
    ) -> BoxFuture<'a, Result<RollbackReport, CheckpointError>> {
        NULL.rollback_turn(session, turn, dir)
    }

    fn repo_info<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<RepoInfo, CheckpointError>> {
        NULL.repo_info(dir)
    }

    fn unified_diff<'a>(
        &'a self,
        dir: &'a Path,
        changes: &'a [FileChange],
    ) -> BoxFuture<'a, Result<String, CheckpointError>> {
        NULL.unified_diff(dir, changes)
    }
}

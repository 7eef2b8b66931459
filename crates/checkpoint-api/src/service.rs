//! [`CheckpointService`]: per-turn git checkpoints as the host uses them, and
//! [`NullCheckpointService`], which does nothing.

use std::path::{Path, PathBuf};

use agenthost_protocol::{ChatUri, SessionUri};
use futures::future::BoxFuture;

use crate::{CheckpointError, CheckpointPair, FileChange, RepoInfo, RollbackReport};

/// Per-turn git checkpoints, as the host uses them.
///
/// Capture methods return nothing (a failure is logged and never fails the turn), except the
/// turn-end capture, whose failure its caller reports (`checkpointAndChangeset`). Read methods
/// return `None` when there is nothing to read. Consumer methods return errors so the caller
/// can fall back to the edits it tracked.
pub trait CheckpointService: Send + Sync {
    /// Captures the baseline (`turn/0`) in each repository of `dirs` that has none.
    fn capture_baseline<'a>(
        &'a self,
        session: &'a SessionUri,
        dirs: &'a [PathBuf],
    ) -> BoxFuture<'a, ()>;

    /// Captures the pre-turn state, right before the turn's message goes to the agent.
    fn capture_turn_start<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turn: &'a str,
        dirs: &'a [PathBuf],
    ) -> BoxFuture<'a, ()>;

    /// Captures the end of a completed turn and records its ref. `Ok(Some(ref))` when a ref was
    /// written, `Ok(None)` when there was nothing to capture (no git-backed directory, no
    /// baseline or no remembered start), `Err` when the capture failed (the caller reports it;
    /// it never fails the turn).
    fn capture_turn_end<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turn: &'a str,
        dirs: &'a [PathBuf],
    ) -> BoxFuture<'a, Result<Option<String>, CheckpointError>>;

    /// Drops the remembered start of a turn that did not complete.
    fn discard_turn_start<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
        turn: &'a str,
    ) -> BoxFuture<'a, ()>;

    /// Drops every remembered start of a chat (the chat was truncated).
    fn discard_chat_turn_starts<'a>(
        &'a self,
        session: &'a SessionUri,
        chat: &'a ChatUri,
    ) -> BoxFuture<'a, ()>;

    /// The `{ parent, current }` pair of a turn (default directory: the session's first).
    fn turn_pair<'a>(
        &'a self,
        session: &'a SessionUri,
        turn: &'a str,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Option<CheckpointPair>>;

    /// The session's baseline ref name, if it exists.
    fn baseline<'a>(
        &'a self,
        session: &'a SessionUri,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Option<String>>;

    /// The ref of the session's newest checkpointed turn, if any.
    fn latest_checkpoint<'a>(&'a self, session: &'a SessionUri) -> BoxFuture<'a, Option<String>>;

    /// Deletes every ref of the session in the repositories of `dirs`.
    fn delete_all<'a>(&'a self, session: &'a SessionUri, dirs: &'a [PathBuf]) -> BoxFuture<'a, ()>;

    /// The changeset between two revisions (ref names or object ids) of `dir`'s repository.
    fn changeset<'a>(
        &'a self,
        dir: &'a Path,
        from: &'a str,
        to: &'a str,
    ) -> BoxFuture<'a, Result<Vec<FileChange>, CheckpointError>>;

    /// The changeset of one turn; `Ok(None)` when the turn has no checkpoint pair.
    fn turn_changeset<'a>(
        &'a self,
        session: &'a SessionUri,
        turn: &'a str,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Vec<FileChange>>, CheckpointError>>;

    /// Compares the end of `original` (`None`: the baseline) with the end of `modified`.
    fn compare_turns<'a>(
        &'a self,
        session: &'a SessionUri,
        original: Option<&'a str>,
        modified: &'a str,
        dir: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Vec<FileChange>, CheckpointError>>;

    /// Rolls a turn back in `dir`'s work tree.
    fn rollback_turn<'a>(
        &'a self,
        session: &'a SessionUri,
        turn: &'a str,
        dir: &'a Path,
    ) -> BoxFuture<'a, Result<RollbackReport, CheckpointError>>;

    /// Branch, remotes and linked worktrees of `dir`'s repository.
    fn repo_info<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<RepoInfo, CheckpointError>>;

    /// The unified diff text (`git diff` style) of `changes`, a changeset of `dir`'s repository.
    fn unified_diff<'a>(
        &'a self,
        dir: &'a Path,
        changes: &'a [FileChange],
    ) -> BoxFuture<'a, Result<String, CheckpointError>>;
}

/// A service that does nothing: captures are no-ops, reads find nothing, consumers report that
/// the session is not git-backed. For hosts and tests without checkpoints.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullCheckpointService;

fn disabled(what: &'static str) -> CheckpointError {
    CheckpointError::NotGitBacked {
        what,
        reason: "checkpoints are disabled".to_owned(),
    }
}

impl CheckpointService for NullCheckpointService {
    fn capture_baseline<'a>(&'a self, _: &'a SessionUri, _: &'a [PathBuf]) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn capture_turn_start<'a>(
        &'a self,
        _: &'a SessionUri,
        _: &'a ChatUri,
        _: &'a str,
        _: &'a [PathBuf],
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn capture_turn_end<'a>(
        &'a self,
        _: &'a SessionUri,
        _: &'a ChatUri,
        _: &'a str,
        _: &'a [PathBuf],
    ) -> BoxFuture<'a, Result<Option<String>, CheckpointError>> {
        Box::pin(async { Ok(None) })
    }

    fn discard_turn_start<'a>(
        &'a self,
        _: &'a SessionUri,
        _: &'a ChatUri,
        _: &'a str,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn discard_chat_turn_starts<'a>(
        &'a self,
        _: &'a SessionUri,
        _: &'a ChatUri,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn turn_pair<'a>(
        &'a self,
        _: &'a SessionUri,
        _: &'a str,
        _: Option<&'a Path>,
    ) -> BoxFuture<'a, Option<CheckpointPair>> {
        Box::pin(async { None })
    }

    fn baseline<'a>(
        &'a self,
        _: &'a SessionUri,
        _: Option<&'a Path>,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }

    fn latest_checkpoint<'a>(&'a self, _: &'a SessionUri) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }

    fn delete_all<'a>(&'a self, _: &'a SessionUri, _: &'a [PathBuf]) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn changeset<'a>(
        &'a self,
        _: &'a Path,
        _: &'a str,
        _: &'a str,
    ) -> BoxFuture<'a, Result<Vec<FileChange>, CheckpointError>> {
        Box::pin(async { Err(disabled("changeset")) })
    }

    fn turn_changeset<'a>(
        &'a self,
        _: &'a SessionUri,
        _: &'a str,
        _: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Option<Vec<FileChange>>, CheckpointError>> {
        Box::pin(async { Ok(None) })
    }

    fn compare_turns<'a>(
        &'a self,
        _: &'a SessionUri,
        _: Option<&'a str>,
        _: &'a str,
        _: Option<&'a Path>,
    ) -> BoxFuture<'a, Result<Vec<FileChange>, CheckpointError>> {
        Box::pin(async { Err(disabled("comparison")) })
    }

    fn rollback_turn<'a>(
        &'a self,
        _: &'a SessionUri,
        _: &'a str,
        _: &'a Path,
    ) -> BoxFuture<'a, Result<RollbackReport, CheckpointError>> {
        Box::pin(async { Err(disabled("rollback")) })
    }

    fn repo_info<'a>(&'a self, _: &'a Path) -> BoxFuture<'a, Result<RepoInfo, CheckpointError>> {
        Box::pin(async { Err(disabled("repository information")) })
    }

    fn unified_diff<'a>(
        &'a self,
        _: &'a Path,
        _: &'a [FileChange],
    ) -> BoxFuture<'a, Result<String, CheckpointError>> {
        Box::pin(async { Err(disabled("diffs")) })
    }
}

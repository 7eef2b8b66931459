//! The host's checkpoint commands in AHP's reserved `x-` namespace (AHP 1.0 has no method for
//! them): `x-checkpoint/diff` and `x-checkpoint/rollback`, over the session's default chat's
//! turns and the checkpoint service.
//!
//! | Method | Params | Result |
//! |---|---|---|
//! | `x-checkpoint/diff` | `{session, turnId?}` or `{session, since?}` | `{diff, files}`: the unified diff text (`git diff` style) and the paths it covers. `turnId`: that turn's changes; `since`: everything from the start of that turn to the end of the latest turn; neither: the whole session (baseline → latest turn) |
//! | `x-checkpoint/rollback` | `{session, turnId}` | `{restored, removed, changedSince, skipped}`: the working tree is put back to the start of that turn — that turn and every later one are undone, newest first; paths the user changed afterwards are overwritten and listed in `changedSince` |
//!
//! Turns are the default chat's completed turns, in order; the working directory is the
//! session's first. Errors: an unknown session or turn is "invalid params" naming it; a session
//! without checkpoints (not a git repository, no turn captured) is an error saying so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use agenthost_checkpoint_api::CheckpointService;
use agenthost_protocol::SessionUri;
use agenthost_protocol::uri::file_uri_to_path;
use serde::{Deserialize, Serialize};

/// Why a checkpoint command failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The request names something that is not there (a session, a turn, a checkpoint), or
    /// asks for something contradictory; the message says which.
    #[error("{0}")]
    InvalidParams(String),
    /// The repository could not answer (a diff that cannot be rendered).
    #[error("{0}")]
    Internal(String),
}

impl CommandError {
    fn invalid_params(message: impl Into<String>) -> Self {
        Self::InvalidParams(message.into())
    }
}

/// `x-checkpoint/diff` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiffParams {
    /// The session URI.
    pub session: SessionUri,
    /// One turn's changes.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Everything from the start of this turn on.
    #[serde(default)]
    pub since: Option<String>,
}

/// `x-checkpoint/diff` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffResult {
    /// Unified diff text.
    pub diff: String,
    /// The paths it covers (repository-relative), in order.
    pub files: Vec<String>,
}

/// `x-checkpoint/rollback` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RollbackParams {
    /// The session URI.
    pub session: SessionUri,
    /// The turn whose start the working tree goes back to.
    pub turn_id: String,
}

/// `x-checkpoint/rollback` result: repository-relative paths.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackResult {
    /// Paths whose content at the turn's start was written back.
    pub restored: Vec<String>,
    /// Paths the turns had created, deleted.
    pub removed: Vec<String>,
    /// Paths changed after the turns (overwritten).
    pub changed_since: Vec<String>,
    /// Paths left alone.
    pub skipped: Vec<String>,
}

/// What the commands need to know about a session.
#[derive(Debug, Clone)]
pub struct SessionTurns {
    /// The session.
    pub session: SessionUri,
    /// Its first working directory.
    pub directory: PathBuf,
    /// The default chat's completed turn ids, oldest first.
    pub turns: Vec<String>,
}

impl SessionTurns {
    /// The session's state as the commands need it: its first working directory (a local path)
    /// and its default chat's completed turns.
    pub fn new(
        session: SessionUri,
        working_directories: &[String],
        turns: Vec<String>,
    ) -> Result<Self, CommandError> {
        let first = working_directories.first().ok_or_else(|| {
            CommandError::invalid_params(format!("{session} has no working directory"))
        })?;
        let directory = file_uri_to_path(first).map_err(|e| {
            CommandError::invalid_params(format!("{session}'s working directory: {e}"))
        })?;
        Ok(Self {
            session,
            directory,
            turns,
        })
    }

    fn position(&self, turn: &str) -> Result<usize, CommandError> {
        self.turns.iter().position(|t| t == turn).ok_or_else(|| {
            CommandError::invalid_params(format!(
                "{} has no completed turn {turn:?} (turns: {})",
                self.session,
                self.turns.join(", ")
            ))
        })
    }
}

fn checkpoint_error(error: &agenthost_checkpoint_api::CheckpointError) -> CommandError {
    CommandError::invalid_params(format!("no checkpoints to compare: {error}"))
}

/// `x-checkpoint/diff`.
pub async fn diff(
    checkpoints: &dyn CheckpointService,
    target: &SessionTurns,
    params: &DiffParams,
) -> Result<DiffResult, CommandError> {
    let dir = target.directory.as_path();
    let changes = match (&params.turn_id, &params.since) {
        (Some(_), Some(_)) => {
            return Err(CommandError::invalid_params(
                "give either turnId or since, not both",
            ));
        }
        (Some(turn), None) => {
            target.position(turn)?;
            checkpoints
                .turn_changeset(&target.session, turn, Some(dir))
                .await
                .map_err(|e| checkpoint_error(&e))?
                .ok_or_else(|| {
                    CommandError::invalid_params(format!("turn {turn:?} has no checkpoint"))
                })?
        }
        (None, since) => {
            let Some(latest) = target.turns.last() else {
                return Ok(DiffResult {
                    diff: String::new(),
                    files: Vec::new(),
                });
            };
            let original = match since {
                Some(turn) => {
                    let index = target.position(turn)?;
                    index.checked_sub(1).map(|i| target.turns[i].as_str())
                }
                None => None,
            };
            checkpoints
                .compare_turns(&target.session, original, latest, Some(dir))
                .await
                .map_err(|e| checkpoint_error(&e))?
        }
    };
    let diff = checkpoints
        .unified_diff(dir, &changes)
        .await
        .map_err(|e| CommandError::Internal(format!("cannot render the diff: {e}")))?;
    Ok(DiffResult {
        diff,
        files: changes.into_iter().map(|c| c.path).collect(),
    })
}

/// `x-checkpoint/rollback`: undoes `turnId` and every later turn, newest first.
pub async fn rollback(
    checkpoints: &dyn CheckpointService,
    target: &SessionTurns,
    params: &RollbackParams,
) -> Result<RollbackResult, CommandError> {
    let index = target.position(&params.turn_id)?;
    // Each path's fate: the oldest rollback runs last and decides it (a file an older turn
    // created and a newer one edited ends up removed, not restored).
    let mut fate: BTreeMap<String, Fate> = BTreeMap::new();
    let mut changed_since = BTreeSet::new();
    for turn in target.turns[index..].iter().rev() {
        let report = checkpoints
            .rollback_turn(&target.session, turn, &target.directory)
            .await
            .map_err(|e| {
                CommandError::invalid_params(format!("cannot roll back turn {turn:?}: {e}"))
            })?;
        for (paths, kind) in [
            (report.restored, Fate::Restored),
            (report.removed, Fate::Removed),
            (report.skipped, Fate::Skipped),
        ] {
            fate.extend(paths.into_iter().map(|path| (path, kind)));
        }
        changed_since.extend(report.changed_since);
    }
    let with = |kind| {
        fate.iter()
            .filter(|(_, f)| **f == kind)
            .map(|(path, _)| path.clone())
            .collect()
    };
    Ok(RollbackResult {
        restored: with(Fate::Restored),
        removed: with(Fate::Removed),
        changed_since: changed_since.into_iter().collect(),
        skipped: with(Fate::Skipped),
    })
}

/// What a rollback did to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Restored,
    Removed,
    Skipped,
}

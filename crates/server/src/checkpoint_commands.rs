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

use agenthost_protocol::SessionUri;
use agenthost_protocol::uri::file_uri_to_path;
use agenthost_services::CheckpointService;
use serde::{Deserialize, Serialize};

use crate::rpc::RpcError;

/// `x-checkpoint/diff` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiffParams {
    /// The session URI.
    pub session: String,
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
    pub session: String,
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
    ) -> Result<Self, RpcError> {
        let first = working_directories.first().ok_or_else(|| {
            RpcError::invalid_params(format!("{session} has no working directory"))
        })?;
        let directory = file_uri_to_path(first)
            .map_err(|e| RpcError::invalid_params(format!("{session}'s working directory: {e}")))?;
        Ok(Self {
            session,
            directory,
            turns,
        })
    }

    fn position(&self, turn: &str) -> Result<usize, RpcError> {
        self.turns.iter().position(|t| t == turn).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "{} has no completed turn {turn:?} (turns: {})",
                self.session,
                self.turns.join(", ")
            ))
        })
    }
}

/// The checkpoint service and what the commands need of `session`, restoring it (and its
/// default chat) from the store when it is not live.
pub(crate) async fn target(
    service: &agenthost_service::SessionService,
    state: &agenthost_state::StateManager,
    session: &str,
) -> Result<(std::sync::Arc<dyn CheckpointService>, SessionTurns), RpcError> {
    let uri = SessionUri::parse(session)
        .map_err(|e| RpcError::invalid_params(format!("session: {e}")))?;
    let checkpoints = service
        .checkpoints()
        .ok_or_else(|| RpcError::invalid_params("this host keeps no checkpoints"))?;
    let chat = agenthost_protocol::ChatUri::default_for(&uri);
    for channel in [uri.as_str(), chat.as_str()] {
        service
            .ensure_channel(channel)
            .await
            .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    }
    let (directories, turns) = state.read(|h| {
        let directories = h
            .session(uri.as_str())
            .and_then(|s| s.working_directories.clone());
        let turns = h
            .chat(chat.as_str())
            .map(|c| c.turns.iter().map(|t| t.id.clone()).collect::<Vec<_>>());
        (directories, turns)
    });
    let directories = directories
        .ok_or_else(|| RpcError::invalid_params(format!("session {session:?} does not exist")))?;
    let target = SessionTurns::new(uri, &directories, turns.unwrap_or_default())?;
    Ok((checkpoints, target))
}

fn checkpoint_error(error: &agenthost_services::CheckpointError) -> RpcError {
    RpcError::invalid_params(format!("no checkpoints to compare: {error}"))
}

/// `x-checkpoint/diff`.
pub async fn diff(
    checkpoints: &dyn CheckpointService,
    target: &SessionTurns,
    params: &DiffParams,
) -> Result<DiffResult, RpcError> {
    let dir = target.directory.as_path();
    let changes = match (&params.turn_id, &params.since) {
        (Some(_), Some(_)) => {
            return Err(RpcError::invalid_params(
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
                    RpcError::invalid_params(format!("turn {turn:?} has no checkpoint"))
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
        .map_err(|e| RpcError::internal(format!("cannot render the diff: {e}")))?;
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
) -> Result<RollbackResult, RpcError> {
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
                RpcError::invalid_params(format!("cannot roll back turn {turn:?}: {e}"))
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

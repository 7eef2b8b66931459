//! [`ChangesetService`]: the changesets a session shows — what the agent changed in the whole
//! session, and in each turn — computed from the per-turn git checkpoints.
//!
//! [`CheckpointChangesets`] is the default. Its decisions:
//!
//! - **Channels are lazy.** A changeset channel (`ahp-changeset://session/…`,
//!   `ahp-changeset://turn/…/<turn>`, see [`ChangesetUri`]) enters host state when a client first
//!   subscribes ([`materialize`](ChangesetService::materialize)); from then on a turn end marks
//!   it `recomputing` at once and the refresh that follows the turn's checkpoint capture
//!   replaces its files and marks it `ready` (or `error`). A session without subscribers costs
//!   nothing but the catalogue.
//! - **The truth is in git.** The session changeset is baseline → the newest recorded turn
//!   checkpoint, per working directory; a turn changeset is the turn's checkpoint pair. Both
//!   survive a restart when the ledger is the session database
//!   ([`StoreLedger`](crate::StoreLedger)).
//! - **Files are named by their `file:` URI** (the id, `before.uri`, `after.uri`); the contents
//!   are named by [`blob_uri`] (`agenthost-blob:` with the repository, revision and path), with
//!   line counts in `edit.diff`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_checkpoint_api::{ChangeKind, CheckpointService, FileChange};
use agenthost_protocol::ahp_types::actions::{
    ChangesetContentChangedAction, ChangesetStatusChangedAction, SessionChangesetsChangedAction,
};
use agenthost_protocol::ahp_types::state::{
    Changeset, ChangesetFile, ChangesetState, ChangesetStatus, ContentRef, FileEdit,
    FileEditDiffStats, FileEditSide,
};
use agenthost_protocol::uri::{
    ChangesetScope, ChangesetUri, file_uri_to_path, path_to_file_uri, percent_encode,
};
use agenthost_protocol::{SessionUri, StateAction};
use agenthost_reducers::ChannelState;
use agenthost_state::StateManager;
use futures::future::BoxFuture;

/// Why a changeset could not be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangesetError {
    /// The changeset's session is not live (never created, deleted, or not restored).
    #[error("the changeset {uri} belongs to the session {session}, which is not open")]
    UnknownSession {
        /// The changeset URI.
        uri: String,
        /// Its session.
        session: String,
    },
}

/// The changesets of sessions, as contributions and the session service use them.
pub trait ChangesetService: Send + Sync {
    /// The catalogue a session advertises (`SessionState.changesets`).
    fn catalog(&self, session: &SessionUri) -> Vec<Changeset>;

    /// A turn ended on `channel` of `session`: marks the live changesets it affects (the
    /// session's, and `turn`'s) `recomputing`. Synchronous and cheap; the refresh follows.
    fn schedule_recompute(&self, session: &SessionUri, channel: &str, turn: Option<&str>);

    /// Recomputes the session's live changesets from its checkpoints (`auto` mode: what is
    /// live) and makes sure the session advertises its catalogue.
    fn refresh_session<'a>(&'a self, session: &'a SessionUri) -> BoxFuture<'a, ()>;

    /// Puts the changeset channel `uri` into host state (computing it) unless it is there.
    fn materialize<'a>(
        &'a self,
        uri: &'a ChangesetUri,
    ) -> BoxFuture<'a, Result<(), ChangesetError>>;

    /// Removes the session's changeset channels (the session was disposed or deleted).
    fn forget_session(&self, session: &str);
}

/// The catalogue entries of `session`: the session-wide changeset and the per-turn template.
pub fn changeset_catalog(session: &SessionUri) -> Vec<Changeset> {
    vec![
        Changeset {
            label: "Session changes".to_owned(),
            uri_template: ChangesetUri::session(session).to_string(),
            description: Some(
                "Every file the agent changed in this session, since its baseline checkpoint"
                    .to_owned(),
            ),
            change_kind: "session".to_owned(),
            capabilities: None,
        },
        Changeset {
            label: "Turn changes".to_owned(),
            uri_template: ChangesetUri::turn_template(session),
            description: Some("The files one turn changed".to_owned()),
            change_kind: "turn".to_owned(),
            capabilities: None,
        },
    ]
}

/// The content URI of `path` at `rev` in the repository rooted at `root`:
/// `agenthost-blob:<rev>/<path>?repo=<file URI of root>` (each part percent-encoded).
pub fn blob_uri(root: &Path, rev: &str, path: &str) -> String {
    let repo = path_to_file_uri(root).unwrap_or_else(|_| root.to_string_lossy().into_owned());
    format!(
        "agenthost-blob:{}/{}?repo={}",
        percent_encode(rev),
        path.split('/')
            .map(percent_encode)
            .collect::<Vec<_>>()
            .join("/"),
        percent_encode(&repo)
    )
}

/// One checkpoint change as a changeset file of the repository rooted at `root`.
pub fn changeset_file(root: &Path, change: &FileChange) -> Option<ChangesetFile> {
    let file_uri = |path: &str| path_to_file_uri(&root.join(path)).ok();
    let before = match (&change.before, change.kind) {
        (Some(blob), kind) if kind != ChangeKind::Added => Some(FileEditSide {
            uri: file_uri(change.old_path.as_deref().unwrap_or(&change.path))?,
            content: ContentRef {
                uri: blob_uri(root, &blob.rev, &blob.path),
                size_hint: None,
                content_type: None,
                nonce: None,
            },
        }),
        _ => None,
    };
    let after = match (&change.after, change.kind) {
        (Some(blob), kind) if kind != ChangeKind::Deleted => Some(FileEditSide {
            uri: file_uri(&change.path)?,
            content: ContentRef {
                uri: blob_uri(root, &blob.rev, &blob.path),
                size_hint: None,
                content_type: None,
                nonce: None,
            },
        }),
        _ => None,
    };
    let id = after
        .as_ref()
        .or(before.as_ref())
        .map(|side| side.uri.clone())?;
    let meta = change.binary.then(|| {
        let mut meta = agenthost_protocol::ahp_types::common::JsonObject::new();
        meta.insert("binary".to_owned(), true.into());
        meta
    });
    Some(ChangesetFile {
        id,
        edit: FileEdit {
            before,
            after,
            diff: Some(FileEditDiffStats {
                added: Some(i64::from(change.lines_added)),
                removed: Some(i64::from(change.lines_removed)),
            }),
        },
        reviewed: None,
        meta,
    })
}

/// The default [`ChangesetService`]: changesets from a [`CheckpointService`], published into
/// the host's [`StateManager`].
pub struct CheckpointChangesets {
    state: Arc<StateManager>,
    checkpoints: Arc<dyn CheckpointService>,
    /// The changeset channels in state, per session, by URI text.
    live: Mutex<HashMap<String, BTreeMap<String, ChangesetUri>>>,
    /// One computation at a time per session, so results are published in order.
    sequencers: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::fmt::Debug for CheckpointChangesets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointChangesets")
            .field("live", &*lock(&self.live))
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl CheckpointChangesets {
    /// Changesets of the sessions in `state`, read from `checkpoints`.
    pub fn new(state: Arc<StateManager>, checkpoints: Arc<dyn CheckpointService>) -> Self {
        Self {
            state,
            checkpoints,
            live: Mutex::default(),
            sequencers: Mutex::default(),
        }
    }

    fn sequencer(&self, session: &str) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.sequencers)
            .entry(session.to_owned())
            .or_default()
            .clone()
    }

    fn live_of(&self, session: &str) -> Vec<ChangesetUri> {
        lock(&self.live)
            .get(session)
            .map(|uris| uris.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The session's working directories as local paths (others are skipped).
    fn directories(&self, session: &str) -> Vec<PathBuf> {
        let uris = self.state.read(|h| {
            h.session(session)
                .and_then(|s| s.working_directories.clone())
                .unwrap_or_default()
        });
        uris.iter()
            .filter_map(|uri| file_uri_to_path(uri).ok())
            .collect()
    }

    /// The files of `changeset`, across the session's working directories (one repository
    /// counted once). An error only when no directory could be read and one failed.
    async fn compute(&self, changeset: &ChangesetUri) -> Result<Vec<ChangesetFile>, String> {
        let session = changeset.session_uri();
        let latest = match changeset.scope() {
            ChangesetScope::Session => match self.checkpoints.latest_checkpoint(session).await {
                Some(latest) => Some(latest),
                None => return Ok(Vec::new()),
            },
            ChangesetScope::Turn(_) => None,
        };
        let mut files: Vec<ChangesetFile> = Vec::new();
        let mut seen_roots = HashSet::new();
        let mut first_error = None;
        let mut any_read = false;
        for dir in self.directories(session.as_str()) {
            let root = match self.checkpoints.repo_info(&dir).await {
                Ok(info) => info.root,
                Err(_) => continue, // not a repository: nothing tracked there
            };
            if !seen_roots.insert(root.clone()) {
                continue;
            }
            let changes = match (changeset.scope(), &latest) {
                (ChangesetScope::Session, Some(latest)) => {
                    let Some(baseline) = self.checkpoints.baseline(session, Some(&dir)).await
                    else {
                        continue;
                    };
                    self.checkpoints
                        .changeset(&dir, &baseline, latest)
                        .await
                        .map(Some)
                }
                (ChangesetScope::Turn(turn), _) => {
                    self.checkpoints
                        .turn_changeset(session, turn, Some(&dir))
                        .await
                }
                (ChangesetScope::Session, None) => Ok(None),
            };
            match changes {
                Ok(Some(changes)) => {
                    any_read = true;
                    for change in &changes {
                        if let Some(file) = changeset_file(&root, change)
                            && !files.iter().any(|f| f.id == file.id)
                        {
                            files.push(file);
                        }
                    }
                }
                Ok(None) => any_read = true,
                Err(error) => {
                    tracing::debug!(session = %session, dir = %dir.display(), %error, "a changeset could not be read in this directory");
                    first_error.get_or_insert(error.to_string());
                }
            }
        }
        match first_error {
            Some(error) if !any_read => Err(error),
            _ => Ok(files),
        }
    }

    fn dispatch(&self, channel: &str, action: StateAction) {
        if let Err(error) = self.state.dispatch_server(channel, action) {
            tracing::debug!(channel, %error, "a changeset update was not applied");
        }
    }

    /// Replaces the files of the live channel `uri` with a fresh computation.
    async fn recompute(&self, changeset: &ChangesetUri) {
        let outcome = self.compute(changeset).await;
        let text = changeset.to_string();
        let uri = text.as_str();
        if self.state.read(|h| h.channel(uri).is_none()) {
            return; // removed meanwhile
        }
        match outcome {
            Ok(files) => {
                self.dispatch(
                    uri,
                    StateAction::ChangesetContentChanged(Box::new(ChangesetContentChangedAction {
                        files,
                        operations: None,
                    })),
                );
                self.dispatch(uri, status(ChangesetStatus::Ready, None));
            }
            Err(error) => self.dispatch(uri, status(ChangesetStatus::Error, Some(error))),
        }
    }

    fn advertise(&self, session: &SessionUri) {
        let catalog = changeset_catalog(session);
        let current = self
            .state
            .read(|h| h.session(session.as_str()).map(|s| s.changesets.clone()));
        match current {
            Some(current) if current.as_ref() != Some(&catalog) => self.dispatch(
                session.as_str(),
                StateAction::SessionChangesetsChanged(SessionChangesetsChangedAction {
                    changesets: Some(catalog),
                }),
            ),
            _ => {}
        }
    }
}

fn status(status: ChangesetStatus, error: Option<String>) -> StateAction {
    StateAction::ChangesetStatusChanged(ChangesetStatusChangedAction {
        status,
        error: error
            .map(|message| agenthost_protocol::error_info::error_info("changeset", message)),
    })
}

impl ChangesetService for CheckpointChangesets {
    fn catalog(&self, session: &SessionUri) -> Vec<Changeset> {
        changeset_catalog(session)
    }

    fn schedule_recompute(&self, session: &SessionUri, _channel: &str, turn: Option<&str>) {
        let mut affected = vec![ChangesetUri::session(session)];
        if let Some(turn) = turn.and_then(|turn| agenthost_protocol::SafeId::new(turn).ok()) {
            affected.push(ChangesetUri::turn(session, &turn));
        }
        let live = self.live_of(session);
        for uri in affected.iter().filter(|uri| live.contains(uri)) {
            self.dispatch(&uri.to_string(), status(ChangesetStatus::Recomputing, None));
        }
    }

    fn refresh_session<'a>(&'a self, session: &'a SessionUri) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let sequencer = self.sequencer(session);
            let _order = sequencer.lock().await;
            if self.state.read(|h| h.session(session).is_none()) {
                return;
            }
            self.advertise(session);
            for uri in self.live_of(session) {
                self.recompute(&uri).await;
            }
        })
    }

    fn materialize<'a>(
        &'a self,
        changeset: &'a ChangesetUri,
    ) -> BoxFuture<'a, Result<(), ChangesetError>> {
        Box::pin(async move {
            let text = changeset.to_string();
            let uri = text.as_str();
            let session = changeset.session_uri().as_str().to_owned();
            let sequencer = self.sequencer(&session);
            let _order = sequencer.lock().await;
            if self.state.read(|h| h.session(&session).is_none()) {
                return Err(ChangesetError::UnknownSession {
                    uri: uri.to_owned(),
                    session,
                });
            }
            if self.state.read(|h| h.channel(uri).is_some()) {
                return Ok(());
            }
            let (state, files) = match self.compute(changeset).await {
                Ok(files) => (ChangesetStatus::Ready, files),
                Err(_) => (ChangesetStatus::Error, Vec::new()),
            };
            let error = (state == ChangesetStatus::Error).then(|| {
                agenthost_protocol::error_info::error_info(
                    "changeset",
                    "the checkpoints of this changeset could not be read",
                )
            });
            let inserted = self.state.insert_channel(
                uri,
                ChannelState::Changeset(Box::new(ChangesetState {
                    status: state,
                    error,
                    files,
                    operations: None,
                })),
            );
            if let Err(error) = inserted {
                tracing::debug!(uri, %error, "the changeset channel was added meanwhile");
            }
            lock(&self.live)
                .entry(session)
                .or_default()
                .insert(text.clone(), changeset.clone());
            Ok(())
        })
    }

    fn forget_session(&self, session: &str) {
        let uris = lock(&self.live).remove(session).unwrap_or_default();
        lock(&self.sequencers).remove(session);
        for uri in uris.into_keys() {
            self.state.remove_channel(&uri);
        }
    }
}

#[cfg(feature = "fakes")]
pub(crate) mod fake {
    use std::sync::Mutex;

    use agenthost_protocol::SessionUri;
    use agenthost_protocol::ahp_types::state::Changeset;
    use agenthost_protocol::uri::ChangesetUri;
    use futures::future::BoxFuture;

    use super::{ChangesetError, ChangesetService, changeset_catalog};

    /// A call to [`FakeChangesets`].
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum ChangesetCall {
        /// `schedule_recompute(session, channel, turn)`.
        ScheduleRecompute(String, String, Option<String>),
        /// `refresh_session(session)`.
        RefreshSession(String),
        /// `materialize(uri)`.
        Materialize(String),
        /// `forget_session(session)`.
        ForgetSession(String),
    }

    /// A recording [`ChangesetService`] (feature `fakes`): materializes nothing.
    #[derive(Debug, Default)]
    pub struct FakeChangesets {
        calls: Mutex<Vec<ChangesetCall>>,
    }

    impl FakeChangesets {
        /// Every call so far, in order.
        pub fn calls(&self) -> Vec<ChangesetCall> {
            self.lock().clone()
        }

        fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ChangesetCall>> {
            self.calls.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    impl ChangesetService for FakeChangesets {
        fn catalog(&self, session: &SessionUri) -> Vec<Changeset> {
            changeset_catalog(session)
        }

        fn schedule_recompute(&self, session: &SessionUri, channel: &str, turn: Option<&str>) {
            self.lock().push(ChangesetCall::ScheduleRecompute(
                session.to_string(),
                channel.to_owned(),
                turn.map(str::to_owned),
            ));
        }

        fn refresh_session<'a>(&'a self, session: &'a SessionUri) -> BoxFuture<'a, ()> {
            self.lock()
                .push(ChangesetCall::RefreshSession(session.to_string()));
            Box::pin(async {})
        }

        fn materialize<'a>(
            &'a self,
            uri: &'a ChangesetUri,
        ) -> BoxFuture<'a, Result<(), ChangesetError>> {
            self.lock()
                .push(ChangesetCall::Materialize(uri.to_string()));
            Box::pin(async { Ok(()) })
        }

        fn forget_session(&self, session: &str) {
            self.lock()
                .push(ChangesetCall::ForgetSession(session.to_owned()));
        }
    }
}

/// Captures the baseline checkpoint of `session` in `directories` (`file://` URIs) on a task of
/// the current runtime (none: nothing is captured). The checkpoint service orders it before the
/// session's first turn start, which captures it itself if this has not run yet.
pub fn capture_baseline_in_background(
    checkpoints: Arc<dyn CheckpointService>,
    session: &SessionUri,
    directories: &[String],
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let dirs: Vec<PathBuf> = directories
        .iter()
        .filter_map(|d| agenthost_protocol::uri::file_uri_to_path(d).ok())
        .collect();
    let session = session.clone();
    runtime.spawn(async move { checkpoints.capture_baseline(&session, &dirs).await });
}

#[cfg(test)]
#[path = "changesets_tests.rs"]
mod tests;

//! `githubReferences` (order 300, `onTurnEnd`): after a started turn ends (success, cancelled,
//! or an error that is not resumable) reconciles the repository reference of the folder the
//! turn ran in — remote, branch, and the branch's pull request when GitHub can tell — and
//! records it in session metadata. Resumable errors, rejected requests and local commands
//! change nothing.
//!
//! **Which folder, under which key** (all metadata is the session's, [`DataOwner::Session`]):
//!
//! - the session channel, the session's default chat, and a chat without working directories
//!   of its own (or whose first one is the session's): the session's first working directory,
//!   under [`REFERENCE_KEY`];
//! - a peer chat whose first working directory differs from the session's: that directory,
//!   under `githubReference:<chat uri>` ([`chat_reference_key`]).
//!
//! The value is JSON: `{ "folder": <file URI>, "remote": …|null, "branch": …|null,
//! "pullRequest"?: { "number", "url", "state", "title" } }`. When GitHub could not be asked this
//! time (offline, rate-limited: `RepositoryReference::pull_request_unknown`), the pull request
//! already recorded for the same folder, remote and branch is kept; GitHub answering "none", or
//! another branch, replaces it.
//!
//! The central decision: **the hook never waits.** The lookup (git on a blocking thread, then
//! GitHub over HTTP through [`GitState`]) runs as a task on the current tokio runtime; without
//! one the reconcile is skipped (logged at `debug`). A failure is logged — `debug` for a folder
//! that is not a repository, `warn` naming the session and turn otherwise — and never reaches
//! the turn. When two reconciles of the same key overlap, only the newest writes, so a slow
//! lookup cannot overwrite a fresher one. [`GithubReferences::flush`] waits for the tasks
//! started so far (tests); each holds an `agenthost_services::PendingWork`, so a host's graceful
//! shutdown (`flush_pending_writes`) waits for it too rather than cancel its store write.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookResult, HookSet, MissingService,
    ServiceRegistry, TurnEnd, TurnEndReason,
};
use agenthost_protocol::uri::file_uri_to_path;
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_services::{
    DataOwner, GitState, GitStateError, HostState, RepositoryReference, SessionDataStore,
};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// The session metadata key of the session folder's reference.
pub const REFERENCE_KEY: &str = "githubReference";

/// The session metadata key of a peer chat's reference (a chat with its own folder).
pub fn chat_reference_key(chat: &str) -> String {
    format!("{REFERENCE_KEY}:{chat}")
}

/// Whether a turn that ended for `reason` reconciles: every started outcome except a
/// resumable error (the logical turn is not over); never a refused request or a host command.
pub fn reconciles(reason: &TurnEndReason) -> bool {
    match reason {
        TurnEndReason::Success | TurnEndReason::Cancelled => true,
        TurnEndReason::Error { resumable, .. } => !resumable,
        TurnEndReason::Rejected { .. } | TurnEndReason::LocalCommand => false,
    }
}

/// What one turn end reconciles: the folder (a `file:` URI) and the session metadata key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The folder the turn ran in, as a `file:` URI.
    pub folder: String,
    /// The session metadata key the reference is recorded under.
    pub key: String,
}

/// The `githubReferences` contribution. Register it with
/// `dispatcher.register::<GithubReferences>()`; it needs `dyn HostState`, `dyn GitState` and
/// `dyn SessionDataStore` in the registry.
pub struct GithubReferences {
    host: Arc<dyn HostState>,
    git: Arc<dyn GitState>,
    data: Arc<dyn SessionDataStore>,
    work: Arc<Work>,
}

/// The spawned reconciles, and the newest generation started per (session, key).
#[derive(Default)]
struct Work {
    tasks: Mutex<Vec<JoinHandle<()>>>,
    generations: Mutex<HashMap<(String, String), u64>>,
    /// Generations are numbered across slots, so a forgotten slot never reuses a number.
    next_generation: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Work {
    /// Starts a generation for `slot`; returns its number.
    fn begin(&self, slot: &(String, String)) -> u64 {
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        lock(&self.generations).insert(slot.clone(), generation);
        generation
    }

    /// Whether `generation` is still the newest of `slot`.
    fn is_current(&self, slot: &(String, String), generation: u64) -> bool {
        lock(&self.generations).get(slot) == Some(&generation)
    }

    /// Forgets `slot` when `generation` is its newest (bounded: a slot lives while a reconcile
    /// of it runs).
    fn end(&self, slot: &(String, String), generation: u64) {
        let mut generations = lock(&self.generations);
        if generations.get(slot) == Some(&generation) {
            generations.remove(slot);
        }
    }
}

impl std::fmt::Debug for GithubReferences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GithubReferences").finish_non_exhaustive()
    }
}

impl GithubReferences {
    /// Reads state from `host`, references from `git`, records into `data`.
    pub fn new(
        host: Arc<dyn HostState>,
        git: Arc<dyn GitState>,
        data: Arc<dyn SessionDataStore>,
    ) -> Self {
        Self {
            host,
            git,
            data,
            work: Arc::new(Work::default()),
        }
    }

    /// Resolves `dyn HostState`, `dyn GitState` and `dyn SessionDataStore` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn GitState>()?,
            services.get::<dyn SessionDataStore>()?,
        ))
    }

    /// Waits until every reconcile started so far has finished (recorded, or failed and been
    /// logged).
    pub async fn flush(&self) {
        loop {
            let tasks = std::mem::take(&mut *lock(&self.work.tasks));
            if tasks.is_empty() {
                return;
            }
            for task in tasks {
                // A panicked task has nothing left to wait for.
                let _ = task.await;
            }
        }
    }

    /// The folder and key a turn that ended in `chat` of `session` reconciles; `None` when the
    /// session is gone or has no working directory.
    pub fn target(&self, session: &SessionUri, chat: &ChatUri) -> Option<Target> {
        let state = self.host.session(session)?;
        let session_folder = state
            .working_directories
            .as_ref()
            .and_then(|directories| directories.first().cloned());
        let for_session = || {
            session_folder.clone().map(|folder| Target {
                folder,
                key: REFERENCE_KEY.to_owned(),
            })
        };
        let is_default = state.default_chat.as_deref() == Some(chat.as_str())
            || chat
                .default_chat_session()
                .ok()
                .flatten()
                .is_some_and(|owner| owner == *session);
        if is_default {
            return for_session();
        }
        let chat_folder = self.host.chat(chat).and_then(|chat| {
            chat.working_directories
                .and_then(|directories| directories.into_iter().next())
        });
        match chat_folder {
            Some(folder) if Some(&folder) != session_folder.as_ref() => Some(Target {
                folder,
                key: chat_reference_key(chat),
            }),
            _ => for_session(),
        }
    }

    fn reconcile(&self, turn: &TurnEnd) {
        let turn_id = turn.turn_id.clone().unwrap_or_default();
        let Some(target) = self.target(&turn.session, &turn.chat) else {
            tracing::debug!(
                session = turn.session.as_str(),
                chat = turn.chat.as_str(),
                turn_id,
                "githubReferences: no working directory, nothing to reconcile"
            );
            return;
        };
        let session = turn.session.clone();
        let folder = match file_uri_to_path(&target.folder) {
            Ok(folder) => folder,
            Err(error) => {
                tracing::debug!(
                    session = turn.session.as_str(),
                    turn_id,
                    folder = target.folder,
                    %error,
                    "githubReferences: the working directory is not a local folder"
                );
                return;
            }
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::debug!(
                session = turn.session.as_str(),
                turn_id,
                "githubReferences: no tokio runtime, reconcile skipped"
            );
            return;
        };
        let slot = (turn.session.to_string(), target.key.clone());
        let generation = self.work.begin(&slot);
        let lookup = self.git.reference(&folder);
        let job = Job {
            pending: agenthost_services::PendingWork::begin(),
            data: self.data.clone(),
            work: self.work.clone(),
            session,
            turn_id,
            target,
            folder,
            slot,
            generation,
        };
        let task = runtime.spawn(job.run(lookup));
        let mut tasks = lock(&self.work.tasks);
        tasks.retain(|task| !task.is_finished());
        tasks.push(task);
    }
}

/// One spawned reconcile.
struct Job {
    /// A graceful shutdown waits for the reconcile to record its result.
    #[allow(dead_code)]
    pending: agenthost_services::PendingWork,
    data: Arc<dyn SessionDataStore>,
    work: Arc<Work>,
    session: SessionUri,
    turn_id: String,
    target: Target,
    folder: PathBuf,
    slot: (String, String),
    generation: u64,
}

impl Job {
    async fn run(
        self,
        lookup: futures::future::BoxFuture<'static, Result<RepositoryReference, GitStateError>>,
    ) {
        let outcome = lookup.await;
        self.record(outcome).await;
        self.work.end(&self.slot, self.generation);
    }

    async fn record(&self, outcome: Result<RepositoryReference, GitStateError>) {
        let session = self.session.as_str();
        let turn_id = self.turn_id.as_str();
        let reference = match outcome {
            Ok(reference) => reference,
            Err(error @ GitStateError::NotARepository { .. }) => {
                tracing::debug!(session, turn_id, %error, "githubReferences: not a repository, nothing recorded");
                return;
            }
            Err(error) => {
                tracing::warn!(session, turn_id, %error, "githubReferences: could not read the repository reference");
                return;
            }
        };
        if !self.work.is_current(&self.slot, self.generation) {
            tracing::debug!(
                session,
                turn_id,
                key = self.target.key,
                "githubReferences: a newer reconcile is running; this result is dropped"
            );
            return;
        }
        let mut value = reference_json(&self.target.folder, &reference);
        if reference.pull_request_unknown {
            // GitHub could not be asked this time: keep the pull request recorded for the same
            // remote and branch rather than forget it.
            self.keep_known_pull_request(&mut value).await;
        }
        let value = value.to_string();
        let write = self.data.set_meta(
            DataOwner::Session(self.session.clone()),
            &self.target.key,
            Some(value),
        );
        if let Err(error) = write.await {
            tracing::warn!(
                session,
                turn_id,
                key = self.target.key,
                folder = %self.folder.display(),
                %error,
                "githubReferences: could not record the repository reference"
            );
        }
    }
}

impl Job {
    async fn keep_known_pull_request(&self, value: &mut Value) {
        let owner = DataOwner::Session(self.session.clone());
        let previous = match self.data.meta(owner, &self.target.key).await {
            Ok(Some(raw)) => serde_json::from_str::<Value>(&raw).ok(),
            Ok(None) => None,
            Err(error) => {
                tracing::debug!(session = %self.session, %error, "githubReferences: the previous reference could not be read");
                None
            }
        };
        let Some(previous) = previous else {
            return;
        };
        let same = ["folder", "remote", "branch"]
            .iter()
            .all(|field| previous.get(field) == value.get(field));
        if let (true, Some(pull)) = (same, previous.get("pullRequest")) {
            value["pullRequest"] = pull.clone();
        }
    }
}

/// The recorded JSON of `reference` for `folder` (a `file:` URI).
pub fn reference_json(folder: &str, reference: &RepositoryReference) -> Value {
    let mut value = json!({
        "folder": folder,
        "remote": reference.remote,
        "branch": reference.branch,
    });
    if let Some(pull) = &reference.pull_request {
        value["pullRequest"] = json!({
            "number": pull.number,
            "url": pull.url,
            "state": pull.state,
            "title": pull.title,
        });
    }
    value
}

impl Contribution for GithubReferences {
    const ID: &'static str = "githubReferences";
    const ORDER: i32 = 300;
    const HOOKS: HookSet = HookSet::of(&[Hook::TurnEnd]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for GithubReferences {
    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        if reconciles(&turn.reason) {
            self.reconcile(turn);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

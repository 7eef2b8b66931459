//! [`Checkpointer`]: the blocking core of the service — repository resolution, baseline, turn
//! start and end, reading, deletion, and the consumers (changesets, comparison, rollback).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_protocol::{ChatUri, SessionUri};

pub use agenthost_checkpoint_api::CheckpointPair;

use crate::capture::Scope;
use crate::changeset::{FileChange, RollbackReport};
use crate::config::CheckpointConfig;
use crate::error::CheckpointError;
use crate::info::RepoInfo;
use crate::ledger::CheckpointLedger;
use crate::refname::{SessionNamespace, turn_number};
use crate::repo::Repo;

/// The remembered start of an in-flight turn.
#[derive(Debug, Clone, Default)]
struct TurnStart {
    /// Repository root → tree captured at the turn's start.
    start_trees: Vec<(PathBuf, String)>,
    /// False when another turn of the session overlapped it.
    eligible: bool,
    /// A later turn started in the same chat: this one has ended (a chat runs one turn at a
    /// time) and only its end capture, queued behind the turn end, is still to come.
    ended: bool,
}

/// A session's in-flight turn starts, keyed by (chat, turn).
type SessionStarts = HashMap<(ChatUri, String), TurnStart>;

/// The blocking checkpoint engine. Methods block and do not serialize per session: the async
/// [`GitCheckpointService`](crate::GitCheckpointService) runs them on blocking threads, one
/// operation of a session at a time. Capture methods log failures and return nothing.
pub struct Checkpointer {
    config: Arc<CheckpointConfig>,
    ledger: Arc<dyn CheckpointLedger>,
    /// Working directory → repository root (positive answers only: a directory may become a
    /// repository later).
    roots: Mutex<HashMap<PathBuf, PathBuf>>,
    /// Repository root → opened repository (with its private index and watcher).
    repos: Mutex<HashMap<PathBuf, Arc<Repo>>>,
    /// In-flight turn starts per session, keyed by (chat, turn).
    starts: Mutex<HashMap<SessionUri, SessionStarts>>,
    /// The first working directory each session used (the default for reads).
    first_dirs: Mutex<HashMap<SessionUri, PathBuf>>,
}

impl std::fmt::Debug for Checkpointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpointer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn cancelled(cancel: &AtomicBool, config: &CheckpointConfig) -> Result<(), CheckpointError> {
    if cancel.load(Ordering::Relaxed) {
        return Err(CheckpointError::Timeout {
            budget_ms: config.budget.as_millis(),
        });
    }
    Ok(())
}

impl Checkpointer {
    /// An engine recording turn refs in `ledger`.
    pub fn new(config: CheckpointConfig, ledger: Arc<dyn CheckpointLedger>) -> Self {
        Self {
            config: Arc::new(config),
            ledger,
            roots: Mutex::default(),
            repos: Mutex::default(),
            starts: Mutex::default(),
            first_dirs: Mutex::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &CheckpointConfig {
        &self.config
    }

    /// The repository whose work tree contains `dir`, opened once and cached.
    pub fn repo(&self, dir: &Path) -> Result<Arc<Repo>, CheckpointError> {
        let known_root = lock(&self.roots).get(dir).cloned();
        if let Some(root) = known_root
            && let Some(repo) = lock(&self.repos).get(&root)
        {
            return Ok(repo.clone());
        }
        let repo = Repo::open(dir, self.config.clone())?;
        let root = repo.root().to_owned();
        let repo = {
            let mut repos = lock(&self.repos);
            repos
                .entry(root.clone())
                .or_insert_with(|| Arc::new(repo))
                .clone()
        };
        lock(&self.roots).insert(dir.to_owned(), root);
        Ok(repo)
    }

    /// The distinct repositories of `dirs`, in order; directories outside any work tree are
    /// skipped (logged at debug level).
    fn repos_of(&self, dirs: &[PathBuf]) -> Vec<Arc<Repo>> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for dir in dirs {
            match self.repo(dir) {
                Ok(repo) => {
                    if seen.insert(repo.root().to_owned()) {
                        out.push(repo);
                    }
                }
                Err(error) => tracing::debug!(dir = %dir.display(), %error, "no checkpoints here"),
            }
        }
        out
    }

    fn namespace(&self, session: &SessionUri) -> Option<SessionNamespace> {
        match SessionNamespace::for_session(session) {
            Ok(namespace) => {
                if namespace.sanitized_id() != namespace.raw_id() {
                    tracing::debug!(%session, sanitized = namespace.sanitized_id(), "session id sanitized for git refs");
                }
                Some(namespace)
            }
            Err(error) => {
                tracing::warn!(%session, %error, "no checkpoints for this session");
                None
            }
        }
    }

    fn remember_dirs(&self, session: &SessionUri, dirs: &[PathBuf]) {
        if let Some(first) = dirs.first() {
            lock(&self.first_dirs)
                .entry(session.clone())
                .or_insert_with(|| first.clone());
        }
    }

    fn default_dir(&self, session: &SessionUri, dir: Option<&Path>) -> Option<PathBuf> {
        dir.map(Path::to_owned)
            .or_else(|| lock(&self.first_dirs).get(session).cloned())
    }

    /// Captures the baseline (`turn/0`) in every repository of `dirs` that has none.
    pub fn capture_baseline(&self, session: &SessionUri, dirs: &[PathBuf], cancel: &AtomicBool) {
        let Some(namespace) = self.namespace(session) else {
            return;
        };
        self.remember_dirs(session, dirs);
        for repo in self.repos_of(dirs) {
            if let Err(error) = self.ensure_baseline(&repo, &namespace, None, cancel) {
                tracing::warn!(%session, root = %repo.root().display(), %error, "baseline checkpoint failed");
            }
        }
    }

    /// Creates the baseline in `repo` unless it exists, from `tree` or a fresh capture.
    fn ensure_baseline(
        &self,
        repo: &Repo,
        namespace: &SessionNamespace,
        tree: Option<&str>,
        cancel: &AtomicBool,
    ) -> Result<(), CheckpointError> {
        let name = namespace.baseline_ref()?;
        if repo.resolve(&name)?.is_some() {
            return Ok(());
        }
        let tree = match tree {
            Some(tree) => tree.to_owned(),
            None => repo.capture_tree_with(Scope::Auto, cancel)?.tree,
        };
        cancelled(cancel, &self.config)?;
        let message = format!("{} - baseline checkpoint", namespace.message_prefix());
        let commit = repo.commit(&tree, &[], &message)?;
        repo.set_ref(&name, &commit, &message)
    }

    /// Captures the pre-turn tree of every repository of `dirs` (creating missing baselines
    /// from it) and remembers it until the turn ends or is discarded.
    pub fn capture_turn_start(
        &self,
        session: &SessionUri,
        chat: &ChatUri,
        turn: &str,
        dirs: &[PathBuf],
        cancel: &AtomicBool,
    ) {
        if dirs.is_empty() {
            return;
        }
        let Some(namespace) = self.namespace(session) else {
            return;
        };
        self.remember_dirs(session, dirs);
        let key = (chat.clone(), turn.to_owned());
        let eligible = {
            let mut starts = lock(&self.starts);
            let entries = starts.entry(session.clone()).or_default();
            let mut overlapping = false;
            for (other, entry) in entries.iter_mut().filter(|(other, _)| **other != key) {
                if other.0 == key.0 {
                    entry.ended = true;
                } else if !entry.ended {
                    overlapping = true;
                }
            }
            if overlapping {
                // Overlapping turns share one work tree: nothing can be attributed to either.
                for entry in entries.values_mut().filter(|entry| !entry.ended) {
                    entry.eligible = false;
                }
            }
            !overlapping
        };
        if let Err(error) = self.ledger.ensure_turn(session, turn) {
            tracing::warn!(%session, turn, %error, "cannot record the turn");
        }
        match self.ledger.turn_checkpoint_ref(session, turn) {
            Ok(Some(_)) => {
                self.forget_start(session, &key);
                return;
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%session, turn, %error, "cannot read the turn's checkpoint")
            }
        }
        let mut start = TurnStart {
            start_trees: Vec::new(),
            eligible,
            ended: false,
        };
        for repo in self.repos_of(dirs) {
            let result = repo
                .capture_tree_with(Scope::Auto, cancel)
                .and_then(|capture| {
                    self.ensure_baseline(&repo, &namespace, Some(&capture.tree), cancel)?;
                    Ok(capture.tree)
                });
            match result {
                Ok(tree) => start.start_trees.push((repo.root().to_owned(), tree)),
                Err(error) => {
                    tracing::warn!(%session, turn, root = %repo.root().display(), %error, "turn-start checkpoint failed");
                }
            }
        }
        let mut starts = lock(&self.starts);
        let entries = starts.entry(session.clone()).or_default();
        // Another turn may have started meanwhile and marked this one.
        if let Some(existing) = entries.get(&key) {
            start.eligible &= existing.eligible;
        }
        entries.insert(key, start);
    }

    fn forget_start(&self, session: &SessionUri, key: &(ChatUri, String)) -> Option<TurnStart> {
        let mut starts = lock(&self.starts);
        let entries = starts.get_mut(session)?;
        let start = entries.remove(key);
        if entries.is_empty() {
            starts.remove(session);
        }
        start
    }

    /// Drops the remembered start of a turn that did not complete.
    pub fn discard_turn_start(&self, session: &SessionUri, chat: &ChatUri, turn: &str) {
        self.forget_start(session, &(chat.clone(), turn.to_owned()));
    }

    /// Drops every remembered start of a chat.
    pub fn discard_chat_turn_starts(&self, session: &SessionUri, chat: &ChatUri) {
        let mut starts = lock(&self.starts);
        if let Some(entries) = starts.get_mut(session) {
            entries.retain(|(entry_chat, _), _| entry_chat != chat);
            if entries.is_empty() {
                starts.remove(session);
            }
        }
    }

    /// Captures the end of a turn: in every repository with a baseline and a remembered start,
    /// commits `start ← end` on top of the previous checkpoint and points
    /// `refs/agents/<sid>/checkpoints/turn/<N>` at the end commit; records the ref in the ledger
    /// once one repository succeeded. Returns the ref name when one was written, `Ok(None)` when
    /// there was nothing to capture (no directory, no remembered start, no baseline), and the
    /// error when the capture failed in every repository it was attempted in.
    pub fn capture_turn_end(
        &self,
        session: &SessionUri,
        chat: &ChatUri,
        turn: &str,
        dirs: &[PathBuf],
        cancel: &AtomicBool,
    ) -> Result<Option<String>, CheckpointError> {
        let start = self.forget_start(session, &(chat.clone(), turn.to_owned()));
        if dirs.is_empty() {
            return Ok(None);
        }
        let Some(start) = start.filter(|start| start.eligible) else {
            return Ok(None);
        };
        let Some(namespace) = self.namespace(session) else {
            return Ok(None);
        };
        self.turn_end(session, turn, dirs, &namespace, &start, cancel)
    }

    fn turn_end(
        &self,
        session: &SessionUri,
        turn: &str,
        dirs: &[PathBuf],
        namespace: &SessionNamespace,
        start: &TurnStart,
        cancel: &AtomicBool,
    ) -> Result<Option<String>, CheckpointError> {
        if self.ledger.turn_checkpoint_ref(session, turn)?.is_some() {
            return Ok(None);
        }
        let recorded = self.ledger.all_checkpoint_refs(session)?;
        let n = 1 + recorded
            .iter()
            .filter_map(|name| turn_number(name))
            .max()
            .unwrap_or(0);
        let name = namespace.turn_ref(n)?;
        let previous = self.ledger.previous_checkpoint_ref(session, turn)?;
        let prefix = namespace.message_prefix();
        let mut succeeded = false;
        let mut first_error = None;
        for repo in self.repos_of(dirs) {
            cancelled(cancel, &self.config)?;
            let Some((_, start_tree)) = start
                .start_trees
                .iter()
                .find(|(root, _)| root == repo.root())
            else {
                continue;
            };
            let result = (|| -> Result<bool, CheckpointError> {
                let baseline = namespace.baseline_ref()?;
                if repo.resolve(&baseline)?.is_none() {
                    return Ok(false);
                }
                let mut parent = None;
                for candidate in previous.iter().chain(recorded.iter().rev()) {
                    if let Some(id) = repo.resolve(candidate)? {
                        parent = Some(id);
                        break;
                    }
                }
                let parent = match parent {
                    Some(parent) => parent,
                    None => match repo.resolve(&baseline)? {
                        Some(parent) => parent,
                        None => return Ok(false),
                    },
                };
                let start_commit =
                    repo.commit(start_tree, &[parent], &format!("{prefix} - turn {n} start"))?;
                let end_tree = repo.capture_tree_with(Scope::Auto, cancel)?.tree;
                cancelled(cancel, &self.config)?;
                let message = format!("{prefix} - turn {n}");
                let end_commit = repo.commit(&end_tree, &[start_commit], &message)?;
                repo.set_ref(&name, &end_commit, &message)?;
                Ok(true)
            })();
            match result {
                Ok(true) => succeeded = true,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(%session, turn, root = %repo.root().display(), %error, "turn checkpoint failed in this repository");
                    first_error.get_or_insert(error);
                }
            }
        }
        if !succeeded {
            return first_error.map_or(Ok(None), Err);
        }
        self.ledger.set_turn_checkpoint_ref(session, turn, &name)?;
        Ok(Some(name))
    }

    /// The pair of a turn in `dir`'s repository (default: the session's first directory).
    pub fn turn_pair(
        &self,
        session: &SessionUri,
        turn: &str,
        dir: Option<&Path>,
    ) -> Result<Option<CheckpointPair>, CheckpointError> {
        let Some(dir) = self.default_dir(session, dir) else {
            return Ok(None);
        };
        let Some(namespace) = self.namespace(session) else {
            return Ok(None);
        };
        let repo = self.repo(&dir)?;
        let baseline = namespace.baseline_ref()?;
        if repo.resolve(&baseline)?.is_none() {
            return Ok(None);
        }
        let Some(current) = self.ledger.turn_checkpoint_ref(session, turn)? else {
            return Ok(None);
        };
        let previous = self.ledger.previous_checkpoint_ref(session, turn)?;
        if previous.as_deref() == Some(current.as_str()) {
            return Ok(Some(CheckpointPair {
                parent: current.clone(),
                current,
            }));
        }
        Ok(repo
            .first_parent(&current)?
            .map(|parent| CheckpointPair { parent, current }))
    }

    /// The ref recorded for the session's newest checkpointed turn (a no-op turn records its
    /// parent's), from the ledger.
    pub fn latest_checkpoint(
        &self,
        session: &SessionUri,
    ) -> Result<Option<String>, CheckpointError> {
        Ok(self.ledger.all_checkpoint_refs(session)?.pop())
    }

    /// The baseline ref name, if it resolves in `dir`'s repository.
    pub fn baseline(
        &self,
        session: &SessionUri,
        dir: Option<&Path>,
    ) -> Result<Option<String>, CheckpointError> {
        let Some(dir) = self.default_dir(session, dir) else {
            return Ok(None);
        };
        let Some(namespace) = self.namespace(session) else {
            return Ok(None);
        };
        let repo = self.repo(&dir)?;
        let baseline = namespace.baseline_ref()?;
        Ok(repo.resolve(&baseline)?.map(|_| baseline))
    }

    /// Deletes every ref of the session in every repository of `dirs` — the baseline, the
    /// recorded turn refs and anything else under the session's prefix — tolerating missing
    /// refs. Returns how many refs were deleted.
    pub fn delete_all(&self, session: &SessionUri, dirs: &[PathBuf]) -> usize {
        lock(&self.starts).remove(session);
        let Some(namespace) = self.namespace(session) else {
            return 0;
        };
        let recorded = match self.ledger.all_checkpoint_refs(session) {
            Ok(recorded) => recorded,
            Err(error) => {
                tracing::warn!(%session, %error, "cannot read the recorded checkpoint refs; sweeping the prefix only");
                Vec::new()
            }
        };
        let mut deleted = 0;
        for repo in self.repos_of(dirs) {
            let result = (|| -> Result<usize, CheckpointError> {
                let mut names: BTreeSet<String> = recorded
                    .iter()
                    .filter(|name| namespace.owns(name))
                    .cloned()
                    .collect();
                names.insert(namespace.baseline_ref()?);
                names.extend(
                    repo.refs_with_prefix(&namespace.prefix())?
                        .into_iter()
                        .map(|(name, _)| name),
                );
                let names: Vec<String> = names.into_iter().collect();
                Ok(repo.delete_refs(&names)?.len())
            })();
            match result {
                Ok(count) => deleted += count,
                Err(error) => {
                    tracing::warn!(%session, root = %repo.root().display(), %error, "deleting checkpoints failed");
                }
            }
        }
        lock(&self.first_dirs).remove(session);
        deleted
    }

    /// The changeset between two revisions of `dir`'s repository.
    pub fn changeset(
        &self,
        dir: &Path,
        from: &str,
        to: &str,
    ) -> Result<Vec<FileChange>, CheckpointError> {
        if from == to {
            return Ok(Vec::new());
        }
        self.repo(dir)?.changeset(from, to)
    }

    /// The unified diff text of `changes` (a changeset of `dir`'s repository), file after file
    /// in their order; each side read from its revision (see [`crate::unified_diff`]).
    pub fn unified_diff(
        &self,
        dir: &Path,
        changes: &[FileChange],
    ) -> Result<String, CheckpointError> {
        let repo = self.repo(dir)?;
        let mut text = String::new();
        for change in changes {
            let before = match &change.before {
                Some(blob) => repo.read_blob(blob)?,
                None => None,
            };
            let after = match &change.after {
                Some(blob) => repo.read_blob(blob)?,
                None => None,
            };
            text.push_str(&crate::unified::unified_diff(
                change,
                before.as_deref(),
                after.as_deref(),
            ));
        }
        Ok(text)
    }

    /// The changeset of one turn (`None`: no pair — fall back to tracked edits).
    pub fn turn_changeset(
        &self,
        session: &SessionUri,
        turn: &str,
        dir: Option<&Path>,
    ) -> Result<Option<Vec<FileChange>>, CheckpointError> {
        let Some(dir) = self.default_dir(session, dir) else {
            return Ok(None);
        };
        let Some(pair) = self.turn_pair(session, turn, Some(&dir))? else {
            return Ok(None);
        };
        if pair.is_empty() {
            return Ok(Some(Vec::new()));
        }
        Ok(Some(self.changeset(&dir, &pair.parent, &pair.current)?))
    }

    /// Compares the end of `original` (`None`: the baseline) with the end of `modified`.
    pub fn compare_turns(
        &self,
        session: &SessionUri,
        original: Option<&str>,
        modified: &str,
        dir: Option<&Path>,
    ) -> Result<Vec<FileChange>, CheckpointError> {
        let missing = |reason: &str| CheckpointError::NotGitBacked {
            what: "comparison",
            reason: reason.to_owned(),
        };
        let dir = self
            .default_dir(session, dir)
            .ok_or_else(|| missing("no working directory"))?;
        let from = match original {
            None => self
                .baseline(session, Some(&dir))?
                .ok_or_else(|| missing("no baseline checkpoint"))?,
            Some(turn) => self
                .ledger
                .turn_checkpoint_ref(session, turn)?
                .ok_or_else(|| missing("the original turn has no checkpoint"))?,
        };
        let to = self
            .ledger
            .turn_checkpoint_ref(session, modified)?
            .ok_or_else(|| missing("the modified turn has no checkpoint"))?;
        self.changeset(&dir, &from, &to)
    }

    /// Rolls `turn` back in `dir`'s work tree: exactly the paths of the turn's changeset get
    /// their start state back.
    pub fn rollback_turn(
        &self,
        session: &SessionUri,
        turn: &str,
        dir: &Path,
    ) -> Result<RollbackReport, CheckpointError> {
        let pair = self.turn_pair(session, turn, Some(dir))?.ok_or_else(|| {
            CheckpointError::NotGitBacked {
                what: "rollback",
                reason: "the turn has no checkpoint pair".to_owned(),
            }
        })?;
        if pair.is_empty() {
            return Ok(RollbackReport::default());
        }
        self.repo(dir)?.rollback(&pair.parent, &pair.current)
    }

    /// Branch, remotes and linked worktrees of `dir`'s repository.
    pub fn repo_info(&self, dir: &Path) -> Result<RepoInfo, CheckpointError> {
        self.repo(dir)?.info()
    }
}

#[cfg(test)]
#[path = "checkpointer_tests.rs"]
mod tests;

//! [`Repo`]: one opened repository with its capture state — the synchronous, blocking layer.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use gix::bstr::ByteSlice;
use gix::hash::ObjectId;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};

use crate::capture::{self, Capture, CaptureState, Scope};

/// How long a checkpoint ref update waits for another writer's lock on a ref or `packed-refs`.
const REF_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
use crate::config::{CheckpointConfig, CommitTime};
use crate::error::{CheckpointError, GitContext};

pub use agenthost_checkpoint_api::ObjectFormat;

/// The id of the empty tree in `format`.
#[cfg(test)]
pub(crate) fn empty_tree(format: ObjectFormat) -> String {
    ObjectId::empty_tree(hash_kind(format)).to_string()
}

/// gix's name for `format`.
pub(crate) fn hash_kind(format: ObjectFormat) -> gix::hash::Kind {
    match format {
        ObjectFormat::Sha1 => gix::hash::Kind::Sha1,
        ObjectFormat::Sha256 => gix::hash::Kind::Sha256,
    }
}

/// How many times a capture is taken again when a work-tree file changed while it was read.
const CHANGED_WHILE_READ_RETRIES: usize = 4;

/// One repository's work tree, opened once and kept: the handle, the private capture index
/// and the work-tree watcher live as long as this value.
///
/// Every method blocks (gix is synchronous); async callers go through the service, which runs
/// them on tokio's blocking pool. A `Repo` is `Send + Sync`: captures are serialized by an
/// internal lock, ref transactions by another.
pub struct Repo {
    root: PathBuf,
    format: ObjectFormat,
    sync: gix::ThreadSafeRepository,
    capture: Mutex<Option<CaptureState>>,
    refs: Mutex<()>,
    config: Arc<CheckpointConfig>,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("root", &self.root)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

/// When this process first opened a repository. A checkpoint ref's lock file older than that
/// was left by a process killed while it held it (only one host writes a session's refs): it
/// would fail every later update of that ref, so it is removed.
static FIRST_OPENED: LazyLock<SystemTime> = LazyLock::new(SystemTime::now);

/// Locks a mutex, recovering the data of a poisoned one (a panic mid-capture leaves a state that
/// `capture` discards anyway: it takes the state out and puts it back only on success).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Repo {
    /// Opens the work tree that contains `dir` (searching upwards). Bare repositories and
    /// directories outside any repository give [`CheckpointError::NotAWorkTree`].
    pub fn open(dir: &Path, config: Arc<CheckpointConfig>) -> Result<Self, CheckpointError> {
        LazyLock::force(&FIRST_OPENED);
        let not_a_work_tree = || CheckpointError::NotAWorkTree {
            path: dir.to_owned(),
        };
        // Our handle never writes reflogs: refs/agents/* get none even with
        // core.logAllRefUpdates=always.
        let overrides = ["core.logAllRefUpdates=false"];
        let mut trust = gix::sec::trust::Mapping::<gix::open::Options>::default();
        trust.full = trust.full.clone().config_overrides(overrides);
        trust.reduced = trust.reduced.clone().config_overrides(overrides);
        let sync = gix::ThreadSafeRepository::discover_opts(dir, Default::default(), trust)
            .map_err(|error| {
                tracing::debug!(dir = %dir.display(), %error, "not a git work tree");
                not_a_work_tree()
            })?;
        let repo = sync.to_thread_local();
        let root = work_tree_root(&repo, dir)?;
        let format = match repo.object_hash() {
            gix::hash::Kind::Sha1 => ObjectFormat::Sha1,
            gix::hash::Kind::Sha256 => ObjectFormat::Sha256,
            other => {
                return Err(CheckpointError::UnsupportedObjectFormat {
                    path: root,
                    format: format!("{other:?}"),
                });
            }
        };
        Ok(Self {
            root,
            format,
            sync,
            capture: Mutex::new(None),
            refs: Mutex::new(()),
            config,
        })
    }

    /// The work tree's top-level directory (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The repository's object format.
    pub fn object_format(&self) -> ObjectFormat {
        self.format
    }

    /// A thread-local handle (cheap: shares the object and ref caches).
    pub(crate) fn gix(&self) -> gix::Repository {
        self.sync.to_thread_local()
    }

    /// Captures the work tree as a tree object, examining only what the watcher
    /// reported when there is a watcher.
    pub fn capture_tree(&self) -> Result<Capture, CheckpointError> {
        self.capture_tree_with(Scope::Auto, &AtomicBool::new(false))
    }

    /// Captures the work tree, examining every path (a full status pass).
    pub fn capture_tree_full_scan(&self) -> Result<Capture, CheckpointError> {
        self.capture_tree_with(Scope::Full, &AtomicBool::new(false))
    }

    pub(crate) fn capture_tree_with(
        &self,
        scope: Scope,
        interrupt: &AtomicBool,
    ) -> Result<Capture, CheckpointError> {
        let repo = self.gix();
        let mut slot = lock(&self.capture);
        let mut retried = 0;
        loop {
            match capture::capture(&repo, &mut slot, &self.config, scope, interrupt) {
                // Another writer (an agent, a second session in the same folder) shrank a file
                // while it was read. The failed capture left nothing behind (its state is
                // rebuilt by a full pass), so it is simply taken again.
                Err(error)
                    if retried < CHANGED_WHILE_READ_RETRIES
                        && error.is_file_changed_while_read()
                        && !interrupt.load(std::sync::atomic::Ordering::Relaxed) =>
                {
                    retried += 1;
                    tracing::debug!(%error, retried, "a work-tree file changed while it was read; capturing again");
                }
                outcome => return outcome,
            }
        }
    }

    /// Writes a commit of `tree` with `parents` and `message` as the fixed identity. Moves no ref.
    pub fn commit(
        &self,
        tree: &str,
        parents: &[String],
        message: &str,
    ) -> Result<String, CheckpointError> {
        let repo = self.gix();
        let tree = self.parse_id(tree)?;
        let parents = parents
            .iter()
            .map(|parent| self.parse_id(parent))
            .collect::<Result<Vec<_>, _>>()?;
        let seconds = match self.config.commit_time {
            CommitTime::Now => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs() as i64),
            CommitTime::Fixed(seconds) => seconds,
        };
        let time = format!("{seconds} +0000");
        let identity = &self.config.identity;
        let signature = gix::actor::SignatureRef {
            name: identity.name.as_bytes().as_bstr(),
            email: identity.email.as_bytes().as_bstr(),
            time: &time,
        };
        let mut message = message.to_owned();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        let commit = repo
            .new_commit_as(signature, signature, message, tree, parents)
            .git("write a checkpoint commit")?;
        Ok(commit.id.to_string())
    }

    /// The commit a ref name or object id points at, or `None` when it does not resolve.
    pub fn resolve(&self, rev: &str) -> Result<Option<String>, CheckpointError> {
        Ok(self.resolve_id(rev)?.map(|id| id.to_string()))
    }

    pub(crate) fn resolve_id(&self, rev: &str) -> Result<Option<ObjectId>, CheckpointError> {
        let repo = self.gix();
        if let Ok(id) = ObjectId::from_hex(rev.as_bytes())
            && id.kind() == repo.object_hash()
        {
            return Ok(repo.try_find_header(id).ok().flatten().map(|_| id));
        }
        if rev.starts_with("refs/") || rev == "HEAD" {
            let Some(mut reference) = repo.try_find_reference(rev).git("look up a reference")?
            else {
                return Ok(None);
            };
            let id = reference.peel_to_id().git("peel a reference")?;
            return Ok(Some(id.detach()));
        }
        Ok(None)
    }

    /// The tree of the commit `rev` resolves to.
    pub(crate) fn tree_of(&self, rev: &str) -> Result<ObjectId, CheckpointError> {
        let id = self
            .resolve_id(rev)?
            .ok_or_else(|| CheckpointError::UnknownRevision {
                path: self.root.clone(),
                rev: rev.to_owned(),
            })?;
        let repo = self.gix();
        let commit = repo.find_commit(id).git("read a checkpoint commit")?;
        Ok(commit.tree_id().git("read a commit's tree")?.detach())
    }

    /// The first parent of the commit `rev` resolves to.
    pub fn first_parent(&self, rev: &str) -> Result<Option<String>, CheckpointError> {
        let Some(id) = self.resolve_id(rev)? else {
            return Ok(None);
        };
        let repo = self.gix();
        let commit = repo.find_commit(id).git("read a checkpoint commit")?;
        Ok(commit.parent_ids().next().map(|parent| parent.to_string()))
    }

    /// Points the ref `name` at `id`, overwriting any previous value, without a reflog.
    pub fn set_ref(&self, name: &str, id: &str, message: &str) -> Result<(), CheckpointError> {
        let id = self.parse_id(id)?;
        let name = full_name(name)?;
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: false,
                    message: message.into(),
                },
                expected: PreviousValue::Any,
                new: gix::refs::Target::Object(id),
            },
            name,
            deref: false,
        };
        let _guard = lock(&self.refs);
        self.remove_stale_locks(&edit.name);
        self.write_packed(edit).git("update a checkpoint ref")?;
        Ok(())
    }

    /// Applies `edit` to `packed-refs` (removing a loose copy of the ref): a repository with
    /// thousands of sessions keeps one file of checkpoint refs, not one file per ref.
    fn write_packed(&self, edit: RefEdit) -> Result<Vec<RefEdit>, gix::Error> {
        let repo = self.gix();
        let fail = gix::lock::acquire::Fail::AfterDurationWithBackoff(REF_LOCK_TIMEOUT);
        let packed = gix::refs::file::transaction::PackedRefs::DeletionsAndNonSymbolicUpdatesRemoveLooseSourceReference(
            Box::new(repo.objects.clone()),
        );
        repo.refs
            .transaction()
            .packed_refs(packed)
            .prepare(Some(edit), fail, fail)?
            .commit(None)
    }

    /// Removes the lock files a process that is gone left on ref `name` or on `packed-refs`
    /// (older than [`FIRST_OPENED`]): a host killed while it updated a checkpoint ref would
    /// otherwise fail every later update.
    fn remove_stale_locks(&self, name: &gix::refs::FullName) {
        let common = self.gix().common_dir().to_owned();
        let own = name
            .as_bstr()
            .to_str()
            .ok()
            .map(|relative| common.join(format!("{relative}.lock")));
        for lock in own.into_iter().chain([common.join("packed-refs.lock")]) {
            let stale = std::fs::metadata(&lock)
                .and_then(|metadata| metadata.modified())
                .is_ok_and(|modified| modified < *FIRST_OPENED);
            if stale && std::fs::remove_file(&lock).is_ok() {
                tracing::warn!(lock = %lock.display(), "removed a ref lock left by a process that was killed");
            }
        }
    }

    /// Every ref whose name starts with `prefix`, with the commit it points at, sorted by name.
    pub fn refs_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, CheckpointError> {
        let repo = self.gix();
        let platform = repo.references().git("list references")?;
        let iter = platform
            .prefixed(prefix.as_bytes().as_bstr())
            .git("list references")?;
        let mut out = Vec::new();
        for reference in iter {
            let Ok(mut reference) = reference else {
                continue;
            };
            let name = reference.name().as_bstr().to_str_lossy().into_owned();
            if let Ok(id) = reference.peel_to_id() {
                out.push((name, id.to_string()));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Deletes every ref in `names` that exists, in one transaction (loose and packed). Missing
    /// refs are skipped. Returns the names that were deleted.
    pub fn delete_refs(&self, names: &[String]) -> Result<Vec<String>, CheckpointError> {
        let _guard = lock(&self.refs);
        let repo = self.gix();
        let mut edits = Vec::new();
        let mut deleted = Vec::new();
        for name in names {
            let full = full_name(name)?;
            if repo
                .try_find_reference(full.as_bstr())
                .git("look up a reference")?
                .is_none()
            {
                continue;
            }
            if deleted.contains(name) {
                continue;
            }
            deleted.push(name.clone());
            edits.push(RefEdit {
                change: Change::Delete {
                    expected: PreviousValue::Any,
                    log: RefLog::AndReference,
                },
                name: full,
                deref: false,
            });
        }
        if !edits.is_empty() {
            repo.edit_references_as(edits, None)
                .git("delete checkpoint refs")?;
        }
        Ok(deleted)
    }

    pub(crate) fn parse_id(&self, hex: &str) -> Result<ObjectId, CheckpointError> {
        ObjectId::from_hex(hex.as_bytes())
            .ok()
            .filter(|id| id.kind() == hash_kind(self.format))
            .ok_or_else(|| CheckpointError::UnknownRevision {
                path: self.root.clone(),
                rev: hex.to_owned(),
            })
    }
}

/// A validated full ref name.
fn full_name(name: &str) -> Result<gix::refs::FullName, CheckpointError> {
    gix::refs::FullName::try_from(name).map_err(|error| CheckpointError::InvalidRefName {
        name: name.to_owned(),
        reason: error.to_string(),
    })
}

/// The canonical top-level directory of `repo`'s work tree (`dir` names the folder it was
/// found from); a bare repository is [`CheckpointError::NotAWorkTree`].
pub(crate) fn work_tree_root(
    repo: &gix::Repository,
    dir: &Path,
) -> Result<PathBuf, CheckpointError> {
    let workdir = repo
        .workdir()
        .ok_or_else(|| CheckpointError::NotAWorkTree {
            path: dir.to_owned(),
        })?;
    std::fs::canonicalize(workdir).map_err(|source| CheckpointError::Io {
        action: "resolve",
        path: workdir.to_owned(),
        source,
    })
}

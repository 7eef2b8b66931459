//! Capturing the working tree as a tree object, without touching the user's index.
//!
//! # The private index
//!
//! Each repository gets a [`CaptureState`]: an in-memory index of our own that mirrors the tree
//! of the previous capture, with stat data for every entry. It is built from `HEAD`'s tree (so
//! the result is git's `read-tree HEAD; add -A; write-tree` on a temporary index, whatever the
//! user has staged), borrowing stat data from the user's index for entries whose id and mode
//! agree and that are not racy there — the user's index is only read. A capture:
//!
//! 1. drains the watcher (see [`crate::watch`]) to learn which paths changed; without a watcher,
//!    after a `HEAD` move, or when ignore rules changed, every path is a candidate;
//! 2. runs gix's index ↔ work-tree status against the private index, limited to the candidate
//!    paths (literal pathspecs), with untracked files listed one by one and ignored ones left
//!    out; a clean entry costs one `lstat`, not a hash;
//! 3. hashes (and writes as blobs, through the repository's clean filters) only the files that
//!    status reports as changed or new, skipping untracked files over the size cap;
//! 4. edits the previous capture's tree with those changes — only the changed subtrees are
//!    written — and updates the private index, whose refreshed stat data is kept for the next
//!    capture (never written anywhere).
//!
//! Nothing but objects is written: no index, no lock, no ref, no work-tree file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use gix::bstr::{BStr, BString, ByteSlice, ByteVec};
use gix::hash::ObjectId;
use gix::index::entry::{Flags, Mode, Stat};
use gix::objs::tree::EntryKind;

use crate::config::CheckpointConfig;
use crate::error::{CheckpointError, GitContext};
use crate::watch::{Changes, Watcher};

mod status;

use status::{CountingEq, Found, GitlinkHead};

/// Files modified this close to (or after) the start of a pass are re-checked by content on the
/// next pass: coarse file-system timestamps cannot tell two writes within one tick apart.
const RACY_MARGIN: Duration = Duration::from_secs(2);

/// A captured work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// The tree object (hex).
    pub tree: String,
    /// Untracked files left out because they exceed the size cap.
    pub skipped: Vec<SkippedFile>,
    /// What the capture cost.
    pub stats: CaptureStats,
}

/// An untracked file left out of a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// Repo-relative, `/`-separated path.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// What one capture did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Why every path was examined (`None`: only the paths the watcher reported).
    pub full_scan: Option<String>,
    /// Candidate paths the watcher reported (0 on a full scan).
    pub watched_paths: usize,
    /// Index entries whose stat data status compared.
    pub entries_checked: usize,
    /// Files whose content was read and hashed (status comparisons plus blobs written).
    pub files_hashed: usize,
    /// Paths added, changed or removed relative to the previous capture.
    pub paths_changed: usize,
    /// Directories the watcher watches after this capture (0: no watcher).
    pub watched_dirs: usize,
}

/// The per-repository capture state: the private index and what it mirrors.
#[derive(Debug)]
pub(crate) struct CaptureState {
    /// Mirrors `tree`, with stat data from the last time each entry was looked at.
    index: gix::index::State,
    /// The tree of the previous capture.
    tree: ObjectId,
    /// `HEAD`'s tree at the previous capture.
    head_tree: ObjectId,
    /// Paths of `index` that are not in `head_tree` (captured untracked files).
    extras: BTreeSet<BString>,
    /// Gitlink paths of `index` (nested repositories and submodules): always re-checked.
    gitlinks: BTreeSet<BString>,
    watcher: Option<Watcher>,
    rules: RulesStamp,
}

/// Modification times of the repository-wide ignore and attribute files, which the watcher
/// cannot see (they live in `.git` or in the user's configuration directory).
#[derive(Debug, Clone, PartialEq, Eq)]
struct RulesStamp(Vec<Option<(SystemTime, u64)>>);

impl RulesStamp {
    fn read(repo: &gix::Repository) -> Self {
        let mut files: Vec<PathBuf> = vec![
            repo.common_dir().join("info").join("exclude"),
            repo.common_dir().join("info").join("attributes"),
        ];
        let config = repo.config_snapshot();
        if let Ok(Some(path)) = config.trusted_path("core.excludesFile") {
            files.push(path);
        } else if let Some(home) = std::env::var_os("XDG_CONFIG_HOME") {
            files.push(Path::new(&home).join("git").join("ignore"));
        } else if let Some(home) = std::env::var_os("HOME") {
            files.push(Path::new(&home).join(".config").join("git").join("ignore"));
        }
        Self(
            files
                .iter()
                .map(|file| {
                    let md = std::fs::metadata(file).ok()?;
                    Some((md.modified().ok()?, md.len()))
                })
                .collect(),
        )
    }
}

/// Whether to trust the watcher or examine every path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Use the watcher when there is one.
    Auto,
    /// Examine every path (and rebuild the watcher).
    Full,
}

/// Captures the work tree of `repo`. `slot` holds the capture state between calls; it is taken
/// out during the capture and put back only on success, so a failed capture starts afresh.
pub(crate) fn capture(
    repo: &gix::Repository,
    slot: &mut Option<CaptureState>,
    config: &CheckpointConfig,
    scope: Scope,
    interrupt: &AtomicBool,
) -> Result<Capture, CheckpointError> {
    let pass_start = SystemTime::now();
    let workdir = repo
        .workdir()
        .ok_or_else(|| CheckpointError::NotAWorkTree {
            path: repo.git_dir().to_owned(),
        })?
        .to_owned();
    let head_tree = repo
        .head_tree_id_or_empty()
        .git("read the tree of HEAD")?
        .detach();
    let rules = RulesStamp::read(repo);
    let mut stats = CaptureStats::default();

    let (mut state, first) = match slot.take() {
        Some(state) => (state, false),
        None => (CaptureState::new(repo, head_tree, rules.clone())?, true),
    };
    let head_moved = state.head_tree != head_tree;
    let rules_changed = state.rules != rules;
    // The watcher is rebuilt whenever what it leaves unwatched may have changed.
    let mut rebuild = state.watcher.is_none() || head_moved || rules_changed;
    let mut full = if first {
        Some("first capture")
    } else if scope == Scope::Full {
        Some("a full scan was requested")
    } else if head_moved {
        Some("HEAD moved")
    } else if rules_changed {
        Some("repository-wide ignore or attribute rules changed")
    } else if state.watcher.is_none() {
        Some("no file watcher")
    } else {
        None
    };

    // Paths whose membership in HEAD changed.
    let mut head_adds: Vec<BString> = Vec::new();
    if head_moved {
        head_adds = state.follow_head(repo, head_tree)?;
    }
    state.rules = rules;

    // Learn what changed: drain the watcher, or decide on a full pass.
    let mut candidates: BTreeSet<BString> = BTreeSet::new();
    if full.is_none() {
        let CaptureState {
            index,
            watcher,
            gitlinks,
            ..
        } = &mut state;
        if let Some(watcher) = watcher.as_mut() {
            let mut excludes = repo
                .excludes(index, None, Default::default())
                .git("load the ignore rules")?;
            let changes = watcher.drain(&mut |rela, abs| skip_dir(&mut excludes, index, rela, abs));
            match changes {
                Changes::Everything(reason) => {
                    full = Some(reason);
                    rebuild = true;
                }
                Changes::Paths(paths) => {
                    stats.watched_paths = paths.len();
                    candidates = paths;
                    candidates.extend(gitlinks.iter().cloned());
                }
            }
        }
    }
    stats.full_scan = full.map(str::to_owned);
    if rebuild {
        // Start watching before looking, so nothing that changes during the pass is missed.
        state.watcher = None;
        if config.watch {
            let mut excludes = repo
                .excludes(&state.index, None, Default::default())
                .git("load the ignore rules")?;
            let index = &state.index;
            state.watcher = match Watcher::start(&workdir, &mut |rela, abs| {
                skip_dir(&mut excludes, index, rela, abs)
            }) {
                Ok(watcher) => Some(watcher),
                Err(error) => {
                    tracing::debug!(%error, root = %workdir.display(), "cannot watch the work tree; captures will scan it");
                    None
                }
            };
        }
    }

    let mut found = Found::default();
    let hashed = Arc::new(AtomicUsize::new(0));
    if full.is_some() || !candidates.is_empty() {
        let patterns: Vec<BString> = if full.is_some() {
            Vec::new()
        } else {
            candidates
                .iter()
                .map(|path| literal_pathspec(path.as_bstr()))
                .collect()
        };
        let dirwalk = repo
            .dirwalk_options()
            .git("read the file-system options")?
            .emit_untracked(gix::dir::walk::EmissionMode::Matching)
            .emit_ignored(None)
            .emit_pruned(false)
            .emit_tracked(false)
            .emit_empty_directories(false)
            .recurse_repositories(false)
            .classify_untracked_bare_repositories(false)
            .emit_collapsed(None);
        let outcome = repo
            .index_worktree_status(
                &state.index,
                patterns,
                &mut found,
                CountingEq(hashed.clone()),
                GitlinkHead {
                    workdir: workdir.clone(),
                },
                &mut gix::progress::Discard,
                interrupt,
                gix::status::index_worktree::Options {
                    sorting: None,
                    dirwalk_options: Some(dirwalk),
                    rewrites: None,
                    thread_limit: None,
                },
            )
            .git("compare the work tree with the previous capture")?;
        stats.entries_checked = outcome.tracked_file_modification.entries_processed;
    }
    if interrupt.load(Ordering::Relaxed) {
        return Err(CheckpointError::Timeout {
            budget_ms: config.budget.as_millis(),
        });
    }
    found.rewrite.extend(head_adds);

    let mut edits = state.plan(repo, &workdir, found, full.is_some(), config, &hashed)?;

    stats.files_hashed = hashed.load(Ordering::Relaxed);
    stats.paths_changed = edits.changed();
    let skipped = std::mem::take(&mut edits.skipped);

    if stats.paths_changed > 0 {
        state.tree = write_tree(repo, state.tree, &edits)?;
    }
    state.apply(edits);
    state
        .index
        .set_timestamp(filetime::FileTime::from_system_time(
            pass_start.checked_sub(RACY_MARGIN).unwrap_or(pass_start),
        ));
    stats.watched_dirs = state.watcher.as_ref().map_or(0, Watcher::watched_dirs);
    let tree = state.tree.to_string();
    *slot = Some(state);
    Ok(Capture {
        tree,
        skipped,
        stats,
    })
}

/// Edits the previous capture's tree: only the trees on the changed paths are loaded and
/// written. gix's checked editor would test every entry of every written tree for existence
/// (thousands of lookups for one changed file in a large directory); every id written here
/// was just written or comes from an existing tree, so the plain editor is used.
fn write_tree(
    repo: &gix::Repository,
    base: ObjectId,
    edits: &Edits,
) -> Result<ObjectId, CheckpointError> {
    let mut editor = repo
        .edit_tree(base)
        .git("open the previous capture's tree")?
        .detach();
    for path in &edits.removals {
        editor
            .remove(path.split_str("/"))
            .git("remove a path from the tree")?;
    }
    for upsert in &edits.upserts {
        editor
            .upsert(upsert.path.split_str("/"), upsert.kind, upsert.id)
            .git("add a path to the tree")?;
    }
    editor
        .write(|tree| repo.write_object(tree).map(gix::Id::detach))
        .git("write the captured tree")
}

/// `:(literal)<path>`: the path itself, no glob characters.
fn literal_pathspec(path: &BStr) -> BString {
    let mut spec = BString::from(":(literal)");
    spec.push_str(path);
    spec
}

/// Whether the watcher leaves a directory alone: `.git`, nested repositories, and ignored
/// directories that hold no captured file.
fn skip_dir(
    excludes: &mut gix::AttributeStack<'_>,
    index: &gix::index::State,
    rela: &BStr,
    abs: &Path,
) -> bool {
    if rela.split_str("/").any(|component| component == b".git") {
        return true;
    }
    if std::fs::symlink_metadata(abs.join(".git")).is_ok() {
        return true;
    }
    let ignored = excludes
        .at_entry(rela, Some(Mode::DIR))
        .map(|platform| platform.is_excluded())
        .unwrap_or(false);
    if !ignored {
        return false;
    }
    let mut prefix = BString::from(rela);
    prefix.push(b'/');
    index.prefixed_entries(prefix.as_bstr()).is_none()
}

/// One path to add or replace in the tree.
#[derive(Debug)]
struct Upsert {
    path: BString,
    kind: EntryKind,
    id: ObjectId,
    stat: Stat,
    in_head: bool,
}

/// Everything a capture changes, computed before anything is applied.
#[derive(Debug, Default)]
struct Edits {
    removals: BTreeSet<BString>,
    upserts: Vec<Upsert>,
    stat_only: Vec<(BString, Stat)>,
    skipped: Vec<SkippedFile>,
}

impl Edits {
    fn changed(&self) -> usize {
        self.removals.len() + self.upserts.len()
    }
}

impl CaptureState {
    /// A fresh state mirroring `HEAD`'s tree, with the user's stat data where it can be trusted.
    fn new(
        repo: &gix::Repository,
        head_tree: ObjectId,
        rules: RulesStamp,
    ) -> Result<Self, CheckpointError> {
        let (mut index, _) = repo
            .index_from_tree(&head_tree)
            .git("read HEAD's tree into the private index")?
            .into_parts();
        let mut timestamp = filetime::FileTime::from_unix_time(0, 0);
        // The user's index is only read, never locked or written.
        if let Ok(Some(user)) = repo.try_index() {
            let options = repo.stat_options().unwrap_or_default();
            let user_timestamp = user.timestamp();
            let (entries, backing) = index.entries_mut_and_pathbacking();
            for entry in entries.iter_mut() {
                let path = entry.path_in(backing);
                if let Some(theirs) = user.entry_by_path(path)
                    && theirs.id == entry.id
                    && theirs.mode == entry.mode
                    && !theirs.stat.is_racy(user_timestamp, options)
                {
                    entry.stat = theirs.stat;
                }
            }
            timestamp = user_timestamp;
        }
        index.set_timestamp(timestamp);
        let gitlinks = index
            .entries()
            .iter()
            .filter(|entry| entry.mode.is_submodule())
            .map(|entry| entry.path(&index).to_owned())
            .collect();
        Ok(Self {
            index,
            tree: head_tree,
            head_tree,
            extras: BTreeSet::new(),
            gitlinks,
            watcher: None,
            rules,
        })
    }

    /// Adjusts to a new `HEAD` tree: paths that entered `HEAD` are no longer "untracked extras"
    /// (and are returned, to be captured even if ignored); paths that left it become extras
    /// (and get the ignore check of a full pass).
    fn follow_head(
        &mut self,
        repo: &gix::Repository,
        new_head: ObjectId,
    ) -> Result<Vec<BString>, CheckpointError> {
        let old = repo
            .find_tree(self.head_tree)
            .git("read the previous HEAD tree")?;
        let new = repo.find_tree(new_head).git("read the new HEAD tree")?;
        let changes = repo
            .diff_tree_to_tree(&old, &new, gix::diff::Options::default())
            .git("compare the previous and the new HEAD tree")?;
        let mut entered = Vec::new();
        for change in changes {
            use gix::object::tree::diff::ChangeDetached as C;
            let (path, mode, in_new) = match change {
                C::Addition {
                    location,
                    entry_mode,
                    ..
                } => (location, entry_mode, true),
                C::Modification {
                    location,
                    entry_mode,
                    ..
                } => (location, entry_mode, true),
                C::Deletion {
                    location,
                    entry_mode,
                    ..
                } => (location, entry_mode, false),
                C::Rewrite {
                    location,
                    entry_mode,
                    ..
                } => (location, entry_mode, true),
            };
            if mode.is_tree() {
                continue;
            }
            let in_index = self.index.entry_by_path(path.as_bstr()).is_some();
            if in_new {
                self.extras.remove(&path);
                if !in_index {
                    entered.push(path);
                }
            } else if in_index {
                self.extras.insert(path);
            }
        }
        self.head_tree = new_head;
        Ok(entered)
    }

    /// Turns what status found into edits: hashes changed and new files (writing their blobs),
    /// applies the size cap to untracked files, and on a full pass drops captured untracked
    /// files that are ignored now.
    fn plan(
        &self,
        repo: &gix::Repository,
        workdir: &Path,
        found: Found,
        full: bool,
        config: &CheckpointConfig,
        hashed: &AtomicUsize,
    ) -> Result<Edits, CheckpointError> {
        let mut edits = Edits::default();
        let executable_bit = repo
            .filesystem_options()
            .map(|caps| caps.executable_bit)
            .unwrap_or(true);
        let attributes = repo
            .attributes_only(&self.index, Default::default())
            .git("load the attributes")?
            .detach();
        let mut pipeline =
            gix::filter::Pipeline::new(repo, attributes).git("set up the clean filters")?;

        edits.removals.extend(found.removed);
        let mut to_hash: BTreeSet<BString> = found.rewrite.into_iter().collect();
        to_hash.extend(found.untracked);
        for path in to_hash {
            edits.removals.remove(&path);
            let existing = self.index.entry_by_path(path.as_bstr());
            let in_head = existing.is_some() && !self.extras.contains(&path);
            let abs = workdir.join(rela_path(path.as_bstr()));
            let Ok(metadata) = gix::index::fs::Metadata::from_path_no_follow(&abs) else {
                if existing.is_some() {
                    edits.removals.insert(path);
                }
                continue;
            };
            if !in_head && metadata.is_file() && metadata.len() > config.max_untracked_file_bytes {
                edits.skipped.push(SkippedFile {
                    path: path.to_str_lossy().into_owned(),
                    bytes: metadata.len(),
                });
                if existing.is_some() {
                    edits.removals.insert(path);
                }
                continue;
            }
            let Ok(stat) = Stat::from_fs(&metadata) else {
                continue;
            };
            if metadata.is_file() {
                hashed.fetch_add(1, Ordering::Relaxed);
            }
            let object = pipeline
                .worktree_file_to_object(path.as_bstr(), &self.index)
                .git("hash a work-tree file")?;
            let Some((id, mut kind, _)) = object else {
                if existing.is_some() {
                    edits.removals.insert(path);
                }
                continue;
            };
            if !executable_bit && matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable) {
                // core.fileMode=false: the disk's bit means nothing; keep the recorded one.
                kind = match existing {
                    Some(entry) if entry.mode == Mode::FILE_EXECUTABLE => EntryKind::BlobExecutable,
                    _ => EntryKind::Blob,
                };
            }
            let unchanged = existing
                .is_some_and(|entry| entry.id == id && Some(entry.mode) == mode_of(kind).into());
            if unchanged {
                edits.stat_only.push((path, stat));
                continue;
            }
            edits.upserts.push(Upsert {
                path,
                kind,
                id,
                stat,
                in_head,
            });
        }
        for (path, id) in found.gitlinks {
            let stat = self
                .index
                .entry_by_path(path.as_bstr())
                .map(|entry| entry.stat)
                .unwrap_or_default();
            let in_head = !self.extras.contains(&path);
            edits.upserts.push(Upsert {
                path,
                kind: EntryKind::Commit,
                id,
                stat,
                in_head,
            });
        }
        edits.stat_only.extend(found.stat_only);

        if full && !self.extras.is_empty() {
            let mut excludes = repo
                .excludes(&self.index, None, Default::default())
                .git("load the ignore rules")?;
            for path in &self.extras {
                if is_ignored(&mut excludes, path.as_bstr()) {
                    edits.removals.insert(path.clone());
                }
            }
            edits
                .upserts
                .retain(|upsert| !edits.removals.contains(&upsert.path));
        }
        Ok(edits)
    }

    /// Applies `edits` to the private index (the tree was written from them already).
    fn apply(&mut self, edits: Edits) {
        let Edits {
            removals,
            upserts,
            stat_only,
            skipped: _,
        } = edits;
        if !removals.is_empty() {
            self.index
                .remove_entries(|_, path, _| removals.contains(path));
            for path in &removals {
                self.extras.remove(path);
                self.gitlinks.remove(path);
            }
        }
        let mut added = false;
        for upsert in upserts {
            let mode = mode_of(upsert.kind);
            if let Some(entry) = self.index.entry_mut_by_path_and_stage(
                upsert.path.as_bstr(),
                gix::index::entry::Stage::Unconflicted,
            ) {
                entry.id = upsert.id;
                entry.mode = mode;
                entry.stat = upsert.stat;
            } else {
                self.index.dangerously_push_entry(
                    upsert.stat,
                    upsert.id,
                    Flags::empty(),
                    mode,
                    upsert.path.as_bstr(),
                );
                added = true;
            }
            if upsert.kind == EntryKind::Commit {
                self.gitlinks.insert(upsert.path.clone());
            } else {
                self.gitlinks.remove(&upsert.path);
            }
            if !upsert.in_head {
                self.extras.insert(upsert.path);
            }
        }
        if added {
            self.index.sort_entries();
        }
        for (path, stat) in stat_only {
            if let Some(entry) = self
                .index
                .entry_mut_by_path_and_stage(path.as_bstr(), gix::index::entry::Stage::Unconflicted)
            {
                entry.stat = stat;
            }
        }
    }
}

/// Whether `path` (a file) is ignored: it, or one of its directories, matches an exclude rule.
fn is_ignored(excludes: &mut gix::AttributeStack<'_>, path: &BStr) -> bool {
    let mut end = 0;
    while let Some(slash) = path[end..].find_byte(b'/') {
        let dir = &path[..end + slash];
        if excludes
            .at_entry(dir.as_bstr(), Some(Mode::DIR))
            .is_ok_and(|platform| platform.is_excluded())
        {
            return true;
        }
        end += slash + 1;
    }
    excludes
        .at_entry(path, Some(Mode::FILE))
        .is_ok_and(|platform| platform.is_excluded())
}

/// The index mode of a tree entry kind.
fn mode_of(kind: EntryKind) -> Mode {
    match kind {
        EntryKind::Tree => Mode::DIR,
        EntryKind::Blob => Mode::FILE,
        EntryKind::BlobExecutable => Mode::FILE_EXECUTABLE,
        EntryKind::Link => Mode::SYMLINK,
        EntryKind::Commit => Mode::COMMIT,
    }
}

/// A repo-relative path as a platform path.
pub(crate) fn rela_path(rela: &BStr) -> PathBuf {
    gix::path::from_bstr(rela)
        .map(std::borrow::Cow::into_owned)
        .unwrap_or_else(|_| PathBuf::from(rela.to_str_lossy().into_owned()))
}

#[cfg(test)]
#[path = "capture_tests.rs"]
mod tests;

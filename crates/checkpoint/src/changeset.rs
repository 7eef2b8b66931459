//! Changesets between two checkpoint commits, and rolling a turn back.

use std::io::Read;
use std::path::Path;

use gix::bstr::{BString, ByteSlice};
use gix::hash::ObjectId;
use gix::objs::tree::{EntryKind, EntryMode};

pub use agenthost_checkpoint_api::{BlobRef, ChangeKind, FileChange, RollbackReport};

use crate::capture::rela_path;
use crate::error::{CheckpointError, GitContext};
use crate::repo::Repo;

/// How much of a blob is searched for a NUL byte, like git.
const BINARY_PROBE: usize = 8000;

/// One side of a raw change.
#[derive(Debug, Clone)]
struct Side {
    path: BString,
    id: ObjectId,
    mode: EntryMode,
}

/// A tree-to-tree change before line counting.
#[derive(Debug, Clone)]
struct RawChange {
    kind: ChangeKind,
    before: Option<Side>,
    after: Option<Side>,
}

impl Repo {
    /// The files that differ between the commits `from` and `to` (ref names or object ids):
    /// renames detected at 50 % similarity, line counts from a histogram line diff, binary
    /// content counted 0/0, directories never reported. Sorted by path.
    pub fn changeset(&self, from: &str, to: &str) -> Result<Vec<FileChange>, CheckpointError> {
        if from == to {
            return Ok(Vec::new());
        }
        let repo = self.gix();
        let raw = self.raw_changes(&repo, from, to, true)?;
        let mut out = Vec::with_capacity(raw.len());
        for change in raw {
            let before_data = change
                .before
                .as_ref()
                .map(|side| blob_data(&repo, side))
                .transpose()?;
            let after_data = change
                .after
                .as_ref()
                .map(|side| blob_data(&repo, side))
                .transpose()?;
            let binary = before_data.as_deref().is_some_and(is_binary)
                || after_data.as_deref().is_some_and(is_binary);
            let (lines_added, lines_removed) = if binary {
                (0, 0)
            } else {
                line_counts(
                    before_data.as_deref().unwrap_or_default(),
                    after_data.as_deref().unwrap_or_default(),
                )
            };
            let path = change
                .after
                .as_ref()
                .or(change.before.as_ref())
                .map(|side| side.path.to_str_lossy().into_owned())
                .unwrap_or_default();
            out.push(FileChange {
                kind: change.kind,
                old_path: (change.kind == ChangeKind::Renamed)
                    .then_some(change.before.as_ref())
                    .flatten()
                    .map(|side| side.path.to_str_lossy().into_owned()),
                lines_added,
                lines_removed,
                binary,
                before: change.before.as_ref().map(|side| BlobRef {
                    rev: from.to_owned(),
                    path: side.path.to_str_lossy().into_owned(),
                }),
                after: change.after.as_ref().map(|side| BlobRef {
                    rev: to.to_owned(),
                    path: side.path.to_str_lossy().into_owned(),
                }),
                path,
            });
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// The content of `blob.path` at `blob.rev`, or `None` when the path does not exist there.
    pub fn read_blob(&self, blob: &BlobRef) -> Result<Option<Vec<u8>>, CheckpointError> {
        let tree = self.tree_of(&blob.rev)?;
        let repo = self.gix();
        let tree = repo.find_tree(tree).git("read a tree")?;
        let Some(entry) = tree
            .lookup_entry_by_path(&blob.path)
            .git("look up a path in a tree")?
        else {
            return Ok(None);
        };
        if !entry.mode().is_blob_or_symlink() {
            return Ok(None);
        }
        let object = entry.object().git("read a blob")?;
        Ok(Some(object.detach().data))
    }

    /// Restores the work tree to the start state `start` for exactly the paths that differ
    /// between `start` and `end` (the turn's changeset): modified and deleted files get their
    /// start content and mode back, added files are deleted, renames are undone. The index,
    /// `HEAD` and every other path are left alone.
    pub fn rollback(&self, start: &str, end: &str) -> Result<RollbackReport, CheckpointError> {
        let mut report = RollbackReport::default();
        if start == end {
            return Ok(report);
        }
        let repo = self.gix();
        let raw = self.raw_changes(&repo, start, end, false)?;
        let end_tree = repo
            .find_tree(self.tree_of(end)?)
            .git("read the turn's end tree")?;
        let index = repo.index_or_empty().git("read the index")?;
        let attributes = repo
            .attributes_only(&index, Default::default())
            .git("load the attributes")?
            .detach();
        let mut pipeline =
            gix::filter::Pipeline::new(&repo, attributes).git("set up the filters")?;
        let root = self.root().to_owned();

        // What the turn left at each path, to tell whether it changed again since.
        for change in &raw {
            let Some(after) = &change.after else { continue };
            let now = worktree_state(&mut pipeline, &index, after.path.as_ref())?;
            let at_end = end_tree
                .lookup_entry_by_path(after.path.to_str_lossy().as_ref())
                .git("look up a path in a tree")?
                .map(|entry| (entry.object_id(), entry.mode().kind()));
            if now != at_end {
                report
                    .changed_since
                    .push(after.path.to_str_lossy().into_owned());
            }
        }

        // Removals first, so a path the turn turned into a directory (or the reverse) is free
        // again before the start content is written back.
        for change in &raw {
            if let Some(after) = &change.after
                && change
                    .before
                    .as_ref()
                    .is_none_or(|before| before.path != after.path)
            {
                let path = root.join(rela_path(after.path.as_ref()));
                remove_file(&path)?;
                report.removed.push(after.path.to_str_lossy().into_owned());
            }
        }
        for change in raw {
            let Some(before) = &change.before else {
                continue;
            };
            let display = before.path.to_str_lossy().into_owned();
            if before.mode.kind() == EntryKind::Commit || before.mode.is_tree() {
                report.skipped.push(display);
                continue;
            }
            let data = blob_data(&repo, before)?;
            let path = root.join(rela_path(before.path.as_ref()));
            write_entry(&mut pipeline, before, &data, &path)?;
            report.restored.push(display);
        }
        report.restored.sort();
        report.removed.sort();
        report.changed_since.sort();
        Ok(report)
    }

    /// The tree-to-tree changes between the commits `from` and `to`, files only.
    fn raw_changes(
        &self,
        repo: &gix::Repository,
        from: &str,
        to: &str,
        renames: bool,
    ) -> Result<Vec<RawChange>, CheckpointError> {
        let old_tree = self.tree_of(from)?;
        let new_tree = self.tree_of(to)?;
        if old_tree == new_tree {
            return Ok(Vec::new());
        }
        let old = repo.find_tree(old_tree).git("read a tree")?;
        let new = repo.find_tree(new_tree).git("read a tree")?;
        let mut options = gix::diff::Options::default();
        options.track_path();
        options.track_rewrites(renames.then_some(gix::diff::Rewrites {
            copies: None,
            percentage: Some(0.5),
            limit: 1000,
            track_empty: false,
        }));
        let changes = repo
            .diff_tree_to_tree(&old, &new, options)
            .git("compare two checkpoint trees")?;
        let mut out = Vec::new();
        for change in changes {
            use gix::object::tree::diff::ChangeDetached as C;
            let raw = match change {
                C::Addition {
                    location,
                    entry_mode,
                    id,
                    ..
                } => RawChange {
                    kind: ChangeKind::Added,
                    before: None,
                    after: Some(Side {
                        path: location,
                        id,
                        mode: entry_mode,
                    }),
                },
                C::Deletion {
                    location,
                    entry_mode,
                    id,
                    ..
                } => RawChange {
                    kind: ChangeKind::Deleted,
                    before: Some(Side {
                        path: location,
                        id,
                        mode: entry_mode,
                    }),
                    after: None,
                },
                C::Modification {
                    location,
                    previous_entry_mode,
                    previous_id,
                    entry_mode,
                    id,
                } => {
                    if previous_entry_mode.is_tree() != entry_mode.is_tree() {
                        // A directory replaced by a file or the reverse: the files inside are
                        // reported on their own; report the non-tree side.
                        let side = |mode: EntryMode, id| Side {
                            path: location.clone(),
                            id,
                            mode,
                        };
                        out.push(if entry_mode.is_tree() {
                            RawChange {
                                kind: ChangeKind::Deleted,
                                before: Some(side(previous_entry_mode, previous_id)),
                                after: None,
                            }
                        } else {
                            RawChange {
                                kind: ChangeKind::Added,
                                before: None,
                                after: Some(side(entry_mode, id)),
                            }
                        });
                        continue;
                    }
                    RawChange {
                        kind: ChangeKind::Modified,
                        before: Some(Side {
                            path: location.clone(),
                            id: previous_id,
                            mode: previous_entry_mode,
                        }),
                        after: Some(Side {
                            path: location,
                            id,
                            mode: entry_mode,
                        }),
                    }
                }
                C::Rewrite {
                    source_location,
                    source_entry_mode,
                    source_id,
                    location,
                    entry_mode,
                    id,
                    copy,
                    ..
                } => {
                    let after = Side {
                        path: location,
                        id,
                        mode: entry_mode,
                    };
                    if copy {
                        RawChange {
                            kind: ChangeKind::Added,
                            before: None,
                            after: Some(after),
                        }
                    } else {
                        RawChange {
                            kind: ChangeKind::Renamed,
                            before: Some(Side {
                                path: source_location,
                                id: source_id,
                                mode: source_entry_mode,
                            }),
                            after: Some(after),
                        }
                    }
                }
            };
            let is_tree = raw
                .after
                .as_ref()
                .or(raw.before.as_ref())
                .is_some_and(|side| side.mode.is_tree());
            if !is_tree {
                out.push(raw);
            }
        }
        Ok(out)
    }
}

/// The bytes of a blob or symlink target; empty for gitlinks.
fn blob_data(repo: &gix::Repository, side: &Side) -> Result<Vec<u8>, CheckpointError> {
    if !side.mode.is_blob_or_symlink() {
        return Ok(Vec::new());
    }
    Ok(repo.find_object(side.id).git("read a blob")?.detach().data)
}

/// Whether content is binary: a NUL byte among its first 8 000 bytes.
pub(crate) fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(BINARY_PROBE)].contains(&0)
}

/// Lines added and removed between two texts (histogram diff).
pub(crate) fn line_counts(before: &[u8], after: &[u8]) -> (u32, u32) {
    use gix::diff::blob::{Algorithm, Diff, InternedInput, sources};
    let input = InternedInput::new(sources::byte_lines(before), sources::byte_lines(after));
    let diff = Diff::compute(Algorithm::Histogram, &input);
    (diff.count_additions(), diff.count_removals())
}

/// The blob id and kind the work tree has at `rela` now (hashing it), or `None` when absent.
fn worktree_state(
    pipeline: &mut gix::filter::Pipeline<'_>,
    index: &gix::index::State,
    rela: &gix::bstr::BStr,
) -> Result<Option<(ObjectId, EntryKind)>, CheckpointError> {
    Ok(pipeline
        .worktree_file_to_object(rela, index)
        .git("hash a work-tree file")?
        .map(|(id, kind, _)| (id, kind)))
}

/// Removes a file or symlink; a missing one is fine, a directory is left alone.
fn remove_file(path: &Path) -> Result<(), CheckpointError> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => std::fs::remove_file(path).map_err(|source| CheckpointError::Io {
            action: "remove",
            path: path.to_owned(),
            source,
        }),
        Err(_) => Ok(()),
    }
}

/// Writes `data` (a blob or a symlink target) at `path` with `side`'s mode, replacing what is
/// there, through the smudge filters.
fn write_entry(
    pipeline: &mut gix::filter::Pipeline<'_>,
    side: &Side,
    data: &[u8],
    path: &Path,
) -> Result<(), CheckpointError> {
    let io = |action| {
        move |source| CheckpointError::Io {
            action,
            path: path.to_owned(),
            source,
        }
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io("create the directory of"))?;
    }
    remove_file(path)?;
    if std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_dir()) {
        // A directory the turn created where the file was: only an empty one is removed.
        std::fs::remove_dir(path).map_err(io("replace the directory"))?;
    }
    if side.mode.kind() == EntryKind::Link {
        #[cfg(unix)]
        {
            let target = gix::path::from_bstr(data.as_bstr())
                .map(std::borrow::Cow::into_owned)
                .unwrap_or_default();
            return std::os::unix::fs::symlink(target, path).map_err(io("create the symlink"));
        }
        #[cfg(not(unix))]
        {
            return std::fs::write(path, data).map_err(io("write"));
        }
    }
    let mut converted = Vec::new();
    pipeline
        .convert_to_worktree(data, side.path.as_ref(), Default::default())
        .git("convert a blob for the work tree")?
        .read_to_end(&mut converted)
        .map_err(io("convert"))?;
    std::fs::write(path, &converted).map_err(io("write"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if side.mode.kind() == EntryKind::BlobExecutable {
            0o755
        } else {
            0o644
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(io("set the mode of"))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "changeset_tests.rs"]
mod tests;

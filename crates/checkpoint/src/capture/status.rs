//! The visitors of gix's index ↔ work-tree status a capture runs: what it reports ([`Found`]),
//! how a file is compared ([`CountingEq`]) and what a gitlink's status is ([`GitlinkHead`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gix::bstr::{BStr, BString};
use gix::hash::ObjectId;
use gix::index::entry::Stat;
use gix::status::plumbing::index_as_worktree::traits::{CompareBlobs, ReadData, SubmoduleStatus};
use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};
use gix::status::plumbing::index_as_worktree_with_renames::{Entry as StatusEntry, VisitEntry};

use super::rela_path;

/// What status reported, collected before anything is applied (items arrive in no order).
#[derive(Debug, Default)]
pub(super) struct Found {
    /// Entries gone from the work tree.
    pub(super) removed: Vec<BString>,
    /// Entries whose content, type or executable bit changed: hash them again.
    pub(super) rewrite: Vec<BString>,
    /// Entries whose stat data changed but whose content did not.
    pub(super) stat_only: Vec<(BString, Stat)>,
    /// Gitlinks whose repository's `HEAD` moved.
    pub(super) gitlinks: Vec<(BString, ObjectId)>,
    /// Untracked, not ignored files (one by one), and untracked nested repositories.
    pub(super) untracked: Vec<BString>,
}

impl<'index> VisitEntry<'index> for Found {
    type ContentChange = ();
    type SubmoduleStatus = ObjectId;

    fn visit_entry(&mut self, entry: StatusEntry<'index, (), ObjectId>) {
        match entry {
            StatusEntry::Modification {
                rela_path, status, ..
            } => match status {
                EntryStatus::Change(Change::Removed) => self.removed.push(rela_path.to_owned()),
                EntryStatus::Change(Change::SubmoduleModification(id)) => {
                    self.gitlinks.push((rela_path.to_owned(), id));
                }
                EntryStatus::NeedsUpdate(stat) => self.stat_only.push((rela_path.to_owned(), stat)),
                EntryStatus::Change(Change::Type { .. } | Change::Modification { .. })
                | EntryStatus::Conflict { .. }
                | EntryStatus::IntentToAdd => self.rewrite.push(rela_path.to_owned()),
            },
            StatusEntry::DirectoryContents { entry, .. } => {
                if entry.status == gix::dir::entry::Status::Untracked {
                    self.untracked.push(entry.rela_path);
                }
            }
            // Rewrite tracking is off; should one arrive, its destination is new content.
            StatusEntry::Rewrite { dirwalk_entry, .. } => {
                self.untracked.push(dirwalk_entry.rela_path)
            }
        }
    }
}

/// gix's `FastEq` (size first, then hash), counting the files it had to hash.
#[derive(Clone)]
pub(super) struct CountingEq(pub(super) Arc<AtomicUsize>);

impl CompareBlobs for CountingEq {
    type Output = ();

    fn compare_blobs<'a, 'b>(
        &mut self,
        entry: &gix::index::Entry,
        worktree_file_size: u64,
        data: impl ReadData<'a>,
        buf: &mut Vec<u8>,
    ) -> gix::error::Result<Option<()>> {
        if u64::from(entry.stat.size) != worktree_file_size
            && (entry.id.is_empty_blob() || entry.stat.size != 0)
        {
            return Ok(Some(()));
        }
        self.0.fetch_add(1, Ordering::Relaxed);
        gix::status::plumbing::index_as_worktree::traits::HashEq
            .compare_blobs(entry, worktree_file_size, data, buf)
            .map(|change| change.map(|_| ()))
    }
}

/// The status of a gitlink: the `HEAD` commit of the repository checked out at its path, when
/// that differs from the recorded one. Never recurses into it.
#[derive(Clone)]
pub(super) struct GitlinkHead {
    pub(super) workdir: PathBuf,
}

impl SubmoduleStatus for GitlinkHead {
    type Output = ObjectId;

    fn status(
        &mut self,
        entry: &gix::index::Entry,
        rela_path: &BStr,
    ) -> gix::error::Result<Option<ObjectId>> {
        Ok(nested_head(&self.workdir, rela_path).filter(|head| *head != entry.id))
    }
}

/// The `HEAD` commit of the repository at `workdir/rela`, if it is one and has a commit.
pub(super) fn nested_head(workdir: &Path, rela: &BStr) -> Option<ObjectId> {
    let path = workdir.join(rela_path(rela));
    let nested = gix::open_opts(path, gix::open::Options::isolated()).ok()?;
    nested.head_id().ok().map(gix::Id::detach)
}

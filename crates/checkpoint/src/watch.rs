//! The work-tree watcher: which paths changed since the previous capture.
//!
//! On Linux one inotify instance per repository watches every directory of the work tree except
//! `.git`, nested repositories and ignored directories that hold no captured file. Nothing runs
//! in the background: inotify queues events in the kernel as the writes happen (a `write(2)` that
//! returned has queued its event), and a capture drains the queue synchronously before it looks
//! at anything, so every change made before the capture started is seen — no sync cookie, no
//! thread. A queue overflow, an unknown watch, a watch that cannot be added, or a change to an
//! ignore or attributes file makes the drain answer [`Changes::Everything`], and the capture
//! falls back to a full status pass (and rebuilds the watcher). Elsewhere the watcher does not
//! exist and every capture is a full pass.

use std::collections::BTreeSet;
use std::path::Path;

use gix::bstr::{BStr, BString};

/// What changed since the previous drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Changes {
    /// Anything may have changed: run a full pass and rebuild the watcher.
    Everything(&'static str),
    /// Only these repo-relative paths (files, or directories meaning everything below) changed.
    Paths(BTreeSet<BString>),
}

/// Decides whether a repo-relative directory is left unwatched (`.git`, nested repositories,
/// ignored directories without captured files).
pub(crate) type SkipDir<'a> = dyn FnMut(&BStr, &Path) -> bool + 'a;

#[cfg(target_os = "linux")]
pub(crate) use linux::Watcher;

#[cfg(not(target_os = "linux"))]
pub(crate) use portable::Watcher;

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{BTreeSet, HashMap};
    use std::ffi::OsStr;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use gix::bstr::{BStr, BString, ByteSlice, ByteVec};
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

    use super::{Changes, SkipDir};

    /// Names whose change alters which files are ignored or how they are converted.
    const RULE_FILES: &[&[u8]] = &[b".gitignore", b".gitattributes"];

    fn mask() -> WatchMask {
        WatchMask::MODIFY
            | WatchMask::ATTRIB
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::DONT_FOLLOW
            | WatchMask::ONLYDIR
            | WatchMask::EXCL_UNLINK
    }

    /// One inotify instance watching a work tree.
    pub(crate) struct Watcher {
        inotify: Inotify,
        root: PathBuf,
        /// Watch → repo-relative directory (`""` for the root).
        dirs: HashMap<WatchDescriptor, BString>,
        buffer: Vec<u8>,
    }

    impl std::fmt::Debug for Watcher {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Watcher")
                .field("root", &self.root)
                .field("watches", &self.dirs.len())
                .finish()
        }
    }

    impl Watcher {
        /// Watches `root` and every directory below it that `skip` does not exclude.
        pub(crate) fn start(root: &Path, skip: &mut SkipDir<'_>) -> io::Result<Self> {
            let mut watcher = Self {
                inotify: Inotify::init()?,
                root: root.to_owned(),
                dirs: HashMap::new(),
                buffer: vec![0; 64 * 1024],
            };
            watcher.watch_tree(BString::default(), skip)?;
            Ok(watcher)
        }

        /// How many directories are watched.
        pub(crate) fn watched_dirs(&self) -> usize {
            self.dirs.len()
        }

        /// Adds watches for `rela` and every directory below it.
        fn watch_tree(&mut self, rela: BString, skip: &mut SkipDir<'_>) -> io::Result<()> {
            let mut stack = vec![rela];
            while let Some(rela) = stack.pop() {
                let abs = self.abs(rela.as_bstr());
                let wd = match self.inotify.watches().add(&abs, mask()) {
                    Ok(wd) => wd,
                    // Vanished or replaced by a file since it was listed: its parent's events cover it.
                    Err(error) if matches!(error.raw_os_error(), Some(code) if code == 2 || code == 20) =>
                    {
                        continue;
                    }
                    Err(error) => return Err(error),
                };
                self.dirs.insert(wd, rela.clone());
                let entries = match std::fs::read_dir(&abs) {
                    Ok(entries) => entries,
                    Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                    Err(error) => return Err(error),
                };
                for entry in entries {
                    let entry = entry?;
                    if !entry.file_type()?.is_dir() {
                        continue;
                    }
                    let child = join(rela.as_bstr(), entry.file_name().as_bytes());
                    let child_abs = abs.join(entry.file_name());
                    if !skip(child.as_bstr(), &child_abs) {
                        stack.push(child);
                    }
                }
            }
            Ok(())
        }

        /// Stops watching `rela` and everything below it (after a directory moved away).
        fn unwatch_tree(&mut self, rela: &BStr) {
            let mut prefix = BString::from(rela);
            prefix.push(b'/');
            let gone: Vec<WatchDescriptor> = self
                .dirs
                .iter()
                .filter(|(_, dir)| dir.as_bstr() == rela || dir.starts_with(prefix.as_slice()))
                .map(|(wd, _)| wd.clone())
                .collect();
            for wd in gone {
                self.dirs.remove(&wd);
                // The watch may already be gone with its directory.
                let _ = self.inotify.watches().remove(wd);
            }
        }

        fn abs(&self, rela: &BStr) -> PathBuf {
            if rela.is_empty() {
                self.root.clone()
            } else {
                self.root.join(OsStr::from_bytes(rela))
            }
        }

        /// Drains every queued event: the paths that changed since the previous drain.
        pub(crate) fn drain(&mut self, skip: &mut SkipDir<'_>) -> Changes {
            let mut paths = BTreeSet::new();
            let mut new_dirs = Vec::new();
            let mut moved_dirs = Vec::new();
            loop {
                let mut buffer = std::mem::take(&mut self.buffer);
                let events = match self.inotify.read_events(&mut buffer) {
                    Ok(events) => events,
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        self.buffer = buffer;
                        break;
                    }
                    Err(_) => {
                        self.buffer = buffer;
                        return Changes::Everything("the watcher could not be read");
                    }
                };
                let mut everything = None;
                for event in events {
                    if event.mask.contains(EventMask::Q_OVERFLOW) {
                        everything = Some("the watcher's event queue overflowed");
                        continue;
                    }
                    let Some(dir) = self.dirs.get(&event.wd).cloned() else {
                        // A watch removed in this drain; its directory's parent reported it.
                        continue;
                    };
                    if event.mask.contains(EventMask::IGNORED) {
                        self.dirs.remove(&event.wd);
                        if dir.is_empty() {
                            everything = Some("the work tree's root directory went away");
                        }
                        continue;
                    }
                    if event
                        .mask
                        .intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF)
                    {
                        if dir.is_empty() {
                            everything = Some("the work tree's root directory moved");
                        }
                        continue;
                    }
                    let Some(name) = event.name else { continue };
                    let name = name.as_bytes();
                    if RULE_FILES.contains(&name) {
                        everything = Some("an ignore or attributes file changed");
                    }
                    let path = join(dir.as_bstr(), name);
                    if event.mask.contains(EventMask::ISDIR) {
                        if event
                            .mask
                            .intersects(EventMask::CREATE | EventMask::MOVED_TO)
                        {
                            new_dirs.push(path.clone());
                        }
                        if event.mask.contains(EventMask::MOVED_FROM) {
                            moved_dirs.push(path.clone());
                        }
                    }
                    paths.insert(path);
                }
                self.buffer = buffer;
                if let Some(reason) = everything {
                    return Changes::Everything(reason);
                }
            }
            for dir in moved_dirs {
                self.unwatch_tree(dir.as_bstr());
            }
            for dir in new_dirs {
                let abs = self.abs(dir.as_bstr());
                if skip(dir.as_bstr(), &abs) {
                    continue;
                }
                if self.watch_tree(dir, skip).is_err() {
                    return Changes::Everything("a new directory could not be watched");
                }
            }
            Changes::Paths(paths)
        }
    }

    fn join(dir: &BStr, name: &[u8]) -> BString {
        let mut path = BString::from(dir);
        if !path.is_empty() {
            path.push(b'/');
        }
        path.push_str(name);
        path
    }
}

#[cfg(not(target_os = "linux"))]
mod portable {
    use std::io;
    use std::path::Path;

    use super::{Changes, SkipDir};

    /// No watcher on this platform: every capture runs a full status pass.
    #[derive(Debug)]
    pub(crate) struct Watcher;

    impl Watcher {
        /// Always fails: there is no watcher here.
        pub(crate) fn start(_root: &Path, _skip: &mut SkipDir<'_>) -> io::Result<Self> {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "work-tree watching is implemented for Linux only",
            ))
        }

        /// How many directories are watched.
        pub(crate) fn watched_dirs(&self) -> usize {
            0
        }

        /// Never called (no watcher can be started).
        pub(crate) fn drain(&mut self, _skip: &mut SkipDir<'_>) -> Changes {
            Changes::Everything("no watcher on this platform")
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
#[path = "watch_tests.rs"]
mod tests;

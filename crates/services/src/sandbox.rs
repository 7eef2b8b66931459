//! The folders a host serves, and the one check every client-supplied path goes through.
//!
//! A host serves its roots (`serve --root`); an isolated session also works in its own linked
//! worktrees, which live next to their repository (`<repo>.worktrees/<name>`) and so may lie
//! outside every root. [`Sandbox::check`] resolves a `file:` URI through the file system —
//! every symbolic link followed, `..` resolved, a path that does not exist yet resolved through
//! its parent — and accepts it only when the result lies inside a root or inside one of the
//! extra folders the caller allows (a session's worktrees). Working directories, message
//! attachments, `createChat`'s directories and the resource methods all use it, so no path
//! reaches state, the store or an agent without passing the same test.
//!
//! The check reads the file system (canonical paths, symlinks), so it runs where I/O is allowed:
//! the session service's intake and request handlers, never the pure reducers.

use std::path::{Component, Path, PathBuf};

use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{Message, MessageAttachment};
use agenthost_protocol::uri::{file_uri_to_path, path_to_file_uri, snippet};

/// What a client-supplied path must name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathUse {
    /// A working directory: an existing folder.
    Directory,
    /// A file or folder the client refers to (an attachment); it need not exist yet.
    Reference,
}

/// A path a client supplied, with what it must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientPath<'a> {
    /// The URI as the client sent it.
    pub uri: &'a str,
    /// What it must name.
    pub used_as: PathUse,
    /// The attachment's label, for an attachment.
    pub label: Option<&'a str>,
}

/// Why a client-supplied path was refused. The message quotes at most the first 80 characters
/// of the URI, and never says whether something outside the allowed folders exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    /// Not a `file:` URI of this machine, or not a URI at all.
    #[error("{uri} is not a file: URI of this machine")]
    NotLocal {
        /// The URI (truncated).
        uri: String,
    },
    /// Resolved outside every allowed folder (or through a link that leads out).
    #[error("{uri} is outside the folders this host serves ({allowed})")]
    Outside {
        /// The URI (truncated).
        uri: String,
        /// The allowed folders, comma-separated.
        allowed: String,
    },
    /// Inside an allowed folder but not an existing folder where one is required.
    #[error("{uri} is not an existing folder")]
    NotDirectory {
        /// The URI (truncated).
        uri: String,
    },
}

/// The folders a host serves (canonical paths).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    roots: Vec<PathBuf>,
}

impl Sandbox {
    /// A sandbox of `roots`, each resolved to its canonical path; a root that does not exist is
    /// an error naming it.
    pub fn new(roots: impl IntoIterator<Item = PathBuf>) -> Result<Self, std::io::Error> {
        let roots = roots
            .into_iter()
            .map(|root| {
                root.canonicalize().map_err(|error| {
                    std::io::Error::new(error.kind(), format!("{}: {error}", root.display()))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { roots })
    }

    /// The roots, canonical.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Whether the roots are empty (an embedder that set none).
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// Whether the resolved path `path` lies inside a root or inside one of `extra`.
    pub fn contains(&self, path: &Path, extra: &[PathBuf]) -> bool {
        self.roots
            .iter()
            .chain(extra)
            .any(|dir| path.starts_with(dir))
    }

    /// Checks one client-supplied `file:` URI; returns its resolved path. `extra` are further
    /// allowed folders, canonical (a session's worktrees).
    pub fn check(
        &self,
        uri: &str,
        used_as: PathUse,
        extra: &[PathBuf],
    ) -> Result<PathBuf, PathRefusal> {
        let outside = || PathRefusal::Outside {
            uri: snippet(uri),
            allowed: self.allowed_text(extra),
        };
        if !is_file_uri(uri) {
            return Err(PathRefusal::NotLocal { uri: snippet(uri) });
        }
        let path =
            file_uri_to_path(uri).map_err(|_| PathRefusal::NotLocal { uri: snippet(uri) })?;
        let resolved = resolve(&path).ok_or_else(outside)?;
        if !self.contains(&resolved, extra) {
            return Err(outside());
        }
        if used_as == PathUse::Directory && !resolved.is_dir() {
            return Err(PathRefusal::NotDirectory { uri: snippet(uri) });
        }
        Ok(resolved)
    }

    /// Checks every path `action` carries (see [`client_paths`]); the first refusal.
    pub fn check_action(&self, action: &StateAction, extra: &[PathBuf]) -> Result<(), PathRefusal> {
        client_paths(action)
            .into_iter()
            .try_for_each(|path| self.check(path.uri, path.used_as, extra).map(|_| ()))
    }

    /// Admits a client action: checks every path it carries, then rewrites the working
    /// directory it names to its canonical `file:` URI, so the state keeps the folder that was
    /// checked (a link retargeted later cannot move the session).
    pub fn admit_action(
        &self,
        action: &mut StateAction,
        extra: &[PathBuf],
    ) -> Result<(), PathRefusal> {
        // A working-directory action carries that one path; every other carries attachments.
        let directory = match action {
            StateAction::SessionWorkingDirectorySet(a) => &mut a.directory,
            StateAction::SessionWorkingDirectoryReplaced(a) => &mut a.replacement,
            StateAction::ChatWorkingDirectorySet(a) => &mut a.directory,
            _ => return self.check_action(action, extra),
        };
        let resolved = self.check(directory, PathUse::Directory, extra)?;
        if let Ok(canonical) = path_to_file_uri(&resolved) {
            *directory = canonical;
        }
        Ok(())
    }

    fn allowed_text(&self, extra: &[PathBuf]) -> String {
        let dirs: Vec<String> = self
            .roots
            .iter()
            .chain(extra)
            .map(|dir| dir.display().to_string())
            .collect();
        dirs.join(", ")
    }
}

/// `path` with every symlink resolved; a path that does not exist yet is resolved through its
/// parent (its own name must then be a plain name). `None` when neither can be resolved.
pub fn resolve(path: &Path) -> Option<PathBuf> {
    if let Ok(resolved) = path.canonicalize() {
        return Some(resolved);
    }
    let name = path.file_name()?;
    if !matches!(
        Path::new(name).components().next(),
        Some(Component::Normal(_))
    ) {
        return None;
    }
    Some(path.parent()?.canonicalize().ok()?.join(name))
}

/// Every local path a client-dispatchable action carries, with what it must name. Removing a
/// directory names one already in state, so it is not a path to check; URIs of other schemes
/// (`https:`, an annotations channel) are not paths of this machine.
///
/// | Action | Paths |
/// |---|---|
/// | `session/workingDirectorySet` | `directory` (folder) |
/// | `session/workingDirectoryReplaced` | `replacement` (folder) |
/// | `chat/workingDirectorySet` | `directory` (folder) |
/// | `chat/turnStarted`, `chat/pendingMessageSet`, `chat/draftChanged` | the message's `file:` resource attachments |
pub fn client_paths(action: &StateAction) -> Vec<ClientPath<'_>> {
    fn directory(uri: &str) -> Vec<ClientPath<'_>> {
        vec![ClientPath {
            uri,
            used_as: PathUse::Directory,
            label: None,
        }]
    }
    match action {
        StateAction::SessionWorkingDirectorySet(a) => directory(&a.directory),
        StateAction::SessionWorkingDirectoryReplaced(a) => directory(&a.replacement),
        StateAction::ChatWorkingDirectorySet(a) => directory(&a.directory),
        StateAction::ChatTurnStarted(a) => message_paths(&a.message),
        StateAction::ChatPendingMessageSet(a) => message_paths(&a.message),
        StateAction::ChatDraftChanged(a) => a.draft.as_ref().map(message_paths).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Whether `uri` has the `file` scheme, in any case.
fn is_file_uri(uri: &str) -> bool {
    uri.get(..5)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("file:"))
}

/// The `file:` resource attachments of a message.
pub fn message_paths(message: &Message) -> Vec<ClientPath<'_>> {
    message
        .attachments
        .iter()
        .flatten()
        .filter_map(|attachment| match attachment {
            MessageAttachment::Resource(resource) if is_file_uri(&resource.uri) => {
                Some(ClientPath {
                    uri: &resource.uri,
                    used_as: PathUse::Reference,
                    label: Some(&resource.label),
                })
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
#[path = "sandbox_tests.rs"]
mod tests;

//! [`FileService`]: bounded reads of local files named by `file:` URIs (the editor-inline
//! context of `chatSurface`).
//!
//! The central decision: **a read is bounded before it starts.** The caller names the byte cap;
//! [`LocalFiles`] never reads past it (the file is read through `take(cap)`, and whether more
//! was left is answered from the file's metadata, not by reading on), so a huge or hostile file
//! costs at most the cap. Only regular local files are read: `file://` URIs with an empty or
//! `localhost` authority; any other URI, and anything that is not a regular file (a directory,
//! a FIFO that would block), is a [`FileError`].
//!
//! Text decoding is lossy, never an error: invalid UTF-8 becomes U+FFFD and
//! [`BoundedRead::lossy`] says so. A multi-byte character cut by the cap is dropped (it is not
//! invalid, only incomplete), so a truncated read never ends in a replacement character it did
//! not have.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use agenthost_protocol::uri::file_uri_to_path;
use futures::future::BoxFuture;

/// Bounded reads of local files.
pub trait FileService: Send + Sync {
    /// The text of the file `uri` names, read up to `max_bytes` bytes. Only `file:` URIs.
    fn read_bounded(
        &self,
        uri: &str,
        max_bytes: usize,
    ) -> BoxFuture<'static, Result<BoundedRead, FileError>>;
}

/// The text of a bounded read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BoundedRead {
    /// The text read (at most the cap in UTF-8 bytes, before lossy replacement).
    pub text: String,
    /// The file is longer than the cap: `text` is its beginning only.
    pub truncated: bool,
    /// The bytes read were not valid UTF-8; invalid sequences were replaced with U+FFFD.
    pub lossy: bool,
}

/// Why a bounded read failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The URI does not name a local file (another scheme, a remote authority, a relative or
    /// malformed path).
    #[error("only local file:// URIs can be read: {reason}")]
    UnsupportedUri {
        /// Why the URI was refused (quotes the URI, truncated).
        reason: String,
    },
    /// The path exists but is not a regular file.
    #[error("{} is not a regular file", path.display())]
    NotARegularFile {
        /// The path.
        path: PathBuf,
    },
    /// Opening or reading failed (missing file, no permission, …).
    #[error("cannot read {}: {message}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error's kind (`NotFound` for a missing file).
        kind: io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
}

impl FileError {
    fn io(path: &Path, error: &io::Error) -> Self {
        Self::Read {
            path: path.to_owned(),
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}

/// [`FileService`] over the local file system. The blocking read runs on tokio's blocking pool
/// when a runtime is present, else inline.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFiles;

impl LocalFiles {
    /// Reads local files.
    pub fn new() -> Self {
        Self
    }
}

impl FileService for LocalFiles {
    fn read_bounded(
        &self,
        uri: &str,
        max_bytes: usize,
    ) -> BoxFuture<'static, Result<BoundedRead, FileError>> {
        let path = file_uri_to_path(uri).map_err(|error| FileError::UnsupportedUri {
            reason: error.to_string(),
        });
        Box::pin(async move {
            let path = path?;
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let task_path = path.clone();
                    runtime
                        .spawn_blocking(move || read_local(&task_path, max_bytes))
                        .await
                        .map_err(|error| FileError::Read {
                            path,
                            kind: io::ErrorKind::Other,
                            message: format!("the read task failed: {error}"),
                        })?
                }
                Err(_) => read_local(&path, max_bytes),
            }
        })
    }
}

/// Reads at most `max_bytes` of the regular file at `path`.
fn read_local(path: &Path, max_bytes: usize) -> Result<BoundedRead, FileError> {
    let file = std::fs::File::open(path).map_err(|e| FileError::io(path, &e))?;
    let metadata = file.metadata().map_err(|e| FileError::io(path, &e))?;
    if !metadata.is_file() {
        return Err(FileError::NotARegularFile {
            path: path.to_owned(),
        });
    }
    let cap = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len().min(cap)).unwrap_or(0));
    file.take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::io(path, &e))?;
    // Never read past the cap to learn whether more is left: the metadata says so.
    let truncated = bytes.len() == max_bytes && metadata.len() > cap;
    Ok(decode(bytes, truncated))
}

/// `bytes` as text: an incomplete character at the end of a truncated read is dropped, invalid
/// UTF-8 is replaced (and flagged).
pub(crate) fn decode(mut bytes: Vec<u8>, truncated: bool) -> BoundedRead {
    // `error_len() == None`: the input ends inside a character the cap cut.
    if truncated
        && let Err(error) = std::str::from_utf8(&bytes)
        && error.error_len().is_none()
    {
        bytes.truncate(error.valid_up_to());
    }
    match String::from_utf8(bytes) {
        Ok(text) => BoundedRead {
            text,
            truncated,
            lossy: false,
        },
        Err(error) => BoundedRead {
            text: String::from_utf8_lossy(error.as_bytes()).into_owned(),
            truncated,
            lossy: true,
        },
    }
}

#[cfg(feature = "fakes")]
pub(crate) mod fake {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, MutexGuard};

    use futures::future::BoxFuture;

    use super::{BoundedRead, FileError, FileService, decode};

    /// A call to [`FakeFileService`].
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct FileCall {
        /// The URI asked for.
        pub uri: String,
        /// The cap asked for.
        pub max_bytes: usize,
    }

    /// What [`FakeFileService`] answers.
    #[derive(Debug, Clone, Default)]
    pub struct FileAnswers {
        /// File contents by URI. A read applies the cap like [`LocalFiles`](super::LocalFiles)
        /// (bytes, then the same decoding); a URI not listed is a `NotFound` read error.
        pub files: BTreeMap<String, Vec<u8>>,
        /// Answered to every read instead, when set.
        pub error: Option<FileError>,
    }

    /// Recording [`FileService`] (feature `fakes`).
    #[derive(Debug, Default)]
    pub struct FakeFileService {
        calls: Mutex<Vec<FileCall>>,
        answers: Mutex<FileAnswers>,
    }

    fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }

    impl FakeFileService {
        /// Every call so far, in order.
        pub fn calls(&self) -> Vec<FileCall> {
            lock(&self.calls).clone()
        }

        /// Edits the scripted answers.
        pub fn script(&self, edit: impl FnOnce(&mut FileAnswers)) {
            edit(&mut lock(&self.answers));
        }

        /// Adds (or replaces) the file `uri` with `content`.
        pub fn put(&self, uri: &str, content: impl Into<Vec<u8>>) {
            lock(&self.answers)
                .files
                .insert(uri.to_owned(), content.into());
        }
    }

    impl FileService for FakeFileService {
        fn read_bounded(
            &self,
            uri: &str,
            max_bytes: usize,
        ) -> BoxFuture<'static, Result<BoundedRead, FileError>> {
            lock(&self.calls).push(FileCall {
                uri: uri.to_owned(),
                max_bytes,
            });
            let answers = lock(&self.answers);
            let answer = match (&answers.error, answers.files.get(uri)) {
                (Some(error), _) => Err(error.clone()),
                (None, Some(content)) => {
                    let truncated = content.len() > max_bytes;
                    let read = content[..content.len().min(max_bytes)].to_vec();
                    Ok(decode(read, truncated))
                }
                (None, None) => Err(FileError::Read {
                    path: uri.into(),
                    kind: std::io::ErrorKind::NotFound,
                    message: "no such file (fake)".to_owned(),
                }),
            };
            Box::pin(std::future::ready(answer))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use agenthost_protocol::uri::path_to_file_uri;
    use futures::FutureExt;

    use super::*;

    fn uri_of(path: &Path) -> String {
        path_to_file_uri(path).unwrap()
    }

    #[tokio::test]
    async fn a_small_file_is_read_whole() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all("héllo\nworld\n".as_bytes()).unwrap();
        let read = LocalFiles.read_bounded(&uri_of(file.path()), 1024).await;
        assert_eq!(
            read,
            Ok(BoundedRead {
                text: "héllo\nworld\n".into(),
                truncated: false,
                lossy: false,
            })
        );
    }

    #[tokio::test]
    async fn a_large_file_is_read_up_to_the_cap_only() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&vec![b'x'; 3 * 1024 * 1024]).unwrap();
        let read = LocalFiles
            .read_bounded(&uri_of(file.path()), 1024 * 1024)
            .await
            .unwrap();
        assert_eq!(read.text.len(), 1024 * 1024);
        assert!(read.truncated);
        assert!(!read.lossy);
    }

    #[tokio::test]
    async fn a_file_exactly_at_the_cap_is_not_truncated() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"12345").unwrap();
        let read = LocalFiles
            .read_bounded(&uri_of(file.path()), 5)
            .await
            .unwrap();
        assert_eq!((read.text.as_str(), read.truncated), ("12345", false));
        let read = LocalFiles
            .read_bounded(&uri_of(file.path()), 4)
            .await
            .unwrap();
        assert_eq!((read.text.as_str(), read.truncated), ("1234", true));
    }

    #[tokio::test]
    async fn a_character_cut_by_the_cap_is_dropped_not_replaced() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all("abé".as_bytes()).unwrap(); // `é` is two bytes
        let read = LocalFiles
            .read_bounded(&uri_of(file.path()), 3)
            .await
            .unwrap();
        assert_eq!(
            read,
            BoundedRead {
                text: "ab".into(),
                truncated: true,
                lossy: false,
            }
        );
    }

    #[tokio::test]
    async fn invalid_utf8_is_replaced_and_flagged() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"a\xffb").unwrap();
        let read = LocalFiles
            .read_bounded(&uri_of(file.path()), 1024)
            .await
            .unwrap();
        assert_eq!(
            read,
            BoundedRead {
                text: "a\u{fffd}b".into(),
                truncated: false,
                lossy: true,
            }
        );
    }

    #[tokio::test]
    async fn uris_that_are_not_local_files_are_refused() {
        for uri in [
            "https://example.com/a.rs",
            "untitled:Untitled-1",
            "file://server/share/a.rs",
            "file:relative.rs",
        ] {
            let error = LocalFiles.read_bounded(uri, 1024).await.unwrap_err();
            assert!(
                matches!(error, FileError::UnsupportedUri { .. }),
                "{uri}: {error:?}"
            );
            assert!(
                error.to_string().starts_with("only local file:// URIs"),
                "{error}"
            );
        }
    }

    #[tokio::test]
    async fn a_missing_file_is_a_not_found_read_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.rs");
        let error = LocalFiles
            .read_bounded(&uri_of(&missing), 1024)
            .await
            .unwrap_err();
        assert!(
            matches!(&error, FileError::Read { path, kind: io::ErrorKind::NotFound, .. } if *path == missing),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn a_directory_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let error = LocalFiles
            .read_bounded(&uri_of(dir.path()), 1024)
            .await
            .unwrap_err();
        assert_eq!(
            error,
            FileError::NotARegularFile {
                path: dir.path().to_owned()
            }
        );
    }

    #[test]
    fn reads_work_without_a_runtime() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"plain").unwrap();
        let read = LocalFiles
            .read_bounded(&uri_of(file.path()), 64)
            .now_or_never();
        assert_eq!(read.expect("ready at once").unwrap().text, "plain");
    }

    #[cfg(feature = "fakes")]
    #[tokio::test]
    async fn the_fake_records_calls_and_applies_the_cap() {
        use crate::fakes::{FakeFileService, FileCall};
        let files = FakeFileService::default();
        files.put("file:///a.rs", "abcdef");
        let read = files.read_bounded("file:///a.rs", 4).await.unwrap();
        assert_eq!((read.text.as_str(), read.truncated), ("abcd", true));
        let missing = files.read_bounded("file:///b.rs", 4).await.unwrap_err();
        assert!(matches!(
            missing,
            FileError::Read {
                kind: io::ErrorKind::NotFound,
                ..
            }
        ));
        assert_eq!(
            files.calls(),
            [
                FileCall {
                    uri: "file:///a.rs".into(),
                    max_bytes: 4
                },
                FileCall {
                    uri: "file:///b.rs".into(),
                    max_bytes: 4
                },
            ]
        );
    }
}

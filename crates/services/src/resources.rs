//! Read-only resource methods on the host's `file:` URIs — `resourceList`, `resourceResolve`,
//! `resourceRead` — so a client (VS Code's remote folder picker) can browse the folders the host
//! serves; the write methods are refused.
//!
//! Every URI is resolved through symlinks and must lie inside one of the host's roots (`serve
//! --root`): a path outside, or a link inside a root that points out of it, is `-32009`
//! (permission denied) — the same answer as for a path that names nothing outside, so a client
//! learns nothing about the rest of the machine. A missing path inside a root is `-32008`; any
//! other scheme is "invalid params". Listings leave out entries whose link target escapes the
//! roots. Reads are capped at [`MAX_READ_BYTES`]; text comes back as UTF-8, anything else as
//! base64. `resourceWrite`, `resourceCopy`, `resourceDelete`, `resourceMove` and
//! `resourceMkdir` are `-32009`: a token holder gets no remote file-write API.

use std::path::PathBuf;

use crate::sandbox::{self, PathRefusal, PathUse, Sandbox};
use agenthost_protocol::ahp_types::commands::{
    ContentEncoding, DirectoryEntry, ResourceListResult, ResourceReadResult, ResourceResolveResult,
    ResourceType,
};
use agenthost_protocol::uri::{file_uri_to_path, path_to_file_uri, snippet};
use base64::Engine as _;

use agenthost_protocol::RpcError;

/// The largest file `resourceRead` returns (16 MiB).
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

/// How many `resourceRead`s the host runs at once; more wait their turn.
pub const MAX_CONCURRENT_READS: usize = 2;

/// How many bytes of frames may wait to be written, across all connections, before a new
/// `resourceRead` answer is built (the read waits for the clients to take what is queued).
pub const OUTBOUND_ROOM: usize = 64 * 1024 * 1024;

/// The documented bound on the resident memory concurrent `resourceRead`s of a `size`-byte
/// file add to the serve process, however many clients read at once: at most
/// [`MAX_CONCURRENT_READS`] answers are built at a time (the file, its base64, the JSON answer
/// and its frame: under 6 × `size` each), and answers are built only while the frames waiting
/// to be written stay under [`OUTBOUND_ROOM`] (counted twice: the frame and the copy the
/// WebSocket writer makes of the one it writes) — plus 64 MiB of allocator slack.
pub fn read_memory_cap(size: u64) -> u64 {
    let building = MAX_CONCURRENT_READS as u64 * 6 * size;
    let waiting = 2 * OUTBOUND_ROOM as u64;
    building + waiting + 64 * 1024 * 1024
}

/// The methods answered with "permission denied".
pub const WRITE_METHODS: [&str; 5] = [
    "resourceWrite",
    "resourceCopy",
    "resourceDelete",
    "resourceMove",
    "resourceMkdir",
];

fn denied(uri: &str) -> RpcError {
    RpcError::permission_denied(format!(
        "{} is outside the folders this host serves",
        snippet(uri)
    ))
}

/// `uri` as a path inside the sandbox's roots, symlinks resolved (`follow`) or only its
/// parent's — the sandbox's own check (every client-supplied path goes through it), with the
/// answers of the resource methods: outside is "permission denied", missing inside a root is
/// "not found".
fn inside(uri: &str, sandbox: &Sandbox, follow: bool) -> Result<PathBuf, RpcError> {
    if !uri.starts_with("file:") {
        return Err(RpcError::invalid_params(format!(
            "only file: URIs can be read on this host, not {}",
            snippet(uri)
        )));
    }
    let resolved = if follow {
        match sandbox.check(uri, PathUse::Reference, &[]) {
            Ok(resolved) => resolved,
            Err(PathRefusal::NotLocal { .. }) => {
                return Err(RpcError::invalid_params(format!(
                    "{} is not a file: URI of this machine",
                    snippet(uri)
                )));
            }
            Err(_) => return Err(denied(uri)),
        }
    } else {
        let path = file_uri_to_path(uri)
            .map_err(|e| RpcError::invalid_params(format!("{}: {e}", snippet(uri))))?;
        let parent = path.parent().and_then(sandbox::resolve);
        match (parent, path.file_name()) {
            (Some(parent), Some(name)) if sandbox.contains(&parent, &[]) => parent.join(name),
            _ => return Err(denied(uri)),
        }
    };
    if std::fs::symlink_metadata(&resolved).is_err() {
        return Err(RpcError::not_found(format!(
            "{} does not exist",
            snippet(uri)
        )));
    }
    Ok(resolved)
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, RpcError> + Send + 'static,
) -> Result<T, RpcError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| RpcError::internal(format!("the file system task failed: {e}")))?
}

fn io_error(uri: &str, error: &std::io::Error) -> RpcError {
    match error.kind() {
        std::io::ErrorKind::NotFound => {
            RpcError::not_found(format!("{} does not exist", snippet(uri)))
        }
        std::io::ErrorKind::PermissionDenied => {
            RpcError::permission_denied(format!("{} cannot be read by the host", snippet(uri)))
        }
        _ => RpcError::internal(format!("{}: {error}", snippet(uri))),
    }
}

/// `resourceList`: the entries of a directory, sorted by name.
pub async fn list(uri: String, sandbox: Sandbox) -> Result<ResourceListResult, RpcError> {
    blocking(move || {
        let dir = inside(&uri, &sandbox, true)?;
        let entries = std::fs::read_dir(&dir).map_err(|e| io_error(&uri, &e))?;
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let Ok(target) = entry.path().canonicalize() else {
                continue;
            };
            if !sandbox.contains(&target, &[]) {
                continue;
            }
            let Ok(metadata) = std::fs::metadata(&target) else {
                continue;
            };
            let kind = kind_name(&metadata.file_type());
            out.push(DirectoryEntry {
                name: entry.file_name().to_string_lossy().into_owned(),
                r#type: kind.to_owned(),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ResourceListResult { entries: out })
    })
    .await
}

/// `resourceResolve`: what `uri` is (following symlinks unless `follow_symlinks` is false).
pub async fn resolve(
    uri: String,
    follow_symlinks: Option<bool>,
    sandbox: Sandbox,
) -> Result<ResourceResolveResult, RpcError> {
    blocking(move || {
        let follow = follow_symlinks.unwrap_or(true);
        let path = inside(&uri, &sandbox, follow)?;
        let metadata = if follow {
            std::fs::metadata(&path)
        } else {
            std::fs::symlink_metadata(&path)
        }
        .map_err(|e| io_error(&uri, &e))?;
        let kind = if metadata.file_type().is_symlink() {
            ResourceType::Symlink
        } else if metadata.is_dir() {
            ResourceType::Directory
        } else if metadata.is_file() {
            ResourceType::File
        } else {
            ResourceType::Unknown(kind_name(&metadata.file_type()).to_owned())
        };
        let mtime = metadata
            .modified()
            .ok()
            .and_then(|t| jiff::Timestamp::try_from(t).ok())
            .map(|t| format!("{t:.3}"));
        Ok(ResourceResolveResult {
            uri: path_to_file_uri(&path).map_err(|e| RpcError::internal(e.to_string()))?,
            r#type: kind,
            size: i64::try_from(metadata.len()).ok(),
            mtime,
            ctime: None,
            content_type: None,
            etag: None,
        })
    })
    .await
}

/// `resourceRead`: a file's content, as UTF-8 when it is text, else base64.
pub async fn read(
    uri: String,
    encoding: Option<ContentEncoding>,
    sandbox: Sandbox,
) -> Result<ResourceReadResult, RpcError> {
    blocking(move || {
        let path = inside(&uri, &sandbox, true)?;
        let metadata = std::fs::metadata(&path).map_err(|e| io_error(&uri, &e))?;
        regular_file(&uri, &metadata)?;
        // Never blocks: opening a FIFO swapped in since the check does not wait for a writer,
        // and what was opened is checked again.
        let mut file = {
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(&path)
                .map_err(|e| io_error(&uri, &e))?
        };
        let opened = file.metadata().map_err(|e| io_error(&uri, &e))?;
        regular_file(&uri, &opened)?;
        let expected = usize::try_from(opened.len()).unwrap_or(0);
        let mut bytes = Vec::with_capacity(expected.saturating_add(1));
        std::io::Read::read_to_end(
            &mut std::io::Read::take(&mut file, MAX_READ_BYTES + 1),
            &mut bytes,
        )
        .map_err(|e| io_error(&uri, &e))?;
        if bytes.len() as u64 > MAX_READ_BYTES {
            return Err(too_large(&uri, bytes.len() as u64));
        }
        let text = match encoding {
            Some(ContentEncoding::Base64) => Err(bytes),
            _ => String::from_utf8(bytes).map_err(std::string::FromUtf8Error::into_bytes),
        };
        Ok(match text {
            Ok(data) => ResourceReadResult {
                data,
                encoding: ContentEncoding::Utf8,
                content_type: None,
            },
            Err(bytes) => ResourceReadResult {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                encoding: ContentEncoding::Base64,
                content_type: None,
            },
        })
    })
    .await
}

/// What a directory entry is, as `resourceList` reports it: `file`, `directory`, or for a
/// special file `fifo`, `socket`, `block-device` or `char-device`.
fn kind_name(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "fifo"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_block_device() {
        "block-device"
    } else if kind.is_char_device() {
        "char-device"
    } else {
        "file"
    }
}

/// The JSON answer of a read, its text moved rather than copied (a read's answer is the
/// largest value the host builds).
pub fn read_answer(read: ResourceReadResult) -> serde_json::Value {
    let encoding = match read.encoding {
        ContentEncoding::Base64 => "base64",
        ContentEncoding::Utf8 => "utf-8",
    };
    let mut answer = serde_json::Map::new();
    answer.insert("data".to_owned(), serde_json::Value::String(read.data));
    answer.insert("encoding".to_owned(), encoding.into());
    if let Some(content_type) = read.content_type {
        answer.insert("contentType".to_owned(), content_type.into());
    }
    serde_json::Value::Object(answer)
}

/// Only regular files are read (a FIFO or a device would block or never end), within the cap.
fn regular_file(uri: &str, metadata: &std::fs::Metadata) -> Result<(), RpcError> {
    if metadata.is_dir() {
        return Err(RpcError::invalid_params(format!(
            "{} is a folder: use resourceList",
            snippet(uri)
        )));
    }
    if !metadata.is_file() {
        return Err(RpcError::invalid_params(format!(
            "{} is a {}, not a regular file: only regular files can be read",
            snippet(uri),
            kind_name(&metadata.file_type())
        )));
    }
    if metadata.len() > MAX_READ_BYTES {
        return Err(too_large(uri, metadata.len()));
    }
    Ok(())
}

fn too_large(uri: &str, len: u64) -> RpcError {
    RpcError::invalid_params(format!(
        "{} is {len} bytes; the host reads at most {MAX_READ_BYTES}",
        snippet(uri)
    ))
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;

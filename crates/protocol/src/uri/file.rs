//! `file://` URIs, the form AHP uses for working directories and roots.

use std::path::{Component, Path, PathBuf};

use super::encoding::{DecodeError, percent_decode, percent_encode};
use super::error::{UriError, snippet};

/// The local path a `file://` URI names. Only local URIs (empty or `localhost` authority) with
/// an absolute path are accepted; the path is percent-decoded and may not contain NUL.
pub fn file_uri_to_path(uri: &str) -> Result<PathBuf, UriError> {
    let not_a_file = || UriError::NotAFileUri {
        input: snippet(uri),
    };
    let rest = uri.strip_prefix("file://").ok_or_else(not_a_file)?;
    let path = rest
        .strip_prefix("localhost")
        .filter(|p| p.starts_with('/'))
        .unwrap_or(rest);
    if !path.starts_with('/') {
        return Err(not_a_file());
    }
    let decoded = percent_decode(path).map_err(|error| match error {
        DecodeError::BadEscape => UriError::InvalidPercentEncoding {
            input: snippet(uri),
        },
        DecodeError::NotUtf8 => UriError::InvalidUtf8 {
            input: snippet(uri),
        },
    })?;
    if decoded.contains('\0') {
        return Err(not_a_file());
    }
    Ok(PathBuf::from(decoded))
}

/// The `file://` URI of an absolute path: each segment percent-encoded, `/` kept.
pub fn path_to_file_uri(path: &Path) -> Result<String, UriError> {
    let not_absolute = || UriError::NotAFileUri {
        input: snippet(&path.to_string_lossy()),
    };
    if !path.is_absolute() {
        return Err(not_absolute());
    }
    let mut uri = String::from("file://");
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => {}
            Component::Normal(segment) => {
                let segment = segment.to_str().ok_or_else(not_absolute)?;
                uri.push('/');
                uri.push_str(&percent_encode(segment));
            }
            Component::CurDir | Component::ParentDir => return Err(not_absolute()),
        }
    }
    if uri.len() == "file://".len() {
        uri.push('/');
    }
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_absolute_paths() {
        for path in ["/", "/work/repo", "/tmp/a b/ü%x"] {
            let uri = path_to_file_uri(Path::new(path)).unwrap();
            assert_eq!(
                file_uri_to_path(&uri).unwrap(),
                PathBuf::from(path),
                "{uri}"
            );
        }
        assert_eq!(
            path_to_file_uri(Path::new("/tmp/a b")).unwrap(),
            "file:///tmp/a%20b"
        );
        assert_eq!(
            file_uri_to_path("file://localhost/etc").unwrap(),
            PathBuf::from("/etc")
        );
    }

    #[test]
    fn refuses_what_is_not_a_local_absolute_file_uri() {
        for bad in [
            "http://x/y",
            "file://host/share",
            "file:relative",
            "file:///a%00b",
            "file:///a%zz",
        ] {
            assert!(file_uri_to_path(bad).is_err(), "{bad}");
        }
        assert!(path_to_file_uri(Path::new("relative")).is_err());
        assert!(path_to_file_uri(Path::new("/a/../b")).is_err());
    }
}

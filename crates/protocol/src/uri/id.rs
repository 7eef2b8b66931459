//! [`SafeId`]: the validated id inside session URIs and subagent chat URIs.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::{UriError, snippet};

/// A session id or tool call id that is safe to use as a single path component.
///
/// Ids arrive from clients and provider CLIs, and the host reuses them as directory names,
/// file names and git ref segments. So an id is non-empty, at most [`SafeId::MAX_LEN`] bytes,
/// contains no control character (U+0000–U+001F, U+007F–U+009F: NUL truncates C strings, newlines
/// forge log lines) and is not `.` or `..` (which would name the current or parent directory).
/// Everything else — `/`, `%`, spaces, any Unicode — is allowed: URIs percent-encode it, and code
/// that builds paths must still encode `/` itself.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SafeId(String);

impl SafeId {
    /// Longest id, in bytes.
    pub const MAX_LEN: usize = 1024;

    /// Validates `id`.
    pub fn new(id: impl Into<String>) -> Result<Self, UriError> {
        let id = id.into();
        if id.is_empty() {
            return Err(UriError::EmptyId);
        }
        if id.len() > Self::MAX_LEN {
            return Err(UriError::IdTooLong {
                len: id.len(),
                input: snippet(&id),
            });
        }
        if let Some((position, _)) = id.char_indices().find(|(_, c)| c.is_control()) {
            return Err(UriError::ControlCharacter {
                position,
                input: snippet(&id),
            });
        }
        if id == "." || id == ".." {
            return Err(UriError::DotSegment { input: id });
        }
        Ok(Self(id))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl Deref for SafeId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SafeId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SafeId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for SafeId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for SafeId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Debug for SafeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for SafeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for SafeId {
    type Err = UriError;

    fn from_str(id: &str) -> Result<Self, UriError> {
        Self::new(id)
    }
}

impl TryFrom<String> for SafeId {
    type Error = UriError;

    fn try_from(id: String) -> Result<Self, UriError> {
        Self::new(id)
    }
}

impl TryFrom<&str> for SafeId {
    type Error = UriError;

    fn try_from(id: &str) -> Result<Self, UriError> {
        Self::new(id)
    }
}

impl From<SafeId> for String {
    fn from(id: SafeId) -> String {
        id.0
    }
}

#[cfg(test)]
#[path = "id_tests.rs"]
mod tests;

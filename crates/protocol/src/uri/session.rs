//! [`SessionUri`]: `ahp-session:/<id>` and VS Code's `<provider>:/<id>`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::MAX_URI_LEN;
use super::encoding::{decode_id_segment, percent_encode, split_scheme};
use super::error::{UriError, snippet};
use super::id::SafeId;
use crate::Uri;

/// Scheme of canonical AHP session URIs.
pub const SESSION_SCHEME: &str = "ahp-session";

/// Longest provider scheme, in bytes. Bounds session URIs so derived chat URIs stay parseable.
pub const MAX_PROVIDER_SCHEME_LEN: usize = 64;

/// Path suffix of a session's annotations channel.
pub(crate) const ANNOTATIONS_SUFFIX: &str = "/annotations";

/// A session URI: canonical `ahp-session:/<id>` or VS Code's `<provider>:/<id>`.
///
/// VS Code only shows sessions addressed as `<provider>:/<id>` (e.g. `copilotcli:/<uuid>`), so both
/// forms are first-class. The id is percent-encoded; [`SessionUri::parse`] accepts only the
/// canonical spelling, so two equal ids never hide behind two different strings.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionUri {
    // Field order matters: the derived `Ord` sorts by the URI string.
    uri: String,
    scheme_len: usize,
    id: SafeId,
}

impl SessionUri {
    /// Parses and validates a session URI.
    pub fn parse(input: &str) -> Result<Self, UriError> {
        if input.len() > MAX_URI_LEN {
            return Err(UriError::UriTooLong {
                len: input.len(),
                input: snippet(input),
            });
        }
        let (scheme, rest) = split_scheme(input).ok_or_else(|| UriError::MissingScheme {
            input: snippet(input),
        })?;
        if scheme != SESSION_SCHEME {
            check_provider_scheme(scheme)?;
        }
        let segment = single_segment(rest).ok_or_else(|| UriError::NotASessionUri {
            input: snippet(input),
        })?;
        let id = decode_id_segment(input, segment)?;
        Ok(Self {
            uri: input.to_owned(),
            scheme_len: scheme.len(),
            id,
        })
    }

    /// The canonical form `ahp-session:/<id>`.
    pub fn canonical(id: SafeId) -> Self {
        Self::build(SESSION_SCHEME, id)
    }

    /// VS Code's form `<provider>:/<id>`, e.g. `copilotcli:/<uuid>`.
    pub fn with_provider(provider: &str, id: SafeId) -> Result<Self, UriError> {
        check_provider_scheme(provider)?;
        Ok(Self::build(provider, id))
    }

    fn build(scheme: &str, id: SafeId) -> Self {
        Self {
            uri: format!("{scheme}:/{}", percent_encode(&id)),
            scheme_len: scheme.len(),
            id,
        }
    }

    /// The decoded session id.
    pub fn id(&self) -> &SafeId {
        &self.id
    }

    /// The scheme: `ahp-session` or the provider's.
    pub fn scheme(&self) -> &str {
        self.uri.get(..self.scheme_len).unwrap_or_default()
    }

    /// The provider scheme of the `<provider>:/<id>` form; `None` for `ahp-session:/<id>`.
    pub fn provider_scheme(&self) -> Option<&str> {
        Some(self.scheme()).filter(|scheme| *scheme != SESSION_SCHEME)
    }

    /// The URI string.
    pub fn as_str(&self) -> &str {
        &self.uri
    }

    /// The URI string, owned.
    pub fn into_string(self) -> String {
        self.uri
    }

    /// Whether `self` and `other` are two spellings of one session: the same id, and the same
    /// scheme or one of them `ahp-session`. VS Code main names a session `ahp-session:/<id>`
    /// where VS Code 1.141 names the same session `<provider>:/<id>`; the host keeps session ids
    /// unique across spellings, so the id decides (the provider is checked where it is known).
    pub fn same_session(&self, other: &SessionUri) -> bool {
        self.id == other.id
            && (self.scheme() == other.scheme()
                || self.scheme() == SESSION_SCHEME
                || other.scheme() == SESSION_SCHEME)
    }

    /// This session's id under `scheme` (`ahp-session` or a provider scheme).
    pub fn respelled(&self, scheme: &str) -> Result<Self, UriError> {
        if scheme == SESSION_SCHEME {
            Ok(Self::canonical(self.id.clone()))
        } else {
            Self::with_provider(scheme, self.id.clone())
        }
    }

    /// This session's annotations channel, `<session URI>/annotations`.
    pub fn annotations_uri(&self) -> Uri {
        format!("{}{ANNOTATIONS_SUFFIX}", self.uri)
    }
}

/// The single path segment of `/<segment>`, if `rest` has exactly that shape.
pub(crate) fn single_segment(rest: &str) -> Option<&str> {
    rest.strip_prefix('/')
        .filter(|segment| !segment.contains('/'))
}

/// Whether a non-canonical scheme is a reserved one that no provider may use.
pub(crate) fn is_reserved_scheme(scheme: &str) -> bool {
    scheme.starts_with("ahp-") || scheme.starts_with("x-") || scheme == "mcp"
}

/// Whether `scheme` is shaped like a provider scheme (ignoring reservation).
pub(crate) fn is_provider_scheme_syntax(scheme: &str) -> bool {
    let mut bytes = scheme.bytes();
    scheme.len() <= MAX_PROVIDER_SCHEME_LEN
        && bytes.next().is_some_and(|first| first.is_ascii_lowercase())
        && bytes.all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.')
        })
}

fn check_provider_scheme(scheme: &str) -> Result<(), UriError> {
    if !is_provider_scheme_syntax(scheme) {
        return Err(UriError::InvalidProviderScheme {
            scheme: snippet(scheme),
        });
    }
    if is_reserved_scheme(scheme) {
        return Err(UriError::ReservedScheme {
            scheme: scheme.to_owned(),
        });
    }
    Ok(())
}

impl fmt::Debug for SessionUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SessionUri").field(&self.uri).finish()
    }
}

impl fmt::Display for SessionUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.uri)
    }
}

impl FromStr for SessionUri {
    type Err = UriError;

    fn from_str(input: &str) -> Result<Self, UriError> {
        Self::parse(input)
    }
}

impl TryFrom<String> for SessionUri {
    type Error = UriError;

    fn try_from(input: String) -> Result<Self, UriError> {
        Self::parse(&input)
    }
}

impl From<SessionUri> for String {
    fn from(uri: SessionUri) -> String {
        uri.uri
    }
}

impl AsRef<str> for SessionUri {
    fn as_ref(&self) -> &str {
        &self.uri
    }
}

/// Reads as its text wherever a `&str` is expected (a URI is never changed in place).
impl std::ops::Deref for SessionUri {
    type Target = str;

    fn deref(&self) -> &str {
        &self.uri
    }
}

impl PartialEq<str> for SessionUri {
    fn eq(&self, other: &str) -> bool {
        self.uri == other
    }
}

impl PartialEq<&str> for SessionUri {
    fn eq(&self, other: &&str) -> bool {
        self.uri == *other
    }
}

impl PartialEq<SessionUri> for String {
    fn eq(&self, other: &SessionUri) -> bool {
        *self == other.uri
    }
}

impl PartialEq<SessionUri> for str {
    fn eq(&self, other: &SessionUri) -> bool {
        self == other.uri
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;

//! [`ChatUri`]: opaque chat URIs, plus the two shapes the host derives from a session.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::encoding::{check_uri_text, decode_id_segment, percent_encode};
use super::error::{UriError, snippet};
use super::id::SafeId;
use super::session::SessionUri;

/// Scheme of AHP chat URIs.
pub const CHAT_SCHEME: &str = "ahp-chat";

const DEFAULT_CHAT_PREFIX: &str = "ahp-chat://default/";
const SUBAGENT_CHAT_PREFIX: &str = "ahp-chat://subagent/";

/// A chat URI.
///
/// Clients name chats freely (`createChat.chat`), so a parsed chat URI is opaque: it only has to
/// be a bounded URI without whitespace or control characters. Two shapes carry meaning and have
/// constructors and decoders here: VS Code's derived default chat of a session, and the child chat
/// of a subagent. Neither canonical nor client-named chat URIs encode their session; the host
/// keeps a chat→session index for those.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ChatUri(String);

impl ChatUri {
    /// Validates an opaque chat URI: a scheme followed by `:`, no whitespace or control
    /// characters, at most [`MAX_URI_LEN`](super::MAX_URI_LEN) bytes.
    pub fn parse(input: &str) -> Result<Self, UriError> {
        check_uri_text(input)?;
        Ok(Self(input.to_owned()))
    }

    /// A chat URI a client names in `createChat` for a chat of `session`: `ahp-chat:/<id>` with a
    /// single percent-encoded [`SafeId`] segment, or VS Code's peer-chat form
    /// `ahp-chat://<chat id>/<base64url(session URI)>` whose embedded session is `session`.
    /// The forms the host derives — `ahp-chat://default/…` and `ahp-chat://subagent/…` — are
    /// reserved, as is a peer chat embedding another session.
    pub fn parse_client_named(input: &str, session: &SessionUri) -> Result<Self, UriError> {
        check_uri_text(input)?;
        let not_client = || UriError::NotAClientChat {
            input: snippet(input),
        };
        let reserved = || UriError::ReservedChat {
            input: snippet(input),
        };
        if input.starts_with(DEFAULT_CHAT_PREFIX) || input.starts_with(SUBAGENT_CHAT_PREFIX) {
            return Err(reserved());
        }
        if let Some(rest) = input.strip_prefix("ahp-chat://") {
            let (chat_id, payload) = rest.split_once('/').ok_or_else(not_client)?;
            if payload.contains('/') {
                return Err(not_client());
            }
            decode_id_segment(input, chat_id)?;
            if chat_id.eq_ignore_ascii_case("default") || chat_id.eq_ignore_ascii_case("subagent") {
                return Err(reserved());
            }
            if decode_session(input, payload)? != *session {
                return Err(reserved());
            }
            return Ok(Self(input.to_owned()));
        }
        let segment = input.strip_prefix("ahp-chat:/").ok_or_else(not_client)?;
        if segment.contains('/') {
            return Err(not_client());
        }
        decode_id_segment(input, segment)?;
        Ok(Self(input.to_owned()))
    }

    /// The canonical form `ahp-chat:/<percent-encoded id>`.
    pub fn canonical(id: &SafeId) -> Self {
        Self(format!("{CHAT_SCHEME}:/{}", percent_encode(id)))
    }

    /// VS Code's derived default chat of a session:
    /// `ahp-chat://default/<base64url-no-pad(session URI)>`.
    pub fn default_for(session: &SessionUri) -> Self {
        Self(format!(
            "{DEFAULT_CHAT_PREFIX}{}",
            URL_SAFE_NO_PAD.encode(session.as_str())
        ))
    }

    /// The child chat of the subagent started by tool call `parent_tool_call_id` in `session`:
    /// `ahp-chat://subagent/<base64url-no-pad(session URI)>/<percent-encoded tool call id>`.
    ///
    /// Derived from exactly what provider signals carry, so the host can route a signal to its
    /// subagent chat without a lookup.
    pub fn subagent(session: &SessionUri, parent_tool_call_id: &SafeId) -> Self {
        Self(format!(
            "{SUBAGENT_CHAT_PREFIX}{}/{}",
            URL_SAFE_NO_PAD.encode(session.as_str()),
            percent_encode(parent_tool_call_id)
        ))
    }

    /// The session whose default chat this is.
    ///
    /// `Ok(None)` when this is not an `ahp-chat://default/…` URI; an error when it is one but its
    /// payload does not decode to a valid session URI. Accepts the payload with or without base64
    /// padding (`=`, or `%3D` as VS Code's URI printer would spell it).
    pub fn default_chat_session(&self) -> Result<Option<SessionUri>, UriError> {
        let Some(payload) = self.0.strip_prefix(DEFAULT_CHAT_PREFIX) else {
            return Ok(None);
        };
        decode_session(&self.0, payload).map(Some)
    }

    /// The session a chat URI is derived from: a default chat (`ahp-chat://default/<b64>`), a
    /// subagent chat (`ahp-chat://subagent/<b64>/<tool call>`) or a peer chat
    /// (`ahp-chat://<chat id>/<b64>`); `None` for `ahp-chat:/<id>` and for a payload that does not
    /// decode to a session URI.
    pub fn derived_session(&self) -> Option<SessionUri> {
        if let Ok(Some(session)) = self.default_chat_session() {
            return Some(session);
        }
        if let Ok(Some((session, _))) = self.subagent_parent() {
            return Some(session);
        }
        let (_, payload) = self.0.strip_prefix("ahp-chat://")?.split_once('/')?;
        if payload.contains('/') {
            return None;
        }
        decode_session(&self.0, payload).ok()
    }

    /// Whether `chat` is a well-formed subagent chat URI (`ahp-chat://subagent/…`).
    pub fn names_subagent(chat: &str) -> bool {
        Self::parse(chat)
            .ok()
            .and_then(|c| c.subagent_parent().ok().flatten())
            .is_some()
    }

    /// The session and parent tool call id of a subagent chat.
    ///
    /// `Ok(None)` when this is not an `ahp-chat://subagent/…` URI; an error when it is one but is
    /// malformed.
    pub fn subagent_parent(&self) -> Result<Option<(SessionUri, SafeId)>, UriError> {
        let Some(rest) = self.0.strip_prefix(SUBAGENT_CHAT_PREFIX) else {
            return Ok(None);
        };
        let Some((payload, tool_call_segment)) = rest.split_once('/') else {
            return Err(UriError::MalformedSubagentChat {
                input: snippet(&self.0),
            });
        };
        if tool_call_segment.contains('/') {
            return Err(UriError::MalformedSubagentChat {
                input: snippet(&self.0),
            });
        }
        let session = decode_session(&self.0, payload)?;
        let tool_call_id = decode_id_segment(&self.0, tool_call_segment)?;
        Ok(Some((session, tool_call_id)))
    }

    /// The scheme (`ahp-chat` for every chat the host derives).
    pub fn scheme(&self) -> &str {
        self.0
            .split_once(':')
            .map(|(scheme, _)| scheme)
            .unwrap_or_default()
    }

    /// The URI string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The URI string, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// Decodes the base64url session URI embedded in a derived chat URI `input`.
pub(crate) fn decode_session(input: &str, payload: &str) -> Result<SessionUri, UriError> {
    let unpadded = strip_base64_padding(payload);
    let bytes = URL_SAFE_NO_PAD
        .decode(unpadded)
        .map_err(|_| UriError::InvalidBase64 {
            input: snippet(input),
        })?;
    let session = String::from_utf8(bytes).map_err(|_| UriError::InvalidUtf8 {
        input: snippet(input),
    })?;
    SessionUri::parse(&session).map_err(|reason| UriError::InvalidEmbeddedSession {
        input: snippet(input),
        reason: Box::new(reason),
    })
}

/// Removes up to two trailing pad characters, written `=` or percent-encoded `%3D`.
fn strip_base64_padding(mut payload: &str) -> &str {
    for _ in 0..2 {
        payload = payload
            .strip_suffix('=')
            .or_else(|| payload.strip_suffix("%3D"))
            .or_else(|| payload.strip_suffix("%3d"))
            .unwrap_or(payload);
    }
    payload
}

impl fmt::Debug for ChatUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ChatUri").field(&self.0).finish()
    }
}

impl fmt::Display for ChatUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ChatUri {
    type Err = UriError;

    fn from_str(input: &str) -> Result<Self, UriError> {
        Self::parse(input)
    }
}

impl TryFrom<String> for ChatUri {
    type Error = UriError;

    fn try_from(input: String) -> Result<Self, UriError> {
        check_uri_text(&input)?;
        Ok(Self(input))
    }
}

impl From<ChatUri> for String {
    fn from(uri: ChatUri) -> String {
        uri.0
    }
}

impl AsRef<str> for ChatUri {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Reads as its text wherever a `&str` is expected (a URI is never changed in place).
impl std::ops::Deref for ChatUri {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for ChatUri {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ChatUri {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<ChatUri> for String {
    fn eq(&self, other: &ChatUri) -> bool {
        *self == other.0
    }
}

impl PartialEq<ChatUri> for str {
    fn eq(&self, other: &ChatUri) -> bool {
        self == other.0
    }
}

#[cfg(test)]
#[path = "chat_tests.rs"]
mod tests;

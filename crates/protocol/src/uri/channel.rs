//! [`Channel`]: which kind of resource a subscribable URI names.

use std::fmt;
use std::str::FromStr;

use super::chat::{CHAT_SCHEME, ChatUri};
use super::encoding::check_uri_text;
use super::error::{UriError, snippet};
use super::session::{
    ANNOTATIONS_SUFFIX, SESSION_SCHEME, SessionUri, is_provider_scheme_syntax, is_reserved_scheme,
    single_segment,
};
use crate::{ROOT_RESOURCE_URI, Uri};

/// A channel URI classified by the kind of state behind it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Channel {
    /// `ahp-root://`.
    Root,
    /// `ahp-session:/<id>`, or any non-reserved `<provider>:/<id>` with a single path segment.
    Session(SessionUri),
    /// `<session URI>/annotations`.
    Annotations(SessionUri),
    /// Any `ahp-chat:` URI.
    Chat(ChatUri),
    /// `ahp-terminal:…`.
    Terminal(Uri),
    /// `ahp-changeset:…`.
    Changeset(Uri),
    /// `ahp-resource-watch:…`.
    ResourceWatch(Uri),
    /// Everything else: `ahp-otlp:`, `mcp:`, `x-` extensions, canvas, automations, and
    /// non-reserved schemes without the single-segment session shape.
    Other(Uri),
}

impl Channel {
    /// Classifies `input`.
    ///
    /// Errors when `input` is not a bounded URI without whitespace or control characters, when an
    /// `ahp-root` URI is not exactly `ahp-root://`, and when a session-shaped URI carries an
    /// invalid id (classifying it as anything else would hide the mistake).
    pub fn parse(input: &str) -> Result<Self, UriError> {
        let (scheme, rest) = check_uri_text(input)?;
        let channel = match scheme {
            "ahp-root" if input == ROOT_RESOURCE_URI => Self::Root,
            "ahp-root" => {
                return Err(UriError::InvalidRootUri {
                    input: snippet(input),
                });
            }
            SESSION_SCHEME => session_or_annotations(input)?,
            CHAT_SCHEME => Self::Chat(ChatUri::parse(input)?),
            "ahp-terminal" => Self::Terminal(input.to_owned()),
            "ahp-changeset" => Self::Changeset(input.to_owned()),
            "ahp-resource-watch" => Self::ResourceWatch(input.to_owned()),
            _ if is_reserved_scheme(scheme) || !is_provider_scheme_syntax(scheme) => {
                Self::Other(input.to_owned())
            }
            _ if single_segment(rest).is_some() || annotations_session(input).is_some() => {
                session_or_annotations(input)?
            }
            _ => Self::Other(input.to_owned()),
        };
        Ok(channel)
    }
}

/// The session part of `<scheme>:/<segment>/annotations`, if `input` has that shape.
fn annotations_session(input: &str) -> Option<&str> {
    let session = input.strip_suffix(ANNOTATIONS_SUFFIX)?;
    let (_, rest) = session.split_once(':')?;
    single_segment(rest).map(|_| session)
}

fn session_or_annotations(input: &str) -> Result<Channel, UriError> {
    match annotations_session(input) {
        Some(session) => SessionUri::parse(session).map(Channel::Annotations),
        None => SessionUri::parse(input).map(Channel::Session),
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Root => f.write_str(ROOT_RESOURCE_URI),
            Self::Session(session) => f.write_str(session.as_str()),
            Self::Annotations(session) => write!(f, "{session}{ANNOTATIONS_SUFFIX}"),
            Self::Chat(chat) => f.write_str(chat.as_str()),
            Self::Terminal(uri)
            | Self::Changeset(uri)
            | Self::ResourceWatch(uri)
            | Self::Other(uri) => f.write_str(uri),
        }
    }
}

impl FromStr for Channel {
    type Err = UriError;

    fn from_str(input: &str) -> Result<Self, UriError> {
        Self::parse(input)
    }
}

#[cfg(test)]
#[path = "channel_tests.rs"]
mod tests;

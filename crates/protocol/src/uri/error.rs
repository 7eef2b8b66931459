//! The single error type of URI and id validation.

use thiserror::Error;

/// How many characters of an offending input an error message quotes.
const SNIPPET_CHARS: usize = 80;

/// Why a string is not an acceptable id or URI.
///
/// Every variant quotes the offending input, truncated to about 80 characters so a 10 KB hostile
/// string never ends up whole in a log line or an error response.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum UriError {
    /// The id is the empty string.
    #[error("the id is empty; use a non-empty identifier such as a UUID")]
    EmptyId,
    /// The id is longer than [`SafeId::MAX_LEN`](crate::SafeId::MAX_LEN) bytes.
    #[error("the id {input:?} is {len} bytes long; the limit is 1024 bytes")]
    IdTooLong {
        /// Length of the id in bytes.
        len: usize,
        /// The id, truncated.
        input: String,
    },
    /// The id contains a control character (U+0000–U+001F or U+007F–U+009F).
    #[error(
        "the id {input:?} contains a control character at byte {position}; ids must be printable"
    )]
    ControlCharacter {
        /// Byte offset of the first control character.
        position: usize,
        /// The id, truncated.
        input: String,
    },
    /// The id is `.` or `..`.
    #[error("the id {input:?} is not allowed: `.` and `..` name directories when used in a path")]
    DotSegment {
        /// The id.
        input: String,
    },
    /// The URI is longer than [`MAX_URI_LEN`](crate::uri::MAX_URI_LEN) bytes.
    #[error("the URI {input:?} is {len} bytes long; the limit is 8192 bytes")]
    UriTooLong {
        /// Length of the URI in bytes.
        len: usize,
        /// The URI, truncated.
        input: String,
    },
    /// The URI contains whitespace or a control character.
    #[error(
        "the URI {input:?} contains whitespace or a control character at byte {position}; \
         percent-encode it"
    )]
    InvalidCharacter {
        /// Byte offset of the first offending character.
        position: usize,
        /// The URI, truncated.
        input: String,
    },
    /// The string does not start with `<scheme>:`.
    #[error(
        "{input:?} has no URI scheme; expected `<scheme>:` (a letter, then letters, digits, \
         `+`, `-` or `.`) such as `ahp-session:/<id>`"
    )]
    MissingScheme {
        /// The input, truncated.
        input: String,
    },
    /// The scheme cannot name a session provider (VS Code's `<provider>:/<id>` form).
    #[error(
        "{scheme:?} cannot name a session provider: use a lowercase letter followed by up to 63 \
         lowercase letters, digits, `+`, `-` or `.`"
    )]
    InvalidProviderScheme {
        /// The scheme, truncated.
        scheme: String,
    },
    /// The scheme is reserved by AHP (`ahp-*`, `mcp`) or for extensions (`x-*`).
    #[error(
        "the scheme {scheme:?} is reserved (by AHP, MCP or for `x-` extensions) and cannot name a \
         session provider; use `ahp-session:/<id>` or a provider scheme such as `copilotcli:/<id>`"
    )]
    ReservedScheme {
        /// The scheme, truncated.
        scheme: String,
    },
    /// The string has a scheme but not the `<scheme>:/<id>` single-segment shape.
    #[error(
        "{input:?} is not a session URI; expected `ahp-session:/<id>` or `<provider>:/<id>` with \
         exactly one path segment (write `/` inside an id as `%2F`)"
    )]
    NotASessionUri {
        /// The input, truncated.
        input: String,
    },
    /// Not a local `file://` URI with an absolute path.
    #[error("{input:?} is not a local file URI; expected `file:///absolute/path`")]
    NotAFileUri {
        /// The input, truncated.
        input: String,
    },
    /// A `%` is not followed by two hexadecimal digits.
    #[error("{input:?} has a `%` not followed by two hex digits; write a literal `%` as `%25`")]
    InvalidPercentEncoding {
        /// The input, truncated.
        input: String,
    },
    /// The percent-decoded (or base64-decoded) bytes are not valid UTF-8.
    #[error("{input:?} decodes to bytes that are not valid UTF-8")]
    InvalidUtf8 {
        /// The input, truncated.
        input: String,
    },
    /// The id is valid but spelled differently from its one canonical encoding.
    #[error(
        "{input:?} is not in canonical form; write it as {canonical:?} (percent-encode every byte \
         outside `A-Za-z0-9-._~`, with uppercase hex digits)"
    )]
    NonCanonicalEncoding {
        /// The input, truncated.
        input: String,
        /// The canonical spelling of the same URI, truncated.
        canonical: String,
    },
    /// A root channel URI other than exactly `ahp-root://`.
    #[error("{input:?} is not the root channel; the root channel is exactly `ahp-root://`")]
    InvalidRootUri {
        /// The input, truncated.
        input: String,
    },
    /// The payload of a derived chat URI is not base64url.
    #[error(
        "{input:?}: the part after `ahp-chat://default/` or `ahp-chat://subagent/` is not \
         base64url (`A-Za-z0-9-_`, optionally padded with `=`)"
    )]
    InvalidBase64 {
        /// The chat URI, truncated.
        input: String,
    },
    /// The session URI embedded in a derived chat URI is itself invalid.
    #[error("{input:?} embeds an invalid session URI: {reason}")]
    InvalidEmbeddedSession {
        /// The chat URI, truncated.
        input: String,
        /// Why the embedded session URI was rejected.
        reason: Box<UriError>,
    },
    /// Not one of the changeset URIs the host derives.
    #[error(
        "{input:?} is not a changeset URI of this host; expected \
         `ahp-changeset://session/<base64url session>` or \
         `ahp-changeset://turn/<base64url session>/<percent-encoded turn id>`"
    )]
    NotAChangesetUri {
        /// The input, truncated.
        input: String,
    },
    /// A subagent chat URI without its `/<tool call id>` part.
    #[error(
        "{input:?} is not a subagent chat URI; expected \
         `ahp-chat://subagent/<base64url session URI>/<tool call id>`"
    )]
    MalformedSubagentChat {
        /// The chat URI, truncated.
        input: String,
    },
    /// A chat URI a client may not choose: the host derives it (a session's default chat, a
    /// subagent's chat) or it belongs to another session.
    #[error(
        "the chat URI {input:?} is reserved: the host derives default and subagent chats, and a \
         chat of another session cannot be created here"
    )]
    ReservedChat {
        /// The chat URI, truncated.
        input: String,
    },
    /// Not a chat URI a client can name: `ahp-chat:/<id>` or VS Code's
    /// `ahp-chat://<chat id>/<base64url(session URI)>`.
    #[error(
        "{input:?} is not a chat URI a client can create; use ahp-chat:/<id> or \
         ahp-chat://<chat id>/<base64url of the session URI>"
    )]
    NotAClientChat {
        /// The input, truncated.
        input: String,
    },
}

/// A copy of `input` short enough to quote in an error message or a log line: its first 80
/// characters, then `…` when it was longer (client-supplied text is never echoed in full).
pub fn snippet(input: &str) -> String {
    match input.char_indices().nth(SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", input.get(..cut).unwrap_or_default()),
        None => input.to_owned(),
    }
}

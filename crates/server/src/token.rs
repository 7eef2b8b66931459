//! The connection token: the shared secret a client presents on the WebSocket upgrade.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Number of random bytes in a generated token (256 bits, twice the required minimum).
const GENERATED_TOKEN_BYTES: usize = 32;

/// Why a [`Token`] could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// [`Token::new`] was given an empty string: an empty token would admit everybody.
    #[error("the connection token must not be empty")]
    Empty,
    /// The operating system's random number generator failed.
    #[error("the OS random number generator failed: {0}")]
    Rng(String),
}

/// The connection token (the `tkn` of `ws://host:port/?tkn=…`).
///
/// Cheap to clone. Its `Debug` output is redacted so that it cannot reach a log by accident;
/// [`Token::as_str`] is the one deliberate way to read it (to print the connect URL).
#[derive(Clone)]
pub struct Token(Arc<str>);

impl Token {
    /// Wraps a user-supplied token. Rejects the empty string.
    pub fn new(token: String) -> Result<Self, TokenError> {
        if token.is_empty() {
            return Err(TokenError::Empty);
        }
        Ok(Self(token.into()))
    }

    /// Mints a fresh token: 256 bits from the OS random number generator, written in the
    /// URL-safe base64 alphabet `[0-9A-Za-z_-]` without padding (43 characters), so it survives
    /// pasting, percent-encoding and JSON settings unchanged.
    pub fn generate() -> Result<Self, TokenError> {
        let mut bytes = [0u8; GENERATED_TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|error| TokenError::Rng(error.to_string()))?;
        Ok(Self(URL_SAFE_NO_PAD.encode(bytes).into()))
    }

    /// The token in clear text. Never log it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The token percent-encoded for a URL query: every byte outside the RFC 3986 unreserved
    /// set (`A-Z a-z 0-9 - . _ ~`) becomes `%XX`. Generated tokens come out unchanged.
    pub fn percent_encoded(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for &byte in self.0.as_bytes() {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(byte));
            } else {
                out.push('%');
                out.push(char::from(HEX_UPPER[usize::from(byte >> 4)]));
                out.push(char::from(HEX_UPPER[usize::from(byte & 0x0f)]));
            }
        }
        out
    }

    /// Constant-time comparison of a presented token with this one.
    pub(crate) fn matches(&self, presented: &[u8]) -> bool {
        crate::auth::constant_time_eq(self.0.as_bytes(), presented)
    }
}

/// Constant-time, like every comparison of the secret.
impl PartialEq for Token {
    fn eq(&self, other: &Self) -> bool {
        self.matches(other.0.as_bytes())
    }
}

impl Eq for Token {}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;

//! Percent-encoding, scheme syntax and the checks shared by every URI parser.

use super::MAX_URI_LEN;
use super::error::{UriError, snippet};
use super::id::SafeId;

const HEX_DIGITS: &[u8; 16] = b"0123456789ABCDEF";

/// Percent-encodes every byte outside RFC 3986 "unreserved" (`A-Za-z0-9-._~`), uppercase hex.
///
/// Encoding more than RFC 3986 requires gives each id exactly one spelling, and a spelling that
/// contains no `/`, `:`, `?`, `#` or `%` of its own.
pub fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for &byte in text.as_bytes() {
        if is_unreserved(byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push('%');
            encoded.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
            encoded.push(char::from(HEX_DIGITS[usize::from(byte & 0x0F)]));
        }
    }
    encoded
}

fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// Why [`percent_decode`] failed.
pub(crate) enum DecodeError {
    BadEscape,
    NotUtf8,
}

/// Decodes `%XX` escapes (either case of hex digit) and requires UTF-8 afterwards.
pub(crate) fn percent_decode(text: &str) -> Result<String, DecodeError> {
    let mut decoded = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(byte) = bytes.next() {
        if byte != b'%' {
            decoded.push(byte);
            continue;
        }
        let high = bytes.next().and_then(hex_value);
        let low = bytes.next().and_then(hex_value);
        match (high, low) {
            (Some(high), Some(low)) => decoded.push(high << 4 | low),
            _ => return Err(DecodeError::BadEscape),
        }
    }
    String::from_utf8(decoded).map_err(|_| DecodeError::NotUtf8)
}

fn hex_value(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
}

/// Decodes one percent-encoded path segment into an id, accepting only its canonical spelling.
///
/// `segment` must be a suffix of `input` (the whole URI, quoted in errors).
pub(crate) fn decode_id_segment(input: &str, segment: &str) -> Result<SafeId, UriError> {
    let decoded = percent_decode(segment).map_err(|error| match error {
        DecodeError::BadEscape => UriError::InvalidPercentEncoding {
            input: snippet(input),
        },
        DecodeError::NotUtf8 => UriError::InvalidUtf8 {
            input: snippet(input),
        },
    })?;
    let id = SafeId::new(decoded)?;
    let canonical_segment = percent_encode(&id);
    if canonical_segment != segment {
        let prefix = input.strip_suffix(segment).unwrap_or_default();
        return Err(UriError::NonCanonicalEncoding {
            input: snippet(input),
            canonical: snippet(&format!("{prefix}{canonical_segment}")),
        });
    }
    Ok(id)
}

/// Splits `<scheme>:<rest>` when the scheme has RFC 3986 syntax (`ALPHA *(ALPHA/DIGIT/+/-/.)`).
pub(crate) fn split_scheme(input: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = input.split_once(':')?;
    let mut chars = scheme.chars();
    let starts_with_letter = chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic());
    let rest_is_valid = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (starts_with_letter && rest_is_valid).then_some((scheme, rest))
}

/// Checks what every URI the host accepts must satisfy: bounded length, no whitespace or control
/// characters, a scheme. Returns the scheme and the rest.
pub(crate) fn check_uri_text(input: &str) -> Result<(&str, &str), UriError> {
    if input.len() > MAX_URI_LEN {
        return Err(UriError::UriTooLong {
            len: input.len(),
            input: snippet(input),
        });
    }
    if let Some((position, _)) = input
        .char_indices()
        .find(|(_, c)| c.is_control() || c.is_whitespace())
    {
        return Err(UriError::InvalidCharacter {
            position,
            input: snippet(input),
        });
    }
    split_scheme(input).ok_or_else(|| UriError::MissingScheme {
        input: snippet(input),
    })
}

//! Endpoint authentication on the WebSocket upgrade: the connection token as the `tkn` query
//! parameter (what VS Code and `ahp-ws` send) or as an `Authorization: Bearer` header.

use tokio_tungstenite::tungstenite::http::{Request, header::AUTHORIZATION};

use crate::access::{Credentials, Grant};

/// The query parameter that carries the token. Matched exactly: `TKN` is not it.
pub(crate) const TOKEN_QUERY_PARAMETER: &str = "tkn";

/// Whether the upgrade request presents `token`, in its query or in a bearer header.
pub(crate) fn request_grant<B>(request: &Request<B>, credentials: &Credentials) -> Option<Grant> {
    let mut grant = None;
    for presented in query_tokens(request.uri().query()) {
        grant = grant.or(credentials.grant_for(&presented));
    }
    for value in request.headers().get_all(AUTHORIZATION) {
        if let Some(presented) = value.to_str().ok().and_then(bearer_token) {
            grant = grant.or(credentials.grant_for(presented.as_bytes()));
        }
    }
    grant
}

pub(crate) fn query_tokens(query: Option<&str>) -> Vec<Vec<u8>> {
    let Some(query) = query else {
        return Vec::new();
    };
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(name, _)| *name == TOKEN_QUERY_PARAMETER)
        .filter_map(|(_, value)| percent_decode(value))
        .collect()
}

/// The credentials of an `Authorization: Bearer <token>` header value (scheme case-insensitive).
pub(crate) fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let credentials = credentials.trim();
    (!credentials.is_empty()).then_some(credentials)
}

/// RFC 3986 percent-decoding. `+` stays `+` (tokens are not form data). `None` on a broken
/// escape such as `%4` or `%zz`.
pub(crate) fn percent_decode(value: &str) -> Option<Vec<u8>> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let high = hex_value(*bytes.get(index + 1)?)?;
            let low = hex_value(*bytes.get(index + 2)?)?;
            out.push((high << 4) | low);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    Some(out)
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// Compares a secret with a presented value in time that depends only on the secret's length
/// (which is public: generated tokens all have the same length), never on where they differ.
pub(crate) fn constant_time_eq(secret: &[u8], presented: &[u8]) -> bool {
    // Lengths differ → non-zero, but the loop still runs over the whole secret.
    let mut difference = (secret.len() ^ presented.len()) as u64;
    for (index, &expected) in secret.iter().enumerate() {
        let actual = presented.get(index).copied().unwrap_or(0);
        // black_box keeps the optimiser from turning the fold into an early exit.
        difference = std::hint::black_box(difference | u64::from(expected ^ actual));
    }
    difference == 0
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;

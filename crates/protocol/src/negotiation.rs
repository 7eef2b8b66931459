//! Protocol version negotiation for `initialize`, with VS Code's `0.10.0` alias.
//!
//! `ahp-types` 1.0.0 supports the baselines `1.0.0` and `0.9.0` and picks the highest offered
//! caret-compatible version. VS Code never offers `1.0.0`: release/1.141 and main offer `0.10.0`
//! (its own label for the upstream 1.0/0.9 wire contract) then `0.9.0`, …; the crate alone would
//! answer `0.9.0`. So every offered `0.10.p` is mapped to `1.0.p` before the crate's
//! [`negotiate_protocol_version`] runs, and the *offered* string of the winner is echoed.

use crate::negotiate_protocol_version;

/// The versions advertised in `-32005` (`UnsupportedProtocolVersion`) `data.supportedVersions`.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["1.0.0", "0.10.0", "0.9.0"];

/// The set of actions and fields a peer may be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WireSurface {
    /// A `0.9.x` or `0.10.x` peer (VS Code): send only what existed in 0.9; gate anything
    /// introduced later (`x-` extensions pass).
    V0_9,
    /// A `1.x` peer. Newer minors (`1.1.0`, …) get 1.0 behaviour, which they must tolerate.
    V1_0,
}

/// The outcome of a successful negotiation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NegotiatedVersion {
    version: String,
    surface: WireSurface,
}

impl NegotiatedVersion {
    /// The offered string that was chosen; it goes verbatim into
    /// `InitializeResult.protocolVersion`.
    pub fn as_str(&self) -> &str {
        &self.version
    }

    /// Which surface to serve this peer.
    pub fn surface(&self) -> WireSurface {
        self.surface
    }

    /// Negotiates a single version, e.g. one remembered for a `clientId` and reused on
    /// `reconnect` (which carries no version list). `None` when it is malformed or unsupported.
    pub fn from_version(version: &str) -> Option<Self> {
        negotiate(&[version.to_owned()]).ok().flatten()
    }
}

/// A malformed entry in `protocolVersions` (answer `-32602`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MalformedVersion(pub String);

/// Picks the highest offered version compatible with [`SUPPORTED_VERSIONS`].
///
/// `Err` when an entry is not `MAJOR.MINOR.PATCH` (the crate rejects the whole offer then);
/// `Ok(None)` when nothing overlaps (answer `-32005` and close). On a tie between `0.10.p` and
/// `1.0.p` the one the client listed first wins.
pub fn negotiate(offered: &[String]) -> Result<Option<NegotiatedVersion>, MalformedVersion> {
    let mapped: Vec<String> = offered.iter().map(|v| map_alias(v)).collect();
    let Some(chosen) = negotiate_protocol_version(&mapped)
        .map_err(|message| MalformedVersion(crate::uri::snippet(&message)))?
    else {
        return Ok(None);
    };
    // The crate returns the first of equal maxima; mapped strings are distinct per parsed value
    // (leading zeros are refused), so the first equal position is the chosen entry.
    let Some(index) = mapped.iter().position(|m| m == chosen) else {
        return Ok(None);
    };
    let version = offered[index].clone();
    let surface = if version.starts_with("0.") {
        WireSurface::V0_9
    } else {
        WireSurface::V1_0
    };
    Ok(Some(NegotiatedVersion { version, surface }))
}

/// `0.10.p` → `1.0.p`; everything else unchanged.
fn map_alias(version: &str) -> String {
    match version.strip_prefix("0.10.") {
        Some(patch) => format!("1.0.{patch}"),
        None => version.to_owned(),
    }
}

#[cfg(test)]
#[path = "negotiation_tests.rs"]
mod tests;

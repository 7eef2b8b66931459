//! `Origin` and `Host` checks on the WebSocket upgrade: a second line of defence behind the
//! connection token, never a replacement for it.
//!
//! A browser lets any web page open a WebSocket to a loopback address, so the host refuses an
//! upgrade that carries an `Origin` it does not allow: by default only
//! [`DEFAULT_ALLOWED_ORIGINS`] (VS Code's desktop windows open the socket from
//! `vscode-file://vscode-app`) and the host's own page (`serve --web`): an `Origin` of `http://`
//! or `https://` whose host and port equal the request's `Host`, which also holds through an
//! SSH port-forward (the browser names the forwarded address in both); `serve --allow-origin`
//! adds more. Clients that send no `Origin` — VS Code's shared process (SSH), the CLI, the `ahp`
//! crates, scripts — are not browsers and are not affected.
//!
//! A page can also reach the host under a DNS name it controls that resolves to 127.0.0.1 (DNS
//! rebinding); its requests then carry that name in `Host`. The host accepts a `Host` naming
//! `localhost`, a loopback address, or the address it listens on (when it listens on every
//! interface, any IP address), and compares host names only, never ports: an SSH or WSL forward
//! arrives as `localhost:<another port>`.

use std::net::IpAddr;

/// The origins allowed without `--allow-origin`.
pub const DEFAULT_ALLOWED_ORIGINS: [&str; 1] = ["vscode-file://vscode-app"];

/// Which `Origin` and `Host` values an upgrade may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginPolicy {
    allowed: Vec<String>,
    listen: IpAddr,
}

/// Why an upgrade was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginRefusal {
    /// A browser origin that is not allowed.
    Origin,
    /// `Host` names another host, or is missing.
    Host,
}

impl OriginRefusal {
    /// What the log says about a refused upgrade.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Origin => "its Origin is not allowed (see --allow-origin)",
            Self::Host => "its Host header names another host (DNS rebinding?)",
        }
    }

    /// The body of the 403 answer.
    pub(crate) fn body(self) -> &'static str {
        match self {
            Self::Origin => {
                "forbidden: this origin may not connect; start the host with \
                 --allow-origin <origin> to allow it\n"
            }
            Self::Host => {
                "forbidden: the Host header must name localhost, a loopback address or the \
                 address the host listens on\n"
            }
        }
    }
}

impl OriginPolicy {
    /// The policy of a host listening on `listen` that also allows `extra` origins.
    pub fn new(listen: IpAddr, extra: &[String]) -> Self {
        let mut allowed: Vec<String> = DEFAULT_ALLOWED_ORIGINS
            .iter()
            .map(|origin| (*origin).to_owned())
            .collect();
        allowed.extend(extra.iter().map(|origin| normalize(origin)));
        Self { allowed, listen }
    }

    /// Checks an upgrade's `Origin` (absent for non-browser clients) and `Host` headers.
    pub fn check(&self, origin: Option<&str>, host: Option<&str>) -> Result<(), OriginRefusal> {
        if let Some(origin) = origin {
            let origin = normalize(origin);
            if !self.allowed.contains(&origin) && !same_origin(&origin, host) {
                return Err(OriginRefusal::Origin);
            }
        }
        let name = host.map(host_name).ok_or(OriginRefusal::Host)?;
        if self.host_allowed(&name) {
            Ok(())
        } else {
            Err(OriginRefusal::Host)
        }
    }

    fn host_allowed(&self, name: &str) -> bool {
        if name == "localhost" {
            return true;
        }
        match name.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback() || ip == self.listen || self.listen.is_unspecified(),
            Err(_) => false,
        }
    }
}

/// Whether `origin` (normalised) is the page's own: `http://` or `https://` followed by exactly
/// the request's `Host` (host and port). The `Host` check that follows still applies, so a
/// rebinding name cannot pass as its own origin.
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let Some(host) = host.map(|host| host.trim().to_ascii_lowercase()) else {
        return false;
    };
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    !host.is_empty() && authority == Some(host.as_str())
}

/// An origin as compared: lower case, without a trailing `/`.
fn normalize(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// The host name of a `Host` header value, without its port, brackets or trailing dot, in
/// lower case: `[::1]:8080` → `::1`, `LocalHost.:1` → `localhost`.
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        match host.rsplit_once(':') {
            // More than one colon without brackets: an IPv6 address without a port.
            Some((name, _)) if !name.contains(':') => name,
            _ => host,
        }
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
#[path = "origin_tests.rs"]
mod tests;

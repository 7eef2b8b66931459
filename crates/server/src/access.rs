//! Who a connection is: the token it presented on the upgrade, by name, and what that token may
//! do ([`Scope`]).
//!
//! The server accepts its primary token (`serve --token`, or the generated one; named
//! [`PRIMARY_TOKEN_NAME`], scope `full`) and any number of named tokens
//! (`agent-host tokens add`), of which it keeps only a SHA-256 each. The named set is replaced
//! at run time ([`Credentials::replace_named`]); a connection whose token is gone from it (or
//! whose scope changed) is closed with code 1008 at once.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, RwLock};

use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::token::Token;

/// The name of the primary token in audit entries and logs.
pub const PRIMARY_TOKEN_NAME: &str = "serve";

/// What a token may do.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Everything.
    Full,
    /// Read only: subscribe, list, fetch turns, read resources. Every action and every command
    /// that changes something is refused.
    Observe,
    /// Only the session with this URI (and its chats), under either of its spellings
    /// (`ahp-session:/<id>` and `<provider>:/<id>`): the root channel and `listSessions` show no
    /// other session.
    Session(agenthost_protocol::SessionUri),
}

impl Scope {
    /// Whether this scope may change things.
    pub fn may_write(&self) -> bool {
        !matches!(self, Scope::Observe)
    }

    /// Whether this scope sees `session` (a session URI).
    pub fn sees_session(&self, session: &str) -> bool {
        match self {
            Scope::Full | Scope::Observe => true,
            Scope::Session(own) => same_session(own, session),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Full => f.write_str("full"),
            Scope::Observe => f.write_str("observe"),
            Scope::Session(uri) => write!(f, "session:{uri}"),
        }
    }
}

impl FromStr for Scope {
    type Err = String;

    /// `full`, `observe` or `session:<session URI>`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "full" => Ok(Scope::Full),
            "observe" => Ok(Scope::Observe),
            other => match other.strip_prefix("session:") {
                Some(uri) => agenthost_protocol::SessionUri::parse(uri)
                    .map(Scope::Session)
                    .map_err(|error| format!("scope {other:?}: {error}")),
                None => Err(format!(
                    "unknown scope {:?}: use full, observe or session:<session URI>",
                    agenthost_protocol::uri::snippet(other)
                )),
            },
        }
    }
}

/// The token a connection presented: its name and scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Grant {
    /// The token's name ([`PRIMARY_TOKEN_NAME`] for the primary token).
    pub name: String,
    /// What it may do.
    pub scope: Scope,
}

impl Grant {
    /// The primary token's grant: `full`.
    pub fn primary() -> Self {
        Self {
            name: PRIMARY_TOKEN_NAME.to_owned(),
            scope: Scope::Full,
        }
    }
}

/// A named token as the server keeps it: a hash, never the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedToken {
    /// [`token_hash`] of the token.
    pub hash: String,
    /// Its name and scope.
    pub grant: Grant,
}

/// The SHA-256 of a token, lower-case hex: what is stored and compared.
pub fn token_hash(token: &[u8]) -> String {
    let digest = Sha256::digest(token);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Every token the server accepts, replaceable while it serves.
#[derive(Debug)]
pub struct Credentials {
    primary: Token,
    named: RwLock<Arc<Vec<NamedToken>>>,
    generation: watch::Sender<u64>,
}

impl Credentials {
    /// Only the primary token.
    pub fn new(primary: Token) -> Self {
        Self {
            primary,
            named: RwLock::new(Arc::new(Vec::new())),
            generation: watch::channel(0).0,
        }
    }

    /// The primary token.
    pub fn primary(&self) -> &Token {
        &self.primary
    }

    /// Replaces the named tokens. Open connections whose token is no longer among them, or
    /// whose scope changed, are closed (code 1008) by their connection tasks.
    pub fn replace_named(&self, tokens: Vec<NamedToken>) {
        let changed = {
            let mut named = self.named.write().unwrap_or_else(|e| e.into_inner());
            let changed = **named != tokens;
            *named = Arc::new(tokens);
            changed
        };
        if changed {
            self.generation.send_modify(|generation| *generation += 1);
        }
    }

    fn named(&self) -> Arc<Vec<NamedToken>> {
        self.named.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The grant of a presented token, if it is one of ours (constant-time comparisons).
    pub fn grant_for(&self, presented: &[u8]) -> Option<Grant> {
        if self.primary.matches(presented) {
            return Some(Grant::primary());
        }
        let hash = token_hash(presented);
        let mut found = None;
        for token in self.named().iter() {
            if crate::auth::constant_time_eq(token.hash.as_bytes(), hash.as_bytes()) {
                found = Some(token.grant.clone());
            }
        }
        found
    }

    /// Whether `grant` is still granted (the primary token always is).
    pub fn still_granted(&self, grant: &Grant) -> bool {
        grant == &Grant::primary() || self.named().iter().any(|token| &token.grant == grant)
    }

    /// Changes whenever the named tokens change.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}

/// The requests an `observe` token may make: they read and change nothing.
pub const READ_METHODS: [&str; 12] = [
    "subscribe",
    "unsubscribe",
    "listSessions",
    "fetchTurns",
    "resourceList",
    "resourceResolve",
    "resourceRead",
    "resolveSessionConfig",
    "completions",
    "getNetworkDiagnosticsInfo",
    "getManagedSettingsDiagnostics",
    "x-checkpoint/diff",
];

/// Whether a root-channel notification `frame` concerns a session `scope` may see: a
/// `session:` token sees `root/sessionAdded`, `root/sessionRemoved` and
/// `root/sessionSummaryChanged` of its own session only.
pub(crate) fn frame_visible(scope: &Scope, frame: &str) -> bool {
    let Scope::Session(own) = scope else {
        return true;
    };
    if !frame.contains("\"root/session") {
        return true;
    }
    let Ok(value) = serde_json::from_str::<serde_json::Value>(frame) else {
        return false;
    };
    let params = &value["params"];
    let session = match value["method"].as_str() {
        Some("root/sessionAdded") => params["summary"]["resource"].as_str(),
        Some("root/sessionRemoved" | "root/sessionSummaryChanged") => params["session"].as_str(),
        _ => return true,
    };
    session.is_some_and(|session| same_session(own, session))
}

/// Whether `session` names the session `own` (see `SessionUri::same_session`); an unparsable
/// one names none.
fn same_session(own: &agenthost_protocol::SessionUri, session: &str) -> bool {
    agenthost_protocol::SessionUri::parse(session).is_ok_and(|session| own.same_session(&session))
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;

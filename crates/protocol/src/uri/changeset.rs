//! [`ChangesetUri`]: the changeset channels the host derives from a session — the session-wide
//! changeset and one per turn.
//!
//! Like derived chat URIs they embed the session URI as base64url (no padding), so a
//! subscription names its session without a lookup:
//!
//! - `ahp-changeset://session/<base64url(session URI)>` — everything the agent changed in the
//!   session (baseline → the newest turn checkpoint);
//! - `ahp-changeset://turn/<base64url(session URI)>/<percent-encoded turn id>` — one turn.
//!
//! [`ChangesetUri::turn_template`] is the RFC 6570 template a session advertises in its
//! changeset catalogue (`…/{turnId}`).

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::chat::decode_session;
use super::encoding::{check_uri_text, decode_id_segment, percent_encode};
use super::error::{UriError, snippet};
use super::id::SafeId;
use super::session::SessionUri;

const SESSION_PREFIX: &str = "ahp-changeset://session/";
const TURN_PREFIX: &str = "ahp-changeset://turn/";

/// Which changes a [`ChangesetUri`] names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChangesetScope {
    /// Everything the agent changed in the session.
    Session,
    /// What one turn changed.
    Turn(SafeId),
}

/// A changeset channel of a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChangesetUri {
    session: SessionUri,
    scope: ChangesetScope,
}

impl ChangesetUri {
    /// The session-wide changeset of `session`.
    pub fn session(session: &SessionUri) -> Self {
        Self {
            session: session.clone(),
            scope: ChangesetScope::Session,
        }
    }

    /// The changeset of turn `turn` of `session`.
    pub fn turn(session: &SessionUri, turn: &SafeId) -> Self {
        Self {
            session: session.clone(),
            scope: ChangesetScope::Turn(turn.clone()),
        }
    }

    /// The catalogue template of `session`'s per-turn changesets (`…/{turnId}`).
    pub fn turn_template(session: &SessionUri) -> String {
        format!(
            "{TURN_PREFIX}{}/{{turnId}}",
            URL_SAFE_NO_PAD.encode(session.as_str())
        )
    }

    /// Parses a URI this module formats; anything else is [`UriError::NotAChangesetUri`] (or
    /// the reason its embedded session or turn id is invalid).
    pub fn parse(input: &str) -> Result<Self, UriError> {
        check_uri_text(input)?;
        let not_ours = || UriError::NotAChangesetUri {
            input: snippet(input),
        };
        if let Some(payload) = input.strip_prefix(SESSION_PREFIX) {
            if payload.is_empty() || payload.contains('/') {
                return Err(not_ours());
            }
            let parsed = Self::session(&decode_session(input, payload)?);
            // One spelling per changeset here too: padding or `%3D` in the payload is refused.
            if parsed.to_string() != input {
                return Err(not_ours());
            }
            return Ok(parsed);
        }
        let rest = input.strip_prefix(TURN_PREFIX).ok_or_else(not_ours)?;
        let (payload, turn) = rest.split_once('/').ok_or_else(not_ours)?;
        if payload.is_empty() || turn.is_empty() || turn.contains('/') {
            return Err(not_ours());
        }
        let session = decode_session(input, payload)?;
        let turn = decode_id_segment(input, turn)?;
        let parsed = Self::turn(&session, &turn);
        // One spelling per changeset: padding or `%3D` in the payload is refused.
        if parsed.to_string() != input {
            return Err(not_ours());
        }
        Ok(parsed)
    }

    /// The session the changeset belongs to.
    pub fn session_uri(&self) -> &SessionUri {
        &self.session
    }

    /// Which changes it names.
    pub fn scope(&self) -> &ChangesetScope {
        &self.scope
    }
}

impl fmt::Display for ChangesetUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let session = URL_SAFE_NO_PAD.encode(self.session.as_str());
        match &self.scope {
            ChangesetScope::Session => write!(f, "{SESSION_PREFIX}{session}"),
            ChangesetScope::Turn(turn) => {
                write!(f, "{TURN_PREFIX}{session}/{}", percent_encode(turn))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> SessionUri {
        SessionUri::parse("ahp-session:/s%201").unwrap()
    }

    #[test]
    fn session_and_turn_changesets_round_trip() {
        let session = session();
        let whole = ChangesetUri::session(&session);
        assert_eq!(ChangesetUri::parse(&whole.to_string()).unwrap(), whole);
        let turn = ChangesetUri::turn(&session, &SafeId::new("turn/1 ü").unwrap());
        let text = turn.to_string();
        assert!(text.ends_with("/turn%2F1%20%C3%BC"), "{text}");
        let parsed = ChangesetUri::parse(&text).unwrap();
        assert_eq!(parsed, turn);
        assert_eq!(parsed.session_uri(), &session);
        assert_eq!(
            parsed.scope(),
            &ChangesetScope::Turn(SafeId::new("turn/1 ü").unwrap())
        );
    }

    #[test]
    fn the_template_expands_to_a_turn_changeset() {
        let session = session();
        let template = ChangesetUri::turn_template(&session);
        let expanded = template.replace("{turnId}", "t1");
        assert_eq!(
            ChangesetUri::parse(&expanded).unwrap(),
            ChangesetUri::turn(&session, &SafeId::new("t1").unwrap())
        );
    }

    #[test]
    fn other_uris_are_refused_with_a_reason() {
        for bad in [
            "ahp-changeset:/x",
            "ahp-changeset://session/",
            "ahp-changeset://session/a/b",
            "ahp-changeset://session/YWhwLXNlc3Npb246L3M%3D",
            "ahp-changeset://session/YWhwLXNlc3Npb246L3M=",
            "ahp-changeset://turn/abc",
            "ahp-changeset://turn/abc/",
            "ahp-chat://default/abc",
        ] {
            let error = ChangesetUri::parse(bad).unwrap_err();
            assert!(
                matches!(error, UriError::NotAChangesetUri { .. }),
                "{bad}: {error}"
            );
        }
        // A payload that is not a session URI names the session as the reason.
        assert!(ChangesetUri::parse("ahp-changeset://session/!!").is_err());
        let encoded = URL_SAFE_NO_PAD.encode("not a session");
        assert!(ChangesetUri::parse(&format!("ahp-changeset://session/{encoded}")).is_err());
    }
}

//! Records the host keeps about sessions, shared by the session database and the services
//! contract: [`TitleSource`] (who chose a title, so a user's choice survives a restart and is
//! never overwritten by a generated one) and [`AuditRecord`] (one entry of the audit log).

use std::fmt;
use std::str::FromStr;

/// Who chose a session's or chat's title. A user's title is never overwritten by a generated
/// one; the store records the source so the host can enforce that after a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TitleSource {
    /// The placeholder title the host gives a new session or chat.
    #[default]
    Default,
    /// A title generated from the conversation (by the agent or a contribution).
    Generated,
    /// A title the user set.
    User,
}

impl TitleSource {
    /// The spelling stored in the `title_source` columns.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Generated => "generated",
            Self::User => "user",
        }
    }
}

impl fmt::Display for TitleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `title_source` spelling that is none of `default`, `generated`, `user`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown title source `{0}` (expected default, generated or user)")]
pub struct UnknownTitleSource(pub String);

impl FromStr for TitleSource {
    type Err = UnknownTitleSource;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(Self::Default),
            "generated" => Ok(Self::Generated),
            "user" => Ok(Self::User),
            other => Err(UnknownTitleSource(other.to_owned())),
        }
    }
}

/// One decision a client made, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// When (RFC 3339).
    pub at: String,
    /// The name of the token the client connected with.
    pub token: String,
    /// The client id.
    pub client_id: String,
    /// The channel it acted on.
    pub channel: String,
    /// What it did (the action type or command).
    pub action: String,
    /// The rest, as compact JSON (the tool call, the answer, the turn).
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_reads_back_from_its_spelling_and_others_are_refused() {
        for source in [
            TitleSource::Default,
            TitleSource::Generated,
            TitleSource::User,
        ] {
            assert_eq!(source.as_str().parse::<TitleSource>(), Ok(source));
            assert_eq!(source.to_string(), source.as_str());
        }
        let error = "robot".parse::<TitleSource>().unwrap_err();
        assert_eq!(error, UnknownTitleSource("robot".to_owned()));
        assert!(error.to_string().contains("`robot`"), "{error}");
    }
}

//! Session namespaces and ref names: `refs/agents/<sanitized-session-id>/checkpoints/turn/<N>`.
//!
//! A session id becomes one ref component in two steps: [`sanitize_session_id`]
//! replaces every character outside `[A-Za-z0-9_.-]` with `-`, one for one; when the result
//! still breaks a git ref-name rule (empty, a leading `.`, a `.lock` suffix, `..`, a trailing
//! `.`), every `.` becomes `-` and `-<first 8 hex digits of SHA-256(raw id)>` is appended. Every
//! full name is then checked by [`validate_ref_name`] — this crate's reading of git's rules —
//! and by gix's own validator before it is used.

use std::fmt;

use agenthost_protocol::SessionUri;
use gix::bstr::ByteSlice;

use crate::error::CheckpointError;

/// Prefix of every ref this crate creates.
pub const REF_ROOT: &str = "refs/agents/";

/// The older integration's namespace (`refs/sessions/<id>/checkpoints/turn/<N>`).
pub const LEGACY_REF_ROOT: &str = "refs/sessions/";

/// The ref namespace of one session: `refs/agents/<sanitized-id>/checkpoints/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionNamespace {
    raw: String,
    sanitized: String,
}

impl SessionNamespace {
    /// The namespace of `session`: its raw id is the URI's path without the leading `/`.
    pub fn for_session(session: &SessionUri) -> Result<Self, CheckpointError> {
        Self::from_raw_id(session.id().as_str())
    }

    /// The namespace of a raw session id. Empty ids are refused.
    pub fn from_raw_id(raw: &str) -> Result<Self, CheckpointError> {
        if raw.is_empty() {
            return Err(CheckpointError::EmptySessionId);
        }
        let sanitized = session_ref_component(raw);
        let namespace = Self {
            raw: raw.to_owned(),
            sanitized,
        };
        // Every name we will build shares this shape; check the two extremes once here so a
        // broken namespace is refused before any work.
        namespace.checked(namespace.turn_ref_unchecked(0))?;
        namespace.checked(namespace.prefix().trim_end_matches('/').to_owned())?;
        Ok(namespace)
    }

    /// The raw session id.
    pub fn raw_id(&self) -> &str {
        &self.raw
    }

    /// The sanitized (and, when needed, repaired) id: one valid ref component.
    pub fn sanitized_id(&self) -> &str {
        &self.sanitized
    }

    /// `refs/agents/<sid>/checkpoints/`: every ref of the session starts with this.
    pub fn prefix(&self) -> String {
        format!("{REF_ROOT}{}/checkpoints/", self.sanitized)
    }

    /// `refs/agents/<sid>/checkpoints/turn/<n>`, validated.
    pub fn turn_ref(&self, n: u64) -> Result<String, CheckpointError> {
        self.checked(self.turn_ref_unchecked(n))
    }

    /// The baseline ref, `…/turn/0`.
    pub fn baseline_ref(&self) -> Result<String, CheckpointError> {
        self.turn_ref(0)
    }

    /// Whether `name` lies inside this session's namespace.
    pub fn owns(&self, name: &str) -> bool {
        name.starts_with(&self.prefix())
    }

    /// The commit message prefix `Agent host session <sid>`.
    pub(crate) fn message_prefix(&self) -> String {
        format!("Agent host session {}", self.sanitized)
    }

    fn turn_ref_unchecked(&self, n: u64) -> String {
        format!("{}turn/{n}", self.prefix())
    }

    fn checked(&self, name: String) -> Result<String, CheckpointError> {
        validate_ref_name(&name).map_err(|rule| CheckpointError::InvalidRefName {
            name: name.clone(),
            reason: rule.to_string(),
        })?;
        gix::validate::reference::name(name.as_bytes().as_bstr()).map_err(|error| {
            CheckpointError::InvalidRefName {
                name: name.clone(),
                reason: error.to_string(),
            }
        })?;
        Ok(name)
    }
}

/// The turn number after the last `/` of a checkpoint ref name, if it is one.
pub fn turn_number(ref_name: &str) -> Option<u64> {
    let (_, last) = ref_name.rsplit_once('/')?;
    if last.is_empty() || !last.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    last.parse().ok()
}

/// Replaces every character outside `[A-Za-z0-9_.-]` with `-`, one for one (VS Code's rule).
pub fn sanitize_session_id(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The single ref component for a raw session id: sanitized, and repaired deterministically when
/// the sanitized form still breaks one of git's ref-name rules.
pub fn session_ref_component(raw: &str) -> String {
    let sanitized = sanitize_session_id(raw);
    if validate_component(&sanitized).is_ok() {
        return sanitized;
    }
    let mut repaired = sanitized.replace('.', "-");
    repaired.push('-');
    repaired.push_str(&sha256_hex8(raw.as_bytes()));
    repaired
}

/// The first 8 hex digits of the SHA-256 of `bytes`.
fn sha256_hex8(bytes: &[u8]) -> String {
    let mut hasher = gix::hash::hasher(gix::hash::Kind::Sha256);
    hasher.update(bytes);
    match hasher.try_finalize() {
        Ok(id) => id.to_hex_with_len(8).to_string(),
        // SHA-256 cannot fail; keep the suffix deterministic even so.
        Err(_) => "00000000".to_owned(),
    }
}

/// A git ref-name rule that a name breaks (one of git's seven rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefNameRule {
    /// Rule 1: a component is empty (leading or trailing `/`, `//`, or an empty name).
    EmptyComponent,
    /// Rule 2: a component starts with `.`.
    ComponentStartsWithDot,
    /// Rule 3: a component ends with `.lock`.
    ComponentEndsWithLock,
    /// Rule 4: the name contains `..`.
    DoubleDot,
    /// Rule 5: the name ends with `.`.
    EndsWithDot,
    /// Rule 6: a control character, space, `~`, `^`, `:`, `?`, `*`, `[` or `\`.
    ForbiddenCharacter,
    /// Rule 7: `@{`, or the name is `@`.
    AtBrace,
}

impl fmt::Display for RefNameRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::EmptyComponent => "a component is empty",
            Self::ComponentStartsWithDot => "a component starts with `.`",
            Self::ComponentEndsWithLock => "a component ends with `.lock`",
            Self::DoubleDot => "the name contains `..`",
            Self::EndsWithDot => "the name ends with `.`",
            Self::ForbiddenCharacter => {
                "the name contains a control character, space, `~`, `^`, `:`, `?`, `*`, `[` or `\\`"
            }
            Self::AtBrace => "the name contains `@{` or is `@`",
        })
    }
}

/// Checks a full ref name against git's seven ref-name rules.
pub fn validate_ref_name(name: &str) -> Result<(), RefNameRule> {
    if name == "@" || name.contains("@{") {
        return Err(RefNameRule::AtBrace);
    }
    if name.chars().any(|c| {
        c.is_ascii_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\')
    }) {
        return Err(RefNameRule::ForbiddenCharacter);
    }
    if name.contains("..") {
        return Err(RefNameRule::DoubleDot);
    }
    if name.ends_with('.') {
        return Err(RefNameRule::EndsWithDot);
    }
    for component in name.split('/') {
        if component.is_empty() {
            return Err(RefNameRule::EmptyComponent);
        }
        if component.starts_with('.') {
            return Err(RefNameRule::ComponentStartsWithDot);
        }
        if component.ends_with(".lock") {
            return Err(RefNameRule::ComponentEndsWithLock);
        }
    }
    Ok(())
}

/// Checks one component (no `/` allowed) against the same rules.
fn validate_component(component: &str) -> Result<(), RefNameRule> {
    if component.contains('/') {
        return Err(RefNameRule::EmptyComponent);
    }
    validate_ref_name(component)
}

#[cfg(test)]
#[path = "refname_tests.rs"]
mod tests;

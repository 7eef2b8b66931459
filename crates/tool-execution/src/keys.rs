//! Claim keys, claim scopes and claimants.
//!
//! Per-tool-call state is keyed on [`ToolCallKey`], per-input state on [`InputKey`]; entry ids are
//! a separate key space used only for per-entry state (timer, generation). The two never mix.

use std::fmt;
use std::sync::Arc;

use agenthost_protocol::Uri;
use agenthost_protocol::ids::{InputKey, ToolCallKey};

/// What an observer claims: one tool call (every phase of it) or one input request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClaimKey {
    /// A tool call, across its confirmation, execution and authentication entries.
    ToolCall(ToolCallKey),
    /// An input request (`chatInput` entry).
    Input(InputKey),
}

impl ClaimKey {
    /// The chat that owns the obligation.
    pub fn chat(&self) -> &Uri {
        match self {
            Self::ToolCall(key) => &key.chat,
            Self::Input(key) => &key.chat,
        }
    }
}

impl From<ToolCallKey> for ClaimKey {
    fn from(key: ToolCallKey) -> Self {
        Self::ToolCall(key)
    }
}

impl From<InputKey> for ClaimKey {
    fn from(key: InputKey) -> Self {
        Self::Input(key)
    }
}

impl fmt::Display for ClaimKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ToolCall(key) => write!(f, "tool call {key}"),
            Self::Input(key) => write!(f, "input {key}"),
        }
    }
}

/// What one claim covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClaimScope {
    /// Exactly one obligation: what a client view claims for a tool call or input it renders.
    Key(ClaimKey),
    /// Every obligation of a chat: what a live subscription to that chat means on the host. It
    /// also covers the tool-call obligations of the chat's subagent chats (transitively); whether
    /// it covers their input requests is [`EngineConfig::parent_claims_subagent_inputs`].
    ///
    /// [`EngineConfig::parent_claims_subagent_inputs`]: crate::EngineConfig::parent_claims_subagent_inputs
    Chat(Uri),
}

/// The identity of a claiming observer (a view, a connection). It becomes the execution context
/// of a claimed run. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Claimant(Arc<str>);

impl Claimant {
    /// A claimant named `id`.
    pub fn new(id: impl AsRef<str>) -> Self {
        Self(Arc::from(id.as_ref()))
    }

    /// The claimant's id.
    pub fn id(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Claimant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Claimant({:?})", &*self.0)
    }
}

impl fmt::Display for Claimant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The id of one live claim. Ids grow monotonically, so the smallest id among the live claims
/// of an obligation is its oldest claimant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClaimId(pub(crate) u64);

impl ClaimId {
    /// The raw number (for logs).
    pub fn get(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;

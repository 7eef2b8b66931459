//! [`ResumeHandles`]: where the host reads an agent conversation's resume handle to persist it.

use serde_json::Value;

/// Where the recorder reads an agent's current resume handle: the orchestrator, which owns the
/// provider conversations.
pub trait ResumeHandles: Send + Sync + std::fmt::Debug {
    /// The handle to resume `chat`'s conversation, or `None` to leave the stored one as it is
    /// (no live conversation, or an agent that cannot resume).
    fn resume_handle(&self, chat: &str) -> Option<Value>;
}

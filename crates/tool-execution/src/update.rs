//! What the engine consumes: the session's `inputNeeded` list, as snapshots or as the two
//! server actions that maintain it, plus the chat catalog's subagent ancestry.

use agenthost_protocol::ahp_types::state::{ChatOrigin, SessionInputRequest, SessionState};
use agenthost_protocol::ids::ToolCallKey;
use agenthost_protocol::{ActionEnvelope, StateAction, Uri};

/// One change of a session's `inputNeeded` list.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionUpdate {
    /// The whole current list (a snapshot on (re)subscription, or simply the latest list).
    /// Entries not in it are removed; structurally equal entries change nothing.
    Snapshot(Vec<SessionInputRequest>),
    /// `session/inputNeededSet`: upsert by id.
    Set(Box<SessionInputRequest>),
    /// `session/inputNeededRemoved`: remove by id (a no-op when absent).
    Removed(String),
}

impl SessionUpdate {
    /// The update a state action carries, if it is `session/inputNeededSet` or
    /// `session/inputNeededRemoved`.
    pub fn from_action(action: &StateAction) -> Option<Self> {
        match action {
            StateAction::SessionInputNeededSet(a) => Some(Self::set(a.request.clone())),
            StateAction::SessionInputNeededRemoved(a) => Some(Self::Removed(a.id.clone())),
            _ => None,
        }
    }

    /// `Set` of one entry.
    pub fn set(entry: SessionInputRequest) -> Self {
        Self::Set(Box::new(entry))
    }

    /// `Removed` of one id.
    pub fn removed(id: impl Into<String>) -> Self {
        Self::Removed(id.into())
    }

    /// The snapshot of a session state's list (absent means empty).
    pub fn from_state(state: &SessionState) -> Self {
        Self::Snapshot(state.input_needed.clone().unwrap_or_default())
    }
}

/// What one envelope of a session's stream means to the engine.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EnvelopeMeaning {
    /// A change of the list.
    Queue(SessionUpdate),
    /// The chat catalog says `chat` was spawned by `parent` (or no longer is).
    Parent { chat: Uri, parent: Option<Uri> },
    /// A remote outcome ending a tool call before its body ran (skipped or denied by someone,
    /// or completed with `cancelled`).
    RemoteEnd(ToolCallKey),
    /// Nothing the engine needs.
    Irrelevant,
}

/// The parent chat a chat origin names (`tool` origins only: a subagent chat).
pub(crate) fn parent_of(origin: Option<&ChatOrigin>) -> Option<Uri> {
    match origin {
        Some(ChatOrigin::Tool { chat, .. }) => Some(chat.clone()),
        _ => None,
    }
}

/// Interprets one envelope. Rejected client actions (echoes with a `rejectionReason`) never
/// changed state and are irrelevant.
pub(crate) fn interpret(envelope: &ActionEnvelope) -> EnvelopeMeaning {
    if envelope.rejection_reason.is_some() {
        return EnvelopeMeaning::Irrelevant;
    }
    if let Some(update) = SessionUpdate::from_action(&envelope.action) {
        return EnvelopeMeaning::Queue(update);
    }
    let chat = &envelope.channel;
    match &envelope.action {
        StateAction::SessionChatAdded(a) => EnvelopeMeaning::Parent {
            chat: a.summary.resource.clone(),
            parent: parent_of(a.summary.origin.as_ref()),
        },
        StateAction::SessionChatUpdated(a) => match &a.changes.origin {
            Some(origin) => EnvelopeMeaning::Parent {
                chat: a.chat.clone(),
                parent: parent_of(Some(origin)),
            },
            None => EnvelopeMeaning::Irrelevant,
        },
        StateAction::SessionChatRemoved(a) => EnvelopeMeaning::Parent {
            chat: a.chat.clone(),
            parent: None,
        },
        action => match ended_call(chat, action) {
            Some(key) => EnvelopeMeaning::RemoteEnd(key),
            None => EnvelopeMeaning::Irrelevant,
        },
    }
}

/// The tool call an action ends before it runs: a denial or skip
/// (`chat/toolCallConfirmed { approved: false }`) or a cancelled completion.
pub(crate) fn ended_call(chat: &Uri, action: &StateAction) -> Option<ToolCallKey> {
    match action {
        StateAction::ChatToolCallConfirmed(a) if !a.approved => {
            Some(ToolCallKey::new(chat.clone(), &a.turn_id, &a.tool_call_id))
        }
        StateAction::ChatToolCallComplete(a)
            if !a.result.success
                && crate::answers::error_code(&a.result) == Some(crate::answers::CANCELLED) =>
        {
            Some(ToolCallKey::new(chat.clone(), &a.turn_id, &a.tool_call_id))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;

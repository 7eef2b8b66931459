//! Constructors of fresh channel states.

use agenthost_protocol::ahp_types::state::{ChatOrigin, ChatState, SessionStatus};

/// A chat with no turns: idle, modified at `modified_at`, with an optional origin (a subagent
/// chat's origin is the tool call that spawned it).
pub fn empty_chat(
    uri: &str,
    title: &str,
    modified_at: &str,
    origin: Option<ChatOrigin>,
) -> ChatState {
    ChatState {
        resource: uri.to_owned(),
        title: title.to_owned(),
        status: SessionStatus::Idle.bits(),
        activity: None,
        modified_at: modified_at.to_owned(),
        changes: None,
        origin,
        movable: None,
        interactivity: None,
        working_directories: None,
        changesets: None,
        background_work: None,
        canvases: None,
        turns: Vec::new(),
        turns_next_cursor: None,
        active_turn: None,
        steering_message: None,
        queued_messages: None,
        draft: None,
        meta: None,
    }
}

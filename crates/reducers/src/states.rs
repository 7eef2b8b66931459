//! Constructors of fresh channel states.

use agenthost_protocol::StateAction;
use agenthost_protocol::actions::ChatErrorAction;
use agenthost_protocol::ahp_types::state::{
    ActiveTurn, ChatOrigin, ChatState, ErrorResponsePart, SessionStatus, Turn,
};

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

/// The start used for a turn whose own start cannot be read.
pub(crate) const EPOCH: &str = "1970-01-01T00:00:00.000Z";

/// The finished form of `active` ending in the error `part`, exactly as the canonical reducer
/// ends a turn on `chat/error`: tool calls still in flight become cancelled (`skipped`), the
/// error part comes last, the state is `error`. The duration is unknown (`None`).
pub fn errored_turn(active: ActiveTurn, part: ErrorResponsePart) -> Turn {
    let turn_id = active.id.clone();
    let started_at = active.started_at.clone();
    let mut chat = empty_chat("", "", EPOCH, None);
    // The reducer derives an end time from the start: a fixed, valid start keeps a stored start
    // it cannot read from making it refuse; the real one is put back below.
    chat.active_turn = Some(ActiveTurn {
        started_at: EPOCH.to_owned(),
        ..active.clone()
    });
    let end = StateAction::ChatError(ChatErrorAction {
        turn_id,
        duration: 0,
        part: part.clone(),
        meta: None,
    });
    ahp::reducers::apply_action_to_chat(&mut chat, &end);
    match chat.turns.pop() {
        Some(mut turn) => {
            turn.duration = None;
            turn.started_at = Some(started_at);
            turn
        }
        // Not reached with the canonical reducer (the start is valid, the turn active): the
        // same shape by hand, every part kept as it was.
        None => {
            let mut parts = active.response_parts;
            parts.push(agenthost_protocol::ahp_types::state::ResponsePart::Error(
                part,
            ));
            Turn {
                id: active.id,
                started_at: Some(active.started_at),
                duration: None,
                message: active.message,
                response_parts: parts,
                usage: active.usage,
                state: agenthost_protocol::ahp_types::state::TurnState::Error,
            }
        }
    }
}

#[cfg(test)]
#[path = "states_tests.rs"]
mod tests;

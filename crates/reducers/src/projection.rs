//! Derived projections: views of chat state the host publishes through ordinary server actions.
//!
//! Every function here is pure and recomputes its result from current state, so a projection is
//! a set to be re-read at any time, never an event stream that can be missed. Applying the actions
//! a projection returns and projecting again yields nothing (idempotence).

use std::collections::HashMap;

use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::actions::{
    PartialChatSummary, SessionInputNeededRemovedAction, SessionInputNeededSetAction,
};
use agenthost_protocol::ahp_types::state::{
    ChatState, ChatSummary, ResponsePart, SessionChatInputRequest, SessionInputRequest,
    SessionState, SessionStatus, SessionToolAuthenticationRequest,
    SessionToolClientExecutionRequest, SessionToolConfirmationRequest, ToolCallConfirmationState,
    ToolCallContributor, ToolCallState,
};
use agenthost_protocol::ids::ToolCallKey;

use crate::host_state::HostState;
use crate::validation::tool_call_id_of;

/// The `_meta` key a provider sets on a `pending-confirmation` tool call that the host will
/// approve by a session setting: no confirmation entry is published for it.
pub const AUTO_APPROVE_BY_SETTING_META: &str = "autoApproveBySetting";

/// Id of a `chatInput` entry: `chatInput:<chat>:<requestId>`.
pub fn chat_input_id(chat: &str, request_id: &str) -> String {
    format!("chatInput:{chat}:{request_id}")
}

/// Id of a `toolConfirmation` entry: `toolConfirmation:<chat>:<turn>:<toolCallId>`.
pub fn tool_confirmation_id(key: &ToolCallKey) -> String {
    tool_entry_id("toolConfirmation", key)
}

/// Id of a `toolClientExecution` entry: `toolClientExecution:<chat>:<turn>:<toolCallId>`.
pub fn tool_client_execution_id(key: &ToolCallKey) -> String {
    tool_entry_id("toolClientExecution", key)
}

/// Id of a `toolAuthentication` entry: `toolAuthentication:<chat>:<turn>:<toolCallId>`.
pub fn tool_authentication_id(key: &ToolCallKey) -> String {
    tool_entry_id("toolAuthentication", key)
}

fn tool_entry_id(kind: &str, key: &ToolCallKey) -> String {
    format!("{kind}:{}:{}:{}", key.chat, key.turn_id, key.tool_call_id)
}

/// The `id` of any entry (unknown kinds included, when they carry a string id).
pub fn entry_id(entry: &SessionInputRequest) -> Option<&str> {
    Some(match entry {
        SessionInputRequest::ChatInput(e) => &e.id,
        SessionInputRequest::ToolConfirmation(e) => &e.id,
        SessionInputRequest::ToolClientExecution(e) => &e.id,
        SessionInputRequest::ToolAuthentication(e) => &e.id,
        SessionInputRequest::Unknown(v) => return v.get("id").and_then(|id| id.as_str()),
    })
}

/// The chat an entry belongs to (unknown kinds included, when they carry a string `chat`).
pub fn entry_chat(entry: &SessionInputRequest) -> Option<&str> {
    Some(match entry {
        SessionInputRequest::ChatInput(e) => &e.chat,
        SessionInputRequest::ToolConfirmation(e) => &e.chat,
        SessionInputRequest::ToolClientExecution(e) => &e.chat,
        SessionInputRequest::ToolAuthentication(e) => &e.chat,
        SessionInputRequest::Unknown(v) => return v.get("chat").and_then(|chat| chat.as_str()),
    })
}

/// Whether an entry waits for a user. Client execution is work delegated to a client, not a
/// prompt: it never makes a session "input needed" (AHP §4.8).
pub fn is_user_blocking(entry: &SessionInputRequest) -> bool {
    !matches!(entry, SessionInputRequest::ToolClientExecution(_))
}

/// The entries one chat should have in its session's `inputNeeded` list, in response-part order.
///
/// Only the active turn can block: a turn end forces every tool call terminal, and open input
/// parts left in a finished turn are no longer answerable.
pub fn desired_input_needed(chat_uri: &str, chat: &ChatState) -> Vec<SessionInputRequest> {
    let Some(turn) = &chat.active_turn else {
        return Vec::new();
    };
    turn.response_parts
        .iter()
        .filter_map(|part| match part {
            ResponsePart::InputRequest(input) if input.response.is_none() => {
                Some(SessionInputRequest::ChatInput(SessionChatInputRequest {
                    id: chat_input_id(chat_uri, &input.request.id),
                    chat: chat_uri.to_owned(),
                    request: input.request.clone(),
                }))
            }
            ResponsePart::ToolCall(part) => tool_call_entry(chat_uri, &turn.id, &part.tool_call),
            _ => None,
        })
        .collect()
}

fn tool_call_entry(
    chat_uri: &str,
    turn_id: &str,
    state: &ToolCallState,
) -> Option<SessionInputRequest> {
    let key = ToolCallKey::new(chat_uri, turn_id, tool_call_id_of(state)?);
    let entry = match state {
        ToolCallState::PendingConfirmation(s) => {
            let auto_approved = s
                .meta
                .as_ref()
                .and_then(|m| m.get(AUTO_APPROVE_BY_SETTING_META))
                .and_then(serde_json::Value::as_bool)
                == Some(true);
            if auto_approved {
                return None;
            }
            SessionInputRequest::ToolConfirmation(SessionToolConfirmationRequest {
                id: tool_confirmation_id(&key),
                chat: key.chat,
                turn_id: key.turn_id,
                tool_call: ToolCallConfirmationState::PendingConfirmation(s.clone()),
            })
        }
        ToolCallState::PendingResultConfirmation(s) => {
            SessionInputRequest::ToolConfirmation(SessionToolConfirmationRequest {
                id: tool_confirmation_id(&key),
                chat: key.chat,
                turn_id: key.turn_id,
                tool_call: ToolCallConfirmationState::PendingResultConfirmation(s.clone()),
            })
        }
        ToolCallState::Running(s) => {
            let Some(ToolCallContributor::Client(client)) = &s.contributor else {
                return None;
            };
            SessionInputRequest::ToolClientExecution(SessionToolClientExecutionRequest {
                id: tool_client_execution_id(&key),
                chat: key.chat,
                turn_id: key.turn_id,
                client_id: client.client_id.clone(),
                tool_call: s.clone(),
            })
        }
        ToolCallState::AuthRequired(s) => {
            SessionInputRequest::ToolAuthentication(Box::new(SessionToolAuthenticationRequest {
                id: tool_authentication_id(&key),
                chat: key.chat,
                turn_id: key.turn_id,
                tool_call: (**s).clone(),
            }))
        }
        _ => return None,
    };
    Some(entry)
}

/// The desired `inputNeeded` list of a session: the union over its chats (subagent chats
/// included), in chat insertion order.
pub fn desired_session_input_needed(host: &HostState, session: &str) -> Vec<SessionInputRequest> {
    host.session_chats(session)
        .flat_map(|(uri, chat)| desired_input_needed(uri, chat))
        .collect()
}

/// The minimal actions that turn `current` into `desired`: every removal first, then an upsert
/// for each entry that is new or changed. Removing first means a call's confirmation entry is
/// gone before its client-execution entry appears; structurally equal entries are skipped.
pub fn diff_input_needed(
    current: &[SessionInputRequest],
    desired: &[SessionInputRequest],
) -> Vec<StateAction> {
    let desired_ids: HashMap<&str, &SessionInputRequest> = desired
        .iter()
        .filter_map(|e| entry_id(e).map(|id| (id, e)))
        .collect();
    let current_ids: HashMap<&str, &SessionInputRequest> = current
        .iter()
        .filter_map(|e| entry_id(e).map(|id| (id, e)))
        .collect();
    let removals = current
        .iter()
        .filter_map(entry_id)
        .filter(|id| !desired_ids.contains_key(id))
        .map(|id| {
            StateAction::SessionInputNeededRemoved(SessionInputNeededRemovedAction {
                id: id.to_owned(),
            })
        });
    let upserts = desired
        .iter()
        .filter(|entry| entry_id(entry).is_some_and(|id| current_ids.get(id) != Some(entry)))
        .map(|entry| {
            StateAction::SessionInputNeededSet(Box::new(SessionInputNeededSetAction {
                request: entry.clone(),
            }))
        });
    removals.chain(upserts).collect()
}

/// The actions that bring a session's `inputNeeded` list to the union over its chats. Empty when
/// the session is unknown or already in sync.
pub fn sync_session_input_needed(host: &HostState, session: &str) -> Vec<StateAction> {
    let Some(state) = host.session(session) else {
        return Vec::new();
    };
    let current = state.input_needed.as_deref().unwrap_or_default();
    diff_input_needed(current, &desired_session_input_needed(host, session))
}

/// The catalog entry of a chat as its state says it should read.
pub fn chat_summary(chat: &ChatState) -> ChatSummary {
    ChatSummary {
        resource: chat.resource.clone(),
        title: chat.title.clone(),
        status: chat.status,
        activity: chat.activity.clone(),
        modified_at: chat.modified_at.clone(),
        changes: chat.changes.clone(),
        origin: chat.origin.clone(),
        movable: chat.movable,
        interactivity: chat.interactivity,
        working_directories: chat.working_directories.clone(),
    }
}

/// The partial summary for `session/chatUpdated` that brings `published` up to `chat`; `None`
/// when nothing changed. The wire format merges present fields, so a field that became absent
/// (activity cleared, say) cannot be expressed as a change and is left out.
pub fn chat_summary_changes(
    published: &ChatSummary,
    chat: &ChatState,
) -> Option<PartialChatSummary> {
    fn changed<T: PartialEq + Clone>(old: &T, new: &T) -> Option<T> {
        (old != new).then(|| new.clone())
    }
    fn changed_opt<T: PartialEq + Clone>(old: &Option<T>, new: &Option<T>) -> Option<T> {
        match new {
            Some(value) if old.as_ref() != Some(value) => Some(value.clone()),
            _ => None,
        }
    }
    let changes = PartialChatSummary {
        resource: None,
        title: changed(&published.title, &chat.title),
        status: changed(&published.status, &chat.status),
        activity: changed_opt(&published.activity, &chat.activity),
        modified_at: changed(&published.modified_at, &chat.modified_at),
        changes: changed_opt(&published.changes, &chat.changes),
        origin: changed_opt(&published.origin, &chat.origin),
        movable: changed_opt(&published.movable, &chat.movable),
        interactivity: changed_opt(&published.interactivity, &chat.interactivity),
        working_directories: changed_opt(&published.working_directories, &chat.working_directories),
    };
    let empty = PartialChatSummary {
        resource: None,
        title: None,
        status: None,
        activity: None,
        modified_at: None,
        changes: None,
        origin: None,
        movable: None,
        interactivity: None,
        working_directories: None,
    };
    (changes != empty).then_some(changes)
}

const ACTIVITY_MASK: u32 = 31;

/// What the root catalog shows for a session (AHP §4.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryAggregate {
    /// Aggregated status bits.
    pub status: u32,
    /// Latest `modifiedAt` over the chats; `None` without chats.
    pub modified_at: Option<String>,
}

/// Aggregates a session's summary status: activity bits from the default chat, else the most
/// recently modified chat; `InputNeeded` promoted when any chat or any user-blocking
/// `inputNeeded` entry waits for the user (client execution does not); `Error` promoted when any
/// chat errored; the session's own read/archived flags (and unknown bits) kept.
///
/// `modifiedAt` strings are compared as text: the wire format (ISO-8601, UTC, milliseconds) sorts
/// lexically.
pub fn aggregate_session_status<'a>(
    session: &SessionState,
    chats: impl IntoIterator<Item = (&'a str, &'a ChatState)>,
) -> SummaryAggregate {
    let chats: Vec<(&str, &ChatState)> = chats.into_iter().collect();
    let latest = chats
        .iter()
        .max_by(|a, b| a.1.modified_at.cmp(&b.1.modified_at));
    let leader = session
        .default_chat
        .as_deref()
        .and_then(|d| chats.iter().find(|(uri, _)| *uri == d))
        .or(latest);
    let mut activity = match leader {
        Some((_, chat)) => chat.status & ACTIVITY_MASK,
        None => session.status & ACTIVITY_MASK,
    };
    let error = SessionStatus::Error.bits();
    let input_needed = SessionStatus::InputNeeded.bits();
    if chats.iter().any(|(_, c)| c.status & error != 0) {
        activity |= error;
    }
    let chat_needs_input = chats
        .iter()
        .any(|(_, c)| c.status & input_needed == input_needed);
    let entry_needs_input = session.input_needed.iter().flatten().any(is_user_blocking);
    if chat_needs_input || entry_needs_input {
        activity |= input_needed;
    }
    if activity & (error | SessionStatus::InProgress.bits()) != 0 {
        activity &= !SessionStatus::Idle.bits();
    }
    SummaryAggregate {
        status: activity | (session.status & !ACTIVITY_MASK),
        modified_at: latest.map(|(_, c)| c.modified_at.clone()),
    }
}

#[cfg(test)]
#[path = "projection_tests.rs"]
mod tests;

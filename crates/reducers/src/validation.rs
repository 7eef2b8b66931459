//! Validation of client-dispatched actions (AHP §6) and the host invariants of server actions.
//!
//! The canonical reducers treat most violations as silent no-ops. A host must instead *reject*
//! them, echoing the action with a human-readable `rejectionReason`, so the dispatching client
//! drops its optimistic copy. Every rule here runs before the reducer and reads state only.

use std::fmt;

use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::actions::{
    ChatInputAnswerChangedAction, ChatInputCompletedAction, SessionConfigChangedAction,
    SessionDefaultChatChangedAction,
};
use agenthost_protocol::ahp_types::state::{
    ChatInputResponseKind, ChatState, MessageKind, PendingMessageKind, ResponsePart, SessionState,
    ToolCallContributor, ToolCallState, TurnState,
};
use agenthost_protocol::uri::{SafeId, snippet};

use crate::host_state::ChannelKind;

mod answers;

pub use answers::question_id_of;

/// A refused action; its [`Display`](fmt::Display) is the envelope's `rejectionReason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    reason: RejectionReason,
}

impl Rejection {
    pub(crate) fn new(reason: RejectionReason) -> Self {
        Self { reason }
    }

    /// Why the action was refused.
    pub fn reason(&self) -> &RejectionReason {
        &self.reason
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.reason.fmt(f)
    }
}

impl std::error::Error for Rejection {}

/// Every reason an action can be refused for. The `Display` text is written for the person
/// reading a client's log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectionReason {
    /// Server-only action types (and unknown ones) cannot be dispatched by a client.
    NotClientDispatchable {
        /// The action's `type`.
        action: String,
    },
    /// The action belongs to another kind of channel.
    WrongChannel {
        /// The action's `type`.
        action: String,
        /// The kind of channel it was dispatched on.
        channel: ChannelKind,
    },
    /// `chat/toolCallConfirmed` for a call not in `pending-confirmation`.
    ToolCallNotAwaitingConfirmation,
    /// `chat/toolCallResultConfirmed` for a call not in `pending-result-confirmation`.
    ToolCallNotAwaitingResultConfirmation,
    /// A tool action naming a call that is not in the active turn.
    UnknownToolCall {
        /// The tool call id named.
        tool_call_id: String,
    },
    /// A client completed or streamed content for a tool it does not own.
    NotOwningClient,
    /// `chat/turnCancelled` without an active turn of that id.
    NoActiveTurnToCancel,
    /// `chat/turnStarted` while a turn is active; queued work goes through `pendingMessageSet`.
    TurnInProgress,
    /// `chat/turnResume` of a turn that is not the last, errored, resumable turn.
    TurnNotResumable,
    /// `chat/workingDirectorySet` outside the session's working directories.
    DirectoryNotInSession {
        /// The directory named.
        directory: String,
    },
    /// An input action naming a request that does not exist or is already answered.
    UnknownInputRequest {
        /// The request id named.
        request_id: String,
    },
    /// An answer for a question the request does not ask.
    UnknownQuestion {
        /// The question id named.
        question_id: String,
    },
    /// An answer whose value does not fit its question.
    MalformedAnswer {
        /// The question answered.
        question_id: String,
        /// What is wrong with it.
        problem: String,
    },
    /// `chat/inputCompleted` with `accept` lacking a submitted answer to a required question.
    MissingRequiredAnswer {
        /// The required question.
        question_id: String,
    },
    /// `chat/pendingMessageRemoved` naming no pending message.
    UnknownPendingMessage {
        /// The id named.
        id: String,
    },
    /// A client sent a message whose origin is not `user`.
    UserMessagesOnly,
    /// `session/defaultChatChanged` pointing at a chat that is not in the catalog.
    DefaultChatNotInCatalog {
        /// The chat named.
        chat: String,
    },
    /// `session/configChanged` on a key the schema does not list.
    UnknownConfigProperty {
        /// The key.
        property: String,
    },
    /// `session/configChanged` on a key that is not `sessionMutable`.
    NotSessionMutable {
        /// The key.
        property: String,
    },
    /// `session/activeClientSet` / `…Removed` naming another client than the dispatcher.
    ClientIdMismatch {
        /// The dispatching connection's client id.
        dispatcher: String,
        /// The client id in the action.
        named: String,
    },
    /// A client-supplied timestamp that is not an RFC 3339 instant the host can compute with
    /// (a turn's end is derived from its start).
    InvalidTimestamp {
        /// The field.
        field: &'static str,
        /// The value (truncated).
        value: String,
    },
    /// A client-supplied id that cannot name anything safely (empty, too long, control
    /// characters, `.` or `..`).
    InvalidId {
        /// The field.
        field: &'static str,
        /// Why.
        problem: String,
    },
    /// The canonical reducer found the data malformed (e.g. an unparseable timestamp).
    Invalid(String),
}

impl RejectionReason {
    /// A copy whose client-supplied strings are cut to a quotable length.
    fn clipped(&self) -> Self {
        let mut copy = self.clone();
        match &mut copy {
            Self::NotClientDispatchable { action } | Self::WrongChannel { action, .. } => {
                *action = snippet(action);
            }
            Self::UnknownToolCall { tool_call_id } => *tool_call_id = snippet(tool_call_id),
            Self::DirectoryNotInSession { directory } => *directory = snippet(directory),
            Self::UnknownInputRequest { request_id } => *request_id = snippet(request_id),
            Self::UnknownQuestion { question_id } | Self::MissingRequiredAnswer { question_id } => {
                *question_id = snippet(question_id);
            }
            Self::MalformedAnswer {
                question_id,
                problem,
            } => {
                *question_id = snippet(question_id);
                *problem = snippet(problem);
            }
            Self::UnknownPendingMessage { id } => *id = snippet(id),
            Self::DefaultChatNotInCatalog { chat } => *chat = snippet(chat),
            Self::UnknownConfigProperty { property } | Self::NotSessionMutable { property } => {
                *property = snippet(property);
            }
            Self::ClientIdMismatch { dispatcher, named } => {
                *dispatcher = snippet(dispatcher);
                *named = snippet(named);
            }
            Self::Invalid(detail) => *detail = snippet(detail),
            _ => {}
        }
        copy
    }
}

impl fmt::Display for RejectionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Client-supplied values are quoted, never echoed in full.
        match &self.clipped() {
            Self::NotClientDispatchable { action } => {
                write!(f, "action {action:?} may not be dispatched by a client")
            }
            Self::WrongChannel { action, channel } => {
                write!(f, "action {action:?} is not valid on a {channel} channel")
            }
            Self::ToolCallNotAwaitingConfirmation => {
                f.write_str("tool call is not awaiting confirmation")
            }
            Self::ToolCallNotAwaitingResultConfirmation => {
                f.write_str("tool call is not awaiting result confirmation")
            }
            Self::UnknownToolCall { tool_call_id } => {
                write!(f, "unknown tool call {tool_call_id:?} in the active turn")
            }
            Self::NotOwningClient => f.write_str("not the owning client of this tool call"),
            Self::NoActiveTurnToCancel => f.write_str("no active turn to cancel"),
            Self::TurnInProgress => f.write_str(
                "a turn is already in progress; queue the message with chat/pendingMessageSet",
            ),
            Self::TurnNotResumable => f.write_str("turn is not resumable"),
            Self::DirectoryNotInSession { directory } => {
                write!(
                    f,
                    "directory {directory:?} is not a session working directory"
                )
            }
            Self::UnknownInputRequest { request_id } => {
                write!(
                    f,
                    "unknown or already completed input request {request_id:?}"
                )
            }
            Self::UnknownQuestion { question_id } => {
                write!(f, "the input request has no question {question_id:?}")
            }
            Self::MalformedAnswer {
                question_id,
                problem,
            } => write!(f, "malformed answer to question {question_id:?}: {problem}"),
            Self::MissingRequiredAnswer { question_id } => {
                write!(
                    f,
                    "required question {question_id:?} has no submitted answer"
                )
            }
            Self::UnknownPendingMessage { id } => write!(f, "unknown pending message {id:?}"),
            Self::UserMessagesOnly => f.write_str("clients may only send user messages"),
            Self::DefaultChatNotInCatalog { chat } => {
                write!(
                    f,
                    "default chat {chat:?} is not in the session's chat catalog"
                )
            }
            Self::UnknownConfigProperty { property } => {
                write!(f, "unknown configuration property {property:?}")
            }
            Self::NotSessionMutable { property } => {
                write!(f, "property {property:?} is not session-mutable")
            }
            Self::ClientIdMismatch { dispatcher, named } => write!(
                f,
                "clientId mismatch: connection is {dispatcher:?} but the action names {named:?}"
            ),
            Self::InvalidTimestamp { field, value } => write!(
                f,
                "{field} {value:?} is not an RFC 3339 timestamp such as 2026-03-01T10:00:00.000Z"
            ),
            Self::InvalidId { field, problem } => write!(f, "{field}: {problem}"),
            Self::Invalid(detail) => write!(f, "invalid action: {detail}"),
        }
    }
}

/// Borrowed view of the channel an action targets, as validation needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ChannelRef<'a> {
    Root,
    Session(&'a SessionState),
    Chat {
        chat: &'a ChatState,
        session: Option<&'a SessionState>,
    },
    Other(ChannelKind),
}

impl ChannelRef<'_> {
    fn kind(&self) -> ChannelKind {
        match self {
            ChannelRef::Root => ChannelKind::Root,
            ChannelRef::Session(_) => ChannelKind::Session,
            ChannelRef::Chat { .. } => ChannelKind::Chat,
            ChannelRef::Other(kind) => *kind,
        }
    }
}

/// The wire `type` of an action (e.g. `"chat/turnStarted"`), for messages.
pub fn action_type(action: &StateAction) -> String {
    let value = match action {
        StateAction::Unknown(value) => value.get("type").cloned(),
        known => serde_json::to_value(known)
            .ok()
            .and_then(|v| v.get("type").cloned()),
    };
    match value {
        Some(serde_json::Value::String(name)) => name,
        _ => "<untyped>".to_owned(),
    }
}

/// Whether a client may dispatch this action at all (the C column of AHP §5). Unknown action
/// types are server-only for validation purposes.
pub fn is_client_dispatchable(action: &StateAction) -> bool {
    client_scope(action).is_some()
}

/// The kind of channel a client-dispatchable action belongs to; `None` for server-only actions.
pub fn client_scope(action: &StateAction) -> Option<ChannelKind> {
    use StateAction as A;
    let kind = match action {
        A::RootConfigChanged(_) => ChannelKind::Root,
        A::SessionTitleChanged(_)
        | A::SessionIsReadChanged(_)
        | A::SessionIsArchivedChanged(_)
        | A::SessionConfigChanged(_)
        | A::SessionActiveClientSet(_)
        | A::SessionActiveClientRemoved(_)
        | A::SessionWorkingDirectorySet(_)
        | A::SessionWorkingDirectoryRemoved(_)
        | A::SessionWorkingDirectoryReplaced(_)
        | A::SessionCustomizationToggled(_)
        | A::SessionMcpServerStartRequested(_)
        | A::SessionMcpServerStopRequested(_)
        | A::SessionMcpServerBackgroundRequested(_) => ChannelKind::Session,
        A::ChatTurnStarted(_)
        | A::ChatTurnCancelled(_)
        | A::ChatTurnResume(_)
        | A::ChatWorkingDirectorySet(_)
        | A::ChatWorkingDirectoryRemoved(_)
        | A::ChatToolCallConfirmed(_)
        | A::ChatToolCallComplete(_)
        | A::ChatToolCallResultConfirmed(_)
        | A::ChatToolCallContentChanged(_)
        | A::ChatTruncated(_)
        | A::ChatPendingMessageSet(_)
        | A::ChatPendingMessageRemoved(_)
        | A::ChatQueuedMessagesReordered(_)
        | A::ChatDraftChanged(_)
        | A::ChatInputAnswerChanged(_)
        | A::ChatInputCompleted(_)
        | A::ChatIsReadChanged(_)
        | A::ChatIsArchivedChanged(_) => ChannelKind::Chat,
        A::TerminalInput(_)
        | A::TerminalResized(_)
        | A::TerminalClaimed(_)
        | A::TerminalTitleChanged(_)
        | A::TerminalCleared(_) => ChannelKind::Terminal,
        A::ChangesetFilesReviewChanged(_) => ChannelKind::Changeset,
        A::AnnotationsSet(_)
        | A::AnnotationsUpdated(_)
        | A::AnnotationsRemoved(_)
        | A::AnnotationsEntrySet(_)
        | A::AnnotationsEntryRemoved(_) => ChannelKind::Annotations,
        A::AutomationCreateRequested(_)
        | A::AutomationUpdateRequested(_)
        | A::AutomationRemoved(_) => ChannelKind::Automation,
        A::AutomationRunCancelRequested(_) => ChannelKind::AutomationRun,
        _ => return None,
    };
    Some(kind)
}

/// AHP §6.1 steps 3–5 for one client dispatch on an existing channel.
pub(crate) fn validate_client_action(
    target: ChannelRef<'_>,
    action: &StateAction,
    client_id: &str,
) -> Result<(), Rejection> {
    let Some(scope) = client_scope(action) else {
        return Err(Rejection::new(RejectionReason::NotClientDispatchable {
            action: action_type(action),
        }));
    };
    // AHP §6.3: a session title sent to a chat channel renames the chat.
    let chat_rename =
        matches!(action, StateAction::SessionTitleChanged(_)) && target.kind() == ChannelKind::Chat;
    if scope != target.kind() && !chat_rename {
        return Err(Rejection::new(RejectionReason::WrongChannel {
            action: action_type(action),
            channel: target.kind(),
        }));
    }
    let result = match target {
        ChannelRef::Chat { chat, session } => {
            validate_chat_action(chat, session, action, client_id)
        }
        ChannelRef::Session(session) => validate_session_action(session, action, client_id),
        ChannelRef::Root | ChannelRef::Other(_) => Ok(()),
    };
    result.map_err(Rejection::new)
}

/// Host invariant for `session/defaultChatChanged` (server-only, yet checked): the target must be
/// in the session's catalog.
pub(crate) fn validate_default_chat(
    target: ChannelRef<'_>,
    action: &SessionDefaultChatChangedAction,
) -> Result<(), Rejection> {
    let (ChannelRef::Session(session), Some(chat)) = (target, &action.default_chat) else {
        return Ok(());
    };
    if session.chats.iter().any(|c| &c.resource == chat) {
        Ok(())
    } else {
        Err(Rejection::new(RejectionReason::DefaultChatNotInCatalog {
            chat: chat.clone(),
        }))
    }
}

fn validate_session_action(
    session: &SessionState,
    action: &StateAction,
    client_id: &str,
) -> Result<(), RejectionReason> {
    match action {
        StateAction::SessionActiveClientSet(a) => {
            require_same_client(client_id, &a.active_client.client_id)
        }
        StateAction::SessionActiveClientRemoved(a) => require_same_client(client_id, &a.client_id),
        StateAction::SessionConfigChanged(a) => validate_config_change(session, a),
        _ => Ok(()),
    }
}

fn require_same_client(dispatcher: &str, named: &str) -> Result<(), RejectionReason> {
    if dispatcher == named {
        Ok(())
    } else {
        Err(RejectionReason::ClientIdMismatch {
            dispatcher: dispatcher.to_owned(),
            named: named.to_owned(),
        })
    }
}

/// Only `sessionMutable` properties may change. A key sent with its current value is no change
/// (clients often send the whole set back); with `replace`, dropping a key is a change too.
fn validate_config_change(
    session: &SessionState,
    action: &SessionConfigChangedAction,
) -> Result<(), RejectionReason> {
    let current = session.config.as_ref();
    let current_value = |key: &str| current.and_then(|c| c.values.get(key));
    let check = |key: &str| -> Result<(), RejectionReason> {
        let property = current.and_then(|c| c.schema.properties.get(key));
        match property {
            None => Err(RejectionReason::UnknownConfigProperty {
                property: key.to_owned(),
            }),
            Some(p) if p.session_mutable == Some(true) => Ok(()),
            Some(_) => Err(RejectionReason::NotSessionMutable {
                property: key.to_owned(),
            }),
        }
    };
    let mut changed: Vec<&str> = action
        .config
        .iter()
        .filter(|(key, value)| current_value(key) != Some(*value))
        .map(|(key, _)| key.as_str())
        .collect();
    if action.replace == Some(true)
        && let Some(config) = current
    {
        changed.extend(
            config
                .values
                .keys()
                .filter(|key| !action.config.contains_key(*key))
                .map(String::as_str),
        );
    }
    // Deterministic report: the first offending key in sorted order.
    changed.sort_unstable();
    changed.into_iter().try_for_each(check)
}

fn validate_chat_action(
    chat: &ChatState,
    session: Option<&SessionState>,
    action: &StateAction,
    client_id: &str,
) -> Result<(), RejectionReason> {
    match action {
        StateAction::ChatTurnStarted(a) => {
            require_user_message(&a.message.origin.kind)?;
            require_safe_id("turnId", &a.turn_id)?;
            require_timestamp("startedAt", &a.started_at)?;
            if chat.active_turn.is_some() {
                return Err(RejectionReason::TurnInProgress);
            }
            Ok(())
        }
        StateAction::ChatPendingMessageSet(a) => require_user_message(&a.message.origin.kind),
        StateAction::ChatDraftChanged(a) => match &a.draft {
            Some(draft) => require_user_message(&draft.origin.kind),
            None => Ok(()),
        },
        StateAction::ChatTurnCancelled(a) => match &chat.active_turn {
            Some(turn) if turn.id == a.turn_id => Ok(()),
            _ => Err(RejectionReason::NoActiveTurnToCancel),
        },
        StateAction::ChatTurnResume(a) => {
            if is_resumable(chat, &a.turn_id) {
                Ok(())
            } else {
                Err(RejectionReason::TurnNotResumable)
            }
        }
        StateAction::ChatToolCallConfirmed(a) => {
            match active_tool_call(chat, &a.turn_id, &a.tool_call_id) {
                Some(ToolCallState::PendingConfirmation(_)) => Ok(()),
                _ => Err(RejectionReason::ToolCallNotAwaitingConfirmation),
            }
        }
        StateAction::ChatToolCallResultConfirmed(a) => {
            match active_tool_call(chat, &a.turn_id, &a.tool_call_id) {
                Some(ToolCallState::PendingResultConfirmation(_)) => Ok(()),
                _ => Err(RejectionReason::ToolCallNotAwaitingResultConfirmation),
            }
        }
        StateAction::ChatToolCallComplete(a) => {
            require_owner(chat, &a.turn_id, &a.tool_call_id, client_id)
        }
        StateAction::ChatToolCallContentChanged(a) => {
            require_owner(chat, &a.turn_id, &a.tool_call_id, client_id)
        }
        StateAction::ChatWorkingDirectorySet(a) => {
            let in_session = session
                .and_then(|s| s.working_directories.as_ref())
                .is_some_and(|dirs| dirs.contains(&a.directory));
            if in_session {
                Ok(())
            } else {
                Err(RejectionReason::DirectoryNotInSession {
                    directory: a.directory.clone(),
                })
            }
        }
        StateAction::ChatPendingMessageRemoved(a) => {
            let exists = match a.kind {
                PendingMessageKind::Steering => {
                    chat.steering_message.as_ref().is_some_and(|m| m.id == a.id)
                }
                PendingMessageKind::Queued => {
                    chat.queued_messages.iter().flatten().any(|m| m.id == a.id)
                }
            };
            if exists {
                Ok(())
            } else {
                Err(RejectionReason::UnknownPendingMessage { id: a.id.clone() })
            }
        }
        StateAction::ChatInputAnswerChanged(a) => validate_answer_changed(chat, a),
        StateAction::ChatInputCompleted(a) => validate_input_completed(chat, a),
        _ => Ok(()),
    }
}

fn require_safe_id(field: &'static str, id: &str) -> Result<(), RejectionReason> {
    SafeId::new(id)
        .map(|_| ())
        .map_err(|error| RejectionReason::InvalidId {
            field,
            problem: error.to_string(),
        })
}

/// Whether `value` is a start time the host can compute a turn's end from: an RFC 3339 instant
/// with a century of headroom below the largest representable one.
pub(crate) fn usable_start(value: &str) -> bool {
    const CENTURY: jiff::SignedDuration = jiff::SignedDuration::from_hours(24 * 366 * 100);
    value
        .parse::<jiff::Timestamp>()
        .is_ok_and(|at| at.checked_add(CENTURY).is_ok())
}

/// A client-supplied start time must be [`usable_start`].
fn require_timestamp(field: &'static str, value: &str) -> Result<(), RejectionReason> {
    if usable_start(value) {
        Ok(())
    } else {
        Err(RejectionReason::InvalidTimestamp {
            field,
            value: snippet(value),
        })
    }
}

fn require_user_message(kind: &MessageKind) -> Result<(), RejectionReason> {
    if *kind == MessageKind::User {
        Ok(())
    } else {
        Err(RejectionReason::UserMessagesOnly)
    }
}

/// The conditions under which the canonical reducer reopens a turn (AHP §5.3 `chat/turnResume`).
fn is_resumable(chat: &ChatState, turn_id: &str) -> bool {
    resumable_turn(chat) == Some(turn_id)
}

/// The id of the chat's resumable turn: the last turn, ended in error with a resumable error
/// part, while no turn is active. The logical turn is not over while there is one (a resume may
/// reopen it), so queued work waits for it.
pub fn resumable_turn(chat: &ChatState) -> Option<&str> {
    if chat.active_turn.is_some() {
        return None;
    }
    let last = chat.turns.last()?;
    let resumable = last.state == TurnState::Error
        && matches!(
            last.response_parts.last(),
            Some(ResponsePart::Error(e)) if e.resumable == Some(true)
        );
    resumable.then_some(last.id.as_str())
}

/// The state of a tool call in the active turn, when the turn id matches.
pub(crate) fn active_tool_call<'a>(
    chat: &'a ChatState,
    turn_id: &str,
    tool_call_id: &str,
) -> Option<&'a ToolCallState> {
    let turn = chat.active_turn.as_ref().filter(|t| t.id == turn_id)?;
    turn.response_parts.iter().find_map(|part| match part {
        ResponsePart::ToolCall(tc) if tool_call_id_of(&tc.tool_call) == Some(tool_call_id) => {
            Some(&tc.tool_call)
        }
        _ => None,
    })
}

/// The id of a tool call in any known state.
pub(crate) fn tool_call_id_of(state: &ToolCallState) -> Option<&str> {
    Some(match state {
        ToolCallState::Streaming(s) => &s.tool_call_id,
        ToolCallState::PendingConfirmation(s) => &s.tool_call_id,
        ToolCallState::Running(s) => &s.tool_call_id,
        ToolCallState::AuthRequired(s) => &s.tool_call_id,
        ToolCallState::PendingResultConfirmation(s) => &s.tool_call_id,
        ToolCallState::Completed(s) => &s.tool_call_id,
        ToolCallState::Cancelled(s) => &s.tool_call_id,
        ToolCallState::Unknown(_) => return None,
    })
}

/// The contributor of a tool call in any known state.
pub(crate) fn contributor_of(state: &ToolCallState) -> Option<&ToolCallContributor> {
    match state {
        ToolCallState::Streaming(s) => s.contributor.as_ref(),
        ToolCallState::PendingConfirmation(s) => s.contributor.as_ref(),
        ToolCallState::Running(s) => s.contributor.as_ref(),
        ToolCallState::AuthRequired(s) => s.contributor.as_ref(),
        ToolCallState::PendingResultConfirmation(s) => s.contributor.as_ref(),
        ToolCallState::Completed(s) => s.contributor.as_ref(),
        ToolCallState::Cancelled(s) => s.contributor.as_ref(),
        ToolCallState::Unknown(_) => None,
    }
}

fn require_owner(
    chat: &ChatState,
    turn_id: &str,
    tool_call_id: &str,
    client_id: &str,
) -> Result<(), RejectionReason> {
    let Some(state) = active_tool_call(chat, turn_id, tool_call_id) else {
        return Err(RejectionReason::UnknownToolCall {
            tool_call_id: tool_call_id.to_owned(),
        });
    };
    match contributor_of(state) {
        Some(ToolCallContributor::Client(c)) if c.client_id == client_id => Ok(()),
        _ => Err(RejectionReason::NotOwningClient),
    }
}

fn validate_answer_changed(
    chat: &ChatState,
    action: &ChatInputAnswerChangedAction,
) -> Result<(), RejectionReason> {
    let request = answers::open_request(chat, &action.request_id)?;
    let question = answers::question(request, &action.question_id)?;
    match &action.answer {
        Some(answer) => answers::check_answer(question, &action.question_id, answer),
        None => Ok(()),
    }
}

fn validate_input_completed(
    chat: &ChatState,
    action: &ChatInputCompletedAction,
) -> Result<(), RejectionReason> {
    let request = answers::open_request(chat, &action.request_id)?;
    let mut sent: Vec<_> = action.answers.iter().flatten().collect();
    sent.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (question_id, answer) in sent {
        let question = answers::question(request, question_id)?;
        answers::check_answer(question, question_id, answer)?;
    }
    if action.response == ChatInputResponseKind::Accept {
        answers::check_required_submitted(request, action.answers.as_ref())?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "validation_tests.rs"]
mod tests;

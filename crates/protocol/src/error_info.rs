//! Constructors for the error payloads the host puts into chats, and the error types it uses.

use crate::StateAction;
use crate::actions::ChatErrorAction;
use crate::state::{ErrorInfo, ErrorResponsePart};

/// The host itself failed (a bug or an unexpected I/O error); the message says what failed.
pub const INTERNAL_ERROR: &str = "internalError";
/// No agent provider is configured or available for the session's agent.
pub const NO_AGENT: &str = "noAgent";
/// The client that owns a client-side tool or input request disconnected before answering.
pub const CLIENT_UNAVAILABLE: &str = "clientUnavailable";
/// The provider CLI process exited while a turn was in progress.
pub const PROVIDER_EXITED: &str = "providerExited";
/// The session's budget is spent: the host stopped (or refused) the turn.
pub const BUDGET_SPENT: &str = "budgetSpent";

/// An [`ErrorInfo`] without stack trace or `_meta`.
pub fn error_info(error_type: impl Into<String>, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        error_type: error_type.into(),
        message: message.into(),
        stack: None,
        meta: None,
    }
}

/// An [`ErrorResponsePart`] (the `part` of `chat/error`).
///
/// `resumable: false` omits the field: the wire treats absence as "not resumable", and optional
/// fields are omitted rather than sent with their default.
pub fn error_part(error: ErrorInfo, resumable: bool) -> ErrorResponsePart {
    ErrorResponsePart {
        error,
        resumable: resumable.then_some(true),
    }
}

/// `chat/error` ending turn `turn_id` after `duration_ms` with `error` (see [`error_part`]).
pub fn chat_error(
    turn_id: &str,
    duration_ms: i64,
    error: ErrorInfo,
    resumable: bool,
) -> StateAction {
    StateAction::ChatError(ChatErrorAction {
        turn_id: turn_id.to_owned(),
        duration: duration_ms,
        part: error_part(error, resumable),
        meta: None,
    })
}

#[cfg(test)]
#[path = "error_info_tests.rs"]
mod tests;

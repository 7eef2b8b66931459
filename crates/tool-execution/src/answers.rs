//! The answers the engine dispatches: ordinary chat actions built from `ahp_types`.
//!
//! Also the funnel's view of an action: which obligation and which answer kind it answers.

use std::time::Duration;

use agenthost_protocol::ahp_types::actions::{
    ChatInputCompletedAction, ChatToolCallCompleteAction, ChatToolCallConfirmedAction,
    ChatToolCallContentChangedAction, ChatToolCallResultConfirmedAction,
};
use agenthost_protocol::ahp_types::state::{
    ChatInputResponseKind, ToolCallCancellationReason, ToolCallConfirmationReason, ToolCallResult,
    ToolResultContent, ToolResultTextContent,
};
use agenthost_protocol::ids::{InputKey, ToolCallKey};
use agenthost_protocol::{StateAction, StringOrMarkdown, Uri};
use serde_json::json;

/// Error code of a completion dispatched because no observer could answer a confirmable call.
pub const CLIENT_UNAVAILABLE: &str = "clientUnavailable";
/// Error code: the tool is not known locally.
pub const TOOL_UNAVAILABLE: &str = "toolUnavailable";
/// Error code: the shared invocation could not be obtained.
pub const INVOCATION_FAILED: &str = "invocationFailed";
/// Error code: a content-referenced tool input could not be read.
pub const INPUT_READ_FAILED: &str = "inputReadFailed";
/// Error code: the tool input is not a JSON object.
pub const INVALID_INPUT: &str = "invalidInput";
/// Error code of a given-up authentication (and of a local denial of a call already running).
pub const CANCELLED: &str = "cancelled";

/// The kinds of answer the funnel tracks per tool call. Confirming and completing are distinct
/// outcomes and are de-duplicated separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AnswerKind {
    /// `chat/toolCallConfirmed` (parameter gate).
    ToolCallConfirmed,
    /// `chat/toolCallResultConfirmed` (result gate).
    ToolCallResultConfirmed,
    /// `chat/toolCallComplete`.
    ToolCallComplete,
}

impl AnswerKind {
    pub(crate) const fn bit(self) -> u8 {
        match self {
            Self::ToolCallConfirmed => 1,
            Self::ToolCallResultConfirmed => 2,
            Self::ToolCallComplete => 4,
        }
    }
}

/// What an outbound action answers, for the funnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerTarget {
    /// An answer for a tool call.
    ToolCall(ToolCallKey, AnswerKind),
    /// `chat/inputCompleted` for an input request.
    Input(InputKey),
}

/// Which obligation `action`, dispatched on `chat`, answers; `None` for an action that answers
/// nothing (a draft, streamed content, anything else), which passes the funnel untouched.
pub fn answer_target(chat: &Uri, action: &StateAction) -> Option<AnswerTarget> {
    let call = |turn: &str, id: &str, kind| {
        Some(AnswerTarget::ToolCall(
            ToolCallKey::new(chat.clone(), turn, id),
            kind,
        ))
    };
    match action {
        StateAction::ChatToolCallConfirmed(a) => {
            call(&a.turn_id, &a.tool_call_id, AnswerKind::ToolCallConfirmed)
        }
        StateAction::ChatToolCallResultConfirmed(a) => call(
            &a.turn_id,
            &a.tool_call_id,
            AnswerKind::ToolCallResultConfirmed,
        ),
        StateAction::ChatToolCallComplete(a) => {
            call(&a.turn_id, &a.tool_call_id, AnswerKind::ToolCallComplete)
        }
        StateAction::ChatInputCompleted(a) => Some(AnswerTarget::Input(InputKey::new(
            chat.clone(),
            a.request_id.clone(),
        ))),
        _ => None,
    }
}

/// How a duration reads in a message: `5s`, `1.5s`, `250ms`.
pub fn human_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis >= 1000 && millis.is_multiple_of(100) {
        let tenths = millis / 100;
        if tenths.is_multiple_of(10) {
            format!("{}s", tenths / 10)
        } else {
            format!("{}.{}s", tenths / 10, tenths % 10)
        }
    } else {
        format!("{millis}ms")
    }
}

/// `chat/toolCallConfirmed { approved: true, confirmed: reason, selectedOptionId? }`.
pub fn approve_parameters(
    key: &ToolCallKey,
    confirmed: ToolCallConfirmationReason,
    selected_option_id: Option<String>,
) -> StateAction {
    StateAction::ChatToolCallConfirmed(ChatToolCallConfirmedAction {
        turn_id: key.turn_id.clone(),
        tool_call_id: key.tool_call_id.clone(),
        meta: None,
        approved: true,
        confirmed: Some(confirmed),
        reason: None,
        edited_tool_input: None,
        user_suggestion: None,
        reason_message: None,
        selected_option_id,
    })
}

/// `chat/toolCallConfirmed { approved: false, reason: "denied", reasonMessage?, selectedOptionId? }`.
pub fn deny_parameters(
    key: &ToolCallKey,
    reason_message: Option<String>,
    selected_option_id: Option<String>,
) -> StateAction {
    StateAction::ChatToolCallConfirmed(ChatToolCallConfirmedAction {
        turn_id: key.turn_id.clone(),
        tool_call_id: key.tool_call_id.clone(),
        meta: None,
        approved: false,
        confirmed: None,
        reason: Some(ToolCallCancellationReason::Denied),
        edited_tool_input: None,
        user_suggestion: None,
        reason_message: reason_message.map(StringOrMarkdown::Plain),
        selected_option_id,
    })
}

/// The `reasonMessage` of a parameter gate denied because nobody answered it.
pub fn unattended_denial_message(display_name: &str, grace: Duration) -> String {
    format!(
        "Denied automatically: nobody was available to confirm {display_name} within {}.",
        human_duration(grace)
    )
}

/// `chat/toolCallResultConfirmed { approved }`.
pub fn confirm_result(key: &ToolCallKey, approved: bool) -> StateAction {
    StateAction::ChatToolCallResultConfirmed(ChatToolCallResultConfirmedAction {
        turn_id: key.turn_id.clone(),
        tool_call_id: key.tool_call_id.clone(),
        meta: None,
        approved,
    })
}

/// `chat/inputCompleted { requestId, response: "cancel" }`.
pub fn cancel_input(key: &InputKey) -> StateAction {
    StateAction::ChatInputCompleted(ChatInputCompletedAction {
        request_id: key.request_id.clone(),
        response: ChatInputResponseKind::Cancel,
        answers: None,
    })
}

/// `chat/toolCallComplete { turnId, toolCallId, result }`.
pub fn complete(key: &ToolCallKey, result: ToolCallResult) -> StateAction {
    StateAction::ChatToolCallComplete(ChatToolCallCompleteAction {
        turn_id: key.turn_id.clone(),
        tool_call_id: key.tool_call_id.clone(),
        meta: None,
        result,
        requires_result_confirmation: None,
    })
}

/// A failed result: `{ success: false, pastTenseMessage, error: { message, code } }`.
pub fn failed_result(past_tense_message: &str, message: &str, code: &str) -> ToolCallResult {
    ToolCallResult {
        success: false,
        past_tense_message: StringOrMarkdown::Plain(past_tense_message.to_owned()),
        content: None,
        structured_content: None,
        error: Some(json!({ "message": message, "code": code })),
    }
}

/// A successful result with one text content part.
pub fn text_result(past_tense_message: &str, text: &str) -> ToolCallResult {
    ToolCallResult {
        success: true,
        past_tense_message: StringOrMarkdown::Plain(past_tense_message.to_owned()),
        content: Some(vec![ToolResultContent::Text(ToolResultTextContent {
            text: text.to_owned(),
        })]),
        structured_content: None,
        error: None,
    }
}

/// The failed result of an unclaimed confirmable call: code `clientUnavailable`.
pub fn client_unavailable_result(display_name: &str) -> ToolCallResult {
    failed_result(
        &format!("Couldn't run {display_name}"),
        &format!("{display_name} needs confirmation but no observer was available to answer it."),
        CLIENT_UNAVAILABLE,
    )
}

/// The failed result of a run that could not start or finish locally (`toolUnavailable`,
/// `inputReadFailed`, `invalidInput`, …).
pub fn local_failure_result(display_name: &str, message: &str, code: &str) -> ToolCallResult {
    failed_result(&format!("Couldn't run {display_name}"), message, code)
}

/// The result of a given-up authentication: code `cancelled`.
pub fn authentication_cancelled_result() -> ToolCallResult {
    failed_result(
        "Cancelled tool call",
        "Authentication was cancelled",
        CANCELLED,
    )
}

/// `chat/toolCallContentChanged { content }` (streamed partial content of a running call).
pub fn content_changed(key: &ToolCallKey, content: Vec<ToolResultContent>) -> StateAction {
    StateAction::ChatToolCallContentChanged(ChatToolCallContentChangedAction {
        turn_id: key.turn_id.clone(),
        tool_call_id: key.tool_call_id.clone(),
        meta: None,
        content,
    })
}

/// The `error.code` of a result, if any.
pub fn error_code(result: &ToolCallResult) -> Option<&str> {
    result.error.as_ref()?.get("code")?.as_str()
}

#[cfg(test)]
#[path = "answers_tests.rs"]
mod tests;

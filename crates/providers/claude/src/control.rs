//! Host → CLI lines: each function returns one JSON object without the
//! trailing newline.

use serde::Serialize;
use serde_json::{Value, json};

use crate::wire::{ControlResponseBody, HostControlRequest, HostControlResponse, HostUserMessage};

fn line(message: &impl Serialize) -> String {
    match serde_json::to_string(message) {
        Ok(line) => line,
        // These types hold only strings and JSON values, which always serialize.
        Err(error) => {
            tracing::error!(%error, "a host message could not be serialized");
            String::from("{}")
        }
    }
}

fn control_request(request_id: &str, request: Value) -> String {
    line(&HostControlRequest {
        kind: "control_request".to_owned(),
        request_id: request_id.to_owned(),
        request,
    })
}

fn control_response(response: ControlResponseBody) -> String {
    line(&HostControlResponse {
        kind: "control_response".to_owned(),
        response,
    })
}

/// `initialize`: optional, first; answered by a `control_response` before `system/init`.
pub fn initialize_request(request_id: &str) -> String {
    control_request(
        request_id,
        json!({ "subtype": "initialize", "hooks": null }),
    )
}

/// `interrupt`: stop the running turn.
pub fn interrupt_request(request_id: &str) -> String {
    control_request(request_id, json!({ "subtype": "interrupt" }))
}

/// A user message. `content` is a string or an array of content blocks (see
/// [`crate::attachments::user_content`]); `uuid` is the protocol turn id, when sent.
pub fn user_message(content: &Value, uuid: Option<&str>) -> String {
    line(&HostUserMessage {
        kind: "user".to_owned(),
        message: json!({ "role": "user", "content": content }),
        parent_tool_use_id: None,
        session_id: String::new(),
        uuid: uuid.map(str::to_owned),
    })
}

/// Allows the tool call of permission request `request_id`, with its (possibly edited) input.
pub fn allow(request_id: &str, updated_input: &Value) -> String {
    control_response(ControlResponseBody {
        subtype: "success".to_owned(),
        request_id: request_id.to_owned(),
        response: Some(json!({ "behavior": "allow", "updatedInput": updated_input })),
        error: None,
    })
}

/// Denies the tool call of permission request `request_id`; `message` becomes the tool result
/// the agent sees.
pub fn deny(request_id: &str, message: &str) -> String {
    control_response(ControlResponseBody {
        subtype: "success".to_owned(),
        request_id: request_id.to_owned(),
        response: Some(json!({ "behavior": "deny", "message": message })),
        error: None,
    })
}

/// Answers a control request the host does not support.
pub fn error_response(request_id: &str, text: &str) -> String {
    control_response(ControlResponseBody {
        subtype: "error".to_owned(),
        request_id: request_id.to_owned(),
        response: None,
        error: Some(text.to_owned()),
    })
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;

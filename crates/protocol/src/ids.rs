//! Keys the host indexes pending work by.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Uri;

/// Identifies one tool call: tool call ids are unique only within a turn of a chat.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallKey {
    /// The chat the turn belongs to.
    pub chat: Uri,
    /// The protocol turn id.
    pub turn_id: String,
    /// The tool call id within that turn.
    pub tool_call_id: String,
}

impl ToolCallKey {
    /// Builds a key.
    pub fn new(
        chat: impl Into<Uri>,
        turn_id: impl Into<String>,
        tool_call_id: impl Into<String>,
    ) -> Self {
        Self {
            chat: chat.into(),
            turn_id: turn_id.into(),
            tool_call_id: tool_call_id.into(),
        }
    }
}

/// Formats as `chat#turn/call`, for logs.
impl fmt::Display for ToolCallKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}/{}", self.chat, self.turn_id, self.tool_call_id)
    }
}

/// Identifies one input request (`chat/inputRequested`) in a chat.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputKey {
    /// The chat that asked.
    pub chat: Uri,
    /// The input request id.
    pub request_id: String,
}

impl InputKey {
    /// Builds a key.
    pub fn new(chat: impl Into<Uri>, request_id: impl Into<String>) -> Self {
        Self {
            chat: chat.into(),
            request_id: request_id.into(),
        }
    }
}

/// Formats as `chat#request`, for logs.
impl fmt::Display for InputKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.chat, self.request_id)
    }
}

#[cfg(test)]
#[path = "ids_tests.rs"]
mod tests;

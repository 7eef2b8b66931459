//! The Copilot CLI wire: JSON-RPC 2.0 messages in
//! `Content-Length` frames for `--headless --stdio`, and bare session events, one per line, for
//! `-p --output-format json`.
//!
//! A decoded message is a [`Message`]: a [`Response`] to one of the host's requests, a
//! [`Notification`] (`session.event` carries an [`Event`]; `session.lifecycle`, `host.event` and
//! anything else is [`Notification::Other`]), a [`ServerRequest`], or — in prompt mode — a bare
//! [`Event`] or the final [`PromptResult`]. Ids are numbers or strings and are kept as JSON
//! values.
//!
//! Copilot adds event types and fields in nearly every release, so only the events the
//! translator uses have typed `data` ([`EventData`]); every other type decodes to
//! [`EventData::Other`] with its name — never an error. Fields the host does not need are
//! ignored and optional ones default (also when `null`). Only a known message whose fields have
//! the wrong shape (a `session.event` without an event, a tool event without a tool call id, a
//! string where an object belongs) is an error.

use agenthost_provider_api::Undecodable;
use agenthost_provider_api::tolerant::{decode_body, nullable};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

mod data;
pub use data::*;

/// One decoded message (a frame body, or a line of prompt-mode output).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The answer to one of the host's requests.
    Response(Response),
    /// A notification (no answer expected).
    Notification(Notification),
    /// A request the host must answer.
    Request(ServerRequest),
    /// A bare session event (`copilot -p --output-format json`).
    Event(Event),
    /// The last line of `copilot -p --output-format json`.
    PromptResult(PromptResult),
}

impl Message {
    /// Classifies and decodes one parsed message. `Err` explains what is wrong with it.
    pub fn from_value(value: Value) -> Result<Self, Undecodable> {
        Self::decode_value(value).map_err(Undecodable)
    }

    fn decode_value(value: Value) -> Result<Self, String> {
        let Value::Object(mut object) = value else {
            return Err("a message is a JSON object".to_owned());
        };
        // Bare events carry an `id` too: a `type` without any JSON-RPC member is an event.
        let is_rpc = ["jsonrpc", "method", "result", "error"]
            .iter()
            .any(|key| object.contains_key(*key))
            || !object.get("type").is_some_and(Value::is_string);
        if !is_rpc {
            return match object.get("type") {
                Some(Value::String(kind)) if kind == "result" => Ok(Self::PromptResult(
                    decode(Value::Object(object)).map_err(|e| format!("`result`: {e}"))?,
                )),
                Some(Value::String(_)) => Ok(Self::Event(Event::from_object(object)?)),
                _ => Err("neither a JSON-RPC message nor a session event".to_owned()),
            };
        }
        let id = object.remove("id").filter(|id| !id.is_null());
        match object.remove("method") {
            Some(Value::String(method)) => {
                let params = object.remove("params").unwrap_or(Value::Null);
                match id {
                    Some(id) => Ok(Self::Request(ServerRequest { id, method, params })),
                    None => Ok(Self::Notification(Notification::decode(method, params)?)),
                }
            }
            Some(other) => Err(format!("`method` is not a string: {other}")),
            None => {
                let Some(id) = id else {
                    return Err("neither a response, a notification nor a request".to_owned());
                };
                let result = match object.remove("error").filter(|error| !error.is_null()) {
                    Some(error) => Err(decode::<RpcError>(error)
                        .map_err(|error| format!("response error: {error}"))?),
                    None => Ok(object.remove("result").unwrap_or(Value::Null)),
                };
                Ok(Self::Response(Response { id, result }))
            }
        }
    }
}

fn decode<T: DeserializeOwned>(value: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(value)
}

/// Any finite JSON number (`100`, `100.0`); anything else → `None`.
fn number(value: Option<Value>) -> Option<f64> {
    value
        .as_ref()
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite())
}

/// A token count: any number, truncated and clamped at zero; absent or not a number → 0.
fn count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    Ok(opt_count(deserializer)?.unwrap_or(0))
}

/// An optional token count (see [`count`]).
fn opt_count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    // `as` saturates: what a count of tokens wants.
    Ok(number(Option::<Value>::deserialize(deserializer)?).map(|n| n.max(0.0) as u64))
}

/// An optional integer (exit codes, HTTP statuses) from any JSON number.
fn opt_int<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    Ok(number(Option::<Value>::deserialize(deserializer)?).map(|n| n as i64))
}

/// The answer to one of the host's requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the host's request.
    pub id: Value,
    /// `result`, or `error`.
    pub result: Result<Value, RpcError>,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code (`-32601` method not found, …).
    pub code: i64,
    /// What went wrong.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
    /// Additional data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// A request from the CLI, with the id its answer carries. The host implements none of them.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRequest {
    /// The request id (a number or a string).
    pub id: Value,
    /// The method.
    pub method: String,
    /// The parameters, as sent.
    pub params: Value,
}

/// `session.event`.
pub const SESSION_EVENT: &str = "session.event";

/// A notification, by method.
// Decoded messages live for one frame and are matched once: boxing the event buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    /// `session.event {sessionId, event}`.
    SessionEvent {
        /// The Copilot session the event belongs to.
        session_id: String,
        /// The event.
        event: Event,
    },
    /// Any other method (`session.lifecycle`, `host.event`, …): ignored.
    Other {
        /// The method.
        method: String,
    },
}

impl Notification {
    fn decode(method: String, params: Value) -> Result<Self, String> {
        if method != SESSION_EVENT {
            return Ok(Self::Other { method });
        }
        let Value::Object(mut params) = params else {
            return Err("`session.event`: params are not an object".to_owned());
        };
        let session_id = match params.remove("sessionId") {
            Some(Value::String(id)) => id,
            _ => return Err("`session.event`: no `sessionId`".to_owned()),
        };
        let event = match params.remove("event") {
            Some(Value::Object(event)) => Event::from_object(event)?,
            _ => return Err("`session.event`: no `event` object".to_owned()),
        };
        Ok(Self::SessionEvent { session_id, event })
    }
}

/// The last line of `copilot -p --output-format json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResult {
    /// When the run ended.
    #[serde(default)]
    pub timestamp: Option<String>,
    /// The Copilot session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The process exit code (`0` on success).
    #[serde(default, deserialize_with = "opt_int")]
    pub exit_code: Option<i64>,
}

/// A session event: `{type, data, id, timestamp, parentId, ephemeral?, agentId?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The event id (a UUID).
    pub id: Option<String>,
    /// When it happened (ISO 8601).
    pub timestamp: Option<String>,
    /// The id of the chronologically preceding event.
    pub parent_id: Option<String>,
    /// Transient: not persisted by the CLI.
    pub ephemeral: bool,
    /// The subagent that produced it; `None` for the main agent and session-level events.
    pub agent_id: Option<String>,
    /// The typed payload.
    pub data: EventData,
}

impl Event {
    fn from_object(mut object: Map<String, Value>) -> Result<Self, String> {
        let kind = match object.remove("type") {
            Some(Value::String(kind)) => kind,
            _ => return Err("a session event has no `type`".to_owned()),
        };
        let text = |object: &mut Map<String, Value>, key: &str| match object.remove(key) {
            Some(Value::String(text)) => Some(text),
            _ => None,
        };
        let id = text(&mut object, "id");
        let timestamp = text(&mut object, "timestamp");
        let parent_id = text(&mut object, "parentId");
        let agent_id = text(&mut object, "agentId");
        let ephemeral = object
            .get("ephemeral")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let data = object.remove("data").unwrap_or(Value::Null);
        Ok(Self {
            id,
            timestamp,
            parent_id,
            ephemeral,
            agent_id,
            data: EventData::decode(kind, data)?,
        })
    }

    /// The event type.
    pub fn kind(&self) -> &str {
        self.data.kind()
    }
}

/// The `data` of the events the translator uses, by `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum EventData {
    /// `session.start`.
    SessionStart(SessionStartData),
    /// `session.resume`.
    SessionResume(SessionStartData),
    /// `session.title_changed`.
    TitleChanged(TitleChangedData),
    /// `user.message`.
    UserMessage(UserMessageData),
    /// `assistant.message_delta`.
    MessageDelta(MessageDeltaData),
    /// `assistant.message`.
    Message(AssistantMessageData),
    /// `assistant.reasoning_delta`.
    ReasoningDelta(ReasoningDeltaData),
    /// `assistant.reasoning`.
    Reasoning(ReasoningData),
    /// `assistant.tool_call_delta`.
    ToolCallDelta(ToolCallDeltaData),
    /// `tool.execution_start`.
    ToolExecutionStart(ToolExecutionStartData),
    /// `tool.execution_partial_result`.
    ToolPartialResult(ToolPartialResultData),
    /// `tool.execution_progress`.
    ToolProgress(ToolProgressData),
    /// `tool.execution_complete`.
    ToolExecutionComplete(ToolExecutionCompleteData),
    /// `permission.requested` (boxed: by far the largest payload).
    PermissionRequested(Box<PermissionRequestedData>),
    /// `permission.completed`.
    PermissionCompleted(PermissionCompletedData),
    /// `assistant.usage`.
    Usage(UsageData),
    /// `subagent.started`.
    SubagentStarted(SubagentStartedData),
    /// `subagent.completed`.
    SubagentCompleted(SubagentEndedData),
    /// `subagent.failed`.
    SubagentFailed(SubagentEndedData),
    /// `skill.invoked`.
    SkillInvoked(SkillInvokedData),
    /// `session.error`.
    SessionError(SessionErrorData),
    /// `session.idle`.
    SessionIdle(SessionIdleData),
    /// `model.call_finished`.
    ModelCallFinished(ModelCallFinishedData),
    /// `model.turn_started`: a model round begins, with the model's description.
    ModelTurnStarted(ModelTurnStartedData),
    /// Any other type (`assistant.turn_start`, `assistant.streaming_delta`, `model.*`, …).
    Other {
        /// The event type.
        kind: String,
    },
}

/// Event type names.
pub mod kinds {
    /// `session.start`.
    pub const SESSION_START: &str = "session.start";
    /// `session.resume`.
    pub const SESSION_RESUME: &str = "session.resume";
    /// `session.title_changed`.
    pub const TITLE_CHANGED: &str = "session.title_changed";
    /// `user.message`.
    pub const USER_MESSAGE: &str = "user.message";
    /// `assistant.message_delta`.
    pub const MESSAGE_DELTA: &str = "assistant.message_delta";
    /// `assistant.message`.
    pub const MESSAGE: &str = "assistant.message";
    /// `assistant.reasoning_delta`.
    pub const REASONING_DELTA: &str = "assistant.reasoning_delta";
    /// `assistant.reasoning`.
    pub const REASONING: &str = "assistant.reasoning";
    /// `assistant.tool_call_delta`.
    pub const TOOL_CALL_DELTA: &str = "assistant.tool_call_delta";
    /// `tool.execution_start`.
    pub const TOOL_EXECUTION_START: &str = "tool.execution_start";
    /// `tool.execution_partial_result`.
    pub const TOOL_PARTIAL_RESULT: &str = "tool.execution_partial_result";
    /// `tool.execution_progress`.
    pub const TOOL_PROGRESS: &str = "tool.execution_progress";
    /// `tool.execution_complete`.
    pub const TOOL_EXECUTION_COMPLETE: &str = "tool.execution_complete";
    /// `permission.requested`.
    pub const PERMISSION_REQUESTED: &str = "permission.requested";
    /// `permission.completed`.
    pub const PERMISSION_COMPLETED: &str = "permission.completed";
    /// `assistant.usage`.
    pub const USAGE: &str = "assistant.usage";
    /// `subagent.started`.
    pub const SUBAGENT_STARTED: &str = "subagent.started";
    /// `subagent.completed`.
    pub const SUBAGENT_COMPLETED: &str = "subagent.completed";
    /// `subagent.failed`.
    pub const SUBAGENT_FAILED: &str = "subagent.failed";
    /// `skill.invoked`.
    pub const SKILL_INVOKED: &str = "skill.invoked";
    /// `session.error`.
    pub const SESSION_ERROR: &str = "session.error";
    /// `session.idle`.
    pub const SESSION_IDLE: &str = "session.idle";
    /// `model.call_finished`.
    pub const MODEL_CALL_FINISHED: &str = "model.call_finished";
    /// `model.turn_started`.
    pub const MODEL_TURN_STARTED: &str = "model.turn_started";
}

impl EventData {
    fn decode(kind: String, data: Value) -> Result<Self, String> {
        use kinds::*;
        let k = kind.as_str();
        Ok(match k {
            SESSION_START => Self::SessionStart(decode_body(k, data)?),
            SESSION_RESUME => Self::SessionResume(decode_body(k, data)?),
            TITLE_CHANGED => Self::TitleChanged(decode_body(k, data)?),
            USER_MESSAGE => Self::UserMessage(decode_body(k, data)?),
            MESSAGE_DELTA => Self::MessageDelta(decode_body(k, data)?),
            MESSAGE => Self::Message(decode_body(k, data)?),
            REASONING_DELTA => Self::ReasoningDelta(decode_body(k, data)?),
            REASONING => Self::Reasoning(decode_body(k, data)?),
            TOOL_CALL_DELTA => Self::ToolCallDelta(decode_body(k, data)?),
            TOOL_EXECUTION_START => Self::ToolExecutionStart(decode_body(k, data)?),
            TOOL_PARTIAL_RESULT => Self::ToolPartialResult(decode_body(k, data)?),
            TOOL_PROGRESS => Self::ToolProgress(decode_body(k, data)?),
            TOOL_EXECUTION_COMPLETE => Self::ToolExecutionComplete(decode_body(k, data)?),
            PERMISSION_REQUESTED => Self::PermissionRequested(decode_body(k, data)?),
            PERMISSION_COMPLETED => Self::PermissionCompleted(decode_body(k, data)?),
            USAGE => Self::Usage(decode_body(k, data)?),
            SUBAGENT_STARTED => Self::SubagentStarted(decode_body(k, data)?),
            SUBAGENT_COMPLETED => Self::SubagentCompleted(decode_body(k, data)?),
            SUBAGENT_FAILED => Self::SubagentFailed(decode_body(k, data)?),
            SKILL_INVOKED => Self::SkillInvoked(decode_body(k, data)?),
            SESSION_ERROR => Self::SessionError(decode_body(k, data)?),
            SESSION_IDLE => Self::SessionIdle(decode_body(k, data)?),
            MODEL_CALL_FINISHED => Self::ModelCallFinished(decode_body(k, data)?),
            MODEL_TURN_STARTED => Self::ModelTurnStarted(decode_body(k, data)?),
            _ => Self::Other { kind },
        })
    }

    /// The event type.
    pub fn kind(&self) -> &str {
        use kinds::*;
        match self {
            Self::SessionStart(_) => SESSION_START,
            Self::SessionResume(_) => SESSION_RESUME,
            Self::TitleChanged(_) => TITLE_CHANGED,
            Self::UserMessage(_) => USER_MESSAGE,
            Self::MessageDelta(_) => MESSAGE_DELTA,
            Self::Message(_) => MESSAGE,
            Self::ReasoningDelta(_) => REASONING_DELTA,
            Self::Reasoning(_) => REASONING,
            Self::ToolCallDelta(_) => TOOL_CALL_DELTA,
            Self::ToolExecutionStart(_) => TOOL_EXECUTION_START,
            Self::ToolPartialResult(_) => TOOL_PARTIAL_RESULT,
            Self::ToolProgress(_) => TOOL_PROGRESS,
            Self::ToolExecutionComplete(_) => TOOL_EXECUTION_COMPLETE,
            Self::PermissionRequested(_) => PERMISSION_REQUESTED,
            Self::PermissionCompleted(_) => PERMISSION_COMPLETED,
            Self::Usage(_) => USAGE,
            Self::SubagentStarted(_) => SUBAGENT_STARTED,
            Self::SubagentCompleted(_) => SUBAGENT_COMPLETED,
            Self::SubagentFailed(_) => SUBAGENT_FAILED,
            Self::SkillInvoked(_) => SKILL_INVOKED,
            Self::SessionError(_) => SESSION_ERROR,
            Self::SessionIdle(_) => SESSION_IDLE,
            Self::ModelCallFinished(_) => MODEL_CALL_FINISHED,
            Self::ModelTurnStarted(_) => MODEL_TURN_STARTED,
            Self::Other { kind } => kind,
        }
    }

    /// The deprecated `data.parentToolCallId` of subagent events (before `agentId` existed).
    pub fn parent_tool_call_id(&self) -> Option<&str> {
        match self {
            Self::MessageDelta(data) => data.parent_tool_call_id.as_deref(),
            Self::Message(data) => data.parent_tool_call_id.as_deref(),
            Self::ToolExecutionStart(data) => data.parent_tool_call_id.as_deref(),
            Self::ToolExecutionComplete(data) => data.parent_tool_call_id.as_deref(),
            Self::Usage(data) => data.parent_tool_call_id.as_deref(),
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

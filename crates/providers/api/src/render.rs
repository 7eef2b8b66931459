//! One JSON object per signal, for people and snapshots (`agent-host map` prints these).
//!
//! An action renders as its own wire JSON (plus `parentToolCallId` when scoped to a subagent); a
//! pending confirmation as the `chat/toolCallReady` without `confirmed` it stands for (plus
//! `permissionKind` / `permissionPath`); every other signal as `{"signal": "<name>", …fields}`.

use agenthost_protocol::StringOrMarkdown;
use agenthost_protocol::actions::{
    ChatResponsePartAction, ChatToolCallReadyAction, ChatTurnCancelledAction,
};
use agenthost_protocol::common::JsonObject;
use agenthost_protocol::state::{ResponsePart, SystemNotificationResponsePart};
use agenthost_protocol::state::{
    ToolCallConfirmationReason, ToolCallPendingConfirmationState, ToolInput,
};
use agenthost_protocol::{AgentSignal, PendingConfirmation, SafeId, SessionUri, StateAction};
use serde_json::{Map, Value, json};

/// The `chat/toolCallReady` (without `confirmed`) the host dispatches for a pending confirmation
/// that no auto-approve rule answers: the tool moves to `pending-confirmation`.
pub fn pending_ready_action(pending: &PendingConfirmation) -> StateAction {
    awaiting_confirmation(&pending.turn_id, pending.state.clone())
}

/// `chat/toolCallReady` without `confirmed` for a call in `state`: it waits for a confirmation.
pub fn awaiting_confirmation(
    turn_id: &str,
    state: ToolCallPendingConfirmationState,
) -> StateAction {
    StateAction::ChatToolCallReady(ChatToolCallReadyAction {
        turn_id: turn_id.to_owned(),
        tool_call_id: state.tool_call_id,
        meta: state.meta,
        contributor: state.contributor,
        intention: state.intention,
        invocation_message: state.invocation_message,
        tool_input: state.tool_input,
        confirmation_title: state.confirmation_title,
        risk_assessment: state.risk_assessment,
        edits: state.edits,
        editable: state.editable,
        confirmed: None,
        options: state.options,
    })
}

/// `chat/toolCallReady { confirmed: not-needed }`: a tool the agent runs without asking goes
/// straight to `running`.
pub fn running_without_confirmation(
    turn_id: String,
    tool_call_id: String,
    invocation: String,
    tool_input: Option<ToolInput>,
    meta: Option<JsonObject>,
) -> StateAction {
    StateAction::ChatToolCallReady(ChatToolCallReadyAction {
        turn_id,
        tool_call_id,
        meta,
        contributor: None,
        intention: None,
        invocation_message: StringOrMarkdown::Plain(invocation),
        tool_input,
        confirmation_title: None,
        risk_assessment: None,
        edits: None,
        editable: None,
        confirmed: Some(ToolCallConfirmationReason::NotNeeded),
        options: None,
    })
}

/// A system notice in turn `turn_id`, as the signal a provider sends (attachments the agent
/// cannot take, a conversation that could not be resumed, …).
pub fn system_notice(session: &SessionUri, turn_id: &str, text: String) -> AgentSignal {
    AgentSignal::from(agenthost_protocol::ActionSignal {
        session: session.clone(),
        action: StateAction::ChatResponsePart(ChatResponsePartAction {
            turn_id: turn_id.to_owned(),
            part: ResponsePart::SystemNotification(SystemNotificationResponsePart {
                content: text.into(),
                meta: None,
            }),
            meta: None,
        }),
        parent_tool_call_id: None,
    })
}

/// `chat/turnCancelled` of `turn_id` after `duration_ms`, as the signal a provider sends when
/// it has wound a cancelled turn down.
pub fn turn_cancelled(session: &SessionUri, turn_id: &str, duration_ms: i64) -> AgentSignal {
    AgentSignal::from(agenthost_protocol::ActionSignal {
        session: session.clone(),
        action: StateAction::ChatTurnCancelled(ChatTurnCancelledAction {
            turn_id: turn_id.to_owned(),
            duration: duration_ms,
            meta: None,
        }),
        parent_tool_call_id: None,
    })
}

/// `"; stderr: <tail>"` for an error message, or nothing when the tail is blank.
pub fn stderr_suffix(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; stderr: {}", tail.trim())
    }
}

/// The JSON rendering of one signal (see the module documentation).
pub fn signal_json(signal: &AgentSignal) -> Value {
    match signal {
        AgentSignal::Action(action) => {
            action_json(&action.action, action.parent_tool_call_id.as_ref())
        }
        AgentSignal::PendingConfirmation(pending) => {
            let mut value = action_json(
                &pending_ready_action(pending),
                pending.parent_tool_call_id.as_ref(),
            );
            if let Value::Object(object) = &mut value {
                object.insert(
                    "permissionKind".into(),
                    pending.permission_kind.as_str().into(),
                );
                if let Some(path) = &pending.permission_path {
                    object.insert("permissionPath".into(), path.clone().into());
                }
            }
            value
        }
        AgentSignal::SubagentStarted(started) => {
            let mut object = Map::new();
            object.insert("signal".into(), "subagentStarted".into());
            object.insert("chat".into(), started.chat().as_str().into());
            object.insert("toolCallId".into(), started.tool_call_id.as_str().into());
            object.insert("agentName".into(), started.agent_name.clone().into());
            object.insert(
                "agentDisplayName".into(),
                started.agent_display_name.clone().into(),
            );
            let optional = [
                ("agentDescription", &started.agent_description),
                ("taskDescription", &started.task_description),
                ("taskPrompt", &started.task_prompt),
            ];
            for (key, value) in optional {
                if let Some(value) = value {
                    object.insert(key.into(), value.clone().into());
                }
            }
            if let Some(parent) = &started.parent_tool_call_id {
                object.insert("parentToolCallId".into(), parent.as_str().into());
            }
            Value::Object(object)
        }
        AgentSignal::SubagentCompleted(completed) => json!({
            "signal": "subagentCompleted",
            "chat": completed.chat().as_str(),
            "toolCallId": completed.tool_call_id.as_str(),
        }),
        AgentSignal::SteeringConsumed(consumed) => json!({
            "signal": "steeringConsumed",
            "id": consumed.id,
        }),
        AgentSignal::ModelCallCompleted(call) => json!({
            "signal": "modelCallCompleted",
            "turnId": call.turn_id,
            "modelCallId": call.model_call_id,
        }),
        AgentSignal::ModelLimits(reported) => json!({
            "signal": "modelLimits",
            "model": reported.model,
            "maxPromptTokens": reported.limits.max_prompt_tokens,
            "maxContextWindow": reported.limits.max_context_window,
            "maxOutputTokens": reported.limits.max_output_tokens,
        }),
    }
}

fn action_json(action: &StateAction, parent: Option<&SafeId>) -> Value {
    let mut value = match serde_json::to_value(action) {
        Ok(value) => value,
        // Wire types always serialize; keep the output one object per signal regardless.
        Err(error) => json!({ "signal": "unrenderable", "error": error.to_string() }),
    };
    if let (Some(parent), Value::Object(object)) = (parent, &mut value) {
        object.insert("parentToolCallId".into(), parent.as_str().into());
    }
    value
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

use agenthost_protocol::actions::ChatTurnCompleteAction;
use agenthost_protocol::state::ToolCallPendingConfirmationState;
use agenthost_protocol::{
    ActionSignal, AgentSignal, ChatUri, PendingConfirmation, PermissionKind, SafeId, SessionUri,
    StateAction, SubagentCompleted, SubagentStarted,
};
use serde_json::json;

use super::*;

fn session() -> SessionUri {
    SessionUri::canonical(SafeId::new("s1").unwrap())
}

fn id(id: &str) -> SafeId {
    SafeId::new(id).unwrap()
}

#[test]
fn an_action_renders_as_its_wire_json_with_its_scope() {
    let action = StateAction::ChatTurnComplete(ChatTurnCompleteAction {
        turn_id: "t1".into(),
        duration: 3,
        meta: None,
    });
    let root = AgentSignal::Action(ActionSignal {
        session: session(),
        action: action.clone(),
        parent_tool_call_id: None,
    });
    assert_eq!(
        signal_json(&root),
        json!({"type": "chat/turnComplete", "turnId": "t1", "duration": 3})
    );
    let scoped = AgentSignal::Action(ActionSignal {
        session: session(),
        action,
        parent_tool_call_id: Some(id("task1")),
    });
    assert_eq!(
        signal_json(&scoped),
        json!({"type": "chat/turnComplete", "turnId": "t1", "duration": 3,
               "parentToolCallId": "task1"})
    );
}

#[test]
fn a_pending_confirmation_renders_as_the_ready_without_confirmed_it_stands_for() {
    let pending = PendingConfirmation {
        session: session(),
        turn_id: "t1".into(),
        state: ToolCallPendingConfirmationState {
            tool_call_id: "c1".into(),
            tool_name: "Bash".into(),
            display_name: "Bash".into(),
            intention: None,
            contributor: None,
            meta: None,
            invocation_message: "Run `ls`".into(),
            tool_input: None,
            confirmation_title: Some("Run command".into()),
            risk_assessment: None,
            edits: None,
            editable: None,
            options: None,
        },
        permission_kind: PermissionKind::Shell,
        permission_path: Some("/w".into()),
        parent_tool_call_id: Some(id("task1")),
    };
    assert_eq!(
        signal_json(&AgentSignal::PendingConfirmation(pending)),
        json!({"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c1",
               "invocationMessage": "Run `ls`", "confirmationTitle": "Run command",
               "parentToolCallId": "task1", "permissionKind": "shell",
               "permissionPath": "/w"})
    );
}

#[test]
fn other_signals_render_with_their_name_and_fields() {
    let started = AgentSignal::SubagentStarted(SubagentStarted {
        session: session(),
        tool_call_id: id("task2"),
        agent_name: "Explore".into(),
        agent_display_name: "Explore".into(),
        agent_description: None,
        task_description: Some("Look".into()),
        task_prompt: None,
        parent_tool_call_id: Some(id("task1")),
    });
    let chat = ChatUri::subagent(&session(), &id("task2"));
    assert_eq!(
        signal_json(&started),
        json!({"signal": "subagentStarted", "chat": chat.as_str(), "toolCallId": "task2",
               "agentName": "Explore", "agentDisplayName": "Explore",
               "taskDescription": "Look", "parentToolCallId": "task1"})
    );
    let completed = AgentSignal::SubagentCompleted(SubagentCompleted {
        session: session(),
        tool_call_id: id("task2"),
    });
    assert_eq!(
        signal_json(&completed),
        json!({"signal": "subagentCompleted", "chat": chat.as_str(), "toolCallId": "task2"})
    );
}

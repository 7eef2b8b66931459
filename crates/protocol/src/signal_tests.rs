use super::*;
use crate::actions::SessionTitleChangedAction;

fn session() -> SessionUri {
    SessionUri::parse("copilotcli:/s1").unwrap()
}

fn id(id: &str) -> SafeId {
    SafeId::new(id).unwrap()
}

fn started(tool_call_id: &str, parent: Option<&str>) -> SubagentStarted {
    SubagentStarted {
        session: session(),
        tool_call_id: id(tool_call_id),
        agent_name: "explore".into(),
        agent_display_name: "Explore".into(),
        agent_description: None,
        task_description: Some("find the bug".into()),
        task_prompt: None,
        parent_tool_call_id: parent.map(id),
    }
}

#[test]
fn subagent_chat_derives_from_session_and_starting_tool_call() {
    let started = started("toolu_01", None);
    let completed = SubagentCompleted {
        session: session(),
        tool_call_id: id("toolu_01"),
    };
    let expected = ChatUri::subagent(&session(), &id("toolu_01"));
    assert_eq!(started.chat(), expected);
    assert_eq!(completed.chat(), expected);
    assert_eq!(
        expected.subagent_parent(),
        Ok(Some((session(), id("toolu_01"))))
    );
}

#[test]
fn scoped_actions_route_to_the_chat_their_subagent_start_announced() {
    let start = started("toolu_01", None);
    let action = AgentSignal::from(ActionSignal {
        session: session(),
        action: StateAction::SessionTitleChanged(SessionTitleChangedAction { title: "t".into() }),
        parent_tool_call_id: Some(id("toolu_01")),
    });
    assert_eq!(action.parent_tool_call_id(), Some(&id("toolu_01")));
    assert_eq!(action.scope_chat(), Some(start.chat()));
}

#[test]
fn nested_subagent_start_is_scoped_to_its_parent_subagent() {
    let outer = started("toolu_01", None);
    let inner = AgentSignal::from(started("toolu_02", Some("toolu_01")));
    assert_eq!(inner.scope_chat(), Some(outer.chat()));
    assert_eq!(AgentSignal::from(outer).scope_chat(), None);
}

#[test]
fn every_signal_names_its_session() {
    let signals: Vec<AgentSignal> = vec![
        started("a", None).into(),
        SubagentCompleted {
            session: session(),
            tool_call_id: id("a"),
        }
        .into(),
        SteeringConsumed {
            session: session(),
            id: "steer-1".into(),
        }
        .into(),
        ModelCallCompleted {
            session: session(),
            turn_id: "turn-1".into(),
            model_call_id: "call-1".into(),
        }
        .into(),
    ];
    for signal in &signals {
        assert_eq!(signal.session(), &session());
    }
    assert!(
        signals[1..]
            .iter()
            .all(|s| s.parent_tool_call_id().is_none())
    );
}

#[test]
fn permission_kind_names_round_trip() {
    for kind in [
        PermissionKind::Shell,
        PermissionKind::Write,
        PermissionKind::Read,
        PermissionKind::Url,
        PermissionKind::Mcp,
        PermissionKind::Other("custom-tool".into()),
    ] {
        assert_eq!(PermissionKind::from_name(kind.as_str()), kind);
    }
}

#[test]
fn pending_confirmation_in_a_subagent_is_scoped_to_its_chat() {
    let state = serde_json::from_value(serde_json::json!({
        "toolCallId": "toolu_02",
        "toolName": "bash",
        "displayName": "Bash",
        "invocationMessage": "Run `ls`",
    }))
    .unwrap();
    let signal = AgentSignal::from(PendingConfirmation {
        session: session(),
        turn_id: "turn-1".into(),
        state,
        permission_kind: PermissionKind::from_name("shell"),
        permission_path: None,
        parent_tool_call_id: Some(id("toolu_01")),
    });
    assert_eq!(signal.session(), &session());
    assert_eq!(
        signal.scope_chat(),
        Some(ChatUri::subagent(&session(), &id("toolu_01")))
    );
}

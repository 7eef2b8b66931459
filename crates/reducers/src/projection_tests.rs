use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{SessionInputRequest, SessionStatus};
use serde_json::json;

use crate::HostState;
use crate::fixtures::*;
use crate::projection::*;

/// Applies the projection's actions to the session, as the host does.
fn sync(host: &mut HostState) -> Vec<StateAction> {
    let actions = sync_session_input_needed(host, SESSION);
    server(host, SESSION, &actions);
    actions
}

fn entry_ids(host: &HostState) -> Vec<String> {
    session(host)
        .input_needed
        .iter()
        .flatten()
        .filter_map(|e| entry_id(e).map(str::to_owned))
        .collect()
}

fn action_summary(actions: &[StateAction]) -> Vec<String> {
    actions
        .iter()
        .map(|a| match a {
            StateAction::SessionInputNeededSet(set) => {
                format!("set {}", entry_id(&set.request).unwrap_or("?"))
            }
            StateAction::SessionInputNeededRemoved(r) => format!("remove {}", r.id),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn confirmation_then_client_execution_removes_before_adding() {
    let mut host = host_in_turn();
    server(
        &mut host,
        CHAT,
        &[
            tool_start("t1", "c1", Some(CLIENT)),
            tool_ready("t1", "c1", None),
        ],
    );
    let confirmation = format!("toolConfirmation:{CHAT}:t1:c1");
    assert_eq!(
        action_summary(&sync(&mut host)),
        [format!("set {confirmation}")]
    );
    assert!(SessionStatus::from_bits(session(&host).status).contains(SessionStatus::InputNeeded));

    host.apply_client_action(CHAT, &tool_confirmed("t1", "c1"), CLIENT)
        .unwrap();
    let execution = format!("toolClientExecution:{CHAT}:t1:c1");
    assert_eq!(
        action_summary(&sync(&mut host)),
        [format!("remove {confirmation}"), format!("set {execution}")]
    );
    match &session(&host).input_needed.as_ref().unwrap()[0] {
        SessionInputRequest::ToolClientExecution(e) => {
            assert_eq!(e.client_id, CLIENT);
            assert_eq!(e.turn_id, "t1");
            assert_eq!(e.chat, CHAT);
        }
        other => panic!("expected a client execution entry, got {other:?}"),
    }
    // Client execution is not user-blocking.
    let status = SessionStatus::from_bits(session(&host).status);
    assert!(!status.contains(SessionStatus::InputNeeded));

    host.apply_client_action(CHAT, &tool_complete("t1", "c1", false), CLIENT)
        .unwrap();
    assert_eq!(
        action_summary(&sync(&mut host)),
        [format!("remove {execution}")]
    );
    assert!(
        session(&host).input_needed.is_none(),
        "the key is absent when empty"
    );
}

#[test]
fn projecting_twice_yields_nothing() {
    let mut host = host_in_turn();
    server(
        &mut host,
        CHAT,
        &[
            tool_start("t1", "c1", None),
            tool_ready("t1", "c1", None),
            input_requested(json!({ "id": "r1", "message": "Proceed?" })),
        ],
    );
    assert_eq!(sync(&mut host).len(), 2);
    assert!(sync(&mut host).is_empty());
}

#[test]
fn all_four_kinds_with_their_ids() {
    let mut host = host_in_turn();
    server(
        &mut host,
        CHAT,
        &[
            input_requested(json!({ "id": "r1" })),
            tool_start("t1", "confirm", None),
            tool_ready("t1", "confirm", None),
            tool_start("t1", "result", None),
            tool_ready("t1", "result", Some("not-needed")),
            tool_complete("t1", "result", true),
            tool_start("t1", "client", Some(CLIENT)),
            tool_ready("t1", "client", Some("not-needed")),
            action(json!({
                "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "mcp",
                "toolName": "search", "displayName": "Search",
                "contributor": { "kind": "mcp", "customizationId": "server-1" }
            })),
            tool_ready("t1", "mcp", Some("not-needed")),
            action(json!({
                "type": "chat/toolCallAuthRequired", "turnId": "t1", "toolCallId": "mcp",
                "auth": { "reason": "required", "resource": { "resource": "https://mcp.example" } }
            })),
            tool_start("t1", "host", None),
            tool_ready("t1", "host", Some("not-needed")),
        ],
    );
    let entries = desired_input_needed(CHAT, chat(&host));
    let ids: Vec<&str> = entries.iter().filter_map(entry_id).collect();
    assert_eq!(
        ids,
        [
            format!("chatInput:{CHAT}:r1"),
            format!("toolConfirmation:{CHAT}:t1:confirm"),
            format!("toolConfirmation:{CHAT}:t1:result"),
            format!("toolClientExecution:{CHAT}:t1:client"),
            format!("toolAuthentication:{CHAT}:t1:mcp"),
        ]
    );
    assert_eq!(entries.iter().filter(|e| !is_user_blocking(e)).count(), 1);
    assert!(entries.iter().all(|e| entry_chat(e) == Some(CHAT)));
    let unknown = SessionInputRequest::Unknown(json!({ "kind": "future", "chat": "ahp-chat:/x" }));
    assert_eq!(entry_chat(&unknown), Some("ahp-chat:/x"));
    assert_eq!(entry_chat(&SessionInputRequest::Unknown(json!({}))), None);
}

#[test]
fn auto_approved_parameter_gates_are_suppressed() {
    let mut host = host_in_turn();
    server(
        &mut host,
        CHAT,
        &[
            tool_start("t1", "c1", None),
            action(json!({
                "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c1",
                "invocationMessage": "run", "_meta": { (AUTO_APPROVE_BY_SETTING_META): true }
            })),
        ],
    );
    assert!(desired_input_needed(CHAT, chat(&host)).is_empty());
    // A result gate always produces an entry.
    server(&mut host, CHAT, &[tool_complete("t1", "c1", true)]);
    assert_eq!(desired_input_needed(CHAT, chat(&host)).len(), 1);
}

#[test]
fn turn_end_clears_the_chats_entries_only() {
    let mut host = host_in_turn();
    let other = "ahp-chat:/sub";
    host.insert_chat(
        &SESSION.parse().unwrap(),
        &chat_state(other).resource.parse().unwrap(),
        chat_state(other),
    )
    .unwrap();
    server(
        &mut host,
        other,
        &[
            turn_started("s1"),
            tool_start("s1", "x", None),
            tool_ready("s1", "x", None),
        ],
    );
    server(
        &mut host,
        CHAT,
        &[tool_start("t1", "c1", None), tool_ready("t1", "c1", None)],
    );
    sync(&mut host);
    assert_eq!(entry_ids(&host).len(), 2);

    let error = action(json!({
        "type": "chat/error", "turnId": "t1", "duration": 1,
        "part": { "kind": "error", "error": { "errorType": "x", "message": "boom" } }
    }));
    server(&mut host, CHAT, &[error]);
    assert_eq!(
        action_summary(&sync(&mut host)),
        [format!("remove toolConfirmation:{CHAT}:t1:c1")]
    );
    assert_eq!(entry_ids(&host), [format!("toolConfirmation:{other}:s1:x")]);
}

#[test]
fn stale_entries_of_unknown_chats_are_removed() {
    let current = vec![
        serde_json::from_value::<SessionInputRequest>(json!({
            "kind": "chatInput", "id": "chatInput:ahp-chat:/gone:r", "chat": "ahp-chat:/gone",
            "request": { "id": "r" }
        }))
        .unwrap(),
    ];
    let actions = diff_input_needed(&current, &[]);
    assert_eq!(
        action_summary(&actions),
        ["remove chatInput:ahp-chat:/gone:r"]
    );
}

#[test]
fn changed_entries_are_upserted_equal_ones_skipped() {
    let mut host = host_in_turn();
    server(
        &mut host,
        CHAT,
        &[input_requested(json!({ "id": "r1", "message": "one" }))],
    );
    sync(&mut host);
    server(
        &mut host,
        CHAT,
        &[input_requested(json!({ "id": "r1", "message": "two" }))],
    );
    assert_eq!(
        action_summary(&sync(&mut host)),
        [format!("set chatInput:{CHAT}:r1")]
    );
    assert!(sync(&mut host).is_empty());
}

#[test]
fn chat_summary_changes_lists_only_changed_fields() {
    let mut host = host();
    let published = summary_of(chat(&host));
    assert!(chat_summary_changes(&published, chat(&host)).is_none());
    host.apply_client_action(CHAT, &turn_started("t1"), CLIENT)
        .unwrap();
    let changes = chat_summary_changes(&published, chat(&host)).unwrap();
    assert_eq!(changes.status, Some(chat(&host).status));
    assert_eq!(changes.title, None);
    assert_eq!(
        changes.modified_at, None,
        "turnStarted sets modifiedAt to startedAt, equal here"
    );
}

fn chat_with_status(
    uri: &str,
    status: u32,
    modified_at: &str,
) -> agenthost_protocol::ahp_types::state::ChatState {
    let mut chat = chat_state(uri);
    chat.status = status;
    chat.modified_at = modified_at.to_owned();
    chat
}

#[test]
fn summary_status_aggregates_over_chats() {
    let mut session = session_state();
    session.status = SessionStatus::Idle.bits() | SessionStatus::IsRead.bits();
    let idle = chat_with_status(
        "ahp-chat:/a",
        SessionStatus::Idle.bits(),
        "2026-01-01T00:00:01.000Z",
    );
    let busy = chat_with_status(
        "ahp-chat:/b",
        SessionStatus::InProgress.bits(),
        "2026-01-01T00:00:02.000Z",
    );
    let errored = chat_with_status(
        "ahp-chat:/c",
        SessionStatus::Error.bits(),
        "2026-01-01T00:00:00.500Z",
    );
    let waiting = chat_with_status(
        "ahp-chat:/d",
        SessionStatus::InputNeeded.bits(),
        "2026-01-01T00:00:00.100Z",
    );

    // Most recently modified chat leads: in progress; read flag kept.
    let agg = aggregate_session_status(&session, [("ahp-chat:/a", &idle), ("ahp-chat:/b", &busy)]);
    let status = SessionStatus::from_bits(agg.status);
    assert!(status.contains(SessionStatus::InProgress));
    assert!(!status.contains(SessionStatus::Idle));
    assert!(status.contains(SessionStatus::IsRead));
    assert_eq!(agg.modified_at.as_deref(), Some("2026-01-01T00:00:02.000Z"));

    // The default chat leads when set.
    session.default_chat = Some("ahp-chat:/a".into());
    let agg = aggregate_session_status(&session, [("ahp-chat:/a", &idle), ("ahp-chat:/b", &busy)]);
    assert!(SessionStatus::from_bits(agg.status).contains(SessionStatus::Idle));

    // Error and InputNeeded are promoted from any chat.
    let agg = aggregate_session_status(
        &session,
        [("ahp-chat:/a", &idle), ("ahp-chat:/c", &errored)],
    );
    assert!(SessionStatus::from_bits(agg.status).contains(SessionStatus::Error));
    let agg = aggregate_session_status(
        &session,
        [("ahp-chat:/a", &idle), ("ahp-chat:/d", &waiting)],
    );
    assert!(SessionStatus::from_bits(agg.status).contains(SessionStatus::InputNeeded));
}

#[test]
fn client_execution_entries_do_not_promote_input_needed() {
    let mut host = host_in_turn();
    server(
        &mut host,
        CHAT,
        &[
            tool_start("t1", "c1", Some(CLIENT)),
            tool_ready("t1", "c1", Some("not-needed")),
        ],
    );
    sync(&mut host);
    assert_eq!(entry_ids(&host).len(), 1);
    let chats = host
        .session_chats(SESSION)
        .map(|(uri, chat)| (uri.as_str(), chat));
    let agg = aggregate_session_status(session(&host), chats);
    let status = SessionStatus::from_bits(agg.status);
    assert!(status.contains(SessionStatus::InProgress));
    assert!(!status.contains(SessionStatus::InputNeeded));
}

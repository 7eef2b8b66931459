//! One test per rule that rejects, and, where a client may legitimately send the action, one
//! that accepts.

use serde_json::json;

use crate::fixtures::*;
use crate::validation::RejectionReason as R;
use crate::{ApplyError, HostState, Reduced};

/// Dispatches as `CLIENT` and returns the rejection reason, asserting the state did not change.
fn rejected(host: &mut HostState, channel: &str, a: agenthost_protocol::StateAction) -> R {
    let before = host.clone();
    match host.apply_client_action(channel, &a, CLIENT) {
        Err(ApplyError::Rejected(rejection)) => {
            assert_eq!(
                *host, before,
                "a rejected action must leave state untouched"
            );
            assert!(!rejection.to_string().is_empty());
            rejection.reason().clone()
        }
        other => panic!("expected a rejection of {a:?}, got {other:?}"),
    }
}

fn accepted(host: &mut HostState, channel: &str, a: agenthost_protocol::StateAction) -> Reduced {
    host.apply_client_action(channel, &a, CLIENT)
        .unwrap_or_else(|e| panic!("expected {a:?} to be accepted, got {e}"))
}

#[test]
fn unknown_channel_is_ignored_without_rejection() {
    let mut host = host();
    let result = host.apply_client_action("ahp-chat:/nope", &turn_started("t1"), CLIENT);
    assert_eq!(
        result,
        Err(ApplyError::UnknownChannel("ahp-chat:/nope".into()))
    );
}

#[test]
fn server_only_actions_are_rejected() {
    let mut host = host_in_turn();
    let reason = rejected(&mut host, CHAT, turn_complete("t1"));
    assert_eq!(
        reason,
        R::NotClientDispatchable {
            action: "chat/turnComplete".into()
        }
    );
    assert_eq!(
        reason_text(&reason),
        "action \"chat/turnComplete\" may not be dispatched by a client"
    );
}

#[test]
fn unknown_action_types_are_rejected() {
    let mut host = host();
    let reason = rejected(
        &mut host,
        CHAT,
        action(json!({ "type": "x-future/thing", "a": 1 })),
    );
    assert_eq!(
        reason,
        R::NotClientDispatchable {
            action: "x-future/thing".into()
        }
    );
}

#[test]
fn action_on_wrong_channel_kind_is_rejected() {
    let mut host = host();
    let reason = rejected(&mut host, SESSION, turn_started("t1"));
    assert_eq!(
        reason,
        R::WrongChannel {
            action: "chat/turnStarted".into(),
            channel: crate::ChannelKind::Session
        }
    );
    assert_eq!(
        reason_text(&reason),
        "action \"chat/turnStarted\" is not valid on a session channel"
    );
}

#[test]
fn session_title_on_a_chat_channel_renames_the_chat() {
    let mut host = host();
    let rename = action(json!({ "type": "session/titleChanged", "title": "Renamed" }));
    assert_eq!(accepted(&mut host, CHAT, rename.clone()), Reduced::Applied);
    assert_eq!(chat(&host).title, "Renamed");
    assert_eq!(session(&host).title, "Session", "only the chat is renamed");
    assert_eq!(accepted(&mut host, CHAT, rename), Reduced::NoOp);
}

#[test]
fn tool_call_confirmed_requires_pending_confirmation() {
    let mut host = host_in_turn();
    server(
        &mut host,
        CHAT,
        &[
            tool_start("t1", "call1", None),
            tool_ready("t1", "call1", Some("not-needed")),
        ],
    );
    assert_eq!(
        rejected(&mut host, CHAT, tool_confirmed("t1", "call1")),
        R::ToolCallNotAwaitingConfirmation
    );
    // Unknown call and wrong turn as well.
    assert_eq!(
        rejected(&mut host, CHAT, tool_confirmed("t1", "nope")),
        R::ToolCallNotAwaitingConfirmation
    );
    assert_eq!(
        rejected(&mut host, CHAT, tool_confirmed("t0", "call1")),
        R::ToolCallNotAwaitingConfirmation
    );

    server(
        &mut host,
        CHAT,
        &[
            tool_start("t1", "call2", None),
            tool_ready("t1", "call2", None),
        ],
    );
    assert_eq!(
        accepted(&mut host, CHAT, tool_confirmed("t1", "call2")),
        Reduced::Applied
    );
}

#[test]
fn tool_call_result_confirmed_requires_pending_result_confirmation() {
    let mut host = host_in_turn();
    server(
        &mut host,
        CHAT,
        &[
            tool_start("t1", "call1", None),
            tool_ready("t1", "call1", Some("not-needed")),
        ],
    );
    let confirm = action(json!({
        "type": "chat/toolCallResultConfirmed", "turnId": "t1", "toolCallId": "call1", "approved": true
    }));
    assert_eq!(
        rejected(&mut host, CHAT, confirm.clone()),
        R::ToolCallNotAwaitingResultConfirmation
    );
    server(&mut host, CHAT, &[tool_complete("t1", "call1", true)]);
    assert_eq!(accepted(&mut host, CHAT, confirm), Reduced::Applied);
}

#[test]
fn turn_cancelled_requires_that_active_turn() {
    let mut host = host();
    let cancel = action(json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 5 }));
    assert_eq!(
        rejected(&mut host, CHAT, cancel.clone()),
        R::NoActiveTurnToCancel
    );
    host.apply_client_action(CHAT, &turn_started("t1"), CLIENT)
        .unwrap();
    let wrong = action(json!({ "type": "chat/turnCancelled", "turnId": "t9", "duration": 5 }));
    assert_eq!(rejected(&mut host, CHAT, wrong), R::NoActiveTurnToCancel);
    assert_eq!(accepted(&mut host, CHAT, cancel), Reduced::Applied);
    assert!(chat(&host).active_turn.is_none());
}

#[test]
fn turn_started_while_a_turn_is_active_is_rejected() {
    let mut host = host_in_turn();
    let reason = rejected(&mut host, CHAT, turn_started("t2"));
    assert_eq!(reason, R::TurnInProgress);
    assert!(reason_text(&reason).contains("a turn is already in progress"));
}

#[test]
fn user_origin_only_actions_reject_other_origins() {
    let mut host = host();
    let agent_message = json!({ "text": "hi", "origin": { "kind": "agent" } });
    let started = action(json!({
        "type": "chat/turnStarted", "turnId": "t1", "startedAt": T0, "message": agent_message
    }));
    let pending = action(json!({
        "type": "chat/pendingMessageSet", "kind": "queued", "id": "q1", "message": agent_message
    }));
    let draft = action(json!({ "type": "chat/draftChanged", "draft": agent_message }));
    for a in [started, pending, draft] {
        assert_eq!(rejected(&mut host, CHAT, a), R::UserMessagesOnly);
    }
    let pending = action(json!({
        "type": "chat/pendingMessageSet", "kind": "queued", "id": "q1", "message": user_message("later")
    }));
    assert_eq!(accepted(&mut host, CHAT, pending), Reduced::Applied);
    let draft = action(json!({ "type": "chat/draftChanged", "draft": user_message("typing") }));
    assert_eq!(accepted(&mut host, CHAT, draft), Reduced::Applied);
    let cleared = action(json!({ "type": "chat/draftChanged" }));
    assert_eq!(accepted(&mut host, CHAT, cleared), Reduced::Applied);
}

#[test]
fn pending_message_removed_requires_an_existing_id() {
    let mut host = host();
    let remove = |kind: &str, id: &str| {
        action(json!({ "type": "chat/pendingMessageRemoved", "kind": kind, "id": id }))
    };
    assert_eq!(
        rejected(&mut host, CHAT, remove("queued", "q1")),
        R::UnknownPendingMessage { id: "q1".into() }
    );
    let set = |kind: &str, id: &str| {
        action(
            json!({ "type": "chat/pendingMessageSet", "kind": kind, "id": id, "message": user_message("m") }),
        )
    };
    accepted(&mut host, CHAT, set("queued", "q1"));
    accepted(&mut host, CHAT, set("steering", "s1"));
    // The id must exist under the kind named.
    assert_eq!(
        rejected(&mut host, CHAT, remove("steering", "q1")),
        R::UnknownPendingMessage { id: "q1".into() }
    );
    assert_eq!(
        accepted(&mut host, CHAT, remove("queued", "q1")),
        Reduced::Applied
    );
    assert_eq!(
        accepted(&mut host, CHAT, remove("steering", "s1")),
        Reduced::Applied
    );
}

#[test]
fn tool_call_complete_and_content_only_from_the_owning_client() {
    let mut host = host_in_turn();
    server(
        &mut host,
        CHAT,
        &[
            tool_start("t1", "mine", Some(CLIENT)),
            tool_ready("t1", "mine", Some("not-needed")),
            tool_start("t1", "theirs", Some(OTHER_CLIENT)),
            tool_ready("t1", "theirs", Some("not-needed")),
            tool_start("t1", "host", None),
            tool_ready("t1", "host", Some("not-needed")),
        ],
    );
    let content = |call: &str| {
        action(json!({
            "type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": call,
            "content": [{ "type": "text", "text": "partial" }]
        }))
    };
    assert_eq!(
        rejected(&mut host, CHAT, tool_complete("t1", "theirs", false)),
        R::NotOwningClient
    );
    assert_eq!(
        rejected(&mut host, CHAT, tool_complete("t1", "host", false)),
        R::NotOwningClient
    );
    assert_eq!(
        rejected(&mut host, CHAT, content("theirs")),
        R::NotOwningClient
    );
    assert_eq!(
        rejected(&mut host, CHAT, tool_complete("t1", "ghost", false)),
        R::UnknownToolCall {
            tool_call_id: "ghost".into()
        }
    );
    assert_eq!(accepted(&mut host, CHAT, content("mine")), Reduced::Applied);
    assert_eq!(
        accepted(&mut host, CHAT, tool_complete("t1", "mine", false)),
        Reduced::Applied
    );
}

#[test]
fn chat_working_directory_must_be_in_the_session_set() {
    let mut host = host();
    let set = |dir: &str| action(json!({ "type": "chat/workingDirectorySet", "directory": dir }));
    assert_eq!(
        rejected(&mut host, CHAT, set("file:///etc")),
        R::DirectoryNotInSession {
            directory: "file:///etc".into()
        }
    );
    assert_eq!(
        accepted(&mut host, CHAT, set("file:///work/a")),
        Reduced::Applied
    );
}

#[test]
fn config_changes_only_session_mutable_keys() {
    let mut host = host();
    let change = |config: serde_json::Value, replace: bool| {
        action(json!({ "type": "session/configChanged", "config": config, "replace": replace }))
    };
    assert_eq!(
        rejected(&mut host, SESSION, change(json!({ "model": "m2" }), false)),
        R::NotSessionMutable {
            property: "model".into()
        }
    );
    assert_eq!(
        rejected(&mut host, SESSION, change(json!({ "color": "red" }), false)),
        R::UnknownConfigProperty {
            property: "color".into()
        }
    );
    // Replacing without the non-mutable key would drop it.
    assert_eq!(
        rejected(&mut host, SESSION, change(json!({ "mode": "auto" }), true)),
        R::NotSessionMutable {
            property: "model".into()
        }
    );
    // Sending an unchanged non-mutable value back is no change.
    assert_eq!(
        accepted(
            &mut host,
            SESSION,
            change(json!({ "mode": "auto", "model": "m1" }), false)
        ),
        Reduced::Applied
    );
    assert_eq!(
        session(&host).config.as_ref().unwrap().values["mode"],
        json!("auto")
    );
}

#[test]
fn active_client_set_must_name_the_dispatcher() {
    let mut host = host();
    let set = |id: &str| {
        action(json!({
            "type": "session/activeClientSet", "activeClient": { "clientId": id, "tools": [] }
        }))
    };
    assert_eq!(
        rejected(&mut host, SESSION, set(OTHER_CLIENT)),
        R::ClientIdMismatch {
            dispatcher: CLIENT.into(),
            named: OTHER_CLIENT.into()
        }
    );
    assert_eq!(accepted(&mut host, SESSION, set(CLIENT)), Reduced::Applied);
    let remove =
        |id: &str| action(json!({ "type": "session/activeClientRemoved", "clientId": id }));
    assert!(matches!(
        rejected(&mut host, SESSION, remove(OTHER_CLIENT)),
        R::ClientIdMismatch { .. }
    ));
    assert_eq!(
        accepted(&mut host, SESSION, remove(CLIENT)),
        Reduced::Applied
    );
}

#[test]
fn default_chat_changed_is_server_only_and_must_target_the_catalog() {
    let mut host = host();
    let to =
        |chat: &str| action(json!({ "type": "session/defaultChatChanged", "defaultChat": chat }));
    assert!(matches!(
        rejected(&mut host, SESSION, to(CHAT)),
        R::NotClientDispatchable { .. }
    ));
    let before = host.clone();
    let result = host.apply_server_action(SESSION, &to("ahp-chat:/elsewhere"));
    match result {
        Err(ApplyError::Rejected(r)) => assert_eq!(
            *r.reason(),
            R::DefaultChatNotInCatalog {
                chat: "ahp-chat:/elsewhere".into()
            }
        ),
        other => panic!("expected rejection, got {other:?}"),
    }
    assert_eq!(host, before);
    assert_eq!(
        host.apply_server_action(SESSION, &to(CHAT)),
        Ok(Reduced::Applied)
    );
    assert_eq!(session(&host).default_chat.as_deref(), Some(CHAT));
}

#[test]
fn turn_resume_requires_a_resumable_errored_last_turn() {
    let mut host = host_in_turn();
    let resume = |turn: &str| action(json!({ "type": "chat/turnResume", "turnId": turn }));
    // Active turn: not resumable.
    assert_eq!(rejected(&mut host, CHAT, resume("t1")), R::TurnNotResumable);
    let error = |resumable: bool| {
        action(json!({
            "type": "chat/error", "turnId": "t1", "duration": 3,
            "part": { "kind": "error", "error": { "errorType": "rateLimited", "message": "slow down" }, "resumable": resumable }
        }))
    };
    server(&mut host, CHAT, &[error(false)]);
    assert_eq!(rejected(&mut host, CHAT, resume("t1")), R::TurnNotResumable);

    let mut host = host_in_turn();
    server(&mut host, CHAT, &[error(true)]);
    assert_eq!(rejected(&mut host, CHAT, resume("t0")), R::TurnNotResumable);
    assert_eq!(accepted(&mut host, CHAT, resume("t1")), Reduced::Applied);
    assert_eq!(chat(&host).active_turn.as_ref().unwrap().id, "t1");
}

fn questions_request() -> serde_json::Value {
    json!({
        "id": "r1",
        "questions": [
            { "kind": "text", "id": "name", "message": "Name?", "required": true, "max": 5 },
            { "kind": "integer", "id": "count", "message": "How many?" },
            { "kind": "single-select", "id": "color", "message": "Color?",
              "options": [{ "id": "red", "label": "Red" }, { "id": "blue", "label": "Blue" }] },
            { "kind": "multi-select", "id": "tags", "message": "Tags?", "max": 1,
              "options": [{ "id": "a", "label": "A" }, { "id": "b", "label": "B" }] },
            { "kind": "boolean", "id": "ok", "message": "OK?" }
        ]
    })
}

fn host_with_input_request() -> HostState {
    let mut host = host_in_turn();
    server(&mut host, CHAT, &[input_requested(questions_request())]);
    host
}

fn answer_changed(
    request: &str,
    question: &str,
    answer: serde_json::Value,
) -> agenthost_protocol::StateAction {
    action(json!({
        "type": "chat/inputAnswerChanged", "requestId": request, "questionId": question, "answer": answer
    }))
}

fn submitted(value: serde_json::Value) -> serde_json::Value {
    json!({ "state": "submitted", "value": value })
}

#[test]
fn input_answer_changed_rejects_unknown_requests_questions_and_malformed_answers() {
    let mut host = host_with_input_request();
    let text = |t: &str| json!({ "kind": "text", "value": t });
    assert_eq!(
        rejected(
            &mut host,
            CHAT,
            answer_changed("r9", "name", submitted(text("Al")))
        ),
        R::UnknownInputRequest {
            request_id: "r9".into()
        }
    );
    assert_eq!(
        rejected(
            &mut host,
            CHAT,
            answer_changed("r1", "age", submitted(text("Al")))
        ),
        R::UnknownQuestion {
            question_id: "age".into()
        }
    );
    let malformed = [
        (
            "name",
            submitted(json!({ "kind": "boolean", "value": true })),
        ),
        ("name", submitted(text("far too long"))),
        (
            "count",
            submitted(json!({ "kind": "number", "value": 1.5 })),
        ),
        (
            "color",
            submitted(json!({ "kind": "selected", "value": "green" })),
        ),
        (
            "tags",
            submitted(json!({ "kind": "selected-many", "value": ["a", "b"] })),
        ),
        ("ok", submitted(json!({ "kind": "text", "value": "yes" }))),
    ];
    for (question, answer) in malformed {
        let reason = rejected(&mut host, CHAT, answer_changed("r1", question, answer));
        assert!(
            matches!(&reason, R::MalformedAnswer { question_id, .. } if question_id == question),
            "{question}: {reason:?}"
        );
    }
    // A draft is only checked for its kind: a half-typed answer may exceed the bounds.
    let draft = json!({ "state": "draft", "value": { "kind": "text", "value": "far too long" } });
    assert_eq!(
        accepted(&mut host, CHAT, answer_changed("r1", "name", draft)),
        Reduced::Applied
    );
    assert_eq!(
        accepted(
            &mut host,
            CHAT,
            answer_changed(
                "r1",
                "color",
                submitted(json!({ "kind": "selected", "value": "red" }))
            )
        ),
        Reduced::Applied
    );
    assert_eq!(
        accepted(
            &mut host,
            CHAT,
            answer_changed("r1", "tags", json!({ "state": "skipped" }))
        ),
        Reduced::Applied
    );
}

#[test]
fn input_completed_accept_needs_every_required_answer_submitted() {
    let mut host = host_with_input_request();
    let complete = |response: &str, answers: serde_json::Value| {
        action(json!({
            "type": "chat/inputCompleted", "requestId": "r1", "response": response, "answers": answers
        }))
    };
    assert_eq!(
        rejected(&mut host, CHAT, complete("accept", json!({}))),
        R::MissingRequiredAnswer {
            question_id: "name".into()
        }
    );
    assert_eq!(
        rejected(
            &mut host,
            CHAT,
            complete("accept", json!({ "name": { "state": "skipped" } }))
        ),
        R::MissingRequiredAnswer {
            question_id: "name".into()
        }
    );
    assert!(matches!(
        rejected(
            &mut host,
            CHAT,
            complete(
                "accept",
                json!({ "name": submitted(json!({ "kind": "number", "value": 3 })) })
            )
        ),
        R::MalformedAnswer { .. }
    ));
    // Decline needs no answers.
    let mut declined = host.clone();
    assert_eq!(
        accepted(&mut declined, CHAT, complete("decline", json!({}))),
        Reduced::Applied
    );
    // An answer recorded earlier counts.
    accepted(
        &mut host,
        CHAT,
        answer_changed(
            "r1",
            "name",
            submitted(json!({ "kind": "text", "value": "Al" })),
        ),
    );
    assert_eq!(
        accepted(&mut host, CHAT, complete("accept", json!({}))),
        Reduced::Applied
    );
    // Completed requests are closed.
    assert_eq!(
        rejected(&mut host, CHAT, complete("cancel", json!({}))),
        R::UnknownInputRequest {
            request_id: "r1".into()
        }
    );
}

#[test]
fn envelopes_with_origin_are_validated_as_client_dispatches() {
    let mut host = host_in_turn();
    let envelope = |origin: bool| agenthost_protocol::ActionEnvelope {
        channel: CHAT.into(),
        action: turn_complete("t1"),
        server_seq: 1,
        origin: origin.then(|| agenthost_protocol::ActionOrigin {
            client_id: CLIENT.into(),
            client_seq: 1,
        }),
        rejection_reason: None,
    };
    assert!(matches!(
        host.apply_envelope(&envelope(true)),
        Err(ApplyError::Rejected(_))
    ));
    assert_eq!(host.apply_envelope(&envelope(false)), Ok(Reduced::Applied));
}

fn reason_text(reason: &R) -> String {
    reason.to_string()
}

#[test]
fn a_turn_start_must_carry_a_usable_timestamp_and_a_safe_id() {
    let mut host = host();
    let start = |turn: &str, at: &str| {
        action(json!({
            "type": "chat/turnStarted", "turnId": turn, "startedAt": at,
            "message": { "text": "hi", "origin": { "kind": "user" } }
        }))
    };
    let max = "9999-12-31T23:59:59.999Z";
    for bad in ["not-a-date", "", "2026-13-01T00:00:00Z", max] {
        assert!(
            matches!(
                rejected(&mut host, CHAT, start("t1", bad)),
                R::InvalidTimestamp { .. }
            ),
            "{bad}"
        );
    }
    for bad in ["", "..", "a\nb"] {
        let reason = rejected(&mut host, CHAT, start(bad, "2026-03-01T10:00:00.000Z"));
        assert!(matches!(reason, R::InvalidId { .. }), "{bad:?}");
    }
    let huge = "x".repeat(1_000_000);
    let reason = rejected(&mut host, CHAT, start("t1", &huge));
    assert!(
        reason.to_string().len() < 300,
        "the value is quoted, not echoed"
    );
    accepted(&mut host, CHAT, start("t1", "2026-03-01T10:00:00.000Z"));
}

#[test]
fn a_turn_whose_start_cannot_be_read_can_still_end() {
    for end in ["chat/turnCancelled", "chat/turnComplete"] {
        // Server actions are not validated: a start stored before starts were checked.
        let mut host = host();
        let start = action(json!({
            "type": "chat/turnStarted", "turnId": "t1", "startedAt": "not-a-date",
            "message": { "text": "hi", "origin": { "kind": "user" } }
        }));
        host.apply_server_action(CHAT, &start).unwrap();
        let turn = "t1";
        let action = action(json!({ "type": end, "turnId": turn, "duration": 5 }));
        let reduced = if end == "chat/turnCancelled" {
            accepted(&mut host, CHAT, action)
        } else {
            host.apply_server_action(CHAT, &action).unwrap()
        };
        assert_eq!(reduced, Reduced::Applied, "{end}");
        assert!(chat(&host).active_turn.is_none(), "{end}");
    }
}

#[test]
fn rejection_messages_quote_client_values_briefly() {
    let mut host = host();
    let huge = "q".repeat(100_000);
    let reason = rejected(
        &mut host,
        CHAT,
        action(json!({ "type": "chat/pendingMessageRemoved", "kind": "queued", "id": huge })),
    );
    assert!(reason.to_string().len() < 300);
}

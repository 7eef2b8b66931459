use agenthost_protocol::ahp_types::state::ToolInput;
use serde_json::json;

use super::*;
use crate::fixtures::*;

fn class(entry: &SessionInputRequest, own: Option<&str>) -> Class {
    Class::of(entry, own).unwrap().2
}

#[test]
fn own_client_confirmation_is_an_execution_entry() {
    let e = client_confirmation(CHAT, "c1", "browser", CLIENT, "{}");
    let (id, chat, c) = Class::of(&e, Some(CLIENT)).unwrap();
    assert_eq!(id, format!("toolConfirmation:{CHAT}:{TURN}:c1"));
    assert_eq!(chat, CHAT);
    assert!(matches!(
        c,
        Class::Execution {
            phase: Phase::Confirmation,
            pre_approval: None,
            ..
        }
    ));
    // The host engine (no client id) and another client see a confirmation to answer.
    for own in [None, Some(OTHER_CLIENT)] {
        assert!(matches!(
            class(&e, own),
            Class::Confirmation {
                gate: Gate::Parameters,
                ..
            }
        ));
    }
}

#[test]
fn client_executions_are_partitioned_by_client_id() {
    let e = client_execution(CHAT, "c1", "browser", CLIENT, "setting", "{}");
    match class(&e, Some(CLIENT)) {
        Class::Execution {
            phase,
            pre_approval,
            input,
            ..
        } => {
            assert_eq!(phase, Phase::Execution);
            assert_eq!(pre_approval, Some(ToolCallConfirmationReason::Setting));
            assert_eq!(input, Some(ToolInput::Inline("{}".to_owned())));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(class(&e, Some(OTHER_CLIENT)), Class::Ignored);
    assert_eq!(class(&e, None), Class::Ignored);
}

#[test]
fn gates_inputs_and_authentications() {
    assert!(matches!(
        class(&result_confirmation(CHAT, "c1", "shell"), Some(CLIENT)),
        Class::Confirmation {
            gate: Gate::Result,
            ..
        }
    ));
    let input = class(&chat_input(CHAT, "r1"), None);
    assert_eq!(
        input.claim_key(),
        Some(ClaimKey::Input(InputKey::new(CHAT, "r1")))
    );
    let auth = class(&authentication(CHAT, "c9", "issues"), None);
    assert_eq!(auth.tool_call(), Some(&key(CHAT, "c9")));
    assert_eq!(auth.claim_key(), Some(ClaimKey::ToolCall(key(CHAT, "c9"))));
}

#[test]
fn unknown_kinds_are_ignored_and_need_a_string_id() {
    let with_id = entry(json!({ "kind": "future", "id": "x", "chat": CHAT }));
    assert_eq!(
        Class::of(&with_id, None),
        Some(("x".to_owned(), CHAT.to_owned(), Class::Ignored))
    );
    let without = entry(json!({ "kind": "future" }));
    assert_eq!(Class::of(&without, None), None);
}

#[test]
fn identity_ignores_pre_approval_but_not_input_or_phase() {
    let a = class(
        &client_execution(CHAT, "c1", "browser", CLIENT, "setting", "{}"),
        Some(CLIENT),
    );
    let b = class(
        &client_execution(CHAT, "c1", "browser", CLIENT, "user-action", "{}"),
        Some(CLIENT),
    );
    let c = class(
        &client_execution(CHAT, "c1", "browser", CLIENT, "setting", "{\"x\":1}"),
        Some(CLIENT),
    );
    let d = class(
        &client_confirmation(CHAT, "c1", "browser", CLIENT, "{}"),
        Some(CLIENT),
    );
    assert!(a.same_obligation(&b));
    assert!(!a.same_obligation(&c));
    assert!(!a.same_obligation(&d));
    let param = class(&server_confirmation(CHAT, "c1", "shell"), None);
    let result = class(&result_confirmation(CHAT, "c1", "shell"), None);
    assert!(!param.same_obligation(&result));
    assert!(Class::Ignored.same_obligation(&Class::Ignored));
}

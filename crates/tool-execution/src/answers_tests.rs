use serde_json::{Value, json};

use super::*;

fn key() -> ToolCallKey {
    ToolCallKey::new("ahp-chat:/c", "t1", "call-1")
}

fn wire(action: &StateAction) -> Value {
    serde_json::to_value(action).unwrap()
}

#[test]
fn parameter_denial_is_the_spec_action() {
    let action = deny_parameters(&key(), Some("nobody there".to_owned()), None);
    assert_eq!(
        wire(&action),
        json!({
            "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "call-1",
            "approved": false, "reason": "denied", "reasonMessage": "nobody there"
        })
    );
}

#[test]
fn parameter_approval_preserves_the_reason() {
    for (reason, text) in [
        (ToolCallConfirmationReason::NotNeeded, "not-needed"),
        (ToolCallConfirmationReason::Setting, "setting"),
        (ToolCallConfirmationReason::UserAction, "user-action"),
    ] {
        let action = approve_parameters(&key(), reason, Some("opt".to_owned()));
        assert_eq!(
            wire(&action),
            json!({
                "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "call-1",
                "approved": true, "confirmed": text, "selectedOptionId": "opt"
            })
        );
    }
}

#[test]
fn result_gate_and_input_answers() {
    assert_eq!(
        wire(&confirm_result(&key(), false)),
        json!({
            "type": "chat/toolCallResultConfirmed", "turnId": "t1", "toolCallId": "call-1",
            "approved": false
        })
    );
    assert_eq!(
        wire(&cancel_input(&InputKey::new("ahp-chat:/c", "r1"))),
        json!({ "type": "chat/inputCompleted", "requestId": "r1", "response": "cancel" })
    );
}

#[test]
fn client_unavailable_and_authentication_results() {
    let action = complete(&key(), client_unavailable_result("Browser"));
    assert_eq!(
        wire(&action),
        json!({
            "type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": "call-1",
            "result": {
                "success": false, "pastTenseMessage": "Couldn't run Browser",
                "error": {
                    "message": "Browser needs confirmation but no observer was available to answer it.",
                    "code": "clientUnavailable"
                }
            }
        })
    );
    let auth = authentication_cancelled_result();
    assert_eq!(
        serde_json::to_value(&auth).unwrap(),
        json!({
            "success": false, "pastTenseMessage": "Cancelled tool call",
            "error": { "message": "Authentication was cancelled", "code": "cancelled" }
        })
    );
    assert_eq!(error_code(&auth), Some("cancelled"));
    assert_eq!(error_code(&text_result("Ran", "done")), None);
}

#[test]
fn answer_targets_classify_the_funnel_key() {
    let chat = "ahp-chat:/c".to_owned();
    assert_eq!(
        answer_target(&chat, &deny_parameters(&key(), None, None)),
        Some(AnswerTarget::ToolCall(key(), AnswerKind::ToolCallConfirmed))
    );
    assert_eq!(
        answer_target(&chat, &confirm_result(&key(), true)),
        Some(AnswerTarget::ToolCall(
            key(),
            AnswerKind::ToolCallResultConfirmed
        ))
    );
    assert_eq!(
        answer_target(&chat, &complete(&key(), text_result("Ran", "ok"))),
        Some(AnswerTarget::ToolCall(key(), AnswerKind::ToolCallComplete))
    );
    assert_eq!(
        answer_target(&chat, &cancel_input(&InputKey::new("x", "r1"))),
        Some(AnswerTarget::Input(InputKey::new(chat.clone(), "r1")))
    );
    assert_eq!(answer_target(&chat, &content_changed(&key(), vec![])), None);
}

#[test]
fn durations_read_naturally() {
    assert_eq!(human_duration(Duration::from_millis(5000)), "5s");
    assert_eq!(human_duration(Duration::from_millis(1500)), "1.5s");
    assert_eq!(human_duration(Duration::from_millis(250)), "250ms");
    assert_eq!(human_duration(Duration::from_millis(1234)), "1234ms");
    assert!(unattended_denial_message("Shell", Duration::from_secs(5)).contains("Shell within 5s"));
}

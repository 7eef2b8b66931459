use super::*;

#[test]
fn error_info_has_no_stack_or_meta() {
    let info = error_info(PROVIDER_EXITED, "claude exited with status 1");
    assert_eq!(
        serde_json::to_value(&info).unwrap(),
        serde_json::json!({"errorType": "providerExited", "message": "claude exited with status 1"})
    );
}

#[test]
fn error_part_omits_resumable_unless_true() {
    let info = error_info(INTERNAL_ERROR, "boom");
    assert_eq!(
        serde_json::to_value(error_part(info.clone(), false)).unwrap(),
        serde_json::json!({"error": {"errorType": "internalError", "message": "boom"}})
    );
    assert_eq!(
        serde_json::to_value(error_part(info, true)).unwrap(),
        serde_json::json!({
            "error": {"errorType": "internalError", "message": "boom"},
            "resumable": true
        })
    );
}

#[test]
fn well_known_error_types_are_camel_case() {
    assert_eq!(
        [
            INTERNAL_ERROR,
            NO_AGENT,
            CLIENT_UNAVAILABLE,
            PROVIDER_EXITED
        ],
        [
            "internalError",
            "noAgent",
            "clientUnavailable",
            "providerExited"
        ]
    );
}

#[test]
fn chat_error_ends_the_turn_with_the_error_part() {
    let action = chat_error("t1", 42, error_info(NO_AGENT, "No agent"), true);
    let value = serde_json::to_value(&action).unwrap();
    assert_eq!(value["type"], "chat/error");
    assert_eq!(value["turnId"], "t1");
    assert_eq!(value["duration"], 42);
    assert_eq!(
        value["part"],
        serde_json::json!({"kind": "error", "error": {"errorType": "noAgent", "message": "No agent"}, "resumable": true})
    );
}

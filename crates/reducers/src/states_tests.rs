use agenthost_protocol::ahp_types::state::{ActiveTurn, ErrorResponsePart};
use serde_json::json;

use super::errored_turn;

fn part() -> ErrorResponsePart {
    serde_json::from_value(json!({
        "error": { "errorType": "executionInterrupted", "message": "stopped" },
        "resumable": false
    }))
    .unwrap()
}

fn active(started_at: &str) -> ActiveTurn {
    serde_json::from_value(json!({
        "id": "t1", "startedAt": started_at,
        "message": { "text": "go", "origin": { "kind": "user" } },
        "responseParts": [
            { "kind": "markdown", "id": "m1", "content": "Looking." },
            { "kind": "toolCall", "toolCall": { "status": "running", "toolCallId": "c1",
              "toolName": "Task", "displayName": "Task", "invocationMessage": "Explore",
              "confirmed": "not-needed" } },
            { "kind": "toolCall", "toolCall": { "status": "completed", "toolCallId": "c0",
              "toolName": "grep", "displayName": "grep", "invocationMessage": "Search",
              "confirmed": "not-needed", "success": true, "pastTenseMessage": "Searched" } }
        ]
    }))
    .unwrap()
}

#[test]
fn an_errored_turn_cancels_calls_in_flight_and_ends_with_the_error() {
    let turn =
        serde_json::to_value(errored_turn(active("2026-01-01T00:00:00.000Z"), part())).unwrap();
    assert_eq!(turn["state"], "error");
    assert_eq!(turn["startedAt"], "2026-01-01T00:00:00.000Z");
    assert!(turn.get("duration").is_none(), "{turn}");
    let parts = turn["responseParts"].as_array().unwrap();
    assert_eq!(parts[0]["content"], "Looking.");
    assert_eq!(parts[1]["toolCall"]["status"], "cancelled");
    assert_eq!(parts[1]["toolCall"]["reason"], "skipped");
    assert_eq!(parts[2]["toolCall"]["status"], "completed");
    assert_eq!(parts[3]["error"]["errorType"], "executionInterrupted");
}

#[test]
fn an_unreadable_start_time_is_kept_and_does_not_stop_the_reduction() {
    let turn = errored_turn(active("not a time"), part());
    assert_eq!(turn.started_at.as_deref(), Some("not a time"));
    let parts = serde_json::to_value(&turn.response_parts).unwrap();
    assert_eq!(parts[1]["toolCall"]["status"], "cancelled");
}

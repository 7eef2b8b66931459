// Test code: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_client_protocol::v1::schema::{PromptResponse, SessionUpdate};
use serde_json::{Value, json};

use super::*;

fn parts(value: Value) -> Vec<ResponsePart> {
    serde_json::from_value(value).unwrap()
}

fn markdown(content: &str) -> Value {
    json!({ "kind": "markdown", "id": "m1", "content": content })
}

fn tool(state: Value) -> Value {
    let mut call = json!({ "toolCallId": "c1", "toolName": "write_file", "displayName": "Write" });
    call.as_object_mut()
        .unwrap()
        .extend(state.as_object().unwrap().clone());
    json!({ "kind": "toolCall", "toolCall": call })
}

/// Every update is one ACP's schema accepts.
fn conform(updates: &[Value]) {
    for update in updates {
        let parsed: Result<SessionUpdate, _> = serde_json::from_value(update.clone());
        assert!(parsed.is_ok(), "{update}: {parsed:?}");
    }
}

#[test]
fn text_is_sent_as_it_grows_and_only_once() {
    let mut progress = TurnProgress::default();
    let first = progress.advance(&parts(json!([markdown("Hel")])));
    assert_eq!(
        first,
        [
            json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": "Hel" } })
        ]
    );
    let more = progress.advance(&parts(json!([
        markdown("Hello"),
        { "kind": "reasoning", "id": "r1", "content": "hmm" }
    ])));
    assert_eq!(more.len(), 2);
    assert_eq!(more[0]["content"]["text"], "lo");
    assert_eq!(more[1]["sessionUpdate"], "agent_thought_chunk");
    assert!(
        progress
            .advance(&parts(json!([
                markdown("Hello"),
                { "kind": "reasoning", "id": "r1", "content": "hmm" }
            ])))
            .is_empty(),
        "nothing new, nothing sent"
    );
    conform(&first);
    conform(&more);
}

#[test]
fn a_tool_call_is_announced_then_updated_at_each_change() {
    let mut progress = TurnProgress::default();
    let streaming = progress.advance(&parts(json!([tool(json!({ "status": "streaming" }))])));
    assert_eq!(streaming[0]["sessionUpdate"], "tool_call");
    assert_eq!(streaming[0]["status"], "pending");
    assert_eq!(streaming[0]["kind"], "edit");
    let pending = progress.advance(&parts(json!([tool(json!({
        "status": "pending-confirmation",
        "invocationMessage": "Write `a.txt`",
        "toolInput": "{\"path\":\"a.txt\"}"
    }))])));
    assert_eq!(pending.len(), 1, "the title changed");
    assert_eq!(pending[0]["sessionUpdate"], "tool_call_update");
    assert_eq!(pending[0]["title"], "Write `a.txt`");
    assert_eq!(pending[0]["rawInput"], json!({ "path": "a.txt" }));
    let completed = progress.advance(&parts(json!([tool(json!({
        "status": "completed",
        "invocationMessage": "Write `a.txt`",
        "success": true,
        "confirmed": "user-action",
        "pastTenseMessage": "Wrote `a.txt`",
        "content": [{ "type": "text", "text": "Wrote 2 bytes" }]
    }))])));
    assert_eq!(completed[0]["status"], "completed");
    assert_eq!(completed[0]["title"], "Wrote `a.txt`");
    assert_eq!(
        completed[0]["content"],
        json!([{ "type": "content", "content": { "type": "text", "text": "Wrote 2 bytes" } }])
    );
    let cancelled = TurnProgress::default().advance(&parts(json!([tool(json!({
        "status": "cancelled",
        "invocationMessage": "Write `a.txt`",
        "reason": "denied"
    }))])));
    assert_eq!(
        cancelled[0]["status"], "failed",
        "ACP v1 has no cancelled status"
    );
    conform(&streaming);
    conform(&pending);
    conform(&completed);
    conform(&cancelled);
}

#[test]
fn a_replay_shows_what_following_the_turn_showed() {
    let steps = [
        json!([markdown("Hi")]),
        json!([markdown("Hi there"), tool(json!({ "status": "streaming" }))]),
        json!([
            markdown("Hi there"),
            tool(json!({ "status": "running",
            "invocationMessage": "Write", "confirmed": "not-needed" }))
        ]),
        json!([markdown("Hi there"), tool(json!({ "status": "completed",
            "invocationMessage": "Write", "success": false, "pastTenseMessage": "Failed",
            "confirmed": "not-needed",
            "content": [{ "type": "text", "text": "disk full" }] })),
            { "kind": "systemNotification", "content": "Cancelled" },
            { "kind": "error", "error": { "errorType": "x", "message": "boom" } }]),
    ];
    let mut live = TurnProgress::default();
    let followed: Vec<Value> = steps
        .iter()
        .flat_map(|step| live.advance(&parts(step.clone())))
        .collect();
    let replayed = TurnProgress::default().advance(&parts(steps[3].clone()));
    let text = |updates: &[Value]| -> String {
        updates
            .iter()
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    };
    assert_eq!(text(&followed), text(&replayed));
    let last_status = |updates: &[Value]| {
        updates
            .iter()
            .rev()
            .find_map(|u| u["status"].as_str().map(str::to_owned))
    };
    assert_eq!(last_status(&followed).as_deref(), Some("failed"));
    assert_eq!(last_status(&replayed).as_deref(), Some("failed"));
    assert!(text(&replayed).contains("Error: boom"));
    conform(&followed);
    conform(&replayed);
}

#[test]
fn usage_is_what_acp_puts_in_a_prompt_answer() {
    let info: UsageInfo = serde_json::from_value(json!({
        "inputTokens": 200, "outputTokens": 40, "cacheReadTokens": 100
    }))
    .unwrap();
    let usage = usage(&info).unwrap();
    assert_eq!(usage["totalTokens"], 240);
    let answer: PromptResponse =
        serde_json::from_value(json!({ "stopReason": "end_turn", "usage": usage })).unwrap();
    let round_trip = serde_json::to_value(&answer).unwrap();
    assert_eq!(round_trip["usage"]["cachedReadTokens"], 100);
    let none: UsageInfo = serde_json::from_value(json!({ "outputTokens": 3 })).unwrap();
    assert_eq!(super::usage(&none), None, "no input count, no usage");
}

#[test]
fn a_waiting_confirmation_is_described_for_the_permission_question() {
    let state: ToolCallState = serde_json::from_value(json!({
        "status": "pending-confirmation", "toolCallId": "c1", "toolName": "bash",
        "displayName": "Shell", "invocationMessage": "Run `ls`", "toolInput": "ls -la"
    }))
    .unwrap();
    let call = permission_tool_call(&state).unwrap();
    assert_eq!(call["kind"], "execute");
    assert_eq!(
        call["rawInput"], "ls -la",
        "text that is not JSON stays text"
    );
    let request = json!({ "sessionId": "s", "toolCall": call, "options": [
        { "optionId": "allow_once", "name": "Allow once", "kind": "allow_once" }] });
    let parsed: Result<agent_client_protocol::v1::schema::RequestPermissionRequest, _> =
        serde_json::from_value(request);
    assert!(parsed.is_ok(), "{parsed:?}");
}

#[test]
fn a_file_edit_held_inline_is_an_acp_diff_and_one_held_elsewhere_a_summary() {
    use base64::Engine as _;
    let data = |text: &str| {
        format!(
            "data:text/plain;charset=utf-8;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    };
    let edit = |before: &str, after: &str| {
        json!({ "type": "fileEdit",
            "before": { "uri": "file:///w/a.txt", "content": { "uri": before } },
            "after": { "uri": "file:///w/a.txt", "content": { "uri": after } },
            "diff": { "added": 1, "removed": 1 } })
    };
    let call = |content: Value| {
        parts(json!([tool(
            json!({ "status": "completed", "invocationMessage": "Edit",
            "success": true, "pastTenseMessage": "Edited", "confirmed": "not-needed",
            "content": [content] })
        )]))
    };
    let inline = TurnProgress::default().advance(&call(edit(&data("old\n"), &data("new\n"))));
    assert_eq!(
        inline[0]["content"][0],
        json!({ "type": "diff", "path": "/w/a.txt", "oldText": "old\n", "newText": "new\n" })
    );
    conform(&inline);
    let elsewhere = TurnProgress::default().advance(&call(edit(
        "ahp-checkpoint:/x/before",
        "ahp-checkpoint:/x/after",
    )));
    assert_eq!(
        elsewhere[0]["content"][0]["content"]["text"],
        "Edited /w/a.txt (+1 -1)"
    );
    conform(&elsewhere);
}

#[test]
fn a_plan_tool_call_is_also_an_acp_plan_sent_once() {
    let todo = |status: &str| {
        json!({ "kind": "toolCall", "toolCall": { "toolCallId": "c1", "toolName": "TodoWrite",
            "displayName": "Todo", "status": status, "invocationMessage": "Update the plan",
            "confirmed": "not-needed", "success": true, "pastTenseMessage": "Updated the plan",
            "toolInput": "{\"todos\":[{\"content\":\"Read\",\"status\":\"completed\"},\
                          {\"content\":\"Write\",\"status\":\"in_progress\"},\
                          {\"content\":\"Test\",\"status\":\"pending\"}]}" } })
    };
    let mut progress = TurnProgress::default();
    let running = progress.advance(&parts(json!([todo("running")])));
    let plans: Vec<&Value> = running
        .iter()
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert_eq!(plans.len(), 1);
    assert_eq!(
        plans[0]["entries"],
        json!([
            { "content": "Read", "priority": "medium", "status": "completed" },
            { "content": "Write", "priority": "medium", "status": "in_progress" },
            { "content": "Test", "priority": "medium", "status": "pending" },
        ])
    );
    conform(&running);
    let completed = progress.advance(&parts(json!([todo("completed")])));
    assert!(
        completed.iter().all(|u| u["sessionUpdate"] != "plan"),
        "the plan of a call is sent once"
    );
}

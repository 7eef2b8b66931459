use super::*;
use crate::test_support::{Harness, describe_all, session_uri, turn_ids};
use agenthost_protocol::ahp_types::state::ToolResultContent;
use agenthost_provider_api::ProviderError;

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|line| (*line).to_owned()).collect()
}

/// A tool input as JSON (key order depends on serde_json's features, so compare values).
fn input_json(input: &Option<ToolInput>) -> Value {
    match input {
        Some(ToolInput::Inline(text)) => serde_json::from_str(text).unwrap(),
        other => panic!("expected an inline input, got {other:?}"),
    }
}

fn action(signal: &AgentSignal) -> &StateAction {
    match signal {
        AgentSignal::Action(action) => &action.action,
        other => panic!("expected an action, got {other:?}"),
    }
}

#[test]
fn chunks_count_characters_not_bytes() {
    assert_eq!(
        chunks("héllo wörld", 3).collect::<Vec<_>>(),
        ["hél", "lo ", "wör", "ld"]
    );
    assert_eq!(chunks("", 3).count(), 0);
    assert_eq!(chunks("ab", 16).collect::<Vec<_>>(), ["ab"]);
}

#[tokio::test(start_paused = true)]
async fn say_streams_an_empty_part_then_deltas_that_add_up_to_the_text() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [{ "kind": "say", "text": "Hello, scripted world!", "chunk": 5 }] }] }"#,
    )
    .await;
    harness.send("t1", "hi").await;
    let signals = harness.until_terminal().await;
    assert_eq!(
        describe_all(&signals),
        strings(&[
            r#"markdown md-1-1 """#,
            r#"delta md-1-1 "Hello""#,
            r#"delta md-1-1 ", scr""#,
            r#"delta md-1-1 "ipted""#,
            r#"delta md-1-1 " worl""#,
            r#"delta md-1-1 "d!""#,
            "turnComplete 0ms",
        ])
    );
    let streamed: String = signals
        .iter()
        .filter_map(|signal| match action(signal) {
            StateAction::ChatDelta(delta) => Some(delta.content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Hello, scripted world!");
    assert_eq!(turn_ids(&signals), vec!["t1"; 7]);
    harness.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn think_streams_reasoning_and_delays_pace_the_deltas() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "think", "text": "abcdefgh", "chunk": 4, "delayMs": 250 },
            { "kind": "say", "text": "done" }
        ] }] }"#,
    )
    .await;
    assert_eq!(
        harness.turn("t1", "hi").await,
        strings(&[
            r#"reasoning reasoning-1-1 """#,
            r#"reasoningDelta reasoning-1-1 "abcd""#,
            r#"reasoningDelta reasoning-1-1 "efgh""#,
            r#"markdown md-1-1 """#,
            r#"delta md-1-1 "done""#,
            "turnComplete 250ms",
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_without_confirmation_is_ready_at_once_and_runs() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "tool", "name": "write_file", "displayName": "Write file",
              "effect": { "kind": "writeFile", "path": "notes/a.txt", "content": "A\n" } }
        ] }] }"#,
    )
    .await;
    harness.send("t1", "go").await;
    let signals = harness.until_terminal().await;
    assert_eq!(
        describe_all(&signals),
        strings(&[
            r#"toolCallStart tool-1-1 write_file "Write file""#,
            r#"toolCallReady tool-1-1 not-needed "Write `notes/a.txt`""#,
            r#"toolCallComplete tool-1-1 ok "Wrote `notes/a.txt`""#,
            "turnComplete 0ms",
        ])
    );
    let StateAction::ChatToolCallReady(ready) = action(&signals[1]) else {
        panic!("expected a ready");
    };
    assert_eq!(
        input_json(&ready.tool_input),
        json!({ "path": "notes/a.txt", "content": "A\n" })
    );
    let mut wire = serde_json::to_value(action(&signals[1])).unwrap();
    wire["toolInput"] = Value::Null;
    assert_eq!(
        wire,
        json!({
            "type": "chat/toolCallReady",
            "turnId": "t1",
            "toolCallId": "tool-1-1",
            "invocationMessage": "Write `notes/a.txt`",
            "toolInput": null,
            "confirmed": "not-needed",
        })
    );
    assert_eq!(
        serde_json::to_value(action(&signals[2])).unwrap(),
        json!({
            "type": "chat/toolCallComplete",
            "turnId": "t1",
            "toolCallId": "tool-1-1",
            "result": {
                "success": true,
                "pastTenseMessage": "Wrote `notes/a.txt`",
                "content": [{ "type": "text", "text": "Wrote 2 bytes to `notes/a.txt`" }],
            },
        })
    );
    assert_eq!(harness.file("notes/a.txt").as_deref(), Some("A\n"));
}

const CONFIRMED_WRITE: &str = r#"{ "turns": [{ "steps": [
    { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
      "effect": { "kind": "writeFile", "path": "a.txt", "content": "A" } },
    { "kind": "say", "text": "after" }
] }] }"#;

#[tokio::test(start_paused = true)]
async fn an_approved_tool_waits_for_permission_then_runs() {
    let mut harness = Harness::new(CONFIRMED_WRITE).await;
    harness.send("t1", "go").await;
    let signals = harness.until_pending().await;
    assert_eq!(
        describe_all(&signals),
        strings(&[
            r#"toolCallStart tool-1-1 write_file "Write file""#,
            r#"pendingConfirmation tool-1-1 write a.txt "Write `a.txt`""#,
        ])
    );
    let AgentSignal::PendingConfirmation(pending) = &signals[1] else {
        panic!("expected a pending confirmation");
    };
    assert_eq!(
        input_json(&pending.state.tool_input),
        json!({ "path": "a.txt", "content": "A" })
    );
    let mut pending = pending.clone();
    pending.state.tool_input = None;
    assert_eq!(
        pending,
        PendingConfirmation {
            session: session_uri(),
            turn_id: "t1".into(),
            state: ToolCallPendingConfirmationState {
                tool_call_id: "tool-1-1".into(),
                tool_name: "write_file".into(),
                display_name: "Write file".into(),
                intention: None,
                contributor: None,
                meta: None,
                invocation_message: "Write `a.txt`".into(),
                tool_input: None,
                confirmation_title: Some("Write file".into()),
                risk_assessment: None,
                edits: None,
                editable: None,
                options: None,
            },
            permission_kind: PermissionKind::Write,
            permission_path: Some("a.txt".into()),
            parent_tool_call_id: None,
        }
    );
    // Nothing runs before the answer, however long it takes.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(harness.rx.try_recv().is_err());
    assert_eq!(harness.file("a.txt"), None);

    harness
        .session
        .respond_to_permission("tool-1-1", PermissionDecision::Approve)
        .await
        .unwrap();
    assert_eq!(
        describe_all(&harness.until_terminal().await),
        strings(&[
            r#"toolCallComplete tool-1-1 ok "Wrote `a.txt`""#,
            r#"markdown md-1-1 """#,
            r#"delta md-1-1 "after""#,
            "turnComplete 600000ms",
        ])
    );
    assert_eq!(harness.file("a.txt").as_deref(), Some("A"));
}

#[tokio::test(start_paused = true)]
async fn a_denied_tool_emits_nothing_more_and_the_script_goes_on() {
    let mut harness = Harness::new(CONFIRMED_WRITE).await;
    harness.send("t1", "go").await;
    harness.until_pending().await;
    harness
        .session
        .respond_to_permission(
            "tool-1-1",
            PermissionDecision::Deny {
                reason: Some("not now".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        describe_all(&harness.until_terminal().await),
        strings(&[
            r#"markdown md-1-1 """#,
            r#"delta md-1-1 "after""#,
            "turnComplete 0ms",
        ])
    );
    assert_eq!(harness.file("a.txt"), None);
    // The answer was used up.
    assert!(matches!(
        harness
            .session
            .respond_to_permission("tool-1-1", PermissionDecision::Approve)
            .await,
        Err(ProviderError::NotRunning { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn paths_leaving_the_working_directory_fail_the_tool_and_write_nothing() {
    let outer = tempfile::tempdir().unwrap();
    let absolute = outer.path().join("x");
    let script = format!(
        r#"{{ "turns": [{{ "steps": [
            {{ "kind": "tool", "name": "w", "effect": {{ "kind": "writeFile", "path": "../x", "content": "no" }} }},
            {{ "kind": "tool", "name": "w", "effect": {{ "kind": "writeFile", "path": "/etc/x", "content": "no" }} }},
            {{ "kind": "tool", "name": "w", "effect": {{ "kind": "writeFile", "path": {absolute:?}, "content": "no" }} }},
            {{ "kind": "tool", "name": "r", "effect": {{ "kind": "readFile", "path": "../../etc/passwd" }} }}
        ] }}] }}"#
    );
    let mut harness = Harness::new(&script).await;
    harness.send("t1", "go").await;
    let signals = harness.until_terminal().await;
    let lines = describe_all(&signals);
    assert_eq!(
        lines[2],
        r#"toolCallComplete tool-1-1 failed pathOutsideWorkingDirectory "Could not write `../x`""#
    );
    assert_eq!(
        lines[5],
        r#"toolCallComplete tool-1-2 failed pathOutsideWorkingDirectory "Could not write `/etc/x`""#
    );
    assert!(
        lines[8].starts_with("toolCallComplete tool-1-3 failed pathOutsideWorkingDirectory"),
        "{}",
        lines[8]
    );
    assert!(
        lines[11].starts_with("toolCallComplete tool-1-4 failed pathOutsideWorkingDirectory"),
        "{}",
        lines[11]
    );
    assert_eq!(lines[12], "turnComplete 0ms");
    let StateAction::ChatToolCallComplete(complete) = action(&signals[2]) else {
        panic!("expected a completion");
    };
    assert_eq!(
        complete.result.error,
        Some(json!({
            "message": "refused `../x`: `..` leaves the working directory",
            "code": "pathOutsideWorkingDirectory",
        }))
    );
    assert!(!absolute.exists());
    assert!(!harness.dir.path().parent().unwrap().join("x").exists());
    assert!(!std::path::Path::new("/etc/x").exists());
}

#[tokio::test(start_paused = true)]
async fn read_file_returns_the_text_and_usage_is_reported() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "tool", "name": "read_file", "effect": { "kind": "readFile", "path": "in.txt" } },
            { "kind": "tool", "name": "read_file", "effect": { "kind": "readFile", "path": "missing.txt" } },
            { "kind": "usage", "input": 10, "output": 2, "model": "m" },
            { "kind": "usage", "input": 11, "output": 3 }
        ] }] }"#,
    )
    .await;
    std::fs::write(harness.dir.path().join("in.txt"), "file text").unwrap();
    harness.send("t1", "go").await;
    let signals = harness.until_terminal().await;
    assert_eq!(
        describe_all(&signals),
        strings(&[
            r#"toolCallStart tool-1-1 read_file "read_file""#,
            r#"toolCallReady tool-1-1 not-needed "Read `in.txt`""#,
            r#"toolCallComplete tool-1-1 ok "Read `in.txt`""#,
            r#"toolCallStart tool-1-2 read_file "read_file""#,
            r#"toolCallReady tool-1-2 not-needed "Read `missing.txt`""#,
            r#"toolCallComplete tool-1-2 failed ioError "Could not read `missing.txt`""#,
            "usage 10/2 m",
            "usage 11/3 -",
            "turnComplete 0ms",
        ])
    );
    let StateAction::ChatToolCallComplete(complete) = action(&signals[2]) else {
        panic!("expected a completion");
    };
    assert_eq!(
        complete.result.content,
        Some(vec![ToolResultContent::Text(ToolResultTextContent {
            text: "file text".into()
        })])
    );
    assert_eq!(
        serde_json::to_value(action(&signals[6])).unwrap(),
        json!({
            "type": "chat/usage",
            "turnId": "t1",
            "usage": { "inputTokens": 10, "outputTokens": 2, "model": "m" },
        })
    );
}

const SUBAGENT: &str = r#"{ "turns": [{ "steps": [
    { "kind": "say", "text": "delegating" },
    { "kind": "subagent", "agent": "explore", "displayName": "Explorer",
      "description": "look around", "prompt": "Look around.", "result": "all good",
      "steps": [
        { "kind": "think", "text": "hm" },
        { "kind": "tool", "name": "read_file", "effect": { "kind": "readFile", "path": "in.txt" } },
        { "kind": "say", "text": "seen" }
    ] },
    { "kind": "say", "text": "back" }
] }] }"#;

#[tokio::test(start_paused = true)]
async fn a_subagent_is_announced_scoped_and_closed_before_its_task_completes() {
    let mut harness = Harness::new(SUBAGENT).await;
    std::fs::write(harness.dir.path().join("in.txt"), "x").unwrap();
    harness.send("t1", "go").await;
    let signals = harness.until_terminal().await;
    assert_eq!(
        describe_all(&signals),
        strings(&[
            r#"markdown md-1-1 """#,
            r#"delta md-1-1 "delegating""#,
            r#"toolCallStart tool-1-1 Task "Explorer""#,
            r#"toolCallReady tool-1-1 not-needed "look around""#,
            "subagentStarted tool-1-1 explore",
            r#"[tool-1-1] reasoning reasoning-1-1 """#,
            r#"[tool-1-1] reasoningDelta reasoning-1-1 "hm""#,
            r#"[tool-1-1] toolCallStart tool-1-2 read_file "read_file""#,
            r#"[tool-1-1] toolCallReady tool-1-2 not-needed "Read `in.txt`""#,
            r#"[tool-1-1] toolCallComplete tool-1-2 ok "Read `in.txt`""#,
            r#"[tool-1-1] markdown md-1-2 """#,
            r#"[tool-1-1] delta md-1-2 "seen""#,
            "subagentCompleted tool-1-1",
            r#"toolCallComplete tool-1-1 ok "Explorer finished""#,
            r#"markdown md-1-3 """#,
            r#"delta md-1-3 "back""#,
            "turnComplete 0ms",
        ])
    );
    // Subagent actions carry the parent turn id; the host remaps them.
    assert!(turn_ids(&signals).iter().all(|turn| turn == "t1"));
    let tool_call_id = SafeId::new("tool-1-1").unwrap();
    assert_eq!(
        signals[4],
        AgentSignal::SubagentStarted(SubagentStarted {
            session: session_uri(),
            tool_call_id: tool_call_id.clone(),
            agent_name: "explore".into(),
            agent_display_name: "Explorer".into(),
            agent_description: None,
            task_description: Some("look around".into()),
            task_prompt: Some("Look around.".into()),
            parent_tool_call_id: None,
        })
    );
    let StateAction::ChatToolCallReady(ready) = action(&signals[3]) else {
        panic!("expected a ready");
    };
    assert_eq!(
        input_json(&ready.tool_input),
        json!({ "description": "look around", "prompt": "Look around.", "subagent_type": "explore" })
    );
    assert_eq!(
        serde_json::to_value(&ready.meta).unwrap(),
        json!({ "subagentDescription": "look around", "subagentAgentName": "explore" })
    );
    let StateAction::ChatToolCallComplete(complete) = action(&signals[13]) else {
        panic!("expected a completion");
    };
    assert_eq!(
        complete.result.content,
        Some(vec![
            ToolResultContent::Subagent(ToolResultSubagentContent {
                resource: ChatUri::subagent(&session_uri(), &tool_call_id).into_string(),
                title: "Explorer".into(),
                agent_name: Some("explore".into()),
                description: Some("look around".into()),
            }),
            text_content("all good".into()),
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn nested_subagents_and_their_confirmations_name_their_parents() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "subagent", "agent": "outer", "description": "o", "steps": [
                { "kind": "subagent", "agent": "inner", "description": "i", "steps": [
                    { "kind": "tool", "name": "sh", "confirm": true, "permission": "shell" }
                ] }
            ] }
        ] }] }"#,
    )
    .await;
    harness.send("t1", "go").await;
    assert_eq!(
        describe_all(&harness.until_pending().await),
        strings(&[
            r#"toolCallStart tool-1-1 Task "outer""#,
            r#"toolCallReady tool-1-1 not-needed "o""#,
            "subagentStarted tool-1-1 outer",
            r#"[tool-1-1] toolCallStart tool-1-2 Task "inner""#,
            r#"[tool-1-1] toolCallReady tool-1-2 not-needed "i""#,
            "[tool-1-1] subagentStarted tool-1-2 inner",
            r#"[tool-1-2] toolCallStart tool-1-3 sh "sh""#,
            r#"[tool-1-2] pendingConfirmation tool-1-3 shell - "Run sh""#,
        ])
    );
    harness
        .session
        .respond_to_permission("tool-1-3", PermissionDecision::Approve)
        .await
        .unwrap();
    assert_eq!(
        describe_all(&harness.until_terminal().await),
        strings(&[
            r#"[tool-1-2] toolCallComplete tool-1-3 ok "Ran sh""#,
            "subagentCompleted tool-1-2",
            r#"[tool-1-1] toolCallComplete tool-1-2 ok "inner finished""#,
            "subagentCompleted tool-1-1",
            r#"toolCallComplete tool-1-1 ok "outer finished""#,
            "turnComplete 0ms",
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn an_error_ends_the_turn_and_nothing_follows() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "pause", "ms": 40 },
            { "kind": "error", "message": "rate limited", "errorType": "rateLimited", "resumable": true },
            { "kind": "say", "text": "never" }
        ] }] }"#,
    )
    .await;
    harness.send("t1", "go").await;
    let signals = harness.until_terminal().await;
    assert_eq!(
        describe_all(&signals),
        strings(&[r#"error rateLimited "rate limited" resumable=true 40ms"#])
    );
    assert_eq!(
        serde_json::to_value(action(&signals[0])).unwrap(),
        json!({
            "type": "chat/error",
            "turnId": "t1",
            "duration": 40,
            "part": {
                "kind": "error",
                "error": { "errorType": "rateLimited", "message": "rate limited" },
                "resumable": true,
            },
        })
    );
    harness.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn an_error_inside_a_subagent_fails_its_task_then_ends_the_turn() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "subagent", "agent": "a", "description": "d", "steps": [
                { "kind": "error", "message": "boom" },
                { "kind": "say", "text": "never" }
            ] },
            { "kind": "say", "text": "never" }
        ] }] }"#,
    )
    .await;
    assert_eq!(
        harness.turn("t1", "go").await,
        strings(&[
            r#"toolCallStart tool-1-1 Task "a""#,
            r#"toolCallReady tool-1-1 not-needed "d""#,
            "subagentStarted tool-1-1 a",
            "subagentCompleted tool-1-1",
            r#"toolCallComplete tool-1-1 failed scriptedError "a failed""#,
            r#"error scriptedError "boom" resumable=false 0ms"#,
        ])
    );
    harness.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn echo_repeats_the_message_after_its_prefix() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [{ "kind": "echo", "prefix": "> ", "chunk": 100 }] }] }"#,
    )
    .await;
    assert_eq!(
        harness.turn("t1", "ünïcode text").await,
        strings(&[
            r#"markdown md-1-1 """#,
            r#"delta md-1-1 "> ünïcode text""#,
            "turnComplete 0ms",
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn echo_can_repeat_the_hosts_instructions_after_the_text() {
    let mut harness = Harness::new(
        r#"{ "turns": [
            { "steps": [{ "kind": "echo", "chunk": 100, "instructions": true }] },
            { "steps": [{ "kind": "echo", "chunk": 100, "instructions": true }] },
            { "steps": [{ "kind": "echo", "chunk": 100 }] }
        ] }"#,
    )
    .await;
    let mut with_instructions = crate::test_support::request("t1", "hi");
    with_instructions.instructions = vec!["Use links.".into(), "Be brief.".into()];
    harness
        .session
        .send_turn(with_instructions.clone())
        .await
        .unwrap();
    let signals = crate::test_support::describe_all(&harness.until_terminal().await);
    assert!(
        signals.contains(
            &r#"delta md-1-1 "hi\n\nInstructions:\n- Use links.\n- Be brief.""#.to_owned()
        ),
        "{signals:?}"
    );
    // No instructions: nothing is added.
    assert!(
        harness
            .turn("t2", "plain")
            .await
            .contains(&r#"delta md-2-1 "plain""#.to_owned())
    );
    // Not asked for: the instructions are not repeated.
    with_instructions.turn_id = "t3".into();
    harness.session.send_turn(with_instructions).await.unwrap();
    let signals = crate::test_support::describe_all(&harness.until_terminal().await);
    assert!(
        signals.contains(&r#"delta md-3-1 "hi""#.to_owned()),
        "{signals:?}"
    );
}

/// Two background subagents, each asking to append a line to a log.
const BACKGROUND: &str = r#"{ "turns": [{ "steps": [
    { "kind": "subagent", "agent": "a", "description": "first", "background": true, "steps": [
        { "kind": "tool", "name": "log", "confirm": true,
          "effect": { "kind": "appendFile", "path": "log/effects.log", "content": "a\n" } },
        { "kind": "say", "text": "a done" }
    ] },
    { "kind": "subagent", "agent": "b", "description": "second", "background": true, "steps": [
        { "kind": "tool", "name": "log", "confirm": true,
          "effect": { "kind": "appendFile", "path": "log/effects.log", "content": "b\n" } },
        { "kind": "say", "text": "b done" }
    ] },
    { "kind": "join", "until": "waiting" },
    { "kind": "say", "text": "both wait" }
] }] }"#;

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort_unstable();
    lines
}

#[tokio::test(start_paused = true)]
async fn background_subagents_run_together_and_the_turn_waits_for_them() {
    let mut harness = Harness::new(BACKGROUND).await;
    harness.send("t1", "go").await;
    // Both start before either is answered; `join` lets the turn go on once both wait.
    let started = describe_all(
        &harness
            .until(|signal| crate::test_support::describe(signal).starts_with("markdown md-1-1"))
            .await,
    );
    for line in [
        "subagentStarted tool-1-1 a",
        "subagentStarted tool-1-2 b",
        r#"[tool-1-1] pendingConfirmation tool-1-1-1 write log/effects.log "Append to `log/effects.log`""#,
        r#"[tool-1-2] pendingConfirmation tool-1-2-1 write log/effects.log "Append to `log/effects.log`""#,
    ] {
        assert!(started.contains(&line.to_owned()), "{line} in {started:#?}");
    }
    assert_eq!(started.last().unwrap(), r#"markdown md-1-1 """#);
    harness
        .session
        .respond_to_permission("tool-1-2-1", PermissionDecision::Approve)
        .await
        .unwrap();
    harness
        .session
        .respond_to_permission("tool-1-1-1", PermissionDecision::Approve)
        .await
        .unwrap();
    let rest = describe_all(&harness.until_terminal().await);
    // The turn completes only after both subagents did.
    assert_eq!(rest.last().unwrap(), "turnComplete 0ms");
    for line in [
        r#"[tool-1-1] toolCallComplete tool-1-1-1 ok "Appended to `log/effects.log`""#,
        r#"[tool-1-1] delta md-1-1-1 "a done""#,
        "subagentCompleted tool-1-1",
        r#"toolCallComplete tool-1-1 ok "a finished""#,
        r#"toolCallComplete tool-1-2 ok "b finished""#,
    ] {
        assert!(rest.contains(&line.to_owned()), "{line} in {rest:#?}");
    }
    let position = |line: &str| rest.iter().position(|l| l == line).unwrap();
    assert!(
        position("subagentCompleted tool-1-2")
            < position(r#"toolCallComplete tool-1-2 ok "b finished""#)
    );
    assert_eq!(
        sorted(
            harness
                .file("log/effects.log")
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect()
        ),
        ["a", "b"]
    );
    harness.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn an_error_ends_the_turn_and_leaves_background_subagents_running() {
    let mut harness = Harness::new(
        r#"{ "turns": [
            { "steps": [
                { "kind": "subagent", "agent": "a", "description": "d", "background": true, "steps": [
                    { "kind": "tool", "name": "log", "confirm": true,
                      "effect": { "kind": "appendFile", "path": "effects.log", "content": "a\n" } },
                    { "kind": "tool", "name": "log", "confirm": true,
                      "effect": { "kind": "appendFile", "path": "effects.log", "content": "a2\n" } }
                ] },
                { "kind": "join", "until": "waiting" },
                { "kind": "error", "message": "upstream reset", "errorType": "providerError" }
            ] },
            { "steps": [{ "kind": "say", "text": "next" }] }
        ] }"#,
    )
    .await;
    harness.send("t1", "go").await;
    let signals = describe_all(&harness.until_terminal().await);
    assert_eq!(
        signals.last().unwrap(),
        r#"error providerError "upstream reset" resumable=false 0ms"#
    );
    // The turn is over: the session takes the next one while the subagent still waits.
    assert_eq!(
        harness.turn("t2", "again").await,
        strings(&[
            r#"markdown md-2-1 """#,
            r#"delta md-2-1 "next""#,
            "turnComplete 0ms"
        ])
    );
    // Its confirmations are still answered.
    harness
        .session
        .respond_to_permission("tool-1-1-1", PermissionDecision::Deny { reason: None })
        .await
        .unwrap();
    harness.until_pending().await;
    harness
        .session
        .respond_to_permission("tool-1-1-2", PermissionDecision::Approve)
        .await
        .unwrap();
    assert_eq!(
        describe_all(
            &harness
                .until(|signal| crate::test_support::describe(signal).contains("a finished"))
                .await
        ),
        strings(&[
            r#"[tool-1-1] toolCallComplete tool-1-1-2 ok "Appended to `effects.log`""#,
            "subagentCompleted tool-1-1",
            r#"toolCallComplete tool-1-1 ok "a finished""#,
        ])
    );
    assert_eq!(harness.file("effects.log").as_deref(), Some("a2\n"));
    harness.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn an_error_inside_a_background_subagent_fails_only_that_subagent() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "subagent", "agent": "a", "description": "d", "background": true, "steps": [
                { "kind": "error", "message": "boom" }
            ] },
            { "kind": "join" },
            { "kind": "say", "text": "still here" }
        ] }] }"#,
    )
    .await;
    assert_eq!(
        harness.turn("t1", "go").await,
        strings(&[
            r#"toolCallStart tool-1-1 Task "a""#,
            r#"toolCallReady tool-1-1 not-needed "d""#,
            "subagentStarted tool-1-1 a",
            "subagentCompleted tool-1-1",
            r#"toolCallComplete tool-1-1 failed scriptedError "a failed""#,
            r#"markdown md-1-1 """#,
            r#"delta md-1-1 "still here""#,
            "turnComplete 0ms",
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_background_subagents_and_completes_them_newest_first() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "subagent", "agent": "a", "description": "d", "background": true, "steps": [
                { "kind": "pause", "ms": 60000 }
            ] },
            { "kind": "subagent", "agent": "b", "description": "e", "background": true, "steps": [
                { "kind": "subagent", "agent": "c", "description": "f", "background": true, "steps": [
                    { "kind": "tool", "name": "sh", "confirm": true }
                ] },
                { "kind": "subagent", "agent": "d", "description": "g", "steps": [
                    { "kind": "pause", "ms": 60000 }
                ] }
            ] },
            { "kind": "join" }
        ] }] }"#,
    )
    .await;
    harness.send("t1", "go").await;
    harness
        .until(|signal| {
            crate::test_support::describe(signal).contains("subagentStarted tool-1-2-2")
        })
        .await;
    harness.until_pending().await;
    harness.session.cancel("t1").await.unwrap();
    assert_eq!(
        describe_all(&harness.until_terminal().await),
        strings(&[
            "subagentCompleted tool-1-2-1",
            "subagentCompleted tool-1-2-2",
            "subagentCompleted tool-1-2",
            "subagentCompleted tool-1-1",
            "turnCancelled 0ms",
        ])
    );
    assert_eq!(
        harness
            .session
            .respond_to_permission("tool-1-2-1-1", PermissionDecision::Approve)
            .await,
        Err(ProviderError::NotRunning {
            message: "no tool call `tool-1-2-1-1` is waiting for permission".into()
        })
    );
    harness.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn dispose_stops_background_subagents_that_outlived_their_turn() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "subagent", "agent": "a", "description": "d", "background": true, "steps": [
                { "kind": "tool", "name": "log", "confirm": true,
                  "effect": { "kind": "appendFile", "path": "effects.log", "content": "a\n" } }
            ] },
            { "kind": "join", "until": "waiting" },
            { "kind": "error", "message": "gone" }
        ] }] }"#,
    )
    .await;
    harness.send("t1", "go").await;
    harness.until_terminal().await;
    harness.session.dispose().await;
    assert!(
        harness
            .session
            .respond_to_permission("tool-1-1-1", PermissionDecision::Approve)
            .await
            .is_err()
    );
    harness.assert_quiet().await;
    assert_eq!(harness.file("effects.log"), None);
}

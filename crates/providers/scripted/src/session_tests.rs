use std::time::Duration;

use serde_json::json;

use super::*;
use crate::test_support::{Harness, describe, describe_all, start_request};
use crate::{Provider, ScriptedProvider};

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|line| (*line).to_owned()).collect()
}

fn not_running(result: Result<(), ProviderError>) -> String {
    match result {
        Err(ProviderError::NotRunning { message }) => message,
        other => panic!("expected NotRunning, got {other:?}"),
    }
}

const PAUSED: &str = r#"{ "turns": [{ "steps": [
    { "kind": "say", "text": "a" },
    { "kind": "pause", "ms": 60000 },
    { "kind": "say", "text": "b" }
] }] }"#;

#[tokio::test(start_paused = true)]
async fn cancel_mid_turn_stops_it_and_reports_the_elapsed_time() {
    let mut harness = Harness::new(PAUSED).await;
    harness.send("t1", "go").await;
    let started = harness
        .until(|signal| describe(signal).starts_with("delta"))
        .await;
    assert_eq!(describe_all(&started).len(), 2);
    tokio::time::sleep(Duration::from_millis(5000)).await;
    harness.session.cancel("t1").await.unwrap();
    assert_eq!(
        describe_all(&harness.until_terminal().await),
        strings(&["turnCancelled 5000ms"])
    );
    // The 60 s pause would have ended by now: the aborted turn emits nothing more.
    harness.assert_quiet().await;
    // A cancelled turn cannot be cancelled again, and the session takes the next turn.
    assert_eq!(
        not_running(harness.session.cancel("t1").await),
        "turn `t1` is not running"
    );
    assert_eq!(
        harness.turn("t2", "again").await,
        strings(&[
            r#"markdown md-2-1 """#,
            r#"delta md-2-1 "You said: again""#,
            "turnComplete 0ms",
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_ends_a_pending_confirmation_too() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "tool", "name": "w", "confirm": true,
              "effect": { "kind": "writeFile", "path": "a.txt", "content": "A" } }
        ] }] }"#,
    )
    .await;
    harness.send("t1", "go").await;
    harness.until_pending().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    harness.session.cancel("t1").await.unwrap();
    assert_eq!(
        describe_all(&harness.until_terminal().await),
        strings(&["turnCancelled 2000ms"])
    );
    assert_eq!(
        not_running(
            harness
                .session
                .respond_to_permission("tool-1-1", PermissionDecision::Approve)
                .await
        ),
        "no tool call `tool-1-1` is waiting for permission"
    );
    harness.assert_quiet().await;
    assert_eq!(harness.file("a.txt"), None);
}

#[tokio::test(start_paused = true)]
async fn cancel_inside_a_subagent_closes_it_first() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "subagent", "agent": "a", "description": "d", "steps": [
                { "kind": "subagent", "agent": "b", "description": "e", "steps": [
                    { "kind": "pause", "ms": 60000 }
                ] }
            ] }
        ] }] }"#,
    )
    .await;
    harness.send("t1", "go").await;
    harness
        .until(|signal| describe(signal).contains("subagentStarted tool-1-2"))
        .await;
    harness.session.cancel("t1").await.unwrap();
    assert_eq!(
        describe_all(&harness.until_terminal().await),
        strings(&[
            "subagentCompleted tool-1-2",
            "subagentCompleted tool-1-1",
            "turnCancelled 0ms",
        ])
    );
    harness.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn only_the_running_turn_can_be_cancelled() {
    let mut harness = Harness::new(PAUSED).await;
    assert_eq!(
        not_running(harness.session.cancel("t1").await),
        "turn `t1` is not running"
    );
    harness.send("t1", "go").await;
    assert_eq!(
        not_running(harness.session.cancel("t9").await),
        "turn `t9` is not running"
    );
    assert_eq!(
        describe_all(&harness.until_terminal().await)
            .last()
            .unwrap(),
        "turnComplete 60000ms"
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_turn_while_one_runs_is_refused() {
    let mut harness = Harness::new(PAUSED).await;
    harness.send("t1", "go").await;
    assert_eq!(
        not_running(
            harness
                .session
                .send_turn(crate::test_support::request("t2", "more"))
                .await
        ),
        "the scripted agent is still running turn `t1`: cancel it or wait for it to end before \
         sending `t2`"
    );
    harness.until_terminal().await;
    // The refused turn did not count: the next turn is the script's second (here: the echo).
    harness.send("t2", "more").await;
    assert_eq!(
        describe(&harness.until_terminal().await[1]),
        r#"delta md-2-1 "You said: more""#
    );
}

const TWO_TURNS: &str = r#"{
  "turns": [
    { "steps": [{ "kind": "say", "text": "first" }] },
    { "steps": [{ "kind": "say", "text": "second" }] }
  ],
  "default": { "steps": [{ "kind": "echo", "prefix": "again: " }] }
}"#;

#[tokio::test(start_paused = true)]
async fn turns_follow_the_script_then_the_default() {
    let mut harness = Harness::new(TWO_TURNS).await;
    let mut deltas = Vec::new();
    for (turn, text) in [("t1", "a"), ("t2", "b"), ("t3", "c"), ("t4", "d")] {
        let lines = harness.turn(turn, text).await;
        deltas.push(lines[1].clone());
    }
    assert_eq!(
        deltas,
        strings(&[
            r#"delta md-1-1 "first""#,
            r#"delta md-2-1 "second""#,
            r#"delta md-3-1 "again: c""#,
            r#"delta md-4-1 "again: d""#,
        ])
    );
    assert_eq!(
        harness.session.resume_handle(),
        Some(json!({ "turnsRun": 4 }))
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_default_exhausted_turns_echo_the_message() {
    let mut harness =
        Harness::new(r#"{ "turns": [{ "steps": [{ "kind": "say", "text": "only" }] }] }"#).await;
    harness.turn("t1", "a").await;
    assert_eq!(
        harness.turn("t2", "hello there").await,
        strings(&[
            r#"markdown md-2-1 """#,
            r#"delta md-2-1 "You said: hello ""#,
            r#"delta md-2-1 "there""#,
            "turnComplete 0ms",
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn a_restored_session_continues_where_the_script_left_off() {
    let mut harness = Harness::new(TWO_TURNS).await;
    harness.turn("t1", "a").await;
    let handle = harness.session.resume_handle().unwrap();
    assert_eq!(handle, json!({ "turnsRun": 1 }));
    harness.session.dispose().await;
    harness.restore(handle).await;
    assert_eq!(
        harness.turn("t2", "b").await,
        strings(&[
            r#"markdown md-2-1 """#,
            r#"delta md-2-1 "second""#,
            "turnComplete 0ms",
        ])
    );
    assert_eq!(
        harness.session.resume_handle(),
        Some(json!({ "turnsRun": 2 }))
    );
}

#[tokio::test(start_paused = true)]
async fn a_resume_handle_without_a_count_is_refused() {
    let harness = Harness::new(TWO_TURNS).await;
    let (start, _rx) = start_request(&harness.dir);
    let restored = harness
        .provider
        .restore_session(agenthost_provider_api::RestoreSession {
            start,
            resume_handle: json!({ "turns": 1 }),
            history: Vec::new(),
        })
        .await;
    match restored {
        Err(ProviderError::StartFailed { message }) => assert_eq!(
            message,
            r#"the scripted agent cannot resume from {"turns":1}: expected {"turnsRun": <count>}"#
        ),
        Err(other) => panic!("expected StartFailed, got {other:?}"),
        Ok(_) => panic!("expected StartFailed, got a session"),
    }
}

#[tokio::test(start_paused = true)]
async fn permission_answers_for_unknown_tool_calls_are_errors() {
    let harness = Harness::new(PAUSED).await;
    assert_eq!(
        not_running(
            harness
                .session
                .respond_to_permission("tool-9-9", PermissionDecision::Approve)
                .await
        ),
        "no tool call `tool-9-9` is waiting for permission"
    );
    harness.send("t1", "go").await;
    assert_eq!(
        not_running(
            harness
                .session
                .respond_to_permission("tool-1-1", PermissionDecision::Approve)
                .await
        ),
        "no tool call `tool-1-1` is waiting for permission"
    );
}

#[tokio::test(start_paused = true)]
async fn dispose_aborts_the_running_turn_silently_and_refuses_new_ones() {
    let mut harness = Harness::new(PAUSED).await;
    harness.send("t1", "go").await;
    harness
        .until(|signal| describe(signal).starts_with("delta"))
        .await;
    harness.session.dispose().await;
    harness.assert_quiet().await;
    assert_eq!(
        not_running(
            harness
                .session
                .send_turn(crate::test_support::request("t2", "more"))
                .await
        ),
        "this scripted agent session has been disposed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_host_that_stops_listening_does_not_wedge_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(Script::from_json(PAUSED).unwrap());
    let (start, rx) = start_request(&dir);
    let session = provider.session(start, 0);
    drop(rx);
    session
        .send_turn(crate::test_support::request("t1", "go"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(session.running_turn(), None);
    assert_eq!(session.turns_run(), 1);
    session
        .send_turn(crate::test_support::request("t2", "go"))
        .await
        .unwrap();
    assert_eq!(provider.id(), "scripted");
}

fn client_result(text: &str) -> ToolCallResult {
    serde_json::from_value(json!({
        "success": true, "pastTenseMessage": text,
        "content": [{ "type": "text", "text": text }]
    }))
    .unwrap()
}

const CLIENT_TOOL: &str = r#"{ "turns": [{ "steps": [
    { "kind": "tool", "name": "probe", "displayName": "Probe", "client": "vscode-1" },
    { "kind": "say", "text": "after" }
] }] }"#;

#[tokio::test(start_paused = true)]
async fn a_client_tool_waits_for_its_clients_result_and_completes_nothing_itself() {
    let mut harness = Harness::new(CLIENT_TOOL).await;
    harness.send("t1", "go").await;
    let started = harness
        .until(|signal| describe(signal).starts_with("toolCallReady"))
        .await;
    assert_eq!(
        describe_all(&started),
        strings(&[
            r#"toolCallStart tool-1-1 probe "Probe" client=vscode-1"#,
            r#"toolCallReady tool-1-1 not-needed "Run Probe""#,
        ])
    );
    // Nothing happens until the client's result comes: the host completed the call already.
    harness.assert_quiet().await;
    harness
        .session
        .complete_client_tool("tool-1-1", client_result("probed"))
        .await
        .unwrap();
    assert_eq!(
        describe_all(&harness.until_terminal().await),
        strings(&[
            r#"markdown md-1-1 """#,
            r#"delta md-1-1 "after""#,
            "turnComplete 86400000ms",
        ])
    );
    // Once it is in, a second result for the call is an error.
    assert_eq!(
        not_running(
            harness
                .session
                .complete_client_tool("tool-1-1", client_result("again"))
                .await
        ),
        "no tool call `tool-1-1` is waiting for a client's result"
    );
}

const CONFIRMED_CLIENT_TOOL: &str = r#"{ "turns": [{ "steps": [
    { "kind": "tool", "name": "probe", "client": "vscode-1", "confirm": true },
    { "kind": "say", "text": "after" }
] }] }"#;

/// The rest of a client tool turn once the call is done, with no time passed.
const AFTER_AT_ONCE: [&str; 3] = [
    r#"markdown md-1-1 """#,
    r#"delta md-1-1 "after""#,
    "turnComplete 0ms",
];

#[tokio::test(start_paused = true)]
async fn a_client_result_that_overtakes_the_approval_is_kept_for_the_run() {
    let mut harness = Harness::new(CONFIRMED_CLIENT_TOOL).await;
    harness.send("t1", "go").await;
    let pending = harness.until_pending().await;
    assert_eq!(
        describe_all(&pending)[0],
        r#"toolCallStart tool-1-1 probe "probe" client=vscode-1"#
    );
    // The client answers the approval and completes the call before the run woke up.
    harness
        .session
        .respond_to_permission("tool-1-1", PermissionDecision::Approve)
        .await
        .unwrap();
    harness
        .session
        .complete_client_tool("tool-1-1", client_result("probed"))
        .await
        .unwrap();
    assert_eq!(describe_all(&harness.until_terminal().await), AFTER_AT_ONCE);
}

#[tokio::test(start_paused = true)]
async fn a_client_may_complete_its_call_straight_from_the_pending_confirmation() {
    let mut harness = Harness::new(CONFIRMED_CLIENT_TOOL).await;
    harness.send("t1", "go").await;
    harness.until_pending().await;
    harness
        .session
        .complete_client_tool("tool-1-1", client_result("unavailable"))
        .await
        .unwrap();
    assert_eq!(describe_all(&harness.until_terminal().await), AFTER_AT_ONCE);
}

#[tokio::test(start_paused = true)]
async fn client_results_without_a_turn_or_for_host_tools_are_refused() {
    let mut harness = Harness::new(
        r#"{ "turns": [{ "steps": [
            { "kind": "tool", "name": "w", "confirm": true,
              "effect": { "kind": "writeFile", "path": "a.txt", "content": "A" } }
        ] }] }"#,
    )
    .await;
    assert_eq!(
        not_running(
            harness
                .session
                .complete_client_tool("tool-1-1", client_result("x"))
                .await
        ),
        "no tool call `tool-1-1` is waiting for a client's result"
    );
    harness.send("t1", "go").await;
    harness.until_pending().await;
    // A host tool waiting for permission does not take a client's result: the turn fails
    // loudly rather than skipping the effect.
    harness
        .session
        .complete_client_tool("tool-1-1", client_result("x"))
        .await
        .unwrap();
    let end = describe_all(&harness.until_terminal().await);
    assert!(
        end.last().unwrap().starts_with("error internalError"),
        "{end:?}"
    );
    assert_eq!(harness.file("a.txt"), None);
}

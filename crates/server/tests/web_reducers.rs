//! The web page's reducers (`web/reducers.js`) agree with the host's: one sequence of chat
//! actions — streamed text and reasoning, tool calls approved, denied, refreshed, completed and
//! left running at a turn's end, no-ops the protocol defines (another turn's delta, a completed
//! call's late result), the queue, an error and a cancel — is reduced by the host's state manager
//! and, in Node, by the page's module; what the page shows of the result must be the same.
//!
//! Needs `node` on the `PATH` (the CI machines have it); without it the test says it skipped.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState};
use agenthost_state::{StateConfig, StateManager};
use serde_json::{Value, json};

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";

fn started(turn: &str, at: &str) -> Value {
    json!({ "type": "chat/turnStarted", "turnId": turn, "startedAt": at,
            "message": { "text": format!("message of {turn}"), "origin": { "kind": "user" } } })
}

fn tool(kind: &str, turn: &str, call: &str, extra: Value) -> Value {
    let mut action = json!({ "type": kind, "turnId": turn, "toolCallId": call });
    if let (Some(target), Some(fields)) = (action.as_object_mut(), extra.as_object()) {
        target.extend(fields.clone());
    }
    action
}

fn actions() -> Vec<Value> {
    let done = json!({ "result": { "success": true, "pastTenseMessage": "ran it",
                                   "content": [ { "type": "text", "text": "out" } ] } });
    vec![
        started("t1", "2026-01-01T00:00:00.000Z"),
        json!({ "type": "chat/responsePart", "turnId": "t1",
                "part": { "kind": "reasoning", "id": "r1", "content": "" } }),
        json!({ "type": "chat/reasoning", "turnId": "t1", "partId": "r1", "content": "thinking" }),
        json!({ "type": "chat/responsePart", "turnId": "t1",
                "part": { "kind": "markdown", "id": "m1", "content": "" } }),
        json!({ "type": "chat/delta", "turnId": "t1", "partId": "m1", "content": "Hello " }),
        // Another turn's delta: a no-op.
        json!({ "type": "chat/delta", "turnId": "t0", "partId": "m1", "content": "LOST" }),
        json!({ "type": "chat/delta", "turnId": "t1", "partId": "m1", "content": "world" }),
        tool(
            "chat/toolCallStart",
            "t1",
            "a",
            json!({ "toolName": "shell", "displayName": "Shell" }),
        ),
        tool(
            "chat/toolCallDelta",
            "t1",
            "a",
            json!({ "content": "{\"cmd\"" }),
        ),
        tool(
            "chat/toolCallReady",
            "t1",
            "a",
            json!({ "invocationMessage": "run a", "toolInput": "ls" }),
        ),
        // Refreshed while it waits: the new input replaces the old.
        tool(
            "chat/toolCallReady",
            "t1",
            "a",
            json!({ "invocationMessage": "run a", "toolInput": "ls -la" }),
        ),
        tool(
            "chat/toolCallConfirmed",
            "t1",
            "a",
            json!({ "approved": true, "confirmed": "user-action" }),
        ),
        tool(
            "chat/toolCallContentChanged",
            "t1",
            "a",
            json!({ "content": [ { "type": "text", "text": "partial" } ] }),
        ),
        tool("chat/toolCallComplete", "t1", "a", done.clone()),
        // A completed call's late result and a late confirmation: no-ops.
        tool(
            "chat/toolCallComplete",
            "t1",
            "a",
            json!({ "result": { "success": false, "pastTenseMessage": "late" } }),
        ),
        tool(
            "chat/toolCallConfirmed",
            "t1",
            "a",
            json!({ "approved": false, "reason": "denied" }),
        ),
        tool(
            "chat/toolCallStart",
            "t1",
            "b",
            json!({ "toolName": "shell", "displayName": "Shell" }),
        ),
        tool(
            "chat/toolCallReady",
            "t1",
            "b",
            json!({ "invocationMessage": "run b" }),
        ),
        tool(
            "chat/toolCallConfirmed",
            "t1",
            "b",
            json!({ "approved": false, "reason": "denied" }),
        ),
        tool("chat/toolCallComplete", "t1", "b", done.clone()),
        tool(
            "chat/toolCallStart",
            "t1",
            "c",
            json!({ "toolName": "shell", "displayName": "Shell" }),
        ),
        tool(
            "chat/toolCallReady",
            "t1",
            "c",
            json!({ "invocationMessage": "run c", "confirmed": "not-needed" }),
        ),
        tool(
            "chat/toolCallContentChanged",
            "t1",
            "c",
            json!({ "content": [ { "type": "text", "text": "half" } ] }),
        ),
        json!({ "type": "chat/usage", "turnId": "t1", "usage": { "inputTokens": 10, "outputTokens": 2 } }),
        json!({ "type": "chat/pendingMessageSet", "kind": "queued", "id": "q1",
                "message": { "text": "next", "origin": { "kind": "user" } } }),
        json!({ "type": "chat/pendingMessageSet", "kind": "queued", "id": "q2",
                "message": { "text": "dropped", "origin": { "kind": "user" } } }),
        json!({ "type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q2" }),
        // The turn ends with call c still running: skipped.
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 1000 }),
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 5 }),
        json!({ "type": "chat/turnStarted", "turnId": "t2", "startedAt": "2026-01-01T00:00:02.000Z",
                "message": { "text": "next", "origin": { "kind": "user" } }, "queuedMessageId": "q1" }),
        json!({ "type": "chat/responsePart", "turnId": "t2",
                "part": { "kind": "markdown", "id": "m2", "content": "partial answer" } }),
        json!({ "type": "chat/error", "turnId": "t2", "duration": 10,
                "part": { "error": { "errorType": "provider", "message": "it broke" } } }),
        started("t3", "2026-01-01T00:00:03.000Z"),
        tool(
            "chat/toolCallStart",
            "t3",
            "d",
            json!({ "toolName": "shell", "displayName": "Shell" }),
        ),
        tool(
            "chat/toolCallReady",
            "t3",
            "d",
            json!({ "invocationMessage": "run d" }),
        ),
        json!({ "type": "chat/turnCancelled", "turnId": "t3", "duration": 50 }),
    ]
}

/// What the page shows of a chat: per turn its id, state, message, and each part's kind with
/// its text or its call's id, status, reason, summary and result text; the queue.
fn shown(chat: &Value) -> Value {
    let mut turns: Vec<Value> = chat["turns"].as_array().cloned().unwrap_or_default();
    if !chat["activeTurn"].is_null() {
        turns.push(chat["activeTurn"].clone());
    }
    let turns: Vec<Value> = turns
        .iter()
        .map(|turn| {
            let parts: Vec<Value> = turn["responseParts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|part| match part["kind"].as_str().unwrap_or_default() {
                    "toolCall" => {
                        let call = &part["toolCall"];
                        json!({ "tool": call["toolCallId"], "status": call["status"],
                                "reason": call["reason"], "input": call["toolInput"],
                                "summary": call["pastTenseMessage"], "content": call["content"] })
                    }
                    "error" => json!({ "error": part["error"]["message"] }),
                    kind => json!({ "kind": kind, "content": part["content"] }),
                })
                .collect();
            json!({ "id": turn["id"], "state": turn["state"], "message": turn["message"]["text"],
                    "parts": parts, "usage": turn["usage"] })
        })
        .collect();
    json!({ "turns": turns, "queued": chat["queuedMessages"] })
}

/// Reduces `actions` from `chat` with the page's module in Node; `None` without Node.
fn page_reduction(chat: &Value, actions: &[Value]) -> Option<Value> {
    let module = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web/reducers.js");
    let script = format!(
        r#"import {{ reduceChat }} from {module:?};
let input = "";
for await (const chunk of process.stdin) input += chunk;
const {{ chat, actions }} = JSON.parse(input);
const placed = actions.map((action) => reduceChat(chat, action));
process.stdout.write(JSON.stringify({{ chat, placed }}));"#,
        module = format!("file://{}", module.display())
    );
    let mut child = match Command::new("node")
        .args(["--input-type=module", "-e", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            eprintln!("skipped: cannot run node ({error})");
            return None;
        }
    };
    let input = json!({ "chat": chat, "actions": actions }).to_string();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).unwrap())
}

#[test]
fn the_page_reduces_a_chat_as_the_host_does() {
    let chat: ChatState = serde_json::from_value(json!({
        "resource": CHAT, "title": "Chat", "status": 1,
        "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
    }))
    .unwrap();
    let initial = serde_json::to_value(&chat).unwrap();
    let state = StateManager::new(
        serde_json::from_value::<RootState>(json!({ "agents": [] })).unwrap(),
        StateConfig::default(),
    );
    let session: SessionState = serde_json::from_value(json!({
        "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": []
    }))
    .unwrap();
    state
        .insert_session(&SESSION.parse().unwrap(), session)
        .unwrap();
    state
        .insert_chat(&SESSION.parse().unwrap(), &CHAT.parse().unwrap(), chat)
        .unwrap();
    let actions = actions();
    for action in &actions {
        // The host sequences even the actions that reduce to nothing; both sides see them all.
        let _ = state.dispatch_server(CHAT, serde_json::from_value(action.clone()).unwrap());
    }
    let host = state.read(|h| serde_json::to_value(h.chat(CHAT).unwrap()).unwrap());
    let Some(page) = page_reduction(&initial, &actions) else {
        return;
    };
    // Every action was placed: the page never had to take a snapshot again.
    let placed = page["placed"].as_array().unwrap();
    assert!(
        placed.iter().all(|p| p == true),
        "unplaced: {:?}",
        placed
            .iter()
            .zip(&actions)
            .filter(|(p, _)| **p != true)
            .map(|(_, a)| a["type"].clone())
            .collect::<Vec<_>>()
    );
    assert_eq!(shown(&page["chat"]), shown(&host));
    // And the comparison is not empty: three turns, the tool calls' outcomes.
    let shown = shown(&host);
    assert_eq!(shown["turns"].as_array().unwrap().len(), 3);
    let first = &shown["turns"][0]["parts"];
    assert_eq!(first[1]["content"], "Hello world");
    assert_eq!(first[2]["status"], "completed");
    assert_eq!(first[2]["input"], "ls -la");
    assert_eq!(first[3]["reason"], "denied");
    assert_eq!(first[4]["status"], "cancelled");
    assert_eq!(
        first[4]["content"],
        Value::Null,
        "a skipped call keeps no output"
    );
}

use agenthost_protocol::error_info::error_info;
use agenthost_protocol::state::{ToolResultContent, ToolResultTextContent};
use agenthost_protocol::{AgentSignal, ChatUri, PermissionKind, SafeId, SessionUri};
use serde_json::{Value, json};

use super::*;
use crate::signal_json;

fn session() -> SessionUri {
    SessionUri::canonical(SafeId::new("s1").unwrap())
}

fn mapper() -> Mapper {
    let mut mapper = Mapper::new(session());
    mapper.begin_turn("t1");
    mapper
}

fn render(signals: &[AgentSignal]) -> Vec<Value> {
    signals.iter().map(signal_json).collect()
}

/// Maps every event and renders everything they produced.
fn run(mapper: &mut Mapper, events: Vec<NormEvent>) -> Vec<Value> {
    let signals: Vec<AgentSignal> = events.into_iter().flat_map(|e| mapper.map(e)).collect();
    render(&signals)
}

fn text(stream: &str, text: &str) -> NormEvent {
    NormEvent::TextDelta {
        scope: Scope::Root,
        stream_id: stream.into(),
        text: text.into(),
    }
}

fn text_full(stream: &str, text: &str) -> NormEvent {
    NormEvent::TextFull {
        scope: Scope::Root,
        stream_id: stream.into(),
        text: text.into(),
    }
}

fn start_in(scope: Scope, id: &str) -> NormEvent {
    NormEvent::ToolStarted {
        scope,
        tool_call_id: id.into(),
        tool_name: "Bash".into(),
        display_name: "Bash".into(),
        contributor: None,
        meta: None,
    }
}

fn start(id: &str) -> NormEvent {
    start_in(Scope::Root, id)
}

fn ready(id: &str, auto_approved: bool) -> NormEvent {
    NormEvent::ToolReady {
        scope: Scope::Root,
        tool_call_id: id.into(),
        invocation_message: "Run `ls`".into(),
        tool_input: Some(r#"{"command":"ls"}"#.into()),
        auto_approved,
        meta: None,
    }
}

fn ask(id: &str) -> NormEvent {
    NormEvent::PermissionAsked {
        scope: Scope::Root,
        tool_call_id: id.into(),
        tool_name: "Bash".into(),
        display_name: "Bash".into(),
        kind: PermissionKind::Shell,
        path: Some("/w/out.txt".into()),
        title: "Run command".into(),
        invocation_message: "Run `ls`".into(),
        input: None,
    }
}

fn complete(id: &str, success: bool) -> NormEvent {
    NormEvent::ToolCompleted {
        scope: Scope::Root,
        tool_call_id: id.into(),
        success,
        past_tense_message: None,
        content: vec![ToolResultContent::Text(ToolResultTextContent {
            text: "out".into(),
        })],
        structured_content: None,
        error: (!success).then(|| ToolError::denied("no")),
    }
}

fn output(id: &str, text: &str) -> NormEvent {
    NormEvent::ToolOutput {
        scope: Scope::Root,
        tool_call_id: id.into(),
        content: vec![ToolResultContent::Text(ToolResultTextContent {
            text: text.into(),
        })],
        meta: None,
    }
}

fn resolved(id: &str, approved: bool) -> NormEvent {
    NormEvent::PermissionResolved {
        scope: Scope::Root,
        tool_call_id: id.into(),
        approved,
    }
}

fn idle() -> NormEvent {
    NormEvent::Idle {
        aborted: false,
        duration_ms: Some(5),
    }
}

fn failed() -> NormEvent {
    NormEvent::Failed {
        error: error_info("api_error", "boom"),
        duration_ms: Some(7),
    }
}

fn types(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|v| {
            v.get("type")
                .or_else(|| v.get("signal"))
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned()
        })
        .collect()
}

const READY_NOT_NEEDED: &str = "chat/toolCallReady";

#[test]
fn the_first_delta_of_a_stream_creates_its_part_and_later_ones_append() {
    let mut m = mapper();
    let out = run(&mut m, vec![text("m1", "Hel"), text("m1", "lo")]);
    assert_eq!(
        out,
        vec![
            json!({"type": "chat/responsePart", "turnId": "t1",
                   "part": {"kind": "markdown", "id": "t1#m1", "content": "Hel"}}),
            json!({"type": "chat/delta", "turnId": "t1", "partId": "t1#m1", "content": "lo"}),
        ]
    );
}

#[test]
fn an_empty_first_delta_creates_an_empty_part_and_empty_later_deltas_are_not_sent() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![text("m1", ""), text("m1", ""), text("m1", "x")],
    );
    assert_eq!(
        types(&out),
        ["chat/responsePart", "chat/delta"],
        "the second empty delta is noise"
    );
    assert_eq!(out[0]["part"]["content"], "");
}

#[test]
fn reasoning_deltas_go_to_a_reasoning_part() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![
            NormEvent::ReasoningDelta {
                scope: Scope::Root,
                stream_id: "r".into(),
                text: "think".into(),
            },
            NormEvent::ReasoningDelta {
                scope: Scope::Root,
                stream_id: "r".into(),
                text: "ing".into(),
            },
        ],
    );
    assert_eq!(
        out,
        vec![
            json!({"type": "chat/responsePart", "turnId": "t1",
                   "part": {"kind": "reasoning", "id": "t1#r", "content": "think"}}),
            json!({"type": "chat/reasoning", "turnId": "t1", "partId": "t1#r", "content": "ing"}),
        ]
    );
}

#[test]
fn a_new_stream_opens_a_new_part() {
    let mut m = mapper();
    let out = run(&mut m, vec![text("a", "1"), text("b", "2"), text("b", "3")]);
    assert_eq!(
        types(&out),
        ["chat/responsePart", "chat/responsePart", "chat/delta"]
    );
    assert_eq!(out[1]["part"]["id"], "t1#b");
    assert_eq!(out[2]["partId"], "t1#b");
}

#[test]
fn a_full_block_of_a_streamed_part_is_ignored() {
    let mut m = mapper();
    let out = run(&mut m, vec![text("m1", "Hello"), text_full("m1", "Hello")]);
    assert_eq!(types(&out), ["chat/responsePart"]);
}

#[test]
fn a_full_block_of_an_unstreamed_part_becomes_one_part() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![
            text_full("m1", "Hello"),
            text_full("empty", ""),
            NormEvent::ReasoningFull {
                scope: Scope::Root,
                stream_id: "m2".into(),
                text: "hmm".into(),
            },
        ],
    );
    assert_eq!(
        out,
        vec![
            json!({"type": "chat/responsePart", "turnId": "t1",
                   "part": {"kind": "markdown", "id": "t1#m1", "content": "Hello"}}),
            json!({"type": "chat/responsePart", "turnId": "t1",
                   "part": {"kind": "reasoning", "id": "t1#m2", "content": "hmm"}}),
        ]
    );
}

#[test]
fn a_tool_start_closes_the_open_parts_so_later_text_starts_a_new_part() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![text("m1", "before"), start("c1"), text("m1", "after")],
    );
    assert_eq!(
        out,
        vec![
            json!({"type": "chat/responsePart", "turnId": "t1",
                   "part": {"kind": "markdown", "id": "t1#m1", "content": "before"}}),
            json!({"type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "c1",
                   "toolName": "Bash", "displayName": "Bash"}),
            json!({"type": "chat/responsePart", "turnId": "t1",
                   "part": {"kind": "markdown", "id": "t1#m1#2", "content": "after"}}),
        ]
    );
}

#[test]
fn a_duplicate_tool_start_is_ignored() {
    let mut m = mapper();
    let out = run(&mut m, vec![start("c1"), start("c1")]);
    assert_eq!(types(&out), ["chat/toolCallStart"]);
}

#[test]
fn argument_deltas_stream_until_the_tool_is_ready() {
    let mut m = mapper();
    let delta = |json: &str| NormEvent::ToolArgsDelta {
        scope: Scope::Root,
        tool_call_id: "c1".into(),
        partial_json: json.into(),
    };
    let out = run(
        &mut m,
        vec![start("c1"), delta("{\"a\""), ready("c1", true), delta("}")],
    );
    assert_eq!(
        out,
        vec![
            json!({"type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "c1",
                   "toolName": "Bash", "displayName": "Bash"}),
            json!({"type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "c1",
                   "content": "{\"a\""}),
            json!({"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c1",
                   "invocationMessage": "Run `ls`", "toolInput": "{\"command\":\"ls\"}",
                   "confirmed": "not-needed"}),
        ]
    );
}

#[test]
fn tool_deltas_carry_arguments_and_invocation_messages_while_streaming() {
    let mut m = mapper();
    let delta = |json: Option<&str>, message: Option<&str>| NormEvent::ToolDelta {
        scope: Scope::Root,
        tool_call_id: "c1".into(),
        partial_json: json.map(str::to_owned),
        invocation_message: message.map(str::to_owned),
    };
    let out = run(
        &mut m,
        vec![
            start("c1"),
            delta(Some("{\"command\": \"l"), Some("Run `l`")),
            delta(Some("s\""), None),
            delta(None, Some("Run `ls`")),
            delta(None, None),
            complete("c1", true),
            delta(Some("}"), Some("too late")),
        ],
    );
    assert_eq!(
        out[1..4],
        [
            json!({"type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "c1",
                   "content": "{\"command\": \"l", "invocationMessage": "Run `l`"}),
            json!({"type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "c1",
                   "content": "s\""}),
            json!({"type": "chat/toolCallDelta", "turnId": "t1", "toolCallId": "c1",
                   "invocationMessage": "Run `ls`"}),
        ]
    );
    // The synthetic ready shows the last message; nothing follows the completion.
    assert_eq!(
        types(&out[4..]),
        ["chat/toolCallReady", "chat/toolCallComplete"]
    );
    assert_eq!(out[4]["invocationMessage"], "Run `ls`");
}

#[test]
fn an_auto_approved_ready_runs_the_tool_and_a_second_ready_is_ignored() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![start("c1"), ready("c1", true), ready("c1", true)],
    );
    assert_eq!(types(&out), ["chat/toolCallStart", READY_NOT_NEEDED]);
    assert_eq!(out[1]["confirmed"], "not-needed");
}

#[test]
fn a_ready_that_needs_permission_emits_nothing_until_asked() {
    let mut m = mapper();
    let out = run(&mut m, vec![start("c1"), ready("c1", false)]);
    assert_eq!(types(&out), ["chat/toolCallStart"]);
    let out = run(&mut m, vec![ask("c1")]);
    assert_eq!(
        out,
        vec![
            json!({"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c1",
                    "invocationMessage": "Run `ls`", "toolInput": "{\"command\":\"ls\"}",
                    "confirmationTitle": "Run command",
                    "permissionKind": "shell", "permissionPath": "/w/out.txt"})
        ]
    );
}

#[test]
fn a_completion_without_a_ready_gets_a_synthetic_ready_first() {
    let mut m = mapper();
    let out = run(&mut m, vec![start("c1"), complete("c1", true)]);
    assert_eq!(
        out,
        vec![
            json!({"type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "c1",
                   "toolName": "Bash", "displayName": "Bash"}),
            json!({"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c1",
                   "invocationMessage": "Bash", "confirmed": "not-needed"}),
            json!({"type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": "c1",
                   "result": {"success": true, "pastTenseMessage": "Ran Bash",
                              "content": [{"type": "text", "text": "out"}]}}),
        ]
    );
}

#[test]
fn the_synthetic_ready_carries_what_a_deferred_ready_said() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![start("c1"), ready("c1", false), complete("c1", true)],
    );
    assert_eq!(
        types(&out),
        [
            "chat/toolCallStart",
            READY_NOT_NEEDED,
            "chat/toolCallComplete"
        ]
    );
    assert_eq!(out[1]["invocationMessage"], "Run `ls`");
    assert_eq!(out[1]["toolInput"], "{\"command\":\"ls\"}");
}

#[test]
fn a_completion_after_a_ready_is_not_preceded_by_another_ready() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![start("c1"), ready("c1", true), complete("c1", true)],
    );
    assert_eq!(
        types(&out),
        [
            "chat/toolCallStart",
            READY_NOT_NEEDED,
            "chat/toolCallComplete"
        ]
    );
}

#[test]
fn a_completion_of_an_unknown_or_completed_tool_is_dropped() {
    let mut m = mapper();
    assert_eq!(
        run(&mut m, vec![complete("ghost", true)]),
        Vec::<Value>::new()
    );
    let out = run(
        &mut m,
        vec![start("c1"), complete("c1", true), complete("c1", false)],
    );
    assert_eq!(
        types(&out),
        [
            "chat/toolCallStart",
            READY_NOT_NEEDED,
            "chat/toolCallComplete"
        ]
    );
}

#[test]
fn a_declined_tool_completes_with_a_denied_error() {
    let mut m = mapper();
    let out = run(&mut m, vec![start("c1"), ask("c1"), complete("c1", false)]);
    assert_eq!(
        out[2],
        json!({"type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": "c1",
               "result": {"success": false, "pastTenseMessage": "Bash failed",
                          "content": [{"type": "text", "text": "out"}],
                          "error": {"message": "no", "code": "denied"}}})
    );
}

#[test]
fn a_permission_request_for_a_running_tool_is_a_second_ready_without_confirmed() {
    let mut m = mapper();
    let out = m
        .map(start("c1"))
        .into_iter()
        .chain(m.map(ready("c1", true)))
        .chain(m.map(ask("c1")))
        .collect::<Vec<_>>();
    assert!(matches!(out[2], AgentSignal::PendingConfirmation(_)));
    let AgentSignal::PendingConfirmation(pending) = &out[2] else {
        unreachable!()
    };
    assert_eq!(pending.turn_id, "t1");
    assert_eq!(pending.state.tool_call_id, "c1");
    assert_eq!(pending.permission_kind, PermissionKind::Shell);
    assert_eq!(pending.permission_path.as_deref(), Some("/w/out.txt"));
    assert_eq!(pending.parent_tool_call_id, None);
    // The input the ready carried is kept when the request does not repeat it.
    assert_eq!(
        pending.state.tool_input,
        Some(ToolInput::Inline(r#"{"command":"ls"}"#.into()))
    );
}

#[test]
fn a_permission_request_for_an_unknown_tool_starts_it_first() {
    let mut m = mapper();
    let out = run(&mut m, vec![ask("c9")]);
    assert_eq!(types(&out), ["chat/toolCallStart", "chat/toolCallReady"]);
    assert_eq!(out[1]["permissionKind"], "shell");
    assert!(out[1].get("confirmed").is_none());
}

#[test]
fn a_permission_request_for_a_completed_tool_is_dropped() {
    let mut m = mapper();
    run(&mut m, vec![start("c1"), complete("c1", true)]);
    assert_eq!(run(&mut m, vec![ask("c1")]), Vec::<Value>::new());
}

#[test]
fn a_completion_after_a_permission_request_needs_no_synthetic_ready() {
    let mut m = mapper();
    let out = run(&mut m, vec![start("c1"), ask("c1"), complete("c1", true)]);
    assert_eq!(
        types(&out),
        [
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallComplete"
        ]
    );
    assert!(out[1].get("confirmed").is_none());
}

#[test]
fn tool_output_replaces_the_live_content_of_a_running_tool_only() {
    let mut m = mapper();
    let out = run(&mut m, vec![start("c1"), output("c1", "early")]);
    assert_eq!(types(&out), ["chat/toolCallStart"]);
    let out = run(&mut m, vec![ready("c1", true), output("c1", "live")]);
    assert_eq!(
        out[1],
        json!({"type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": "c1",
               "content": [{"type": "text", "text": "live"}]})
    );
}

#[test]
fn tool_output_carries_its_meta() {
    let mut m = mapper();
    let mut meta = JsonObject::new();
    meta.insert("progressMessage".into(), "halfway".into());
    let out = run(
        &mut m,
        vec![
            start("c1"),
            ready("c1", true),
            NormEvent::ToolOutput {
                scope: Scope::Root,
                tool_call_id: "c1".into(),
                content: Vec::new(),
                meta: Some(meta),
            },
        ],
    );
    assert_eq!(
        out[2],
        json!({"type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": "c1",
               "content": [], "_meta": {"progressMessage": "halfway"}})
    );
}

#[test]
fn an_approved_permission_runs_the_tool_again_so_its_output_is_shown() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![
            start("c1"),
            ready("c1", true),
            ask("c1"),
            output("c1", "while asking"),
            resolved("c1", true),
            output("c1", "live"),
        ],
    );
    assert_eq!(
        types(&out),
        [
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallReady",
            "chat/toolCallContentChanged"
        ]
    );
    assert_eq!(out[3]["content"][0]["text"], "live");
}

#[test]
fn a_denied_permission_shows_no_output_and_the_completion_needs_no_ready() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![
            start("c1"),
            ask("c1"),
            resolved("c1", false),
            output("c1", "ignored"),
            complete("c1", false),
            resolved("unknown", true),
        ],
    );
    assert_eq!(
        types(&out),
        [
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallComplete"
        ]
    );
    assert_eq!(out[2]["result"]["error"]["code"], "denied");
}

#[test]
fn cancelled_ends_the_turn_with_turn_cancelled_exactly_once() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![
            NormEvent::SubagentStarted {
                parent_tool_call_id: "task1".into(),
                agent_name: "explore".into(),
                display_name: "Explore".into(),
                description: None,
                prompt: None,
                grandparent: None,
            },
            NormEvent::Cancelled {
                duration_ms: Some(9),
            },
            idle(),
            failed(),
        ],
    );
    assert_eq!(
        out[1..],
        [
            json!({"signal": "subagentCompleted",
                   "chat": ChatUri::subagent(&session(), &SafeId::new("task1").unwrap()).as_str(),
                   "toolCallId": "task1"}),
            json!({"type": "chat/turnCancelled", "turnId": "t1", "duration": 9}),
        ]
    );
    assert!(m.turn_ended());
    assert_eq!(m.fail(error_info("x", "y")), Vec::new());
}

#[test]
fn usage_becomes_chat_usage() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![NormEvent::Usage {
            scope: Scope::Root,
            kind: UsageKind::Total,
            input: 200,
            output: 40,
            cache_read: Some(3),
            cache_write: None,
            model: Some("m".into()),
            meta: None,
        }],
    );
    assert_eq!(
        out,
        vec![json!({"type": "chat/usage", "turnId": "t1",
                    "usage": {"inputTokens": 200, "outputTokens": 40, "model": "m",
                              "cacheReadTokens": 3}})]
    );
}

#[test]
fn call_usage_adds_up_per_scope_and_a_total_replaces_it() {
    let call = |scope: Scope, input, cache_write| NormEvent::Usage {
        scope,
        kind: UsageKind::Call,
        input,
        output: 10,
        cache_read: Some(5),
        cache_write,
        model: Some("m".into()),
        meta: None,
    };
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![
            call(Scope::Root, 100, None),
            call(Scope::Root, 200, Some(50)),
            call(Scope::subagent("spawn"), 7, None),
            NormEvent::Usage {
                scope: Scope::Root,
                kind: UsageKind::Total,
                input: 1000,
                output: 1,
                cache_read: None,
                cache_write: None,
                model: None,
                meta: None,
            },
        ],
    );
    let usages: Vec<_> = out
        .iter()
        .filter(|action| action["type"] == "chat/usage")
        .map(|action| action["usage"].clone())
        .collect();
    assert_eq!(
        usages,
        vec![
            // A call's input is what its context held.
            json!({"inputTokens": 100, "outputTokens": 10, "cacheReadTokens": 5, "model": "m",
                   "_meta": {"agenthost.contextTokens": 100}}),
            json!({"inputTokens": 300, "outputTokens": 20, "cacheReadTokens": 10, "model": "m",
                   "_meta": {"agenthost.cacheWriteTokens": 50, "agenthost.contextTokens": 200}}),
            // The subagent's chat has a total of its own.
            json!({"inputTokens": 7, "outputTokens": 10, "cacheReadTokens": 5, "model": "m",
                   "_meta": {"agenthost.contextTokens": 7}}),
            json!({"inputTokens": 1000, "outputTokens": 1}),
        ]
    );
    // A new turn starts from nothing; once the agent reported its model's window, the fill
    // carries it.
    m.map(NormEvent::ModelLimits {
        limits: agenthost_protocol::ModelLimits {
            max_context_window: Some(8000),
            ..Default::default()
        },
    });
    m.begin_turn("t2");
    let out = run(&mut m, vec![call(Scope::Root, 1, None)]);
    assert_eq!(out[0]["usage"]["inputTokens"], 1);
    assert_eq!(
        out[0]["usage"]["_meta"],
        json!({"agenthost.contextTokens": 1, "agenthost.contextWindow": 8000})
    );
}

#[test]
fn usage_meta_never_carries_quota_snapshots_or_a_cost_that_is_not_credits() {
    let usage = |meta: serde_json::Value| {
        let mut m = mapper();
        let out = run(
            &mut m,
            vec![NormEvent::Usage {
                scope: Scope::Root,
                kind: UsageKind::Total,
                input: 1,
                output: 1,
                cache_read: None,
                cache_write: None,
                model: None,
                meta: serde_json::from_value(meta).unwrap(),
            }],
        );
        out[0]["usage"].get("_meta").cloned()
    };
    assert_eq!(
        usage(json!({ "cost": 1.5, "agenthost.agentCostUsd": 0.02,
                      "quotaSnapshots": { "premium_interactions": { "remainingPercentage": 10 } } })),
        Some(json!({ "cost": 1.5, "agenthost.agentCostUsd": 0.02 }))
    );
    assert_eq!(
        usage(json!({ "cost": "$0.02", "reasoningTokens": 3 })),
        Some(json!({ "reasoningTokens": 3 }))
    );
    assert_eq!(usage(json!({ "cost": -1 })), None);
    assert_eq!(usage(json!({ "quotaSnapshots": {} })), None);
}

#[test]
fn idle_completes_the_turn_exactly_once() {
    let mut m = mapper();
    assert!(!m.turn_ended());
    let out = run(&mut m, vec![idle(), idle(), failed()]);
    assert_eq!(
        out,
        vec![json!({"type": "chat/turnComplete", "turnId": "t1", "duration": 5})]
    );
    assert!(m.turn_ended());
    assert_eq!(m.fail(error_info("x", "y")), Vec::new());
}

#[test]
fn failed_ends_the_turn_with_chat_error_and_a_later_idle_emits_nothing() {
    let mut m = mapper();
    let out = run(&mut m, vec![failed(), idle(), text("m1", "late")]);
    assert_eq!(
        out,
        vec![json!({"type": "chat/error", "turnId": "t1", "duration": 7,
                    "part": {"kind": "error",
                             "error": {"errorType": "api_error", "message": "boom"}}})]
    );
    assert!(m.turn_ended());
}

#[test]
fn an_aborted_turn_emits_nothing_and_ends() {
    let mut m = mapper();
    assert_eq!(
        run(
            &mut m,
            vec![NormEvent::Idle {
                aborted: true,
                duration_ms: None
            }]
        ),
        Vec::<Value>::new()
    );
    assert!(m.turn_ended());
    assert_eq!(run(&mut m, vec![idle()]), Vec::<Value>::new());
}

#[test]
fn fail_reports_a_chat_error_unless_the_turn_ended() {
    let mut m = mapper();
    let out = render(&m.fail(error_info("providerExited", "gone")));
    assert_eq!(types(&out), ["chat/error"]);
    assert_eq!(out[0]["part"]["error"]["errorType"], "providerExited");
    assert!(out[0]["duration"].as_i64().unwrap() >= 0);
    assert_eq!(m.fail(error_info("providerExited", "again")), Vec::new());
    assert_eq!(
        Mapper::new(session()).fail(error_info("x", "y")),
        Vec::new()
    );
}

#[test]
fn events_outside_a_turn_are_dropped_but_session_level_ones_pass() {
    let mut m = Mapper::new(session());
    assert!(m.turn_ended());
    assert_eq!(m.turn_id(), None);
    assert_eq!(
        run(&mut m, vec![text("m1", "x"), idle()]),
        Vec::<Value>::new()
    );
    let out = run(
        &mut m,
        vec![
            NormEvent::Title {
                title: "Fix it".into(),
            },
            NormEvent::Activity {
                text: Some("Reading".into()),
            },
            NormEvent::SteeringConsumed { id: "q1".into() },
        ],
    );
    assert_eq!(
        out,
        vec![
            json!({"type": "session/titleChanged", "title": "Fix it"}),
            json!({"type": "chat/activityChanged", "activity": "Reading"}),
            json!({"signal": "steeringConsumed", "id": "q1"}),
        ]
    );
}

#[test]
fn a_new_turn_resets_parts_and_tools() {
    let mut m = mapper();
    run(&mut m, vec![text("m1", "a"), start("c1"), idle()]);
    m.begin_turn("t2");
    assert_eq!(m.turn_id(), Some("t2"));
    assert!(!m.turn_ended());
    // The tool belonged to the previous turn; the stream id is fresh again.
    let out = run(&mut m, vec![complete("c1", true), text("m1", "b")]);
    assert_eq!(
        out,
        vec![json!({"type": "chat/responsePart", "turnId": "t2",
                    "part": {"kind": "markdown", "id": "t2#m1", "content": "b"}})]
    );
}

#[test]
fn the_first_scoped_event_announces_the_subagent_and_scoped_signals_carry_the_parent() {
    let mut m = mapper();
    let inner = Scope::subagent("task1");
    let out = run(
        &mut m,
        vec![
            start("task1"),
            NormEvent::TextFull {
                scope: inner.clone(),
                stream_id: "x".into(),
                text: "inside".into(),
            },
            start_in(inner.clone(), "c2"),
        ],
    );
    assert_eq!(
        out,
        vec![
            json!({"type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "task1",
                   "toolName": "Bash", "displayName": "Bash"}),
            json!({"signal": "subagentStarted",
                   "chat": ChatUri::subagent(&session(), &SafeId::new("task1").unwrap()).as_str(),
                   "toolCallId": "task1", "agentName": "subagent",
                   "agentDisplayName": "Subagent"}),
            json!({"type": "chat/responsePart", "turnId": "t1",
                   "part": {"kind": "markdown", "id": "t1#x", "content": "inside"},
                   "parentToolCallId": "task1"}),
            json!({"type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "c2",
                   "toolName": "Bash", "displayName": "Bash", "parentToolCallId": "task1"}),
        ]
    );
    // Later events of the tool keep its scope.
    let out = run(&mut m, vec![complete("c2", true)]);
    assert!(out.iter().all(|v| v["parentToolCallId"] == "task1"));
}

#[test]
fn a_nested_subagent_names_its_grandparent() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![
            start("task1"),
            start_in(Scope::subagent("task1"), "task2"),
            NormEvent::TextFull {
                scope: Scope::subagent("task2"),
                stream_id: "x".into(),
                text: "deep".into(),
            },
        ],
    );
    let started: Vec<&Value> = out
        .iter()
        .filter(|v| v["signal"] == "subagentStarted")
        .collect();
    assert_eq!(started.len(), 2);
    assert_eq!(started[1]["toolCallId"], "task2");
    assert_eq!(started[1]["parentToolCallId"], "task1");
}

#[test]
fn an_explicit_subagent_start_is_used_once_and_its_end_completes_it() {
    let mut m = mapper();
    let started = NormEvent::SubagentStarted {
        parent_tool_call_id: "task1".into(),
        agent_name: "Explore".into(),
        display_name: "Explore".into(),
        description: Some("Look around".into()),
        prompt: Some("Find X".into()),
        grandparent: None,
    };
    let inner = NormEvent::TextFull {
        scope: Scope::subagent("task1"),
        stream_id: "x".into(),
        text: "inside".into(),
    };
    let end = NormEvent::SubagentEnded {
        parent_tool_call_id: "task1".into(),
    };
    let out = run(
        &mut m,
        vec![started.clone(), inner, started, end.clone(), end],
    );
    assert_eq!(
        types(&out),
        ["subagentStarted", "chat/responsePart", "subagentCompleted"]
    );
    assert_eq!(out[0]["agentName"], "Explore");
    assert_eq!(out[0]["taskDescription"], "Look around");
    assert_eq!(out[0]["taskPrompt"], "Find X");
    // After its end, the subagent's events are dropped.
    let late = NormEvent::TextFull {
        scope: Scope::subagent("task1"),
        stream_id: "y".into(),
        text: "late".into(),
    };
    assert_eq!(run(&mut m, vec![late]), Vec::<Value>::new());
}

#[test]
fn subagents_still_open_at_turn_end_are_completed_before_the_terminal_action() {
    let mut m = mapper();
    let inner = |stream: &str| NormEvent::TextFull {
        scope: Scope::subagent(stream),
        stream_id: "x".into(),
        text: "hi".into(),
    };
    let out = run(&mut m, vec![inner("a"), inner("b"), idle()]);
    assert_eq!(
        types(&out),
        [
            "subagentStarted",
            "chat/responsePart",
            "subagentStarted",
            "chat/responsePart",
            "subagentCompleted",
            "subagentCompleted",
            "chat/turnComplete"
        ]
    );
    assert_eq!(out[4]["toolCallId"], "a");
    assert_eq!(out[5]["toolCallId"], "b");
}

#[test]
fn ids_that_are_not_safe_ids_drop_the_event() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![
            start(".."),
            start("bad\nid"),
            start(""),
            NormEvent::TextFull {
                scope: Scope::subagent("."),
                stream_id: "x".into(),
                text: "inside".into(),
            },
            start_in(Scope::subagent("a\u{0}b"), "c1"),
            NormEvent::SubagentStarted {
                parent_tool_call_id: "ok".into(),
                agent_name: "a".into(),
                display_name: "a".into(),
                description: None,
                prompt: None,
                grandparent: Some("..".into()),
            },
            NormEvent::SubagentEnded {
                parent_tool_call_id: "\u{7}".into(),
            },
            ask(".."),
        ],
    );
    assert_eq!(out, Vec::<Value>::new());
    // The turn is still usable.
    assert_eq!(
        types(&run(&mut m, vec![start("c1")])),
        ["chat/toolCallStart"]
    );
}

#[test]
fn model_call_completion_is_reported_with_the_turn() {
    let mut m = mapper();
    let out = run(
        &mut m,
        vec![NormEvent::ModelCallCompleted {
            model_call_id: "msg_1".into(),
        }],
    );
    assert_eq!(
        out,
        vec![json!({"signal": "modelCallCompleted", "turnId": "t1", "modelCallId": "msg_1"})]
    );
}

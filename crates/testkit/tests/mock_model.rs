//! The mock model server over real loopback HTTP/1.1: the three APIs streamed and not, the
//! decision rule, scripted failures, malformed requests, the request log and the lifecycle.
// Test code: a panic is a failure with a backtrace, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use agenthost_testkit::{MockModel, MockModelConfig, RequestKind, RequestRecord};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::{Client, DEADLINE, SseEvent, post, request_fixture};

const FINAL_TEXT: &str = "Done. I ran the command and the file out.txt now contains \"hi\".";
const FINAL_TEXT_ERR: &str =
    "The command did not run (it was denied or failed), so out.txt was not created.";
const PREAMBLE: &str = "I'll run a shell command to create the file.";

async fn start(config: MockModelConfig) -> MockModel {
    MockModel::start(config).await.unwrap()
}

fn names(events: &[SseEvent]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_deref().unwrap()).collect()
}

/// Event names with runs of deltas collapsed: how many fragments a text or JSON is cut into
/// depends on its length.
fn shape(events: &[SseEvent]) -> Vec<&str> {
    let mut names = names(events);
    names.dedup_by(|next, previous| next == previous && next.ends_with("delta"));
    names
}

fn decisions(records: &[RequestRecord]) -> Vec<&str> {
    records.iter().map(|r| r.decision.as_str()).collect()
}

/// The text deltas of an Anthropic stream, joined per block index.
fn anthropic_deltas(events: &[SseEvent], field: &str) -> String {
    events
        .iter()
        .map(SseEvent::json)
        .filter(|e| e["type"] == "content_block_delta")
        .filter_map(|e| e["delta"][field].as_str().map(str::to_owned))
        .collect()
}

// ---------------------------------------------------------------- Anthropic Messages

#[tokio::test]
async fn anthropic_stream_calls_the_shell_tool_with_the_configured_command() {
    let mock = start(MockModelConfig {
        command: "touch made-by-mock".into(),
        ..MockModelConfig::default()
    })
    .await;
    let mut request = request_fixture("claude-first.json");
    // Required fields beyond the command are filled from the schema.
    request["tools"][2]["input_schema"]["required"] =
        json!(["command", "timeout", "run_in_background"]);

    let response = post(mock.addr(), "/v1/messages?beta=true", &request).await;

    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        "text/event-stream; charset=utf-8"
    );
    assert_eq!(response.header("cache-control"), "no-cache");
    assert!(response.header("request-id").starts_with("req_"));
    let events = response.events();
    assert_eq!(
        shape(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    for event in &events {
        assert_eq!(event.json()["type"], event.name.as_deref().unwrap());
    }
    let start = events[0].json();
    assert_eq!(start["message"]["model"], "claude-opus-5-5");
    assert_eq!(start["message"]["role"], "assistant");
    assert!(start["message"]["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        start["message"]["usage"],
        json!({"input_tokens": 100, "cache_creation_input_tokens": 0,
               "cache_read_input_tokens": 0, "output_tokens": 1})
    );
    assert_eq!(anthropic_deltas(&events, "text"), PREAMBLE);

    let tool_start = events
        .iter()
        .map(SseEvent::json)
        .filter(|e| e["type"] == "content_block_start")
        .nth(1)
        .unwrap();
    assert_eq!(tool_start["index"], 1);
    assert_eq!(tool_start["content_block"]["type"], "tool_use");
    assert_eq!(tool_start["content_block"]["name"], "Bash");
    assert!(
        tool_start["content_block"]["id"]
            .as_str()
            .unwrap()
            .starts_with("toolu_")
    );
    let input: Value = serde_json::from_str(&anthropic_deltas(&events, "partial_json")).unwrap();
    assert_eq!(
        input,
        json!({"command": "touch made-by-mock", "description": "Write hi to out.txt",
               "timeout": 30, "run_in_background": false})
    );
    let message_delta = events[events.len() - 2].json();
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(message_delta["usage"]["output_tokens"], 20);

    let records = mock.requests();
    assert_eq!(decisions(&records), ["tool_use:Bash"]);
    assert_eq!(records[0].kind, RequestKind::AnthropicMessages);
    assert_eq!(records[0].query.as_deref(), Some("beta=true"));
    assert!(records[0].stream);
    assert_eq!(records[0].sse_events, events.len());
}

#[tokio::test]
async fn anthropic_tool_result_in_history_gets_the_final_text() {
    let mock = start(MockModelConfig::default()).await;

    let response = post(
        mock.addr(),
        "/v1/messages",
        &request_fixture("claude-approved.json"),
    )
    .await;

    let events = response.events();
    assert_eq!(anthropic_deltas(&events, "text"), FINAL_TEXT);
    let stop = events
        .iter()
        .map(SseEvent::json)
        .find(|e| e["type"] == "message_delta")
        .unwrap();
    assert_eq!(stop["delta"]["stop_reason"], "end_turn");
    assert!(!response.body.contains("tool_use"));
    assert_eq!(decisions(&mock.requests()), ["final_text"]);
}

#[tokio::test]
async fn anthropic_denied_tool_result_gets_the_did_not_run_text() {
    let mock = start(MockModelConfig::default()).await;

    let response = post(
        mock.addr(),
        "/v1/messages",
        &request_fixture("claude-denied.json"),
    )
    .await;

    assert_eq!(anthropic_deltas(&response.events(), "text"), FINAL_TEXT_ERR);
}

#[tokio::test]
async fn anthropic_thinking_block_comes_first_with_its_signature() {
    let mock = start(MockModelConfig {
        thinking: true,
        ..MockModelConfig::default()
    })
    .await;

    let response = post(
        mock.addr(),
        "/v1/messages",
        &request_fixture("claude-first.json"),
    )
    .await;

    let events: Vec<Value> = response.events().iter().map(SseEvent::json).collect();
    let blocks: Vec<(i64, String)> = events
        .iter()
        .filter(|e| e["type"] == "content_block_start")
        .map(|e| {
            let kind = e["content_block"]["type"].as_str().unwrap().to_owned();
            (e["index"].as_i64().unwrap(), kind)
        })
        .collect();
    assert_eq!(
        blocks,
        [
            (0, "thinking".into()),
            (1, "text".into()),
            (2, "tool_use".into())
        ]
    );
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "content_block_delta" && e["index"] == 0)
        .map(|e| e["delta"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        deltas,
        [
            "thinking_delta",
            "thinking_delta",
            "thinking_delta",
            "signature_delta"
        ]
    );
    let thinking: String = events
        .iter()
        .filter_map(|e| e["delta"]["thinking"].as_str())
        .collect();
    assert_eq!(thinking, "The user wants a file; use the shell tool.");
    let signature = events
        .iter()
        .find_map(|e| e["delta"]["signature"].as_str())
        .unwrap();
    assert!(signature.starts_with("mock-signature-"));
}

#[tokio::test]
async fn anthropic_non_streaming_answer_is_one_message() {
    let mock = start(MockModelConfig::default()).await;
    let mut request = request_fixture("claude-first.json");
    request["stream"] = json!(false);

    let response = post(mock.addr(), "/v1/messages", &request).await;

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), "application/json");
    let message = response.json();
    assert_eq!(message["type"], "message");
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["usage"]["output_tokens"], 20);
    assert_eq!(
        message["content"][0],
        json!({"type": "text", "text": PREAMBLE})
    );
    assert_eq!(message["content"][1]["name"], "Bash");
    assert_eq!(
        message["content"][1]["input"],
        json!({"command": "echo hi > out.txt", "description": "Write hi to out.txt"})
    );
    assert!(!mock.requests()[0].stream);
}

#[tokio::test]
async fn a_request_without_a_shell_tool_gets_a_side_text() {
    let mock = start(MockModelConfig::default()).await;

    let response = post(
        mock.addr(),
        "/v1/messages",
        &request_fixture("claude-title.json"),
    )
    .await;

    let message = response.json();
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "Mock reply"}])
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(decisions(&mock.requests()), ["side_text"]);
}

#[tokio::test]
async fn count_tokens_models_and_unknown_routes() {
    let mock = start(MockModelConfig::default()).await;
    let mut client = Client::connect(mock.addr()).await;

    let count = client
        .post(
            "/v1/messages/count_tokens",
            &request_fixture("claude-first.json"),
        )
        .await;
    let models = client.get("/v1/models").await;
    let unknown = client.get("/v1/embeddings").await;

    assert_eq!(count.json(), json!({"input_tokens": 100}));
    assert_eq!(models.json()["data"][0]["id"], "mock-model");
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.json(),
        json!({"error": {"type": "not_found_error",
                         "message": "mockllm: no route for GET /v1/embeddings"}})
    );
    let kinds: Vec<RequestKind> = mock.requests().iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            RequestKind::AnthropicCountTokens,
            RequestKind::Models,
            RequestKind::Unknown
        ]
    );
}

// ---------------------------------------------------------------- scripted failures, bad input

#[tokio::test]
async fn fail_status_answers_every_model_call_with_a_provider_shaped_error() {
    let mock = start(MockModelConfig {
        fail_status: Some(400),
        fail_message: "prompt is too long".into(),
        ..MockModelConfig::default()
    })
    .await;
    let mut client = Client::connect(mock.addr()).await;

    let anthropic = client
        .post(
            "/v1/messages?beta=true",
            &request_fixture("claude-first.json"),
        )
        .await;
    let responses = client
        .post("/v1/responses", &request_fixture("codex-first.json"))
        .await;
    let chat = client
        .post(
            "/v1/chat/completions",
            &request_fixture("copilot-chat-first.json"),
        )
        .await;
    let count = client
        .post(
            "/v1/messages/count_tokens",
            &request_fixture("claude-first.json"),
        )
        .await;

    assert_eq!(anthropic.status, 400);
    assert_eq!(anthropic.header("content-type"), "application/json");
    assert_eq!(
        anthropic.json(),
        json!({"type": "error",
               "error": {"type": "invalid_request_error", "message": "prompt is too long"}})
    );
    let openai_error = json!({"error": {"type": "invalid_request_error", "code": "mock_error",
                                        "message": "prompt is too long", "param": null}});
    assert_eq!(
        (responses.status, responses.json()),
        (400, openai_error.clone())
    );
    assert_eq!((chat.status, chat.json()), (400, openai_error));
    assert_eq!(count.status, 200, "count_tokens is not a model call");

    let records = mock.requests();
    assert_eq!(
        decisions(&records[..3]),
        ["http_400", "http_400", "http_400"]
    );
    assert!(
        records[..3]
            .iter()
            .all(|r| r.kind == RequestKind::ScriptedError)
    );
    assert_eq!(
        records[0].summary["tools"][2], "Bash",
        "the failed call is still summarised"
    );
}

#[tokio::test]
async fn malformed_json_gets_a_400_with_a_provider_shaped_body() {
    let mock = start(MockModelConfig::default()).await;
    let mut client = Client::connect(mock.addr()).await;

    let anthropic = client
        .send("POST", "/v1/messages", Some(b"{\"model\": ".to_vec()))
        .await;
    let responses = client
        .send("POST", "/v1/responses", Some(b"[1, 2]".to_vec()))
        .await;
    let chat = client.send("POST", "/v1/chat/completions", None).await;
    // The connection and the server are fine afterwards.
    let ok = client
        .post("/v1/messages", &request_fixture("claude-title.json"))
        .await;

    assert_eq!(anthropic.status, 400);
    let body = anthropic.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a JSON object")
    );
    assert_eq!(responses.status, 400);
    assert_eq!(responses.json()["error"]["code"], "mock_error");
    assert!(
        responses.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("got an array")
    );
    assert_eq!(chat.status, 400);
    assert!(
        chat.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("empty")
    );
    assert_eq!(ok.status, 200);

    let records = mock.requests();
    assert_eq!(
        decisions(&records),
        ["invalid_json", "invalid_json", "invalid_json", "side_text"]
    );
    assert_eq!(records[0].kind, RequestKind::AnthropicMessages);
    assert_eq!(records[0].summary["raw_body"], "{\"model\": ");
}

// ---------------------------------------------------------------- OpenAI Responses

#[tokio::test]
async fn responses_stream_calls_exec_command_with_escalation() {
    let mock = start(MockModelConfig {
        escalate: true,
        workdir: Some("/tmp/work".into()),
        ..MockModelConfig::default()
    })
    .await;

    let response = post(
        mock.addr(),
        "/v1/responses",
        &request_fixture("codex-first.json"),
    )
    .await;

    assert_eq!(
        response.header("content-type"),
        "text/event-stream; charset=utf-8"
    );
    let events = response.events();
    let payloads: Vec<Value> = events.iter().map(SseEvent::json).collect();
    for (i, (event, payload)) in events.iter().zip(&payloads).enumerate() {
        assert_eq!(payload["type"], event.name.as_deref().unwrap());
        assert_eq!(
            payload["sequence_number"], i,
            "sequence numbers count from 0"
        );
    }
    assert_eq!(
        shape(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let streamed: String = payloads
        .iter()
        .filter(|p| p["type"] == "response.function_call_arguments.delta")
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    let done = payloads
        .iter()
        .find(|p| p["type"] == "response.function_call_arguments.done");
    assert_eq!(done.unwrap()["arguments"], streamed.as_str());
    let arguments: Value = serde_json::from_str(&streamed).unwrap();
    assert_eq!(
        arguments,
        json!({"cmd": "echo hi > out.txt", "workdir": "/tmp/work",
               "sandbox_permissions": "require_escalated",
               "justification": "Need to write out.txt"})
    );
    let completed = &payloads.last().unwrap()["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["usage"]["total_tokens"], 120);
    assert_eq!(completed["output"][0]["phase"], "commentary");
    assert_eq!(completed["output"][1]["type"], "function_call");
    assert_eq!(completed["output"][1]["name"], "exec_command");
    assert!(
        completed["output"][1]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("call_")
    );
    assert_eq!(decisions(&mock.requests()), ["tool_call:exec_command"]);
}

#[tokio::test]
async fn responses_without_escalation_and_with_reasoning() {
    let mock = start(MockModelConfig {
        thinking: true,
        ..MockModelConfig::default()
    })
    .await;
    let mut request = request_fixture("codex-first.json");
    request["stream"] = json!(false);

    let response = post(mock.addr(), "/v1/responses", &request).await;

    let body = response.json();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    let kinds: Vec<&str> = body["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["reasoning", "message", "function_call"]);
    let arguments: Value =
        serde_json::from_str(body["output"][2]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"cmd": "echo hi > out.txt"}));
}

#[tokio::test]
async fn responses_failed_command_output_gets_the_error_aware_text() {
    let mock = start(MockModelConfig::default()).await;
    let mut client = Client::connect(mock.addr()).await;

    let failed = client
        .post("/v1/responses", &request_fixture("codex-failed.json"))
        .await;
    let succeeded = client
        .post("/v1/responses", &request_fixture("codex-succeeded.json"))
        .await;

    let text = |events: Vec<SseEvent>| {
        let done = events
            .iter()
            .map(SseEvent::json)
            .find(|e| e["type"] == "response.output_text.done");
        done.unwrap()["text"].as_str().unwrap().to_owned()
    };
    assert_eq!(text(failed.events()), FINAL_TEXT_ERR);
    assert_eq!(text(succeeded.events()), FINAL_TEXT);
    assert_eq!(decisions(&mock.requests()), ["final_text", "final_text"]);
}

// ---------------------------------------------------------------- OpenAI Chat Completions

#[tokio::test]
async fn chat_stream_has_tool_call_chunks_a_usage_chunk_and_done() {
    let mock = start(MockModelConfig::default()).await;

    let response = post(
        mock.addr(),
        "/v1/chat/completions",
        &request_fixture("copilot-chat-first.json"),
    )
    .await;

    assert_eq!(
        response.header("content-type"),
        "text/event-stream; charset=utf-8"
    );
    let events = response.events();
    assert!(
        events.iter().all(|e| e.name.is_none()),
        "chat chunks are unnamed"
    );
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(SseEvent::json)
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, PREAMBLE);
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0))
        .collect();
    assert!(calls.iter().all(|call| call["index"] == 0));
    assert_eq!(calls[0]["function"]["name"], "bash");
    assert!(calls[0]["id"].as_str().unwrap().starts_with("call_"));
    let arguments: String = calls
        .iter()
        .map(|call| call["function"]["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"command": "echo hi > out.txt", "description": "Write hi to out.txt"})
    );
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(
        finish["choices"][0],
        json!({"index": 0, "delta": {}, "finish_reason": "tool_calls"})
    );
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})
    );
}

#[tokio::test]
async fn chat_tool_message_gets_the_final_text_and_no_usage_unless_asked() {
    let mock = start(MockModelConfig::default()).await;
    let mut request = request_fixture("copilot-chat-after.json");
    request.as_object_mut().unwrap().remove("stream_options");

    let response = post(mock.addr(), "/v1/chat/completions", &request).await;

    let events = response.events();
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(SseEvent::json)
        .collect();
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, FINAL_TEXT);
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
}

#[tokio::test]
async fn chat_non_streaming_answer_is_one_completion() {
    let mock = start(MockModelConfig::default()).await;
    let mut request = request_fixture("copilot-chat-first.json");
    request["stream"] = json!(false);

    let response = post(mock.addr(), "/v1/chat/completions", &request).await;

    let completion = response.json();
    assert_eq!(completion["object"], "chat.completion");
    let choice = &completion["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], PREAMBLE);
    assert_eq!(choice["message"]["tool_calls"][0]["type"], "function");
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"]["name"],
        "bash"
    );
    assert_eq!(completion["usage"]["total_tokens"], 120);
}

// ---------------------------------------------------------------- log, connections, lifecycle

#[tokio::test]
async fn the_request_log_keeps_every_request_in_order_and_redacts_keys() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("requests.jsonl");
    let mock = start(MockModelConfig {
        log_path: Some(log_path.clone()),
        ..MockModelConfig::default()
    })
    .await;
    let mut client = Client::connect(mock.addr()).await;

    client
        .post(
            "/v1/messages?beta=true",
            &request_fixture("claude-first.json"),
        )
        .await;
    client.get("/__mock_ready").await;
    client
        .post(
            "/v1/messages?beta=true",
            &request_fixture("claude-approved.json"),
        )
        .await;
    client
        .post("/v1/responses", &request_fixture("codex-first.json"))
        .await;

    let records = mock.requests();
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [1, 2, 3], "the readiness probe is not recorded");
    assert_eq!(
        decisions(&records),
        ["tool_use:Bash", "final_text", "tool_call:exec_command"]
    );
    let headers = &records[0].headers;
    assert_eq!(headers["x-api-key"], "<redacted len=5>");
    assert_eq!(headers["authorization"], "<redacted len=19>");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert_eq!(
        headers["user-agent"],
        "claude-cli/2.1.328 (external, sdk-cli)"
    );
    assert!(!headers.contains_key("x-unrelated"));
    assert!(!headers.contains_key("host"));
    let summary = &records[1].summary;
    assert_eq!(summary["model"], "claude-opus-5-5");
    assert_eq!(summary["messages"][2]["blocks"][0]["type"], "tool_result");
    let cut = summary["messages"][0]["blocks"][0]["text"]
        .as_str()
        .unwrap();
    assert!(cut.ends_with("...(368 chars)"), "{cut}");

    let logged: Vec<RequestRecord> = std::fs::read_to_string(&log_path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(logged, records);
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(&log_path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["kind"], "anthropic.messages");
}

#[tokio::test]
async fn one_connection_carries_many_requests_and_chunked_bodies_are_read() {
    let mock = start(MockModelConfig::default()).await;
    let mut client = Client::connect(mock.addr()).await;
    for _ in 0..3 {
        let response = client
            .post("/v1/responses", &request_fixture("codex-first.json"))
            .await;
        assert_eq!(response.status, 200);
    }

    let mut request = request_fixture("claude-first.json");
    request["stream"] = json!(false);
    let body = serde_json::to_vec(&request).unwrap();
    let mut stream = TcpStream::connect(mock.addr()).await.unwrap();
    let head = "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.chunks(700) {
        stream
            .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .unwrap();
        stream.write_all(chunk).await.unwrap();
        stream.write_all(b"\r\n").await.unwrap();
    }
    stream.write_all(b"0\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(DEADLINE, stream.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();

    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.contains("\"name\": \"Bash\""), "{answer}");
    assert_eq!(
        decisions(&mock.requests()),
        [
            "tool_call:exec_command",
            "tool_call:exec_command",
            "tool_call:exec_command",
            "tool_use:Bash"
        ]
    );
}

#[tokio::test]
async fn event_delay_paces_the_stream() {
    let delay = Duration::from_millis(15);
    let mock = start(MockModelConfig {
        event_delay: delay,
        ..MockModelConfig::default()
    })
    .await;
    let mut request = request_fixture("claude-title.json");
    request["stream"] = json!(true);

    let response = post(mock.addr(), "/v1/messages", &request).await;

    let events = response.events().len();
    assert_eq!(events, 8);
    // A pause follows every event: after the first one arrives, the other seven and the end of
    // the stream are each at least one pause later.
    let after_first = response.finished_after - response.first_frame_after;
    assert!(after_first >= delay * 7, "{after_first:?}");
}

#[tokio::test]
async fn only_loopback_addresses_and_real_statuses_are_accepted() {
    for addr in ["0.0.0.0:0", "192.0.2.1:0", "[::]:0"] {
        let addr: SocketAddr = addr.parse().unwrap();
        let error = MockModel::start_on(addr, MockModelConfig::default())
            .await
            .unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains("loopback"), "{error}");
    }
    let bad_status = MockModelConfig {
        fail_status: Some(42),
        ..MockModelConfig::default()
    };
    let error = MockModel::start(bad_status).await.unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);

    let mock = MockModel::start_on("127.0.0.1:0".parse().unwrap(), MockModelConfig::default())
        .await
        .unwrap();
    assert!(mock.addr().ip().is_loopback());
    assert_ne!(mock.addr().port(), 0);
    assert_eq!(
        mock.base_url(),
        format!("http://127.0.0.1:{}", mock.addr().port())
    );
}

#[tokio::test]
async fn shutdown_closes_the_listener_and_open_connections() {
    let mock = start(MockModelConfig::default()).await;
    let addr = mock.addr();
    let mut client = Client::connect(addr).await;
    assert_eq!(client.get("/v1/models").await.status, 200);

    mock.shutdown().await;

    assert!(TcpStream::connect(addr).await.is_err());
    assert!(!client.is_usable().await);
}

#[tokio::test]
async fn dropping_the_mock_stops_it() {
    let mock = start(MockModelConfig::default()).await;
    let addr = mock.addr();

    drop(mock);

    tokio::time::timeout(DEADLINE, async {
        while TcpStream::connect(addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the listener closes after the drop");
}

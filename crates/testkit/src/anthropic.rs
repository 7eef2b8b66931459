//! Anthropic Messages: `POST …/messages`, streamed as `message_start` → `ping` → content blocks
//! → `message_delta` → `message_stop`, or one JSON message.

use serde_json::{Value, json};

use crate::MockModelConfig;
use crate::pyjson::{Json, obj};
use crate::reply::{Reply, Sse};
use crate::script::{self, PREAMBLE, SIDE_TEXT};

/// One content block of the answer.
enum Block {
    Thinking {
        thinking: &'static str,
        signature: String,
    },
    Text(&'static str),
    ToolUse {
        id: String,
        name: &'static str,
        input: Json,
    },
}

impl Block {
    fn to_json(&self) -> Json {
        match self {
            Block::Thinking {
                thinking,
                signature,
            } => {
                obj! { "type": "thinking", "thinking": *thinking, "signature": signature }
            }
            Block::Text(text) => obj! { "type": "text", "text": *text },
            Block::ToolUse { id, name, input } => {
                obj! { "type": "tool_use", "id": id, "name": *name, "input": input.clone() }
            }
        }
    }
}

/// The decision, as the log names it, and what to answer.
struct Plan {
    decision: String,
    blocks: Vec<Block>,
    stop_reason: &'static str,
}

/// The answer to a Messages request and its decision.
pub(crate) fn answer(body: &Json, config: &MockModelConfig) -> (String, Reply) {
    let Plan {
        decision,
        blocks,
        stop_reason,
    } = plan(body, config);
    let msg_id = format!("msg_{}", script::random_hex(24));
    let model = script::model_of(body);
    let content: Vec<Json> = blocks.iter().map(Block::to_json).collect();
    if !script::truthy(body.get("stream")) {
        let message = obj! {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": Json::Null,
            "usage": usage(20),
        };
        return (decision, Reply::ok(message));
    }
    let mut sse = Sse::default();
    let start = obj! {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": Vec::new(),
        "stop_reason": Json::Null,
        "stop_sequence": Json::Null,
        "usage": usage(1),
    };
    sse.event(
        "message_start",
        &obj! { "type": "message_start", "message": start },
    );
    sse.event("ping", &obj! { "type": "ping" });
    for (index, block) in blocks.iter().enumerate() {
        let start = |content_block: Json| {
            obj! { "type": "content_block_start", "index": index, "content_block": content_block }
        };
        let delta = |delta: Json| {
            obj! { "type": "content_block_delta", "index": index, "delta": delta }
        };
        match block {
            Block::Text(text) => {
                sse.event(
                    "content_block_start",
                    &start(obj! { "type": "text", "text": "" }),
                );
                for part in script::split_text(text) {
                    let text_delta = obj! { "type": "text_delta", "text": part };
                    sse.event("content_block_delta", &delta(text_delta));
                }
            }
            Block::Thinking {
                thinking,
                signature,
            } => {
                let empty = obj! { "type": "thinking", "thinking": "", "signature": "" };
                sse.event("content_block_start", &start(empty));
                for part in script::split_text(thinking) {
                    let thinking_delta = obj! { "type": "thinking_delta", "thinking": part };
                    sse.event("content_block_delta", &delta(thinking_delta));
                }
                let signature_delta = obj! { "type": "signature_delta", "signature": signature };
                sse.event("content_block_delta", &delta(signature_delta));
            }
            Block::ToolUse { id, name, input } => {
                let empty = obj! { "type": "tool_use", "id": id, "name": *name, "input": obj! {} };
                sse.event("content_block_start", &start(empty));
                for part in script::split_json(&input.dumps()) {
                    let json_delta = obj! { "type": "input_json_delta", "partial_json": part };
                    sse.event("content_block_delta", &delta(json_delta));
                }
            }
        }
        sse.event(
            "content_block_stop",
            &obj! { "type": "content_block_stop", "index": index },
        );
    }
    let message_delta = obj! {
        "type": "message_delta",
        "delta": obj! { "stop_reason": stop_reason, "stop_sequence": Json::Null },
        "usage": obj! { "output_tokens": 20i64 },
    };
    sse.event("message_delta", &message_delta);
    sse.event("message_stop", &obj! { "type": "message_stop" });
    (decision, sse.into_reply())
}

fn plan(body: &Json, config: &MockModelConfig) -> Plan {
    if let Some(result) = last_tool_result(body) {
        let is_error = script::truthy(result.get("is_error"));
        let text = script::final_text_for(is_error, result.get("content"));
        return Plan {
            decision: "final_text".to_owned(),
            blocks: vec![Block::Text(text)],
            stop_reason: "end_turn",
        };
    }
    let Some((name, tool)) = script::pick_shell_tool(body) else {
        return Plan {
            decision: "side_text".to_owned(),
            blocks: vec![Block::Text(SIDE_TEXT)],
            stop_reason: "end_turn",
        };
    };
    let mut blocks = Vec::new();
    if config.thinking {
        blocks.push(Block::Thinking {
            thinking: "The user wants a file; use the shell tool.",
            signature: format!("mock-signature-{}", script::random_hex(16)),
        });
    }
    blocks.push(Block::Text(PREAMBLE));
    blocks.push(Block::ToolUse {
        id: format!("toolu_{}", script::random_hex(24)),
        name,
        input: script::shell_args(name, tool, config),
    });
    Plan {
        decision: format!("tool_use:{name}"),
        blocks,
        stop_reason: "tool_use",
    }
}

/// The last `tool_result` block anywhere in the history.
fn last_tool_result(body: &Json) -> Option<&Json> {
    script::items(body, "messages")
        .iter()
        .filter_map(|message| message.get("content")?.as_array())
        .flatten()
        .rfind(|block| block.get("type").and_then(Json::as_str) == Some("tool_result"))
}

fn usage(output_tokens: i64) -> Json {
    obj! {
        "input_tokens": 100i64,
        "cache_creation_input_tokens": 0i64,
        "cache_read_input_tokens": 0i64,
        "output_tokens": output_tokens,
    }
}

/// The error body of a failing Messages call.
pub(crate) fn error(status: u16, message: &str) -> Reply {
    Reply::anthropic_error(status, "invalid_request_error", message)
}

/// The log's summary of a Messages request: model, tools, and each message cut short.
pub(crate) fn summary(body: &Json) -> Value {
    let messages: Vec<Value> = script::items(body, "messages")
        .iter()
        .map(|message| {
            let role = script::value(message.get("role"));
            match message.get("content") {
                Some(Json::Str(text)) => {
                    json!({"role": role, "text": script::short_text(text, 120)})
                }
                content => {
                    let blocks = content.and_then(Json::as_array).unwrap_or(&[]);
                    let blocks: Vec<Value> = blocks.iter().map(block_summary).collect();
                    json!({"role": role, "blocks": blocks})
                }
            }
        })
        .collect();
    let system_chars = match body.get("system") {
        Some(Json::Arr(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text")?.as_str())
            .map(|text| text.chars().count())
            .sum(),
        Some(Json::Str(text)) => text.chars().count(),
        _ => 0,
    };
    let known = [
        "model",
        "stream",
        "max_tokens",
        "thinking",
        "system",
        "tools",
        "messages",
    ];
    json!({
        "model": script::value(body.get("model")),
        "stream": script::value(body.get("stream")),
        "max_tokens": script::value(body.get("max_tokens")),
        "thinking": script::value(body.get("thinking")),
        "system_chars": system_chars,
        "tools": script::tool_names(body),
        "messages": messages,
        "other_keys": script::other_keys(body, &known),
    })
}

fn block_summary(block: &Json) -> Value {
    let field = |key: &str| script::value(block.get(key));
    let mut summary = json!({"type": field("type")});
    match block.get("type").and_then(Json::as_str) {
        Some("text") => {
            let text = block
                .get("text")
                .map_or_else(String::new, |t| script::short(Some(t), 120));
            summary["text"] = text.into();
        }
        Some("tool_use") => {
            summary["name"] = field("name");
            summary["id"] = field("id");
            summary["input"] = field("input");
        }
        Some("tool_result") => {
            summary["tool_use_id"] = field("tool_use_id");
            summary["is_error"] = field("is_error");
            summary["content"] = script::short(block.get("content"), 200).into();
        }
        _ => {}
    }
    summary
}

//! OpenAI Responses: `POST …/responses`, streamed as typed events carrying a
//! `sequence_number`, or one JSON response.

use serde_json::{Map, Value, json};

use crate::MockModelConfig;
use crate::pyjson::{Json, obj};
use crate::reply::{Reply, Sse};
use crate::script::{self, PREAMBLE, SIDE_TEXT};

/// Input item types that carry a tool's result.
const TOOL_OUTPUT_TYPES: &[&str] = &[
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "tool_search_output",
    "mcp_tool_call_output",
];

/// One output item of the answer.
enum Item {
    Reasoning {
        id: String,
        text: &'static str,
    },
    Message {
        id: String,
        text: &'static str,
        /// Codex's `phase: "commentary"`: text said on the way to a tool call.
        commentary: bool,
    },
    FunctionCall {
        id: String,
        call_id: String,
        name: &'static str,
        arguments: String,
    },
    LocalShellCall {
        id: String,
        call_id: String,
        command: String,
    },
}

impl Item {
    fn message(text: &'static str, commentary: bool) -> Item {
        Item::Message {
            id: script::new_id("msg"),
            text,
            commentary,
        }
    }

    fn to_json(&self) -> Json {
        match self {
            Item::Reasoning { id, text } => obj! {
                "type": "reasoning",
                "id": id,
                "summary": vec![obj! { "type": "summary_text", "text": *text }],
                "encrypted_content": Json::Null,
            },
            Item::Message {
                id,
                text,
                commentary,
            } => {
                let mut item = obj! {
                    "type": "message",
                    "id": id,
                    "role": "assistant",
                    "status": "completed",
                };
                if *commentary {
                    item = item.with("phase", "commentary");
                }
                item.with("content", vec![output_text(text)])
            }
            Item::FunctionCall {
                id,
                call_id,
                name,
                arguments,
            } => obj! {
                "type": "function_call",
                "id": id,
                "call_id": call_id,
                "name": *name,
                "arguments": arguments,
                "status": "completed",
            },
            Item::LocalShellCall {
                id,
                call_id,
                command,
            } => obj! {
                "type": "local_shell_call",
                "id": id,
                "call_id": call_id,
                "status": "completed",
                "action": obj! {
                    "type": "exec",
                    "command": vec!["bash".into(), "-lc".into(), Json::from(command)],
                },
            },
        }
    }
}

fn output_text(text: &str) -> Json {
    obj! { "type": "output_text", "text": text, "annotations": Vec::new() }
}

/// The answer to a Responses request and its decision.
pub(crate) fn answer(body: &Json, config: &MockModelConfig) -> (String, Reply) {
    let (decision, items) = plan(body, config);
    let base = obj! {
        "id": script::new_id("resp"),
        "object": "response",
        "created_at": script::now_secs(),
        "model": script::model_of(body),
        "status": "in_progress",
        "output": Vec::new(),
    };
    let output: Vec<Json> = items.iter().map(Item::to_json).collect();
    let done = base
        .clone()
        .with("status", "completed")
        .with("output", output.clone())
        .with("usage", usage());
    if !script::truthy(body.get("stream")) {
        return (decision, Reply::ok(done));
    }

    let mut sse = Sse::default();
    let mut sequence_number = 0i64;
    let mut emit = |name: &str, event: Json| {
        let event = event
            .with("type", name)
            .with("sequence_number", sequence_number);
        sequence_number += 1;
        sse.event(name, &event);
    };
    emit("response.created", obj! { "response": base.clone() });
    emit("response.in_progress", obj! { "response": base });
    for (output_index, (item, completed)) in items.iter().zip(output).enumerate() {
        match item {
            Item::Message { id, text, .. } => {
                let added = completed
                    .clone()
                    .with("status", "in_progress")
                    .with("content", Vec::new());
                emit(
                    "response.output_item.added",
                    obj! { "output_index": output_index, "item": added },
                );
                let at = |rest: Json| {
                    let head =
                        obj! { "item_id": id, "output_index": output_index, "content_index": 0i64 };
                    concat(head, rest)
                };
                emit(
                    "response.content_part.added",
                    at(obj! { "part": output_text("") }),
                );
                for part in script::split_text(text) {
                    emit("response.output_text.delta", at(obj! { "delta": part }));
                }
                emit("response.output_text.done", at(obj! { "text": *text }));
                emit(
                    "response.content_part.done",
                    at(obj! { "part": output_text(text) }),
                );
            }
            Item::Reasoning { id, text } => {
                let added = completed.clone().with("summary", Vec::new());
                emit(
                    "response.output_item.added",
                    obj! { "output_index": output_index, "item": added },
                );
                let at = |rest: Json| {
                    let head =
                        obj! { "item_id": id, "output_index": output_index, "summary_index": 0i64 };
                    concat(head, rest)
                };
                let part = |text: &str| obj! { "type": "summary_text", "text": text };
                emit(
                    "response.reasoning_summary_part.added",
                    at(obj! { "part": part("") }),
                );
                for delta in script::split_text(text) {
                    emit(
                        "response.reasoning_summary_text.delta",
                        at(obj! { "delta": delta }),
                    );
                }
                emit(
                    "response.reasoning_summary_text.done",
                    at(obj! { "text": *text }),
                );
                emit(
                    "response.reasoning_summary_part.done",
                    at(obj! { "part": part(text) }),
                );
            }
            Item::FunctionCall { id, arguments, .. } => {
                let added = completed
                    .clone()
                    .with("arguments", "")
                    .with("status", "in_progress");
                emit(
                    "response.output_item.added",
                    obj! { "output_index": output_index, "item": added },
                );
                for delta in script::split_json(arguments) {
                    let event =
                        obj! { "item_id": id, "output_index": output_index, "delta": delta };
                    emit("response.function_call_arguments.delta", event);
                }
                let event =
                    obj! { "item_id": id, "output_index": output_index, "arguments": arguments };
                emit("response.function_call_arguments.done", event);
            }
            Item::LocalShellCall { .. } => {
                let event = obj! { "output_index": output_index, "item": completed.clone() };
                emit("response.output_item.added", event);
            }
        }
        emit(
            "response.output_item.done",
            obj! { "output_index": output_index, "item": completed },
        );
    }
    emit("response.completed", obj! { "response": done });
    (decision, sse.into_reply())
}

/// `head`'s entries followed by `rest`'s.
fn concat(head: Json, rest: Json) -> Json {
    match rest {
        Json::Obj(entries) => entries
            .into_iter()
            .fold(head, |acc, (key, value)| acc.with(&key, value)),
        _ => head,
    }
}

fn plan(body: &Json, config: &MockModelConfig) -> (String, Vec<Item>) {
    if let Some(output) = last_tool_output(body) {
        let text = script::final_text_for(false, output.get("output"));
        return ("final_text".to_owned(), vec![Item::message(text, false)]);
    }
    let Some((name, tool)) = script::pick_shell_tool(body) else {
        return (
            "side_text".to_owned(),
            vec![Item::message(SIDE_TEXT, false)],
        );
    };
    let mut items = Vec::new();
    if config.thinking {
        items.push(Item::Reasoning {
            id: script::new_id("rs"),
            text: "**Planning** The user wants a file; use the shell tool.",
        });
    }
    items.push(Item::message(PREAMBLE, true));
    items.push(if name == "local_shell" {
        Item::LocalShellCall {
            id: script::new_id("lsh"),
            call_id: script::new_id("call"),
            command: config.command.clone(),
        }
    } else {
        Item::FunctionCall {
            id: script::new_id("fc"),
            call_id: script::new_id("call"),
            name,
            arguments: script::shell_args(name, tool, config).dumps(),
        }
    });
    (format!("tool_call:{name}"), items)
}

/// The last input item that carries a tool's result.
fn last_tool_output(body: &Json) -> Option<&Json> {
    script::items(body, "input").iter().rfind(|item| {
        let kind = item.get("type").and_then(Json::as_str);
        kind.is_some_and(|kind| TOOL_OUTPUT_TYPES.contains(&kind))
    })
}

fn usage() -> Json {
    obj! {
        "input_tokens": 100i64,
        "input_tokens_details": obj! { "cached_tokens": 0i64 },
        "output_tokens": 20i64,
        "output_tokens_details": obj! { "reasoning_tokens": 0i64 },
        "total_tokens": 120i64,
    }
}

/// The error body of a failing Responses or Chat Completions call.
pub(crate) fn error(status: u16, message: &str) -> Reply {
    Reply::openai_error(status, "invalid_request_error", "mock_error", message)
}

/// The log's summary of a Responses request: model, tools, and each input item cut short.
pub(crate) fn summary(body: &Json) -> Value {
    let mut items = Vec::new();
    if let Some(Json::Str(text)) = body.get("input") {
        items.push(json!({"type": "text", "text": script::short_text(text, 120)}));
    }
    items.extend(script::items(body, "input").iter().map(item_summary));
    let instructions_chars = match script::or_none(body.get("instructions")) {
        Some(Json::Str(text)) => text.chars().count(),
        Some(Json::Arr(parts)) => parts.len(),
        Some(Json::Obj(entries)) => entries.len(),
        _ => 0,
    };
    let known = [
        "model",
        "stream",
        "store",
        "reasoning",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "previous_response_id",
        "input",
    ];
    let field = |key: &str| script::value(body.get(key));
    json!({
        "model": field("model"),
        "stream": field("stream"),
        "store": field("store"),
        "reasoning": field("reasoning"),
        "instructions_chars": instructions_chars,
        "tools": script::tool_names(body),
        "tool_choice": field("tool_choice"),
        "parallel_tool_calls": field("parallel_tool_calls"),
        "previous_response_id": field("previous_response_id"),
        "input": items,
        "other_keys": script::other_keys(body, &known),
    })
}

fn item_summary(item: &Json) -> Value {
    let mut summary = Map::new();
    let mut put = |key: &str, value: Value| {
        // Like the reference, the summary leaves out fields that are absent or null.
        if !value.is_null() {
            summary.insert(key.to_owned(), value);
        }
    };
    let field = |key: &str| script::value(item.get(key));
    put("type", field("type"));
    put("role", field("role"));
    match item.get("type").and_then(Json::as_str) {
        Some("message") => {
            let parts = item.get("content").and_then(Json::as_array).unwrap_or(&[]);
            let texts: Vec<&str> = parts
                .iter()
                .filter(|part| part.is_object())
                .map(|part| part.get("text").and_then(Json::as_str).unwrap_or(""))
                .collect();
            put("text", script::short_text(&texts.join(" | "), 120).into());
        }
        Some("function_call" | "custom_tool_call") => {
            put("name", field("name"));
            put("call_id", field("call_id"));
            let arguments = script::or_none(item.get("arguments")).or_else(|| item.get("input"));
            put("arguments", script::short(arguments, 200).into());
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            put("call_id", field("call_id"));
            put("output", script::short(item.get("output"), 200).into());
        }
        _ => {}
    }
    Value::Object(summary)
}

//! OpenAI Chat Completions: `POST …/chat/completions`, streamed as unnamed `data:` chunks, a
//! usage chunk when `stream_options.include_usage`, then `data: [DONE]`; or one JSON completion.

use serde_json::{Value, json};

use crate::MockModelConfig;
use crate::pyjson::{Json, obj};
use crate::reply::{Reply, Sse};
use crate::script::{self, PREAMBLE, SIDE_TEXT};

/// The one tool call of a tool-calling answer.
struct Call {
    id: String,
    name: &'static str,
    arguments: String,
}

/// The answer to a Chat Completions request and its decision.
pub(crate) fn answer(body: &Json, config: &MockModelConfig) -> (String, Reply) {
    let last_tool_message = script::items(body, "messages")
        .iter()
        .rfind(|message| message.get("role").and_then(Json::as_str) == Some("tool"));
    let (decision, text, calls, finish_reason) = match last_tool_message {
        Some(message) => {
            let text = script::final_text_for(false, message.get("content"));
            ("final_text".to_owned(), text, Vec::new(), "stop")
        }
        None => match script::pick_shell_tool(body) {
            Some((name, tool)) => {
                let call = Call {
                    id: format!("call_{}", script::random_hex(24)),
                    name,
                    arguments: script::shell_args(name, tool, config).dumps(),
                };
                (
                    format!("tool_call:{name}"),
                    PREAMBLE,
                    vec![call],
                    "tool_calls",
                )
            }
            None => ("side_text".to_owned(), SIDE_TEXT, Vec::new(), "stop"),
        },
    };
    let id = format!("chatcmpl-{}", script::random_hex(24));
    let model = script::model_of(body);
    let created = script::now_secs();
    let usage =
        obj! { "prompt_tokens": 100i64, "completion_tokens": 20i64, "total_tokens": 120i64 };

    if !script::truthy(body.get("stream")) {
        let mut message = obj! { "role": "assistant", "content": text };
        if !calls.is_empty() {
            let tool_calls: Vec<Json> = calls.iter().map(call_json).collect();
            message = message.with("tool_calls", tool_calls);
        }
        let completion = obj! {
            "id": id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": vec![obj! { "index": 0i64, "message": message, "finish_reason": finish_reason }],
            "usage": usage,
        };
        return (decision, Reply::ok(completion));
    }

    let mut sse = Sse::default();
    let chunk = |delta: Json, finish_reason: Option<&str>| {
        obj! {
            "id": &id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model.clone(),
            "choices": vec![obj! { "index": 0i64, "delta": delta, "finish_reason": finish_reason }],
        }
    };
    sse.data(&chunk(obj! { "role": "assistant", "content": "" }, None));
    for part in script::split_text(text) {
        sse.data(&chunk(obj! { "content": part }, None));
    }
    for (index, call) in calls.iter().enumerate() {
        let function = obj! { "name": call.name, "arguments": "" };
        let first =
            obj! { "index": index, "id": &call.id, "type": "function", "function": function };
        sse.data(&chunk(obj! { "tool_calls": vec![first] }, None));
        for part in script::split_json(&call.arguments) {
            let fragment = obj! { "index": index, "function": obj! { "arguments": part } };
            sse.data(&chunk(obj! { "tool_calls": vec![fragment] }, None));
        }
    }
    sse.data(&chunk(obj! {}, Some(finish_reason)));
    let include_usage = body
        .get("stream_options")
        .and_then(|options| options.get("include_usage"));
    if script::truthy(include_usage) {
        sse.data(&obj! {
            "id": &id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": Vec::new(),
            "usage": usage,
        });
    }
    sse.raw_data("[DONE]");
    (decision, sse.into_reply())
}

fn call_json(call: &Call) -> Json {
    obj! {
        "id": &call.id,
        "type": "function",
        "function": obj! { "name": call.name, "arguments": &call.arguments },
    }
}

/// The log's summary of a Chat Completions request: model, tools, and each message cut short.
pub(crate) fn summary(body: &Json) -> Value {
    let messages: Vec<Value> = script::items(body, "messages")
        .iter()
        .map(message_summary)
        .collect();
    let known = [
        "model",
        "stream",
        "stream_options",
        "tools",
        "tool_choice",
        "messages",
    ];
    let field = |key: &str| script::value(body.get(key));
    json!({
        "model": field("model"),
        "stream": field("stream"),
        "stream_options": field("stream_options"),
        "tools": script::tool_names(body),
        "tool_choice": field("tool_choice"),
        "messages": messages,
        "other_keys": script::other_keys(body, &known),
    })
}

fn message_summary(message: &Json) -> Value {
    let mut summary = json!({"role": script::value(message.get("role"))});
    match message.get("content") {
        Some(Json::Arr(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|part| part.is_object())
                .map(|part| part.get("text").and_then(Json::as_str).unwrap_or(""))
                .collect();
            summary["text"] = script::short_text(&texts.join(" | "), 120).into();
        }
        Some(Json::Null) | None => {}
        Some(content) => summary["text"] = script::short(Some(content), 120).into(),
    }
    if let Some(Json::Arr(calls)) = script::or_none(message.get("tool_calls")) {
        let calls: Vec<Value> = calls
            .iter()
            .map(|call| {
                let function = call.get("function");
                json!({
                    "id": script::value(call.get("id")),
                    "name": script::value(function.and_then(|f| f.get("name"))),
                    "arguments": script::short(function.and_then(|f| f.get("arguments")), 200),
                })
            })
            .collect();
        summary["tool_calls"] = calls.into();
    }
    if let Some(id) = script::or_none(message.get("tool_call_id")) {
        summary["tool_call_id"] = Value::from(id);
    }
    summary
}

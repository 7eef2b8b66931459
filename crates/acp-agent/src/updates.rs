//! A turn's response parts as ACP `session/update`s.
//!
//! One piece of code serves both directions of time: [`TurnProgress::advance`] compares a
//! turn's parts with what the editor has already been sent and returns the updates for the
//! difference. Following a live turn calls it after every action; replaying a stored turn
//! (`session/load`) calls it once from nothing. Parts only ever grow (text is appended, a tool
//! call moves through its states), so what was sent is a length per text part and a status and
//! content count per tool call.

use agenthost_protocol::ahp_types::state::{
    ResponsePart, ToolCallState, ToolInput, ToolResultContent, ToolResultFileEditContent, UsageInfo,
};
use serde_json::{Value, json};

/// What the editor was sent of one part.
#[derive(Debug, Clone, PartialEq)]
enum Sent {
    /// This many bytes of a markdown or reasoning part.
    Text(usize),
    /// A tool call: its last status and title, and how many content items it carried.
    Tool {
        status: &'static str,
        title: String,
        contents: usize,
    },
    /// Everything there is to send (a notice, an error).
    Whole,
}

/// What the editor was sent of one turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnProgress {
    parts: Vec<Sent>,
    /// The tool calls (by part index) whose plan was sent.
    planned: std::collections::HashSet<usize>,
}

impl TurnProgress {
    /// The updates that bring the editor from what it was sent to `parts`.
    pub fn advance(&mut self, parts: &[ResponsePart]) -> Vec<Value> {
        let mut updates = Vec::new();
        for (index, part) in parts.iter().enumerate() {
            let sent = self.parts.get(index).cloned();
            let (now, update) = advance_part(sent.as_ref(), part);
            if let Some(update) = update {
                updates.push(update);
            }
            if let ResponsePart::ToolCall(call) = part
                && !self.planned.contains(&index)
                && let Some(plan) = plan(&call.tool_call)
            {
                self.planned.insert(index);
                updates.push(plan);
            }
            match self.parts.get_mut(index) {
                Some(slot) => *slot = now,
                None => self.parts.push(now),
            }
        }
        updates
    }
}

/// A user message as the editor shows it.
pub fn user_message(text: &str) -> Value {
    json!({ "sessionUpdate": "user_message_chunk", "content": text_block(text) })
}

/// A notice from agent-host itself, shown as agent text.
pub fn notice(text: &str) -> Value {
    chunk("agent_message_chunk", &format!("\n\n_{text}_\n\n"))
}

fn text_block(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

fn chunk(kind: &str, text: &str) -> Value {
    json!({ "sessionUpdate": kind, "content": text_block(text) })
}

fn advance_part(sent: Option<&Sent>, part: &ResponsePart) -> (Sent, Option<Value>) {
    match part {
        ResponsePart::Markdown(m) => text_part(sent, &m.content, "agent_message_chunk"),
        ResponsePart::Reasoning(r) => text_part(sent, &r.content, "agent_thought_chunk"),
        ResponsePart::ToolCall(call) => tool_part(sent, &call.tool_call),
        ResponsePart::SystemNotification(n) if sent.is_none() => {
            (Sent::Whole, Some(notice(n.content.as_text())))
        }
        ResponsePart::Error(e) if sent.is_none() => (
            Sent::Whole,
            Some(chunk(
                "agent_message_chunk",
                &format!("\n\nError: {}\n", e.error.message),
            )),
        ),
        _ => (Sent::Whole, None),
    }
}

fn text_part(sent: Option<&Sent>, content: &str, kind: &str) -> (Sent, Option<Value>) {
    let from = match sent {
        Some(Sent::Text(n)) => *n,
        _ => 0,
    };
    match content.get(from..) {
        Some(more) if !more.is_empty() => (Sent::Text(content.len()), Some(chunk(kind, more))),
        _ => (Sent::Text(from), None),
    }
}

/// The ACP view of one AHP tool-call state.
struct ToolView<'a> {
    id: &'a str,
    name: &'a str,
    title: String,
    status: &'static str,
    input: Option<&'a ToolInput>,
    content: &'a [ToolResultContent],
}

fn tool_view(state: &ToolCallState) -> Option<ToolView<'_>> {
    let view = match state {
        ToolCallState::Streaming(s) => ToolView {
            id: &s.tool_call_id,
            name: &s.tool_name,
            title: s
                .invocation_message
                .as_ref()
                .map_or_else(|| s.display_name.clone(), |m| m.as_text().to_owned()),
            status: "pending",
            input: None,
            content: &[],
        },
        ToolCallState::PendingConfirmation(s) => ToolView {
            id: &s.tool_call_id,
            name: &s.tool_name,
            title: s.invocation_message.as_text().to_owned(),
            status: "pending",
            input: s.tool_input.as_ref(),
            content: &[],
        },
        ToolCallState::AuthRequired(s) => ToolView {
            id: &s.tool_call_id,
            name: &s.tool_name,
            title: s.display_name.clone(),
            status: "pending",
            input: None,
            content: &[],
        },
        ToolCallState::Running(s) => ToolView {
            id: &s.tool_call_id,
            name: &s.tool_name,
            title: s.invocation_message.as_text().to_owned(),
            status: "in_progress",
            input: s.tool_input.as_ref(),
            content: s.content.as_deref().unwrap_or_default(),
        },
        ToolCallState::PendingResultConfirmation(s) => ToolView {
            id: &s.tool_call_id,
            name: &s.tool_name,
            title: s.invocation_message.as_text().to_owned(),
            status: "in_progress",
            input: s.tool_input.as_ref(),
            content: s.content.as_deref().unwrap_or_default(),
        },
        ToolCallState::Completed(s) => ToolView {
            id: &s.tool_call_id,
            name: &s.tool_name,
            title: s.past_tense_message.as_text().to_owned(),
            status: if s.success { "completed" } else { "failed" },
            input: s.tool_input.as_ref(),
            content: s.content.as_deref().unwrap_or_default(),
        },
        ToolCallState::Cancelled(s) => ToolView {
            id: &s.tool_call_id,
            name: &s.tool_name,
            title: s.reason_message.as_ref().map_or_else(
                || s.invocation_message.as_text().to_owned(),
                |m| m.as_text().to_owned(),
            ),
            status: "failed",
            input: s.tool_input.as_ref(),
            content: &[],
        },
        ToolCallState::Unknown(_) => return None,
    };
    Some(view)
}

fn tool_part(sent: Option<&Sent>, state: &ToolCallState) -> (Sent, Option<Value>) {
    let Some(view) = tool_view(state) else {
        return (Sent::Whole, None);
    };
    let contents = view.content.len();
    let now = Sent::Tool {
        status: view.status,
        title: view.title.clone(),
        contents,
    };
    let update = match sent {
        Some(Sent::Tool {
            status,
            title,
            contents: had,
        }) => {
            if *status == view.status && *title == view.title && *had == contents {
                return (now, None);
            }
            let mut update = json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": view.id,
                "status": view.status,
                "title": view.title,
            });
            if *had != contents {
                update["content"] = tool_content(view.content);
            }
            if let Some(input) = view.input.and_then(raw_input) {
                update["rawInput"] = input;
            }
            update
        }
        _ => {
            let mut update = json!({
                "sessionUpdate": "tool_call",
                "toolCallId": view.id,
                "title": view.title,
                "kind": tool_kind(view.name),
                "status": view.status,
            });
            if contents > 0 {
                update["content"] = tool_content(view.content);
            }
            if let Some(input) = view.input.and_then(raw_input) {
                update["rawInput"] = input;
            }
            update
        }
    };
    (now, Some(update))
}

/// Claude Code's plan tool (`TodoWrite`) as ACP's `plan` update, once its input is known.
fn plan(state: &ToolCallState) -> Option<Value> {
    let view = tool_view(state)?;
    let input = raw_input(view.input?)?;
    if view.name != "TodoWrite" {
        return None;
    }
    let entries: Vec<Value> = input
        .get("todos")?
        .as_array()?
        .iter()
        .filter_map(|item| {
            let content = item.get("content")?.as_str()?;
            let status = match item.get("status").and_then(Value::as_str) {
                Some("in_progress") => "in_progress",
                Some("completed") => "completed",
                _ => "pending",
            };
            Some(json!({ "content": content, "priority": "medium", "status": status }))
        })
        .collect();
    Some(json!({ "sessionUpdate": "plan", "entries": entries }))
}

/// The permission request's `toolCall` for a call waiting for confirmation.
pub fn permission_tool_call(state: &ToolCallState) -> Option<Value> {
    let view = tool_view(state)?;
    let mut call = json!({
        "toolCallId": view.id,
        "title": view.title,
        "kind": tool_kind(view.name),
        "status": view.status,
    });
    if let Some(input) = view.input.and_then(raw_input) {
        call["rawInput"] = input;
    }
    Some(call)
}

/// A tool's input as ACP's `rawInput`: JSON when it is JSON, else the text.
fn raw_input(input: &ToolInput) -> Option<Value> {
    match input {
        ToolInput::Inline(text) => {
            Some(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())))
        }
        ToolInput::ContentRef(_) => None,
    }
}

/// ACP's tool kind, from the tool's name (ACP shows an icon for it).
fn tool_kind(name: &str) -> &'static str {
    let name = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    if has(&["read", "view", "cat"]) {
        "read"
    } else if has(&["write", "edit", "patch", "append", "replace", "create"]) {
        "edit"
    } else if has(&["delete", "remove"]) {
        "delete"
    } else if has(&["move", "rename"]) {
        "move"
    } else if has(&["grep", "glob", "search", "find", "list"]) {
        "search"
    } else if has(&["bash", "shell", "exec", "command", "run", "terminal"]) {
        "execute"
    } else if has(&["fetch", "web", "url", "http"]) {
        "fetch"
    } else if has(&["think"]) {
        "think"
    } else {
        "other"
    }
}

/// A tool call's result content as ACP tool-call content.
fn tool_content(content: &[ToolResultContent]) -> Value {
    content
        .iter()
        .filter_map(|item| {
            let text = match item {
                ToolResultContent::Text(t) => t.text.clone(),
                ToolResultContent::FileEdit(edit) => {
                    let path = edit
                        .after
                        .as_ref()
                        .or(edit.before.as_ref())
                        .map(|side| side.uri.to_string())?;
                    let path = agenthost_protocol::uri::file_uri_to_path(&path)
                        .map_or(path, |p| p.display().to_string());
                    if let Some(diff) = diff(&path, edit) {
                        return Some(diff);
                    }
                    match &edit.diff {
                        Some(stats) => format!(
                            "Edited {path} (+{} -{})",
                            stats.added.unwrap_or(0),
                            stats.removed.unwrap_or(0)
                        ),
                        None => format!("Edited {path}"),
                    }
                }
                ToolResultContent::Subagent(s) => format!("Subagent: {}", s.title),
                _ => return None,
            };
            Some(json!({ "type": "content", "content": text_block(&text) }))
        })
        .collect()
}

/// A file edit whose sides the chat holds inline (`data:` URIs, as agents that report diffs
/// give them) as ACP's `diff` content; `None` when a side is only a reference.
fn diff(path: &str, edit: &ToolResultFileEditContent) -> Option<Value> {
    let new_text = data_text(&edit.after.as_ref()?.content.uri.to_string())?;
    let mut diff = json!({ "type": "diff", "path": path, "newText": new_text });
    if let Some(before) = &edit.before {
        diff["oldText"] = json!(data_text(&before.content.uri.to_string())?);
    }
    Some(diff)
}

/// The text of a base64 `data:` URI.
fn data_text(uri: &str) -> Option<String> {
    use base64::Engine as _;
    let (header, body) = uri.strip_prefix("data:")?.split_once(',')?;
    if !header.ends_with(";base64") {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(body)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// A turn's token usage as ACP's `PromptResponse.usage`.
pub fn usage(usage: &UsageInfo) -> Option<Value> {
    let input = usage.input_tokens?;
    let output = usage.output_tokens.unwrap_or(0);
    let mut value = json!({
        "inputTokens": input,
        "outputTokens": output,
        "totalTokens": input + output,
    });
    if let Some(cached) = usage.cache_read_tokens {
        value["cachedReadTokens"] = json!(cached);
    }
    Some(value)
}

#[cfg(test)]
#[path = "updates_tests.rs"]
mod tests;

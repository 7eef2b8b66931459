//! `AskUserQuestion`: the tool's input as a `chat/inputRequested`
//! request, and the host's answer back as the `can_use_tool` control response.
//!
//! Claude Code 2.x asks with `{questions: [{question, header, options: [{label, description}],
//! multiSelect}]}` and takes the answers as the tool's updated input, `answers` keyed by the
//! question text, multiple selections joined with `", "`. Question `i` becomes question id `q<i>`
//! and its option `j` option id `o<j>`, so ids are stable and safe whatever the texts hold; the
//! user may always type an answer of their own (Claude's "Other").

use agenthost_protocol::SafeId;
use agenthost_protocol::state::{
    ChatInputMultiSelectQuestion, ChatInputOption, ChatInputQuestion, ChatInputRequest,
    ChatInputSingleSelectQuestion, ChatInputTextQuestion,
};
use serde_json::Value;

#[cfg(feature = "driver")]
mod answer;

#[cfg(feature = "driver")]
pub(crate) use answer::{Answer, WITHDRAWN, answer};

/// One question of the tool's input.
struct Asked<'a> {
    id: String,
    text: &'a str,
    header: Option<&'a str>,
    /// `(label, description)` of each option, in order (option id `o<index>`).
    options: Vec<(&'a str, Option<&'a str>)>,
    multi_select: bool,
}

/// The questions of an `AskUserQuestion` input; entries without a question text are skipped
/// (their index is not reused, so ids stay stable).
fn asked(input: &Value) -> Vec<Asked<'_>> {
    let Some(questions) = input.get("questions").and_then(Value::as_array) else {
        return Vec::new();
    };
    questions
        .iter()
        .enumerate()
        .filter_map(|(index, question)| {
            let text = question.get("question").and_then(Value::as_str)?;
            let options = question
                .get("options")
                .and_then(Value::as_array)
                .map(|options| {
                    options
                        .iter()
                        .filter_map(|option| {
                            let label = option.get("label").and_then(Value::as_str)?;
                            let description = option.get("description").and_then(Value::as_str);
                            Some((label, description))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(Asked {
                id: format!("q{index}"),
                text,
                header: question.get("header").and_then(Value::as_str),
                options,
                multi_select: question
                    .get("multiSelect")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
        })
        .collect()
}

fn option_id(index: usize) -> String {
    format!("o{index}")
}

/// The input request id of tool call `tool_use_id` (`ask-<tool_use_id>`), if it is a valid
/// [`SafeId`].
pub(crate) fn request_id(tool_use_id: &str) -> Option<String> {
    let id = format!("ask-{tool_use_id}");
    SafeId::new(id.as_str()).is_ok().then_some(id)
}

/// The input request for an `AskUserQuestion` input; `None` when it asks nothing.
pub(crate) fn input_request(id: String, input: &Value) -> Option<ChatInputRequest> {
    let questions: Vec<ChatInputQuestion> = asked(input)
        .into_iter()
        .map(|asked| {
            let title = asked.header.map(str::to_owned);
            let message = asked.text.to_owned();
            let options: Vec<ChatInputOption> = asked
                .options
                .iter()
                .enumerate()
                .map(|(index, (label, description))| ChatInputOption {
                    id: option_id(index),
                    label: (*label).to_owned(),
                    description: description.map(str::to_owned),
                    recommended: None,
                })
                .collect();
            if options.is_empty() {
                ChatInputQuestion::Text(ChatInputTextQuestion {
                    id: asked.id,
                    title,
                    message,
                    required: Some(true),
                    format: None,
                    min: None,
                    max: None,
                    default_value: None,
                })
            } else if asked.multi_select {
                ChatInputQuestion::MultiSelect(ChatInputMultiSelectQuestion {
                    id: asked.id,
                    title,
                    message,
                    required: Some(true),
                    options,
                    allow_freeform_input: Some(true),
                    min: None,
                    max: None,
                })
            } else {
                ChatInputQuestion::SingleSelect(ChatInputSingleSelectQuestion {
                    id: asked.id,
                    title,
                    message,
                    required: Some(true),
                    options,
                    allow_freeform_input: Some(true),
                })
            }
        })
        .collect();
    if questions.is_empty() {
        return None;
    }
    Some(ChatInputRequest {
        id,
        message: None,
        url: None,
        questions: Some(questions),
        answers: None,
    })
}

#[cfg(test)]
#[path = "questions_tests.rs"]
mod tests;

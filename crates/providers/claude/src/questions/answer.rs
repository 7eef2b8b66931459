//! The host's answer to an `AskUserQuestion`, as the `can_use_tool` control response the CLI
//! reads: the driver's side of the question (the translator makes the request).

use agenthost_protocol::state::{ChatInputAnswer, ChatInputAnswerValue, ChatInputResponseKind};
use agenthost_provider_api::InputResponse;
use serde_json::{Map, Value};

use super::{Asked, asked, option_id};

/// What the agent is told when the user declines to answer.
pub(crate) const DECLINED: &str = "The user declined to answer these questions.";
/// What the agent is told when the user dismisses the questions.
pub(crate) const CANCELLED: &str = "The user cancelled these questions without answering.";
/// What the agent is told when its turn ended (cancelled, disposed) before anyone answered.
pub(crate) const WITHDRAWN: &str = "The turn ended before the user answered these questions.";

/// How the host's answer goes back to the CLI.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// `allow` with this updated input (the original input plus `answers`).
    Allow(Value),
    /// `deny` with this message.
    Deny(&'static str),
}

/// The answer to an `AskUserQuestion` with `input`: accept → `allow` with
/// `answers: {<question text>: <answer>}` (questions without a submitted answer left out);
/// decline or cancel → `deny`.
pub(crate) fn answer(input: &Value, response: &InputResponse) -> Answer {
    match response.response {
        ChatInputResponseKind::Decline => return Answer::Deny(DECLINED),
        ChatInputResponseKind::Cancel => return Answer::Deny(CANCELLED),
        ChatInputResponseKind::Accept => {}
    }
    let mut answers = Map::new();
    for asked in asked(input) {
        let texts = answer_texts(&asked, response.answers.get(&asked.id));
        if !texts.is_empty() {
            answers.insert(asked.text.to_owned(), Value::String(texts.join(", ")));
        }
    }
    let mut updated = match input {
        Value::Object(object) => object.clone(),
        _ => Map::new(),
    };
    updated.insert("answers".to_owned(), Value::Object(answers));
    Answer::Allow(Value::Object(updated))
}

/// The submitted answer to `asked` as texts: selected options by label, then anything typed.
fn answer_texts(asked: &Asked<'_>, answer: Option<&ChatInputAnswer>) -> Vec<String> {
    let Some(ChatInputAnswer::Submitted(answered)) = answer else {
        return Vec::new();
    };
    // A selected option id names its label; anything else was typed in.
    let label = |value: &String| {
        asked
            .options
            .iter()
            .enumerate()
            .find(|(index, _)| option_id(*index) == *value)
            .map_or_else(|| value.clone(), |(_, (label, _))| (*label).to_owned())
    };
    let texts: Vec<String> = match &answered.value {
        ChatInputAnswerValue::Text(text) => vec![text.value.clone()],
        ChatInputAnswerValue::Number(number) => vec![number.value.to_string()],
        ChatInputAnswerValue::Boolean(boolean) => vec![boolean.value.to_string()],
        ChatInputAnswerValue::Selected(selected) => std::iter::once(label(&selected.value))
            .chain(selected.freeform_values.iter().flatten().cloned())
            .collect(),
        ChatInputAnswerValue::SelectedMany(many) => many
            .value
            .iter()
            .map(label)
            .chain(many.freeform_values.iter().flatten().cloned())
            .collect(),
        ChatInputAnswerValue::Unknown(raw) => vec![raw.to_string()],
    };
    texts
        .into_iter()
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
        .collect()
}

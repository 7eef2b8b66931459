//! Well-formedness of elicitation answers (`chat/inputAnswerChanged`, `chat/inputCompleted`).

use std::collections::HashMap;

use agenthost_protocol::ahp_types::state::{
    ChatInputAnswer, ChatInputAnswerValue, ChatInputOption, ChatInputQuestion, ChatInputRequest,
    ChatState, ResponsePart,
};

use super::RejectionReason;

/// The open (unanswered) input request with this id in the active turn.
pub(super) fn open_request<'a>(
    chat: &'a ChatState,
    request_id: &str,
) -> Result<&'a ChatInputRequest, RejectionReason> {
    chat.active_turn
        .iter()
        .flat_map(|turn| &turn.response_parts)
        .find_map(|part| match part {
            ResponsePart::InputRequest(input)
                if input.response.is_none() && input.request.id == request_id =>
            {
                Some(&input.request)
            }
            _ => None,
        })
        .ok_or_else(|| RejectionReason::UnknownInputRequest {
            request_id: request_id.to_owned(),
        })
}

/// The question with this id; a request without questions (URL-style) accepts none.
pub(super) fn question<'a>(
    request: &'a ChatInputRequest,
    question_id: &str,
) -> Result<&'a ChatInputQuestion, RejectionReason> {
    request
        .questions
        .iter()
        .flatten()
        .find(|q| question_id_of(q) == Some(question_id))
        .ok_or_else(|| RejectionReason::UnknownQuestion {
            question_id: question_id.to_owned(),
        })
}

/// The id of an input request's question (an unknown kind's `id` field, if it has one).
pub fn question_id_of(question: &ChatInputQuestion) -> Option<&str> {
    Some(match question {
        ChatInputQuestion::Text(q) => &q.id,
        ChatInputQuestion::Number(q) | ChatInputQuestion::Integer(q) => &q.id,
        ChatInputQuestion::Boolean(q) => &q.id,
        ChatInputQuestion::SingleSelect(q) => &q.id,
        ChatInputQuestion::MultiSelect(q) => &q.id,
        ChatInputQuestion::Unknown(v) => return v.get("id").and_then(|id| id.as_str()),
    })
}

fn is_required(question: &ChatInputQuestion) -> bool {
    let required = match question {
        ChatInputQuestion::Text(q) => q.required,
        ChatInputQuestion::Number(q) | ChatInputQuestion::Integer(q) => q.required,
        ChatInputQuestion::Boolean(q) => q.required,
        ChatInputQuestion::SingleSelect(q) => q.required,
        ChatInputQuestion::MultiSelect(q) => q.required,
        ChatInputQuestion::Unknown(v) => v.get("required").and_then(|r| r.as_bool()),
    };
    required == Some(true)
}

/// An answer fits its question: the value kind matches the question kind, selections name
/// offered options (unless free-form input is allowed), and submitted answers respect the
/// question's bounds. Drafts are only checked for kind: a half-typed answer may be out of range.
pub(super) fn check_answer(
    question: &ChatInputQuestion,
    question_id: &str,
    answer: &ChatInputAnswer,
) -> Result<(), RejectionReason> {
    let (value, submitted) = match answer {
        ChatInputAnswer::Skipped(_) => return Ok(()),
        ChatInputAnswer::Draft(a) => (&a.value, false),
        ChatInputAnswer::Submitted(a) => (&a.value, true),
    };
    check_value(question, value, submitted).map_err(|problem| RejectionReason::MalformedAnswer {
        question_id: question_id.to_owned(),
        problem,
    })
}

fn check_value(
    question: &ChatInputQuestion,
    value: &ChatInputAnswerValue,
    submitted: bool,
) -> Result<(), String> {
    use ChatInputAnswerValue as V;
    use ChatInputQuestion as Q;
    match (question, value) {
        (Q::Unknown(_), _) => Ok(()),
        (Q::Text(q), V::Text(v)) => {
            let len = i64::try_from(v.value.chars().count()).unwrap_or(i64::MAX);
            if submitted && q.min.is_some_and(|min| len < min) {
                return Err(format!(
                    "text is shorter than {} characters",
                    q.min.unwrap_or(0)
                ));
            }
            if submitted && q.max.is_some_and(|max| len > max) {
                return Err(format!(
                    "text is longer than {} characters",
                    q.max.unwrap_or(0)
                ));
            }
            Ok(())
        }
        (Q::Number(q) | Q::Integer(q), V::Number(v)) => {
            if !v.value.is_finite() {
                return Err("number is not finite".to_owned());
            }
            if matches!(question, Q::Integer(_)) && v.value.fract() != 0.0 {
                return Err(format!("{} is not an integer", v.value));
            }
            if submitted && q.min.is_some_and(|min| v.value < min) {
                return Err(format!("{} is below the minimum", v.value));
            }
            if submitted && q.max.is_some_and(|max| v.value > max) {
                return Err(format!("{} is above the maximum", v.value));
            }
            Ok(())
        }
        (Q::Boolean(_), V::Boolean(_)) => Ok(()),
        (Q::SingleSelect(q), V::Selected(v)) => check_options(
            &q.options,
            std::slice::from_ref(&v.value),
            q.allow_freeform_input,
        ),
        (Q::MultiSelect(q), V::SelectedMany(v)) => {
            check_options(&q.options, &v.value, q.allow_freeform_input)?;
            let count = i64::try_from(v.value.len()).unwrap_or(i64::MAX);
            if submitted && q.min.is_some_and(|min| count < min) {
                return Err(format!(
                    "fewer than {} options selected",
                    q.min.unwrap_or(0)
                ));
            }
            if submitted && q.max.is_some_and(|max| count > max) {
                return Err(format!("more than {} options selected", q.max.unwrap_or(0)));
            }
            Ok(())
        }
        (_, value) => Err(format!(
            "a {} answer does not fit a {} question",
            value_kind(value),
            question_kind(question)
        )),
    }
}

fn check_options(
    options: &[ChatInputOption],
    selected: &[String],
    allow_freeform: Option<bool>,
) -> Result<(), String> {
    if allow_freeform == Some(true) {
        return Ok(());
    }
    match selected
        .iter()
        .find(|s| !options.iter().any(|o| &o.id == *s))
    {
        Some(unknown) => Err(format!("{unknown:?} is not one of the offered options")),
        None => Ok(()),
    }
}

fn value_kind(value: &ChatInputAnswerValue) -> &'static str {
    match value {
        ChatInputAnswerValue::Text(_) => "text",
        ChatInputAnswerValue::Number(_) => "number",
        ChatInputAnswerValue::Boolean(_) => "boolean",
        ChatInputAnswerValue::Selected(_) => "selected",
        ChatInputAnswerValue::SelectedMany(_) => "selected-many",
        ChatInputAnswerValue::Unknown(_) => "unknown",
    }
}

fn question_kind(question: &ChatInputQuestion) -> &'static str {
    match question {
        ChatInputQuestion::Text(_) => "text",
        ChatInputQuestion::Number(_) => "number",
        ChatInputQuestion::Integer(_) => "integer",
        ChatInputQuestion::Boolean(_) => "boolean",
        ChatInputQuestion::SingleSelect(_) => "single-select",
        ChatInputQuestion::MultiSelect(_) => "multi-select",
        ChatInputQuestion::Unknown(_) => "unknown",
    }
}

/// `accept` needs a submitted answer for every required question: the answers sent with the
/// completion override those already recorded on the request.
pub(super) fn check_required_submitted(
    request: &ChatInputRequest,
    sent: Option<&HashMap<String, ChatInputAnswer>>,
) -> Result<(), RejectionReason> {
    for question in request.questions.iter().flatten() {
        if !is_required(question) {
            continue;
        }
        let Some(id) = question_id_of(question) else {
            continue;
        };
        let answer = sent
            .and_then(|s| s.get(id))
            .or_else(|| request.answers.as_ref().and_then(|a| a.get(id)));
        if !matches!(answer, Some(ChatInputAnswer::Submitted(_))) {
            return Err(RejectionReason::MissingRequiredAnswer {
                question_id: id.to_owned(),
            });
        }
    }
    Ok(())
}

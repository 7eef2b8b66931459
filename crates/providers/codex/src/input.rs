//! Codex's questions to the user as AHP input requests:
//! `item/tool/requestUserInput` and `mcpServer/elicitation/request` become a
//! [`ChatInputRequest`] for `chat/inputRequested`, with the [`InputKind`] the driver needs to
//! write the answer back ([`crate::control::input_answer`]).

use agenthost_protocol::state::{
    ChatInputBooleanQuestion, ChatInputMultiSelectQuestion, ChatInputNumberQuestion,
    ChatInputOption, ChatInputQuestion, ChatInputRequest, ChatInputSingleSelectQuestion,
    ChatInputTextQuestion,
};
use serde_json::{Map, Value};

use crate::control::{FieldKind, FormField, InputKind};
use crate::wire::{ElicitationParams, UserInputParams, UserInputQuestion};

/// How much of an app-server request id an input request id keeps.
const MAX_ID_CHARS: usize = 200;

/// The AHP id of the input request for app-server request `request_id`: `input-<id>`, control
/// characters replaced and the id shortened so it is always a valid id. App-server request ids
/// are unique per process, and an input request lives no longer than its turn, which one
/// process carries (the translator refuses an id it already asked in the turn).
pub(crate) fn input_id(request_id: &Value) -> String {
    let raw = match request_id {
        Value::String(id) => id.clone(),
        other => other.to_string(),
    };
    let id: String = raw
        .chars()
        .take(MAX_ID_CHARS)
        .map(|c| if c.is_control() { '_' } else { c })
        .collect();
    format!("input-{id}")
}

/// `item/tool/requestUserInput`: one question each — single-select over the options' labels
/// when it has options (free-form too when `isOther`), else text; `header` is the title.
pub(crate) fn user_input_request(
    id: String,
    params: &UserInputParams,
) -> (ChatInputRequest, InputKind) {
    let questions = params.questions.iter().map(user_question).collect();
    let kind = InputKind::UserInput {
        questions: params.questions.iter().map(|q| q.id.clone()).collect(),
    };
    let request = ChatInputRequest {
        id,
        message: None,
        url: None,
        questions: Some(questions),
        answers: None,
    };
    (request, kind)
}

fn user_question(question: &UserInputQuestion) -> ChatInputQuestion {
    let title = non_empty(question.header.as_deref());
    let message = non_empty(question.question.as_deref())
        .or_else(|| title.clone())
        .unwrap_or_else(|| question.id.clone());
    let options: Vec<ChatInputOption> = question
        .options
        .iter()
        .filter(|option| !option.label.is_empty())
        .map(|option| ChatInputOption {
            id: option.label.clone(),
            label: option.label.clone(),
            description: non_empty(option.description.as_deref()),
            recommended: None,
        })
        .collect();
    if options.is_empty() {
        return ChatInputQuestion::Text(ChatInputTextQuestion {
            id: question.id.clone(),
            title,
            message,
            required: None,
            format: None,
            min: None,
            max: None,
            default_value: None,
        });
    }
    ChatInputQuestion::SingleSelect(ChatInputSingleSelectQuestion {
        id: question.id.clone(),
        title,
        message,
        required: None,
        options,
        allow_freeform_input: question.is_other.then_some(true),
    })
}

/// `mcpServer/elicitation/request`: the server's message; a URL elicitation carries its `url`,
/// a form one its fields of a simple type as questions (string — an enum as single-select —,
/// number, integer, boolean, an array of enum strings as multi-select). Fields of any other
/// shape are not asked (the message still is).
pub(crate) fn elicitation_request(
    id: String,
    params: &ElicitationParams,
) -> (ChatInputRequest, InputKind) {
    let message = non_empty(Some(&params.message)).unwrap_or_else(|| match &params.server_name {
        Some(server) => format!("The MCP server `{server}` asks for input."),
        None => "An MCP server asks for input.".to_owned(),
    });
    let url_mode = params.mode.as_deref() == Some("url");
    if url_mode {
        let request = ChatInputRequest {
            id,
            message: Some(message),
            url: params.url.clone(),
            questions: None,
            answers: None,
        };
        return (request, InputKind::Elicitation { fields: None });
    }
    let (questions, fields): (Vec<_>, Vec<_>) = params
        .requested_schema
        .as_ref()
        .map(form_questions)
        .unwrap_or_default()
        .into_iter()
        .unzip();
    let request = ChatInputRequest {
        id,
        message: Some(message),
        url: None,
        questions: (!questions.is_empty()).then_some(questions),
        answers: None,
    };
    (
        request,
        InputKind::Elicitation {
            fields: Some(fields),
        },
    )
}

/// The questions of a form schema (`{type: "object", properties, required}`), in the order of
/// its properties.
fn form_questions(schema: &Value) -> Vec<(ChatInputQuestion, FormField)> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .filter_map(|(name, field)| {
            let (question, kind) = form_question(name, field, required.contains(&name.as_str()))?;
            Some((
                question,
                FormField {
                    name: name.clone(),
                    kind,
                },
            ))
        })
        .collect()
}

/// One property of a form as a question, when its type is a simple one.
fn form_question(
    name: &str,
    field: &Value,
    required: bool,
) -> Option<(ChatInputQuestion, FieldKind)> {
    let field = field.as_object()?;
    let text = |key: &str| non_empty(field.get(key).and_then(Value::as_str));
    let int = |key: &str| field.get(key).and_then(Value::as_i64);
    let float = |key: &str| field.get(key).and_then(Value::as_f64);
    let id = name.to_owned();
    let title = text("title");
    let message = text("description")
        .or_else(|| title.clone())
        .unwrap_or_else(|| name.to_owned());
    let required = required.then_some(true);
    let question = match field.get("type").and_then(Value::as_str)? {
        "string" => match choices(field) {
            Some(options) => (
                ChatInputQuestion::SingleSelect(ChatInputSingleSelectQuestion {
                    id,
                    title,
                    message,
                    required,
                    options,
                    allow_freeform_input: None,
                }),
                FieldKind::Text,
            ),
            None => (
                ChatInputQuestion::Text(ChatInputTextQuestion {
                    id,
                    title,
                    message,
                    required,
                    format: text("format"),
                    min: int("minLength"),
                    max: int("maxLength"),
                    default_value: field
                        .get("default")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                }),
                FieldKind::Text,
            ),
        },
        kind @ ("number" | "integer") => {
            let question = ChatInputNumberQuestion {
                id,
                title,
                message,
                required,
                min: float("minimum"),
                max: float("maximum"),
                default_value: float("default"),
            };
            if kind == "integer" {
                (ChatInputQuestion::Integer(question), FieldKind::Integer)
            } else {
                (ChatInputQuestion::Number(question), FieldKind::Number)
            }
        }
        "boolean" => (
            ChatInputQuestion::Boolean(ChatInputBooleanQuestion {
                id,
                title,
                message,
                required,
                default_value: field.get("default").and_then(Value::as_bool),
            }),
            FieldKind::Boolean,
        ),
        "array" => {
            let items = field.get("items")?.as_object()?;
            let options = choices(items)?;
            (
                ChatInputQuestion::MultiSelect(ChatInputMultiSelectQuestion {
                    id,
                    title,
                    message,
                    required,
                    options,
                    allow_freeform_input: None,
                    min: int("minItems"),
                    max: int("maxItems"),
                }),
                FieldKind::Texts,
            )
        }
        _ => return None,
    };
    Some(question)
}

/// The choices of an enum schema: `oneOf` / `anyOf` `[{const, title}]`, or `enum` (labelled
/// by `enumNames` when present). `None` when it is not an enum of strings.
fn choices(schema: &Map<String, Value>) -> Option<Vec<ChatInputOption>> {
    let option = |id: &str, label: Option<&str>| ChatInputOption {
        id: id.to_owned(),
        label: non_empty(label).unwrap_or_else(|| id.to_owned()),
        description: None,
        recommended: None,
    };
    let options: Option<Vec<ChatInputOption>> =
        if let Some(titled) = schema.get("oneOf").or_else(|| schema.get("anyOf")) {
            titled
                .as_array()?
                .iter()
                .map(|choice| {
                    let id = choice.get("const")?.as_str()?;
                    Some(option(id, choice.get("title").and_then(Value::as_str)))
                })
                .collect()
        } else {
            let names = schema.get("enumNames").and_then(Value::as_array);
            schema
                .get("enum")?
                .as_array()?
                .iter()
                .enumerate()
                .map(|(index, value)| {
                    let name = names.and_then(|names| names.get(index)?.as_str());
                    Some(option(value.as_str()?, name))
                })
                .collect()
        };
    options.filter(|options| !options.is_empty())
}

fn non_empty(text: Option<&str>) -> Option<String> {
    text.map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

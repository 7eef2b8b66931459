use std::collections::HashMap;

use agenthost_protocol::state::{
    ChatInputAnswer, ChatInputAnswerValue, ChatInputAnswered, ChatInputResponseKind,
    ChatInputSelectedAnswerValue, ChatInputSelectedManyAnswerValue, ChatInputSkipped,
    ChatInputTextAnswerValue,
};
use agenthost_provider_api::InputResponse;
use serde_json::json;

use super::answer::{CANCELLED, DECLINED};
use super::*;
use crate::control;

/// An `AskUserQuestion` input as Claude Code 2.x sends it.
fn input() -> Value {
    json!({
        "questions": [
            {
                "question": "Which database should we use?",
                "header": "Database",
                "options": [
                    { "label": "PostgreSQL", "description": "Relational, robust" },
                    { "label": "SQLite", "description": "Embedded, simple" }
                ],
                "multiSelect": false
            },
            {
                "question": "Which features do you want?",
                "header": "Features",
                "options": [
                    { "label": "Auth", "description": "Log-in" },
                    { "label": "Search", "description": "Full text" },
                    { "label": "Export" }
                ],
                "multiSelect": true
            },
            { "question": "Anything else?", "header": "Notes", "options": [] }
        ]
    })
}

fn submitted(value: ChatInputAnswerValue) -> ChatInputAnswer {
    ChatInputAnswer::Submitted(ChatInputAnswered { value })
}

fn selected(value: &str, freeform: Option<Vec<&str>>) -> ChatInputAnswer {
    submitted(ChatInputAnswerValue::Selected(
        ChatInputSelectedAnswerValue {
            value: value.to_owned(),
            freeform_values: freeform.map(|v| v.into_iter().map(str::to_owned).collect()),
        },
    ))
}

fn response(kind: ChatInputResponseKind, answers: Vec<(&str, ChatInputAnswer)>) -> InputResponse {
    InputResponse {
        response: kind,
        answers: answers
            .into_iter()
            .map(|(id, answer)| (id.to_owned(), answer))
            .collect::<HashMap<_, _>>(),
    }
}

#[test]
fn questions_become_select_and_text_questions_with_stable_ids_and_freeform_input() {
    let request = input_request("ask-toolu_1".into(), &input()).unwrap();
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({
            "id": "ask-toolu_1",
            "questions": [
                {
                    "kind": "single-select", "id": "q0", "title": "Database",
                    "message": "Which database should we use?", "required": true,
                    "options": [
                        { "id": "o0", "label": "PostgreSQL", "description": "Relational, robust" },
                        { "id": "o1", "label": "SQLite", "description": "Embedded, simple" }
                    ],
                    "allowFreeformInput": true
                },
                {
                    "kind": "multi-select", "id": "q1", "title": "Features",
                    "message": "Which features do you want?", "required": true,
                    "options": [
                        { "id": "o0", "label": "Auth", "description": "Log-in" },
                        { "id": "o1", "label": "Search", "description": "Full text" },
                        { "id": "o2", "label": "Export" }
                    ],
                    "allowFreeformInput": true
                },
                {
                    "kind": "text", "id": "q2", "title": "Notes", "message": "Anything else?",
                    "required": true
                }
            ]
        })
    );
}

#[test]
fn an_input_without_questions_asks_nothing() {
    for input in [
        json!({}),
        json!({ "questions": [] }),
        json!({ "questions": [{ "header": "no text" }] }),
        json!({ "command": "ls" }),
        json!("questions"),
    ] {
        assert_eq!(input_request("ask-x".into(), &input), None, "{input}");
    }
    // A question without text keeps its index: the next one is still `q1`.
    let request = input_request(
        "ask-x".into(),
        &json!({ "questions": [{ "header": "x" }, { "question": "Why?" }] }),
    )
    .unwrap();
    let ids: Vec<Value> = serde_json::to_value(&request).unwrap()["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|question| question["id"].clone())
        .collect();
    assert_eq!(ids, vec![json!("q1")]);
}

#[test]
fn request_ids_derive_from_the_tool_call_and_must_be_safe() {
    assert_eq!(
        request_id("toolu_01ABC").as_deref(),
        Some("ask-toolu_01ABC")
    );
    assert_eq!(request_id("bad\nid"), None);
    assert_eq!(request_id(&"x".repeat(SafeId::MAX_LEN)), None);
}

#[test]
fn accepting_sends_the_input_back_with_the_answers_keyed_by_question_text() {
    let accepted = response(
        ChatInputResponseKind::Accept,
        vec![
            ("q0", selected("o1", None)),
            (
                "q1",
                submitted(ChatInputAnswerValue::SelectedMany(
                    ChatInputSelectedManyAnswerValue {
                        value: vec!["o0".into(), "o2".into()],
                        freeform_values: Some(vec!["Billing".into()]),
                    },
                )),
            ),
            (
                "q2",
                submitted(ChatInputAnswerValue::Text(ChatInputTextAnswerValue {
                    value: "Keep it small".into(),
                })),
            ),
        ],
    );
    let Answer::Allow(updated) = answer(&input(), &accepted) else {
        panic!("not allowed");
    };
    let line: Value = serde_json::from_str(&control::allow("req-7", &updated)).unwrap();
    let mut expected_input = input();
    expected_input["answers"] = json!({
        "Which database should we use?": "SQLite",
        "Which features do you want?": "Auth, Export, Billing",
        "Anything else?": "Keep it small"
    });
    assert_eq!(
        line,
        json!({
            "type": "control_response",
            "response": {
                "subtype": "success",
                "request_id": "req-7",
                "response": { "behavior": "allow", "updatedInput": expected_input }
            }
        })
    );
}

#[test]
fn typed_answers_pass_through_and_unanswered_questions_are_left_out() {
    let accepted = response(
        ChatInputResponseKind::Accept,
        vec![
            // Typed instead of choosing ("Other").
            ("q0", selected("MongoDB", None)),
            ("q1", ChatInputAnswer::Skipped(ChatInputSkipped::default())),
            (
                "q2",
                ChatInputAnswer::Draft(ChatInputAnswered {
                    value: ChatInputAnswerValue::Text(ChatInputTextAnswerValue {
                        value: "half-typed".into(),
                    }),
                }),
            ),
        ],
    );
    let Answer::Allow(updated) = answer(&input(), &accepted) else {
        panic!("not allowed");
    };
    assert_eq!(
        updated["answers"],
        json!({ "Which database should we use?": "MongoDB" })
    );
    assert_eq!(updated["questions"], input()["questions"]);
}

#[test]
fn declining_or_cancelling_denies() {
    let answered = vec![("q0", selected("o0", None))];
    assert_eq!(
        answer(
            &input(),
            &response(ChatInputResponseKind::Decline, answered.clone())
        ),
        Answer::Deny(DECLINED)
    );
    assert_eq!(
        answer(&input(), &response(ChatInputResponseKind::Cancel, answered)),
        Answer::Deny(CANCELLED)
    );
    let line: Value = serde_json::from_str(&control::deny("req-7", DECLINED)).unwrap();
    assert_eq!(
        line["response"]["response"],
        json!({ "behavior": "deny", "message": DECLINED })
    );
}

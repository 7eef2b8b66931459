//! A chat's input request as an ACP form elicitation, and the editor's answer as AHP answers.

use agenthost_protocol::ahp_types::state::{ChatInputQuestion, ChatInputRequest};
use serde_json::{Map, Value, json};

/// `elicitation/create`'s parameters (form mode) for `request` in session `session_id`.
pub fn elicitation(session_id: &str, request: &ChatInputRequest) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for question in request.questions.iter().flatten() {
        let Some((id, is_required, schema)) = property(question) else {
            continue;
        };
        if is_required {
            required.push(json!(id));
        }
        properties.insert(id.to_owned(), schema);
    }
    let message = request
        .message
        .clone()
        .unwrap_or_else(|| "The agent asks for your input".to_owned());
    json!({
        "sessionId": session_id,
        "mode": "form",
        "message": message,
        "requestedSchema": { "type": "object", "properties": properties, "required": required },
    })
}

/// A question as a form property: its id, whether it is required, its JSON schema.
fn property(question: &ChatInputQuestion) -> Option<(&str, bool, Value)> {
    let described = |kind: &str, title: &Option<String>, message: &str| {
        let mut schema = json!({ "type": kind, "description": message });
        if let Some(title) = title {
            schema["title"] = json!(title);
        }
        schema
    };
    let (id, required, schema) = match question {
        ChatInputQuestion::Text(q) => {
            let mut schema = described("string", &q.title, &q.message);
            if let Some(default) = &q.default_value {
                schema["default"] = json!(default);
            }
            (q.id.as_str(), q.required, schema)
        }
        ChatInputQuestion::Number(q) | ChatInputQuestion::Integer(q) => {
            let kind = if matches!(question, ChatInputQuestion::Integer(_)) {
                "integer"
            } else {
                "number"
            };
            let mut schema = described(kind, &q.title, &q.message);
            // An integer's bounds are whole numbers (rounded inwards).
            let bound = |value: f64, up: bool| {
                if kind == "integer" {
                    #[allow(clippy::cast_possible_truncation)]
                    let whole = if up { value.ceil() } else { value.floor() } as i64;
                    json!(whole)
                } else {
                    json!(value)
                }
            };
            if let Some(min) = q.min {
                schema["minimum"] = bound(min, true);
            }
            if let Some(max) = q.max {
                schema["maximum"] = bound(max, false);
            }
            (q.id.as_str(), q.required, schema)
        }
        ChatInputQuestion::Boolean(q) => {
            let mut schema = described("boolean", &q.title, &q.message);
            if let Some(default) = q.default_value {
                schema["default"] = json!(default);
            }
            (q.id.as_str(), q.required, schema)
        }
        ChatInputQuestion::SingleSelect(q) => {
            let mut schema = described("string", &q.title, &q.message);
            schema["oneOf"] = q
                .options
                .iter()
                .map(|o| json!({ "const": o.id, "title": o.label }))
                .collect();
            (q.id.as_str(), q.required, schema)
        }
        ChatInputQuestion::MultiSelect(q) => {
            let mut schema = described("array", &q.title, &q.message);
            schema["items"] = json!({
                "anyOf": q.options.iter()
                    .map(|o| json!({ "const": o.id, "title": o.label }))
                    .collect::<Vec<_>>()
            });
            (q.id.as_str(), q.required, schema)
        }
        ChatInputQuestion::Unknown(_) => return None,
    };
    Some((id, required.unwrap_or(false), schema))
}

/// The editor's form `content` as AHP answers (submitted), for the questions of `request`; a
/// value of the wrong type is left out.
pub fn answers(request: &ChatInputRequest, content: &Value) -> Value {
    let mut answers = Map::new();
    for question in request.questions.iter().flatten() {
        let Some((id, _, _)) = property(question) else {
            continue;
        };
        let given = &content[id];
        let value = match question {
            ChatInputQuestion::Text(_) => given
                .as_str()
                .map(|v| json!({ "kind": "text", "value": v })),
            ChatInputQuestion::Number(_) | ChatInputQuestion::Integer(_) => given
                .as_f64()
                .map(|v| json!({ "kind": "number", "value": v })),
            ChatInputQuestion::Boolean(_) => given
                .as_bool()
                .map(|v| json!({ "kind": "boolean", "value": v })),
            ChatInputQuestion::SingleSelect(_) => given
                .as_str()
                .map(|v| json!({ "kind": "selected", "value": v })),
            ChatInputQuestion::MultiSelect(_) => given.as_array().map(|values| {
                let picked: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                json!({ "kind": "selected-many", "value": picked })
            }),
            ChatInputQuestion::Unknown(_) => None,
        };
        if let Some(value) = value {
            answers.insert(
                id.to_owned(),
                json!({ "state": "submitted", "value": value }),
            );
        }
    }
    Value::Object(answers)
}

/// The `chat/inputCompleted` action for the editor's answer to `elicitation/create` (accept
/// with content, decline, cancel); an answer that is none of these cancels.
pub fn completed(request: &ChatInputRequest, answer: &Value) -> Value {
    let response = match answer["action"].as_str() {
        Some("accept") => "accept",
        Some("decline") => "decline",
        _ => "cancel",
    };
    let mut action = json!({
        "type": "chat/inputCompleted",
        "requestId": request.id,
        "response": response,
    });
    if response == "accept" {
        action["answers"] = answers(request, &answer["content"]);
    }
    action
}

#[cfg(test)]
mod tests {
    // Test code: a panic is a test failure.
    #![allow(clippy::unwrap_used)]

    use agent_client_protocol::v1::schema::CreateElicitationRequest;
    use agenthost_protocol::StateAction;

    use super::*;

    fn request() -> ChatInputRequest {
        serde_json::from_value(json!({
            "id": "input-1-1",
            "message": "Which color?",
            "questions": [
                { "kind": "single-select", "id": "color", "message": "Pick one", "required": true,
                  "options": [{ "id": "red", "label": "Red" }, { "id": "blue", "label": "Blue" }] },
                { "kind": "text", "id": "why", "title": "Why", "message": "Say why" },
                { "kind": "integer", "id": "count", "message": "How many", "min": 1 },
                { "kind": "boolean", "id": "sure", "message": "Sure?" },
                { "kind": "multi-select", "id": "extras", "message": "Extras",
                  "options": [{ "id": "x", "label": "X" }] },
            ]
        }))
        .unwrap()
    }

    #[test]
    fn the_questions_are_a_form_acp_accepts() {
        let params = elicitation("scripted:/s", &request());
        let parsed: Result<CreateElicitationRequest, _> = serde_json::from_value(params.clone());
        assert!(parsed.is_ok(), "{params}: {parsed:?}");
        let schema = &params["requestedSchema"];
        assert_eq!(schema["required"], json!(["color"]));
        assert_eq!(schema["properties"]["count"]["type"], "integer");
        assert_eq!(schema["properties"]["color"]["oneOf"][1]["const"], "blue");
        assert_eq!(params["message"], "Which color?");
    }

    #[test]
    fn the_editors_answers_become_ahp_answers() {
        let answer = json!({ "action": "accept", "content": {
            "color": "blue", "why": "calm", "count": 3, "sure": true, "extras": ["x"],
            "unknown": "ignored" } });
        let action = completed(&request(), &answer);
        let parsed: Result<StateAction, _> = serde_json::from_value(action.clone());
        assert!(parsed.is_ok(), "{action}: {parsed:?}");
        assert_eq!(action["response"], "accept");
        assert_eq!(
            action["answers"]["color"]["value"],
            json!({ "kind": "selected", "value": "blue" })
        );
        assert_eq!(action["answers"]["count"]["value"]["value"], 3.0);
        assert_eq!(action["answers"]["extras"]["value"]["value"], json!(["x"]));
        assert!(action["answers"].get("unknown").is_none());

        let wrong_type = completed(
            &request(),
            &json!({ "action": "accept", "content": { "count": "three" } }),
        );
        assert!(wrong_type["answers"].get("count").is_none());
        assert_eq!(
            completed(&request(), &json!({ "action": "decline" }))["response"],
            "decline"
        );
        assert_eq!(
            completed(&request(), &json!({ "nonsense": 1 }))["response"],
            "cancel"
        );
    }
}

//! A session's configuration as ACP session config options, and an editor's choice as an AHP
//! config change.
//!
//! Every property the session lets a client change (`sessionMutable`, not read-only) that ACP
//! can show is offered: a string with an `enum` is a select (category `mode` for the `mode`
//! property), a boolean is a boolean, and the unattended policy — a free-form string in the CLI
//! spelling — is a select of `off`, `deny` and its current value (an `allow=…` list is set with
//! `agent-host` or VS Code; the editor can switch between it and `off`/`deny`).

use agenthost_protocol::ahp_types::state::{SessionConfigPropertySchema, SessionConfigState};
use serde_json::{Value, json};

use crate::rpc::RpcError;

/// The unattended policy's key.
const UNATTENDED: &str = "unattended";

/// The options the editor may show, `mode` first, then by key.
pub fn options(config: Option<&SessionConfigState>) -> Vec<Value> {
    let Some(config) = config else {
        return Vec::new();
    };
    let mut keys: Vec<&String> = config.schema.properties.keys().collect();
    keys.sort_by_key(|key| (key.as_str() != "mode", key.as_str()));
    keys.into_iter()
        .filter_map(|key| {
            let property = config.schema.properties.get(key)?;
            option(key, property, config.values.get(key.as_str()))
        })
        .collect()
}

/// The values a select offers: the enum's (with labels), or for the unattended policy `off`,
/// `deny` and the current value.
fn choices(key: &str, property: &SessionConfigPropertySchema, current: &str) -> Vec<Value> {
    if let Some(values) = &property.r#enum {
        return values
            .iter()
            .enumerate()
            .filter_map(|(i, value)| {
                let value = value.as_str()?;
                let name = property
                    .enum_labels
                    .as_ref()
                    .and_then(|labels| labels.get(i))
                    .map_or(value, String::as_str);
                let mut choice = json!({ "value": value, "name": name });
                if let Some(description) = property
                    .enum_descriptions
                    .as_ref()
                    .and_then(|descriptions| descriptions.get(i))
                {
                    choice["description"] = json!(description);
                }
                Some(choice)
            })
            .collect();
    }
    if key != UNATTENDED {
        return Vec::new();
    }
    let mut choices = vec![
        json!({ "value": "off", "name": "Off: wait for a user" }),
        json!({ "value": "deny", "name": "Deny what nobody answers" }),
    ];
    if current != "off" && current != "deny" && !current.is_empty() {
        choices.push(json!({ "value": current, "name": current }));
    }
    choices
}

fn option(
    key: &str,
    property: &SessionConfigPropertySchema,
    value: Option<&Value>,
) -> Option<Value> {
    if property.session_mutable != Some(true) || property.read_only == Some(true) {
        return None;
    }
    let value = value.or(property.default.as_ref());
    let mut option = json!({ "id": key, "name": property.title });
    if let Some(description) = &property.description {
        option["description"] = json!(description);
    }
    match property.r#type.as_str() {
        "boolean" => {
            option["type"] = json!("boolean");
            option["currentValue"] = json!(value.and_then(Value::as_bool).unwrap_or(false));
        }
        "string" => {
            let current = value.and_then(Value::as_str).unwrap_or_default();
            let choices = choices(key, property, current);
            if choices.is_empty() {
                return None;
            }
            option["type"] = json!("select");
            option["currentValue"] = json!(current);
            option["options"] = json!(choices);
            if key == "mode" {
                option["category"] = json!("mode");
            }
        }
        _ => return None,
    }
    Some(option)
}

/// The session's modes in ACP's older form (`modes`, `session/set_mode`): the `mode` select's
/// choices, for editors that do not show config options.
pub fn modes(config: Option<&SessionConfigState>) -> Option<Value> {
    let offered = options(config);
    let mode = offered.iter().find(|o| o["id"] == "mode")?;
    let available: Vec<Value> = mode["options"]
        .as_array()?
        .iter()
        .map(|choice| {
            let mut mode = json!({ "id": choice["value"], "name": choice["name"] });
            if let Some(description) = choice.get("description") {
                mode["description"] = description.clone();
            }
            mode
        })
        .collect();
    Some(json!({ "currentModeId": mode["currentValue"], "availableModes": available }))
}

/// The config options and modes, as a session response carries them.
pub fn response_fields(config: Option<&SessionConfigState>) -> Value {
    let mut fields = json!({ "configOptions": options(config) });
    if let Some(modes) = modes(config) {
        fields["modes"] = modes;
    }
    fields
}

/// The AHP value for the editor's `session/set_config_option` of `id` to `value`, checked
/// against what [`options`] offers.
pub fn value_for(
    config: Option<&SessionConfigState>,
    id: &str,
    value: &Value,
) -> Result<Value, RpcError> {
    let offered = options(config);
    let Some(option) = offered.iter().find(|o| o["id"] == id) else {
        return Err(RpcError::invalid_params(format!(
            "this session has no config option `{id}` an editor can set"
        )));
    };
    match option["type"].as_str() {
        Some("boolean") => value.as_bool().map(Value::Bool).ok_or_else(|| {
            RpcError::invalid_params(format!("`{id}` takes true or false, not {value}"))
        }),
        _ => {
            let allowed = option["options"]
                .as_array()
                .is_some_and(|choices| choices.iter().any(|c| c["value"] == *value));
            if allowed {
                Ok(value.clone())
            } else {
                Err(RpcError::invalid_params(format!(
                    "`{value}` is not one of the values of `{id}`"
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    // Test code: a panic is a test failure.
    #![allow(clippy::unwrap_used)]

    use agent_client_protocol::v1::schema::SessionConfigOption;

    use super::*;

    fn config() -> SessionConfigState {
        serde_json::from_value(json!({
            "schema": { "type": "object", "properties": {
                "unattended": { "type": "string", "title": "Unattended policy",
                                "default": "off", "sessionMutable": true },
                "mode": { "type": "string", "title": "Mode", "enum": ["interactive", "plan"],
                          "enumLabels": ["Interactive", "Plan"], "sessionMutable": true },
                "autoApprove": { "type": "boolean", "title": "Bypass approvals",
                                 "sessionMutable": true },
                "isolation": { "type": "string", "title": "Isolation",
                               "enum": ["folder", "worktree"] },
                "branch": { "type": "string", "title": "Branch", "sessionMutable": true }
            } },
            "values": { "unattended": "allow=write_file", "mode": "plan" }
        }))
        .unwrap()
    }

    #[test]
    fn what_a_client_may_change_is_offered_in_a_form_acp_accepts() {
        let offered = options(Some(&config()));
        let ids: Vec<&str> = offered.iter().map(|o| o["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            ["mode", "autoApprove", "unattended"],
            "not isolation (not session-mutable) nor a free-form branch"
        );
        assert_eq!(offered[0]["category"], "mode");
        assert_eq!(offered[0]["currentValue"], "plan");
        assert_eq!(offered[0]["options"][1]["name"], "Plan");
        assert_eq!(offered[1]["currentValue"], false);
        let unattended: Vec<&str> = offered[2]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["value"].as_str().unwrap())
            .collect();
        assert_eq!(unattended, ["off", "deny", "allow=write_file"]);
        for option in offered {
            let parsed: Result<SessionConfigOption, _> = serde_json::from_value(option.clone());
            assert!(parsed.is_ok(), "{option}: {parsed:?}");
        }
        assert!(options(None).is_empty());
        let modes = modes(Some(&config())).unwrap();
        assert_eq!(modes["currentModeId"], "plan");
        assert_eq!(
            modes["availableModes"][0],
            json!({ "id": "interactive", "name": "Interactive" })
        );
        let parsed: Result<agent_client_protocol::v1::schema::SessionModeState, _> =
            serde_json::from_value(modes.clone());
        assert!(parsed.is_ok(), "{modes}: {parsed:?}");
    }

    #[test]
    fn a_choice_is_checked_against_what_is_offered() {
        let config = config();
        assert_eq!(
            value_for(Some(&config), "mode", &json!("interactive")).unwrap(),
            "interactive"
        );
        assert_eq!(
            value_for(Some(&config), "unattended", &json!("deny")).unwrap(),
            "deny"
        );
        assert_eq!(
            value_for(Some(&config), "autoApprove", &json!(true)).unwrap(),
            true
        );
        for (id, value) in [
            ("mode", json!("yolo")),
            ("autoApprove", json!("yes")),
            ("isolation", json!("worktree")),
            ("nope", json!("x")),
        ] {
            let error = value_for(Some(&config), id, &value).unwrap_err();
            assert_eq!(error.code, -32602, "{id}");
        }
    }
}

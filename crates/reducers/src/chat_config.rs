//! A chat's own configuration as the host keeps it across restarts: the chat-scoped settings
//! apart from history, title and draft — today its working-directory subset. One projection and
//! its inverse, shared by the `chatConfig` contribution (which persists the projection) and the
//! session service (which applies the restored value before the chat is registered).

use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::ChatState;
use serde_json::Value;

/// Key of the chat's working-directory subset (an array of URIs) in the configuration object.
pub const WORKING_DIRECTORIES_KEY: &str = "workingDirectories";

/// A stored configuration value that does not have the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("chat configuration `{key}` is not {expected}")]
pub struct MalformedChatConfig {
    /// The offending key.
    pub key: &'static str,
    /// What it should have been.
    pub expected: &'static str,
}

/// The chat's own configuration: `None` when it has nothing of its own (it inherits the
/// session's working directories).
pub fn chat_config(chat: &ChatState) -> Option<JsonObject> {
    let directories = chat.working_directories.as_ref()?;
    let mut config = JsonObject::new();
    config.insert(
        WORKING_DIRECTORIES_KEY.to_owned(),
        Value::Array(directories.iter().cloned().map(Value::String).collect()),
    );
    Some(config)
}

/// Applies a configuration to `chat` (the inverse of [`chat_config`]); whether the chat
/// changed. A malformed value is an error and leaves the chat unchanged; unknown keys are
/// ignored (a newer host may have written them).
pub fn apply_chat_config(
    config: &JsonObject,
    chat: &mut ChatState,
) -> Result<bool, MalformedChatConfig> {
    let Some(value) = config.get(WORKING_DIRECTORIES_KEY) else {
        return Ok(false);
    };
    let directories = value
        .as_array()
        .and_then(|values| {
            values
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or(MalformedChatConfig {
            key: WORKING_DIRECTORIES_KEY,
            expected: "an array of URI strings",
        })?;
    let changed = chat.working_directories.as_ref() != Some(&directories);
    chat.working_directories = Some(directories);
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn chat(extra: Value) -> ChatState {
        let mut value = json!({
            "resource": "ahp-chat:/c", "title": "C", "status": 1,
            "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
        });
        value
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn projection_and_inverse_round_trip() {
        let source = chat(json!({ "workingDirectories": ["file:///a", "file:///b"] }));
        let config = chat_config(&source).unwrap();
        let mut restored = chat(json!({}));
        assert_eq!(apply_chat_config(&config, &mut restored), Ok(true));
        assert_eq!(restored.working_directories, source.working_directories);
        assert_eq!(apply_chat_config(&config, &mut restored), Ok(false));
        assert_eq!(
            chat_config(&chat(json!({}))),
            None,
            "inherits: nothing of its own"
        );
    }

    #[test]
    fn malformed_values_are_errors_that_change_nothing() {
        let mut target = chat(json!({ "workingDirectories": ["file:///keep"] }));
        for bad in [
            json!("file:///a"),
            json!([1, 2]),
            json!(null),
            json!(["ok", {}]),
        ] {
            let config: JsonObject =
                serde_json::from_value(json!({ WORKING_DIRECTORIES_KEY: bad })).unwrap();
            assert!(
                apply_chat_config(&config, &mut target).is_err(),
                "{config:?}"
            );
            assert_eq!(
                target.working_directories.as_deref(),
                Some(&["file:///keep".to_owned()][..])
            );
        }
        let unknown: JsonObject = serde_json::from_value(json!({ "later": 1 })).unwrap();
        assert_eq!(apply_chat_config(&unknown, &mut target), Ok(false));
    }
}

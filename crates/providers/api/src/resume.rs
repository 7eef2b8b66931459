//! Resume handles: what a provider stores to resume a conversation after a restart — a JSON
//! object with the agent's own conversation id under one key (`{"threadId": …}`) — and the
//! check every id read back from the store passes before it reaches an agent's command line
//! or wire.

use serde_json::Value;

use crate::ProviderError;

/// The longest conversation id accepted, in bytes.
pub const MAX_RESUME_ID_LEN: usize = 128;

/// Whether `id` can be an agent's conversation id: 1 to [`MAX_RESUME_ID_LEN`] ASCII letters,
/// digits, `-` and `_`, not starting with `-` (it may go on a command line, where it must not
/// read as a flag).
pub fn is_valid_resume_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_RESUME_ID_LEN
        && !id.starts_with('-')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Where an agent keeps its conversation id in a resume handle, and how errors name it.
#[derive(Debug, Clone, Copy)]
pub struct ResumeKey {
    /// The key in the handle (`threadId`, `sessionId`).
    pub key: &'static str,
    /// The agent's display name (`Codex`).
    pub agent: &'static str,
    /// What the id is called (`thread id`).
    pub what: &'static str,
}

impl ResumeKey {
    /// The handle for `id`: `{"<key>": id}`.
    pub fn handle(&self, id: &str) -> Value {
        let mut handle = serde_json::Map::new();
        handle.insert(self.key.to_owned(), Value::from(id));
        Value::Object(handle)
    }

    /// The id a stored `handle` carries; a clear start failure when it has none or the id is
    /// not [valid](is_valid_resume_id).
    pub fn id(&self, handle: &Value) -> Result<String, ProviderError> {
        let Some(id) = handle.get(self.key).and_then(Value::as_str) else {
            return Err(ProviderError::StartFailed {
                message: format!(
                    "the stored {} resume handle has no `{}`",
                    self.agent, self.key
                ),
            });
        };
        if !is_valid_resume_id(id) {
            return Err(ProviderError::StartFailed {
                message: format!(
                    "the stored {} {} `{}` is not a valid id",
                    self.agent,
                    self.what,
                    id.escape_debug()
                ),
            });
        }
        Ok(id.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const KEY: ResumeKey = ResumeKey {
        key: "threadId",
        agent: "Codex",
        what: "thread id",
    };

    #[test]
    fn a_handle_round_trips_its_id() {
        let handle = KEY.handle("thr_1-a");
        assert_eq!(handle, json!({ "threadId": "thr_1-a" }));
        assert_eq!(KEY.id(&handle).unwrap(), "thr_1-a");
    }

    #[test]
    fn missing_and_hostile_ids_are_clear_start_failures() {
        let missing = KEY.id(&json!({ "sessionId": "x" })).unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("the stored Codex resume handle has no `threadId`"),
            "{missing}"
        );
        for hostile in ["", "--help", "../etc", "a b", "é", &"x".repeat(129)] {
            let error = KEY.id(&json!({ "threadId": hostile })).unwrap_err();
            assert!(
                error.to_string().contains("is not a valid id"),
                "{hostile}: {error}"
            );
        }
        assert!(KEY.id(&json!({ "threadId": 7 })).is_err());
    }
}

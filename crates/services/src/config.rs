//! [`Configuration`]: root and session configuration values, effective working directories.

use std::collections::HashMap;
use std::sync::RwLock;

use agenthost_protocol::state::{SessionConfigPropertySchema, SessionConfigState};
use serde_json::Value;

/// A string property of the session configuration schema: `choices` (value, label) are its
/// enum, in order (none: any string); `session_mutable`: a client may change it after
/// `createSession` (`session/configChanged`).
pub fn string_config_property(
    title: &str,
    description: &str,
    default: &str,
    choices: &[(&str, &str)],
    session_mutable: bool,
) -> SessionConfigPropertySchema {
    let (values, labels) = if choices.is_empty() {
        (None, None)
    } else {
        (
            Some(
                choices
                    .iter()
                    .map(|(value, _)| Value::from(*value))
                    .collect(),
            ),
            Some(
                choices
                    .iter()
                    .map(|(_, label)| (*label).to_owned())
                    .collect(),
            ),
        )
    };
    SessionConfigPropertySchema {
        r#type: "string".to_owned(),
        title: title.to_owned(),
        description: Some(description.to_owned()),
        default: Some(Value::from(default)),
        r#enum: values,
        enum_labels: labels,
        enum_descriptions: None,
        read_only: None,
        items: None,
        min_items: None,
        max_items: None,
        properties: None,
        required: None,
        additional_properties: None,
        enum_dynamic: None,
        session_mutable: Some(session_mutable),
    }
}

/// Configuration values contributions read. Keys are the host's configuration keys; values
/// JSON. Synchronous: values live in memory (the host seeds them from its flags and from
/// session state).
pub trait Configuration: Send + Sync {
    /// A root (host-wide) value.
    fn root_value(&self, key: &str) -> Option<Value>;

    /// Whether the root flag `key` is on: the value is the JSON `true`. Absent or `false` is
    /// off; any other value is off too, logged at `debug` (naming the key and the value).
    fn root_flag(&self, key: &str) -> bool {
        match self.root_value(key) {
            None => false,
            Some(value) => value.as_bool().unwrap_or_else(|| {
                tracing::debug!(key, %value, "a configuration flag is not a boolean; treated as off");
                false
            }),
        }
    }

    /// A session's own value, falling back to the root value.
    fn session_value(&self, session: &str, key: &str) -> Option<Value>;

    /// The working directories (file URIs) a turn of `chat` in `session` runs in: the chat's
    /// own subset when it has one, else the session's. Empty when none are known.
    fn working_directories(&self, session: &str, chat: Option<&str>) -> Vec<String>;

    /// The folders the host serves (`serve --root`, canonical): every file a client names —
    /// working directories, attachments, resource reads — must lie inside one. `None` when the
    /// embedder set no roots (then nothing is checked against them).
    fn roots(&self) -> Option<Vec<std::path::PathBuf>> {
        None
    }
}

#[derive(Debug, Default)]
struct Values {
    root: HashMap<String, Value>,
    sessions: HashMap<String, HashMap<String, Value>>,
    session_dirs: HashMap<String, Vec<String>>,
    chat_dirs: HashMap<String, Vec<String>>,
}

/// In-memory configuration the host seeds and updates; sessions and chats are removed with
/// [`forget_session`](Self::forget_session) / [`forget_chat`](Self::forget_chat).
#[derive(Debug, Default)]
pub struct InMemoryConfiguration {
    values: RwLock<Values>,
}

impl InMemoryConfiguration {
    /// Empty configuration.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Values> {
        self.values.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Values> {
        self.values.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets (or with `None` removes) a root value.
    pub fn set_root(&self, key: &str, value: Option<Value>) {
        let mut values = self.write();
        match value {
            Some(value) => values.root.insert(key.to_owned(), value),
            None => values.root.remove(key),
        };
    }

    /// Sets (or with `None` removes) a session value.
    pub fn set_session(&self, session: &str, key: &str, value: Option<Value>) {
        let mut values = self.write();
        let entries = values.sessions.entry(session.to_owned()).or_default();
        match value {
            Some(value) => entries.insert(key.to_owned(), value),
            None => entries.remove(key),
        };
    }

    /// Sets the session's working directories.
    pub fn set_session_directories(&self, session: &str, directories: Vec<String>) {
        self.write()
            .session_dirs
            .insert(session.to_owned(), directories);
    }

    /// Sets (or with `None` removes) a chat's own subset of working directories.
    pub fn set_chat_directories(&self, chat: &str, directories: Option<Vec<String>>) {
        let mut values = self.write();
        match directories {
            Some(directories) => values.chat_dirs.insert(chat.to_owned(), directories),
            None => values.chat_dirs.remove(chat),
        };
    }

    /// Forgets a session's values and directories.
    pub fn forget_session(&self, session: &str) {
        let mut values = self.write();
        values.sessions.remove(session);
        values.session_dirs.remove(session);
    }

    /// Forgets a chat's directories.
    pub fn forget_chat(&self, chat: &str) {
        self.write().chat_dirs.remove(chat);
    }
}

impl Configuration for InMemoryConfiguration {
    fn root_value(&self, key: &str) -> Option<Value> {
        self.read().root.get(key).cloned()
    }

    fn session_value(&self, session: &str, key: &str) -> Option<Value> {
        let values = self.read();
        values
            .sessions
            .get(session)
            .and_then(|entries| entries.get(key))
            .or_else(|| values.root.get(key))
            .cloned()
    }

    fn working_directories(&self, session: &str, chat: Option<&str>) -> Vec<String> {
        let values = self.read();
        chat.and_then(|chat| values.chat_dirs.get(chat))
            .or_else(|| values.session_dirs.get(session))
            .cloned()
            .unwrap_or_default()
    }
}

/// The host's configuration: values from an [`InMemoryConfiguration`] (seeded from flags), and
/// working directories as the host state has them — a chat's own subset, else its session's —
/// unless the in-memory configuration names some explicitly.
pub struct HostConfiguration {
    values: std::sync::Arc<InMemoryConfiguration>,
    host: std::sync::Arc<dyn crate::HostState>,
    roots: Option<Vec<std::path::PathBuf>>,
}

impl std::fmt::Debug for HostConfiguration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConfiguration")
            .field("values", &self.values)
            .finish_non_exhaustive()
    }
}

impl HostConfiguration {
    /// Values from `values`, directories from `host`.
    pub fn new(
        values: std::sync::Arc<InMemoryConfiguration>,
        host: std::sync::Arc<dyn crate::HostState>,
    ) -> Self {
        Self {
            values,
            host,
            roots: None,
        }
    }

    /// The host's roots (canonical paths), answered by [`Configuration::roots`].
    #[must_use]
    pub fn with_roots(mut self, roots: Vec<std::path::PathBuf>) -> Self {
        self.roots = Some(roots);
        self
    }
}

impl Configuration for HostConfiguration {
    fn root_value(&self, key: &str) -> Option<Value> {
        self.values.root_value(key)
    }

    fn roots(&self) -> Option<Vec<std::path::PathBuf>> {
        self.roots.clone()
    }

    fn session_value(&self, session: &str, key: &str) -> Option<Value> {
        self.values.session_value(session, key)
    }

    fn working_directories(&self, session: &str, chat: Option<&str>) -> Vec<String> {
        let explicit = self.values.working_directories(session, chat);
        if !explicit.is_empty() {
            return explicit;
        }
        let own = chat
            .and_then(|chat| self.host.chat(chat))
            .and_then(|chat| chat.working_directories)
            .filter(|directories| !directories.is_empty());
        own.or_else(|| {
            self.host
                .session(session)
                .and_then(|session| session.working_directories)
        })
        .unwrap_or_default()
    }
}

/// `base` (the host's session configuration) with `values` over its defaults: at a session's
/// creation any property of the schema, for a restored session only the properties the schema
/// marks session-mutable; values of unknown properties are left out.
pub fn session_config_with(
    base: &SessionConfigState,
    values: Option<&serde_json::Map<String, Value>>,
    creating: bool,
) -> SessionConfigState {
    let mut config = base.clone();
    for (key, value) in values.into_iter().flatten() {
        let property = config.schema.properties.get(key);
        if property.is_some_and(|p| creating || p.session_mutable == Some(true)) {
            config.values.insert(key.clone(), value.clone());
        }
    }
    config
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn session_values_fall_back_to_root_values() {
        let config = InMemoryConfiguration::new();
        assert_eq!(config.root_value("k"), None);
        assert!(!config.root_flag("flag"));
        config.set_root("flag", Some(json!(true)));
        config.set_root("k", Some(json!("root")));
        config.set_session("s1", "k", Some(json!("session")));
        assert!(config.root_flag("flag"));
        assert_eq!(config.session_value("s1", "k"), Some(json!("session")));
        assert_eq!(config.session_value("s2", "k"), Some(json!("root")));
        config.set_session("s1", "k", None);
        assert_eq!(config.session_value("s1", "k"), Some(json!("root")));
        config.set_root("flag", Some(json!("yes")));
        assert!(!config.root_flag("flag"), "only JSON true is on");
        config.set_root("k", None);
        assert_eq!(config.session_value("s1", "k"), None);
    }

    #[test]
    fn a_chat_subset_overrides_the_session_directories() {
        let config = InMemoryConfiguration::new();
        assert!(config.working_directories("s1", None).is_empty());
        config.set_session_directories("s1", vec!["file:///a".into(), "file:///b".into()]);
        config.set_chat_directories("c1", Some(vec!["file:///b".into()]));
        assert_eq!(
            config.working_directories("s1", None),
            ["file:///a", "file:///b"]
        );
        assert_eq!(config.working_directories("s1", Some("c1")), ["file:///b"]);
        assert_eq!(config.working_directories("s1", Some("c2")).len(), 2);
        config.forget_chat("c1");
        assert_eq!(config.working_directories("s1", Some("c1")).len(), 2);
        config.forget_session("s1");
        assert!(config.working_directories("s1", None).is_empty());
    }

    #[test]
    fn the_host_configuration_reads_directories_from_host_state() {
        use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState};
        let state = agenthost_state::StateManager::new(
            serde_json::from_value::<RootState>(json!({ "agents": [] })).unwrap(),
            agenthost_state::StateConfig::default(),
        );
        let session: SessionState = serde_json::from_value(json!({
            "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
            "activeClients": [], "chats": [], "workingDirectories": ["file:///s"]
        }))
        .unwrap();
        state
            .insert_session(&"ahp-session:/s1".parse().unwrap(), session)
            .unwrap();
        for (chat, dirs) in [
            ("ahp-chat:/own", json!(["file:///c"])),
            ("ahp-chat:/plain", json!(null)),
        ] {
            let chat: ChatState = serde_json::from_value(json!({
                "resource": chat, "title": "C", "status": 1,
                "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": [],
                "workingDirectories": dirs
            }))
            .unwrap();
            state
                .insert_chat(
                    &"ahp-session:/s1".parse().unwrap(),
                    &chat.resource.parse().unwrap(),
                    chat,
                )
                .unwrap();
        }
        let values = std::sync::Arc::new(InMemoryConfiguration::new());
        values.set_root("flag", Some(json!(true)));
        let config = HostConfiguration::new(
            values.clone(),
            std::sync::Arc::new(crate::StateHostState::new(std::sync::Arc::new(state))),
        );
        assert!(config.root_flag("flag"));
        assert_eq!(
            config.working_directories("ahp-session:/s1", None),
            ["file:///s"]
        );
        assert_eq!(
            config.working_directories("ahp-session:/s1", Some("ahp-chat:/own")),
            ["file:///c"]
        );
        assert_eq!(
            config.working_directories("ahp-session:/s1", Some("ahp-chat:/plain")),
            ["file:///s"]
        );
        assert!(
            config
                .working_directories("ahp-session:/gone", None)
                .is_empty()
        );
        values.set_session_directories("ahp-session:/s1", vec!["file:///explicit".into()]);
        assert_eq!(
            config.working_directories("ahp-session:/s1", Some("ahp-chat:/own")),
            ["file:///explicit"],
            "explicit directories win"
        );
    }
}

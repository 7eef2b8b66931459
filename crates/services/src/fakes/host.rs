//! Recording fakes: `ProviderLocator`, `TelemetryReporter`, `Configuration`, `HostState`, `ServerDispatch`.

use super::*;

/// A call to [`FakeProviderLocator`]: the session asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderCall {
    /// `provider_of(session)`.
    ProviderOf(String),
}

/// What [`FakeProviderLocator`] answers.
#[derive(Debug, Clone, Default)]
pub struct ProviderAnswers {
    /// Provider by session.
    pub providers: HashMap<String, String>,
}

fake!(
    /// Recording [`ProviderLocator`].
    FakeProviderLocator, ProviderCall, ProviderAnswers
);

impl ProviderLocator for FakeProviderLocator {
    fn provider_of(&self, session: &SessionUri) -> Option<String> {
        self.record(ProviderCall::ProviderOf(session.to_string()));
        self.answers().providers.get(session.as_str()).cloned()
    }
}

/// A call to [`FakeTelemetry`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum TelemetryCall {
    UserMessageSent(UserMessageSent),
    LocalCommand {
        session: String,
        chat: String,
        command: String,
    },
}

fake!(
    /// Recording [`TelemetryReporter`] (it has nothing to answer).
    FakeTelemetry, TelemetryCall, ()
);

impl TelemetryReporter for FakeTelemetry {
    fn user_message_sent(&self, event: &UserMessageSent) {
        self.record(TelemetryCall::UserMessageSent(event.clone()));
    }
    fn local_command(&self, session: &str, chat: &str, command: &str) {
        self.record(TelemetryCall::LocalCommand {
            session: session.into(),
            chat: chat.into(),
            command: command.into(),
        });
    }
}

/// A call to [`FakeConfiguration`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum ConfigurationCall {
    RootValue {
        key: String,
    },
    SessionValue {
        session: String,
        key: String,
    },
    WorkingDirectories {
        session: String,
        chat: Option<String>,
    },
}

/// What [`FakeConfiguration`] answers.
#[derive(Debug, Clone, Default)]
pub struct ConfigurationAnswers {
    /// Root values.
    pub root: HashMap<String, Value>,
    /// Session values by `(session, key)` (no fallback to the root: script what you need).
    pub session: HashMap<(String, String), Value>,
    /// Working directories of every session and chat.
    pub working_directories: Vec<String>,
    /// The host's roots (`None`: not configured).
    pub roots: Option<Vec<std::path::PathBuf>>,
}

fake!(
    /// Recording [`Configuration`].
    FakeConfiguration, ConfigurationCall, ConfigurationAnswers
);

impl Configuration for FakeConfiguration {
    fn root_value(&self, key: &str) -> Option<Value> {
        self.record(ConfigurationCall::RootValue { key: key.into() });
        self.answers().root.get(key).cloned()
    }
    fn session_value(&self, session: &str, key: &str) -> Option<Value> {
        self.record(ConfigurationCall::SessionValue {
            session: session.into(),
            key: key.into(),
        });
        self.answers()
            .session
            .get(&(session.to_owned(), key.to_owned()))
            .cloned()
    }
    fn working_directories(&self, session: &str, chat: Option<&str>) -> Vec<String> {
        self.record(ConfigurationCall::WorkingDirectories {
            session: session.into(),
            chat: chat.map(Into::into),
        });
        self.answers().working_directories.clone()
    }
    fn roots(&self) -> Option<Vec<std::path::PathBuf>> {
        self.answers().roots.clone()
    }
}

/// A call to [`FakeHostState`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum HostStateCall {
    Chat(String),
    Session(String),
    ChatSession(String),
    SessionChats(String),
    ChatTitle(String),
}

/// What [`FakeHostState`] answers. `chat_session`, `session_chats` and `chat_title` derive from
/// `chats` and `chat_sessions`.
#[derive(Debug, Clone, Default)]
pub struct HostStateAnswers {
    /// Chats by URI.
    pub chats: BTreeMap<String, ChatState>,
    /// Sessions by URI.
    pub sessions: BTreeMap<String, SessionState>,
    /// The owning session of each chat (an entry that is not a chat and a session URI is
    /// answered as absent).
    pub chat_sessions: BTreeMap<String, String>,
}

fake!(
    /// Recording [`HostState`].
    FakeHostState, HostStateCall, HostStateAnswers
);

impl HostState for FakeHostState {
    fn chat(&self, chat: &str) -> Option<ChatState> {
        self.record(HostStateCall::Chat(chat.into()));
        self.answers().chats.get(chat).cloned()
    }
    fn session(&self, session: &str) -> Option<SessionState> {
        self.record(HostStateCall::Session(session.into()));
        self.answers().sessions.get(session).cloned()
    }
    fn chat_session(&self, chat: &str) -> Option<SessionUri> {
        self.record(HostStateCall::ChatSession(chat.into()));
        let answers = self.answers();
        SessionUri::parse(answers.chat_sessions.get(chat)?).ok()
    }
    fn session_chats(&self, session: &str) -> Vec<ChatUri> {
        self.record(HostStateCall::SessionChats(session.into()));
        let answers = self.answers();
        answers
            .chat_sessions
            .iter()
            .filter(|(_, owner)| owner.as_str() == session)
            .filter_map(|(chat, _)| ChatUri::parse(chat).ok())
            .collect()
    }
    fn chat_title(&self, chat: &str) -> Option<String> {
        self.record(HostStateCall::ChatTitle(chat.into()));
        self.answers().chats.get(chat).map(|c| c.title.clone())
    }
}

/// A call to [`FakeServerDispatch`].
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchCall {
    /// The channel.
    pub channel: String,
    /// The action.
    pub action: StateAction,
}

/// What [`FakeServerDispatch`] answers: sequence numbers from 1, or a refusal.
#[derive(Debug, Clone, Default)]
pub struct DispatchAnswers {
    /// Refuse every dispatch with this reason.
    pub refuse: Option<String>,
    /// The last number handed out.
    pub last_seq: u64,
}

fake!(
    /// Recording [`ServerDispatch`] (nothing is reduced).
    FakeServerDispatch, DispatchCall, DispatchAnswers
);

impl ServerDispatch for FakeServerDispatch {
    fn dispatch(&self, channel: &str, action: StateAction) -> Result<u64, DispatchError> {
        self.record(DispatchCall {
            channel: channel.into(),
            action,
        });
        let mut answers = self.answers();
        if let Some(reason) = &answers.refuse {
            return Err(DispatchError {
                channel: channel.into(),
                reason: reason.clone(),
            });
        }
        answers.last_seq += 1;
        Ok(answers.last_seq)
    }
}

//! Recording fakes of every service (feature `fakes`), for contribution tests.
//!
//! Each fake records every call, in order, as a value of its `…Call` enum ([`calls`] returns
//! them), and answers from its `…Answers` struct, which a test edits with `script`:
//!
//! ```
//! use agenthost_services::fakes::{FakeLocalCommands, LocalCommandsCall};
//! use agenthost_services::{LocalCommand, LocalCommands};
//!
//! let commands = FakeLocalCommands::default();
//! commands.script(|a| a.handle = Some(LocalCommand::Rename { title: "T".into() }));
//! assert!(commands.try_handle("anything").is_some());
//! assert_eq!(commands.calls(), [LocalCommandsCall::TryHandle("anything".into())]);
//! ```
//!
//! [`CapturedLogs`] captures what `tracing` writes, for a test to assert on.
//!
//! [`calls`]: FakeLocalCommands::calls

pub use crate::changesets::fake::{ChangesetCall, FakeChangesets};
pub use crate::checkpoint_fake::{CheckpointCall, FakeCheckpoints};
pub use crate::files::fake::{FakeFileService, FileAnswers, FileCall};
pub use crate::git_state::fake::{FakeGitState, GitStateCall};
pub use crate::worktrees::fake::{FakeWorktrees, WorktreeCall};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{ChatState, Message, SessionState, UsageInfo};
use agenthost_protocol::{ChatUri, SessionUri, StateAction, ToolCallKey};
use futures::future::BoxFuture;
use serde_json::Value;

use crate::{
    ClientActionIntake, Configuration, DataError, DataFuture, DataOwner, DispatchError, Flags,
    HostState, ListenerId, LiveSubscriptions, LocalCommand, LocalCommands, ProviderLocator,
    ServerDispatch, SessionDataStore, StoredTitle, SubscriptionListener, SubscriptionTracker,
    TelemetryReporter, TitleController, TitleKind, TitleSource, TitleState, ToolCallBlock,
    ToolCallOutcome, ToolCallSnapshot, ToolCallTracker, TurnBlock, TurnCompletion, TurnSnapshot,
    TurnStage, TurnTracker, UserMessageSent,
};

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

macro_rules! fake {
    ($(#[$doc:meta])* $name:ident, $call:ty, $answers:ty) => {
        $(#[$doc])*
        #[derive(Debug, Default)]
        pub struct $name {
            calls: Mutex<Vec<$call>>,
            answers: Mutex<$answers>,
        }

        impl $name {
            /// Every call so far, in order.
            pub fn calls(&self) -> Vec<$call> {
                lock(&self.calls).clone()
            }

            /// Edits the scripted answers.
            pub fn script(&self, edit: impl FnOnce(&mut $answers)) {
                edit(&mut lock(&self.answers));
            }

            fn record(&self, call: $call) {
                lock(&self.calls).push(call);
            }

            #[allow(dead_code, reason = "a fake without answers never reads them")]
            fn answers(&self) -> std::sync::MutexGuard<'_, $answers> {
                lock(&self.answers)
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// TitleController

/// A call to [`FakeTitleController`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum TitleCall {
    SeedFromMessage {
        session: String,
        chat: String,
        text: String,
    },
    SetTitle {
        session: String,
        chat: String,
        title: String,
        kind: TitleKind,
    },
    RefineAfterFirstTurn {
        session: String,
        chat: String,
        successful: bool,
    },
    RenameInstruction {
        session: String,
        chat: String,
    },
    MarkRenamed {
        session: String,
        chat: Option<String>,
        by: TitleKind,
    },
    RenamedByUser {
        session: String,
        chat: Option<String>,
    },
    TitleState {
        chat: String,
    },
    ForgetChat {
        chat: String,
    },
    ForgetSession {
        session: String,
    },
}

/// What [`FakeTitleController`] answers. `set_title` echoes the title unless `refuse_set`.
#[derive(Debug, Clone, Default)]
pub struct TitleAnswers {
    /// Answer of `seed_from_message`.
    pub seed: Option<String>,
    /// `set_title` answers `None`.
    pub refuse_set: bool,
    /// Answer of `refine_after_first_turn`.
    pub refined: Option<String>,
    /// Answer of `rename_instruction`.
    pub rename_instruction: Option<String>,
    /// Answer of `renamed_by_user`.
    pub renamed_by_user: bool,
    /// Answer of `title_state`.
    pub state: Option<TitleState>,
}

fake!(
    /// Recording [`TitleController`].
    FakeTitleController, TitleCall, TitleAnswers
);

impl TitleController for FakeTitleController {
    fn seed_from_message(&self, session: &str, chat: &str, text: &str) -> Option<String> {
        self.record(TitleCall::SeedFromMessage {
            session: session.into(),
            chat: chat.into(),
            text: text.into(),
        });
        self.answers().seed.clone()
    }

    fn set_title(&self, session: &str, chat: &str, title: &str, kind: TitleKind) -> Option<String> {
        self.record(TitleCall::SetTitle {
            session: session.into(),
            chat: chat.into(),
            title: title.into(),
            kind,
        });
        (!self.answers().refuse_set).then(|| title.to_owned())
    }

    fn refine_after_first_turn(
        &self,
        session: &str,
        chat: &str,
        successful: bool,
    ) -> BoxFuture<'static, Option<String>> {
        self.record(TitleCall::RefineAfterFirstTurn {
            session: session.into(),
            chat: chat.into(),
            successful,
        });
        let refined = self.answers().refined.clone();
        Box::pin(async move { refined })
    }

    fn rename_instruction(&self, session: &str, chat: &str) -> Option<String> {
        self.record(TitleCall::RenameInstruction {
            session: session.into(),
            chat: chat.into(),
        });
        self.answers().rename_instruction.clone()
    }

    fn mark_renamed(&self, session: &str, chat: Option<&str>, by: TitleKind) {
        self.record(TitleCall::MarkRenamed {
            session: session.into(),
            chat: chat.map(Into::into),
            by,
        });
    }

    fn renamed_by_user(&self, session: &str, chat: Option<&str>) -> bool {
        self.record(TitleCall::RenamedByUser {
            session: session.into(),
            chat: chat.map(Into::into),
        });
        self.answers().renamed_by_user
    }

    fn title_state(&self, chat: &str) -> Option<TitleState> {
        self.record(TitleCall::TitleState { chat: chat.into() });
        self.answers().state.clone()
    }

    fn forget_chat(&self, chat: &str) {
        self.record(TitleCall::ForgetChat { chat: chat.into() });
    }

    fn forget_session(&self, session: &str) {
        self.record(TitleCall::ForgetSession {
            session: session.into(),
        });
    }
}

// ---------------------------------------------------------------------------------------------
// LocalCommands

/// A call to [`FakeLocalCommands`]: the text offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalCommandsCall {
    /// `try_handle(text)`.
    TryHandle(String),
}

/// What [`FakeLocalCommands`] answers.
#[derive(Debug, Clone, Default)]
pub struct LocalCommandsAnswers {
    /// Answer of every `try_handle`.
    pub handle: Option<LocalCommand>,
}

fake!(
    /// Recording [`LocalCommands`].
    FakeLocalCommands, LocalCommandsCall, LocalCommandsAnswers
);

impl LocalCommands for FakeLocalCommands {
    fn try_handle(&self, text: &str) -> Option<LocalCommand> {
        self.record(LocalCommandsCall::TryHandle(text.into()));
        self.answers().handle.clone()
    }
}

// ---------------------------------------------------------------------------------------------
// TurnTracker

/// A call to [`FakeTurnTracker`].
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum TurnCall {
    Started {
        chat: String,
        turn_id: String,
    },
    Stage {
        chat: String,
        turn_id: String,
        stage: TurnStage,
    },
    Blocked {
        chat: String,
        turn_id: String,
        block: TurnBlock,
    },
    Unblocked {
        chat: String,
        turn_id: String,
    },
    SteeringReceived {
        chat: String,
        turn_id: String,
    },
    Usage {
        chat: String,
        turn_id: String,
        usage: UsageInfo,
    },
    Completed {
        chat: String,
        turn_id: String,
        completion: TurnCompletion,
    },
    ClearChat {
        chat: String,
    },
    ActiveTurn {
        chat: String,
    },
}

/// What [`FakeTurnTracker`] answers.
#[derive(Debug, Clone, Default)]
pub struct TurnAnswers {
    /// Answer of `active_turn`, by chat.
    pub active: HashMap<String, TurnSnapshot>,
}

fake!(
    /// Recording [`TurnTracker`].
    FakeTurnTracker, TurnCall, TurnAnswers
);

impl TurnTracker for FakeTurnTracker {
    fn turn_started(&self, chat: &str, turn_id: &str) {
        self.record(TurnCall::Started {
            chat: chat.into(),
            turn_id: turn_id.into(),
        });
    }
    fn turn_stage(&self, chat: &str, turn_id: &str, stage: TurnStage) {
        self.record(TurnCall::Stage {
            chat: chat.into(),
            turn_id: turn_id.into(),
            stage,
        });
    }
    fn turn_blocked(&self, chat: &str, turn_id: &str, block: TurnBlock) {
        self.record(TurnCall::Blocked {
            chat: chat.into(),
            turn_id: turn_id.into(),
            block,
        });
    }
    fn turn_unblocked(&self, chat: &str, turn_id: &str) {
        self.record(TurnCall::Unblocked {
            chat: chat.into(),
            turn_id: turn_id.into(),
        });
    }
    fn steering_received(&self, chat: &str, turn_id: &str) {
        self.record(TurnCall::SteeringReceived {
            chat: chat.into(),
            turn_id: turn_id.into(),
        });
    }
    fn usage(&self, chat: &str, turn_id: &str, usage: &UsageInfo) {
        self.record(TurnCall::Usage {
            chat: chat.into(),
            turn_id: turn_id.into(),
            usage: usage.clone(),
        });
    }
    fn turn_completed(&self, chat: &str, turn_id: &str, completion: TurnCompletion) {
        self.record(TurnCall::Completed {
            chat: chat.into(),
            turn_id: turn_id.into(),
            completion,
        });
    }
    fn clear_chat(&self, chat: &str) {
        self.record(TurnCall::ClearChat { chat: chat.into() });
    }
    fn active_turn(&self, chat: &str) -> Option<TurnSnapshot> {
        self.record(TurnCall::ActiveTurn { chat: chat.into() });
        self.answers().active.get(chat).cloned()
    }
}

// ---------------------------------------------------------------------------------------------
// ToolCallTracker

/// A call to [`FakeToolCallTracker`].
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum ToolCallCall {
    Started {
        call: ToolCallKey,
        tool_name: String,
    },
    Executing {
        call: ToolCallKey,
    },
    Blocked {
        call: ToolCallKey,
        block: ToolCallBlock,
    },
    Unblocked {
        call: ToolCallKey,
    },
    Completed {
        call: ToolCallKey,
        outcome: ToolCallOutcome,
    },
    Clear {
        chat: String,
        turn_id: Option<String>,
    },
    Get {
        call: ToolCallKey,
    },
}

/// What [`FakeToolCallTracker`] answers.
#[derive(Debug, Clone, Default)]
pub struct ToolCallAnswers {
    /// Answer of `get`, by call.
    pub calls: HashMap<ToolCallKey, ToolCallSnapshot>,
}

fake!(
    /// Recording [`ToolCallTracker`].
    FakeToolCallTracker, ToolCallCall, ToolCallAnswers
);

impl ToolCallTracker for FakeToolCallTracker {
    fn started(&self, call: &ToolCallKey, tool_name: &str) {
        self.record(ToolCallCall::Started {
            call: call.clone(),
            tool_name: tool_name.into(),
        });
    }
    fn executing(&self, call: &ToolCallKey) {
        self.record(ToolCallCall::Executing { call: call.clone() });
    }
    fn blocked(&self, call: &ToolCallKey, block: ToolCallBlock) {
        self.record(ToolCallCall::Blocked {
            call: call.clone(),
            block,
        });
    }
    fn unblocked(&self, call: &ToolCallKey) {
        self.record(ToolCallCall::Unblocked { call: call.clone() });
    }
    fn completed(&self, call: &ToolCallKey, outcome: ToolCallOutcome) {
        self.record(ToolCallCall::Completed {
            call: call.clone(),
            outcome,
        });
    }
    fn clear(&self, chat: &str, turn_id: Option<&str>) {
        self.record(ToolCallCall::Clear {
            chat: chat.into(),
            turn_id: turn_id.map(Into::into),
        });
    }
    fn get(&self, call: &ToolCallKey) -> Option<ToolCallSnapshot> {
        self.record(ToolCallCall::Get { call: call.clone() });
        self.answers().calls.get(call).cloned()
    }
}

// ---------------------------------------------------------------------------------------------
// ProviderLocator, TelemetryReporter, Configuration

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

// ---------------------------------------------------------------------------------------------
// HostState, ServerDispatch

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

// ---------------------------------------------------------------------------------------------
// SessionDataStore

/// A call to [`FakeSessionData`].
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum DataCall {
    Meta {
        owner: DataOwner,
        key: String,
    },
    SetMeta {
        owner: DataOwner,
        key: String,
        value: Option<String>,
    },
    MetaEntries {
        owner: DataOwner,
    },
    SetTurnUsage {
        chat: ChatUri,
        turn_id: String,
        usage: Option<UsageInfo>,
    },
    TurnUsages {
        chat: ChatUri,
    },
    SetDelegation {
        chat: ChatUri,
        turn_id: String,
        value: Option<Value>,
    },
    Delegations {
        chat: ChatUri,
    },
    SetDraft {
        chat: ChatUri,
        draft: Option<Message>,
    },
    Draft {
        chat: ChatUri,
    },
    SetChatConfig {
        chat: ChatUri,
        config: Option<JsonObject>,
    },
    ChatConfig {
        chat: ChatUri,
    },
    SetTitle {
        owner: DataOwner,
        title: String,
        source: TitleSource,
    },
    Title {
        owner: DataOwner,
    },
    SetFlags {
        owner: DataOwner,
        flags: Flags,
    },
    Flags {
        owner: DataOwner,
    },
}

/// The fake's storage (it behaves like an empty store that accepts every owner) and its
/// scripted failure.
#[derive(Debug, Clone, Default)]
pub struct DataAnswers {
    /// Fail every call with [`DataError::Unavailable`] carrying this text.
    pub fail: Option<String>,
    /// Metadata by owner and key.
    pub meta: HashMap<DataOwner, BTreeMap<String, String>>,
    /// Turn usage by chat and turn.
    pub usage: HashMap<ChatUri, BTreeMap<String, UsageInfo>>,
    /// Delegations by chat, in the order first set.
    pub delegations: HashMap<ChatUri, Vec<(String, Value)>>,
    /// Drafts by chat.
    pub drafts: HashMap<ChatUri, Message>,
    /// Chat configuration by chat.
    pub configs: HashMap<ChatUri, JsonObject>,
    /// Titles by owner.
    pub titles: HashMap<DataOwner, StoredTitle>,
    /// Flags by owner.
    pub flags: HashMap<DataOwner, Flags>,
}

fake!(
    /// Recording, in-memory [`SessionDataStore`].
    FakeSessionData, DataCall, DataAnswers
);

impl FakeSessionData {
    fn answer<T: Send + 'static>(
        &self,
        call: DataCall,
        f: impl FnOnce(&mut DataAnswers) -> T,
    ) -> DataFuture<T> {
        self.record(call);
        let mut answers = self.answers();
        let result = match &answers.fail {
            Some(reason) => Err(DataError::Unavailable(reason.clone())),
            None => Ok(f(&mut answers)),
        };
        Box::pin(async move { result })
    }
}

fn put<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>, key: K, value: Option<V>) {
    match value {
        Some(value) => map.insert(key, value),
        None => map.remove(&key),
    };
}

impl SessionDataStore for FakeSessionData {
    fn meta(&self, owner: DataOwner, key: &str) -> DataFuture<Option<String>> {
        let call = DataCall::Meta {
            owner: owner.clone(),
            key: key.into(),
        };
        self.answer(call, |a| {
            a.meta.get(&owner).and_then(|m| m.get(key)).cloned()
        })
    }
    fn set_meta(&self, owner: DataOwner, key: &str, value: Option<String>) -> DataFuture<()> {
        let call = DataCall::SetMeta {
            owner: owner.clone(),
            key: key.into(),
            value: value.clone(),
        };
        self.answer(call, |a| {
            let entries = a.meta.entry(owner).or_default();
            match value {
                Some(value) => entries.insert(key.to_owned(), value),
                None => entries.remove(key),
            };
        })
    }
    fn meta_entries(&self, owner: DataOwner) -> DataFuture<Vec<(String, String)>> {
        let call = DataCall::MetaEntries {
            owner: owner.clone(),
        };
        self.answer(call, |a| {
            a.meta
                .get(&owner)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default()
        })
    }
    fn set_turn_usage(
        &self,
        chat: ChatUri,
        turn_id: &str,
        usage: Option<UsageInfo>,
    ) -> DataFuture<()> {
        let call = DataCall::SetTurnUsage {
            chat: chat.clone(),
            turn_id: turn_id.into(),
            usage: usage.clone(),
        };
        self.answer(call, |a| {
            let entries = a.usage.entry(chat).or_default();
            match usage {
                Some(usage) => entries.insert(turn_id.to_owned(), usage),
                None => entries.remove(turn_id),
            };
        })
    }
    fn turn_usages(&self, chat: ChatUri) -> DataFuture<Vec<(String, UsageInfo)>> {
        let call = DataCall::TurnUsages { chat: chat.clone() };
        self.answer(call, |a| {
            a.usage
                .get(&chat)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default()
        })
    }
    fn set_delegation(&self, chat: ChatUri, turn_id: &str, value: Option<Value>) -> DataFuture<()> {
        let call = DataCall::SetDelegation {
            chat: chat.clone(),
            turn_id: turn_id.into(),
            value: value.clone(),
        };
        self.answer(call, |a| {
            let entries = a.delegations.entry(chat).or_default();
            match (entries.iter_mut().find(|(t, _)| t == turn_id), value) {
                (Some(entry), Some(value)) => entry.1 = value,
                (None, Some(value)) => entries.push((turn_id.to_owned(), value)),
                (_, None) => entries.retain(|(t, _)| t != turn_id),
            }
        })
    }
    fn delegations(&self, chat: ChatUri) -> DataFuture<Vec<(String, Value)>> {
        let call = DataCall::Delegations { chat: chat.clone() };
        self.answer(call, |a| {
            a.delegations.get(&chat).cloned().unwrap_or_default()
        })
    }
    fn set_draft(&self, chat: ChatUri, draft: Option<Message>) -> DataFuture<()> {
        let call = DataCall::SetDraft {
            chat: chat.clone(),
            draft: draft.clone(),
        };
        self.answer(call, |a| put(&mut a.drafts, chat, draft))
    }
    fn draft(&self, chat: ChatUri) -> DataFuture<Option<Message>> {
        let call = DataCall::Draft { chat: chat.clone() };
        self.answer(call, |a| a.drafts.get(&chat).cloned())
    }
    fn set_chat_config(&self, chat: ChatUri, config: Option<JsonObject>) -> DataFuture<()> {
        let call = DataCall::SetChatConfig {
            chat: chat.clone(),
            config: config.clone(),
        };
        self.answer(call, |a| put(&mut a.configs, chat, config))
    }
    fn chat_config(&self, chat: ChatUri) -> DataFuture<Option<JsonObject>> {
        let call = DataCall::ChatConfig { chat: chat.clone() };
        self.answer(call, |a| a.configs.get(&chat).cloned())
    }
    fn set_title(&self, owner: DataOwner, title: &str, source: TitleSource) -> DataFuture<()> {
        let call = DataCall::SetTitle {
            owner: owner.clone(),
            title: title.into(),
            source,
        };
        let stored = StoredTitle {
            title: title.into(),
            source,
        };
        self.answer(call, |a| put(&mut a.titles, owner, Some(stored)))
    }
    fn title(&self, owner: DataOwner) -> DataFuture<Option<StoredTitle>> {
        let call = DataCall::Title {
            owner: owner.clone(),
        };
        self.answer(call, |a| a.titles.get(&owner).cloned())
    }
    fn set_flags(&self, owner: DataOwner, flags: Flags) -> DataFuture<()> {
        let call = DataCall::SetFlags {
            owner: owner.clone(),
            flags,
        };
        self.answer(call, |a| put(&mut a.flags, owner, Some(flags)))
    }
    fn flags(&self, owner: DataOwner) -> DataFuture<Option<Flags>> {
        let call = DataCall::Flags {
            owner: owner.clone(),
        };
        self.answer(call, |a| a.flags.get(&owner).copied())
    }
}

// ---------------------------------------------------------------------------------------------
// ClientActionIntake, SubscriptionTracker

/// A call to [`FakeClientActionIntake`].
#[derive(Debug, Clone, PartialEq)]
pub struct IntakeCall {
    /// The client the action was submitted as.
    pub client_id: String,
    /// The channel.
    pub channel: String,
    /// The action.
    pub action: StateAction,
}

/// What [`FakeClientActionIntake`] answers: sequence numbers from 1, or a refusal.
#[derive(Debug, Clone, Default)]
pub struct IntakeAnswers {
    /// Refuse every submission with this reason.
    pub refuse: Option<String>,
    /// The last number handed out.
    pub last_seq: u64,
}

fake!(
    /// Recording [`ClientActionIntake`] (nothing is reduced, nothing reaches an agent).
    FakeClientActionIntake, IntakeCall, IntakeAnswers
);

impl ClientActionIntake for FakeClientActionIntake {
    fn submit(
        &self,
        client_id: &str,
        channel: &str,
        action: StateAction,
    ) -> BoxFuture<'static, Result<u64, DispatchError>> {
        self.record(IntakeCall {
            client_id: client_id.into(),
            channel: channel.into(),
            action,
        });
        let mut answers = self.answers();
        let outcome = match &answers.refuse {
            Some(reason) => Err(DispatchError {
                channel: channel.into(),
                reason: reason.clone(),
            }),
            None => {
                answers.last_seq += 1;
                Ok(answers.last_seq)
            }
        };
        Box::pin(std::future::ready(outcome))
    }
}

/// A call to [`FakeSubscriptionTracker`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum SubscriptionCall {
    Subscribed {
        connection: String,
        channel: String,
    },
    Unsubscribed {
        connection: String,
        channel: String,
    },
    Disconnected(String),
    Identified {
        connection: String,
        client_id: String,
    },
    Subscribers(String),
    Listen,
    Unlisten(ListenerId),
}

/// What [`FakeSubscriptionTracker`] answers from: the live set it was told about.
#[derive(Debug, Clone, Default)]
pub struct SubscriptionAnswers {
    /// The subscriptions and listeners (a test may also report to it directly).
    pub live: Arc<LiveSubscriptions>,
}

fake!(
    /// Recording [`SubscriptionTracker`] that otherwise behaves like [`LiveSubscriptions`]
    /// (queries answer from what was reported, listeners are told): a test drives it as the
    /// server would.
    FakeSubscriptionTracker, SubscriptionCall, SubscriptionAnswers
);

impl FakeSubscriptionTracker {
    /// The live set, taken out of the answers so that no lock is held while listeners run.
    fn live(&self) -> Arc<LiveSubscriptions> {
        Arc::clone(&self.answers().live)
    }
}

impl SubscriptionTracker for FakeSubscriptionTracker {
    fn subscribed(&self, connection: &str, channel: &str) {
        self.record(SubscriptionCall::Subscribed {
            connection: connection.into(),
            channel: channel.into(),
        });
        self.live().subscribed(connection, channel);
    }
    fn unsubscribed(&self, connection: &str, channel: &str) {
        self.record(SubscriptionCall::Unsubscribed {
            connection: connection.into(),
            channel: channel.into(),
        });
        self.live().unsubscribed(connection, channel);
    }
    fn disconnected(&self, connection: &str) {
        self.record(SubscriptionCall::Disconnected(connection.into()));
        self.live().disconnected(connection);
    }
    fn identified(&self, connection: &str, client_id: &str) {
        self.record(SubscriptionCall::Identified {
            connection: connection.into(),
            client_id: client_id.into(),
        });
        self.live().identified(connection, client_id);
    }
    fn client_of(&self, connection: &str) -> Option<String> {
        self.live().client_of(connection)
    }
    fn subscribers(&self, channel: &str) -> Vec<String> {
        self.record(SubscriptionCall::Subscribers(channel.into()));
        self.live().subscribers(channel)
    }
    fn listen(&self, listener: Arc<dyn SubscriptionListener>) -> ListenerId {
        self.record(SubscriptionCall::Listen);
        self.live().listen(listener)
    }
    fn unlisten(&self, id: ListenerId) {
        self.record(SubscriptionCall::Unlisten(id));
        self.live().unlisten(id);
    }
}

#[cfg(test)]
#[path = "fakes_tests.rs"]
mod tests;

/// [`crate::AuditLog`] keeping every entry in memory.
#[derive(Debug, Default)]
pub struct FakeAuditLog {
    /// The entries recorded, in order.
    pub entries: Mutex<Vec<agenthost_protocol::AuditRecord>>,
}

impl crate::AuditLog for FakeAuditLog {
    fn record(&self, entry: agenthost_protocol::AuditRecord) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(entry);
    }
}

//! [`SessionService`]: the lifecycle commands.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use agenthost_checkpoint::CheckpointService;
use agenthost_dispatcher::{Dispatcher, HydrationContext, RestoredChat};
use agenthost_protocol::actions::{
    SessionChatRemovedAction, SessionDefaultChatChangedAction, SessionReadyAction,
};
use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{
    AgentInfo, ChatOrigin, RootState, SessionChatSummary, SessionConfigState, SessionLifecycle,
    SessionState, SessionStatus, SessionSummary,
};
use agenthost_protocol::commands::{
    ChatSource, CreateChatParams, CreateSessionParams, ListSessionsResult,
};
use agenthost_protocol::uri::{file_uri_to_path, path_to_file_uri};
use agenthost_protocol::{ActionOrigin, Channel, ChatUri, SessionUri, StateAction};
use agenthost_reducers::projection::aggregate_session_status;
use agenthost_reducers::states::empty_chat;
use agenthost_services::now_iso;
use agenthost_services::paging::{CatalogCursor, PageError, cut_page, page_limit, sort_catalog};
use agenthost_services::sandbox::{PathUse, Sandbox, client_paths, message_paths};
use agenthost_services::{
    CREATION_META_KEY, ChangesetError, ChangesetService, IsolatedSession, IsolationRequestError,
    MAX_CREATION_META_BYTES, SESSION_CONFIG_KEY, WORKTREE_META_KEY, WorktreeIsolation,
    capture_baseline_in_background, show_isolation,
};
use agenthost_state::{ClientDispatch, StateConfig, StateManager};
use agenthost_store::{MetaOwner, SessionRecord, Store};

use crate::error::ServiceError;

mod listing;
mod restore;
use agenthost_services::ResumeHandles;
use agenthost_services_store::persistence::{
    StoreReservation, TurnRecorder, chat_record, restored_chat, restored_session, session_record,
    spend_meta, spend_report, stored_chat_summary,
};

/// What the session service is built with. The checkpoint, changeset and worktree-isolation
/// services come from the dispatcher's registry, when it has them.
#[derive(Debug, Clone, Default)]
pub struct ServiceConfig {
    /// The directories sessions and working directories must lie in (the first is the default
    /// working directory). Compared after resolving symlinks.
    pub roots: Vec<PathBuf>,
    /// The session configuration every session gets: schema and default values. A new session
    /// takes the client's `config` values for every property of the schema, a restored one its
    /// persisted values for the properties the schema marks session-mutable, over the defaults.
    pub session_config: Option<SessionConfigState>,
    /// Where finished turns read the agent's resume handle from (the orchestrator).
    pub resume_handles: Option<Arc<dyn ResumeHandles>>,
    /// The number of kept chat-history writes past which new turns are refused (`None`:
    /// [`agenthost_store::DEFAULT_BACKLOG_LIMIT`]).
    pub history_limit: Option<usize>,
}

/// The root state advertising `agents`, each with side chats.
pub fn root_state(mut agents: Vec<AgentInfo>) -> RootState {
    agenthost_services::advertise_side_chats(&mut agents);
    RootState {
        agents,
        active_sessions: Some(0),
        terminals: None,
        config: None,
        meta: None,
    }
}

/// A state manager whose `serverSeq` continues above the store's high-water mark and keeps it
/// raised, so numbers never go backwards across restarts.
pub fn state_for(store: &Store, root: RootState) -> Result<Arc<StateManager>, ServiceError> {
    let first_server_seq = store.server_seq_high_water()?;
    let config = StateConfig {
        first_server_seq,
        ..StateConfig::default()
    };
    Ok(Arc::new(StateManager::with_reservation(
        root,
        config,
        Some(Arc::new(StoreReservation(store.clone()))),
    )))
}

/// The lifecycle commands over the state manager and the store.
pub struct SessionService {
    state: Arc<StateManager>,
    dispatcher: Dispatcher,
    store: Store,
    sandbox: Sandbox,
    recorder: Arc<TurnRecorder>,
    checkpoints: Option<Arc<dyn CheckpointService>>,
    changesets: Option<Arc<dyn ChangesetService>>,
    worktrees: Option<Arc<dyn WorktreeIsolation>>,
    session_config: Option<SessionConfigState>,
    /// URIs of sessions whose creation is waiting for their worktrees.
    creating: std::sync::Mutex<std::collections::HashSet<String>>,
    /// What `onHydrateChat` returned for the chats of each restored session that are not live
    /// yet, by session and chat: taken when the chat is restored.
    hydrated: std::sync::Mutex<HashMap<String, HashMap<String, RestoredChat>>>,
}

impl std::fmt::Debug for SessionService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionService")
            .field("roots", &self.sandbox.roots())
            .finish_non_exhaustive()
    }
}

impl SessionService {
    /// A service over `state` persisting to `store`. Roots that do not exist are an error: the
    /// host could never place a session in them. Completed turns are written to the store from
    /// now on.
    pub fn new(
        state: Arc<StateManager>,
        dispatcher: Dispatcher,
        store: Store,
        config: ServiceConfig,
    ) -> Result<Self, ServiceError> {
        let sandbox = Sandbox::new(config.roots)
            .map_err(|error| ServiceError::InvalidParams(format!("root {error}")))?;
        if sandbox.is_empty() {
            return Err(ServiceError::InvalidParams(
                "at least one root is needed".into(),
            ));
        }
        let recorder = Arc::new(TurnRecorder::new(
            store.clone(),
            config
                .history_limit
                .unwrap_or(agenthost_store::DEFAULT_BACKLOG_LIMIT),
            config.resume_handles,
        ));
        let services = dispatcher.services();
        let checkpoints = services.get::<dyn CheckpointService>().ok();
        let changesets = services.get::<dyn ChangesetService>().ok();
        let worktrees = services.get::<dyn WorktreeIsolation>().ok();
        state.add_commit_hook(recorder.clone());
        Ok(Self {
            state,
            dispatcher,
            store,
            sandbox,
            recorder,
            checkpoints,
            changesets,
            worktrees,
            session_config: config.session_config,
            creating: std::sync::Mutex::new(std::collections::HashSet::new()),
            hydrated: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// The session configuration every session gets, when one is set.
    pub fn session_config(&self) -> Option<&SessionConfigState> {
        self.session_config.as_ref()
    }

    /// The session configuration with `values` over the defaults (at creation, any property of
    /// the schema; else session-mutable ones only); `None` without a schema.
    fn session_config_with(
        &self,
        values: Option<&JsonObject>,
        creating: bool,
    ) -> Option<SessionConfigState> {
        let base = self.session_config.as_ref()?;
        Some(agenthost_services::session_config_with(
            base, values, creating,
        ))
    }

    /// The host's roots (canonical): every path a client names must lie inside one.
    pub fn roots(&self) -> &[PathBuf] {
        self.sandbox.roots()
    }

    /// The check every client-supplied path goes through (the roots; a session's worktrees are
    /// added by the caller that knows the session).
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The checkpoint service, when one is set (the host's `x-checkpoint/*` commands use it).
    pub fn checkpoints(&self) -> Option<Arc<dyn CheckpointService>> {
        self.checkpoints.clone()
    }

    /// The first root as a `file://` URI (`InitializeResult.defaultDirectory`).
    pub fn default_directory(&self) -> Option<String> {
        self.sandbox
            .roots()
            .first()
            .and_then(|r| path_to_file_uri(r).ok())
    }

    /// Checks that a working directory exists inside a root; returns its canonical URI.
    fn check_directory(&self, uri: &str) -> Result<String, ServiceError> {
        let canonical = self.sandbox.check(uri, PathUse::Directory, &[])?;
        Ok(path_to_file_uri(&canonical)?)
    }

    /// The folders a client may name in `channel`'s session beyond the roots: the session's
    /// own linked worktrees (they live next to their repository, maybe outside every root).
    fn session_worktrees(&self, channel: &str) -> Vec<PathBuf> {
        self.state
            .read(|h| h.owning_session(channel).cloned())
            .and_then(|session| agenthost_services_store::stored_isolation(&self.store, &session))
            .map(|record| record.existing_folders())
            .unwrap_or_default()
    }

    /// `createSession` (AHP §9.1): the session with its default chat at VS Code's derived URI,
    /// stored, then `session/ready`. Returns the summary for `root/sessionAdded`. A URI the store
    /// knows — even a disposed session — is taken. With `config.isolation: "worktree"` the
    /// session works in new linked worktrees of its repositories (see
    /// [`Self::set_worktrees`]); a folder that cannot be isolated fails the creation and leaves
    /// nothing behind.
    pub async fn create_session(
        &self,
        params: CreateSessionParams,
        client_id: &str,
    ) -> Result<SessionSummary, ServiceError> {
        let uri = SessionUri::parse(&params.channel)?;
        // Keyed by id: two spellings of one id are one session.
        if !self.creating().insert(uri.id().to_string()) {
            return Err(ServiceError::SessionAlreadyExists(uri.to_string()));
        }
        let created = self.create_reserved(&uri, params, client_id).await;
        self.creating().remove(uri.id().as_str());
        created
    }

    /// The URIs of sessions being created (a poisoned lock holds a consistent set).
    fn creating(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.creating.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn create_reserved(
        &self,
        uri: &SessionUri,
        params: CreateSessionParams,
        client_id: &str,
    ) -> Result<SessionSummary, ServiceError> {
        let agents = self.state.read(|h| h.root().agents.clone());
        let provider = params
            .provider
            .clone()
            .or_else(|| uri.provider_scheme().map(str::to_owned))
            .or_else(|| (agents.len() == 1).then(|| agents[0].provider.clone()))
            .unwrap_or_default();
        if !agents.iter().any(|a| a.provider == provider) {
            let offered: Vec<&str> = agents.iter().map(|a| a.provider.as_str()).collect();
            return Err(ServiceError::ProviderNotFound {
                provider,
                offered: offered.join(", "),
            });
        }
        if self.state.snapshot(uri.as_str()).is_some() || self.store.session(uri)?.is_some() {
            return Err(ServiceError::SessionAlreadyExists(uri.to_string()));
        }
        if let Some(existing) = self
            .spellings_of(uri)
            .into_iter()
            .find(|other| self.session_provider(other).is_some())
        {
            return Err(ServiceError::SessionAlreadyExists(format!(
                "{uri} (the session {existing} has that id)"
            )));
        }
        let directories = match &params.working_directories {
            Some(dirs) if !dirs.is_empty() => dirs
                .iter()
                .map(|d| self.check_directory(d))
                .collect::<Result<Vec<_>, _>>()?,
            _ => self.default_directory().into_iter().collect(),
        };
        if let Some(client) = &params.active_client
            && client.client_id != client_id
        {
            return Err(ServiceError::InvalidParams(format!(
                "activeClient.clientId {:?} is not this connection's client id {client_id:?}",
                client.client_id
            )));
        }
        let isolated = agenthost_services::isolate_as_requested(
            self.worktrees.as_deref(),
            uri,
            params.config.as_ref(),
            &directories,
        )
        .await
        .map_err(|error| match error {
            IsolationRequestError::Refused(why) => ServiceError::InvalidParams(why),
            IsolationRequestError::Record(why) => ServiceError::Store(why),
        })?;
        let directories = isolated
            .as_ref()
            .map_or(directories, |record| record.directories.clone());
        let stored = self
            .store_new_session(uri, params, provider, &directories, isolated.as_ref())
            .await;
        if let (Err(_), Some(record), Some(worktrees)) =
            (&stored, &isolated, self.worktrees.as_ref())
        {
            worktrees.release(record).await;
        }
        stored?;
        let default_chat = ChatUri::default_for(uri);
        let now = now_iso();
        if let Some(checkpoints) = &self.checkpoints {
            capture_baseline_in_background(Arc::clone(checkpoints), uri, &directories);
        }
        self.add_chat(uri, &default_chat, &now, None, None)?;
        self.dispatch(
            uri.as_str(),
            StateAction::SessionDefaultChatChanged(SessionDefaultChatChangedAction {
                default_chat: Some(default_chat.to_string()),
            }),
        );
        self.dispatch(
            uri.as_str(),
            StateAction::SessionReady(SessionReadyAction {}),
        );
        self.summary(uri)
            .ok_or_else(|| ServiceError::SessionNotFound(uri.to_string()))
    }

    /// Stores the new session (and its isolation record) and makes it live; on an error nothing
    /// of it is left in the store or the state.
    async fn store_new_session(
        &self,
        uri: &SessionUri,
        params: CreateSessionParams,
        provider: String,
        directories: &[String],
        isolated: Option<&IsolatedSession>,
    ) -> Result<(), ServiceError> {
        let now = now_iso();
        let default_chat = ChatUri::default_for(uri);
        let creation_meta = params.meta.clone();
        let session = SessionState {
            provider,
            title: "New session".to_owned(),
            status: SessionStatus::Idle.bits(),
            activity: None,
            origin: None,
            project: None,
            working_directories: Some(directories.to_vec()),
            annotations: None,
            lifecycle: SessionLifecycle::Creating,
            creation_error: None,
            server_tools: None,
            active_clients: params.active_client.into_iter().collect(),
            chats: Vec::new(),
            default_chat: Some(default_chat.to_string()),
            config: self.session_config_with(params.config.as_ref(), true),
            customizations: None,
            changesets: self.changesets.as_ref().map(|c| c.catalog(uri)),
            input_needed: None,
            meta: None,
        };
        self.store
            .put_session(&session_record(uri, &session, &now))?;
        self.keep_creation_meta(uri, creation_meta.as_ref());
        if let (Some(record), Some(worktrees)) = (isolated, self.worktrees.as_ref())
            && let Err(error) = worktrees.record(uri, record).await
        {
            let _ = self.store.delete_session(uri);
            return Err(ServiceError::Store(error.to_string()));
        }
        if self
            .state
            .insert_session(
                uri,
                SessionState {
                    default_chat: None,
                    ..session
                },
            )
            .is_err()
        {
            let _ = self.store.delete_session(uri);
            return Err(ServiceError::SessionAlreadyExists(uri.to_string()));
        }
        Ok(())
    }

    /// Keeps the client's `createSession` `_meta` as session metadata ([`CREATION_META_KEY`])
    /// for the contributions that read it; one too large is left out (logged).
    fn keep_creation_meta(&self, uri: &SessionUri, meta: Option<&JsonObject>) {
        let Some(json) = meta.and_then(|meta| serde_json::to_string(meta).ok()) else {
            return;
        };
        if json.len() > MAX_CREATION_META_BYTES {
            tracing::info!(session = %uri, bytes = json.len(), "createSession _meta not kept: too large");
            return;
        }
        if let Err(error) =
            self.store
                .set_meta(MetaOwner::Session(uri), CREATION_META_KEY, Some(&json))
        {
            tracing::warn!(session = %uri, %error, "createSession _meta not kept");
        }
    }

    fn add_chat(
        &self,
        session: &SessionUri,
        chat: &ChatUri,
        now: &str,
        origin: Option<ChatOrigin>,
        directories: Option<Vec<String>>,
    ) -> Result<(), ServiceError> {
        let mut state = empty_chat(chat.as_str(), "New chat", now, origin);
        state.working_directories = directories;
        let position = self
            .state
            .read(|h| h.session_chats(session.as_str()).count());
        let position = i64::try_from(position).unwrap_or(i64::MAX);
        self.store
            .put_chat(&chat_record(session, chat, &state, position))?;
        let added = agenthost_reducers::server_actions::chat_added(&state);
        self.state
            .insert_chat(session, chat, state)
            .map_err(|_| ServiceError::ChatAlreadyExists(chat.to_string()))?;
        self.dispatch(session.as_str(), added);
        Ok(())
    }

    fn dispatch(&self, channel: &str, action: StateAction) {
        if let Err(error) = self.state.dispatch_server(channel, action) {
            tracing::warn!(channel, %error, "lifecycle action not applied");
        }
    }

    /// `createChat` (AHP §9.2): a new chat in the session, stored and announced before the
    /// reply. A side chat records its source in its origin (its agent conversation starts
    /// fresh; the `sideChat` contribution gives its first message the source's context);
    /// forks are refused: no agent of this host can copy a conversation. Like a client's
    /// `chat/turnStarted`, an `initialMessage` must be a user message.
    /// Returns the new chat's URI.
    pub async fn create_chat(&self, params: &CreateChatParams) -> Result<ChatUri, ServiceError> {
        if let Some(message) = &params.initial_message
            && message.origin.kind != agenthost_protocol::ahp_types::state::MessageKind::User
        {
            return Err(ServiceError::InvalidParams(
                "initialMessage: clients may only send user messages".into(),
            ));
        }
        let session = SessionUri::parse(&params.channel)?;
        self.ensure_session(&session).await?;
        let chat = ChatUri::parse_client_named(&params.chat, &session)?;
        let origin = match &params.source {
            None => None,
            Some(source) => Some(self.side_chat_origin(&session, source).await?),
        };
        let directories = self.chat_directories(&session, params)?;
        if self.state.snapshot(chat.as_str()).is_some() || self.store.chat(&chat)?.is_some() {
            return Err(ServiceError::ChatAlreadyExists(chat.to_string()));
        }
        self.add_chat(&session, &chat, &now_iso(), origin, directories)?;
        Ok(chat)
    }

    /// `createChat`'s paths: its `workingDirectories` (a subset of the session's, each passing
    /// the sandbox) and its initial message's attachments.
    fn chat_directories(
        &self,
        session: &SessionUri,
        params: &CreateChatParams,
    ) -> Result<Option<Vec<String>>, ServiceError> {
        let extra = self.session_worktrees(session.as_str());
        for path in params.initial_message.iter().flat_map(message_paths) {
            self.sandbox.check(path.uri, path.used_as, &extra)?;
        }
        let Some(directories) = params.working_directories.clone() else {
            return Ok(None);
        };
        let of_session = self.state.read(|h| {
            h.session(session.as_str())
                .and_then(|s| s.working_directories.clone())
                .unwrap_or_default()
        });
        for directory in &directories {
            self.sandbox.check(directory, PathUse::Directory, &extra)?;
            if !of_session.contains(directory) {
                return Err(ServiceError::InvalidParams(format!(
                    "workingDirectories: {} is not a working directory of {session}",
                    agenthost_protocol::uri::snippet(directory)
                )));
            }
        }
        Ok(Some(directories))
    }

    /// The origin of a side chat: its source chat must be a chat of `session` and the turn its
    /// active turn or one of its turns.
    async fn side_chat_origin(
        &self,
        session: &SessionUri,
        source: &ChatSource,
    ) -> Result<ChatOrigin, ServiceError> {
        let ChatSource::SideChat(side) = source else {
            return Err(ServiceError::InvalidParams(
                "forks are not supported by this host's agents (a side chat is)".into(),
            ));
        };
        let invalid = |what: String| Err(ServiceError::InvalidParams(what));
        let restored = match ChatUri::parse(&side.chat) {
            Ok(chat) => self.ensure_chat(&chat).await.is_ok(),
            Err(_) => false,
        };
        if !restored
            || !self
                .state
                .read(|h| h.chat_session(&side.chat) == Some(session))
        {
            return invalid(format!(
                "side chat source {} is not a chat of {session}",
                side.chat
            ));
        }
        let has_turn = self.state.read(|h| {
            h.chat(&side.chat).is_some_and(|c| {
                c.active_turn.as_ref().is_some_and(|t| t.id == side.turn_id)
                    || c.turns.iter().any(|t| t.id == side.turn_id)
            })
        });
        if !has_turn {
            return invalid(format!(
                "side chat source {} has no turn {:?}",
                side.chat, side.turn_id
            ));
        }
        Ok(ChatOrigin::SideChat {
            chat: side.chat.clone(),
            turn_id: side.turn_id.clone(),
            selection: side.selection.clone(),
        })
    }

    /// A chat's `initialMessage` (AHP §9.2): starts its first turn, as the host, with the
    /// client's user message ([`Self::create_chat`] accepted only a user message); returns the
    /// turn id for the turn starter.
    pub fn start_initial_turn(
        &self,
        chat: &str,
        message: &agenthost_protocol::ahp_types::state::Message,
    ) -> Result<String, ServiceError> {
        let turn_id = "initial".to_owned();
        let action =
            StateAction::ChatTurnStarted(agenthost_protocol::actions::ChatTurnStartedAction {
                turn_id: turn_id.clone(),
                started_at: now_iso(),
                message: message.clone(),
                queued_message_id: None,
                meta: None,
            });
        self.state
            .dispatch_server(chat, action)
            .map_err(|e| ServiceError::InvalidParams(format!("initialMessage: {e}")))?;
        Ok(turn_id)
    }

    /// `disposeChat`: removes the chat from the catalog, the state and the store (an explicit
    /// removal by the client); returns its session. The caller then disposes the chat's provider
    /// conversation and mementos.
    pub async fn dispose_chat(&self, chat: &ChatUri) -> Result<SessionUri, ServiceError> {
        self.ensure_chat(chat).await?;
        let session = self
            .state
            .read(|h| h.chat_session(chat).cloned())
            .ok_or_else(|| ServiceError::ChatNotFound(chat.to_string()))?;
        self.dispatch(
            &session,
            StateAction::SessionChatRemoved(SessionChatRemovedAction {
                chat: chat.to_string(),
            }),
        );
        self.state.remove_chat(chat);
        self.store.delete_chat(chat)?;
        Ok(session)
    }

    /// `disposeSession`: frees the session's live state and never its history — VS Code disposes
    /// sessions it still shows. The session stays listed and is restored on its next use.
    /// Returns the chats whose provider conversations and mementos the caller disposes.
    ///
    /// A session some connection still watches (subscribed to it or to one of its chats) stays
    /// live as it is: dropping it would silently end those subscriptions, and the watcher's next
    /// turn would run unseen. Idle eviction frees it once nobody watches.
    pub fn dispose_session(&self, session: &SessionUri) -> Result<Vec<String>, ServiceError> {
        if self.is_watched(session) {
            return Ok(Vec::new());
        }
        if let Some(changesets) = self.changesets.as_ref() {
            changesets.forget_session(session);
        }
        self.hydrated_chats().remove(session.as_str());
        match self.state.remove_session(session) {
            Some((_, chats)) => Ok(chats.into_iter().map(|c| c.resource).collect()),
            None if self.store.session(session)?.is_some() => Ok(Vec::new()),
            None => Err(ServiceError::SessionNotFound(session.to_string())),
        }
    }

    /// Live sessions nobody watches and nothing runs in: no subscriber on the session or any of
    /// its chats, no active turn, no chat-history write still kept for the store. Evicting them
    /// ([`dispose_session`](Self::dispose_session)) keeps them restorable.
    pub fn idle_sessions(&self) -> Vec<String> {
        let kept = self.recorder.writer.kept_chats();
        let sessions: Vec<(String, bool)> = self.state.read(|h| {
            h.session_uris()
                .map(|session| {
                    let busy = h
                        .session_chats(session)
                        .any(|(_, c)| c.active_turn.is_some())
                        || kept
                            .iter()
                            .any(|chat| h.chat_session(chat.as_str()) == Some(session));
                    (session.to_string(), busy)
                })
                .collect()
        });
        sessions
            .into_iter()
            .filter(|(session, busy)| !busy && !self.is_watched(session))
            .map(|(session, _)| session)
            .collect()
    }

    /// Whether a connection is subscribed to the live session `session` or to one of its chats.
    pub fn is_watched(&self, session: &str) -> bool {
        let chats: Vec<String> = self.state.read(|h| {
            h.session_chats(session)
                .map(|(c, _)| c.to_string())
                .collect()
        });
        self.state.subscriber_count(session) > 0
            || chats
                .iter()
                .any(|chat| self.state.subscriber_count(chat) > 0)
    }

    /// `x-deleteSession`: removes the session, its chats, its history and its checkpoint refs
    /// for good. Returns the live chats to dispose; the caller announces `root/sessionRemoved`.
    pub async fn delete_session(&self, session: &SessionUri) -> Result<Vec<String>, ServiceError> {
        let directories = match self.store.session(session)? {
            Some(record) => record.working_directories,
            None => self
                .state
                .read(|h| {
                    h.session(session)
                        .and_then(|s| s.working_directories.clone())
                })
                .unwrap_or_default(),
        };
        if let Some(changesets) = self.changesets.as_ref() {
            changesets.forget_session(session);
        }
        // Read before the session's metadata goes with it.
        let isolated = match self.worktrees.as_ref() {
            Some(worktrees) => worktrees.isolation(session).await,
            None => None,
        };
        let live = self.state.remove_session(session);
        self.hydrated_chats().remove(session.as_str());
        let stored = self.store.delete_session(session)?;
        if live.is_none() && !stored {
            return Err(ServiceError::SessionNotFound(session.to_string()));
        }
        if let Some(checkpoints) = self.checkpoints.as_ref() {
            let dirs: Vec<PathBuf> = directories
                .iter()
                .filter_map(|d| file_uri_to_path(d).ok())
                .collect();
            checkpoints.delete_all(session, &dirs).await;
        }
        if let (Some(record), Some(worktrees)) = (&isolated, self.worktrees.as_ref()) {
            worktrees.release(record).await;
        }
        Ok(live
            .map(|(_, chats)| chats.into_iter().map(|c| c.resource).collect())
            .unwrap_or_default())
    }

    /// `fetchTurns`: restores the chat if needed; a restored chat holds its whole stored history,
    /// so there is nothing older to load afterwards.
    pub async fn fetch_turns(&self, chat: &ChatUri) -> Result<(), ServiceError> {
        self.ensure_chat(chat).await
    }

    /// Client-action intake (AHP §6.1): validate and reduce, or produce the rejection echo. A
    /// new turn is refused, with the cause, while the chat history the store refused has
    /// reached its limit (more turns would only grow what is kept in memory).
    pub fn intake(
        &self,
        channel: &str,
        action: StateAction,
        origin: ActionOrigin,
    ) -> ClientDispatch {
        let mut action = action;
        let refusal = if client_paths(&action).is_empty() {
            None
        } else {
            let extra = self.session_worktrees(channel);
            let admitted = self.sandbox.admit_action(&mut action, &extra);
            admitted.err().map(|refusal| refusal.to_string())
        };
        let refusal = refusal.or_else(|| {
            matches!(action, StateAction::ChatTurnStarted(_))
                .then(|| self.recorder.writer.refusal())
                .flatten()
        });
        if let Some(reason) = refusal {
            return match self.state.reject_client(channel, action, origin, &reason) {
                Some(echo) => ClientDispatch::Rejected(Box::new(echo)),
                None => ClientDispatch::Ignored,
            };
        }
        self.state.dispatch_client(channel, action, origin)
    }

    /// Writes the chat history the store refused so far (a graceful stop calls it last);
    /// returns how many writes are still kept (logged when not zero).
    pub fn flush_history(&self) -> usize {
        let kept = self.recorder.retry(&self.state);
        if kept > 0 {
            tracing::error!(
                kept,
                "stopping with chat history the session database did not take; it is lost"
            );
        }
        kept
    }

    /// Tries kept chat-history writes again every `every`, outside the state lock, in a task
    /// on the current runtime for as long as the service lives (without it, a chat's kept
    /// writes are tried when it has a new one, and a graceful stop's
    /// [`flush_history`](Self::flush_history) tries all).
    pub fn spawn_history_retries(self: &Arc<Self>, every: std::time::Duration) {
        agenthost_services::periodic::every(Arc::downgrade(self), every, |service: Arc<Self>| {
            service.recorder.retry(&service.state);
            std::future::ready(())
        });
    }

    /// How many chat-history writes are kept now, and the most ever kept at once.
    pub fn history_backlog(&self) -> (usize, usize) {
        (self.recorder.writer.pending(), self.recorder.writer.peak())
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;

//! [`SessionService`]: the lifecycle commands.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_dispatcher::{Dispatcher, HydrationContext, RestoredChat};
use agenthost_protocol::actions::{
    SessionChatAddedAction, SessionChatRemovedAction, SessionDefaultChatChangedAction,
    SessionReadyAction,
};
use agenthost_protocol::ahp_types::state::{
    AgentInfo, RootState, SessionChatSummary, SessionLifecycle, SessionState, SessionStatus,
    SessionSummary,
};
use agenthost_protocol::commands::{CreateChatParams, CreateSessionParams, ListSessionsResult};
use agenthost_protocol::uri::{file_uri_to_path, path_to_file_uri};
use agenthost_protocol::{ActionOrigin, ChatUri, SessionUri, StateAction};
use agenthost_reducers::projection::{aggregate_session_status, chat_summary};
use agenthost_reducers::states::empty_chat;
use agenthost_state::{ClientDispatch, StateManager};

use crate::error::ServiceError;

/// Where sessions may work.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// The directories sessions and working directories must lie in (the first is the default
    /// working directory). Compared after resolving symlinks.
    pub roots: Vec<PathBuf>,
}

/// The root state advertising `agents`.
pub fn root_state(agents: Vec<AgentInfo>) -> RootState {
    RootState {
        agents,
        active_sessions: Some(0),
        terminals: None,
        config: None,
        meta: None,
    }
}

/// The lifecycle commands over the state manager.
#[derive(Debug)]
pub struct SessionService {
    state: Arc<StateManager>,
    dispatcher: Dispatcher,
    roots: Vec<PathBuf>,
    created_at: Mutex<HashMap<String, String>>,
}

fn now_iso() -> String {
    format!("{:.3}", jiff::Timestamp::now())
}

impl SessionService {
    /// A service over `state`. Roots that do not exist are an error: the host could never place a
    /// session in them.
    pub fn new(
        state: Arc<StateManager>,
        dispatcher: Dispatcher,
        config: ServiceConfig,
    ) -> Result<Self, ServiceError> {
        let roots = config
            .roots
            .iter()
            .map(|root| {
                root.canonicalize().map_err(|error| {
                    ServiceError::InvalidParams(format!("root {}: {error}", root.display()))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if roots.is_empty() {
            return Err(ServiceError::InvalidParams(
                "at least one root is needed".into(),
            ));
        }
        Ok(Self {
            state,
            dispatcher,
            roots,
            created_at: Mutex::new(HashMap::new()),
        })
    }

    fn created(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.created_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first root as a `file://` URI (`InitializeResult.defaultDirectory`).
    pub fn default_directory(&self) -> Option<String> {
        self.roots.first().and_then(|r| path_to_file_uri(r).ok())
    }

    fn roots_text(&self) -> String {
        let roots: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        roots.join(", ")
    }

    /// Checks that a working directory exists inside a root; returns its canonical URI.
    fn check_directory(&self, uri: &str) -> Result<String, ServiceError> {
        let outside = || ServiceError::OutsideRoots {
            directory: uri.to_owned(),
            roots: self.roots_text(),
        };
        let path = file_uri_to_path(uri)?;
        let canonical = path.canonicalize().map_err(|_| outside())?;
        if !canonical.is_dir() || !self.roots.iter().any(|root| canonical.starts_with(root)) {
            return Err(outside());
        }
        Ok(path_to_file_uri(&canonical)?)
    }

    /// `createSession` (AHP §9.1): the session with its default chat at VS Code's derived URI,
    /// `session/ready`. Returns the summary for `root/sessionAdded`.
    pub fn create_session(
        &self,
        params: CreateSessionParams,
        client_id: &str,
    ) -> Result<SessionSummary, ServiceError> {
        let uri = SessionUri::parse(&params.channel)?;
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
        if self.state.snapshot(uri.as_str()).is_some() {
            return Err(ServiceError::SessionAlreadyExists(uri.to_string()));
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
        let now = now_iso();
        let session = SessionState {
            provider,
            title: "New session".to_owned(),
            status: SessionStatus::Idle.bits(),
            activity: None,
            origin: None,
            project: None,
            working_directories: Some(directories),
            annotations: None,
            lifecycle: SessionLifecycle::Creating,
            creation_error: None,
            server_tools: None,
            active_clients: params.active_client.into_iter().collect(),
            chats: Vec::new(),
            default_chat: None,
            config: None,
            customizations: None,
            changesets: None,
            input_needed: None,
            meta: None,
        };
        self.state
            .insert_session(uri.as_str(), session)
            .map_err(|_| ServiceError::SessionAlreadyExists(uri.to_string()))?;
        self.created().insert(uri.to_string(), now.clone());
        let default_chat = ChatUri::default_for(&uri).into_string();
        self.add_chat(uri.as_str(), &default_chat, "New chat", &now)?;
        self.dispatch(
            uri.as_str(),
            StateAction::SessionDefaultChatChanged(SessionDefaultChatChangedAction {
                default_chat: Some(default_chat),
            }),
        );
        self.dispatch(
            uri.as_str(),
            StateAction::SessionReady(SessionReadyAction {}),
        );
        self.summary(uri.as_str())
            .ok_or_else(|| ServiceError::SessionNotFound(uri.to_string()))
    }

    fn add_chat(
        &self,
        session: &str,
        chat: &str,
        title: &str,
        now: &str,
    ) -> Result<(), ServiceError> {
        let state = empty_chat(chat, title, now, None);
        let added = StateAction::SessionChatAdded(SessionChatAddedAction {
            summary: chat_summary(&state),
        });
        self.state
            .insert_chat(session, state)
            .map_err(|_| ServiceError::ChatAlreadyExists(chat.to_owned()))?;
        self.dispatch(session, added);
        Ok(())
    }

    fn dispatch(&self, channel: &str, action: StateAction) {
        if let Err(error) = self.state.dispatch_server(channel, action) {
            tracing::warn!(channel, %error, "lifecycle action not applied");
        }
    }

    /// `createChat` (AHP §9.2): a new chat in the session, announced before the reply. Forks and
    /// side chats are refused: no agent advertises them yet.
    pub fn create_chat(&self, params: &CreateChatParams) -> Result<(), ServiceError> {
        if self.state.read(|h| h.session(&params.channel).is_none()) {
            return Err(ServiceError::SessionNotFound(params.channel.clone()));
        }
        let chat = ChatUri::parse(&params.chat)?;
        if params.source.is_some() {
            return Err(ServiceError::InvalidParams(
                "forks and side chats are not supported by this host's agents".into(),
            ));
        }
        if self.state.snapshot(chat.as_str()).is_some() {
            return Err(ServiceError::ChatAlreadyExists(chat.to_string()));
        }
        self.add_chat(&params.channel, chat.as_str(), "New chat", &now_iso())
    }

    /// `disposeChat`: removes the chat from the catalog and the state; returns its session. The
    /// caller then disposes the chat's provider conversation and mementos.
    pub fn dispose_chat(&self, chat: &str) -> Result<String, ServiceError> {
        let session = self
            .state
            .read(|h| h.chat_session(chat).map(str::to_owned))
            .ok_or_else(|| ServiceError::ChatNotFound(chat.to_owned()))?;
        self.dispatch(
            &session,
            StateAction::SessionChatRemoved(SessionChatRemovedAction {
                chat: chat.to_owned(),
            }),
        );
        self.state.remove_chat(chat);
        Ok(session)
    }

    /// `disposeSession`: removes the session and its chats; returns the chats' URIs for the
    /// caller's provider and memento disposal.
    pub fn dispose_session(&self, session: &str) -> Result<Vec<String>, ServiceError> {
        let (_, chats) = self
            .state
            .remove_session(session)
            .ok_or_else(|| ServiceError::SessionNotFound(session.to_owned()))?;
        self.created().remove(session);
        Ok(chats.into_iter().map(|c| c.resource).collect())
    }

    /// The root catalog entry of a session (AHP §4.3).
    pub fn summary(&self, session: &str) -> Option<SessionSummary> {
        let created_at = self.created().get(session).cloned().unwrap_or_else(now_iso);
        self.state.read(|h| {
            let state = h.session(session)?;
            let aggregate = aggregate_session_status(state, h.session_chats(session));
            let chats = h
                .session_chats(session)
                .map(|(uri, chat)| SessionChatSummary {
                    resource: uri.to_owned(),
                    title: chat.title.clone(),
                    origin: chat.origin.clone(),
                    interactivity: chat.interactivity,
                    status: Some(chat.status),
                    changes: chat.changes.clone(),
                })
                .collect();
            Some(SessionSummary {
                provider: state.provider.clone(),
                title: state.title.clone(),
                status: aggregate.status,
                activity: state.activity.clone(),
                origin: state.origin.clone(),
                project: state.project.clone(),
                working_directories: state.working_directories.clone(),
                annotations: state.annotations.clone(),
                resource: session.to_owned(),
                modified_at: aggregate.modified_at.unwrap_or_else(|| created_at.clone()),
                created_at,
                changes: None,
                meta: None,
                chats: Some(chats),
                default_chat: state.default_chat.clone(),
            })
        })
    }

    /// `listSessions`: every session, most recently modified first.
    pub fn list_sessions(&self) -> ListSessionsResult {
        let sessions: Vec<String> = self
            .state
            .read(|h| h.session_uris().map(str::to_owned).collect());
        let mut items: Vec<SessionSummary> =
            sessions.iter().filter_map(|s| self.summary(s)).collect();
        items.sort_by(|a, b| {
            b.modified_at
                .cmp(&a.modified_at)
                .then(a.resource.cmp(&b.resource))
        });
        ListSessionsResult {
            next_cursor: None,
            items,
        }
    }

    /// Resolves a chat URI a client names: VS Code derives `ahp-chat://default/<session>` itself,
    /// so that form is answered with the session's default chat.
    pub fn resolve_chat(&self, uri: &str) -> String {
        let Ok(chat) = ChatUri::parse(uri) else {
            return uri.to_owned();
        };
        match chat.default_chat_session() {
            Ok(Some(session)) => self
                .state
                .read(|h| {
                    h.session(session.as_str())
                        .and_then(|s| s.default_chat.clone())
                })
                .unwrap_or_else(|| uri.to_owned()),
            _ => uri.to_owned(),
        }
    }

    /// `fetchTurns`: the host keeps every turn of a chat in state until the store lands, so there
    /// is nothing older to load; the chat must exist.
    pub fn fetch_turns(&self, chat: &str) -> Result<(), ServiceError> {
        if self.state.read(|h| h.chat(chat).is_some()) {
            Ok(())
        } else {
            Err(ServiceError::ChatNotFound(chat.to_owned()))
        }
    }

    /// Client-action intake (AHP §6.1): validate and reduce, or produce the rejection echo.
    pub fn intake(
        &self,
        channel: &str,
        action: StateAction,
        origin: ActionOrigin,
    ) -> ClientDispatch {
        self.state.dispatch_client(channel, action, origin)
    }

    /// `onHydrateChat` for a chat being restored.
    pub async fn hydrate_chat(
        &self,
        session: &str,
        chat: &str,
        restored: RestoredChat,
    ) -> RestoredChat {
        let context = HydrationContext {
            session: session.to_owned(),
            chat: chat.to_owned(),
        };
        self.dispatcher.hydrate_chat(&context, restored).await
    }

    /// Whether `path` lies inside a root (for resource reads).
    pub fn in_roots(&self, path: &Path) -> bool {
        path.canonicalize()
            .is_ok_and(|p| self.roots.iter().any(|root| p.starts_with(root)))
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;

//! [`AgentService`]: the host's use cases. Each is one method, written once, that composes the
//! session service (state and store), the orchestrator (agents) and the contributions' services
//! one call per step. The transport (`agenthost-server`) speaks the protocol and calls these.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agenthost_dispatcher::{ClientContext, LaunchKind, RegistrationSet};
use agenthost_protocol::ahp_types::ROOT_RESOURCE_URI;
use agenthost_protocol::commands::{CreateChatParams, CreateSessionParams};
use agenthost_protocol::notifications::{SessionAddedParams, SessionRemovedParams};
use agenthost_protocol::state::{AgentInfo, SessionConfigState};
use agenthost_protocol::{ActionEnvelope, ActionOrigin, ChatUri, SessionUri, StateAction};
use agenthost_services::checkpoint_commands::{
    self, CommandError, DiffParams, DiffResult, RollbackParams, RollbackResult, SessionTurns,
};
use agenthost_services::spend::{SpendParams, SpendReport};
use agenthost_services::{AuditLog, CheckpointService, SubscriptionTracker, TurnStopRequest};
use agenthost_side_effects::Orchestrator;
use agenthost_state::{
    ClientDispatch, EnvelopeObserver, ObservedEnvelope, Outbox, ReconnectOutcome, StateManager,
    SubscriberId, notification_frame,
};

use crate::error::ServiceError;
use crate::sessions::SessionService;
use crate::summaries::SummaryNotifier;

/// The default of [`HostParts::shutdown_write_timeout`].
pub const DEFAULT_SHUTDOWN_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What an [`AgentService`] is built from.
pub struct HostParts {
    /// The state every session lives in.
    pub state: Arc<StateManager>,
    /// Sessions: create, restore, dispose, intake.
    pub sessions: Arc<SessionService>,
    /// The agents.
    pub orchestrator: Orchestrator,
    /// How the host was launched (reported to contributions with every client action).
    pub launch_kind: LaunchKind,
    /// The built-in contributions' registrations, kept for as long as the service lives.
    pub contributions: RegistrationSet,
    /// Where rollbacks are recorded (with the token and client id), as the `auditLog`
    /// contribution records confirmation answers and cancels.
    pub audit: Option<Arc<dyn AuditLog>>,
    /// Told about every subscribe, unsubscribe and disconnect (the live subscriptions
    /// contributions read, e.g. as claims).
    pub subscriptions: Option<Arc<dyn SubscriptionTracker>>,
    /// How long a graceful shutdown waits for the contributions' queued store writes.
    pub shutdown_write_timeout: Duration,
}

impl std::fmt::Debug for HostParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostParts").finish_non_exhaustive()
    }
}

/// When each session last had an accepted action on it or one of its chats.
#[derive(Default)]
struct Activity(Mutex<HashMap<String, tokio::time::Instant>>);

impl Activity {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, tokio::time::Instant>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl EnvelopeObserver for Activity {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        if observed.envelope.rejection_reason.is_none()
            && let Some(session) = observed.session
        {
            self.lock()
                .insert(session.to_string(), tokio::time::Instant::now());
        }
    }
}

/// The channels a `reconnect` attached again, and how.
#[derive(Debug)]
pub struct Reattached {
    /// The state manager's answer: a replay or snapshots.
    pub outcome: ReconnectOutcome,
    /// The channels the subscriber is subscribed to again.
    pub live: Vec<String>,
}

/// The host's use cases over its components (one per host process).
pub struct AgentService {
    state: Arc<StateManager>,
    sessions: Arc<SessionService>,
    orchestrator: Orchestrator,
    launch_kind: LaunchKind,
    audit: Option<Arc<dyn AuditLog>>,
    tracker: Option<Arc<dyn SubscriptionTracker>>,
    shutdown_write_timeout: Duration,
    activity: Arc<Activity>,
    /// Dropped with the service: that unregisters the contributions, which also breaks the
    /// state → dispatcher → contribution → state cycle their services form.
    _contributions: RegistrationSet,
}

impl std::fmt::Debug for AgentService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentService").finish_non_exhaustive()
    }
}

impl AgentService {
    /// The service over its parts; root subscribers hear of session summary changes
    /// (`root/sessionSummaryChanged`) from now on.
    pub fn new(parts: HostParts) -> Arc<Self> {
        SummaryNotifier::install(&parts.state, &parts.sessions);
        let activity = Arc::new(Activity::default());
        parts.state.add_observer(activity.clone());
        Arc::new(Self {
            state: parts.state,
            sessions: parts.sessions,
            orchestrator: parts.orchestrator,
            launch_kind: parts.launch_kind,
            audit: parts.audit,
            tracker: parts.subscriptions,
            shutdown_write_timeout: parts.shutdown_write_timeout,
            activity,
            _contributions: parts.contributions,
        })
    }

    /// Sessions (create, restore, list), for what needs no other component.
    pub fn sessions(&self) -> &SessionService {
        &self.sessions
    }

    /// How the host was launched.
    pub fn launch_kind(&self) -> &LaunchKind {
        &self.launch_kind
    }

    /// The agents the host advertises.
    pub fn agents(&self) -> Vec<AgentInfo> {
        self.state.read(|h| h.root().agents.clone())
    }

    /// The session configuration every new session gets, when one is configured.
    pub fn session_config(&self) -> Option<&SessionConfigState> {
        self.sessions.session_config()
    }

    /// The highest `serverSeq` assigned so far.
    pub fn server_seq(&self) -> u64 {
        self.state.server_seq()
    }

    fn notify_root(&self, method: &str, params: &impl serde::Serialize) {
        self.state
            .notify(ROOT_RESOURCE_URI, &notification_frame(method, params));
    }

    /// A subscriber whose frames go to `outbox`.
    pub fn register_subscriber(&self, outbox: Arc<dyn Outbox>) -> SubscriberId {
        self.state.register_subscriber(outbox)
    }

    /// `subscribe`: restores `channel` when it is stored, then subscribes `subscriber` (the
    /// connection `conn` of client `client`) and returns the snapshot.
    pub async fn subscribe(
        &self,
        conn: &str,
        client: Option<&str>,
        subscriber: SubscriberId,
        channel: &str,
    ) -> Result<agenthost_protocol::state::Snapshot, ServiceError> {
        self.sessions.ensure_channel(channel).await?;
        let snapshot = self
            .state
            .subscribe(subscriber, channel)
            .map_err(|e| ServiceError::NotFound(e.to_string()))?;
        if let Some(tracker) = &self.tracker {
            if let Some(client) = client {
                tracker.identified(conn, client);
            }
            tracker.subscribed(conn, channel);
        }
        Ok(snapshot)
    }

    /// `reconnect`: restores each channel that is stored, then attaches `subscriber` again to
    /// `channels` with a replay after `last_seen` or snapshots.
    pub async fn reconnect(
        &self,
        conn: &str,
        client: Option<&str>,
        subscriber: SubscriberId,
        last_seen: i64,
        channels: &[String],
    ) -> Result<Reattached, ServiceError> {
        for channel in channels {
            // A channel that cannot be restored is reported in `missing` (or left out).
            let _ = self.sessions.ensure_channel(channel).await;
        }
        let outcome = self
            .state
            .reconnect(subscriber, last_seen, channels)
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        let live: Vec<String> = match &outcome {
            ReconnectOutcome::Replay { missing, .. } => channels
                .iter()
                .filter(|c| !missing.contains(c))
                .cloned()
                .collect(),
            ReconnectOutcome::Snapshot { snapshots } => {
                snapshots.iter().map(|s| s.resource.clone()).collect()
            }
        };
        if let Some(tracker) = &self.tracker {
            if let Some(client) = client {
                tracker.identified(conn, client);
            }
            for channel in &live {
                tracker.subscribed(conn, channel);
            }
        }
        Ok(Reattached { outcome, live })
    }

    /// `unsubscribe`.
    pub fn unsubscribe(&self, conn: &str, subscriber: SubscriberId, channel: &str) {
        self.state.unsubscribe(subscriber, channel);
        if let Some(tracker) = &self.tracker {
            tracker.unsubscribed(conn, channel);
        }
    }

    /// A connection is gone: its subscriber (when it had one) with it.
    pub fn disconnected(&self, conn: &str, subscriber: Option<SubscriberId>) {
        if let Some(subscriber) = subscriber {
            self.state.remove_subscriber(subscriber);
        }
        if let Some(tracker) = &self.tracker {
            tracker.disconnected(conn);
        }
    }

    /// Keeps only the channels of `channels` that are live.
    pub fn retain_live(&self, channels: &mut HashSet<String>) {
        self.state
            .read(|host| channels.retain(|c| host.channel_kind(c).is_some()));
    }

    /// An action refused before intake (over a rate limit, not permitted): the echo with
    /// `reason` for its dispatcher alone; `None` for an unknown channel.
    pub fn refuse(
        &self,
        channel: &str,
        action: StateAction,
        origin: ActionOrigin,
        reason: &str,
    ) -> Option<ActionEnvelope> {
        self.state.reject_client(channel, action, origin, reason)
    }

    /// A client's action: validated and reduced by the session service's intake; an accepted
    /// one then reaches the agents (a turn starts, a permission is answered, a turn is
    /// cancelled) and `onDidApplyClientAction` runs. A connection's `dispatchAction` takes it,
    /// and so does the host acting as a client of its own (the unattended policy's answers).
    pub fn client_action(
        &self,
        channel: &str,
        action: StateAction,
        origin: ActionOrigin,
        context: &ClientContext,
    ) -> ClientDispatch {
        let outcome = self.sessions.intake(channel, action, origin);
        if let ClientDispatch::Accepted(envelope) = &outcome {
            self.orchestrator.after_client_action(envelope, context);
        }
        outcome
    }

    /// `dispatchAction`: restores the channel when it is stored, then [`Self::client_action`].
    pub async fn dispatch_action(
        &self,
        channel: &str,
        action: StateAction,
        origin: ActionOrigin,
        context: &ClientContext,
    ) -> ClientDispatch {
        if let Err(error) = self.sessions.ensure_channel(channel).await {
            // An unknown channel: the action is ignored by the intake, as AHP says.
            tracing::debug!(channel, %error, "channel not restorable");
        }
        self.client_action(channel, action, origin, context)
    }

    /// `createSession`: the session is created and root subscribers get `root/sessionAdded`.
    pub async fn create_session(
        &self,
        params: CreateSessionParams,
        client_id: &str,
    ) -> Result<(), ServiceError> {
        let summary = self.sessions.create_session(params, client_id).await?;
        self.notify_root(
            "root/sessionAdded",
            &SessionAddedParams {
                channel: ROOT_RESOURCE_URI.to_owned(),
                summary,
            },
        );
        Ok(())
    }

    /// `disposeSession`: frees the session's live state and its agents; it stays listed and
    /// restorable, so no `root/sessionRemoved`.
    pub async fn dispose_session(&self, session: &SessionUri) -> Result<(), ServiceError> {
        let chats = self.sessions.dispose_session(session)?;
        self.orchestrator.dispose_session(session, &chats).await;
        Ok(())
    }

    /// `x-deleteSession`: the session, its history and its checkpoint refs are deleted for
    /// good, its agents stopped, and root subscribers get `root/sessionRemoved`.
    pub async fn delete_session(&self, session: &SessionUri) -> Result<(), ServiceError> {
        let chats = self.sessions.delete_session(session).await?;
        self.orchestrator.dispose_session(session, &chats).await;
        self.notify_root(
            "root/sessionRemoved",
            &SessionRemovedParams {
                channel: ROOT_RESOURCE_URI.to_owned(),
                session: session.to_string(),
            },
        );
        Ok(())
    }

    /// `createChat`: the chat is created; its `initialMessage`, when there is one, starts its
    /// first turn through the normal admission path.
    pub async fn create_chat(
        &self,
        params: CreateChatParams,
        context: ClientContext,
    ) -> Result<(), ServiceError> {
        let chat = self.sessions.create_chat(&params).await?;
        if let Some(message) = params.initial_message {
            let turn = self.sessions.start_initial_turn(&chat, &message)?;
            self.orchestrator.start_turn(&chat, &turn, message, context);
        }
        Ok(())
    }

    /// `disposeChat`: the chat is removed from its session and the store, its agent stopped.
    pub async fn dispose_chat(&self, chat: &ChatUri) -> Result<(), ServiceError> {
        self.sessions.dispose_chat(chat).await?;
        self.orchestrator.dispose_chat(chat).await;
        Ok(())
    }

    /// The chat a `completions` request on `channel` is for (a session URI means its default
    /// chat), when it exists, restored from the store if needed.
    pub async fn completion_chat(&self, channel: &str) -> Option<String> {
        self.sessions.ensure_channel(channel).await.ok()?;
        let chat = self
            .state
            .read(|h| h.session(channel).and_then(|s| s.default_chat.clone()))
            .unwrap_or_else(|| channel.to_owned());
        self.state
            .read(|h| h.channel_kind(&chat).is_some())
            .then_some(chat)
    }

    /// The checkpoint service and the turns of `session`'s default chat, restoring both from
    /// the store when they are not live.
    async fn checkpoint_target(
        &self,
        uri: &SessionUri,
    ) -> Result<(Arc<dyn CheckpointService>, SessionTurns), ServiceError> {
        let checkpoints = self
            .sessions
            .checkpoints()
            .ok_or_else(|| ServiceError::InvalidParams("this host keeps no checkpoints".into()))?;
        let chat = ChatUri::default_for(uri);
        let restored = match self.sessions.ensure_session(uri).await {
            Ok(()) => self.sessions.ensure_chat(&chat).await,
            Err(error) => Err(error),
        };
        restored.map_err(|e| ServiceError::InvalidParams(e.to_string()))?;
        let (directories, turns) = self.state.read(|h| {
            let directories = h
                .session(uri.as_str())
                .and_then(|s| s.working_directories.clone());
            let turns = h
                .chat(chat.as_str())
                .map(|c| c.turns.iter().map(|t| t.id.clone()).collect::<Vec<_>>());
            (directories, turns)
        });
        let directories = directories.ok_or_else(|| {
            ServiceError::InvalidParams(format!("session {:?} does not exist", uri.as_str()))
        })?;
        let target = SessionTurns::new(uri.clone(), &directories, turns.unwrap_or_default())?;
        Ok((checkpoints, target))
    }

    /// `x-checkpoint/diff`.
    pub async fn checkpoint_diff(&self, params: &DiffParams) -> Result<DiffResult, ServiceError> {
        let (checkpoints, target) = self.checkpoint_target(&params.session).await?;
        Ok(checkpoint_commands::diff(checkpoints.as_ref(), &target, params).await?)
    }

    /// A contribution's request to end a running turn with an error (a limit the host
    /// enforces): the turn ends with `chat/error` and its agent stops as on a cancel.
    pub fn stop_turn(&self, request: TurnStopRequest) -> bool {
        self.orchestrator
            .stop_turn(&request.chat, &request.turn_id, request.error)
    }

    /// `x-spend`: the spend report of the host's sessions and providers.
    pub async fn spend(&self, params: &SpendParams) -> Result<SpendReport, ServiceError> {
        self.sessions.spend(params).await
    }

    /// `x-checkpoint/rollback`, recorded in the audit log with the token and client id.
    pub async fn checkpoint_rollback(
        &self,
        params: &RollbackParams,
        token: Option<&str>,
        client_id: Option<&str>,
    ) -> Result<RollbackResult, ServiceError> {
        let (checkpoints, target) = self.checkpoint_target(&params.session).await?;
        let rolled_back =
            checkpoint_commands::rollback(checkpoints.as_ref(), &target, params).await?;
        if let Some(audit) = &self.audit {
            audit.record(agenthost_services::audit_entry(
                token,
                client_id,
                &params.session,
                "x-checkpoint/rollback",
                serde_json::json!({ "turnId": params.turn_id, "restored": rolled_back.restored.len(),
                                    "removed": rolled_back.removed.len() }),
            ));
        }
        Ok(rolled_back)
    }

    /// Evicts sessions idle for `limit` (`serve --idle-evict-secs`) from memory, sweeping in a
    /// task every quarter of it (at least every 10 ms) for as long as the service lives. An
    /// evicted session stays listed and comes back intact on its next use.
    pub fn spawn_idle_eviction(self: &Arc<Self>, limit: Duration) {
        let period = (limit / 4).max(Duration::from_millis(10));
        agenthost_services::periodic::every(
            Arc::downgrade(self),
            period,
            move |host: Arc<Self>| async move {
                host.evict_idle_once(limit).await;
            },
        );
    }

    /// One eviction sweep: every live session nobody watches, with no running turn and no
    /// history write still kept ([`SessionService::idle_sessions`]), whose last activity — an
    /// accepted action on it or its chats, or being busy or watched at a sweep — is `limit` or
    /// more ago, is evicted like a `disposeSession`. Returns the sessions it evicted.
    pub async fn evict_idle_once(&self, limit: Duration) -> Vec<String> {
        let now = tokio::time::Instant::now();
        let live: Vec<SessionUri> = self.state.read(|h| h.session_uris().cloned().collect());
        let idle: HashSet<String> = self.sessions.idle_sessions().into_iter().collect();
        let due: Vec<(String, SessionUri)> = {
            let live_keys: HashSet<&str> = live.iter().map(SessionUri::as_str).collect();
            let mut activity = self.activity.lock();
            activity.retain(|session, _| live_keys.contains(session.as_str()));
            live.iter()
                .filter(|session| {
                    let last = activity.entry(session.to_string()).or_insert(now);
                    if !idle.contains(session.as_str()) {
                        *last = now;
                    }
                    now.duration_since(*last) >= limit
                })
                .map(|session| (session.to_string(), session.clone()))
                .collect()
        };
        let mut evicted = Vec::new();
        for (session, uri) in due {
            match self.dispose_session(&uri).await {
                Ok(()) => {
                    tracing::info!(
                        session,
                        "evicted an idle session from memory (it stays listed)"
                    );
                    self.activity.lock().remove(&session);
                    evicted.push(session);
                }
                Err(error) => tracing::debug!(session, %error, "idle session already gone"),
            }
        }
        evicted
    }

    /// A graceful stop: every agent stopped, then the contributions' queued store writes
    /// (drafts, flags, titles, usage) and last the chat history the store refused so far are
    /// written, so none of them is lost.
    pub async fn shutdown(&self) {
        self.orchestrator.stop_all_agents().await;
        let timeout = self.shutdown_write_timeout;
        let flushed =
            tokio::time::timeout(timeout, agenthost_services::flush_pending_writes()).await;
        if flushed.is_err() {
            tracing::warn!(
                ?timeout,
                "shutdown: queued store writes did not finish in time; some may be lost"
            );
        }
        let kept = self.sessions.flush_history();
        let (_, peak) = self.sessions.history_backlog();
        tracing::info!(
            kept,
            peak,
            "shutdown: chat history written (peak: the most writes the store ever kept waiting)"
        );
    }
}

impl From<CommandError> for ServiceError {
    fn from(error: CommandError) -> Self {
        match error {
            CommandError::InvalidParams(message) => ServiceError::InvalidParams(message),
            CommandError::Internal(message) => ServiceError::Internal(message),
        }
    }
}

#[cfg(test)]
#[path = "agent_tests.rs"]
mod tests;

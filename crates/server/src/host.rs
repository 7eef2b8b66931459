//! [`Host`]: the AHP methods over the session service, the state manager and the orchestrator.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use agenthost_dispatcher::{ClientContext, LaunchKind, RegistrationSet};
use agenthost_protocol::ahp_types::ROOT_RESOURCE_URI;
use agenthost_protocol::commands::{
    CreateChatParams, DispatchActionParams, FetchTurnsParams, FetchTurnsResult, Implementation,
    InitializeParams, InitializeResult, ReconnectParams, ReconnectReplayResult, ReconnectResult,
    ReconnectSnapshotResult, SubscribeParams, SubscribeResult, UnsubscribeParams,
};
use agenthost_protocol::notifications::{SessionAddedParams, SessionRemovedParams};
use agenthost_protocol::state::SessionConfigState;
use agenthost_protocol::{ActionOrigin, StateAction};
use agenthost_service::{ServiceError, SessionService};
use agenthost_services::SubscriptionTracker;
use agenthost_services::bounded::BoundedMap;
use agenthost_side_effects::Orchestrator;
use agenthost_state::{
    ClientDispatch, EnvelopeObserver, ObservedEnvelope, Outbox, ReconnectOutcome, StateManager,
    SubscriberId, action_frame,
};
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::access::{READ_METHODS, Scope};
use crate::checkpoint_commands;
use crate::clients::ClientBindings;
use crate::compat::{self, ClientDialect};
use crate::connection::{Connection, ConnectionId};
use crate::handler::{ProtocolHandler, Reconnected};
use crate::requests;
use crate::resources;
use crate::rpc::{RpcError, notification_frame};
use crate::summaries::SummaryNotifier;
use crate::version::NegotiatedVersion;
use agenthost_protocol::ahp_types::commands::{
    AuthenticateParams, CompletionsParams, ResolveSessionConfigParams, ResourceListParams,
    ResourceReadParams, ResourceResolveParams,
};

/// Hands state-manager frames to a connection without ever waiting.
struct ConnectionOutbox(Connection);

impl Outbox for ConnectionOutbox {
    fn push(&self, frame: Arc<str>) -> bool {
        // A `session:` token sees the root's news of its own session only.
        if !crate::access::frame_visible(&self.0.grant().scope, &frame) {
            return true;
        }
        // An action the peer's protocol version does not have is left out, not a lag.
        let surface = || self.0.protocol_version().map(|v| v.surface());
        if !compat::frame_allowed(surface, &frame) {
            return true;
        }
        // A connection that is closing (its client left) takes nothing more and is forgotten by
        // `disconnected`; only one that lagged is dropped as a subscriber that cannot keep up.
        self.0.send_frame(frame).is_ok() || !self.0.is_lagged()
    }
}

struct Peers {
    subscribers: HashMap<ConnectionId, SubscriberId>,
    /// Client ids bound to their token and live connection.
    clients: ClientBindings,
    /// The channels each connection subscribed to, for `ServerConfig::max_subscriptions`. A
    /// channel removed since (a disposed session) may linger here; it is pruned when the
    /// connection reaches its limit.
    subscriptions: HashMap<ConnectionId, HashSet<String>>,
    /// The version negotiated per client id, for `reconnect` (which carries none). Bounded:
    /// past [`REMEMBERED_CLIENTS`] the oldest goes (its `reconnect` gets the 0.9 surface).
    versions: BoundedMap<String, NegotiatedVersion>,
    /// The dialect each client id announced at `initialize` (see [`compat::ClientDialect`]),
    /// bounded the same way.
    dialects: BoundedMap<String, ClientDialect>,
}

impl Default for Peers {
    fn default() -> Self {
        Self {
            subscribers: Default::default(),
            subscriptions: Default::default(),
            versions: BoundedMap::new(REMEMBERED_CLIENTS),
            dialects: BoundedMap::new(REMEMBERED_CLIENTS),
            clients: ClientBindings::default(),
        }
    }
}

/// How many client ids the host remembers a negotiated version and dialect for: every
/// `initialize` with a new client id adds one, so the memory is capped.
pub const REMEMBERED_CLIENTS: usize = 4096;

/// The `rejectionReason` of a `dispatchAction` over `ServerConfig::dispatch_rate`.
pub const RATE_LIMITED_REASON: &str =
    "rate limited: too many dispatchAction notifications on this connection; slow down";

/// The error of a `subscribe` beyond `ServerConfig::max_subscriptions`.
fn subscription_limit(max: usize) -> RpcError {
    RpcError::permission_denied(format!(
        "subscription limit reached: a connection may hold at most {max} subscriptions; \
         unsubscribe from a channel first"
    ))
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
                .insert(session.to_owned(), tokio::time::Instant::now());
        }
    }
}

/// The default of [`Host::set_shutdown_write_timeout`].
pub const DEFAULT_SHUTDOWN_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The session logic behind the transport: one per host process.
pub struct Host {
    state: Arc<StateManager>,
    service: Arc<SessionService>,
    orchestrator: Orchestrator,
    launch_kind: LaunchKind,
    peers: Mutex<Peers>,
    /// Told about every subscribe, unsubscribe and disconnect, when set
    /// ([`track_subscriptions`](Self::track_subscriptions)).
    subscriptions: OnceLock<Arc<dyn SubscriptionTracker>>,
    /// How long a graceful shutdown waits for queued store writes.
    shutdown_write_timeout: Mutex<Duration>,
    /// The session configuration `resolveSessionConfig` describes
    /// ([`set_session_config`](Self::set_session_config)).
    session_config: OnceLock<SessionConfigState>,
    /// The machine, for the diagnostics requests (see [`Self::set_machine`]).
    machine: OnceLock<crate::machine::MachineFacts>,
    /// Permits for concurrent `resourceRead`s ([`resources::MAX_CONCURRENT_READS`]).
    reads: Arc<tokio::sync::Semaphore>,
    /// Where rollbacks are recorded ([`set_audit_log`](Self::set_audit_log)).
    audit: OnceLock<Arc<dyn agenthost_services::AuditLog>>,
    /// When each live session last had activity, for idle eviction.
    activity: Arc<Activity>,
    /// The built-in contributions' registrations, dropped with the host: that unregisters them,
    /// which also breaks the state → dispatcher → contribution → state cycle their services form.
    _contributions: RegistrationSet,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").finish_non_exhaustive()
    }
}

fn params<T: DeserializeOwned>(params: Option<Value>) -> Result<T, RpcError> {
    serde_json::from_value(params.unwrap_or(Value::Null))
        .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}

fn service_error(error: ServiceError) -> RpcError {
    let code = i32::try_from(error.code()).unwrap_or(-32603);
    RpcError::new(code, error.to_string())
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Value, RpcError> {
    serde_json::to_value(value)
        .map_err(|e| RpcError::internal(format!("cannot encode the result: {e}")))
}

impl Host {
    /// The host over its parts; it keeps `contributions` registered for as long as it lives and
    /// announces session summary changes to root subscribers (`root/sessionSummaryChanged`).
    pub fn new(
        state: Arc<StateManager>,
        service: Arc<SessionService>,
        orchestrator: Orchestrator,
        launch_kind: LaunchKind,
        contributions: RegistrationSet,
    ) -> Arc<Self> {
        SummaryNotifier::install(&state, &service);
        let activity = Arc::new(Activity::default());
        state.add_observer(activity.clone());
        Arc::new(Self {
            activity,
            state,
            service,
            orchestrator,
            launch_kind,
            peers: Mutex::new(Peers::default()),
            subscriptions: OnceLock::new(),
            shutdown_write_timeout: Mutex::new(DEFAULT_SHUTDOWN_WRITE_TIMEOUT),
            session_config: OnceLock::new(),
            machine: OnceLock::new(),
            audit: OnceLock::new(),
            reads: Arc::new(tokio::sync::Semaphore::new(resources::MAX_CONCURRENT_READS)),
            _contributions: contributions,
        })
    }

    /// How long a graceful shutdown waits for the contributions' queued store writes before it
    /// gives up on them (logged); default [`DEFAULT_SHUTDOWN_WRITE_TIMEOUT`].
    pub fn set_shutdown_write_timeout(&self, timeout: Duration) {
        *self
            .shutdown_write_timeout
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = timeout;
    }

    /// The machine the host runs on, for `getNetworkDiagnosticsInfo` (without it the answer
    /// names no operating system, architecture or proxy variable).
    pub fn set_machine(&self, machine: crate::machine::MachineFacts) {
        let _ = self.machine.set(machine);
    }

    /// The session configuration (schema and defaults) `resolveSessionConfig` answers with: the
    /// one the session service gives every new session. Only the first call counts.
    pub fn set_session_config(&self, config: SessionConfigState) {
        let _ = self.session_config.set(config);
    }

    /// Records every `x-checkpoint/rollback` in `audit` (with the token and client id), as the
    /// `auditLog` contribution records confirmation answers and cancels. Set once.
    pub fn set_audit_log(&self, audit: Arc<dyn agenthost_services::AuditLog>) {
        let _ = self.audit.set(audit);
    }

    /// The chat a client names, as the host knows it: a derived default chat in any spelling
    /// ([`compat::chat_spelling`]) resolved to its session's default chat.
    fn resolve_chat(&self, uri: &str) -> String {
        self.service.resolve_chat(&compat::chat_spelling(uri))
    }

    /// Reports every later subscribe, unsubscribe and disconnect to `tracker` (the live
    /// subscriptions contributions read, e.g. as claims). Only the first tracker is kept; returns
    /// whether this one was.
    pub fn track_subscriptions(&self, tracker: Arc<dyn SubscriptionTracker>) -> bool {
        self.subscriptions.set(tracker).is_ok()
    }

    /// The tracker, when one is set.
    fn tracker(&self) -> Option<&Arc<dyn SubscriptionTracker>> {
        self.subscriptions.get()
    }

    /// Evicts sessions idle for `limit` (`serve --idle-evict-secs`) from memory, sweeping in a
    /// task every quarter of it (at least every 10 ms) for as long as the host lives. An
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
    /// more ago, is evicted: the service frees its live state, the orchestrator its agents.
    /// Returns the sessions it evicted.
    pub async fn evict_idle_once(&self, limit: Duration) -> Vec<String> {
        let now = tokio::time::Instant::now();
        let live: HashSet<String> = self
            .state
            .read(|h| h.session_uris().map(str::to_owned).collect());
        let idle: HashSet<String> = self.service.idle_sessions().into_iter().collect();
        let due: Vec<String> = {
            let mut activity = self.activity.lock();
            activity.retain(|session, _| live.contains(session));
            live.iter()
                .filter(|session| {
                    let last = activity.entry((*session).clone()).or_insert(now);
                    if !idle.contains(*session) {
                        *last = now;
                    }
                    now.duration_since(*last) >= limit
                })
                .cloned()
                .collect()
        };
        let mut evicted = Vec::new();
        for session in due {
            match self.service.dispose_session(&session) {
                Ok(chats) => {
                    self.orchestrator.dispose_session(&session, &chats).await;
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

    fn peers(&self) -> MutexGuard<'_, Peers> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection's subscriber id, registering it on first use.
    fn subscriber(&self, conn: &Connection) -> SubscriberId {
        let mut peers = self.peers();
        *peers.subscribers.entry(conn.id()).or_insert_with(|| {
            self.state
                .register_subscriber(Arc::new(ConnectionOutbox(conn.clone())))
        })
    }

    /// The host's client-action path (AHP §6.1, §7): validate and reduce through the session
    /// service's intake, then, for an accepted action, the orchestrator's side of it (a
    /// `chat/toolCallConfirmed` reaches the agent; `onDidApplyClientAction` runs). A connection's
    /// `dispatchAction` takes it, and so does the host acting as a client of its own (the
    /// unattended policy's answers).
    pub fn client_action(
        &self,
        channel: &str,
        action: StateAction,
        origin: ActionOrigin,
        context: &ClientContext,
    ) -> ClientDispatch {
        let outcome = self.service.intake(channel, action, origin);
        if let ClientDispatch::Accepted(envelope) = &outcome {
            self.orchestrator.after_client_action(envelope, context);
        }
        outcome
    }

    fn client_context(&self, conn: &Connection) -> ClientContext {
        ClientContext {
            client_id: conn.client_id(),
            client_kind: conn
                .client_id()
                .and_then(|id| self.peers().dialects.get(&id).copied())
                .and_then(ClientDialect::client_kind),
            launch_kind: self.launch_kind.clone(),
            token: Some(conn.grant().name.clone()),
        }
    }

    fn notify_root(&self, method: &str, params: &impl serde::Serialize) {
        match notification_frame(method, params) {
            Ok(frame) => self.state.notify(ROOT_RESOURCE_URI, &frame),
            Err(error) => tracing::warn!(%error, method, "cannot encode a notification"),
        }
    }

    /// Whether `conn` may subscribe to `channel` without exceeding its
    /// [`Connection::max_subscriptions`]: it already has it, or has room (after forgetting
    /// channels that no longer exist).
    fn subscription_allowed(&self, conn: &Connection, channel: &str) -> Result<(), RpcError> {
        let max = conn.max_subscriptions();
        let mut peers = self.peers();
        let Some(channels) = peers.subscriptions.get_mut(&conn.id()) else {
            return Ok(());
        };
        if channels.contains(channel) || channels.len() < max {
            return Ok(());
        }
        // Disposed channels ended their subscriptions in the state manager: free their places.
        self.state
            .read(|host| channels.retain(|c| host.channel_kind(c).is_some()));
        if channels.len() < max {
            return Ok(());
        }
        tracing::debug!(conn = %conn.id(), channel, max, "subscription limit reached");
        Err(subscription_limit(max))
    }

    /// Records the subscriptions `conn` now has.
    fn record_subscriptions<'a>(&self, conn: &Connection, channels: impl Iterator<Item = &'a str>) {
        self.peers()
            .subscriptions
            .entry(conn.id())
            .or_default()
            .extend(channels.map(str::to_owned));
    }

    async fn subscribe(
        &self,
        conn: &Connection,
        channel: &str,
    ) -> Result<SubscribeResult, RpcError> {
        let channel = self.resolve_chat(channel);
        // Before `ensure_channel`: a refused subscription restores nothing.
        self.channel_allowed(conn, &channel)?;
        self.subscription_allowed(conn, &channel)?;
        self.service
            .ensure_channel(&channel)
            .await
            .map_err(service_error)?;
        let snapshot = self
            .state
            .subscribe(self.subscriber(conn), &channel)
            .map_err(|e| RpcError::not_found(e.to_string()))?;
        self.record_subscriptions(conn, std::iter::once(channel.as_str()));
        if let Some(tracker) = self.tracker() {
            if let Some(client) = conn.client_id() {
                tracker.identified(&conn.id().to_string(), &client);
            }
            tracker.subscribed(&conn.id().to_string(), &channel);
        }
        Ok(SubscribeResult {
            snapshot: Some(snapshot),
        })
    }

    async fn handle_request(
        &self,
        conn: Connection,
        method: &str,
        raw: Option<Value>,
    ) -> Result<Value, RpcError> {
        self.request_allowed(&conn, method, raw.as_ref())?;
        match method {
            "subscribe" => {
                let p: SubscribeParams = params(raw)?;
                encode(&self.subscribe(&conn, &p.channel).await?)
            }
            "createSession" => {
                let mut raw = raw;
                if let Some(config) = raw.as_mut().and_then(|p| p.get_mut("config")) {
                    compat::migrate_legacy_autopilot(config);
                }
                let p = compat::create_session_params(raw)
                    .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))?;
                let client_id = conn.client_id().unwrap_or_default();
                let summary = self
                    .service
                    .create_session(p, &client_id)
                    .await
                    .map_err(service_error)?;
                self.notify_root(
                    "root/sessionAdded",
                    &SessionAddedParams {
                        channel: ROOT_RESOURCE_URI.to_owned(),
                        summary,
                    },
                );
                Ok(Value::Null)
            }
            "disposeSession" => {
                // Frees live state only; the session stays listed and restorable, so no
                // `root/sessionRemoved`.
                let p: UnsubscribeParams = params(raw)?;
                let chats = self
                    .service
                    .dispose_session(&p.channel)
                    .map_err(service_error)?;
                self.orchestrator.dispose_session(&p.channel, &chats).await;
                Ok(Value::Null)
            }
            "x-deleteSession" => {
                let p: UnsubscribeParams = params(raw)?;
                let chats = self
                    .service
                    .delete_session(&p.channel)
                    .await
                    .map_err(service_error)?;
                self.orchestrator.dispose_session(&p.channel, &chats).await;
                self.notify_root(
                    "root/sessionRemoved",
                    &SessionRemovedParams {
                        channel: ROOT_RESOURCE_URI.to_owned(),
                        session: p.channel,
                    },
                );
                Ok(Value::Null)
            }
            "resourceList" => {
                let p: ResourceListParams = params(raw)?;
                encode(&resources::list(p.uri, self.service.sandbox().clone()).await?)
            }
            "resourceResolve" => {
                let p: ResourceResolveParams = params(raw)?;
                let sandbox = self.service.sandbox().clone();
                encode(&resources::resolve(p.uri, p.follow_symlinks, sandbox).await?)
            }
            "resourceRead" => {
                let p: ResourceReadParams = params(raw)?;
                let sandbox = self.service.sandbox().clone();
                // An answer is built only while the answers queued and not yet written stay
                // under `OUTBOUND_ROOM`, and at most `MAX_CONCURRENT_READS` at once.
                conn.outbound_room(resources::OUTBOUND_ROOM).await;
                let permit = Arc::clone(&self.reads)
                    .acquire_owned()
                    .await
                    .map_err(|_| RpcError::internal("the host is shutting down"))?;
                let read = resources::read(p.uri, p.encoding, sandbox).await?;
                // Until the answer's frame is built and queued.
                conn.hold_until_replied(permit);
                Ok(resources::read_answer(read))
            }
            method if resources::WRITE_METHODS.contains(&method) => Err(
                RpcError::permission_denied(format!("{method}: this host's files are read-only")),
            ),
            "x-checkpoint/diff" => {
                let p: checkpoint_commands::DiffParams = params(raw)?;
                let (checkpoints, target) =
                    checkpoint_commands::target(&self.service, &self.state, &p.session).await?;
                encode(&checkpoint_commands::diff(checkpoints.as_ref(), &target, &p).await?)
            }
            "x-checkpoint/rollback" => {
                let p: checkpoint_commands::RollbackParams = params(raw)?;
                let (checkpoints, target) =
                    checkpoint_commands::target(&self.service, &self.state, &p.session).await?;
                let rolled_back =
                    checkpoint_commands::rollback(checkpoints.as_ref(), &target, &p).await?;
                if let Some(audit) = self.audit.get() {
                    audit.record(agenthost_services::audit_entry(
                        Some(&conn.grant().name),
                        conn.client_id().as_deref(),
                        &p.session,
                        "x-checkpoint/rollback",
                        serde_json::json!({ "turnId": p.turn_id, "restored": rolled_back.restored.len(),
                                            "removed": rolled_back.removed.len() }),
                    ));
                }
                encode(&rolled_back)
            }
            "createChat" => {
                let p: CreateChatParams = params(raw)?;
                if let Some(message) = &p.initial_message
                    && message.origin.kind != agenthost_protocol::state::MessageKind::User
                {
                    return Err(RpcError::invalid_params(
                        "initialMessage: clients may only send user messages",
                    ));
                }
                self.service.create_chat(&p).await.map_err(service_error)?;
                if let Some(message) = p.initial_message {
                    // The first turn goes through the normal admission path.
                    let turn = self
                        .service
                        .start_initial_turn(&p.chat, &message)
                        .map_err(service_error)?;
                    self.orchestrator.start_turn(
                        &p.chat,
                        &turn,
                        message,
                        self.client_context(&conn),
                    );
                }
                Ok(Value::Null)
            }
            "disposeChat" => {
                let p: UnsubscribeParams = params(raw)?;
                let chat = self.resolve_chat(&p.channel);
                self.service
                    .dispose_chat(&chat)
                    .await
                    .map_err(service_error)?;
                self.orchestrator.dispose_chat(&chat).await;
                Ok(Value::Null)
            }
            "listSessions" => {
                let (limit, cursor) = requests::list_sessions_page(raw.as_ref())?;
                let mut page = self
                    .service
                    .list_sessions_page(limit, cursor.as_deref())
                    .map_err(service_error)?;
                let scope = &conn.grant().scope;
                page.items.retain(|s| scope.sees_session(&s.resource));
                encode(&page)
            }
            "fetchTurns" => {
                let p: FetchTurnsParams = params(raw)?;
                let chat = self.resolve_chat(&p.channel);
                self.service
                    .fetch_turns(&chat)
                    .await
                    .map_err(service_error)?;
                encode(&FetchTurnsResult {})
            }
            "resolveSessionConfig" => {
                let p: ResolveSessionConfigParams = params(raw)?;
                let agents = self.state.read(|h| h.root().agents.clone());
                let config = self.session_config.get();
                encode(&requests::resolve_session_config(p, config, &agents)?)
            }
            "completions" => {
                let p: CompletionsParams = params(raw)?;
                let channel = self.resolve_chat(&p.channel);
                let restored = self.service.ensure_channel(&channel).await.is_ok();
                let chat = compat::completions_channel(&channel, |session| {
                    self.state
                        .read(|h| h.session(session).and_then(|s| s.default_chat.clone()))
                });
                let exists = restored && self.state.read(|h| h.channel_kind(&chat).is_some());
                encode(&requests::completions(&p, &chat, exists)?)
            }
            "authenticate" => {
                let p: AuthenticateParams = params(raw)?;
                Err(requests::authenticate(&p))
            }
            "getNetworkDiagnosticsInfo" => Ok(crate::machine::network_diagnostics(
                self.machine
                    .get()
                    .unwrap_or(&crate::machine::MachineFacts::default()),
            )),
            "getManagedSettingsDiagnostics" => Ok(crate::machine::managed_settings_diagnostics()),
            other => Err(RpcError::method_not_found(other)),
        }
    }

    /// A `dispatchAction` over the connection's rate limit: echoed back to it alone with a
    /// `rejectionReason` and a fresh `serverSeq`, applied nowhere (AHP §6.1: problems with a
    /// dispatched action are reported through `rejectionReason`). An unknown channel is
    /// ignored as always; an evicted session is not restored for it.
    /// Binds `client_id` to `conn` (see [`crate::clients`]): refused when another token owns
    /// it; a connection of the same client it replaces is closed.
    fn bind_client(&self, conn: &Connection, client_id: &str) -> Result<(), RpcError> {
        let replaced = self
            .peers()
            .clients
            .bind(client_id, conn)
            .map_err(|taken| {
                tracing::warn!(
                    conn = %conn.id(),
                    token = conn.grant().name,
                    owner = taken.owner,
                    "refused a client id that belongs to another token"
                );
                RpcError::permission_denied(format!(
                    "client id {:?} belongs to another token; choose another client id",
                    agenthost_protocol::uri::snippet(client_id)
                ))
            })?;
        if let Some(old) = replaced {
            tracing::info!(conn = %old.id(), by = %conn.id(), "a newer connection took over its client id");
            old.close_with(
                crate::connection::CLOSE_POLICY,
                "another connection of this client took over its client id",
                false,
            );
        }
        Ok(())
    }

    /// The session `channel` belongs to (`None` for the root and channels of no session).
    fn channel_session(&self, channel: &str) -> Option<String> {
        match agenthost_protocol::Channel::parse(channel).ok()? {
            agenthost_protocol::Channel::Session(session)
            | agenthost_protocol::Channel::Annotations(session) => Some(session.into_string()),
            agenthost_protocol::Channel::Chat(chat) => {
                self.service.chat_session(&self.resolve_chat(chat.as_str()))
            }
            agenthost_protocol::Channel::Changeset(uri) => {
                agenthost_protocol::uri::ChangesetUri::parse(&uri)
                    .ok()
                    .map(|changeset| changeset.session_uri().to_string())
            }
            _ => None,
        }
    }

    /// Whether `conn`'s token may see `channel`: a `session:` token only the root and its own
    /// session's channels.
    fn channel_allowed(&self, conn: &Connection, channel: &str) -> Result<(), RpcError> {
        let grant = conn.grant();
        let Scope::Session(own) = &grant.scope else {
            return Ok(());
        };
        if channel == ROOT_RESOURCE_URI
            || self
                .channel_session(channel)
                .is_some_and(|session| grant.scope.sees_session(&session))
        {
            return Ok(());
        }
        Err(RpcError::permission_denied(format!(
            "the token {:?} this connection presented is limited to {own}",
            grant.name
        )))
    }

    /// Whether `conn`'s token may make the request `method`: `observe` only the reading ones
    /// ([`READ_METHODS`]); `session:` only about its own session, and no resource methods
    /// (they would show the rest of the roots).
    fn request_allowed(
        &self,
        conn: &Connection,
        method: &str,
        raw: Option<&Value>,
    ) -> Result<(), RpcError> {
        let grant = conn.grant();
        match &grant.scope {
            Scope::Full => Ok(()),
            Scope::Observe if READ_METHODS.contains(&method) => Ok(()),
            Scope::Observe => Err(RpcError::permission_denied(format!(
                "{}: the token {:?} this connection presented may only observe",
                agenthost_protocol::uri::snippet(method),
                grant.name
            ))),
            Scope::Session(own) => {
                if matches!(
                    method,
                    "listSessions"
                        | "resolveSessionConfig"
                        | "unsubscribe"
                        | "getNetworkDiagnosticsInfo"
                        | "getManagedSettingsDiagnostics"
                ) {
                    return Ok(());
                }
                let field = |name: &str| raw.and_then(|p| p.get(name)).and_then(Value::as_str);
                let channel = field("channel").or_else(|| field("session"));
                let limited = || {
                    RpcError::permission_denied(format!(
                        "{}: the token {:?} this connection presented is limited to {own}",
                        agenthost_protocol::uri::snippet(method),
                        grant.name
                    ))
                };
                match (method, channel) {
                    (m, _) if m.starts_with("resource") => Err(limited()),
                    ("createSession", Some(channel)) if grant.scope.sees_session(channel) => Ok(()),
                    ("createSession", _) => Err(limited()),
                    (_, Some(channel)) => self.channel_allowed(conn, channel),
                    (_, None) => Err(limited()),
                }
            }
        }
    }

    fn refuse_rate_limited(&self, conn: &Connection, raw: Option<Value>) {
        let Ok(p) = params::<DispatchActionParams>(raw) else {
            tracing::debug!(conn = %conn.id(), "dropped a malformed dispatchAction over the rate limit");
            return;
        };
        let channel = self.resolve_chat(&p.channel);
        self.refuse(conn, &channel, p, RATE_LIMITED_REASON);
    }

    /// Echoes a dispatched action back to `conn` alone, rejected with `reason` (an action on an
    /// unknown channel is ignored, as the specification says).
    fn refuse(&self, conn: &Connection, channel: &str, p: DispatchActionParams, reason: &str) {
        let origin = ActionOrigin {
            client_id: conn.client_id().unwrap_or_default(),
            client_seq: p.client_seq,
        };
        match self.state.reject_client(channel, p.action, origin, reason) {
            Some(echo) => {
                let _ = conn.send_frame(action_frame(&echo));
            }
            None => tracing::debug!(channel, "ignoring an action on an unknown channel"),
        }
    }

    async fn dispatch_action(&self, conn: &Connection, p: DispatchActionParams) {
        let channel = self.resolve_chat(&p.channel);
        let grant = conn.grant();
        let refusal = if grant.scope.may_write() {
            self.channel_allowed(conn, &channel)
                .err()
                .map(|error| error.message)
        } else {
            Some(format!(
                "the token {:?} this connection presented may only observe",
                grant.name
            ))
        };
        if let Some(reason) = refusal {
            self.refuse(conn, &channel, p, &reason);
            return;
        }
        if let Err(error) = self.service.ensure_channel(&channel).await {
            // An unknown channel: the action is ignored below, as the specification says.
            tracing::debug!(channel, %error, "channel not restorable");
        }
        let origin = ActionOrigin {
            client_id: conn.client_id().unwrap_or_default(),
            client_seq: p.client_seq,
        };
        match self.client_action(&channel, p.action, origin, &self.client_context(conn)) {
            ClientDispatch::Accepted(_) => {}
            ClientDispatch::Rejected(echo) => {
                // The rejection goes to the dispatching connection only.
                let _ = conn.send_frame(action_frame(&echo));
            }
            ClientDispatch::Ignored => {
                tracing::debug!(channel, "ignoring an action on an unknown channel");
            }
        }
    }
}

impl ProtocolHandler for Host {
    /// Stops every agent, then waits for the contributions' queued store writes (drafts, flags,
    /// titles, usage) so a graceful stop loses none of them.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.orchestrator.stop_all_agents().await;
            let timeout = *self
                .shutdown_write_timeout
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let flushed =
                tokio::time::timeout(timeout, agenthost_services::flush_pending_writes()).await;
            if flushed.is_err() {
                tracing::warn!(
                    ?timeout,
                    "shutdown: queued store writes did not finish in time; some may be lost"
                );
            }
            // Last, the chat history the store refused so far: once more before exiting.
            let kept = self.service.flush_history();
            let (_, peak) = self.service.history_backlog();
            tracing::info!(
                kept,
                peak,
                "shutdown: chat history written (peak: the most writes the store ever kept waiting)"
            );
        })
    }

    fn initialize(
        &self,
        conn: Connection,
        p: InitializeParams,
        version: NegotiatedVersion,
    ) -> BoxFuture<'_, Result<InitializeResult, RpcError>> {
        Box::pin(async move {
            self.bind_client(&conn, &p.client_id)?;
            {
                let mut peers = self.peers();
                peers.versions.insert(p.client_id.clone(), version.clone());
                peers
                    .dialects
                    .insert(p.client_id.clone(), ClientDialect::detect(&p));
            }
            let mut snapshots = Vec::new();
            for channel in p.initial_subscriptions.iter().flatten() {
                match self.subscribe(&conn, channel).await {
                    Ok(SubscribeResult { snapshot: Some(s) }) => snapshots.push(s),
                    Ok(_) => {}
                    Err(error) => tracing::debug!(channel, %error, "initial subscription skipped"),
                }
            }
            Ok(InitializeResult {
                protocol_version: version.as_str().to_owned(),
                server_seq: i64::try_from(self.state.server_seq()).unwrap_or(i64::MAX),
                server_info: Some(Implementation {
                    name: "agenthost".to_owned(),
                    version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                    title: Some("agenthost".to_owned()),
                }),
                meta: None,
                snapshots,
                default_directory: self.service.default_directory(),
                completion_trigger_characters: None,
                terminal_command_prefix: None,
                telemetry: None,
                automations: None,
            })
        })
    }

    fn reconnect(
        &self,
        conn: Connection,
        p: ReconnectParams,
    ) -> BoxFuture<'_, Result<Reconnected, RpcError>> {
        Box::pin(async move {
            self.bind_client(&conn, &p.client_id)?;
            // The surface is known before any subscription is attached again, so no live
            // action the peer's version lacks slips out in between.
            let remembered = self.peers().versions.get(&p.client_id).cloned();
            let protocol_version = remembered
                .or_else(|| NegotiatedVersion::from_version("0.9.0"))
                .ok_or_else(|| RpcError::internal("no protocol version to serve"))?;
            conn.set_peer(Some(protocol_version.clone()), Some(p.client_id.clone()));
            let subscriber = self.subscriber(&conn);
            let mut channels: Vec<String> = Vec::new();
            let mut refused: Vec<String> = Vec::new();
            for channel in &p.subscriptions {
                let channel = self.resolve_chat(channel);
                if channels.contains(&channel) {
                    continue;
                }
                if self.channel_allowed(&conn, &channel).is_err() {
                    refused.push(channel);
                    continue;
                }
                // Beyond the connection's limit: "not permitted", reported in `missing`.
                if channels.len() < conn.max_subscriptions() {
                    channels.push(channel);
                } else {
                    refused.push(channel);
                }
            }
            if !refused.is_empty() {
                tracing::debug!(
                    conn = %conn.id(),
                    refused = refused.len(),
                    max = conn.max_subscriptions(),
                    "reconnect: subscriptions beyond the limit left out"
                );
            }
            for channel in &channels {
                // A channel that cannot be restored is reported in `missing` (or left out).
                let _ = self.service.ensure_channel(channel).await;
            }
            let outcome = self
                .state
                .reconnect(subscriber, p.last_seen_server_seq, &channels)
                .map_err(|e| RpcError::internal(e.to_string()))?;
            // The channels the connection is subscribed to again.
            let live: Vec<&String> = match &outcome {
                ReconnectOutcome::Replay { missing, .. } => {
                    channels.iter().filter(|c| !missing.contains(c)).collect()
                }
                ReconnectOutcome::Snapshot { snapshots } => {
                    snapshots.iter().map(|s| &s.resource).collect()
                }
            };
            self.record_subscriptions(&conn, live.iter().map(|c| c.as_str()));
            if let Some(tracker) = self.tracker() {
                if let Some(client) = conn.client_id() {
                    tracker.identified(&conn.id().to_string(), &client);
                }
                for channel in live {
                    tracker.subscribed(&conn.id().to_string(), channel);
                }
            }
            let result = match outcome {
                ReconnectOutcome::Replay {
                    actions,
                    mut missing,
                } => {
                    missing.extend(refused);
                    ReconnectResult::Replay(ReconnectReplayResult { actions, missing })
                }
                ReconnectOutcome::Snapshot { snapshots } => {
                    ReconnectResult::Snapshot(ReconnectSnapshotResult { snapshots })
                }
            };
            let mut result = result;
            if let ReconnectResult::Replay(replay) = &mut result {
                let surface = protocol_version.surface();
                replay
                    .actions
                    .retain(|envelope| compat::envelope_allowed(surface, envelope));
            }
            Ok(Reconnected {
                result,
                protocol_version,
            })
        })
    }

    fn request(
        &self,
        conn: Connection,
        method: String,
        raw: Option<Value>,
    ) -> BoxFuture<'_, Result<Value, RpcError>> {
        Box::pin(async move { self.handle_request(conn, &method, raw).await })
    }

    fn to_host_spelling(&self, conn: &Connection, params: &mut Value) {
        let spellings = conn.spellings();
        for named in compat::named_sessions(params) {
            if spellings.is_resolved(named.as_str()) {
                continue;
            }
            match self.service.session_spelling(&named) {
                Some(host) if host != named => {
                    tracing::debug!(conn = %conn.id(), client = %named, host = %host, "the client spells this session differently");
                    spellings.add(&host, &named);
                }
                Some(_) => spellings.resolved_as_itself(named.as_str()),
                None => {}
            }
        }
        spellings.to_host(params);
    }

    fn notification(
        &self,
        conn: Connection,
        method: String,
        raw: Option<Value>,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            match method.as_str() {
                "dispatchAction" if !conn.admit_dispatch() => {
                    self.refuse_rate_limited(&conn, raw);
                }
                "dispatchAction" => match params::<DispatchActionParams>(raw.map(|mut raw| {
                    if raw.pointer("/action/type").and_then(Value::as_str)
                        == Some("session/configChanged")
                        && let Some(config) = raw.pointer_mut("/action/config")
                    {
                        compat::migrate_legacy_autopilot(config);
                    }
                    raw
                })) {
                    Ok(p) => self.dispatch_action(&conn, p).await,
                    Err(error) => {
                        tracing::warn!(conn = %conn.id(), %error.message, "malformed dispatchAction");
                    }
                },
                "unsubscribe" => {
                    if let Ok(p) = params::<UnsubscribeParams>(raw) {
                        // The channel `subscribe` resolved, so an alias ends the subscription.
                        let channel = self.resolve_chat(&p.channel);
                        let subscriber = self.subscriber(&conn);
                        self.state.unsubscribe(subscriber, &channel);
                        if let Some(channels) = self.peers().subscriptions.get_mut(&conn.id()) {
                            channels.remove(&channel);
                        }
                        if let Some(tracker) = self.tracker() {
                            tracker.unsubscribed(&conn.id().to_string(), &channel);
                        }
                    }
                }
                other => tracing::debug!(method = other, "ignoring an unknown notification"),
            }
        })
    }

    fn disconnected(&self, conn: Connection) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let subscriber = {
                let mut peers = self.peers();
                if let Some(client) = conn.client_id() {
                    peers.clients.disconnected(&client, conn.id());
                }
                peers.subscriptions.remove(&conn.id());
                peers.subscribers.remove(&conn.id())
            };
            if let Some(subscriber) = subscriber {
                self.state.remove_subscriber(subscriber);
            }
            if let Some(tracker) = self.tracker() {
                tracker.disconnected(&conn.id().to_string());
            }
        })
    }
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;

//! [`Host`]: the AHP methods over the session service, the state manager and the orchestrator.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_protocol::commands::{
    CreateChatParams, DispatchActionParams, FetchTurnsParams, FetchTurnsResult, Implementation,
    InitializeParams, InitializeResult, ReconnectParams, ReconnectReplayResult, ReconnectResult,
    ReconnectSnapshotResult, SubscribeParams, SubscribeResult, UnsubscribeParams,
};
use agenthost_service::bounded::BoundedMap;
use agenthost_service::checkpoint_commands::{DiffParams, RollbackParams};
use agenthost_service::resources;
use agenthost_service::spend::SpendParams;
use agenthost_service::{
    AgentService, ClientContext, Outbox, Reattached, ReconnectOutcome, ServiceError, SubscriberId,
};
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::clients::ClientBindings;
use crate::connection::{Connection, ConnectionId};
use crate::handler::{ProtocolHandler, Reconnected};
use crate::requests;
use agenthost_protocol::NegotiatedVersion;
use agenthost_protocol::RpcError;
use agenthost_protocol::ahp_types::commands::{
    AuthenticateParams, CompletionsParams, ResolveSessionConfigParams, ResourceListParams,
    ResourceReadParams, ResourceResolveParams,
};
use agenthost_protocol::dialect::{self, ClientDialect};

mod gates;

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
        if !dialect::frame_allowed(surface, &frame) {
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
    /// The dialect each client id announced at `initialize` (see [`dialect::ClientDialect`]),
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

/// The protocol side of the host: connections, their subscriptions, access and dialects, over
/// the host's use cases ([`AgentService`]). One per host process.
pub struct Host {
    service: Arc<AgentService>,
    peers: Mutex<Peers>,
    /// The machine, for the diagnostics requests.
    machine: agenthost_protocol::machine::MachineFacts,
    /// Permits for concurrent `resourceRead`s ([`resources::MAX_CONCURRENT_READS`]).
    reads: Arc<tokio::sync::Semaphore>,
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

/// A URI from the params, typed once at the boundary; an invalid one is answered as the service
/// answers it.
fn typed<T: std::str::FromStr<Err = agenthost_protocol::UriError>>(
    uri: &str,
) -> Result<T, RpcError> {
    uri.parse()
        .map_err(|error| service_error(ServiceError::from(error)))
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
    /// The transport's side of the host over `service`, on `machine` (what the diagnostics
    /// requests report).
    pub fn new(
        service: Arc<AgentService>,
        machine: agenthost_protocol::machine::MachineFacts,
    ) -> Arc<Self> {
        Arc::new(Self {
            service,
            peers: Mutex::new(Peers::default()),
            machine,
            reads: Arc::new(tokio::sync::Semaphore::new(resources::MAX_CONCURRENT_READS)),
        })
    }

    /// The chat a client names, as the host knows it: a derived default chat in any spelling
    /// ([`dialect::chat_spelling`]) resolved to its session's default chat.
    fn resolve_chat(&self, uri: &str) -> String {
        self.service
            .sessions()
            .resolve_chat(&dialect::chat_spelling(uri))
    }

    fn peers(&self) -> MutexGuard<'_, Peers> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection's subscriber id, registering it on first use.
    fn subscriber(&self, conn: &Connection) -> SubscriberId {
        let mut peers = self.peers();
        *peers.subscribers.entry(conn.id()).or_insert_with(|| {
            self.service
                .register_subscriber(Arc::new(ConnectionOutbox(conn.clone())))
        })
    }

    fn client_context(&self, conn: &Connection) -> ClientContext {
        ClientContext {
            client_id: conn.client_id(),
            client_kind: conn
                .client_id()
                .and_then(|id| self.peers().dialects.get(&id).copied())
                .and_then(ClientDialect::client_kind),
            launch_kind: self.service.launch_kind().clone(),
            token: Some(conn.grant().name.clone()),
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
        self.service.retain_live(channels);
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
        let snapshot = self
            .service
            .subscribe(
                &conn.id().to_string(),
                conn.client_id().as_deref(),
                self.subscriber(conn),
                &channel,
            )
            .await
            .map_err(service_error)?;
        self.record_subscriptions(conn, std::iter::once(channel.as_str()));
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
                    dialect::migrate_legacy_autopilot(config);
                }
                let (p, dropped) = dialect::create_session_params(raw)
                    .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))?;
                if dropped > 0 {
                    tracing::debug!(
                        session = p.channel,
                        dropped,
                        "createSession: left out client tools or customizations this host cannot read"
                    );
                }
                let client_id = conn.client_id().unwrap_or_default();
                self.service
                    .create_session(p, &client_id)
                    .await
                    .map_err(service_error)?;
                Ok(Value::Null)
            }
            "disposeSession" => {
                let p: UnsubscribeParams = params(raw)?;
                self.service
                    .dispose_session(&typed(&p.channel)?)
                    .await
                    .map_err(service_error)?;
                Ok(Value::Null)
            }
            "x-deleteSession" => {
                let p: UnsubscribeParams = params(raw)?;
                self.service
                    .delete_session(&typed(&p.channel)?)
                    .await
                    .map_err(service_error)?;
                Ok(Value::Null)
            }
            "resourceList" => {
                let p: ResourceListParams = params(raw)?;
                encode(&resources::list(p.uri, self.service.sessions().sandbox().clone()).await?)
            }
            "resourceResolve" => {
                let p: ResourceResolveParams = params(raw)?;
                let sandbox = self.service.sessions().sandbox().clone();
                encode(&resources::resolve(p.uri, p.follow_symlinks, sandbox).await?)
            }
            "resourceRead" => {
                let p: ResourceReadParams = params(raw)?;
                let sandbox = self.service.sessions().sandbox().clone();
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
                let p: DiffParams = params(raw)?;
                encode(
                    &self
                        .service
                        .checkpoint_diff(&p)
                        .await
                        .map_err(service_error)?,
                )
            }
            "x-spend" => {
                let p: SpendParams = params(raw)?;
                encode(&self.service.spend(&p).await.map_err(service_error)?)
            }
            "x-checkpoint/rollback" => {
                let p: RollbackParams = params(raw)?;
                let token = &conn.grant().name;
                let client = conn.client_id();
                let rolled_back = self
                    .service
                    .checkpoint_rollback(&p, Some(token), client.as_deref())
                    .await
                    .map_err(service_error)?;
                encode(&rolled_back)
            }
            "createChat" => {
                let p: CreateChatParams = params(raw)?;
                let context = self.client_context(&conn);
                self.service
                    .create_chat(p, context)
                    .await
                    .map_err(service_error)?;
                Ok(Value::Null)
            }
            "disposeChat" => {
                let p: UnsubscribeParams = params(raw)?;
                let chat = typed(&self.resolve_chat(&p.channel))?;
                self.service
                    .dispose_chat(&chat)
                    .await
                    .map_err(service_error)?;
                Ok(Value::Null)
            }
            "listSessions" => {
                let (limit, cursor) = requests::list_sessions_page(raw.as_ref())?;
                let mut page = self
                    .service
                    .sessions()
                    .list_sessions_page(limit, cursor.as_deref())
                    .map_err(service_error)?;
                let scope = &conn.grant().scope;
                page.items.retain(|s| scope.sees_session(&s.resource));
                encode(&page)
            }
            "fetchTurns" => {
                let p: FetchTurnsParams = params(raw)?;
                let chat = typed(&self.resolve_chat(&p.channel))?;
                self.service
                    .sessions()
                    .fetch_turns(&chat)
                    .await
                    .map_err(service_error)?;
                encode(&FetchTurnsResult {})
            }
            "resolveSessionConfig" => {
                let p: ResolveSessionConfigParams = params(raw)?;
                let agents = self.service.agents();
                let config = self.service.session_config();
                encode(&requests::resolve_session_config(p, config, &agents)?)
            }
            "completions" => {
                let p: CompletionsParams = params(raw)?;
                let channel = self.resolve_chat(&p.channel);
                let chat = self.service.completion_chat(&channel).await;
                let exists = chat.is_some();
                let chat = chat.unwrap_or(channel);
                encode(&requests::completions(&p, &chat, exists)?)
            }
            "authenticate" => {
                let p: AuthenticateParams = params(raw)?;
                Err(requests::authenticate(&p))
            }
            "getNetworkDiagnosticsInfo" => Ok(agenthost_protocol::machine::network_diagnostics(
                &self.machine,
            )),
            "getManagedSettingsDiagnostics" => {
                Ok(agenthost_protocol::machine::managed_settings_diagnostics())
            }
            other => Err(RpcError::method_not_found(other)),
        }
    }
}

impl ProtocolHandler for Host {
    /// Stops every agent, then waits for the contributions' queued store writes (drafts, flags,
    /// titles, usage) so a graceful stop loses none of them.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.service.shutdown())
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
                server_seq: i64::try_from(self.service.server_seq()).unwrap_or(i64::MAX),
                server_info: Some(Implementation {
                    name: "agenthost".to_owned(),
                    version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                    title: Some("agenthost".to_owned()),
                }),
                meta: None,
                snapshots,
                default_directory: self.service.sessions().default_directory(),
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
            let Reattached { outcome, live } = self
                .service
                .reconnect(
                    &conn.id().to_string(),
                    conn.client_id().as_deref(),
                    subscriber,
                    p.last_seen_server_seq,
                    &channels,
                )
                .await
                .map_err(service_error)?;
            self.record_subscriptions(&conn, live.iter().map(String::as_str));
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
                    .retain(|envelope| dialect::envelope_allowed(surface, envelope));
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
        for named in dialect::named_sessions(params) {
            if spellings.is_resolved(named.as_str()) {
                continue;
            }
            match self.service.sessions().session_spelling(&named) {
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
                        dialect::migrate_legacy_autopilot(config);
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
                        self.service
                            .unsubscribe(&conn.id().to_string(), subscriber, &channel);
                        if let Some(channels) = self.peers().subscriptions.get_mut(&conn.id()) {
                            channels.remove(&channel);
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
            self.service
                .disconnected(&conn.id().to_string(), subscriber);
        })
    }
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;

//! One client connection: the [`Connection`] handle and the tasks behind it.
//!
//! Per connection there are three tasks and a supervisor:
//!
//! * the **reader** decodes one JSON-RPC message per text frame. It answers `ping`, malformed
//!   frames and binary frames itself, through the *priority* queue, so they never wait behind
//!   other work; it hands client responses to [`ProtocolHandler::response`]; everything else goes
//!   to the worker in arrival order.
//! * the **worker** processes requests and notifications strictly in order: the `initialize`
//!   version negotiation, the "initialize first" gate, then the handler.
//! * the **writer** drains the priority queue first, then the outbound queue, into the socket.
//!   The outbound queue stays *closed* until the `initialize`/`reconnect` response has been
//!   queued, so that response always precedes frames the handler sent while producing it.
//! * the **supervisor** waits for the first of: the client closed, a write failed, a close was
//!   requested (lag, version mismatch, [`Connection::close`]), server shutdown. It then closes
//!   cleanly within `close_timeout`, lets the worker finish what was received, and calls
//!   [`ProtocolHandler::disconnected`] exactly once.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agenthost_protocol::commands::{InitializeParams, ReconnectParams};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::{Message, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Utf8Bytes};

use crate::access::{Credentials, Grant};
use crate::config::ServerConfig;
use crate::handler::{ProtocolHandler, Reconnected};
use crate::handshake::{self, Prefixed};
use crate::origin::OriginPolicy;
use crate::rate::{Admission, TokenBucket};
use agenthost_protocol::dialect::UriSpellings;
use agenthost_protocol::jsonrpc::{self as rpc, DecodeError, Incoming, RpcError};
use agenthost_protocol::negotiation::{self as version, NegotiatedVersion, SUPPORTED_VERSIONS};

mod loops;

use loops::*;

/// Close code: normal closure.
pub(crate) const CLOSE_NORMAL: u16 = 1000;
/// Close code: the server is going away (shutdown).
pub(crate) const CLOSE_GOING_AWAY: u16 = 1001;
/// Close code: policy violation (the connection's token was revoked).
pub(crate) const CLOSE_POLICY: u16 = 1008;
/// Close code: a text message was not valid UTF-8 (RFC 6455 requires failing the connection).
pub(crate) const CLOSE_INVALID_PAYLOAD: u16 = 1007;
/// Close code: a message exceeded `max_frame_bytes`.
pub(crate) const CLOSE_TOO_BIG: u16 = 1009;
/// Close code: the host failed (a handler panicked).
pub(crate) const CLOSE_INTERNAL_ERROR: u16 = 1011;
/// Close code: the client lagged; try again (reconnect) later.
pub(crate) const CLOSE_TRY_AGAIN_LATER: u16 = 1013;

/// The reason sent when a connection is closed for lagging.
pub(crate) const LAGGED_REASON: &str = "outbound queue full: client too slow; reconnect to resync";

/// Most frames written between two flushes.
const MAX_WRITE_BATCH: usize = 64;

/// A close reason may hold at most 123 bytes (RFC 6455 §5.5).
const MAX_CLOSE_REASON_BYTES: usize = 123;

/// The longest `clientId` taken, in bytes (VS Code sends a UUID): the host remembers client
/// ids, so a megabyte-long one is refused rather than kept.
pub const MAX_CLIENT_ID_BYTES: usize = 256;

/// Identifies a connection for the lifetime of the server (numbered from 1 per server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnectionId(u64);

impl ConnectionId {
    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A frame was not queued: the connection lagged (its outbound queue was full, so it is now
/// being closed) or it is already closed. Either way the client will not see this frame; drop
/// the connection from every subscriber set. A client that comes back does so with `reconnect`
/// and gets a `replay` or a `snapshot`, so nothing is lost for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the connection lagged or is closed; the frame was dropped")]
pub struct Lagged;

/// How a connection is to be closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CloseRequest {
    pub code: u16,
    pub reason: String,
    /// Write the frames already queued before the close frame.
    pub drain: bool,
}

/// A shared handle on one client connection. Cheap to clone; stays valid (and harmless) after
/// the connection is gone: sends then fail with [`Lagged`].
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
}

struct Shared {
    id: ConnectionId,
    peer: Option<SocketAddr>,
    /// The token the client presented on the upgrade.
    grant: Grant,
    peer_state: Mutex<PeerState>,
    outbound: mpsc::Sender<Queued>,
    priority: mpsc::Sender<Queued>,
    /// The bytes of every connection's queued frames (shared by the server's connections).
    queued_bytes: Arc<OutboundBytes>,
    /// Held by the handler until the answer to the request in hand is queued.
    reply_guard: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    /// `true` once the `initialize`/`reconnect` response is queued; the writer holds the
    /// outbound queue until then.
    outbound_open: watch::Sender<bool>,
    close: watch::Sender<Option<CloseRequest>>,
    lagged: AtomicBool,
    /// `ServerConfig::max_subscriptions`, enforced by the handler.
    max_subscriptions: usize,
    /// The `dispatchAction` budget (`ServerConfig::dispatch_rate` / `dispatch_burst`).
    dispatch_budget: Mutex<TokenBucket>,
    /// The session URIs this client spells differently from the host (shared with the writer).
    spellings: Arc<UriSpellings>,
}

/// The per-connection limits a handler enforces (from [`ServerConfig`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub outbound_queue: usize,
    pub max_subscriptions: usize,
    pub dispatch_rate: u32,
    pub dispatch_burst: u32,
}

impl Limits {
    pub(crate) fn of(config: &ServerConfig) -> Self {
        Self {
            outbound_queue: config.outbound_queue,
            max_subscriptions: config.max_subscriptions,
            dispatch_rate: config.dispatch_rate,
            dispatch_burst: config.dispatch_burst,
        }
    }
}

#[derive(Default)]
struct PeerState {
    version: Option<NegotiatedVersion>,
    client_id: Option<String>,
}

/// The receiving ends of a connection's queues, for its writer.
pub(crate) struct Queues {
    outbound: mpsc::Receiver<Queued>,
    priority: mpsc::Receiver<Queued>,
    outbound_open: watch::Receiver<bool>,
    close: watch::Receiver<Option<CloseRequest>>,
    /// Every frame is written in the client's spellings of session URIs.
    spellings: Arc<UriSpellings>,
}

#[cfg(test)]
impl Queues {
    /// The next frame of the outbound queue, if any, as it would be written.
    pub(crate) fn try_next_outbound(&mut self) -> Option<Arc<str>> {
        self.outbound
            .try_recv()
            .ok()
            .map(|queued| self.spellings.to_client(&queued.frame))
    }
}

impl Connection {
    pub(crate) fn new(
        id: ConnectionId,
        peer: Option<SocketAddr>,
        limits: Limits,
        grant: Grant,
        queued_bytes: Arc<OutboundBytes>,
    ) -> (Self, Queues) {
        let queue = limits.outbound_queue;
        let (outbound_tx, outbound) = mpsc::channel(queue);
        let (priority_tx, priority) = mpsc::channel(queue);
        let (open_tx, outbound_open) = watch::channel(false);
        let (close_tx, close) = watch::channel(None);
        let spellings = Arc::new(UriSpellings::default());
        let connection = Self {
            shared: Arc::new(Shared {
                id,
                peer,
                grant,
                peer_state: Mutex::new(PeerState::default()),
                outbound: outbound_tx,
                priority: priority_tx,
                queued_bytes,
                reply_guard: Mutex::new(None),
                outbound_open: open_tx,
                close: close_tx,
                lagged: AtomicBool::new(false),
                max_subscriptions: limits.max_subscriptions,
                dispatch_budget: Mutex::new(TokenBucket::new(
                    limits.dispatch_rate,
                    limits.dispatch_burst,
                )),
                spellings: Arc::clone(&spellings),
            }),
        };
        let queues = Queues {
            outbound,
            priority,
            outbound_open,
            close,
            spellings,
        };
        (connection, queues)
    }

    /// A connection with no socket, for unit tests of handlers: keep the queues to read what
    /// it was sent.
    #[cfg(test)]
    pub(crate) fn detached(id: u64, config: &ServerConfig) -> (Self, Queues) {
        Self::new(
            ConnectionId(id),
            None,
            Limits::of(config),
            Grant::primary(),
            Arc::default(),
        )
    }

    /// Like [`Self::detached`], for a client that presented a token with `grant`.
    #[cfg(test)]
    pub(crate) fn detached_with(id: u64, config: &ServerConfig, grant: Grant) -> (Self, Queues) {
        Self::new(
            ConnectionId(id),
            None,
            Limits::of(config),
            grant,
            Arc::default(),
        )
    }

    /// Keeps `guard` until the answer to the request being handled has been serialized and
    /// queued (a handler bounding how many large answers exist at once holds its permit so).
    pub(crate) fn hold_until_replied(&self, guard: impl Send + 'static) {
        *self
            .shared
            .reply_guard
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(Box::new(guard));
    }

    fn take_reply_guard(&self) -> Option<Box<dyn std::any::Any + Send>> {
        self.shared
            .reply_guard
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Waits until the frames queued on all of the server's connections, not yet written, are
    /// fewer than `limit` bytes (a large answer is only built when there is room for it).
    pub(crate) async fn outbound_room(&self, limit: usize) {
        self.shared.queued_bytes.room(limit).await;
    }

    /// The token the client presented (its name and scope).
    pub fn grant(&self) -> &Grant {
        &self.shared.grant
    }

    /// The connection's id.
    pub fn id(&self) -> ConnectionId {
        self.shared.id
    }

    /// The version negotiated by `initialize` (or returned by the handler for `reconnect`);
    /// `None` before.
    pub fn protocol_version(&self) -> Option<NegotiatedVersion> {
        self.peer_state().version.clone()
    }

    /// The session URIs this client spells differently from the host: what it sends is read,
    /// and every frame it is sent written, in its spellings.
    pub fn spellings(&self) -> &UriSpellings {
        &self.shared.spellings
    }

    /// The `clientId` of `initialize`/`reconnect`; `None` before.
    pub fn client_id(&self) -> Option<String> {
        self.peer_state().client_id.clone()
    }

    /// Queues one complete JSON-RPC message for this client, without waiting.
    ///
    /// Never blocks: when the bounded outbound queue (`ServerConfig::outbound_queue`) is full,
    /// the connection is marked lagged and closed (close code 1013), and this and every later
    /// send return [`Lagged`]. A slow subscriber therefore never stalls the host; the client
    /// reconnects and gets a `replay` or a `snapshot`. Frames sent while `initialize` or
    /// `reconnect` is being handled are delivered after that response.
    pub fn send_frame(&self, frame: Arc<str>) -> Result<(), Lagged> {
        self.enqueue(&self.shared.outbound, frame)
    }

    /// Closes the connection cleanly (close code 1000 with `reason`): frames already queued are
    /// written first, within `ServerConfig::close_timeout`.
    pub fn close(&self, reason: &str) {
        self.close_with(CLOSE_NORMAL, reason, true);
    }

    /// Whether the connection is closing or closed.
    pub fn is_closed(&self) -> bool {
        self.shared.close.borrow().is_some()
    }

    /// Whether the connection was closed because its outbound queue overflowed.
    pub fn is_lagged(&self) -> bool {
        self.shared.lagged.load(Ordering::Acquire)
    }

    /// The most channels this connection may be subscribed to at once
    /// (`ServerConfig::max_subscriptions`). The transport does not know subscriptions: the
    /// handler counts them and refuses one beyond this.
    pub fn max_subscriptions(&self) -> usize {
        self.shared.max_subscriptions
    }

    /// Takes one token of this connection's `dispatchAction` budget (`ServerConfig::dispatch_rate`
    /// per second, bursts of `ServerConfig::dispatch_burst`). `false`: the client is over it and
    /// the handler must not act on the action (the host echoes it back rejected). The start of
    /// each flood is logged once, at `warn`.
    pub fn admit_dispatch(&self) -> bool {
        let admission = self
            .shared
            .dispatch_budget
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .admit();
        match admission {
            Admission::Admitted => true,
            Admission::FirstRefused => {
                tracing::warn!(
                    conn = %self.id(),
                    client_id = ?self.client_id(),
                    "dispatchAction rate limit reached; refusing actions until the client slows down"
                );
                false
            }
            Admission::Refused => false,
        }
    }

    /// Requests a close; the first request wins.
    pub(crate) fn close_with(&self, code: u16, reason: &str, drain: bool) {
        let first = self.shared.close.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(CloseRequest {
                code,
                reason: truncate_reason(reason),
                drain,
            });
            true
        });
        if first {
            tracing::debug!(conn = %self.id(), code, reason, "closing connection");
        }
    }

    /// Queues a transport reply (ping, framing errors, pre-initialize answers) ahead of the
    /// outbound queue.
    fn send_priority(&self, frame: Arc<str>) {
        // A failure has already closed the connection; nothing else to do.
        let _ = self.enqueue(&self.shared.priority, frame);
    }

    fn enqueue(&self, queue: &mpsc::Sender<Queued>, frame: Arc<str>) -> Result<(), Lagged> {
        if self.is_closed() {
            return Err(Lagged);
        }
        match queue.try_send(Queued::new(frame, &self.shared.queued_bytes)) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.shared.lagged.swap(true, Ordering::AcqRel) {
                    tracing::warn!(
                        conn = %self.id(),
                        client_id = ?self.client_id(),
                        "outbound queue full; closing the lagging connection"
                    );
                }
                self.close_with(CLOSE_TRY_AGAIN_LATER, LAGGED_REASON, false);
                Err(Lagged)
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Lagged),
        }
    }

    fn open_outbound(&self) {
        self.shared.outbound_open.send_replace(true);
    }

    fn is_ready(&self) -> bool {
        *self.shared.outbound_open.borrow()
    }

    fn peer_state(&self) -> std::sync::MutexGuard<'_, PeerState> {
        self.shared
            .peer_state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the negotiated version and client id as `initialize` would, for unit tests of
    /// handlers on a detached connection.
    #[cfg(test)]
    pub(crate) fn initialized_as(&self, version: &str, client_id: &str) {
        self.set_peer(
            NegotiatedVersion::from_version(version),
            Some(client_id.to_owned()),
        );
    }

    pub(crate) fn set_peer(&self, version: Option<NegotiatedVersion>, client_id: Option<String>) {
        let mut state = self.peer_state();
        state.version = version;
        state.client_id = client_id;
    }

    fn close_request(&self) -> Option<CloseRequest> {
        self.shared.close.borrow().clone()
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.shared.id)
            .field("peer", &self.shared.peer)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

fn truncate_reason(reason: &str) -> String {
    if reason.len() <= MAX_CLOSE_REASON_BYTES {
        return reason.to_owned();
    }
    let mut end = MAX_CLOSE_REASON_BYTES;
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    reason[..end].to_owned()
}

/// What every connection of one server shares.
pub(crate) struct ConnContext {
    pub handler: Arc<dyn ProtocolHandler>,
    pub credentials: Arc<Credentials>,
    pub max_frame_bytes: usize,
    pub limits: Limits,
    pub inbound_queue: usize,
    pub max_connections: usize,
    pub handshake_timeout: Duration,
    pub close_timeout: Duration,
    pub origins: OriginPolicy,
    /// Whether plain HTTP requests get the page (`ServerConfig::web`).
    pub web: bool,
    /// The bytes of all connections' queued frames.
    pub queued_bytes: Arc<OutboundBytes>,
    next_id: AtomicU64,
    /// Connections accepted and not yet finished (see [`OpenSlot`]).
    open: AtomicUsize,
    /// Whether the last accepted connection was refused for `max_connections`.
    refusing: AtomicBool,
}

/// One of the `max_connections` places, held by a connection's task; freed on drop.
pub(crate) struct OpenSlot(Arc<ConnContext>);

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ConnContext {
    pub(crate) fn new(config: &ServerConfig, handler: Arc<dyn ProtocolHandler>) -> Self {
        Self {
            handler,
            credentials: Arc::new(Credentials::new(config.token.clone())),
            max_frame_bytes: config.max_frame_bytes,
            limits: Limits::of(config),
            inbound_queue: config.inbound_queue,
            max_connections: config.max_connections,
            handshake_timeout: config.handshake_timeout,
            close_timeout: config.close_timeout,
            origins: OriginPolicy::new(config.listen.ip(), &config.allowed_origins),
            web: config.web,
            queued_bytes: Arc::default(),
            next_id: AtomicU64::new(1),
            open: AtomicUsize::new(0),
            refusing: AtomicBool::new(false),
        }
    }

    /// Takes a place for a new connection, or `None` when `max_connections` are open. The
    /// start of a run of refusals is logged once, at `warn`.
    pub(crate) fn try_open(self: &Arc<Self>) -> Option<OpenSlot> {
        let taken = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.max_connections).then_some(open + 1)
            })
            .is_ok();
        if taken {
            self.refusing.store(false, Ordering::Release);
            return Some(OpenSlot(Arc::clone(self)));
        }
        if !self.refusing.swap(true, Ordering::AcqRel) {
            tracing::warn!(
                max_connections = self.max_connections,
                "connection limit reached; refusing new connections with HTTP 503"
            );
        }
        None
    }

    fn ws_config(&self) -> WebSocketConfig {
        // Both limits: a single frame's header is checked before its payload is buffered, and a
        // fragmented message is checked as it grows.
        WebSocketConfig::default()
            .max_frame_size(Some(self.max_frame_bytes))
            .max_message_size(Some(self.max_frame_bytes))
    }
}

type Ws<S> = WebSocketStream<Prefixed<S>>;
type WsSink<S> = SplitSink<Ws<S>, Message>;
type WsStream<S> = SplitStream<Ws<S>>;

/// Serves one accepted stream until it is closed.
pub(crate) async fn run<S>(
    stream: S,
    peer: Option<SocketAddr>,
    ctx: Arc<ConnContext>,
    mut shutdown: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let handshake = tokio::time::timeout(
        ctx.handshake_timeout,
        handshake::accept(
            stream,
            &ctx.credentials,
            &ctx.origins,
            ctx.ws_config(),
            ctx.web,
        ),
    );
    let (ws, grant) = tokio::select! {
        outcome = handshake => match outcome {
            Ok(Ok(accepted)) => accepted,
            Ok(Err(handshake::HandshakeError::Rejected(403))) => {
                tracing::warn!(?peer, "refused a WebSocket upgrade: missing or invalid token");
                return;
            }
            Ok(Err(handshake::HandshakeError::Refused(refusal))) => {
                tracing::warn!(?peer, "refused a WebSocket upgrade: {}", refusal.describe());
                return;
            }
            Ok(Err(handshake::HandshakeError::Page(answered))) => {
                match answered {
                    crate::web::Answered::NoToken => tracing::warn!(
                        ?peer,
                        "refused a page request: missing or invalid token"
                    ),
                    crate::web::Answered::Host => tracing::warn!(
                        ?peer,
                        "refused a page request: {}",
                        crate::origin::OriginRefusal::Host.describe()
                    ),
                    answered => tracing::debug!(?peer, ?answered, "answered a page request"),
                }
                return;
            }
            Ok(Err(error)) => {
                tracing::info!(?peer, %error, "no WebSocket upgrade");
                return;
            }
            Err(_) => {
                tracing::info!(?peer, timeout = ?ctx.handshake_timeout, "handshake timed out");
                return;
            }
        },
        () = shutdown_requested(&mut shutdown) => return,
    };

    let id = ConnectionId(ctx.next_id.fetch_add(1, Ordering::Relaxed));
    let mut token_changes = ctx.credentials.changes();
    let (conn, queues) = Connection::new(id, peer, ctx.limits, grant, ctx.queued_bytes.clone());
    tracing::info!(conn = %id, ?peer, token = conn.grant().name, "client connected");
    let (sink, stream) = ws.split();
    let (inbound_tx, inbound_rx) = mpsc::channel(ctx.inbound_queue);
    let mut close = queues.close.clone();
    let mut reader = tokio::spawn(read_loop(
        stream,
        conn.clone(),
        inbound_tx,
        ctx.handler.clone(),
        ctx.max_frame_bytes,
    ));
    let mut writer = tokio::spawn(write_loop(sink, queues));
    let mut worker = tokio::spawn(work_loop(inbound_rx, conn.clone(), ctx.handler.clone()));

    let mut reader_done = None;
    let mut writer_done = None;
    let mut worker_done = false;
    tokio::select! {
        outcome = &mut reader => {
            reader_done = Some(outcome.ok());
            conn.close_with(CLOSE_NORMAL, "the client closed the connection", false);
        }
        outcome = &mut writer => {
            writer_done = Some(outcome.ok());
            conn.close_with(CLOSE_NORMAL, "the connection failed", false);
        }
        outcome = &mut worker => {
            worker_done = true;
            if let Err(error) = outcome {
                tracing::error!(conn = %id, %error, "the connection worker failed");
            }
            conn.close_with(CLOSE_INTERNAL_ERROR, "internal error", true);
        }
        () = close_requested(&mut close) => {}
        () = shutdown_requested(&mut shutdown) => {
            conn.close_with(CLOSE_GOING_AWAY, "server shutting down", true);
        }
        () = revoked(&mut token_changes, &ctx.credentials, conn.grant()) => {
            tracing::info!(conn = %id, token = conn.grant().name, "token revoked; closing");
            conn.close_with(CLOSE_POLICY, "the connection token was revoked", false);
        }
    }

    // Close within `close_timeout`: the writer sends the close frame, the reader waits for the
    // client's; whatever has not finished by then is dropped with the socket.
    let deadline = Instant::now() + ctx.close_timeout;
    let sink = match writer_done {
        Some(sink) => sink,
        None => join_by(&mut writer, deadline).await,
    };
    let stream = match reader_done {
        Some(stream) => stream,
        // Without a close frame sent there is no answer to wait for.
        None if sink.is_none() => join_by(&mut reader, Instant::now()).await,
        None => join_by(&mut reader, deadline).await,
    };
    if let (Some(sink), Some((stream, unread))) = (sink, stream)
        && let Ok(ws) = stream.reunite(sink)
    {
        close_socket(ws.into_inner(), unread, deadline).await;
    }

    // Every message received before the close is still handled, then `disconnected`.
    if !worker_done && let Err(error) = worker.await {
        tracing::error!(conn = %id, %error, "the connection worker failed");
    }
    let request = conn.close_request();
    tracing::info!(
        conn = %id,
        client_id = ?conn.client_id(),
        code = request.as_ref().map(|r| r.code),
        reason = request.as_ref().map(|r| r.reason.as_str()),
        lagged = conn.is_lagged(),
        "client disconnected"
    );
    ctx.handler.disconnected(conn).await;
}

/// Answers a connection beyond `max_connections`: HTTP 503 with `Retry-After: 1` once its
/// request head is read, all within `handshake_timeout`.
pub(crate) async fn refuse<S>(stream: S, peer: Option<SocketAddr>, timeout: Duration)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match tokio::time::timeout(timeout, handshake::refuse_busy(stream)).await {
        Ok(error) => tracing::debug!(?peer, %error, "refused a connection over the limit"),
        Err(_) => tracing::debug!(?peer, "a refused connection timed out"),
    }
}

/// The bytes of frames queued and not yet written, across a server's connections.
#[derive(Debug, Default)]
pub(crate) struct OutboundBytes {
    queued: AtomicUsize,
    drained: tokio::sync::Notify,
}

impl OutboundBytes {
    async fn room(&self, limit: usize) {
        loop {
            let drained = self.drained.notified();
            let mut drained = std::pin::pin!(drained);
            drained.as_mut().enable();
            if self.queued.load(Ordering::Acquire) < limit {
                return;
            }
            drained.await;
        }
    }
}

/// A queued frame, counted in [`OutboundBytes`] until it is dropped (written or discarded).
pub(crate) struct Queued {
    frame: Arc<str>,
    bytes: Arc<OutboundBytes>,
}

impl Queued {
    fn new(frame: Arc<str>, bytes: &Arc<OutboundBytes>) -> Self {
        bytes.queued.fetch_add(frame.len(), Ordering::AcqRel);
        Self {
            frame,
            bytes: bytes.clone(),
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.bytes
            .queued
            .fetch_sub(self.frame.len(), Ordering::AcqRel);
        self.bytes.drained.notify_waiters();
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;

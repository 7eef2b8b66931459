//! Server configuration. Every limit and timeout of the transport lives here.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::server::ServerError;
use crate::token::Token;

/// How the server listens and the limits of each connection.
///
/// Build it with [`ServerConfig::new`] and struct-update syntax:
/// `ServerConfig { outbound_queue: 64, ..ServerConfig::new(token) }`.
///
/// What each limit does to a client that reaches it (none of them disturbs another client):
///
/// | Limit | The client that reaches it gets | The connection |
/// |---|---|---|
/// | [`max_frame_bytes`](Self::max_frame_bytes) | `-32600` (id `null`), then close code 1009 | closed |
/// | [`max_subscriptions`](Self::max_subscriptions) | `subscribe` answered `-32009` (PermissionDenied); extra `initialSubscriptions` skipped; extra `reconnect` subscriptions reported in `missing` | stays open |
/// | [`dispatch_rate`](Self::dispatch_rate) / [`dispatch_burst`](Self::dispatch_burst) | each excess `dispatchAction` echoed back to it alone with a `rejectionReason` (an unknown channel: ignored, as always); state unchanged | stays open |
/// | [`outbound_queue`](Self::outbound_queue) | nothing more: it lagged | closed with code 1013 (reconnect to resync) |
/// | [`inbound_queue`](Self::inbound_queue) | TCP back-pressure: the server stops reading it | stays open |
/// | [`max_connections`](Self::max_connections) | HTTP 503 on the upgrade (`Retry-After: 1`) | never opened |
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on. Default `127.0.0.1:0` (loopback, port chosen by the OS).
    pub listen: SocketAddr,
    /// The connection token every client must present on the upgrade.
    pub token: Token,
    /// Largest inbound WebSocket frame *and* message, in bytes. A larger one is refused as soon
    /// as its header is read (it is never buffered whole): the client gets an error response
    /// and the connection is closed with code 1009. Default 64 MiB (VS Code sends its tool
    /// definitions and customizations in `createSession`; peers accept "tens of MiB").
    pub max_frame_bytes: usize,
    /// Per-connection bound on frames waiting to be written. When a send finds it full the
    /// connection is closed as lagged (see [`Connection::send_frame`]). Default 4096.
    ///
    /// [`Connection::send_frame`]: crate::Connection::send_frame
    pub outbound_queue: usize,
    /// Per-connection bound on received requests and notifications waiting for the in-order
    /// worker. When it is full the reader stops reading (TCP back-pressure on the client), and
    /// during that time `ping` is not answered either. Default 1024.
    pub inbound_queue: usize,
    /// Most channels one connection may be subscribed to at once (root included; subscribing
    /// again to a channel it already has costs nothing). The handler enforces it through
    /// [`Connection::max_subscriptions`]: the host answers a `subscribe` beyond it with
    /// `-32009` (PermissionDenied), skips `initialSubscriptions` beyond it and reports
    /// `reconnect` subscriptions beyond it in `missing`. Default 4096.
    ///
    /// [`Connection::max_subscriptions`]: crate::Connection::max_subscriptions
    pub max_subscriptions: usize,
    /// Sustained `dispatchAction` notifications per second one connection may send (a token
    /// bucket refilled at this rate, holding at most [`dispatch_burst`](Self::dispatch_burst)).
    /// The handler enforces it through [`Connection::admit_dispatch`]: the host echoes an
    /// excess action back to its dispatcher alone with a `rejectionReason` and applies nothing
    /// (AHP reports problems with a dispatched action through `rejectionReason`, never as an
    /// error or a disconnect). `0` turns the limit off. Default 200.
    ///
    /// [`Connection::admit_dispatch`]: crate::Connection::admit_dispatch
    pub dispatch_rate: u32,
    /// How many `dispatchAction`s a connection may send at once, faster than
    /// [`dispatch_rate`](Self::dispatch_rate) (the bucket's capacity; a new connection starts
    /// with it full). Default 1000.
    pub dispatch_burst: u32,
    /// Most connections open at once, counted from the TCP accept (a connection still in its
    /// handshake counts) until it is closed. One more gets HTTP 503 with `Retry-After: 1` instead
    /// of the upgrade. Default 256.
    pub max_connections: usize,
    /// Time allowed from TCP accept to a completed WebSocket upgrade (HTTP request head,
    /// authentication, 101). Default 10 s.
    pub handshake_timeout: Duration,
    /// Time allowed to close a connection cleanly: flush queued frames (graceful closes only),
    /// send the close frame and wait for the client's. After it the socket is dropped.
    /// Default 5 s.
    pub close_timeout: Duration,
    /// Browser origins allowed to connect besides `vscode-file://vscode-app` (VS Code's desktop
    /// windows); an upgrade with any other `Origin` gets 403, as does one whose `Host` names
    /// neither `localhost`, a loopback address nor the listen address (see
    /// [`crate::origin`]). Clients that send no `Origin` are not affected. Default: none.
    pub allowed_origins: Vec<String>,
    /// Serve the host's own page (a single-page AHP client) to plain HTTP `GET`s on the same
    /// listener: `/?tkn=<token>` is the page, 403 without a valid token (see [`crate::web`]).
    /// Off, such requests get 426 Upgrade Required. Default: off.
    pub web: bool,
}

impl ServerConfig {
    /// Default [`ServerConfig::max_frame_bytes`]: 64 MiB.
    pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;
    /// Default [`ServerConfig::outbound_queue`].
    pub const DEFAULT_OUTBOUND_QUEUE: usize = 4096;
    /// Default [`ServerConfig::inbound_queue`].
    pub const DEFAULT_INBOUND_QUEUE: usize = 1024;
    /// Default [`ServerConfig::max_subscriptions`].
    pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 4096;
    /// Default [`ServerConfig::dispatch_rate`] (per second).
    pub const DEFAULT_DISPATCH_RATE: u32 = 200;
    /// Default [`ServerConfig::dispatch_burst`].
    pub const DEFAULT_DISPATCH_BURST: u32 = 1000;
    /// Default [`ServerConfig::max_connections`].
    pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
    /// Default [`ServerConfig::handshake_timeout`].
    pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default [`ServerConfig::close_timeout`].
    pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

    /// The defaults, with `token`.
    pub fn new(token: Token) -> Self {
        Self {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            token,
            max_frame_bytes: Self::DEFAULT_MAX_FRAME_BYTES,
            outbound_queue: Self::DEFAULT_OUTBOUND_QUEUE,
            inbound_queue: Self::DEFAULT_INBOUND_QUEUE,
            max_subscriptions: Self::DEFAULT_MAX_SUBSCRIPTIONS,
            dispatch_rate: Self::DEFAULT_DISPATCH_RATE,
            dispatch_burst: Self::DEFAULT_DISPATCH_BURST,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            handshake_timeout: Self::DEFAULT_HANDSHAKE_TIMEOUT,
            close_timeout: Self::DEFAULT_CLOSE_TIMEOUT,
            allowed_origins: Vec::new(),
            web: false,
        }
    }

    /// Checks every limit; [`Server::bind`](crate::Server::bind) calls it.
    pub fn validate(&self) -> Result<(), ServerError> {
        let at_least_one = [
            ("max_frame_bytes", self.max_frame_bytes),
            ("outbound_queue", self.outbound_queue),
            ("inbound_queue", self.inbound_queue),
            ("max_subscriptions", self.max_subscriptions),
            ("dispatch_burst", self.dispatch_burst as usize),
            ("max_connections", self.max_connections),
        ];
        for (what, value) in at_least_one {
            if value == 0 {
                return Err(ServerError::Config(format!("{what} must be at least 1")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

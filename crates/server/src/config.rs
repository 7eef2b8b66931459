//! Server configuration. Every limit and timeout of the transport lives here.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::server::ServerError;
use crate::token::Token;

/// How the server listens and the limits of each connection.
///
/// Build it with [`ServerConfig::new`] and struct-update syntax:
/// `ServerConfig { outbound_queue: 64, ..ServerConfig::new(token) }`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on. Default `127.0.0.1:0` (loopback, port chosen by the OS).
    pub listen: SocketAddr,
    /// The connection token every client must present on the upgrade.
    pub token: Token,
    /// Largest inbound WebSocket frame *and* message, in bytes. A larger one is refused as soon
    /// as its header is read (it is never buffered whole): the client gets an error response
    /// and the connection is closed with code 1009. Default 16 MiB.
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
    /// Time allowed from TCP accept to a completed WebSocket upgrade (HTTP request head,
    /// authentication, 101). Default 10 s.
    pub handshake_timeout: Duration,
    /// Time allowed to close a connection cleanly: flush queued frames (graceful closes only),
    /// send the close frame and wait for the client's. After it the socket is dropped.
    /// Default 5 s.
    pub close_timeout: Duration,
}

impl ServerConfig {
    /// Default [`ServerConfig::max_frame_bytes`]: 16 MiB.
    pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;
    /// Default [`ServerConfig::outbound_queue`].
    pub const DEFAULT_OUTBOUND_QUEUE: usize = 4096;
    /// Default [`ServerConfig::inbound_queue`].
    pub const DEFAULT_INBOUND_QUEUE: usize = 1024;
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
            handshake_timeout: Self::DEFAULT_HANDSHAKE_TIMEOUT,
            close_timeout: Self::DEFAULT_CLOSE_TIMEOUT,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), ServerError> {
        let invalid = |what: &str| Err(ServerError::Config(format!("{what} must be at least 1")));
        if self.max_frame_bytes == 0 {
            return invalid("max_frame_bytes");
        }
        if self.outbound_queue == 0 {
            return invalid("outbound_queue");
        }
        if self.inbound_queue == 0 {
            return invalid("inbound_queue");
        }
        Ok(())
    }
}

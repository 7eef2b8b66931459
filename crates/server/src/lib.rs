//! The transport of the agenthost server: AHP 1.0 as JSON-RPC 2.0 over WebSocket.
//!
//! **Central design decision: the transport owns the connection, the session logic owns
//! meaning — and a slow client can never stall the host.** Everything that needs no session
//! state happens here: the connection token on the upgrade (403 before any protocol message),
//! framing (one JSON-RPC message per text frame, size limits), `ping` answered by the reader at
//! once, the "initialize first" gate, version negotiation with VS Code's `0.10.0` alias, and the
//! close handshake. Everything else goes through one dyn-compatible trait, [`ProtocolHandler`],
//! called in the client's order per connection. The host talks back through [`Connection`],
//! whose [`Connection::send_frame`] never waits: each connection has a bounded outbound queue,
//! and a client that lets it fill is closed as *lagged* (code 1013) rather than buffered without
//! bound or waited for. Such a client reconnects and gets a `replay` or a `snapshot`.
//!
//! Layout: [`Server::bind`] → [`BoundServer::serve`] accepts; per connection a reader, an
//! in-order worker and a writer task (see the `connection` module's documentation); frames
//! are pre-encoded `Arc<str>` so one broadcast is encoded once for every subscriber
//! ([`notification_frame`]).
//!
//! What is deliberately absent: routing by channel, subscriptions, `serverSeq`, replay, any
//! AHP method other than `initialize`/`reconnect`/`ping` — all of that is the handler's.

#![deny(missing_docs)]

mod auth;
mod config;
mod connection;
mod handler;
mod handshake;
mod host;
mod rpc;
mod server;
mod token;
pub mod version;

pub use config::ServerConfig;
pub use connection::{Connection, ConnectionId, Lagged, NotifyError};
pub use handler::{ProtocolHandler, Reconnected};
pub use host::{DEFAULT_SHUTDOWN_WRITE_TIMEOUT, Host};
pub use rpc::{RpcError, notification_frame};
pub use server::{BoundServer, Server, ServerError};
pub use token::{Token, TokenError};
pub use version::{NegotiatedVersion, WireSurface};

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
//! **Limits: a hostile client gets the specified answer, and nobody else notices.** Every limit
//! is a [`ServerConfig`] field (and an `agent-host serve` flag), checked at [`Server::bind`]:
//!
//! | Limit | Default | Flag | Beyond it |
//! |---|---|---|---|
//! | [`max_frame_bytes`](ServerConfig::max_frame_bytes) | 64 MiB | `--max-frame-bytes` | `-32600`, then close 1009 |
//! | [`max_subscriptions`](ServerConfig::max_subscriptions) | 4096 per connection | `--max-subscriptions` | `subscribe` → `-32009`; extra `reconnect` subscriptions in `missing` |
//! | [`dispatch_rate`](ServerConfig::dispatch_rate) / [`dispatch_burst`](ServerConfig::dispatch_burst) | 200/s, bursts of 1000, per connection | `--dispatch-rate` (0: off), `--dispatch-burst` | the action echoed to its dispatcher with a `rejectionReason` ([`RATE_LIMITED_REASON`]), state unchanged |
//! | [`outbound_queue`](ServerConfig::outbound_queue) | 4096 frames per connection | `--outbound-queue` | closed as lagged (1013) |
//! | [`max_connections`](ServerConfig::max_connections) | 256 | `--max-connections` | HTTP 503 with `Retry-After: 1` |
//! | `clientId` length ([`MAX_CLIENT_ID_BYTES`]) | 1–256 bytes | — | `initialize` / `reconnect` → `-32602` |
//! | client ids remembered for `reconnect` ([`REMEMBERED_CLIENTS`]) | 4096 | — | the oldest forgotten (its `reconnect` gets the 0.9 surface) |
//!
//! Malformed input never closes a connection: a frame that is not JSON gets `-32700`, JSON
//! that is not JSON-RPC or a binary frame `-32600`, an unknown method `-32601`, a request
//! before `initialize` `-32600`; an unknown notification and a malformed `dispatchAction` are
//! dropped (a notification has no answer). The transport counts connections and holds each
//! connection's dispatch budget ([`Connection::admit_dispatch`]); the [`Host`] counts
//! subscriptions ([`Connection::max_subscriptions`]) and answers.
//!
//! **Host commands beyond AHP 1.0** live in the reserved `x-` namespace, answered by the
//! [`Host`]: `x-deleteSession {channel}` (history and checkpoint refs deleted for good;
//! `root/sessionRemoved`), `x-checkpoint/diff {session, turnId? | since?}` (unified diff text
//! and its files) and `x-checkpoint/rollback {session, turnId}` (the paths put back) — see
//! [`checkpoint_commands`]. `agent-host diff` / `rollback` are their clients. The read-only
//! `resourceList` / `resourceResolve` / `resourceRead` answer inside the host's roots only (see
//! `agenthost_services::resources`); the write methods are refused.
//!
//! **VS Code as a client.** Every allowance for VS Code's dialect of AHP lives in one module,
//! `agenthost_protocol::dialect`: the tolerances applied to every connection (a `reconnect` without `channel`,
//! derived default-chat URIs in any base64 spelling, `completions` on a session URI), the
//! per-connection dialect (recognised by `clientInfo.name` or the `vscode.*` `_meta` keys,
//! reported to contributions as the client kind `vscode`, nothing else depends on it) and the
//! wire surface of a `0.9.0`/`0.10.0` peer (actions AHP 1.0 introduced are held back from its
//! frames and replays). URIs are **published, not translated**: the host keeps a client-named
//! `<provider>:/<id>` session URI and gives every session its default chat at VS Code's derived
//! `ahp-chat://default/<base64url(session URI)>` (`agenthost-service`), so no connection sees
//! rewritten URIs. `resolveSessionConfig`, `completions` and `authenticate` — called on VS Code's
//! normal path — answer as the `requests` module documents: the host's session configuration
//! schema, no completion items (none are advertised), and no token taken (no agent advertises
//! `protectedResources`). Whenever an action on a session channel changes the session's catalog
//! entry, root subscribers get `root/sessionSummaryChanged` with the changed fields (an envelope
//! observer, the `summaries` module), so a session list stays current without subscribing to
//! every session. Optionally (`serve --vscode-discovery`) the host announces itself in VS Code's
//! local discovery registry (the CLI's `discovery` module). `InitializeResult.defaultDirectory` is the first root (`serve
//! --root`), so VS Code's remote folder picker starts where resource reads may go.
//!
//! Layout: [`Server::bind`] → [`BoundServer::serve`] accepts; per connection a reader, an
//! in-order worker and a writer task (see the `connection` module's documentation); frames
//! are pre-encoded `Arc<str>` so one broadcast is encoded once for every subscriber
//! ([`notification_frame`]).
//!
//! What is deliberately absent: routing by channel, subscriptions, `serverSeq`, replay, any
//! AHP method other than `initialize`/`reconnect`/`ping` — all of that is the handler's.

#![deny(missing_docs)]

pub mod access;
mod auth;
mod clients;
mod config;
mod connection;
mod handler;
mod handshake;
mod host;
pub mod origin;
mod rate;
mod requests;
mod server;
mod token;
pub mod web;

pub use agenthost_protocol::{NegotiatedVersion, RpcError, WireSurface, notification_frame};
pub use config::ServerConfig;
pub use connection::{Connection, ConnectionId, Lagged, MAX_CLIENT_ID_BYTES};
pub use handler::{ProtocolHandler, Reconnected};
pub use host::{Host, RATE_LIMITED_REASON, REMEMBERED_CLIENTS};
pub use server::{BoundServer, Server, ServerError};
pub use token::{Token, TokenError};

/// Fuzzing entry point (`fuzz/`), not part of the API: decodes one inbound text frame as the
/// connection reader does. `Ok` is the message kind and its id (none for a notification);
/// `Err` is the error frame the reader answers with.
#[doc(hidden)]
pub fn fuzz_decode_frame(text: &str) -> Result<(&'static str, Option<u64>), std::sync::Arc<str>> {
    match agenthost_protocol::jsonrpc::decode(text) {
        Ok(agenthost_protocol::jsonrpc::Incoming::Request { id, .. }) => Ok(("request", Some(id))),
        Ok(agenthost_protocol::jsonrpc::Incoming::Notification { .. }) => {
            Ok(("notification", None))
        }
        Ok(agenthost_protocol::jsonrpc::Incoming::Response { id, .. }) => {
            Ok(("response", Some(id)))
        }
        Err(error) => Err(agenthost_protocol::jsonrpc::error_frame(
            &error.id,
            &error.error,
        )),
    }
}

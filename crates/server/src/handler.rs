//! The seam between the transport and the session logic.

use agenthost_protocol::commands::{
    InitializeParams, InitializeResult, ReconnectParams, ReconnectResult,
};
use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::connection::Connection;
use agenthost_protocol::NegotiatedVersion;
use agenthost_protocol::RpcError;

/// What a successful `reconnect` returns to the transport.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconnected {
    /// The `reconnect` result (`replay` or `snapshot`) sent to the client.
    pub result: ReconnectResult,
    /// The version to serve on this connection. `reconnect` carries no version list: use the one
    /// negotiated earlier for this `clientId`, or for an unknown client (host restart) a
    /// down-level default such as `NegotiatedVersion::from_version("0.9.0")`.
    pub protocol_version: NegotiatedVersion,
}

/// The session logic behind the transport. One instance serves every connection.
///
/// **Ordering.** For one connection, `initialize`, `reconnect`, `request` and `notification`
/// are called one at a time, in the order the client sent the messages: the next call starts
/// only after the previous future completed. Keep them short; long work (a turn) belongs in a
/// spawned task, or the connection's later messages wait behind it (`ping` does not: the
/// transport answers it itself). Different connections run concurrently.
///
/// **Lifecycle.** `initialize` (or `reconnect`) comes first; other requests before it are
/// refused by the transport with `-32600`, notifications before it are dropped. After the
/// connection ends, every message already received is still delivered (responses to it are
/// discarded), then `disconnected` is called exactly once, and nothing else for that
/// connection follows it.
///
/// Futures borrow only `&self`; the [`Connection`] is passed by value (a cheap clone).
pub trait ProtocolHandler: Send + Sync + 'static {
    /// `initialize` after the transport negotiated `version` (already stored on `conn`, as is
    /// `params.client_id`). Return the rest of the result: `protocol_version` is overwritten
    /// with `version.as_str()`. On `Err` the connection stays uninitialized and the client may
    /// try again.
    fn initialize(
        &self,
        conn: Connection,
        params: InitializeParams,
        version: NegotiatedVersion,
    ) -> BoxFuture<'_, Result<InitializeResult, RpcError>>;

    /// `reconnect` instead of `initialize` on a new connection. A missing `channel` (VS Code)
    /// has been filled in as `ahp-root://`. `conn.client_id()` is already set.
    fn reconnect(
        &self,
        conn: Connection,
        params: ReconnectParams,
    ) -> BoxFuture<'_, Result<Reconnected, RpcError>>;

    /// Any other request of an initialized connection. Unknown methods: answer
    /// [`RpcError::method_not_found`].
    fn request(
        &self,
        conn: Connection,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'_, Result<Value, RpcError>>;

    /// A notification of an initialized connection (`dispatchAction`, `unsubscribe`, unknown
    /// ones: ignore those).
    fn notification(
        &self,
        conn: Connection,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'_, ()>;

    /// The connection is gone. Called exactly once per connection that completed the
    /// WebSocket handshake, after every other call for it has finished.
    fn disconnected(&self, conn: Connection) -> BoxFuture<'_, ()>;

    /// The server stopped accepting and every connection has closed: release what outlives
    /// connections (the host stops its agents). The default does nothing.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Before any other call with a client's params (not `ping`'s): rewrite the session URIs
    /// this client spells differently from the host into the host's spelling (see
    /// [`UriSpellings`](agenthost_protocol::dialect::UriSpellings)), recording new pairs on `conn`. The
    /// default changes nothing.
    fn to_host_spelling(&self, conn: &Connection, params: &mut Value) {
        let _ = (conn, params);
    }

    /// The client answered a request the host sent it (`resource*` requests may flow either
    /// way). Called from the reader, **not** in order with requests (so a request handler may
    /// wait for such an answer without deadlocking): do not block; complete a oneshot or
    /// similar. The default ignores it.
    fn response(&self, conn: &Connection, id: u64, outcome: Result<Value, RpcError>) {
        tracing::debug!(conn = %conn.id(), id, ok = outcome.is_ok(), "ignoring a client response");
    }
}

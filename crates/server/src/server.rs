//! The listener and its accept loop.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::ServerConfig;
use crate::connection::{self, ConnContext};
use crate::handler::ProtocolHandler;

/// Pause after a failed `accept` (e.g. out of file descriptors) before trying again.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// Most connections beyond `max_connections` being answered 503 at once; past it, one more is
/// dropped without an answer (a connection flood must not cost a task per socket).
const MAX_PENDING_REFUSALS: usize = 64;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The configuration is unusable.
    #[error("invalid server configuration: {0}")]
    Config(String),
    /// Listening failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address of [`ServerConfig::listen`].
        addr: SocketAddr,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// Entry point: binds the listener.
#[derive(Debug)]
pub struct Server;

impl Server {
    /// Validates `config` and listens on `config.listen`. The `handler` serves every connection.
    pub async fn bind(
        config: ServerConfig,
        handler: Arc<dyn ProtocolHandler>,
    ) -> Result<BoundServer, ServerError> {
        config.validate()?;
        let bind_error = |source| ServerError::Bind {
            addr: config.listen,
            source,
        };
        let listener = TcpListener::bind(config.listen).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        Ok(BoundServer {
            listener,
            local_addr,
            ctx: Arc::new(ConnContext::new(&config, handler)),
        })
    }
}

/// A listening server, not yet accepting.
pub struct BoundServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    ctx: Arc<ConnContext>,
}

impl BoundServer {
    /// The address actually bound (the OS-chosen port when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The connect URL, `ws://<addr>/?tkn=<token>`, token percent-encoded where needed. It
    /// contains the secret: print it for the user, never log it.
    pub fn url(&self) -> String {
        self.url_with("ws")
    }

    /// The page's URL, `http://<addr>/?tkn=<token>` (with [`ServerConfig::web`] on): open it in
    /// a browser. It contains the secret: print it for the user, never log it.
    ///
    /// [`ServerConfig::web`]: crate::ServerConfig::web
    pub fn page_url(&self) -> String {
        self.url_with("http")
    }

    /// `<scheme>://<addr>/?tkn=<token>`.
    fn url_with(&self, scheme: &str) -> String {
        format!(
            "{scheme}://{}/?{}={}",
            self.local_addr,
            crate::auth::TOKEN_QUERY_PARAMETER,
            self.ctx.credentials.primary().percent_encoded()
        )
    }

    /// The tokens this server accepts: replace its named tokens while it serves
    /// ([`Credentials::replace_named`](crate::access::Credentials::replace_named)); a connection
    /// whose token is revoked is closed at once.
    pub fn credentials(&self) -> Arc<crate::access::Credentials> {
        self.ctx.credentials.clone()
    }

    /// Accepts connections until `shutdown` resolves, then stops accepting, closes every
    /// connection (close code 1001, queued frames flushed within `close_timeout`), waits until
    /// each has been handed to [`ProtocolHandler::disconnected`], and returns. Handler calls
    /// in flight are awaited, not cancelled.
    ///
    /// Drive it to completion: dropping this future aborts the connections without the
    /// `disconnected` calls.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut connections = JoinSet::new();
        let mut refusals = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        tracing::info!(addr = %self.local_addr, "listening");
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        if let Err(error) = stream.set_nodelay(true) {
                            tracing::debug!(%error, "could not disable Nagle's algorithm");
                        }
                        match self.ctx.try_open() {
                            Some(slot) => {
                                let run = connection::run(
                                    stream,
                                    Some(peer),
                                    self.ctx.clone(),
                                    stop_rx.clone(),
                                );
                                connections.spawn(async move {
                                    run.await;
                                    // The place is free once `disconnected` has run.
                                    drop(slot);
                                });
                            }
                            None if refusals.len() < MAX_PENDING_REFUSALS => {
                                refusals.spawn(connection::refuse(
                                    stream,
                                    Some(peer),
                                    self.ctx.handshake_timeout,
                                ));
                            }
                            None => {
                                tracing::debug!(%peer, "dropped a connection over the limit");
                                drop(stream);
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    }
                },
                Some(joined) = connections.join_next(), if !connections.is_empty() => {
                    log_join(joined);
                }
                Some(_) = refusals.join_next(), if !refusals.is_empty() => {}
            }
        }
        drop(self.listener);
        refusals.abort_all();
        tracing::info!(open = connections.len(), "shutting down");
        stop_tx.send_replace(true);
        while let Some(joined) = connections.join_next().await {
            log_join(joined);
        }
        self.ctx.handler.shutdown().await;
        tracing::info!("server stopped");
    }
}

impl std::fmt::Debug for BoundServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundServer")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

fn log_join(joined: Result<(), tokio::task::JoinError>) {
    if let Err(error) = joined {
        tracing::error!(%error, "a connection task failed");
    }
}

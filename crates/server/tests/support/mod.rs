//! A fake session layer and a real WebSocket client for the transport's integration tests.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agenthost_protocol::commands::{
    InitializeParams, InitializeResult, ReconnectParams, ReconnectResult,
};
use agenthost_server::{
    BoundServer, Connection, ConnectionId, NegotiatedVersion, ProtocolHandler, Reconnected,
    RpcError, Server, ServerConfig, Token, notification_frame,
};
use futures_util::future::BoxFuture;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long any single wait in these tests may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// What the fake handler saw, in order, per connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Initialize {
        conn: ConnectionId,
        version: String,
        client_id: String,
    },
    Reconnect {
        conn: ConnectionId,
        channel: String,
        client_id: String,
    },
    Request {
        conn: ConnectionId,
        method: String,
        params: Option<Value>,
    },
    Notification {
        conn: ConnectionId,
        method: String,
        params: Option<Value>,
    },
    Disconnected {
        conn: ConnectionId,
        lagged: bool,
    },
}

/// A session layer that records every call. Requests: `echo` returns its params; `broadcast`
/// sends `x-test/broadcast` with `bytes` bytes of payload to every initialized connection and
/// returns how many took it; anything else is `-32601`.
#[derive(Default)]
pub struct FakeHandler {
    events: Mutex<Vec<Event>>,
    connections: Mutex<Vec<Connection>>,
}

impl FakeHandler {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    fn record(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }

    /// The events of one connection.
    pub fn events_of(&self, conn: ConnectionId) -> Vec<Event> {
        self.events()
            .into_iter()
            .filter(|event| event.conn() == conn)
            .collect()
    }

    /// The id of the connection that initialized or reconnected with `client_id`.
    pub fn conn_of(&self, client_id: &str) -> Option<ConnectionId> {
        self.events().into_iter().find_map(|event| match event {
            Event::Initialize {
                conn, client_id: c, ..
            }
            | Event::Reconnect {
                conn, client_id: c, ..
            } if c == client_id => Some(conn),
            _ => None,
        })
    }

    pub fn disconnects_of(&self, conn: ConnectionId) -> Vec<bool> {
        self.events_of(conn)
            .into_iter()
            .filter_map(|event| match event {
                Event::Disconnected { lagged, .. } => Some(lagged),
                _ => None,
            })
            .collect()
    }
}

impl Event {
    pub fn conn(&self) -> ConnectionId {
        match self {
            Event::Initialize { conn, .. }
            | Event::Reconnect { conn, .. }
            | Event::Request { conn, .. }
            | Event::Notification { conn, .. }
            | Event::Disconnected { conn, .. } => *conn,
        }
    }
}

impl ProtocolHandler for FakeHandler {
    fn initialize(
        &self,
        conn: Connection,
        params: InitializeParams,
        version: NegotiatedVersion,
    ) -> BoxFuture<'_, Result<InitializeResult, RpcError>> {
        Box::pin(async move {
            assert_eq!(conn.protocol_version().as_ref(), Some(&version));
            assert_eq!(conn.client_id().as_deref(), Some(params.client_id.as_str()));
            self.record(Event::Initialize {
                conn: conn.id(),
                version: version.as_str().to_owned(),
                client_id: params.client_id,
            });
            self.connections.lock().unwrap().push(conn);
            Ok(serde_json::from_value(json!({
                "protocolVersion": "ignored: the transport sets it",
                "serverSeq": 0,
                "snapshots": [],
            }))
            .unwrap())
        })
    }

    fn reconnect(
        &self,
        conn: Connection,
        params: ReconnectParams,
    ) -> BoxFuture<'_, Result<Reconnected, RpcError>> {
        Box::pin(async move {
            self.record(Event::Reconnect {
                conn: conn.id(),
                channel: params.channel,
                client_id: params.client_id,
            });
            let result: ReconnectResult =
                serde_json::from_value(json!({"type": "replay", "actions": [], "missing": []}))
                    .unwrap();
            Ok(Reconnected {
                result,
                protocol_version: NegotiatedVersion::from_version("0.9.0").unwrap(),
            })
        })
    }

    fn request(
        &self,
        conn: Connection,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'_, Result<Value, RpcError>> {
        Box::pin(async move {
            self.record(Event::Request {
                conn: conn.id(),
                method: method.clone(),
                params: params.clone(),
            });
            match method.as_str() {
                "echo" => Ok(params.unwrap_or(Value::Null)),
                "broadcast" => {
                    let bytes = params
                        .as_ref()
                        .and_then(|p| p["bytes"].as_u64())
                        .unwrap_or(16) as usize;
                    let frame = notification_frame("x-test/broadcast", &"b".repeat(bytes));
                    let connections = self.connections.lock().unwrap().clone();
                    let delivered = connections
                        .iter()
                        .filter(|c| c.send_frame(frame.clone()).is_ok())
                        .count();
                    Ok(json!(delivered))
                }
                _ => Err(RpcError::method_not_found(&method)),
            }
        })
    }

    fn notification(
        &self,
        conn: Connection,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.record(Event::Notification {
                conn: conn.id(),
                method,
                params,
            });
        })
    }

    fn disconnected(&self, conn: Connection) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.record(Event::Disconnected {
                conn: conn.id(),
                lagged: conn.is_lagged(),
            });
            self.connections
                .lock()
                .unwrap()
                .retain(|c| c.id() != conn.id());
        })
    }
}

pub const TOKEN: &str = "test_token-0123456789";

/// A running server on 127.0.0.1:0.
pub struct TestServer {
    pub url: String,
    pub addr: std::net::SocketAddr,
    pub handler: Arc<FakeHandler>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut ServerConfig)) -> Self {
        let mut config = ServerConfig::new(Token::new(TOKEN.to_owned()).unwrap());
        // Clients idle in a test do not answer the shutdown's close frame: do not wait long.
        config.close_timeout = Duration::from_secs(1);
        tweak(&mut config);
        let handler = Arc::new(FakeHandler::default());
        let bound: BoundServer = Server::bind(config, handler.clone()).await.unwrap();
        let url = bound.url();
        let addr = bound.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(bound.serve(async {
            let _ = stopped.await;
        }));
        Self {
            url,
            addr,
            handler,
            stop: Some(stop),
            task,
        }
    }

    /// Resolves the shutdown future and waits for `serve` to return.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(DEADLINE, &mut self.task)
            .await
            .expect("serve did not return")
            .unwrap();
    }
}

pub type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub async fn connect(url: &str) -> Client {
    let (client, response) = tokio::time::timeout(DEADLINE, tokio_tungstenite::connect_async(url))
        .await
        .expect("connect timed out")
        .expect("connect failed");
    assert_eq!(response.status(), 101);
    assert!(response.headers().get("Sec-WebSocket-Protocol").is_none());
    client
}

pub async fn send(client: &mut Client, value: Value) {
    client
        .send(Message::Text(value.to_string().into()))
        .await
        .unwrap();
}

/// The next frame, which must arrive within [`DEADLINE`].
pub async fn next_message(client: &mut Client) -> Option<Message> {
    tokio::time::timeout(DEADLINE, client.next())
        .await
        .expect("no frame within the deadline")
        .map(|message| message.expect("read failed"))
}

/// The next text frame as JSON (skipping control frames).
pub async fn next_json(client: &mut Client) -> Value {
    loop {
        match next_message(client).await {
            Some(Message::Text(text)) => return serde_json::from_str(text.as_str()).unwrap(),
            Some(Message::Binary(_)) => panic!("the server sent a binary frame"),
            Some(Message::Close(frame)) => panic!("closed: {frame:?}"),
            Some(_) => {}
            None => panic!("the stream ended"),
        }
    }
}

/// The response with `id`, skipping notifications and other responses.
pub async fn response(client: &mut Client, id: u64) -> Value {
    loop {
        let message = next_json(client).await;
        if message.get("id") == Some(&json!(id)) {
            return message;
        }
    }
}

pub async fn call(client: &mut Client, id: u64, method: &str, params: Value) -> Value {
    send(
        client,
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .await;
    response(client, id).await
}

pub async fn initialize(client: &mut Client, client_id: &str, versions: &[&str]) -> Value {
    call(
        client,
        1,
        "initialize",
        json!({"channel": "ahp-root://", "protocolVersions": versions, "clientId": client_id}),
    )
    .await
}

pub async fn ping(client: &mut Client, id: u64) {
    let answer = call(client, id, "ping", json!({"channel": "ahp-root://"})).await;
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": id, "result": null}));
}

/// Polls `condition` every 10 ms until it holds; fails after [`DEADLINE`].
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads until the close frame (or the end of the stream); returns the close frame's code and
/// reason if one came.
pub async fn closed(client: &mut Client) -> Option<(u16, String)> {
    let mut close = None;
    loop {
        let next = tokio::time::timeout(DEADLINE, client.next())
            .await
            .expect("the connection was not closed within the deadline");
        match next {
            Some(Ok(Message::Close(frame))) => {
                close = frame.map(|f| (u16::from(f.code), f.reason.as_str().to_owned()));
            }
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return close,
        }
    }
}

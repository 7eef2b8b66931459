//! Connection behaviour over in-memory streams with tokio's paused clock: every timeout here is
//! virtual, so the tests are exact and instant.

use std::sync::Mutex as StdMutex;

use crate::token::Token;

use agenthost_protocol::commands::InitializeResult;
use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::io::{DuplexStream, duplex};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::*;

const TOKEN: &str = "test-token";
/// Long enough for any virtual wait in these tests; turns a hang into a failure.
const HANG: Duration = Duration::from_secs(24 * 3600);

#[derive(Default)]
struct Recorder {
    events: StdMutex<Vec<String>>,
    /// (lagged, virtual time) of each `disconnected`.
    disconnects: StdMutex<Vec<(bool, Instant)>>,
}

impl Recorder {
    fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }

    fn record(&self, event: String) {
        self.events.lock().unwrap().push(event);
    }
}

fn initialize_result() -> InitializeResult {
    serde_json::from_value(json!({"protocolVersion": "", "serverSeq": 0, "snapshots": []})).unwrap()
}

impl ProtocolHandler for Recorder {
    fn initialize(
        &self,
        conn: Connection,
        _params: InitializeParams,
        version: NegotiatedVersion,
    ) -> BoxFuture<'_, Result<InitializeResult, RpcError>> {
        Box::pin(async move {
            self.record(format!("initialize {}", version.as_str()));
            // Sent while initialize is in progress: must reach the client after the response.
            conn.send_frame(rpc::notification_frame("x-test/early", &json!({})))
                .unwrap();
            Ok(initialize_result())
        })
    }

    fn reconnect(
        &self,
        _conn: Connection,
        _params: ReconnectParams,
    ) -> BoxFuture<'_, Result<Reconnected, RpcError>> {
        Box::pin(async { Err(RpcError::internal("not in these tests")) })
    }

    fn request(
        &self,
        conn: Connection,
        method: String,
        _params: Option<Value>,
    ) -> BoxFuture<'_, Result<Value, RpcError>> {
        Box::pin(async move {
            self.record(format!("request {method}"));
            match method.as_str() {
                "slow" => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(json!("slow done"))
                }
                "flood" => {
                    let frame: Arc<str> =
                        rpc::notification_frame("x-test/flood", &"x".repeat(1024));
                    let mut sent = 0u64;
                    while conn.send_frame(frame.clone()).is_ok() {
                        sent += 1;
                        assert!(sent < 1_000_000, "never lagged");
                    }
                    Ok(json!(sent))
                }
                _ => Err(RpcError::method_not_found(&method)),
            }
        })
    }

    fn notification(
        &self,
        _conn: Connection,
        method: String,
        _params: Option<Value>,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.record(format!("notification {method}")) })
    }

    fn disconnected(&self, conn: Connection) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.record("disconnected".to_owned());
            self.disconnects
                .lock()
                .unwrap()
                .push((conn.is_lagged(), Instant::now()));
        })
    }
}

fn context(handler: Arc<Recorder>, tweak: impl FnOnce(&mut ServerConfig)) -> Arc<ConnContext> {
    let mut config = ServerConfig::new(Token::new(TOKEN.to_owned()).unwrap());
    tweak(&mut config);
    Arc::new(ConnContext::new(&config, handler))
}

type Client = WebSocketStream<DuplexStream>;

struct Harness {
    client: Client,
    server: JoinHandle<()>,
    stop: watch::Sender<bool>,
}

async fn connect(ctx: Arc<ConnContext>, buffer: usize) -> Harness {
    let (client_io, server_io) = duplex(buffer);
    let (stop, stop_rx) = watch::channel(false);
    let server = tokio::spawn(run(server_io, None, ctx, stop_rx));
    let (client, _) =
        tokio_tungstenite::client_async(format!("ws://localhost/?tkn={TOKEN}"), client_io)
            .await
            .unwrap();
    Harness {
        client,
        server,
        stop,
    }
}

async fn send(client: &mut Client, value: Value) {
    client
        .send(Message::Text(value.to_string().into()))
        .await
        .unwrap();
}

async fn next_json(client: &mut Client) -> Value {
    loop {
        let message = tokio::time::timeout(HANG, client.next())
            .await
            .expect("no frame")
            .expect("stream ended")
            .expect("read failed");
        if let Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

async fn initialize(client: &mut Client) {
    send(
        client,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"channel": "ahp-root://", "protocolVersions": ["1.0.0"], "clientId": "c1"}}),
    )
    .await;
    let response = next_json(client).await;
    assert_eq!(response["id"], 1, "{response}");
    assert_eq!(response["result"]["protocolVersion"], "1.0.0");
}

#[tokio::test(start_paused = true)]
async fn a_silent_client_is_dropped_after_the_handshake_timeout() {
    let handler = Arc::new(Recorder::default());
    let ctx = context(handler.clone(), |c| {
        c.handshake_timeout = Duration::from_secs(7)
    });
    let (_client_io, server_io) = duplex(1024);
    let (_stop, stop_rx) = watch::channel(false);
    let started = Instant::now();
    run(server_io, None, ctx, stop_rx).await;
    assert_eq!(started.elapsed(), Duration::from_secs(7));
    // No WebSocket, no connection: the handler never hears of it.
    assert!(handler.events().is_empty());
}

#[tokio::test(start_paused = true)]
async fn ping_overtakes_a_slow_request() {
    let handler = Arc::new(Recorder::default());
    let mut h = connect(context(handler.clone(), |_| {}), 64 * 1024).await;
    initialize(&mut h.client).await;
    assert_eq!(next_json(&mut h.client).await["method"], "x-test/early");

    let started = Instant::now();
    send(
        &mut h.client,
        json!({"jsonrpc": "2.0", "id": 2, "method": "slow"}),
    )
    .await;
    send(
        &mut h.client,
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"channel": "ahp-root://"}}),
    )
    .await;
    let first = next_json(&mut h.client).await;
    assert_eq!(first, json!({"jsonrpc": "2.0", "id": 3, "result": null}));
    assert!(started.elapsed() < Duration::from_secs(1));
    let second = next_json(&mut h.client).await;
    assert_eq!(second["id"], 2);
    assert_eq!(second["result"], "slow done");
    assert!(started.elapsed() >= Duration::from_secs(3600));
}

#[tokio::test(start_paused = true)]
async fn the_initialize_response_precedes_frames_sent_during_initialize() {
    let handler = Arc::new(Recorder::default());
    let mut h = connect(context(handler.clone(), |_| {}), 64 * 1024).await;
    // `initialize` asserts the response comes first.
    initialize(&mut h.client).await;
    assert_eq!(next_json(&mut h.client).await["method"], "x-test/early");
}

#[tokio::test(start_paused = true)]
async fn notifications_before_initialize_are_dropped() {
    let handler = Arc::new(Recorder::default());
    let mut h = connect(context(handler.clone(), |_| {}), 64 * 1024).await;
    send(
        &mut h.client,
        json!({"jsonrpc": "2.0", "method": "dispatchAction", "params": {}}),
    )
    .await;
    initialize(&mut h.client).await;
    send(
        &mut h.client,
        json!({"jsonrpc": "2.0", "method": "unsubscribe", "params": {}}),
    )
    .await;
    h.client.close(None).await.unwrap();
    tokio::time::timeout(HANG, h.server).await.unwrap().unwrap();
    assert_eq!(
        handler.events(),
        vec![
            "initialize 1.0.0",
            "notification unsubscribe",
            "disconnected"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_lagging_client_is_closed_within_the_close_timeout() {
    let handler = Arc::new(Recorder::default());
    let ctx = context(handler.clone(), |c| {
        c.outbound_queue = 4;
        c.close_timeout = Duration::from_secs(3);
    });
    // A small pipe that the client never drains.
    let mut h = connect(ctx, 4096).await;
    initialize(&mut h.client).await;
    let started = Instant::now();
    send(
        &mut h.client,
        json!({"jsonrpc": "2.0", "id": 2, "method": "flood"}),
    )
    .await;
    tokio::time::timeout(HANG, h.server).await.unwrap().unwrap();
    let disconnects = handler.disconnects.lock().unwrap().clone();
    assert_eq!(disconnects.len(), 1);
    let (lagged, at) = disconnects[0];
    assert!(lagged);
    // The close frame cannot be written to a full pipe: the socket is dropped at the deadline.
    assert_eq!(at - started, Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn shutdown_closes_with_going_away_and_disconnects_once() {
    let handler = Arc::new(Recorder::default());
    let mut h = connect(context(handler.clone(), |_| {}), 64 * 1024).await;
    initialize(&mut h.client).await;
    h.stop.send_replace(true);
    let mut close = None;
    while let Some(message) = tokio::time::timeout(HANG, h.client.next()).await.unwrap() {
        if let Message::Close(frame) = message.unwrap() {
            close = frame;
        }
    }
    let close = close.expect("a close frame");
    assert_eq!(close.code, CloseCode::Away);
    assert_eq!(close.reason.as_str(), "server shutting down");
    tokio::time::timeout(HANG, h.server).await.unwrap().unwrap();
    assert_eq!(handler.disconnects.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn messages_received_before_the_client_left_are_still_handled() {
    let handler = Arc::new(Recorder::default());
    let mut h = connect(context(handler.clone(), |_| {}), 64 * 1024).await;
    initialize(&mut h.client).await;
    send(
        &mut h.client,
        json!({"jsonrpc": "2.0", "id": 2, "method": "slow"}),
    )
    .await;
    send(
        &mut h.client,
        json!({"jsonrpc": "2.0", "method": "dispatchAction", "params": {}}),
    )
    .await;
    h.client.close(None).await.unwrap();
    tokio::time::timeout(HANG, h.server).await.unwrap().unwrap();
    assert_eq!(
        handler.events(),
        vec![
            "initialize 1.0.0",
            "request slow",
            "notification dispatchAction",
            "disconnected"
        ]
    );
}

#[test]
fn close_reasons_are_cut_at_a_char_boundary() {
    let long = "é".repeat(100);
    let cut = truncate_reason(&long);
    assert!(cut.len() <= MAX_CLOSE_REASON_BYTES);
    assert_eq!(cut.len() % 2, 0);
    assert_eq!(truncate_reason("short"), "short");
}

/// A socketless connection with an outbound queue of `queue` frames.
fn detached(queue: usize) -> (Connection, Queues) {
    let config = ServerConfig {
        outbound_queue: queue,
        ..ServerConfig::new(Token::new(TOKEN.to_owned()).unwrap())
    };
    Connection::detached(1, &config)
}

#[tokio::test]
async fn sends_after_close_fail_with_lagged() {
    let (conn, _queues) = detached(2);
    assert!(conn.send_frame("{}".into()).is_ok());
    conn.close("bye");
    assert!(conn.is_closed());
    assert_eq!(conn.send_frame("{}".into()), Err(Lagged));
    assert!(!conn.is_lagged());
}

#[tokio::test]
async fn a_full_queue_marks_the_connection_lagged() {
    let (conn, queues) = detached(2);
    assert!(conn.send_frame("1".into()).is_ok());
    assert!(conn.send_frame("2".into()).is_ok());
    assert_eq!(conn.send_frame("3".into()), Err(Lagged));
    assert!(conn.is_lagged());
    let request = queues.close.borrow().clone().unwrap();
    assert_eq!(request.code, CLOSE_TRY_AGAIN_LATER);
    assert!(!request.drain);
}

#[tokio::test(start_paused = true)]
async fn the_dispatch_budget_is_per_connection_and_refills() {
    let config = ServerConfig {
        dispatch_rate: 10,
        dispatch_burst: 3,
        ..ServerConfig::new(Token::new(TOKEN.to_owned()).unwrap())
    };
    let (a, _qa) = Connection::detached(1, &config);
    let (b, _qb) = Connection::detached(2, &config);
    assert_eq!((0..10).filter(|_| a.admit_dispatch()).count(), 3);
    // Another connection has its own budget.
    assert_eq!((0..10).filter(|_| b.admit_dispatch()).count(), 3);
    tokio::time::advance(Duration::from_millis(200)).await;
    assert_eq!((0..10).filter(|_| a.admit_dispatch()).count(), 2);
    assert_eq!(a.max_subscriptions(), config.max_subscriptions);
}

#[tokio::test(start_paused = true)]
async fn a_dispatch_rate_of_zero_admits_every_dispatch() {
    let config = ServerConfig {
        dispatch_rate: 0,
        dispatch_burst: 1,
        ..ServerConfig::new(Token::new(TOKEN.to_owned()).unwrap())
    };
    let (conn, _queues) = Connection::detached(1, &config);
    assert!((0..10_000).all(|_| conn.admit_dispatch()));
}

#[tokio::test(start_paused = true)]
async fn a_connection_over_the_limit_gets_503_and_its_place_is_freed_by_the_first() {
    let handler = Arc::new(Recorder::default());
    let ctx = context(handler.clone(), |c| c.max_connections = 1);
    let slot = ctx.try_open().expect("a first place");
    assert!(ctx.try_open().is_none(), "only one place");

    // The refused client reads a 503 with Retry-After.
    let (mut client_io, server_io) = duplex(64 * 1024);
    let refused = tokio::spawn(refuse(server_io, None, Duration::from_secs(5)));
    client_io
        .write_all(
            format!(
                "GET /?tkn={TOKEN} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
                 Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    client_io.shutdown().await.unwrap();
    let mut answer = String::new();
    client_io.read_to_string(&mut answer).await.unwrap();
    refused.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(answer.contains("Retry-After: 1"), "{answer}");
    assert!(handler.events().is_empty(), "the handler never heard of it");

    drop(slot);
    assert!(ctx.try_open().is_some(), "the place was freed");
}

#[test]
fn a_large_frame_goes_out_in_fragments_that_share_its_memory() {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    let small: Arc<str> = Arc::from("{\"jsonrpc\":\"2.0\"}");
    assert!(matches!(
        text_messages(&small).as_slice(),
        [Message::Text(_)]
    ));
    let text = "é".repeat(MAX_WRITE_FRAME) + "tail";
    let large: Arc<str> = Arc::from(text.as_str());
    let messages = text_messages(&large);
    assert_eq!(messages.len(), large.len().div_ceil(MAX_WRITE_FRAME));
    let mut joined = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let Message::Frame(frame) = message else {
            panic!("not a raw frame: {message:?}");
        };
        let opcode = if index == 0 {
            OpCode::Data(Data::Text)
        } else {
            OpCode::Data(Data::Continue)
        };
        assert_eq!(frame.header().opcode, opcode);
        assert_eq!(frame.header().is_final, index + 1 == messages.len());
        assert!(frame.payload().len() <= MAX_WRITE_FRAME);
        joined.extend_from_slice(frame.payload());
    }
    assert_eq!(joined, large.as_bytes());
}

//! The transport end to end: a real server on 127.0.0.1:0 and real tokio-tungstenite clients.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use support::*;

fn base(server: &TestServer) -> String {
    format!("ws://{}", server.addr)
}

async fn refused_status(request: impl IntoClientRequest + Unpin) -> u16 {
    match tokio::time::timeout(DEADLINE, tokio_tungstenite::connect_async(request))
        .await
        .expect("connect timed out")
    {
        Err(WsError::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("expected an HTTP refusal, got {other}"),
        Ok(_) => panic!("the upgrade was accepted"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_names_the_bound_address_and_token() {
    let server = TestServer::start().await;
    assert_eq!(server.url, format!("ws://{}/?tkn={TOKEN}", server.addr));
    assert!(server.addr.ip().is_loopback());
    assert_ne!(server.addr.port(), 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_missing_empty_or_misnamed_token_gets_403() {
    let server = TestServer::start().await;
    let base = base(&server);
    for target in [
        format!("{base}/"),
        format!("{base}/?tkn=wrong"),
        format!("{base}/?tkn="),
        format!("{base}/?TKN={TOKEN}"),
        format!("{base}/{TOKEN}"),
    ] {
        assert_eq!(refused_status(target.as_str()).await, 403, "{target}");
    }
    let mut bad_bearer = format!("{base}/").into_client_request().unwrap();
    bad_bearer
        .headers_mut()
        .insert("Authorization", "Bearer wrong".parse().unwrap());
    assert_eq!(refused_status(bad_bearer).await, 403);
    // Refused upgrades never reach the session layer.
    assert!(server.handler.events().is_empty());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_accepted_in_the_query_and_as_a_bearer_header() {
    let server = TestServer::start().await;
    let base = base(&server);
    let mut clients = vec![
        connect(&server.url).await,
        // The slash-less form VS Code produces, a user path, and other parameters.
        connect(&format!("{base}?tkn={TOKEN}")).await,
        connect(&format!("{base}/some/path?folder=x&tkn={TOKEN}&y=1")).await,
    ];
    let mut bearer = format!("{base}/").into_client_request().unwrap();
    bearer
        .headers_mut()
        .insert("Authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let (client, response) = tokio_tungstenite::connect_async(bearer).await.unwrap();
    assert_eq!(response.status(), 101);
    clients.push(client);
    for (id, client) in (1..).zip(clients.iter_mut()) {
        ping(client, id).await;
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_request_gets_426() {
    let server = TestServer::start().await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(b"GET /?tkn=whatever HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(DEADLINE, stream.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 426 "), "{answer}");
    assert!(answer.contains("WebSocket"), "{answer}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_is_answered_before_initialize() {
    let server = TestServer::start().await;
    let mut client = connect(&server.url).await;
    ping(&mut client, 1).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_before_initialize_is_refused() {
    let server = TestServer::start().await;
    let mut client = connect(&server.url).await;
    let answer = call(&mut client, 5, "listSessions", json!({})).await;
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["error"]["code"], -32600);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("initialize first")
    );
    // Still usable: initialize now works.
    let answer = initialize(&mut client, "c1", &["1.0.0"]).await;
    assert_eq!(answer["result"]["protocolVersion"], "1.0.0");
    assert!(
        server
            .handler
            .events()
            .iter()
            .all(|e| !matches!(e, Event::Request { .. }))
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_negotiates_and_echoes_the_offered_version() {
    let server = TestServer::start().await;
    let cases: [(&[&str], &str); 5] = [
        (&["1.0.0"], "1.0.0"),
        (&["1.0.0", "0.9.0"], "1.0.0"),
        // VS Code release/1.141 and main.
        (
            &["0.10.0", "0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"],
            "0.10.0",
        ),
        // VS Code 1.140.
        (&["0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"], "0.9.0"),
        (&["1.1.0"], "1.1.0"),
    ];
    for (index, (offer, expected)) in cases.into_iter().enumerate() {
        let mut client = connect(&server.url).await;
        let client_id = format!("client-{index}");
        let answer = initialize(&mut client, &client_id, offer).await;
        assert_eq!(answer["result"]["protocolVersion"], expected, "{offer:?}");
        assert_eq!(answer["result"]["serverSeq"], 0);
        let conn = server.handler.conn_of(&client_id).unwrap();
        assert!(matches!(
            &server.handler.events_of(conn)[0],
            Event::Initialize { version, .. } if version == expected
        ));
        // Initialized: requests now reach the handler.
        let echo = call(&mut client, 2, "echo", json!({"n": index})).await;
        assert_eq!(echo["result"], json!({"n": index}));
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_common_version_gets_32005_and_the_connection_closes() {
    let server = TestServer::start().await;
    let mut client = connect(&server.url).await;
    let answer = initialize(&mut client, "old", &["2.0.0"]).await;
    assert_eq!(answer["error"]["code"], -32005);
    assert_eq!(
        answer["error"]["data"]["supportedVersions"],
        json!(["1.0.0", "0.10.0", "0.9.0"])
    );
    let close = closed(&mut client).await;
    assert_eq!(
        close.map(|(_, reason)| reason).as_deref(),
        Some("unsupported protocol version")
    );
    // The session layer never saw an initialize, but does see the connection go.
    let handler = server.handler.clone();
    eventually("disconnected", || {
        handler
            .events()
            .iter()
            .any(|e| matches!(e, Event::Disconnected { .. }))
    })
    .await;
    assert!(
        handler
            .events()
            .iter()
            .all(|e| !matches!(e, Event::Initialize { .. }))
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_version_is_invalid_params_and_a_second_initialize_is_refused() {
    let server = TestServer::start().await;
    let mut client = connect(&server.url).await;
    let answer = initialize(&mut client, "c", &["1.0"]).await;
    assert_eq!(answer["error"]["code"], -32602);
    // A client id the host would have to remember must be short (and present).
    for bad in [String::new(), "x".repeat(257)] {
        let answer = initialize(&mut client, &bad, &["1.0.0"]).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("clientId must be 1 to 256 bytes"),
            "{answer}"
        );
    }
    let answer = initialize(&mut client, "c", &["1.0.0"]).await;
    assert_eq!(answer["result"]["protocolVersion"], "1.0.0");
    let answer = initialize(&mut client, "c", &["1.0.0"]).await;
    assert_eq!(answer["error"]["code"], -32600);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already initialized")
    );
    ping(&mut client, 9).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_gets_32700_and_the_connection_stays_open() {
    let server = TestServer::start().await;
    let mut client = connect(&server.url).await;
    client
        .send(Message::Text("{\"jsonrpc\": \"2.0\", \"id\": 1, ".into()))
        .await
        .unwrap();
    let answer = next_json(&mut client).await;
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], -32700);
    ping(&mut client, 2).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_frame_gets_an_error_and_the_connection_stays_open() {
    let server = TestServer::start().await;
    let mut client = connect(&server.url).await;
    client
        .send(Message::Binary(
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec().into(),
        ))
        .await
        .unwrap();
    let answer = next_json(&mut client).await;
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], -32600);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("binary")
    );
    ping(&mut client, 2).await;
    server.shutdown().await;
}

/// VS Code sends its tool definitions and customizations in one `createSession`: by default a
/// message of tens of MiB is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_frame_limit_takes_tens_of_mib() {
    let server = TestServer::start_with(|_| {}).await;
    let mut client = connect(&server.url).await;
    initialize(&mut client, "vscode", &["1.0.0"]).await;
    // A method the handler does not know, so the answer stays small: it was read and
    // dispatched (`-32601`), not refused as too large (`-32600`).
    let blob = "a".repeat(24 * 1024 * 1024);
    let answer = call(&mut client, 2, "createSession", json!({"blob": blob})).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    ping(&mut client, 3).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_frame_is_refused_and_the_connection_closed() {
    let server = TestServer::start_with(|c| c.max_frame_bytes = 64 * 1024).await;
    let mut client = connect(&server.url).await;
    initialize(&mut client, "big", &["1.0.0"]).await;
    // Just under the limit passes.
    let fits = "a".repeat(60 * 1024);
    let answer = call(&mut client, 2, "echo", json!({"blob": fits})).await;
    assert_eq!(answer["result"]["blob"].as_str().unwrap().len(), fits.len());

    let too_big = json!({"jsonrpc": "2.0", "id": 3, "method": "echo",
                         "params": {"blob": "a".repeat(100 * 1024)}});
    send(&mut client, too_big).await;
    let answer = next_json(&mut client).await;
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], -32600);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("65536")
    );
    let (code, reason) = closed(&mut client).await.expect("a close frame");
    assert_eq!(code, 1009);
    assert!(reason.contains("too large"), "{reason}");
    // The oversized request never reached the handler.
    let conn = server.handler.conn_of("big").unwrap();
    let requests = server
        .handler
        .events_of(conn)
        .into_iter()
        .filter(|e| matches!(e, Event::Request { .. }))
        .count();
    assert_eq!(requests, 1);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_notifications_reach_the_handler_in_order() {
    let server = TestServer::start().await;
    let mut client = connect(&server.url).await;
    initialize(&mut client, "order", &["1.0.0"]).await;
    // Fire everything without waiting for answers.
    for n in 0..20u64 {
        if n % 3 == 0 {
            send(
                &mut client,
                json!({"jsonrpc": "2.0", "id": 100 + n, "method": "echo", "params": {"n": n}}),
            )
            .await;
        } else {
            send(
                &mut client,
                json!({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"n": n}}),
            )
            .await;
        }
    }
    send(
        &mut client,
        json!({"jsonrpc": "2.0", "method": "x-unknown-notification"}),
    )
    .await;
    let last = call(&mut client, 200, "echo", json!({"n": "last"})).await;
    assert_eq!(last["result"], json!({"n": "last"}));

    let conn = server.handler.conn_of("order").unwrap();
    let seen: Vec<Value> = server
        .handler
        .events_of(conn)
        .into_iter()
        .filter_map(|event| match event {
            Event::Request { params, .. } | Event::Notification { params, .. } => {
                Some(params.map_or(Value::Null, |p| p["n"].clone()))
            }
            _ => None,
        })
        .collect();
    let mut expected: Vec<Value> = (0..20u64).map(Value::from).collect();
    expected.push(Value::Null);
    expected.push(json!("last"));
    assert_eq!(seen, expected);
    // Responses come back in request order too (one worker).
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_are_method_not_found() {
    let server = TestServer::start().await;
    let mut client = connect(&server.url).await;
    initialize(&mut client, "c", &["1.0.0"]).await;
    let answer = call(
        &mut client,
        2,
        "createChat",
        json!({"channel": "ahp-session:/x"}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32601);
    assert_eq!(answer["error"]["message"], "method not found: createChat");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_without_a_channel_is_treated_as_root() {
    let server = TestServer::start().await;
    let mut client = connect(&server.url).await;
    // VS Code's shape: no `channel`.
    let answer = call(
        &mut client,
        1,
        "reconnect",
        json!({"clientId": "vscode-1", "lastSeenServerSeq": 12, "subscriptions": ["ahp-root://"]}),
    )
    .await;
    assert_eq!(
        answer["result"],
        json!({"type": "replay", "actions": [], "missing": []})
    );
    let conn = server.handler.conn_of("vscode-1").unwrap();
    assert!(matches!(
        &server.handler.events_of(conn)[0],
        Event::Reconnect { channel, .. } if channel == "ahp-root://"
    ));
    // Reconnected counts as initialized.
    let echo = call(&mut client, 2, "echo", json!({"ok": true})).await;
    assert_eq!(echo["result"], json!({"ok": true}));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_closed_as_lagged_while_others_are_served() {
    let server = TestServer::start_with(|c| {
        c.outbound_queue = 4;
        c.close_timeout = Duration::from_millis(500);
    })
    .await;
    let handler = server.handler.clone();
    let mut stalled = connect(&server.url).await;
    initialize(&mut stalled, "stalled", &["1.0.0"]).await;
    let stalled_conn = handler.conn_of("stalled").unwrap();

    let mut active = connect(&server.url).await;
    initialize(&mut active, "active", &["1.0.0"]).await;
    let active_conn = handler.conn_of("active").unwrap();

    // Broadcast 256 KiB frames until the stalled client's socket buffers and its queue of 4
    // fill and it refuses one (the broadcast then reaches only the active client, which reads
    // each of its copies).
    let mut id = 10;
    loop {
        assert!(id < 2_000, "the stalled client never lagged");
        let answer = call(&mut active, id, "broadcast", json!({"bytes": 256 * 1024})).await;
        id += 1;
        if answer["result"] == 1 {
            break;
        }
        assert_eq!(answer["result"], 2);
    }
    eventually("the lagged connection to be released", || {
        !handler.disconnects_of(stalled_conn).is_empty()
    })
    .await;
    assert_eq!(handler.disconnects_of(stalled_conn), vec![true]);

    // The host kept serving: the active client still gets answers, a new client connects.
    ping(&mut active, 5_000).await;
    let answer = call(&mut active, 5_001, "broadcast", json!({"bytes": 16})).await;
    assert_eq!(answer["result"], 1);
    let mut newcomer = connect(&server.url).await;
    ping(&mut newcomer, 1).await;
    assert!(handler.disconnects_of(active_conn).is_empty());
    drop(stalled);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnected_is_called_once_per_connection() {
    let server = TestServer::start().await;
    let handler = server.handler.clone();

    // The client closes.
    let mut leaving = connect(&server.url).await;
    initialize(&mut leaving, "leaving", &["1.0.0"]).await;
    let leaving_conn = handler.conn_of("leaving").unwrap();
    leaving.close(None).await.unwrap();
    assert_eq!(closed(&mut leaving).await.map(|(code, _)| code), None);
    eventually("disconnected", || {
        !handler.disconnects_of(leaving_conn).is_empty()
    })
    .await;

    // The client vanishes without a close frame.
    let mut vanishing = connect(&server.url).await;
    initialize(&mut vanishing, "vanishing", &["1.0.0"]).await;
    let vanishing_conn = handler.conn_of("vanishing").unwrap();
    drop(vanishing);
    eventually("disconnected", || {
        !handler.disconnects_of(vanishing_conn).is_empty()
    })
    .await;

    // The server shuts down: the client sees 1001, serve returns after `disconnected`.
    let mut staying = connect(&server.url).await;
    initialize(&mut staying, "staying", &["1.0.0"]).await;
    let staying_conn = handler.conn_of("staying").unwrap();
    let shutdown = tokio::spawn(server.shutdown());
    let (code, reason) = closed(&mut staying).await.expect("a close frame");
    assert_eq!((code, reason.as_str()), (1001, "server shutting down"));
    shutdown.await.unwrap();

    tokio::time::sleep(Duration::from_millis(100)).await;
    for conn in [leaving_conn, vanishing_conn, staying_conn] {
        assert_eq!(handler.disconnects_of(conn), vec![false], "{conn}");
        assert!(matches!(
            handler.events_of(conn).last(),
            Some(Event::Disconnected { .. })
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_beyond_max_connections_gets_503_and_a_closed_one_frees_its_place() {
    let server = TestServer::start_with(|c| c.max_connections = 2).await;
    let handler = server.handler.clone();
    let mut first = connect(&server.url).await;
    initialize(&mut first, "first", &["1.0.0"]).await;
    let first_conn = handler.conn_of("first").unwrap();
    let mut second = connect(&server.url).await;
    initialize(&mut second, "second", &["1.0.0"]).await;

    // Refused before any protocol message, with a hint to retry; the open ones keep working.
    assert_eq!(refused_status(server.url.as_str()).await, 503);
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(DEADLINE, stream.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(answer.contains("Retry-After: 1"), "{answer}");
    ping(&mut first, 2).await;
    ping(&mut second, 2).await;

    // Once a connection is gone (after `disconnected`), its place is free again.
    first.close(None).await.unwrap();
    eventually("disconnected", || {
        !handler.disconnects_of(first_conn).is_empty()
    })
    .await;
    // (The place is released just after `disconnected` returns: retry briefly.)
    let started = std::time::Instant::now();
    let mut third = loop {
        match tokio_tungstenite::connect_async(server.url.as_str()).await {
            Ok((client, _)) => break client,
            Err(WsError::Http(response)) if response.status() == 503 => {
                assert!(started.elapsed() < DEADLINE, "the place was never freed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(other) => panic!("connect failed: {other}"),
        }
    };
    initialize(&mut third, "third", &["1.0.0"]).await;
    ping(&mut third, 2).await;
    server.shutdown().await;
}

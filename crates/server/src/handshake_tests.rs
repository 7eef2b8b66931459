use tokio::io::{AsyncReadExt, AsyncWriteExt, duplex};

use super::*;
use crate::token::Token;

const UPGRADE: &str = "GET /?tkn=T HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive, Upgrade\r\n\
    Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";

fn status(head: &str) -> Option<u16> {
    precheck(head.as_bytes()).err().map(|r| r.status)
}

#[test]
fn a_proper_upgrade_passes() {
    assert_eq!(status(UPGRADE), None);
    // Bytes after the head (a pipelined frame) are not part of the check.
    let mut pipelined = UPGRADE.as_bytes().to_vec();
    pipelined.extend_from_slice(&[0x81, 0xff, 0xfe]);
    assert!(precheck(&pipelined).is_ok());
}

#[test]
fn a_target_without_a_path_gets_one() {
    let head = UPGRADE.replace("GET /?tkn=T", "GET ?tkn=T");
    let normalized = normalize_target(head.into_bytes());
    assert_eq!(String::from_utf8(normalized).unwrap(), UPGRADE);
    assert_eq!(
        normalize_target(UPGRADE.as_bytes().to_vec()),
        UPGRADE.as_bytes()
    );
}

#[test]
fn non_websocket_requests_get_a_clear_4xx() {
    assert_eq!(status("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), Some(426));
    assert_eq!(
        status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"),
        Some(405)
    );
    assert_eq!(status(&UPGRADE.replace("HTTP/1.1", "HTTP/1.0")), Some(400));
    assert_eq!(
        status(&UPGRADE.replace("Connection: keep-alive, Upgrade", "Connection: keep-alive")),
        Some(400)
    );
    assert_eq!(
        status(&UPGRADE.replace("Sec-WebSocket-Version: 13", "Sec-WebSocket-Version: 8")),
        Some(426)
    );
    assert_eq!(
        status(&UPGRADE.replace("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", "")),
        Some(400)
    );
    assert_eq!(status("garbage\r\n\r\n"), Some(400));
    assert_eq!(status("GET / HTTP/1.1\r\nno colon here\r\n\r\n"), Some(400));
}

#[test]
fn the_426_names_the_upgrade() {
    let rejection = precheck(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap_err();
    assert_eq!(rejection.headers, &[("Upgrade", "websocket")]);
    assert!(rejection.body.contains("WebSocket"));
}

#[tokio::test]
async fn prefixed_replays_the_prefix_then_reads_the_stream() {
    let (mut a, b) = duplex(64);
    a.write_all(b" world").await.unwrap();
    drop(a);
    let mut prefixed = Prefixed::new(b"hello".to_vec(), b);
    let mut all = String::new();
    prefixed.read_to_string(&mut all).await.unwrap();
    assert_eq!(all, "hello world");
}

async fn answer_to(request: &str, token: &Token) -> (String, HandshakeError) {
    let (mut client, server) = duplex(64 * 1024);
    client.write_all(request.as_bytes()).await.unwrap();
    let credentials = Arc::new(Credentials::new(token.clone()));
    let server = tokio::spawn(async move {
        let origins = crate::origin::OriginPolicy::new(
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            &[],
        );
        accept(
            server,
            &credentials,
            &origins,
            WebSocketConfig::default(),
            false,
        )
        .await
        .err()
        .unwrap()
    });
    let mut answer = String::new();
    client.shutdown().await.unwrap();
    client.read_to_string(&mut answer).await.unwrap();
    (answer, server.await.unwrap())
}

#[tokio::test]
async fn plain_http_is_answered_with_426_and_a_body() {
    let token = Token::new("T".to_owned()).unwrap();
    let (answer, error) = answer_to("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &token).await;
    assert!(
        answer.starts_with("HTTP/1.1 426 Upgrade Required\r\n"),
        "{answer}"
    );
    assert!(answer.contains("\r\nUpgrade: websocket\r\n"), "{answer}");
    assert!(answer.ends_with(NOT_WEBSOCKET_BODY), "{answer}");
    assert!(matches!(error, HandshakeError::Rejected(426)));
}

#[tokio::test]
async fn a_wrong_token_is_answered_with_403_and_a_body() {
    let token = Token::new("right".to_owned()).unwrap();
    let (answer, error) = answer_to(&UPGRADE.replace("tkn=T", "tkn=wrong"), &token).await;
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    assert!(answer.ends_with(FORBIDDEN_BODY), "{answer}");
    assert!(matches!(error, HandshakeError::Rejected(403)));
}

/// Bytes sent right behind the head (frames before the 101) do not cost a request without the
/// token its 403: the token is checked on the head itself.
#[tokio::test]
async fn a_wrong_token_with_frames_behind_the_head_still_gets_403() {
    let token = Token::new("right".to_owned()).unwrap();
    let mut request = UPGRADE.replace("tkn=T", "tkn=wrong");
    // A masked text frame carrying `{"jsonrpc":"2.0","id":1,"method":"initialize"}`-ish bytes.
    request.push_str("\u{81}\u{9}abcdefghi");
    let (answer, error) = answer_to(&request, &token).await;
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    assert!(matches!(error, HandshakeError::Rejected(403)));
}

#[tokio::test]
async fn an_oversized_head_is_answered_with_431() {
    let token = Token::new("T".to_owned()).unwrap();
    let huge = format!(
        "GET / HTTP/1.1\r\nX-Filler: {}\r\n\r\n",
        "a".repeat(MAX_HEAD_BYTES + 1)
    );
    let (answer, _) = answer_to(&huge, &token).await;
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer}");
}

#[tokio::test]
async fn a_foreign_origin_or_a_rebinding_host_gets_403_even_with_the_token() {
    let token = Token::new("T".to_owned()).unwrap();
    let upgrade = |extra: &str| {
        format!(
            "GET /?tkn=T HTTP/1.1\r\n{extra}Upgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
    };
    let (answer, error) = answer_to(
        &upgrade("Host: 127.0.0.1:9\r\nOrigin: https://attacker.example\r\n"),
        &token,
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    assert!(answer.contains("--allow-origin"), "{answer}");
    assert!(matches!(error, HandshakeError::Refused(_)), "{error}");
    let (answer, _) = answer_to(&upgrade("Host: rebound.example:9\r\n"), &token).await;
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    assert!(answer.contains("Host header"), "{answer}");
}

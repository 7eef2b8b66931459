use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt, duplex};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::*;
use crate::handshake::{HandshakeError, accept};
use crate::token::Token;

/// Sends `request` to a host with the page on (token `T`), returns its whole answer and how it
/// was answered.
async fn page(request: &str) -> (String, Result<Answered, String>) {
    let (mut client, server) = duplex(256 * 1024);
    client.write_all(request.as_bytes()).await.unwrap();
    let credentials = Arc::new(Credentials::new(Token::new("T/k".to_owned()).unwrap()));
    let server = tokio::spawn(async move {
        let origins = OriginPolicy::new(IpAddr::V4(Ipv4Addr::LOCALHOST), &[]);
        match accept(
            server,
            &credentials,
            &origins,
            WebSocketConfig::default(),
            true,
        )
        .await
        {
            Err(HandshakeError::Page(answered)) => Ok(answered),
            Err(other) => Err(other.to_string()),
            Ok(_) => Err("upgraded".to_owned()),
        }
    });
    client.shutdown().await.unwrap();
    let mut answer = Vec::new();
    client.read_to_end(&mut answer).await.unwrap();
    (String::from_utf8(answer).unwrap(), server.await.unwrap())
}

fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = answer.split("\r\n\r\n").next()?;
    head.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[tokio::test]
async fn the_page_needs_the_token_and_carries_a_strict_policy() {
    let (answer, answered) = page("GET /?tkn=T%2Fk HTTP/1.1\r\nHost: 127.0.0.1:4000\r\n\r\n").await;
    assert_eq!(answered, Ok(Answered::Served));
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert_eq!(
        header(&answer, "Content-Type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(
        header(&answer, "Content-Security-Policy"),
        Some(CONTENT_SECURITY_POLICY)
    );
    assert_eq!(header(&answer, "Cache-Control"), Some("no-store"));
    assert_eq!(header(&answer, "Referrer-Policy"), Some("no-referrer"));
    assert!(
        answer.contains("<script type=\"module\" src=\"/app.js\">"),
        "{answer}"
    );
    // No inline script: the policy would block it.
    assert_eq!(answer.matches("<script").count(), 1, "{answer}");

    for request in [
        "GET / HTTP/1.1\r\nHost: localhost:4000\r\n\r\n",
        "GET /?tkn=wrong HTTP/1.1\r\nHost: localhost:4000\r\n\r\n",
        "GET /index.html?TKN=T%2Fk HTTP/1.1\r\nHost: localhost:4000\r\n\r\n",
        "GET /?tkn=T%2 HTTP/1.1\r\nHost: localhost:4000\r\n\r\n",
    ] {
        let (answer, answered) = page(request).await;
        assert_eq!(answered, Ok(Answered::NoToken), "{request}");
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
        assert!(!answer.contains("<html"), "{answer}");
    }
}

#[tokio::test]
async fn the_script_style_and_icon_need_no_token_and_nothing_else_is_there() {
    for (path, kind) in [
        ("/app.js", "text/javascript; charset=utf-8"),
        ("/dom.js", "text/javascript; charset=utf-8"),
        ("/reducers.js", "text/javascript; charset=utf-8"),
        ("/app.css", "text/css; charset=utf-8"),
        ("/icon.svg", "image/svg+xml"),
    ] {
        let (answer, answered) =
            page(&format!("GET {path} HTTP/1.1\r\nHost: [::1]:9\r\n\r\n")).await;
        assert_eq!(answered, Ok(Answered::Served), "{path}");
        assert_eq!(header(&answer, "Content-Type"), Some(kind), "{path}");
        assert_eq!(header(&answer, "X-Content-Type-Options"), Some("nosniff"));
    }
    let (answer, answered) = page("GET /../etc/passwd HTTP/1.1\r\nHost: localhost\r\n\r\n").await;
    assert_eq!(answered, Ok(Answered::Other(404)));
    assert!(answer.starts_with("HTTP/1.1 404 Not Found\r\n"), "{answer}");
    let (answer, answered) = page("HEAD /app.css HTTP/1.1\r\nHost: localhost\r\n\r\n").await;
    assert_eq!(answered, Ok(Answered::Served));
    assert!(
        answer.ends_with("\r\n\r\n"),
        "a HEAD answer has no body: {answer}"
    );
    let (answer, answered) = page("DELETE / HTTP/1.1\r\nHost: localhost\r\n\r\n").await;
    assert_eq!(answered, Ok(Answered::Other(405)));
    assert_eq!(header(&answer, "Allow"), Some("GET, HEAD"));
    let (_, answered) =
        page("GET /?tkn=T%2Fk HTTP/1.1\r\nHost: localhost\r\nHost: attacker.example\r\n\r\n").await;
    assert_eq!(answered, Ok(Answered::Other(400)));
}

#[tokio::test]
async fn a_rebinding_host_gets_no_page_even_with_the_token() {
    let (answer, answered) =
        page("GET /?tkn=T%2Fk HTTP/1.1\r\nHost: attacker.example:4000\r\n\r\n").await;
    assert_eq!(answered, Ok(Answered::Host));
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    let (_, answered) = page("GET /app.js HTTP/1.1\r\n\r\n").await;
    assert_eq!(answered, Ok(Answered::Host));
}

#[test]
fn an_upgrade_is_not_a_page_request() {
    assert!(is_page_request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    assert!(!is_page_request(
        b"GET /?tkn=T HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\r\n"
    ));
}

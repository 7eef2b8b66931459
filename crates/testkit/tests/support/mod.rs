//! A real HTTP/1.1 client over loopback, an SSE parser and the fixtures, for the mock's tests.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::{HeaderMap, Request};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

/// How long any single exchange in these tests may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// One answer, its body read to the end.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
    /// When the first body frame arrived and when the body ended, from when the request left.
    pub first_frame_after: Duration,
    pub finished_after: Duration,
}

impl HttpResponse {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }

    pub fn events(&self) -> Vec<SseEvent> {
        parse_sse(&self.body)
    }
}

/// One HTTP/1.1 connection, reused for every request sent through it (keep-alive).
pub struct Client {
    sender: SendRequest<Full<Bytes>>,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        Client { sender }
    }

    pub async fn post(&mut self, path: &str, body: &Value) -> HttpResponse {
        let body = serde_json::to_vec(body).unwrap();
        self.send("POST", path, Some(body)).await
    }

    pub async fn get(&mut self, path: &str) -> HttpResponse {
        self.send("GET", path, None).await
    }

    pub async fn send(&mut self, method: &str, path: &str, body: Option<Vec<u8>>) -> HttpResponse {
        tokio::time::timeout(DEADLINE, self.exchange(method, path, body))
            .await
            .expect("the mock answers in time")
    }

    /// Whether the connection can still carry a request (false once the server closed it).
    pub async fn is_usable(&mut self) -> bool {
        if self.sender.ready().await.is_err() {
            return false;
        }
        let request = Request::get("/__mock_ready")
            .header("host", "127.0.0.1")
            .body(Full::new(Bytes::new()))
            .unwrap();
        self.sender.send_request(request).await.is_ok()
    }

    async fn exchange(&mut self, method: &str, path: &str, body: Option<Vec<u8>>) -> HttpResponse {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1")
            .header("user-agent", "claude-cli/2.1.328 (external, sdk-cli)")
            .header("anthropic-version", "2023-06-01")
            .header("x-api-key", "dummy")
            .header("authorization", "Bearer secret-token")
            .header("x-unrelated", "dropped");
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .unwrap();
        self.sender.ready().await.unwrap();
        let sent = Instant::now();
        let response = self.sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        let mut first_frame_after = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.unwrap();
            first_frame_after.get_or_insert_with(|| sent.elapsed());
            if let Some(data) = frame.data_ref() {
                bytes.extend_from_slice(data);
            }
        }
        let finished_after = sent.elapsed();
        HttpResponse {
            status,
            headers,
            body: String::from_utf8(bytes).unwrap(),
            first_frame_after: first_frame_after.unwrap_or(finished_after),
            finished_after,
        }
    }
}

/// A request on a fresh connection.
pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> HttpResponse {
    Client::connect(addr).await.post(path, body).await
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The `event:` line, absent for Chat Completions.
    pub name: Option<String>,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

/// Parses an SSE body; every event must end with a blank line.
pub fn parse_sse(body: &str) -> Vec<SseEvent> {
    assert!(
        body.ends_with("\n\n"),
        "an SSE body ends with a blank line: {body:?}"
    );
    body.trim_end_matches('\n')
        .split("\n\n")
        .map(|block| {
            let mut name = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event: ") {
                    name = Some(value.to_owned());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    assert!(data.is_none(), "one data line per event: {block:?}");
                    data = Some(value.to_owned());
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            SseEvent {
                name,
                data: data.unwrap(),
            }
        })
        .collect()
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A request body from `tests/fixtures/requests`.
pub fn request_fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join("requests").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Ids and timestamps replaced by placeholders, so two answers can be compared.
pub fn normalize(text: &str) -> String {
    const IDS: &[(&str, usize)] = &[
        ("msg_", 24),
        ("toolu_", 24),
        ("resp_", 24),
        ("rs_", 24),
        ("fc_", 24),
        ("call_", 24),
        ("lsh_", 24),
        ("req_", 24),
        ("chatcmpl-", 24),
        ("mock-signature-", 16),
    ];
    const TIMES: &[&str] = &["\"created_at\": ", "\"created\": "];
    let mut out = String::new();
    let mut rest = text;
    'scan: while let Some(c) = rest.chars().next() {
        for (prefix, len) in IDS {
            if let Some(after) = rest.strip_prefix(prefix) {
                let hex = after
                    .bytes()
                    .take_while(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
                if hex.count() == *len {
                    out.push_str(prefix);
                    out.push_str("<id>");
                    rest = &after[*len..];
                    continue 'scan;
                }
            }
        }
        for key in TIMES {
            if let Some(after) = rest.strip_prefix(key) {
                let digits = after.bytes().take_while(u8::is_ascii_digit).count();
                if digits > 0 {
                    out.push_str(key);
                    out.push_str("<time>");
                    rest = &after[digits..];
                    continue 'scan;
                }
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

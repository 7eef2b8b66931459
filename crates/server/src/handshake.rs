//! The HTTP side of a connection: reading the request head, answering what is not a WebSocket
//! upgrade with a clear 4xx, and the upgrade itself with token authentication.
//!
//! tungstenite rejects a non-upgrade request by dropping the connection without an answer, so
//! the head is read here first, checked the way tungstenite would check it, and then replayed
//! to tungstenite through [`Prefixed`]. Authentication stays in tungstenite's handshake
//! callback (`accept_hdr_async`): a missing or wrong token gets 403 before any protocol message.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode, header};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::access::{Credentials, Grant};
use crate::auth;
use crate::origin::{OriginPolicy, OriginRefusal};

/// Largest accepted request head.
pub(crate) const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Most header lines accepted (tungstenite's own parser stops at 124).
pub(crate) const MAX_HEADERS: usize = 100;

/// The body of the 403 answer.
pub(crate) const FORBIDDEN_BODY: &str = "forbidden: missing or invalid connection token\n";

/// Why an upgrade did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HandshakeError {
    #[error("i/o error before the upgrade: {0}")]
    Io(#[from] io::Error),
    #[error("the client closed the connection before sending a request")]
    Eof,
    #[error("answered HTTP {0}")]
    Rejected(u16),
    #[error("answered HTTP 403: {}", .0.describe())]
    Refused(OriginRefusal),
    #[error("WebSocket handshake failed: {0}")]
    WebSocket(#[from] tokio_tungstenite::tungstenite::Error),
    /// A plain HTTP request for the page (`serve --web`), answered.
    #[error("answered a page request: {0:?}")]
    Page(crate::web::Answered),
}

/// A refusal written before tungstenite sees the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub status: u16,
    pub reason: &'static str,
    pub headers: &'static [(&'static str, &'static str)],
    pub body: &'static str,
}

const NOT_WEBSOCKET_BODY: &str = "this is an Agent Host Protocol endpoint: connect with a \
    WebSocket client to ws://<host>:<port>/?tkn=<token>\n";

const UPGRADE_REQUIRED: Rejection = Rejection {
    status: 426,
    reason: "Upgrade Required",
    headers: &[("Upgrade", "websocket")],
    body: NOT_WEBSOCKET_BODY,
};

/// The answer to a connection beyond `ServerConfig::max_connections`.
pub(crate) const SERVICE_UNAVAILABLE: Rejection = Rejection {
    status: 503,
    reason: "Service Unavailable",
    headers: &[("Retry-After", "1")],
    body: "too many connections: the host's connection limit is reached; try again later\n",
};

const fn bad_request(body: &'static str) -> Rejection {
    Rejection {
        status: 400,
        reason: "Bad Request",
        headers: &[],
        body,
    }
}

/// Upgrades `stream` to a WebSocket, or answers it with an HTTP error.
pub(crate) async fn accept<S>(
    mut stream: S,
    credentials: &Arc<Credentials>,
    origins: &OriginPolicy,
    config: WebSocketConfig,
    web: bool,
) -> Result<(WebSocketStream<Prefixed<S>>, Grant), HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let head = match read_head(&mut stream).await? {
        Ok(head) => head,
        Err(rejection) => return Err(reject(stream, &rejection).await),
    };
    if web && crate::web::is_page_request(&head) {
        let answered = crate::web::answer(stream, &head, credentials, origins).await?;
        return Err(HandshakeError::Page(answered));
    }
    if let Err(rejection) = precheck(&head) {
        return Err(reject(stream, &rejection).await);
    }
    // The token is checked on the head as read, before tungstenite parses anything: a request
    // without it gets its 403 even when bytes follow the head (tungstenite would drop such a
    // connection unanswered). The callback below checks it again.
    let Some(grant) = head_grant(&head, credentials) else {
        return Err(reject(stream, &FORBIDDEN).await);
    };
    if let Err(refusal) = origins.check(
        head_header(&head, "Origin").as_deref(),
        head_header(&head, "Host").as_deref(),
    ) {
        let rejection = Rejection {
            body: refusal.body(),
            ..FORBIDDEN
        };
        reject(stream, &rejection).await;
        return Err(HandshakeError::Refused(refusal));
    }
    let head = normalize_target(head);
    let credentials = credentials.clone();
    // The callback's signature (a large `Err`) is tungstenite's, not ours.
    #[allow(clippy::result_large_err)]
    let callback = move |request: &Request, response: Response| {
        if auth::request_grant(request, &credentials).is_some() {
            Ok(response)
        } else {
            Err(forbidden())
        }
    };
    let prefixed = Prefixed::new(head, stream);
    match tokio_tungstenite::accept_hdr_async_with_config(prefixed, callback, Some(config)).await {
        Ok(ws) => Ok((ws, grant)),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            Err(HandshakeError::Rejected(response.status().as_u16()))
        }
        Err(error) => Err(error.into()),
    }
}

/// Answers a connection the server has no room for with [`SERVICE_UNAVAILABLE`], after reading
/// its request head (so the answer is not lost to a reset). The caller bounds it with a timeout.
pub(crate) async fn refuse_busy<S>(mut stream: S) -> HandshakeError
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match read_head(&mut stream).await {
        // Whatever the head was, the answer is the same.
        Ok(_) => reject(stream, &SERVICE_UNAVAILABLE).await,
        Err(error) => error,
    }
}

/// Reads up to and including the blank line that ends the request head.
/// The outer `Err` is an i/o failure; the inner one an answer to send.
async fn read_head<S>(stream: &mut S) -> Result<Result<Vec<u8>, Rejection>, HandshakeError>
where
    S: AsyncRead + Unpin,
{
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(HandshakeError::Eof);
        }
        let search_from = head.len().saturating_sub(3);
        head.extend_from_slice(&chunk[..read]);
        let complete = head[search_from..].windows(4).any(|w| w == b"\r\n\r\n");
        if head.len() > MAX_HEAD_BYTES {
            return Ok(Err(Rejection {
                status: 431,
                reason: "Request Header Fields Too Large",
                headers: &[],
                body: "request head too large\n",
            }));
        }
        if complete {
            return Ok(Ok(head));
        }
    }
}

/// Checks what tungstenite checks before it calls the callback, so that every request it would
/// drop silently gets an answer instead.
pub(crate) fn precheck(head: &[u8]) -> Result<(), Rejection> {
    let text =
        head_text(head).ok_or_else(|| bad_request("the request head is not valid UTF-8\n"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let parts: Vec<&str> = request_line.split(' ').collect();
    let [method, _target, version] = parts[..] else {
        return Err(bad_request("malformed request line\n"));
    };
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad_request("malformed header line\n"));
        };
        headers.push((name.trim(), value.trim()));
        if headers.len() > MAX_HEADERS {
            return Err(Rejection {
                status: 431,
                reason: "Request Header Fields Too Large",
                headers: &[],
                body: "too many header lines\n",
            });
        }
    }
    let header = |wanted: &str| {
        headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
            .map(|(_, value)| *value)
    };
    if method != "GET" {
        return Err(Rejection {
            status: 405,
            reason: "Method Not Allowed",
            headers: &[("Allow", "GET")],
            body: NOT_WEBSOCKET_BODY,
        });
    }
    if version != "HTTP/1.1" {
        return Err(bad_request("WebSocket upgrades need HTTP/1.1\n"));
    }
    if !header("Upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket")) {
        return Err(UPGRADE_REQUIRED);
    }
    let connection_upgrade = header("Connection").is_some_and(|v| {
        v.split([' ', ','])
            .any(|token| token.eq_ignore_ascii_case("upgrade"))
    });
    if !connection_upgrade {
        return Err(bad_request(
            "a WebSocket upgrade needs the header Connection: Upgrade\n",
        ));
    }
    if header("Sec-WebSocket-Version") != Some("13") {
        return Err(Rejection {
            status: 426,
            reason: "Upgrade Required",
            headers: &[("Sec-WebSocket-Version", "13")],
            body: "only WebSocket version 13 is supported\n",
        });
    }
    if header("Sec-WebSocket-Key").is_none() {
        return Err(bad_request("missing Sec-WebSocket-Key\n"));
    }
    Ok(())
}

/// The 403 of a failed token check, written before the upgrade.
const FORBIDDEN: Rejection = Rejection {
    status: 403,
    reason: "Forbidden",
    headers: &[],
    body: FORBIDDEN_BODY,
};

/// The grant of the token the request head (already through [`precheck`]) presents in its
/// target's `tkn` query parameter or an `Authorization: Bearer` header, if any is ours.
fn head_grant(head: &[u8], credentials: &Credentials) -> Option<Grant> {
    let text = head_text(head)?;
    let mut lines = text.split("\r\n");
    let target = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .unwrap_or_default();
    let mut grant = None;
    let query = target.split_once('?').map(|(_, query)| query);
    for presented in auth::query_tokens(query) {
        grant = grant.or(credentials.grant_for(&presented));
    }
    for line in lines {
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("authorization")
            && let Some(presented) = auth::bearer_token(value)
        {
            grant = grant.or(credentials.grant_for(presented.as_bytes()));
        }
    }
    grant
}

/// The value of the first `name` header of the request head (already through [`precheck`]).
fn head_header(head: &[u8], name: &str) -> Option<String> {
    let text = head_text(head)?;
    text.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}

/// The request head up to its blank line, if it is UTF-8.
pub(crate) fn head_text(head: &[u8]) -> Option<&str> {
    let end = head
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(head.len());
    std::str::from_utf8(&head[..end]).ok()
}

/// Turns a request target without a path (`GET ?tkn=… HTTP/1.1`, which tungstenite-based
/// clients send for a slash-less URL such as `ws://host:port?tkn=…`) into `/?tkn=…`, which is
/// what browsers send for the same URL and what tungstenite's server side can parse.
pub(crate) fn normalize_target(mut head: Vec<u8>) -> Vec<u8> {
    if let Some(space) = head.iter().position(|&b| b == b' ')
        && head.get(space + 1) == Some(&b'?')
    {
        head.insert(space + 1, b'/');
    }
    head
}

/// Writes `rejection`, half-closes, and drains what the client still sends until it closes
/// (so that unread request bytes do not turn our close into a reset that eats the answer).
/// The caller bounds the whole handshake with a timeout.
async fn reject<S>(mut stream: S, rejection: &Rejection) -> HandshakeError
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut response = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        rejection.status,
        rejection.reason,
        rejection.body.len()
    );
    for (name, value) in rejection.headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    response.push_str(rejection.body);
    let written = async {
        stream.write_all(response.as_bytes()).await?;
        stream.flush().await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<(), io::Error>(())
    };
    if let Err(error) = written.await {
        tracing::debug!(%error, "could not deliver an HTTP rejection");
    }
    HandshakeError::Rejected(rejection.status)
}

/// The 403 of a failed token check.
fn forbidden() -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(FORBIDDEN_BODY.to_owned()));
    *response.status_mut() = StatusCode::FORBIDDEN;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(FORBIDDEN_BODY.len()),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A stream that first replays bytes already read from `inner`, then reads `inner`.
/// Writes go straight to `inner`.
#[derive(Debug)]
pub(crate) struct Prefixed<S> {
    prefix: Vec<u8>,
    position: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub(crate) fn new(prefix: Vec<u8>, inner: S) -> Self {
        Self {
            prefix,
            position: 0,
            inner,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.position < this.prefix.len() {
            let remaining = &this.prefix[this.position..];
            let count = remaining.len().min(buf.remaining());
            buf.put_slice(&remaining[..count]);
            this.position += count;
            if this.position == this.prefix.len() {
                this.prefix = Vec::new();
                this.position = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
#[path = "handshake_tests.rs"]
mod tests;

//! `serve --web`: the host's own page, a small single-page AHP client served from the binary on
//! the WebSocket listener ([`ServerConfig::web`](crate::ServerConfig::web)).
//!
//! A plain HTTP `GET` (no `Upgrade: websocket`) is answered here instead of with 426:
//!
//! | Path | Token | Answer |
//! |---|---|---|
//! | `/`, `/index.html` | `?tkn=` required | the page (`text/html`), `Cache-Control: no-store`; 403 without a valid token |
//! | `/app.js` (and the modules it imports, `/dom.js`, `/reducers.js`), `/app.css`, `/icon.svg` | none | the page's script, style and icon: public, they hold no secret (a browser does not add `?tkn` to them) |
//! | anything else | — | 404 |
//!
//! Every answer carries a strict Content-Security-Policy ([`CONTENT_SECURITY_POLICY`]: scripts,
//! styles, images and connections from the page's own origin only, no inline script, no frames,
//! no forms), `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` and
//! `X-Frame-Options: DENY`. The `Host` check of the WebSocket upgrade applies to the page too
//! (a DNS-rebinding page gets 403). The page keeps the token in memory only and strips it from
//! the address bar; it connects back with `ws://<its own host>/?tkn=…`, whose `Origin` is its own
//! and allowed by default (see [`crate::origin`]).

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::access::Credentials;
use crate::auth;
use crate::handshake::{FORBIDDEN_BODY, HandshakeError, head_text};
use crate::origin::OriginPolicy;

/// The page's Content-Security-Policy: nothing from anywhere but its own origin, no inline
/// script or style, no `eval`, no plugins, frames, forms or `<base>`.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// One file of the page.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
    /// The page itself needs the token; its script, style and icon do not.
    needs_token: bool,
}

const HTML: &str = "text/html; charset=utf-8";
const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

const ASSETS: &[Asset] = &[
    Asset::new("/", HTML, include_bytes!("../web/index.html"), true),
    Asset::new(
        "/index.html",
        HTML,
        include_bytes!("../web/index.html"),
        true,
    ),
    Asset::new(
        "/app.js",
        JAVASCRIPT,
        include_bytes!("../web/app.js"),
        false,
    ),
    Asset::new(
        "/dom.js",
        JAVASCRIPT,
        include_bytes!("../web/dom.js"),
        false,
    ),
    Asset::new(
        "/reducers.js",
        JAVASCRIPT,
        include_bytes!("../web/reducers.js"),
        false,
    ),
    Asset::new(
        "/app.css",
        "text/css; charset=utf-8",
        include_bytes!("../web/app.css"),
        false,
    ),
    Asset::new(
        "/icon.svg",
        "image/svg+xml",
        include_bytes!("../web/icon.svg"),
        false,
    ),
];

impl Asset {
    const fn new(
        path: &'static str,
        content_type: &'static str,
        body: &'static [u8],
        needs_token: bool,
    ) -> Self {
        Self {
            path,
            content_type,
            body,
            needs_token,
        }
    }
}

/// A request head, as far as the page needs it.
struct PageRequest<'a> {
    method: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    host: Option<&'a str>,
}

/// Whether `head` asks for a page rather than a WebSocket upgrade: a request whose `Upgrade`
/// header does not name `websocket`.
pub(crate) fn is_page_request(head: &[u8]) -> bool {
    let Some(text) = head_text(head) else {
        return false;
    };
    !text.split("\r\n").skip(1).any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("upgrade")
                && value.trim().eq_ignore_ascii_case("websocket")
        })
    })
}

/// What a page request was answered with: the status, and why when it was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answered {
    /// 200, 304-free: the file.
    Served,
    /// 403: no valid token for the page.
    NoToken,
    /// 403: the `Host` names another host.
    Host,
    /// 404, 405 or 400.
    Other(u16),
}

/// One answer: status, type, body, and whether it lists the allowed methods.
struct Answer<'a> {
    status: u16,
    reason: &'a str,
    content_type: &'a str,
    body: &'a [u8],
    allow: bool,
}

impl<'a> Answer<'a> {
    fn text(status: u16, reason: &'a str, body: &'a [u8]) -> Self {
        Self {
            status,
            reason,
            content_type: "text/plain; charset=utf-8",
            body,
            allow: false,
        }
    }
}

/// Answers a page request and closes the connection.
pub(crate) async fn answer<S>(
    mut stream: S,
    head: &[u8],
    credentials: &Arc<Credentials>,
    origins: &OriginPolicy,
) -> Result<Answered, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (answer, answered, head_only) = decide(head, credentials, origins);
    respond(&mut stream, &answer, head_only).await?;
    Ok(answered)
}

/// What a request head gets: the answer, how to report it, and whether the body is left out
/// (`HEAD`).
fn decide(
    head: &[u8],
    credentials: &Credentials,
    origins: &OriginPolicy,
) -> (Answer<'static>, Answered, bool) {
    let Some(request) = parse(head) else {
        let answer = Answer::text(400, "Bad Request", b"malformed request\n");
        return (answer, Answered::Other(400), false);
    };
    let head_only = request.method == "HEAD";
    if request.method != "GET" && !head_only {
        let answer = Answer {
            allow: true,
            ..Answer::text(405, "Method Not Allowed", b"the page is read with GET\n")
        };
        return (answer, Answered::Other(405), false);
    }
    if origins.check(None, request.host).is_err() {
        let body = crate::origin::OriginRefusal::Host.body().as_bytes();
        return (
            Answer::text(403, "Forbidden", body),
            Answered::Host,
            head_only,
        );
    }
    let Some(asset) = ASSETS.iter().find(|asset| asset.path == request.path) else {
        let answer = Answer::text(404, "Not Found", b"not found\n");
        return (answer, Answered::Other(404), head_only);
    };
    if asset.needs_token {
        let granted = auth::query_tokens(request.query)
            .iter()
            .any(|presented| credentials.grant_for(presented).is_some());
        if !granted {
            let answer = Answer::text(403, "Forbidden", FORBIDDEN_BODY.as_bytes());
            return (answer, Answered::NoToken, head_only);
        }
    }
    let answer = Answer {
        content_type: asset.content_type,
        body: asset.body,
        ..Answer::text(200, "OK", b"")
    };
    (answer, Answered::Served, head_only)
}

/// Writes one answer with the page's security headers, half-closes, and drains what the client
/// still sends until it closes (the caller bounds it with the handshake timeout).
async fn respond<S>(
    stream: &mut S,
    answer: &Answer<'_>,
    head_only: bool,
) -> Result<(), HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let allow = if answer.allow {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{allow}\
         Content-Security-Policy: {CONTENT_SECURITY_POLICY}\r\nX-Content-Type-Options: nosniff\r\n\
         Referrer-Policy: no-referrer\r\nX-Frame-Options: DENY\r\nCache-Control: no-store\r\n\
         Connection: close\r\n\r\n",
        answer.status,
        answer.reason,
        answer.content_type,
        answer.body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    if !head_only {
        stream.write_all(answer.body).await?;
    }
    stream.flush().await?;
    stream.shutdown().await?;
    let mut sink = [0u8; 4096];
    while stream.read(&mut sink).await? > 0 {}
    Ok(())
}

fn parse(head: &[u8]) -> Option<PageRequest<'_>> {
    let text = head_text(head)?;
    let mut lines = text.split("\r\n");
    let mut parts = lines.next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    };
    let mut host = None;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        if name.trim().eq_ignore_ascii_case("host") {
            if host.is_some() {
                // Two Host headers: which one names the host is ambiguous.
                return None;
            }
            host = Some(value.trim());
        }
    }
    Some(PageRequest {
        method,
        path: if path.is_empty() { "/" } else { path },
        query,
        host,
    })
}

#[cfg(test)]
#[path = "web_tests.rs"]
mod tests;

//! [`WebhookNotifier`]: a POST of the notification to a URL.

use std::time::Duration;

use agenthost_services::{Notification, Notifier};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::{Queue, json_line};

/// A webhook URL that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--notify-webhook {url}: {reason}")]
pub struct WebhookError {
    /// The URL.
    pub url: String,
    /// Why.
    pub reason: String,
}

/// How a delivery is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retries {
    /// Attempts in all (at least 1).
    pub attempts: u32,
    /// The budget of one attempt, connection included.
    pub timeout: Duration,
    /// The pause before the second attempt; it doubles for each later one.
    pub pause: Duration,
}

impl Default for Retries {
    /// Three attempts of 10 s each, 1 s then 2 s apart.
    fn default() -> Self {
        Self {
            attempts: 3,
            timeout: Duration::from_secs(10),
            pause: Duration::from_secs(1),
        }
    }
}

/// The HTTP client: with TLS when the platform has root certificates.
#[derive(Clone)]
enum Transport {
    Tls(Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>),
    Plain(Client<HttpConnector, Full<Bytes>>),
}

/// POSTs each notification.
#[derive(Debug, Clone)]
pub struct WebhookNotifier {
    queue: Queue,
}

impl WebhookNotifier {
    /// Starts the delivery task (on the current runtime) for `url`, tried as `retries` says.
    pub fn start(url: &str, retries: Retries) -> Result<Self, WebhookError> {
        let refuse = |reason: &str| WebhookError {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: hyper::Uri = url.parse().map_err(|_| refuse("not a URL"))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(refuse("expected an http:// or https:// URL with a host"));
        }
        let transport = match hyper_rustls::HttpsConnectorBuilder::new().with_native_roots() {
            Ok(builder) => Transport::Tls(
                Client::builder(TokioExecutor::new())
                    .pool_timer(TokioTimer::new())
                    .build(builder.https_or_http().enable_http1().build()),
            ),
            Err(error) if uri.scheme_str() == Some("http") => {
                tracing::debug!(%error, "no root certificates: plain HTTP only");
                Transport::Plain(
                    Client::builder(TokioExecutor::new())
                        .pool_timer(TokioTimer::new())
                        .build_http(),
                )
            }
            Err(error) => {
                return Err(refuse(&format!("no root certificates for HTTPS: {error}")));
            }
        };
        let queue = Queue::start("webhook", move |notification| {
            let (transport, uri) = (transport.clone(), uri.clone());
            async move {
                if let Err(error) = deliver(&transport, &uri, &notification, retries).await {
                    tracing::warn!(
                        url = %uri,
                        event = notification.event.as_str(),
                        "the notification webhook failed: {error}"
                    );
                }
            }
        });
        Ok(Self { queue })
    }
}

impl Notifier for WebhookNotifier {
    fn notify(&self, notification: Notification) {
        self.queue.push(notification);
    }
}

/// The pause before attempt `attempt` (2, 3, …).
fn pause(retries: &Retries, attempt: u32) -> Duration {
    retries
        .pause
        .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(2)))
}

/// POSTs `notification`, up to `retries.attempts` times.
async fn deliver(
    transport: &Transport,
    uri: &hyper::Uri,
    notification: &Notification,
    retries: Retries,
) -> Result<(), String> {
    let body = Bytes::from(json_line(notification));
    let mut last = String::new();
    for attempt in 1..=retries.attempts.max(1) {
        if attempt > 1 {
            tokio::time::sleep(pause(&retries, attempt)).await;
        }
        let request = hyper::Request::post(uri.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::USER_AGENT, "agenthost")
            .body(Full::new(body.clone()))
            .map_err(|error| format!("bad request: {error}"))?;
        let exchange = async {
            let response = match transport {
                Transport::Tls(client) => client.request(request).await,
                Transport::Plain(client) => client.request(request).await,
            }
            .map_err(|error| format!("request failed: {error}"))?;
            let status = response.status();
            // The answer's body is read (and dropped) so the connection can be reused.
            let _ = http_body_util::Limited::new(response.into_body(), 64 * 1024)
                .collect()
                .await;
            Ok::<_, String>(status)
        };
        match tokio::time::timeout(retries.timeout, exchange).await {
            Ok(Ok(status)) if status.is_success() => return Ok(()),
            Ok(Ok(status)) => last = format!("answered {status}"),
            Ok(Err(error)) => last = error,
            Err(_) => last = format!("no answer within {:?}", retries.timeout),
        }
        tracing::debug!(url = %uri, attempt, "notification webhook attempt failed: {last}");
    }
    Err(format!(
        "{last} (after {} attempts)",
        retries.attempts.max(1)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double() {
        let retries = Retries::default();
        assert_eq!(pause(&retries, 2), Duration::from_secs(1));
        assert_eq!(pause(&retries, 3), Duration::from_secs(2));
        assert_eq!(pause(&retries, 4), Duration::from_secs(4));
    }
}

//! [`WebhookReceiver`]: a loopback HTTP endpoint that records what is POSTed to it, for tests of
//! anything that calls a webhook.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

/// Records each request's body (as JSON) and answers with the next of its statuses, then 200.
/// Binds 127.0.0.1 only; serves on a task of the runtime it was started on until dropped.
#[derive(Debug)]
pub struct WebhookReceiver {
    url: String,
    state: Arc<Mutex<Received>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Debug, Default)]
struct Received {
    bodies: Vec<Value>,
    statuses: std::collections::VecDeque<u16>,
}

impl WebhookReceiver {
    /// Starts a receiver that answers its first requests with `statuses` (then 200).
    pub async fn start(statuses: Vec<u16>) -> io::Result<Self> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let state = Arc::new(Mutex::new(Received {
            bodies: Vec::new(),
            statuses: statuses.into(),
        }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = service_fn(move |request| receive(request, Arc::clone(&shared)));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self { url, state, task })
    }

    /// Where to POST.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bodies received so far, in order (a body that is not JSON is a JSON string).
    pub fn bodies(&self) -> Vec<Value> {
        lock(&self.state).bodies.clone()
    }
}

impl Drop for WebhookReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(state: &Mutex<Received>) -> std::sync::MutexGuard<'_, Received> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

async fn receive(
    request: Request<Incoming>,
    state: Arc<Mutex<Received>>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let body = request.into_body().collect().await?.to_bytes();
    let text = String::from_utf8_lossy(&body);
    let value = serde_json::from_str(text.trim()).unwrap_or_else(|_| Value::from(text.as_ref()));
    let status = {
        let mut state = lock(&state);
        state.bodies.push(value);
        state.statuses.pop_front().unwrap_or(200)
    };
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    Ok(response)
}

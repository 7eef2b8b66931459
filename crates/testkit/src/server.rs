//! The HTTP side: the accept loop, one hyper HTTP/1.1 connection per client (keep-alive,
//! chunked request bodies), routing on the path suffix, and the paced SSE body.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName, HeaderValue, SERVER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio::time::Sleep;

use crate::pyjson::{self, Json, obj};
use crate::record::{self, Recorder, RequestKind, RequestRecord};
use crate::reply::Reply;
use crate::script;
use crate::{MockModelConfig, anthropic, chat, responses};

/// What every connection of one mock shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: MockModelConfig,
    pub(crate) recorder: Recorder,
}

/// Accepts until `stop` fires (or its sender is dropped), then closes the listener and ends
/// every connection before returning.
pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    connections.spawn(serve_connection(stream, Arc::clone(&shared)));
                }
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(%error, "mock model: accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    // SSE events are small writes that must leave at once.
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |request| handle(request, Arc::clone(&shared)));
    let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    if let Err(error) = connection.await {
        tracing::debug!(%error, "mock model: connection ended with an error");
    }
}

type ResponseBody = Either<Full<Bytes>, SseBody>;

async fn handle(
    request: Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<ResponseBody>, Infallible> {
    let ts_ms = script::now_ms();
    let (parts, body) = request.into_parts();
    if parts.uri.path() == "/__mock_ready" {
        return Ok(response(Reply::ok(obj! { "ok": true }), Duration::ZERO));
    }
    let raw = if matches!(parts.method, Method::POST | Method::PUT | Method::PATCH) {
        match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) => {
                tracing::debug!(%error, "mock model: cannot read the request body");
                Bytes::new()
            }
        }
    } else {
        Bytes::new()
    };
    let mut record = RequestRecord {
        seq: 0,
        ts_ms,
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts
            .uri
            .query()
            .filter(|q| !q.is_empty())
            .map(str::to_owned),
        headers: record::selected_headers(&parts.headers),
        kind: RequestKind::Unknown,
        decision: String::new(),
        stream: false,
        summary: Value::Null,
        sse_events: 0,
    };
    let reply = answer(&parts.method, &raw, &shared.config, &mut record);
    record.sse_events = reply.sse_events();
    tracing::debug!(
        method = %record.method,
        path = %record.path,
        decision = %record.decision,
        "mock model: answered"
    );
    shared.recorder.record(record);
    Ok(response(reply, shared.config.event_delay))
}

/// The three model APIs.
#[derive(Debug, Clone, Copy)]
enum ModelApi {
    Messages,
    Responses,
    Chat,
}

impl ModelApi {
    fn of(path: &str) -> Option<ModelApi> {
        if path.ends_with("/messages") {
            Some(ModelApi::Messages)
        } else if path.ends_with("/responses") {
            Some(ModelApi::Responses)
        } else if path.ends_with("/chat/completions") {
            Some(ModelApi::Chat)
        } else {
            None
        }
    }

    fn kind(self) -> RequestKind {
        match self {
            ModelApi::Messages => RequestKind::AnthropicMessages,
            ModelApi::Responses => RequestKind::OpenAiResponses,
            ModelApi::Chat => RequestKind::OpenAiChat,
        }
    }

    fn summary(self, body: &Json) -> Value {
        match self {
            ModelApi::Messages => anthropic::summary(body),
            ModelApi::Responses => responses::summary(body),
            ModelApi::Chat => chat::summary(body),
        }
    }

    fn answer(self, body: &Json, config: &MockModelConfig) -> (String, Reply) {
        match self {
            ModelApi::Messages => anthropic::answer(body, config),
            ModelApi::Responses => responses::answer(body, config),
            ModelApi::Chat => chat::answer(body, config),
        }
    }

    fn error(self, status: u16, message: &str) -> Reply {
        match self {
            ModelApi::Messages => anthropic::error(status, message),
            ModelApi::Responses | ModelApi::Chat => responses::error(status, message),
        }
    }
}

/// Routes on the method and the path suffix, fills the record's verdict, and answers.
fn answer(
    method: &Method,
    raw: &[u8],
    config: &MockModelConfig,
    record: &mut RequestRecord,
) -> Reply {
    let path = record.path.clone();
    if method == Method::POST
        && let Some(api) = ModelApi::of(&path)
    {
        return model_call(api, raw, config, record);
    }
    let (kind, decision, reply) =
        if method == Method::POST && path.ends_with("/messages/count_tokens") {
            let reply = Reply::ok(obj! { "input_tokens": 100i64 });
            (RequestKind::AnthropicCountTokens, "count_tokens", reply)
        } else if method == Method::GET && path.trim_end_matches('/').ends_with("/models") {
            (RequestKind::Models, "models", Reply::ok(model_list()))
        } else if method == Method::HEAD || (method == Method::GET && path == "/") {
            (RequestKind::Probe, "probe", Reply::ok(obj! { "ok": true }))
        } else {
            if let Ok(body) = parse_object(raw) {
                let mut keys: Vec<&str> = body.keys().collect();
                keys.sort_unstable();
                record.summary = json!({ "body_keys": keys });
            }
            let message = format!("mockllm: no route for {method} {path}");
            let body = obj! { "error": obj! { "type": "not_found_error", "message": message } };
            (
                RequestKind::Unknown,
                "http_404",
                Reply::Json { status: 404, body },
            )
        };
    record.kind = kind;
    record.decision = decision.to_owned();
    reply
}

fn model_call(
    api: ModelApi,
    raw: &[u8],
    config: &MockModelConfig,
    record: &mut RequestRecord,
) -> Reply {
    let body = match parse_object(raw) {
        Ok(body) => body,
        Err(problem) => {
            record.kind = api.kind();
            record.decision = "invalid_json".to_owned();
            record.summary = json!({
                "raw_body": script::short_text(&String::from_utf8_lossy(raw), 400),
                "error": problem,
            });
            let message = format!("mockllm: the request body is not a JSON object: {problem}");
            return api.error(400, &message);
        }
    };
    record.stream = script::truthy(body.get("stream"));
    record.summary = api.summary(&body);
    if let Some(status) = config.fail_status {
        record.kind = RequestKind::ScriptedError;
        record.decision = format!("http_{status}");
        return api.error(status, &config.fail_message);
    }
    record.kind = api.kind();
    let (decision, reply) = api.answer(&body, config);
    record.decision = decision;
    reply
}

/// The body as a JSON object, or why it is not one.
fn parse_object(raw: &[u8]) -> Result<Json, String> {
    if raw.is_empty() {
        return Err("the body is empty".to_owned());
    }
    match pyjson::parse(raw) {
        Ok(body) if body.is_object() => Ok(body),
        Ok(other) => Err(format!("expected a JSON object, got {}", json_type(&other))),
        Err(error) => Err(error.to_string()),
    }
}

fn json_type(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Int(_) | Json::Number(_) => "a number",
        Json::Str(_) => "a string",
        Json::Arr(_) => "an array",
        Json::Obj(_) => "an object",
    }
}

fn model_list() -> Json {
    let model = obj! {
        "id": "mock-model",
        "object": "model",
        "created": 0i64,
        "owned_by": "mock",
        "type": "model",
        "display_name": "Mock Model",
    };
    obj! {
        "object": "list",
        "data": vec![model],
        "models": Vec::new(),
        "has_more": false,
        "first_id": "mock-model",
        "last_id": "mock-model",
    }
}

fn response(reply: Reply, event_delay: Duration) -> Response<ResponseBody> {
    let (status, content_type, body) = match reply {
        Reply::Json { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let body = Either::Left(Full::new(Bytes::from(body.dumps())));
            (status, "application/json", body)
        }
        Reply::Sse(frames) => {
            let body = Either::Right(SseBody::new(frames, event_delay));
            (StatusCode::OK, "text/event-stream; charset=utf-8", body)
        }
    };
    let is_sse = matches!(body, Either::Right(_));
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(SERVER, HeaderValue::from_static("mockllm/1.0"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if is_sse {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        for name in ["request-id", "x-request-id"] {
            if let Ok(value) = HeaderValue::from_str(&script::new_id("req")) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
    }
    response
}

/// SSE frames sent one per HTTP chunk, with `delay` after each one (before the next frame or
/// the end of the stream), like the reference's sleep after every event.
pub(crate) struct SseBody {
    frames: VecDeque<Bytes>,
    delay: Duration,
    pause: Option<Pin<Box<Sleep>>>,
}

impl SseBody {
    fn new(frames: Vec<Bytes>, delay: Duration) -> SseBody {
        SseBody {
            frames: frames.into(),
            delay,
            pause: None,
        }
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(pause) = self.pause.as_mut() {
            ready!(pause.as_mut().poll(cx));
            self.pause = None;
        }
        let Some(frame) = self.frames.pop_front() else {
            return Poll::Ready(None);
        };
        if !self.delay.is_zero() {
            self.pause = Some(Box::pin(tokio::time::sleep(self.delay)));
        }
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }
}

//! The three loops of a live connection — reading frames, writing the outbound queues, working
//! through requests — and the socket helpers they share (close, revocation, shutdown).

use super::*;

/// Awaits a task until `deadline`, then aborts it. `None` if it did not finish by itself.
pub(super) async fn join_by<T: Send + 'static>(
    task: &mut tokio::task::JoinHandle<T>,
    deadline: Instant,
) -> Option<T> {
    match tokio::time::timeout_at(deadline, &mut *task).await {
        Ok(outcome) => outcome.ok(),
        Err(_) => {
            task.abort();
            // Wait for the abort so the task's half of the socket is dropped now.
            let _ = (&mut *task).await;
            None
        }
    }
}

/// Half-closes the socket (the server closes TCP first, RFC 6455 §7.1.1). With `unread` input
/// left behind (a refused oversized message), also discards input until the client closes too
/// (or `deadline`): closing a socket with unread input sends a reset, which can destroy the
/// error response and close frame before the client has read them.
pub(super) async fn close_socket<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    unread: bool,
    deadline: Instant,
) {
    let closed = async {
        stream.shutdown().await?;
        if unread {
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
        }
        Ok::<(), std::io::Error>(())
    };
    let _ = tokio::time::timeout_at(deadline, closed).await;
}

/// Resolves once `grant` is no longer granted (its token was revoked or its scope changed).
pub(super) async fn revoked(
    changes: &mut watch::Receiver<u64>,
    credentials: &Credentials,
    grant: &Grant,
) {
    loop {
        if !credentials.still_granted(grant) {
            return;
        }
        if changes.changed().await.is_err() {
            // The credentials are gone with the server: nothing more to watch.
            std::future::pending::<()>().await;
        }
    }
}

pub(super) async fn close_requested(close: &mut watch::Receiver<Option<CloseRequest>>) {
    // An error means every handle is gone: closed as well.
    let _ = close.wait_for(Option::is_some).await;
}

/// Resolves only for a close that must not wait for queued frames (a lagging client): a close
/// that drains lets the batch in flight finish, or frames already taken off the queue (such as
/// the `-32005` answer sent just before its close) would be lost.
pub(super) async fn abort_requested(close: &mut watch::Receiver<Option<CloseRequest>>) {
    let _ = close
        .wait_for(|request| request.as_ref().is_some_and(|r| !r.drain))
        .await;
}

pub(super) async fn shutdown_requested(shutdown: &mut watch::Receiver<bool>) {
    // An error means the server was dropped: shut down as well.
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Largest WebSocket frame the host writes: a longer message goes out as continuation frames
/// of this size. It keeps each connection's write buffer small (the writer keeps the capacity
/// it once needed) and stays under the 16 MiB frame limit common clients enforce.
pub(crate) const MAX_WRITE_FRAME: usize = 1024 * 1024;

/// A queued frame as the WebSocket frames of one text message, sharing the frame's memory (no
/// copy of a large answer): one frame, or fragments of [`MAX_WRITE_FRAME`] bytes.
pub(super) fn text_messages(frame: &Arc<str>) -> Vec<Message> {
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    let shared = tokio_tungstenite::tungstenite::Bytes::from_owner(SharedFrame(frame.clone()));
    if shared.len() <= MAX_WRITE_FRAME {
        return vec![match Utf8Bytes::try_from(shared) {
            Ok(text) => Message::Text(text),
            // Cannot happen (the frame is a `str`); a copy is still correct.
            Err(_) => Message::Text(Utf8Bytes::from(&**frame)),
        }];
    }
    let mut messages = Vec::with_capacity(shared.len().div_ceil(MAX_WRITE_FRAME));
    let mut start = 0;
    while start < shared.len() {
        let end = (start + MAX_WRITE_FRAME).min(shared.len());
        let opcode = if start == 0 {
            OpCode::Data(Data::Text)
        } else {
            OpCode::Data(Data::Continue)
        };
        messages.push(Message::Frame(Frame::message(
            shared.slice(start..end),
            opcode,
            end == shared.len(),
        )));
        start = end;
    }
    messages
}

/// An `Arc<str>` frame as the owner of a `Bytes`.
pub(super) struct SharedFrame(Arc<str>);

impl AsRef<[u8]> for SharedFrame {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

pub(super) async fn read_loop<S>(
    mut stream: WsStream<S>,
    conn: Connection,
    inbound: mpsc::Sender<Incoming>,
    handler: Arc<dyn ProtocolHandler>,
    max_frame_bytes: usize,
) -> (WsStream<S>, bool)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    while let Some(message) = stream.next().await {
        match message {
            Ok(Message::Text(text)) => match rpc::decode(text.as_str()) {
                Ok(Incoming::Request { id, method, .. }) if method == "ping" => {
                    conn.send_priority(reply_frame(id, &Value::Null));
                }
                Ok(Incoming::Response { id, outcome }) => handler.response(&conn, id, outcome),
                Ok(incoming) => {
                    // Nothing new is taken on once the connection is closing.
                    if conn.is_closed() {
                        continue;
                    }
                    if inbound.send(incoming).await.is_err() {
                        break;
                    }
                }
                Err(undecodable) => {
                    let DecodeError { id, error } = *undecodable;
                    tracing::debug!(conn = %conn.id(), code = error.code, "undecodable frame");
                    conn.send_priority(rpc::error_frame(&id, &error));
                }
            },
            Ok(Message::Binary(_)) => conn.send_priority(rpc::error_frame(
                &Value::Null,
                &RpcError::invalid_request(
                    "binary frames are not supported: send each JSON-RPC message as one text frame",
                ),
            )),
            Ok(Message::Close(_)) => break,
            // tungstenite answers pings itself; nothing else is a message.
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {}
            Err(WsError::Capacity(error)) => {
                tracing::warn!(conn = %conn.id(), %error, "refused an oversized message");
                conn.send_priority(rpc::error_frame(
                    &Value::Null,
                    &RpcError::invalid_request(format!(
                        "message too large: the limit is {max_frame_bytes} bytes"
                    )),
                ));
                conn.close_with(
                    CLOSE_TOO_BIG,
                    &format!("message too large (limit {max_frame_bytes} bytes)"),
                    true,
                );
                // The rest of that message is still on its way.
                return (stream, true);
            }
            Err(WsError::Utf8(error)) => {
                tracing::debug!(conn = %conn.id(), %error, "a text frame was not UTF-8");
                conn.close_with(
                    CLOSE_INVALID_PAYLOAD,
                    "a text frame was not valid UTF-8",
                    true,
                );
                return (stream, true);
            }
            Err(error) => {
                tracing::debug!(conn = %conn.id(), %error, "read failed");
                break;
            }
        }
    }
    (stream, false)
}

pub(super) async fn write_loop<S>(mut sink: WsSink<S>, queues: Queues) -> WsSink<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Queues {
        mut outbound,
        mut priority,
        mut outbound_open,
        mut close,
        spellings,
    } = queues;
    let messages = |frame: &Arc<str>| text_messages(&spellings.to_client(frame));
    let mut open = *outbound_open.borrow();
    loop {
        let first = tokio::select! {
            biased;
            () = close_requested(&mut close) => break,
            Some(queued) = priority.recv() => queued,
            changed = outbound_open.changed(), if !open => {
                // An error (sender gone) cannot happen while the connection lives; stay closed.
                open = changed.is_ok() && *outbound_open.borrow_and_update();
                continue;
            }
            Some(queued) = outbound.recv(), if open => queued,
        };
        // The frames count as queued until written: they are dropped after the flush.
        let mut batch = vec![first];
        let written = async {
            for message in messages(&batch[0].frame) {
                sink.feed(message).await?;
            }
            for _ in 1..MAX_WRITE_BATCH {
                let next = match priority.try_recv() {
                    Ok(queued) => queued,
                    Err(_) if open => match outbound.try_recv() {
                        Ok(queued) => queued,
                        Err(_) => break,
                    },
                    Err(_) => break,
                };
                for message in messages(&next.frame) {
                    sink.feed(message).await?;
                }
                batch.push(next);
            }
            sink.flush().await
        };
        let failed = tokio::select! {
            biased;
            () = abort_requested(&mut close) => false,
            result = written => match result {
                Ok(()) => continue,
                Err(error) => {
                    tracing::debug!(%error, "write failed");
                    true
                }
            },
        };
        if failed {
            return sink;
        }
        break;
    }

    let request = close.borrow().clone().unwrap_or(CloseRequest {
        code: CLOSE_NORMAL,
        reason: String::new(),
        drain: false,
    });
    let closed = async {
        if request.drain {
            while let Ok(queued) = priority.try_recv() {
                for message in messages(&queued.frame) {
                    sink.feed(message).await?;
                }
            }
            while let Ok(queued) = outbound.try_recv() {
                for message in messages(&queued.frame) {
                    sink.feed(message).await?;
                }
            }
        }
        sink.feed(Message::Close(Some(CloseFrame {
            code: request.code.into(),
            reason: Utf8Bytes::from(request.reason.as_str()),
        })))
        .await
    };
    if let Err(error) = closed.await {
        tracing::debug!(%error, "could not queue the close frame");
    }
    // Also flushes tungstenite's automatic answer to a close frame of the client's.
    if let Err(error) = sink.flush().await {
        tracing::debug!(%error, "could not flush the close frame");
    }
    sink
}

/// What the worker does after handling a request.
pub(super) enum Reply {
    Send(Arc<str>),
    /// `initialize`/`reconnect` succeeded: send ahead of the outbound queue, then open it.
    SendAndOpen(Arc<str>),
    /// Send, then close gracefully (`-32005`).
    SendAndClose(Arc<str>, u16, &'static str),
}

pub(super) async fn work_loop(
    mut inbound: mpsc::Receiver<Incoming>,
    conn: Connection,
    handler: Arc<dyn ProtocolHandler>,
) {
    while let Some(incoming) = inbound.recv().await {
        match incoming {
            Incoming::Request {
                id,
                method,
                mut params,
            } => {
                if method != "ping"
                    && let Some(params) = params.as_mut()
                {
                    handler.to_host_spelling(&conn, params);
                }
                let reply = handle_request(&conn, &*handler, id, method, params).await;
                // Before initialization the outbound queue is held: answer on the priority one.
                let ready = conn.is_ready();
                match reply {
                    Reply::Send(frame) if ready => {
                        let _ = conn.send_frame(frame);
                    }
                    Reply::Send(frame) => conn.send_priority(frame),
                    Reply::SendAndOpen(frame) => {
                        conn.send_priority(frame);
                        conn.open_outbound();
                    }
                    Reply::SendAndClose(frame, code, reason) => {
                        conn.send_priority(frame);
                        conn.close_with(code, reason, true);
                    }
                }
                // What the handler held until its answer was queued (a read permit) goes now.
                drop(conn.take_reply_guard());
            }
            Incoming::Notification { method, mut params } => {
                if let Some(params) = params.as_mut() {
                    handler.to_host_spelling(&conn, params);
                }
                if conn.is_ready() {
                    handler.notification(conn.clone(), method, params).await;
                } else {
                    tracing::debug!(conn = %conn.id(), method, "dropped a notification sent before initialize");
                }
            }
            // The reader routes responses itself.
            Incoming::Response { .. } => {}
        }
    }
}

/// The success response to `id`, or `-32603` for it when `result` cannot be serialized.
pub(super) fn reply_frame<T: Serialize + ?Sized>(id: u64, result: &T) -> Arc<str> {
    rpc::success_frame(id, result).unwrap_or_else(|error| {
        tracing::error!(id, %error, "a response could not be serialized");
        let error = RpcError::internal("the response could not be serialized");
        rpc::error_frame(&Value::from(id), &error)
    })
}

pub(super) async fn handle_request(
    conn: &Connection,
    handler: &dyn ProtocolHandler,
    id: u64,
    method: String,
    params: Option<Value>,
) -> Reply {
    let error = |error: RpcError| Reply::Send(rpc::error_frame(&Value::from(id), &error));
    match method.as_str() {
        "initialize" | "reconnect" if conn.is_ready() => error(RpcError::invalid_request(
            "already initialized: initialize or reconnect may be sent once per connection",
        )),
        "initialize" => initialize(conn, handler, id, params).await,
        "reconnect" => reconnect(conn, handler, id, params).await,
        "ping" => Reply::Send(reply_frame(id, &Value::Null)),
        _ if !conn.is_ready() => error(RpcError::invalid_request(format!(
            "initialize first: `{method}` was sent before `initialize` (or `reconnect`)"
        ))),
        _ => match handler.request(conn.clone(), method, params).await {
            Ok(result) => Reply::Send(reply_frame(id, &result)),
            Err(rpc_error) => error(rpc_error),
        },
    }
}

pub(super) async fn initialize(
    conn: &Connection,
    handler: &dyn ProtocolHandler,
    id: u64,
    params: Option<Value>,
) -> Reply {
    let error = |error: RpcError| Reply::Send(rpc::error_frame(&Value::from(id), &error));
    let params: InitializeParams = match parse_params("initialize", params) {
        Ok(params) => params,
        Err(rpc_error) => return error(rpc_error),
    };
    if let Err(rpc_error) = check_client_id(&params.client_id) {
        return error(rpc_error);
    }
    let version = match version::negotiate(&params.protocol_versions) {
        Ok(Some(version)) => version,
        Ok(None) => {
            tracing::warn!(
                conn = %conn.id(),
                client_id = params.client_id,
                offered = ?clipped(&params.protocol_versions),
                supported = ?SUPPORTED_VERSIONS,
                "initialize: no common protocol version; closing"
            );
            let frame = rpc::error_frame(
                &Value::from(id),
                &RpcError::unsupported_protocol_version(&SUPPORTED_VERSIONS),
            );
            return Reply::SendAndClose(frame, CLOSE_NORMAL, "unsupported protocol version");
        }
        Err(malformed) => {
            tracing::info!(conn = %conn.id(), offered = ?clipped(&params.protocol_versions), "initialize: malformed protocol version");
            return error(RpcError::invalid_params(malformed.0));
        }
    };
    tracing::info!(
        conn = %conn.id(),
        client_id = params.client_id,
        version = version.as_str(),
        "initialize"
    );
    conn.set_peer(Some(version.clone()), Some(params.client_id.clone()));
    match handler
        .initialize(conn.clone(), params, version.clone())
        .await
    {
        Ok(mut result) => {
            result.protocol_version = version.as_str().to_owned();
            Reply::SendAndOpen(reply_frame(id, &result))
        }
        Err(rpc_error) => {
            conn.set_peer(None, None);
            error(rpc_error)
        }
    }
}

/// What a log line quotes of client-supplied strings: the first eight, each cut short.
pub(super) fn clipped(values: &[String]) -> Vec<String> {
    values
        .iter()
        .take(8)
        .map(|value| agenthost_protocol::uri::snippet(value))
        .collect()
}

pub(super) async fn reconnect(
    conn: &Connection,
    handler: &dyn ProtocolHandler,
    id: u64,
    params: Option<Value>,
) -> Reply {
    let error = |error: RpcError| Reply::Send(rpc::error_frame(&Value::from(id), &error));
    let params: ReconnectParams = match parse_params("reconnect", params) {
        Ok(params) => params,
        Err(rpc_error) => return error(rpc_error),
    };
    if let Err(rpc_error) = check_client_id(&params.client_id) {
        return error(rpc_error);
    }
    tracing::info!(conn = %conn.id(), client_id = params.client_id, "reconnect");
    conn.set_peer(None, Some(params.client_id.clone()));
    match handler.reconnect(conn.clone(), params).await {
        Ok(Reconnected {
            result,
            protocol_version,
        }) => {
            let client_id = conn.client_id();
            conn.set_peer(Some(protocol_version), client_id);
            Reply::SendAndOpen(reply_frame(id, &result))
        }
        Err(rpc_error) => {
            conn.set_peer(None, None);
            error(rpc_error)
        }
    }
}

/// `clientId` must be 1 to [`MAX_CLIENT_ID_BYTES`] bytes.
pub(super) fn check_client_id(client_id: &str) -> Result<(), RpcError> {
    if client_id.is_empty() || client_id.len() > MAX_CLIENT_ID_BYTES {
        return Err(RpcError::invalid_params(format!(
            "clientId must be 1 to {MAX_CLIENT_ID_BYTES} bytes, got {}",
            client_id.len()
        )));
    }
    Ok(())
}

/// Decodes the params of `initialize`/`reconnect`, filling a missing `channel` with the root
/// URI (VS Code sends `reconnect` without one).
pub(super) fn parse_params<T: DeserializeOwned>(
    method: &str,
    params: Option<Value>,
) -> Result<T, RpcError> {
    let Some(Value::Object(mut object)) = params else {
        return Err(RpcError::invalid_params(format!(
            "{method}: params must be an object"
        )));
    };
    agenthost_protocol::dialect::fill_missing_channel(&mut object);
    serde_json::from_value(Value::Object(object))
        .map_err(|error| RpcError::invalid_params(format!("{method}: invalid params: {error}")))
}

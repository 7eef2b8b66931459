//! The editor's side of the wire: JSON-RPC 2.0, one JSON object per line.
//!
//! [`Peer`] writes every message through one queue (so a turn's updates and its answer leave in
//! the order they were made), numbers the requests the agent sends the editor (permission
//! questions) and routes the editor's answers back to them. Withdrawing a request sends
//! `$/cancel_request` and forgets it, so a late answer is ignored.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// A JSON-RPC error, as the editor receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC code.
    pub code: i64,
    /// What a person can act on.
    pub message: String,
    /// Details (ACP puts an error type here).
    pub data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32700: the line is not JSON.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(-32700, message)
    }

    /// -32600: JSON, but not a JSON-RPC message.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(-32600, message)
    }

    /// -32601: a method this agent does not offer.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            -32601,
            format!("agent-host does not offer the method `{method}`"),
        )
    }

    /// -32602: the parameters are wrong.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, message)
    }

    /// -32603: the host could not do it.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(-32603, message)
    }

    /// -32002: ACP's "resource not found" (an unknown session).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(-32002, message)
    }

    /// With `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    fn to_json(&self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// The answer to a request the agent sent.
pub type Answer = Result<Value, RpcError>;

/// The editor, as the agent writes to it.
#[derive(Debug)]
pub struct Peer {
    out: mpsc::UnboundedSender<String>,
    next_id: AtomicI64,
    pending: Mutex<HashMap<i64, oneshot::Sender<Answer>>>,
}

impl Peer {
    /// A peer writing its lines into `out`.
    pub fn new(out: mpsc::UnboundedSender<String>) -> Self {
        Self {
            out,
            next_id: AtomicI64::new(0),
            pending: Mutex::new(HashMap::new()),
        }
    }

    fn send(&self, message: &Value) {
        // The writer ends only when the editor's side is closed; nothing is left to tell then.
        let _ = self.out.send(message.to_string());
    }

    /// A notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// The result of the editor's request `id`.
    pub fn respond(&self, id: &Value, result: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
    }

    /// The error answer to the editor's request `id`.
    pub fn respond_error(&self, id: &Value, error: &RpcError) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() }));
    }

    /// Sends a request; its id, and the answer when it comes (never, when withdrawn).
    pub fn request(&self, method: &str, params: Value) -> (i64, oneshot::Receiver<Answer>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending_map().insert(id, tx);
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        (id, rx)
    }

    /// Withdraws request `id`: `$/cancel_request` to the editor; its answer, should one still
    /// come, is dropped.
    pub fn withdraw(&self, id: i64) {
        if self.pending_map().remove(&id).is_some() {
            self.notify("$/cancel_request", json!({ "requestId": id }));
        }
    }

    /// Routes an answer from the editor (a message with an `id` and no `method`).
    pub fn answer(&self, message: &Value) {
        let Some(id) = message.get("id").and_then(Value::as_i64) else {
            tracing::debug!(%message, "an answer to no request of ours: ignored");
            return;
        };
        let Some(tx) = self.pending_map().remove(&id) else {
            tracing::debug!(id, "an answer to a withdrawn or unknown request: ignored");
            return;
        };
        let answer = match message.get("error") {
            Some(error) => Err(RpcError {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the editor answered with an error")
                    .to_owned(),
                data: error.get("data").cloned(),
            }),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = tx.send(answer);
    }

    /// Fails every request still waiting (the editor went away).
    pub fn fail_pending(&self) {
        self.pending_map().clear();
    }

    fn pending_map(&self) -> std::sync::MutexGuard<'_, HashMap<i64, oneshot::Sender<Answer>>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One message from the editor, sorted.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A request: answer it.
    Request {
        /// Its id.
        id: Value,
        /// The method.
        method: String,
        /// The parameters (`null` when absent).
        params: Value,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// The parameters (`null` when absent).
        params: Value,
    },
    /// An answer to one of the agent's requests.
    Answer(Value),
    /// Not a message: answer `error` under `id` (`null` when unknown).
    Invalid {
        /// The id to answer under.
        id: Value,
        /// Why.
        error: RpcError,
    },
}

/// Sorts one line.
pub fn parse_line(line: &str) -> Incoming {
    let invalid = |id: Option<Value>, error| Incoming::Invalid {
        id: id.unwrap_or(Value::Null),
        error,
    };
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(e) => {
            return invalid(
                None,
                RpcError::parse_error(format!("the line is not JSON: {e}")),
            );
        }
    };
    let Some(object) = message.as_object() else {
        return invalid(
            None,
            RpcError::invalid_request("a JSON-RPC message is a JSON object"),
        );
    };
    let id = object.get("id").cloned();
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => Incoming::Request {
            id,
            method: method.clone(),
            params,
        },
        (Some(Value::String(method)), None) => Incoming::Notification {
            method: method.clone(),
            params,
        },
        (Some(_), id) => invalid(id, RpcError::invalid_request("`method` must be a string")),
        (None, Some(_)) => Incoming::Answer(message),
        (None, None) => invalid(
            None,
            RpcError::invalid_request("neither a request, a notification nor an answer"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_sorted_and_bad_ones_get_an_error_to_answer() {
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"a":1}}"#),
            Incoming::Request {
                id: json!(3),
                method: "initialize".into(),
                params: json!({ "a": 1 })
            }
        );
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","method":"session/cancel"}"#),
            Incoming::Notification {
                method: "session/cancel".into(),
                params: Value::Null
            }
        );
        assert!(matches!(
            parse_line(r#"{"jsonrpc":"2.0","id":0,"result":null}"#),
            Incoming::Answer(_)
        ));
        let invalid = |line| match parse_line(line) {
            Incoming::Invalid { id, error } => (id, error.code),
            other => panic!("{other:?}"),
        };
        assert_eq!(invalid("{nope"), (Value::Null, -32700));
        assert_eq!(invalid(r#"{"id":"x","method":7}"#), (json!("x"), -32600));
        assert_eq!(invalid("[1]"), (Value::Null, -32600));
        assert_eq!(invalid("{}"), (Value::Null, -32600));
    }

    #[tokio::test]
    async fn a_withdrawn_request_says_so_once_and_its_late_answer_is_dropped() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let peer = Peer::new(tx);
        let (id, answer) = peer.request("session/request_permission", json!({}));
        let sent: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(sent["id"], json!(id));
        peer.withdraw(id);
        peer.withdraw(id);
        let cancel: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(
            cancel,
            json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": id } })
        );
        assert!(rx.try_recv().is_err(), "one $/cancel_request");
        peer.answer(&json!({ "jsonrpc": "2.0", "id": id, "result": { "outcome": {} } }));
        assert!(answer.await.is_err(), "the late answer reaches nobody");

        let (id, answer) = peer.request("elicitation/create", json!({}));
        peer.answer(
            &json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "no" } }),
        );
        assert_eq!(answer.await.unwrap().unwrap_err().code, -32601);
    }
}

//! The editor's side of the wire: JSON-RPC 2.0, one JSON object per line.
//!
//! [`Peer`] writes every message through one queue (so a turn's updates and its answer leave in
//! the order they were made), numbers the requests the agent sends the editor (permission
//! questions) and routes the editor's answers back to them. Withdrawing a request sends
//! `$/cancel_request` and forgets it, so a late answer is ignored.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

pub use agenthost_provider_acp::wire::RpcError;
use agenthost_provider_acp::wire::{self, Message};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// The answer to a request the agent sent.
pub type Answer = Result<Value, RpcError>;

/// The editor, as the agent writes to it.
#[derive(Debug)]
pub struct Peer {
    out: mpsc::UnboundedSender<String>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Answer>>>,
}

impl Peer {
    /// A peer writing its lines into `out`.
    pub fn new(out: mpsc::UnboundedSender<String>) -> Self {
        Self {
            out,
            next_id: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
        }
    }

    fn send(&self, line: String) {
        // The writer ends only when the editor's side is closed; nothing is left to tell then.
        let _ = self.out.send(line);
    }

    /// A notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(wire::notification(method, &params));
    }

    /// The result of the editor's request `id`.
    pub fn respond(&self, id: &Value, result: Value) {
        self.send(wire::result(id, &result));
    }

    /// The error answer to the editor's request `id`.
    pub fn respond_error(&self, id: &Value, error: &RpcError) {
        self.send(wire::error_reply_with(
            id,
            error.code,
            &error.message,
            error.data.as_ref(),
        ));
    }

    /// Sends a request; its id, and the answer when it comes (never, when withdrawn).
    pub fn request(&self, method: &str, params: Value) -> (u64, oneshot::Receiver<Answer>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending_map().insert(id, tx);
        self.send(wire::request(id, method, &params));
        (id, rx)
    }

    /// Withdraws request `id`: `$/cancel_request` to the editor; its answer, should one still
    /// come, is dropped.
    pub fn withdraw(&self, id: u64) {
        if self.pending_map().remove(&id).is_some() {
            self.notify("$/cancel_request", json!({ "requestId": id }));
        }
    }

    /// Routes the editor's answer to request `id`.
    pub fn answer(&self, id: &Value, result: Answer) {
        let Some(tx) = id.as_u64().and_then(|id| self.pending_map().remove(&id)) else {
            tracing::debug!(%id, "an answer to a withdrawn or unknown request: ignored");
            return;
        };
        let _ = tx.send(result);
    }

    /// Fails every request still waiting (the editor went away).
    pub fn fail_pending(&self) {
        self.pending_map().clear();
    }

    fn pending_map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Answer>>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One line from the editor: a message, or the error to answer it with (under id `null`: a
/// line that is not a JSON-RPC message has no id one can trust).
pub fn parse_line(line: &str) -> Result<Message, RpcError> {
    wire::parse_message(line).map_err(|error| RpcError::parse_error(error.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_sorted_and_bad_ones_get_a_parse_error() {
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"a":1}}"#),
            Ok(Message::Request {
                id: json!(3),
                method: "initialize".into(),
                params: json!({ "a": 1 })
            })
        );
        assert!(matches!(
            parse_line(r#"{"jsonrpc":"2.0","method":"session/cancel"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            parse_line(r#"{"jsonrpc":"2.0","id":0,"result":null}"#),
            Ok(Message::Response { .. })
        ));
        for bad in ["{nope", r#"{"id":"x","method":7}"#, "[1]", "{}"] {
            assert_eq!(parse_line(bad).unwrap_err().code, -32700, "{bad}");
        }
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
        peer.answer(&json!(id), Ok(json!({ "outcome": {} })));
        assert!(answer.await.is_err(), "the late answer reaches nobody");

        let (id, answer) = peer.request("elicitation/create", json!({}));
        peer.answer(&json!(id), Err(RpcError::method_not_found("no")));
        assert_eq!(answer.await.unwrap().unwrap_err().code, -32601);
    }

    #[test]
    fn an_error_answer_carries_its_data() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let peer = Peer::new(tx);
        peer.respond_error(
            &json!(7),
            &RpcError::internal("boom").with_data(json!({ "errorType": "x" })),
        );
        let sent: Value = serde_json::from_str(&rx.try_recv().unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({ "jsonrpc": "2.0", "id": 7,
                    "error": { "code": -32603, "message": "boom", "data": { "errorType": "x" } } })
        );
    }
}

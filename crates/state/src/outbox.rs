//! Subscribers and the frames they receive.

use std::sync::Arc;

use agenthost_protocol::ActionEnvelope;
use serde_json::Value;

/// Identifies one subscriber (in practice one client connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriberId(pub u64);

/// Where a subscriber's frames go. `push` must never block: return `false` when the subscriber
/// cannot take more (its queue is full or it is gone) and the state manager drops it.
pub trait Outbox: Send + Sync {
    /// Offers one serialized JSON-RPC frame.
    fn push(&self, frame: Arc<str>) -> bool;
}

/// The `action` notification frame for an envelope, serialized once for every subscriber.
pub fn action_frame(envelope: &ActionEnvelope) -> Arc<str> {
    notification_frame("action", envelope)
}

/// A JSON-RPC notification frame `{"jsonrpc":"2.0","method":…,"params":…}`.
pub fn notification_frame(method: &str, params: &impl serde::Serialize) -> Arc<str> {
    #[derive(serde::Serialize)]
    struct Notification<'a, P> {
        jsonrpc: &'static str,
        method: &'a str,
        params: &'a P,
    }
    let frame = Notification {
        jsonrpc: "2.0",
        method,
        params,
    };
    match serde_json::to_string(&frame) {
        Ok(text) => Arc::from(text),
        // Serializing wire types cannot fail (string keys only); keep a well-formed frame anyway.
        Err(error) => Arc::from(
            serde_json::json!({ "jsonrpc": "2.0", "method": method, "params": Value::Null, "error": error.to_string() })
                .to_string(),
        ),
    }
}

//! Subscribers and the frames they receive.

use std::sync::Arc;

pub use agenthost_protocol::jsonrpc::{action_frame, notification_frame};

/// Identifies one subscriber (in practice one client connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriberId(pub u64);

/// Where a subscriber's frames go. `push` must never block: return `false` when the subscriber
/// cannot take more (its queue is full or it is gone) and the state manager drops it.
pub trait Outbox: Send + Sync {
    /// Offers one serialized JSON-RPC frame.
    fn push(&self, frame: Arc<str>) -> bool;
}

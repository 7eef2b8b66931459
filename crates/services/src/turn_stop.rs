//! [`TurnStopper`]: a contribution ends a running turn with an error and its agent stops, the
//! way a cancel stops it — for a limit the host enforces (a budget, a tool-call cap).
//!
//! The contributions that stop turns are created before the host whose orchestrator stops them,
//! so it is a queue, as the client-action intake is: [`turn_stop_queue`] makes both ends, the
//! contributions get the [`TurnStopQueue`] from the registry and the host serves the
//! [`TurnStopRequests`] once it exists. A request for a turn no longer running changes nothing.

use agenthost_protocol::ChatUri;
use agenthost_protocol::ahp_types::state::ErrorInfo;
use tokio::sync::mpsc;

/// Stops running turns.
pub trait TurnStopper: Send + Sync {
    /// Ends `chat`'s running turn `turn_id` with `error` (`chat/error`) and stops its agent as a
    /// cancel does. Fire-and-forget: never waits, never fails; a turn no longer running is left
    /// alone.
    fn stop_turn(&self, chat: &ChatUri, turn_id: &str, error: ErrorInfo);
}

/// One request, for the host to carry out.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnStopRequest {
    /// The chat.
    pub chat: ChatUri,
    /// Its running turn.
    pub turn_id: String,
    /// What the turn ends with.
    pub error: ErrorInfo,
}

/// The host's end of the queue.
pub type TurnStopRequests = mpsc::UnboundedReceiver<TurnStopRequest>;

/// The contributions' end of the queue.
#[derive(Debug, Clone)]
pub struct TurnStopQueue {
    requests: mpsc::UnboundedSender<TurnStopRequest>,
}

/// Both ends of a turn-stop queue.
pub fn turn_stop_queue() -> (TurnStopQueue, TurnStopRequests) {
    let (requests, receiver) = mpsc::unbounded_channel();
    (TurnStopQueue { requests }, receiver)
}

impl TurnStopper for TurnStopQueue {
    fn stop_turn(&self, chat: &ChatUri, turn_id: &str, error: ErrorInfo) {
        let request = TurnStopRequest {
            chat: chat.clone(),
            turn_id: turn_id.to_owned(),
            error,
        };
        if self.requests.send(request).is_err() {
            tracing::debug!(chat = %chat, turn_id, "no host to stop the turn: it is shutting down");
        }
    }
}

#[cfg(test)]
mod tests {
    use agenthost_protocol::error_info::error_info;

    use super::*;

    #[test]
    fn requests_reach_the_host_in_order() {
        let (queue, mut requests) = turn_stop_queue();
        let chat: ChatUri = "ahp-chat:/c1".parse().unwrap();
        queue.stop_turn(&chat, "t1", error_info("budget", "spent"));
        queue.stop_turn(&chat, "t2", error_info("budget", "spent"));
        assert_eq!(requests.try_recv().unwrap().turn_id, "t1");
        assert_eq!(requests.try_recv().unwrap().turn_id, "t2");
        drop(requests);
        // With the host gone, a request is dropped without a panic.
        queue.stop_turn(&chat, "t3", error_info("budget", "spent"));
    }
}

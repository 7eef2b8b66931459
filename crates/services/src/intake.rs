//! [`ClientActionIntake`]: actions the host submits *as a client*, through the client-action
//! path.
//!
//! A server action ([`ServerDispatch`](crate::ServerDispatch)) is reduced and broadcast, but
//! the host's client-action side effects never see it: a `chat/toolCallConfirmed` dispatched
//! that way would change state without the agent ever hearing the answer. An answer the host
//! gives on behalf of a user (the unattended policy's) goes through this intake instead: it is
//! validated like a client's, and once accepted the host forwards it to the agent and runs
//! `onDidApplyClientAction`, attributed to the given client id.
//!
//! The contributions that submit are created before the host whose client-action path answers
//! them (the host owns them), so the intake is a queue: [`client_action_queue`] makes both ends
//! at once, the contributions get the [`ClientActionQueue`] from the registry and the host serves
//! the [`ClientActionRequests`] once it exists. A submission made earlier waits in the queue.

use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use agenthost_protocol::StateAction;

use crate::DispatchError;

/// Submits actions through the host's client-action path.
pub trait ClientActionIntake: Send + Sync {
    /// Submits `action` on `channel` as client `client_id`; resolves to its `serverSeq` once
    /// accepted, or why it was refused (rejected by validation, unknown channel, host gone).
    /// Submissions are applied in the order they were made.
    fn submit(
        &self,
        client_id: &str,
        channel: &str,
        action: StateAction,
    ) -> BoxFuture<'static, Result<u64, DispatchError>>;
}

/// One submitted action, for the host to apply and [`answer`](Self::answer).
#[derive(Debug)]
pub struct ClientActionRequest {
    /// The client the action is submitted as.
    pub client_id: String,
    /// The channel.
    pub channel: String,
    /// The action.
    pub action: StateAction,
    reply: oneshot::Sender<Result<u64, DispatchError>>,
}

impl ClientActionRequest {
    /// Tells the submitter the outcome (nothing happens when it stopped waiting).
    pub fn answer(self, outcome: Result<u64, DispatchError>) {
        let _ = self.reply.send(outcome);
    }
}

/// The host's end of the queue: the submissions, in order.
pub type ClientActionRequests = mpsc::UnboundedReceiver<ClientActionRequest>;

/// The contributions' end of the queue: a [`ClientActionIntake`] that hands every submission to
/// whoever serves the [`ClientActionRequests`].
#[derive(Debug, Clone)]
pub struct ClientActionQueue {
    requests: mpsc::UnboundedSender<ClientActionRequest>,
}

/// Both ends of a client-action queue.
pub fn client_action_queue() -> (ClientActionQueue, ClientActionRequests) {
    let (requests, receiver) = mpsc::unbounded_channel();
    (ClientActionQueue { requests }, receiver)
}

impl ClientActionIntake for ClientActionQueue {
    fn submit(
        &self,
        client_id: &str,
        channel: &str,
        action: StateAction,
    ) -> BoxFuture<'static, Result<u64, DispatchError>> {
        let gone = DispatchError {
            channel: channel.to_owned(),
            reason: "the host is shutting down".to_owned(),
        };
        let (reply, outcome) = oneshot::channel();
        let request = ClientActionRequest {
            client_id: client_id.to_owned(),
            channel: channel.to_owned(),
            action,
            reply,
        };
        let sent = self.requests.send(request).is_ok();
        Box::pin(async move {
            if !sent {
                return Err(gone);
            }
            outcome.await.unwrap_or(Err(gone))
        })
    }
}

#[cfg(test)]
mod tests {
    use agenthost_protocol::actions::ChatTurnCancelledAction;

    use super::*;

    fn action() -> StateAction {
        StateAction::ChatTurnCancelled(ChatTurnCancelledAction {
            turn_id: "t1".to_owned(),
            duration: 0,
            meta: None,
        })
    }

    #[tokio::test]
    async fn submissions_wait_for_the_host_in_order_and_get_its_answer() {
        let (queue, mut requests) = client_action_queue();
        let first = queue.submit("c", "ahp-chat:/a", action());
        let second = queue.submit("c", "ahp-chat:/b", action());
        let host = tokio::spawn(async move {
            let mut seen = Vec::new();
            for seq in 1..=2 {
                let Some(request) = requests.recv().await else {
                    break;
                };
                seen.push(request.channel.clone());
                if seq == 1 {
                    request.answer(Ok(7));
                } else {
                    let channel = request.channel.clone();
                    request.answer(Err(DispatchError {
                        channel,
                        reason: "rejected".to_owned(),
                    }));
                }
            }
            seen
        });
        assert_eq!(first.await, Ok(7));
        assert_eq!(second.await.unwrap_err().reason, "rejected");
        assert_eq!(host.await.unwrap(), ["ahp-chat:/a", "ahp-chat:/b"]);
    }

    #[tokio::test]
    async fn without_a_host_a_submission_is_refused_not_left_waiting() {
        let (queue, requests) = client_action_queue();
        let pending = queue.submit("c", "ahp-chat:/a", action());
        drop(requests);
        let error = pending.await.unwrap_err();
        assert!(error.reason.contains("shutting down"), "{error:?}");
        let error = queue
            .submit("c", "ahp-chat:/a", action())
            .await
            .unwrap_err();
        assert!(error.reason.contains("shutting down"), "{error:?}");
    }
}

//! [`ClientActionIntake`]: actions the host submits *as a client*, through the client-action
//! path.
//!
//! A server action ([`ServerDispatch`](crate::ServerDispatch)) is reduced and broadcast, but
//! the host's client-action side effects never see it: a `chat/toolCallConfirmed` dispatched
//! that way would change state without the agent ever hearing the answer. An answer the host
//! gives on behalf of a user (the unattended policy's) goes through this intake instead: it is
//! validated like a client's, and once accepted the host forwards it to the agent and runs
//! `onDidApplyClientAction`, attributed to the given client id.

use std::sync::{Arc, OnceLock};

use agenthost_protocol::StateAction;

use crate::DispatchError;

/// Submits actions through the host's client-action path.
pub trait ClientActionIntake: Send + Sync {
    /// Submits `action` on `channel` as client `client_id`; returns its `serverSeq` once
    /// accepted, or why it was refused (rejected by validation, unknown channel, host not
    /// ready).
    fn submit(
        &self,
        client_id: &str,
        channel: &str,
        action: StateAction,
    ) -> Result<u64, DispatchError>;
}

/// A [`ClientActionIntake`] bound late: the host registers it with the services before the
/// session service and the orchestrator that implement the intake exist, and
/// [`bind`](Self::bind)s them once they do. Until then every submission is refused.
#[derive(Default)]
pub struct LateClientActionIntake {
    target: OnceLock<Arc<dyn ClientActionIntake>>,
}

impl std::fmt::Debug for LateClientActionIntake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LateClientActionIntake")
            .field("bound", &self.target.get().is_some())
            .finish()
    }
}

impl LateClientActionIntake {
    /// Not bound yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds the real intake; returns `false` (and keeps the first) when already bound.
    pub fn bind(&self, target: Arc<dyn ClientActionIntake>) -> bool {
        self.target.set(target).is_ok()
    }

    /// Whether [`bind`](Self::bind) was called.
    pub fn is_bound(&self) -> bool {
        self.target.get().is_some()
    }
}

impl ClientActionIntake for LateClientActionIntake {
    fn submit(
        &self,
        client_id: &str,
        channel: &str,
        action: StateAction,
    ) -> Result<u64, DispatchError> {
        match self.target.get() {
            Some(target) => target.submit(client_id, channel, action),
            None => Err(DispatchError {
                channel: channel.to_owned(),
                reason: "the host's client-action intake is not ready yet".to_owned(),
            }),
        }
    }
}

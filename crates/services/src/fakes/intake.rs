//! Recording fakes: `ClientActionIntake`, `SubscriptionTracker`.

use super::*;

/// A call to [`FakeClientActionIntake`].
#[derive(Debug, Clone, PartialEq)]
pub struct IntakeCall {
    /// The client the action was submitted as.
    pub client_id: String,
    /// The channel.
    pub channel: String,
    /// The action.
    pub action: StateAction,
}

/// What [`FakeClientActionIntake`] answers: sequence numbers from 1, or a refusal.
#[derive(Debug, Clone, Default)]
pub struct IntakeAnswers {
    /// Refuse every submission with this reason.
    pub refuse: Option<String>,
    /// The last number handed out.
    pub last_seq: u64,
}

fake!(
    /// Recording [`ClientActionIntake`] (nothing is reduced, nothing reaches an agent).
    FakeClientActionIntake, IntakeCall, IntakeAnswers
);

impl ClientActionIntake for FakeClientActionIntake {
    fn submit(
        &self,
        client_id: &str,
        channel: &str,
        action: StateAction,
    ) -> BoxFuture<'static, Result<u64, DispatchError>> {
        self.record(IntakeCall {
            client_id: client_id.into(),
            channel: channel.into(),
            action,
        });
        let mut answers = self.answers();
        let outcome = match &answers.refuse {
            Some(reason) => Err(DispatchError {
                channel: channel.into(),
                reason: reason.clone(),
            }),
            None => {
                answers.last_seq += 1;
                Ok(answers.last_seq)
            }
        };
        Box::pin(std::future::ready(outcome))
    }
}

/// A call to [`FakeSubscriptionTracker`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum SubscriptionCall {
    Subscribed {
        connection: String,
        channel: String,
    },
    Unsubscribed {
        connection: String,
        channel: String,
    },
    Disconnected(String),
    Identified {
        connection: String,
        client_id: String,
    },
    Subscribers(String),
    Listen,
    Unlisten(ListenerId),
}

/// What [`FakeSubscriptionTracker`] answers from: the live set it was told about.
#[derive(Debug, Clone, Default)]
pub struct SubscriptionAnswers {
    /// The subscriptions and listeners (a test may also report to it directly).
    pub live: Arc<LiveSubscriptions>,
}

fake!(
    /// Recording [`SubscriptionTracker`] that otherwise behaves like [`LiveSubscriptions`]
    /// (queries answer from what was reported, listeners are told): a test drives it as the
    /// server would.
    FakeSubscriptionTracker, SubscriptionCall, SubscriptionAnswers
);

impl FakeSubscriptionTracker {
    /// The live set, taken out of the answers so that no lock is held while listeners run.
    fn live(&self) -> Arc<LiveSubscriptions> {
        Arc::clone(&self.answers().live)
    }
}

impl SubscriptionTracker for FakeSubscriptionTracker {
    fn subscribed(&self, connection: &str, channel: &str) {
        self.record(SubscriptionCall::Subscribed {
            connection: connection.into(),
            channel: channel.into(),
        });
        self.live().subscribed(connection, channel);
    }
    fn unsubscribed(&self, connection: &str, channel: &str) {
        self.record(SubscriptionCall::Unsubscribed {
            connection: connection.into(),
            channel: channel.into(),
        });
        self.live().unsubscribed(connection, channel);
    }
    fn disconnected(&self, connection: &str) {
        self.record(SubscriptionCall::Disconnected(connection.into()));
        self.live().disconnected(connection);
    }
    fn identified(&self, connection: &str, client_id: &str) {
        self.record(SubscriptionCall::Identified {
            connection: connection.into(),
            client_id: client_id.into(),
        });
        self.live().identified(connection, client_id);
    }
    fn client_of(&self, connection: &str) -> Option<String> {
        self.live().client_of(connection)
    }
    fn subscribers(&self, channel: &str) -> Vec<String> {
        self.record(SubscriptionCall::Subscribers(channel.into()));
        self.live().subscribers(channel)
    }
    fn listen(&self, listener: Arc<dyn SubscriptionListener>) -> ListenerId {
        self.record(SubscriptionCall::Listen);
        self.live().listen(listener)
    }
    fn unlisten(&self, id: ListenerId) {
        self.record(SubscriptionCall::Unlisten(id));
        self.live().unlisten(id);
    }
}

/// [`crate::AuditLog`] keeping every entry in memory.
#[derive(Debug, Default)]
pub struct FakeAuditLog {
    /// The entries recorded, in order.
    pub entries: Mutex<Vec<agenthost_protocol::AuditRecord>>,
}

impl crate::AuditLog for FakeAuditLog {
    fn record(&self, entry: agenthost_protocol::AuditRecord) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(entry);
    }
}

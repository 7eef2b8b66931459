//! Request/response correlation: [`Waiters`] and [`await_answer`].

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use agenthost_provider_api::{ProviderError, stderr_suffix};
use tokio::sync::oneshot;

use crate::AgentProcess;
use crate::driver::STDERR_SETTLE;

/// The answer a waiter receives.
pub type Answer<T> = Result<T, ProviderError>;

/// The requests of a conversation awaiting the agent's answer, by request id (`K`), each
/// answered once through a oneshot channel; [`Waiters::next_id`] numbers requests. A cancel
/// waiting for the agent to wind its turn down waits here too
/// ([`expect_wind_down`](Waiters::expect_wind_down)): the end of the process releases it.
#[derive(Debug)]
pub struct Waiters<K, T> {
    next: u64,
    pending: HashMap<K, oneshot::Sender<Answer<T>>>,
    wind_down: Option<oneshot::Sender<()>>,
}

impl<K, T> Default for Waiters<K, T> {
    fn default() -> Self {
        Self {
            next: 0,
            pending: HashMap::new(),
            wind_down: None,
        }
    }
}

/// What [`Waiters::take_all`] takes out, for [`fail_waiters`].
#[derive(Debug)]
pub struct Taken<T> {
    waiters: Vec<oneshot::Sender<Answer<T>>>,
    wind_down: Option<oneshot::Sender<()>>,
}

impl<T> Taken<T> {
    /// Whether nobody waits.
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty() && self.wind_down.is_none()
    }
}

impl<K: Eq + Hash, T> Waiters<K, T> {
    /// The next request number (1, 2, …).
    pub fn next_id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Registers a waiter for request `key`; its answer arrives on the returned receiver.
    pub fn register(&mut self, key: K) -> oneshot::Receiver<Answer<T>> {
        let (tx, rx) = oneshot::channel();
        self.pending.insert(key, tx);
        rx
    }

    /// Answers request `key`; `false` when nobody waits for it (an unknown or late answer).
    pub fn resolve(&mut self, key: &K, answer: Answer<T>) -> bool {
        match self.pending.remove(key) {
            Some(waiter) => {
                // The requester may have stopped waiting (a timeout): nothing to do then.
                let _ = waiter.send(answer);
                true
            }
            None => false,
        }
    }

    /// Stops waiting for request `key` (its write failed, or it timed out).
    pub fn forget(&mut self, key: &K) {
        self.pending.remove(key);
    }

    /// Takes every waiter out, to fail them with [`fail_waiters`] outside the
    /// conversation's lock.
    pub fn take_all(&mut self) -> Taken<T> {
        Taken {
            waiters: self.pending.drain().map(|(_, waiter)| waiter).collect(),
            wind_down: self.wind_down.take(),
        }
    }

    /// Starts waiting for the agent to wind its turn down (after an interrupt): the receiver
    /// resolves at [`wound_down`](Self::wound_down) or when the process ends.
    pub fn expect_wind_down(&mut self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.wind_down = Some(tx);
        rx
    }

    /// The agent wound its turn down: releases whoever waits for it.
    pub fn wound_down(&mut self) {
        if let Some(wind_down) = self.wind_down.take() {
            let _ = wind_down.send(());
        }
    }

    /// Nobody waits for the wind-down any more.
    pub fn stop_expecting_wind_down(&mut self) {
        self.wind_down = None;
    }
}

/// Fails what [`Waiters::take_all`] took: the process ended with `status`. A wind-down is
/// released; the stderr tail is read once, only when a request waits.
pub async fn fail_waiters<T>(taken: Taken<T>, status: &str, process: &AgentProcess) {
    let Taken { waiters, wind_down } = taken;
    if let Some(wind_down) = wind_down {
        let _ = wind_down.send(());
    }
    if waiters.is_empty() {
        return;
    }
    let stderr_tail = process.stderr_tail(STDERR_SETTLE).await;
    for waiter in waiters {
        let _ = waiter.send(Err(ProviderError::Exited {
            status: status.to_owned(),
            stderr_tail: stderr_tail.clone(),
        }));
    }
}

/// Waits for the answer to a request written to `process` (`written` is the write's outcome)
/// for at most `timeout`. A failed write is the agent's input closing; a process that ends
/// first is an exit with the stderr tail; a timeout names `agent` and `method`. `forget` drops
/// the waiter when nobody will wait for it any more (a failed write or a timeout).
pub async fn await_answer<T>(
    process: &AgentProcess,
    written: std::io::Result<()>,
    answer: oneshot::Receiver<Answer<T>>,
    timeout: Duration,
    (agent, method): (&str, &str),
    forget: impl FnOnce(),
) -> Answer<T> {
    if let Err(error) = written {
        forget();
        let stderr_tail = process.stderr_tail(STDERR_SETTLE).await;
        return Err(ProviderError::input_closed(error, stderr_tail));
    }
    match tokio::time::timeout(timeout, answer).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => Err(ProviderError::Exited {
            status: "it stopped before answering".into(),
            stderr_tail: process.stderr_tail(STDERR_SETTLE).await,
        }),
        Err(_) => {
            forget();
            Err(ProviderError::Protocol {
                message: format!(
                    "{agent} did not answer `{method}` within {} ms{}",
                    timeout.as_millis(),
                    stderr_suffix(&process.stderr_tail(Duration::ZERO).await)
                ),
            })
        }
    }
}

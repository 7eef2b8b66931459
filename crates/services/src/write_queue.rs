//! [`WriteQueue`]: a contribution's store writes, run in order off the dispatching thread.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio::sync::Notify;

/// One store write, with its failure already logged by the future itself.
pub type Write = BoxFuture<'static, ()>;

/// Writes queued by a synchronous hook (`onDidDispatchAction`, …) and run one after another, in
/// the order they were queued, by a task on the current tokio runtime. A task is spawned only
/// when none is draining the queue, so a burst of writes costs one task and two writes of the
/// same row can never land out of order.
pub struct WriteQueue {
    contribution: &'static str,
    state: Mutex<QueueState>,
    idle: Notify,
}

#[derive(Default)]
struct QueueState {
    pending: VecDeque<Write>,
    draining: bool,
}

impl WriteQueue {
    /// An empty queue; `contribution` names it in the log.
    pub fn new(contribution: &'static str) -> Self {
        Self {
            contribution,
            state: Mutex::new(QueueState::default()),
            idle: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // Every mutation completes before the guard drops: a poisoned queue is still valid.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `write`; starts a draining task unless one is running. Outside a tokio runtime
    /// nothing can run it: the write is dropped with a warning.
    pub fn push(self: &Arc<Self>, write: Write) {
        let mut state = self.lock();
        state.pending.push_back(write);
        if state.draining {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let dropped = state.pending.len();
            state.pending.clear();
            tracing::warn!(
                contribution = self.contribution,
                dropped,
                "no tokio runtime to persist on: write dropped"
            );
            return;
        };
        state.draining = true;
        drop(state);
        runtime.spawn(Arc::clone(self).drain());
    }

    async fn drain(self: Arc<Self>) {
        let mut guard = DrainGuard {
            queue: Arc::clone(&self),
            finished: false,
        };
        loop {
            let next = {
                let mut state = self.lock();
                match state.pending.pop_front() {
                    Some(next) => next,
                    None => {
                        state.draining = false;
                        guard.finished = true;
                        self.idle.notify_waiters();
                        return;
                    }
                }
            };
            if AssertUnwindSafe(next).catch_unwind().await.is_err() {
                tracing::error!(
                    contribution = self.contribution,
                    "a store write panicked; the next one runs"
                );
            }
        }
    }

    /// Waits until every write queued before the call has finished.
    pub async fn flush(&self) {
        loop {
            let notified = self.idle.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if !self.lock().draining {
                return;
            }
            notified.await;
        }
    }
}

/// Frees the queue when the draining task is dropped before it finished (its runtime shut
/// down), so later writes start a task again instead of waiting behind a dead one.
struct DrainGuard {
    queue: Arc<WriteQueue>,
    finished: bool,
}

impl Drop for DrainGuard {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut state = self.queue.lock();
        let dropped = state.pending.len();
        state.pending.clear();
        state.draining = false;
        drop(state);
        self.queue.idle.notify_waiters();
        tracing::warn!(
            contribution = self.queue.contribution,
            dropped,
            "the write task stopped before the queue was empty: writes dropped"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_run_in_order_and_flush_waits_for_them() {
        let queue = Arc::new(WriteQueue::new("test"));
        let log = Arc::new(Mutex::new(Vec::new()));
        for n in 0..5 {
            let log = Arc::clone(&log);
            queue.push(Box::pin(async move {
                tokio::task::yield_now().await;
                log.lock().unwrap_or_else(|e| e.into_inner()).push(n);
            }));
        }
        queue.flush().await;
        assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn a_panicking_write_does_not_stop_the_next_one() {
        let queue = Arc::new(WriteQueue::new("test"));
        let ran = Arc::new(Mutex::new(false));
        queue.push(Box::pin(async { panic!("a broken write") }));
        let flag = Arc::clone(&ran);
        queue.push(Box::pin(async move {
            *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        }));
        queue.flush().await;
        assert!(*ran.lock().unwrap());
    }

    #[test]
    fn without_a_runtime_a_write_is_dropped_not_a_panic() {
        let queue = Arc::new(WriteQueue::new("test"));
        queue.push(Box::pin(async {}));
        assert!(!queue.lock().draining);
        assert!(queue.lock().pending.is_empty());
    }
}

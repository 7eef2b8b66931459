//! [`WriteQueue`]: a contribution's store writes, run in order off the dispatching thread.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio::sync::Notify;

/// One store write, with its failure already logged by the future itself.
pub type Write = BoxFuture<'static, ()>;

/// Writes accepted by any queue of the process and not finished yet.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

fn all_idle() -> &'static Notify {
    static ALL_IDLE: OnceLock<Notify> = OnceLock::new();
    ALL_IDLE.get_or_init(Notify::new)
}

/// Counts one accepted write as in flight until it is dropped — run, cleared, or dropped with a
/// task that died with its runtime (so a dead write never holds [`flush_pending_writes`]).
#[derive(Debug)]
struct InFlight;

impl InFlight {
    fn new() -> Self {
        IN_FLIGHT.fetch_add(1, Ordering::AcqRel);
        Self
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if IN_FLIGHT.fetch_sub(1, Ordering::AcqRel) == 1 {
            all_idle().notify_waiters();
        }
    }
}

/// Work a contribution runs off the dispatching thread that ends in a store write of its own (a
/// lookup, then its record): counted like a queued write until dropped, so
/// [`flush_pending_writes`] — a host's graceful shutdown — waits for it too instead of the
/// runtime cancelling the write half-way. Hold it for the work's whole length.
#[derive(Debug)]
pub struct PendingWork(#[allow(dead_code)] InFlight);

impl PendingWork {
    /// Counts work from now until the guard is dropped.
    pub fn begin() -> Self {
        Self(InFlight::new())
    }
}

/// Waits until every write accepted by any [`WriteQueue`] of the process has finished — what a
/// host calls on a graceful shutdown, after its agents stopped, so no queued store write (a
/// draft, a flag, a title) is lost with the process. A write whose task died with its runtime
/// counts as finished (it never will). Bound the wait with a timeout where a stuck store must
/// not hold the process.
pub async fn flush_pending_writes() {
    loop {
        let notified = all_idle().notified();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable();
        if IN_FLIGHT.load(Ordering::Acquire) == 0 {
            return;
        }
        notified.await;
    }
}

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
    pending: VecDeque<(Write, InFlight)>,
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
        state.pending.push_back((write, InFlight::new()));
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
            let (next, in_flight) = {
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
            let outcome = AssertUnwindSafe(next).catch_unwind().await;
            drop(in_flight);
            if outcome.is_err() {
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

    #[tokio::test]
    async fn flushing_every_queue_waits_for_writes_of_all_queues() {
        let (first, second) = (
            Arc::new(WriteQueue::new("first")),
            Arc::new(WriteQueue::new("second")),
        );
        let (release, gate) = tokio::sync::watch::channel(false);
        let done = Arc::new(AtomicUsize::new(0));
        for queue in [&first, &second] {
            let mut gate = gate.clone();
            let done = Arc::clone(&done);
            queue.push(Box::pin(async move {
                let _ = gate.wait_for(|open| *open).await;
                done.fetch_add(1, Ordering::SeqCst);
            }));
        }
        let flush = tokio::spawn(flush_pending_writes());
        tokio::task::yield_now().await;
        assert!(!flush.is_finished(), "two writes are still waiting");
        release.send_replace(true);
        flush.await.unwrap();
        assert_eq!(
            done.load(Ordering::SeqCst),
            2,
            "flushed only after both ran"
        );
    }

    #[tokio::test]
    async fn flushing_waits_for_pending_work_until_its_guard_is_dropped() {
        let pending = PendingWork::begin();
        let flush = tokio::spawn(flush_pending_writes());
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!flush.is_finished(), "the work still runs");
        drop(pending);
        flush.await.unwrap();
    }

    #[test]
    fn a_write_dropped_with_its_runtime_does_not_hold_the_flush() {
        let queue = Arc::new(WriteQueue::new("dying"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            // Never finishes: the runtime is dropped while the drain task awaits it.
            queue.push(Box::pin(std::future::pending()));
            queue.push(Box::pin(async {}));
            tokio::task::yield_now().await;
        });
        drop(runtime);
        let other = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let flushed = other.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), flush_pending_writes()).await
        });
        assert!(flushed.is_ok(), "the dead writes still count as in flight");
    }

    #[test]
    fn without_a_runtime_a_write_is_dropped_not_a_panic() {
        let queue = Arc::new(WriteQueue::new("test"));
        queue.push(Box::pin(async {}));
        assert!(!queue.lock().draining);
        assert!(queue.lock().pending.is_empty());
    }
}

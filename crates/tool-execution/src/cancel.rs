//! A minimal cancellation token: set once, observed synchronously or awaited.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Shared cancellation flag of one run. Cloning shares it; cancelling is idempotent and wakes
/// every task waiting in [`cancelled`](Self::cancelled).
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// A fresh, uncancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels; later calls do nothing.
    pub fn cancel(&self) {
        if !self.0.cancelled.swap(true, Ordering::SeqCst) {
            self.0.notify.notify_waiters();
        }
    }

    /// Whether the token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Completes once the token is cancelled (at once if it already is).
    pub async fn cancelled(&self) {
        loop {
            // Registered before the check: `notify_waiters` reaches a created `Notified` even
            // before it is first polled, so a cancel between the check and the await is seen.
            let notified = self.0.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
#[path = "cancel_tests.rs"]
mod tests;

//! [`every`]: a task that runs a step on an interval for as long as its owner lives.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Spawns a task on the current tokio runtime that calls `step` with `owner` every `period`
/// (first at once; a late tick is delayed, never bunched) until `owner` has been dropped — the
/// task holds it only while a step runs, so it never keeps its owner alive. `period` must not be
/// zero (tokio's interval panics on it).
pub fn every<T, F, Fut>(owner: Weak<T>, period: Duration, step: F)
where
    T: Send + Sync + 'static,
    F: Fn(Arc<T>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let Some(owner) = owner.upgrade() else {
                return;
            };
            step(owner).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::every;

    #[tokio::test(start_paused = true)]
    async fn steps_on_its_interval_and_stops_with_its_owner() {
        let owner = Arc::new(AtomicUsize::new(0));
        let steps = Arc::clone(&owner);
        every(
            Arc::downgrade(&owner),
            Duration::from_secs(10),
            |o| async move {
                o.fetch_add(1, Ordering::SeqCst);
            },
        );
        tokio::time::sleep(Duration::from_secs(25)).await;
        assert_eq!(steps.load(Ordering::SeqCst), 3, "at 0, 10 and 20 s");
        drop(owner);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(Arc::strong_count(&steps), 1, "the task let go of its owner");
    }
}

use super::*;

#[test]
fn cancel_is_idempotent_and_shared_by_clones() {
    let token = CancelToken::new();
    let clone = token.clone();
    assert!(!clone.is_cancelled());
    token.cancel();
    token.cancel();
    assert!(clone.is_cancelled());
}

#[tokio::test(start_paused = true)]
async fn waiters_wake_on_cancel_and_late_waiters_return_at_once() {
    let token = CancelToken::new();
    let waiter = tokio::spawn({
        let token = token.clone();
        async move { token.cancelled().await }
    });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    token.cancel();
    waiter.await.unwrap();
    token.cancelled().await;
}

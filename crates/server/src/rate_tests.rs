use std::time::Duration;

use super::*;

fn admitted(bucket: &mut TokenBucket, events: usize) -> usize {
    (0..events)
        .filter(|_| bucket.admit() == Admission::Admitted)
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_full_bucket_admits_the_burst_then_refuses() {
    let mut bucket = TokenBucket::new(10, 5);
    assert_eq!(admitted(&mut bucket, 5), 5);
    assert_eq!(bucket.admit(), Admission::FirstRefused);
    assert_eq!(bucket.admit(), Admission::Refused);
    assert_eq!(bucket.admit(), Admission::Refused);
}

#[tokio::test(start_paused = true)]
async fn tokens_come_back_at_the_rate_and_never_beyond_the_burst() {
    let mut bucket = TokenBucket::new(10, 5);
    assert_eq!(admitted(&mut bucket, 100), 5);
    // 10 per second: 300 ms give 3 tokens.
    tokio::time::advance(Duration::from_millis(300)).await;
    assert_eq!(admitted(&mut bucket, 100), 3);
    // A long pause refills only up to the burst.
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(admitted(&mut bucket, 100), 5);
    // After a refusal, an admitted event resets the "first refusal" marker.
    tokio::time::advance(Duration::from_millis(100)).await;
    assert_eq!(bucket.admit(), Admission::Admitted);
    assert_eq!(bucket.admit(), Admission::FirstRefused);
}

#[tokio::test(start_paused = true)]
async fn a_sustained_flood_is_held_to_the_rate() {
    let mut bucket = TokenBucket::new(50, 10);
    let mut total = 0;
    for _ in 0..100 {
        total += admitted(&mut bucket, 20);
        tokio::time::advance(Duration::from_millis(100)).await;
    }
    // 10 s at 50/s plus the initial burst of 10 (the last advance is not used).
    assert!((500..=510).contains(&total), "{total}");
}

#[tokio::test(start_paused = true)]
async fn rate_zero_admits_everything() {
    let mut bucket = TokenBucket::new(0, 1);
    assert_eq!(admitted(&mut bucket, 100_000), 100_000);
}

//! The per-connection token bucket behind [`ServerConfig::dispatch_rate`].
//!
//! [`ServerConfig::dispatch_rate`]: crate::ServerConfig::dispatch_rate

use tokio::time::Instant;

/// A token bucket: `burst` tokens at most, refilled at `rate` per second, one taken per admitted
/// event. `rate == 0` admits everything. Uses tokio's clock (paused in tests).
#[derive(Debug)]
pub(crate) struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    refilled: Instant,
    /// Whether the previous call was refused (to log the start of a flood once).
    limited: bool,
}

/// What [`TokenBucket::admit`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Within the budget.
    Admitted,
    /// Over the budget; the first refusal after an admitted event.
    FirstRefused,
    /// Over the budget, and the previous event was refused as well.
    Refused,
}

impl TokenBucket {
    /// A full bucket.
    pub(crate) fn new(rate: u32, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate: f64::from(rate),
            burst,
            tokens: burst,
            refilled: Instant::now(),
            limited: false,
        }
    }

    /// Takes a token if there is one.
    pub(crate) fn admit(&mut self) -> Admission {
        if self.rate == 0.0 {
            return Admission::Admitted;
        }
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.limited = false;
            Admission::Admitted
        } else if std::mem::replace(&mut self.limited, true) {
            Admission::Refused
        } else {
            Admission::FirstRefused
        }
    }
}

#[cfg(test)]
#[path = "rate_tests.rs"]
mod tests;

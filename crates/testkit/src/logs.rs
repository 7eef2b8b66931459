//! [`CapturedLogs`]: what `tracing` writes during a test, read back as text.

use std::sync::{Arc, Mutex};

/// What `tracing` writes, captured for a test to read back.
///
/// [`capture`](Self::capture) installs a plain-text (no ANSI) `fmt` subscriber at `debug` and
/// above as the current thread's default for as long as the returned guard lives; every clone
/// shares the same buffer, and [`text`](Self::text) returns what was written so far:
///
/// ```
/// use agenthost_testkit::CapturedLogs;
///
/// let logs = CapturedLogs::default();
/// let guard = logs.capture();
/// tracing::warn!("disk full");
/// drop(guard);
/// assert!(logs.text().contains("disk full"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl CapturedLogs {
    /// Captures this thread's events at `debug` and above until the guard is dropped.
    pub fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let logs = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || logs.clone())
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer()).into_owned()
    }
}

impl CapturedLogs {
    fn buffer(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl std::io::Write for CapturedLogs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_logs_collect_this_threads_events_at_debug_and_above_while_the_guard_lives() {
        let logs = CapturedLogs::default();
        tracing::warn!("before");
        let guard = logs.capture();
        tracing::trace!("too fine");
        tracing::debug!(key = "k", "kept at debug");
        tracing::warn!("disk full");
        std::thread::spawn(|| tracing::warn!("another thread"))
            .join()
            .unwrap();
        drop(guard);
        tracing::warn!("after");

        let text = logs.clone().text();
        assert!(
            text.contains("DEBUG") && text.contains("kept at debug"),
            "{text}"
        );
        assert!(text.contains("key=\"k\""), "{text}");
        assert!(
            text.contains("WARN") && text.contains("disk full"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'), "no ANSI escapes: {text}");
        for absent in ["before", "too fine", "another thread", "after"] {
            assert!(!text.contains(absent), "{absent}: {text}");
        }
    }
}

//! `agent-host` as a library: the host composition behind `agent-host serve` and the demo, so
//! tests and embedders run exactly what the binary runs.
//!
//! This is the only crate that reads flags, environment variables and files given on the command
//! line; everything below it is configured through plain structs.
//!
//! Every command fails with a [`CliError`], whose variant says what the person at the terminal
//! can do about it (a bad flag, the database, a file, the host, an agent, an interrupt).
#![deny(missing_docs)]

pub mod acp;
pub mod chat;
pub mod checkpoints;
pub mod demo;
pub mod discovery;
pub mod editor;
mod error;
pub mod host;
pub mod map;
pub mod mock_model;
pub mod run;
pub mod serve;
pub mod sessions;
pub mod term;
pub mod tokens;
pub mod unattended;

pub use error::CliError;

/// How long the process waits at exit for tasks still running after its own orderly stop.
pub const EXIT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// Stops `runtime`, waiting at most `deadline` for tasks still running. Everything the host
/// keeps has been flushed by its orderly stop before this; a task still blocked in the kernel (a
/// file-system call that never returns) must not keep the process from exiting.
pub fn stop_runtime(runtime: tokio::runtime::Runtime, deadline: std::time::Duration) {
    runtime.shutdown_timeout(deadline);
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_task_blocked_forever_does_not_keep_the_runtime_from_stopping() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .expect("runtime");
        // A blocking task that never returns: it waits on a channel nobody writes to (the sender
        // is kept alive below, so `recv` cannot fail either).
        let (never_tx, never_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel();
        runtime.spawn_blocking(move || {
            let _ = started_tx.send(());
            let _ = never_rx.recv();
        });
        started_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the blocking task started");
        let (stopped_tx, stopped_rx) = mpsc::channel();
        std::thread::spawn(move || {
            super::stop_runtime(runtime, Duration::from_millis(50));
            let _ = stopped_tx.send(());
        });
        let stopped = stopped_rx.recv_timeout(Duration::from_secs(10));
        drop(never_tx);
        assert!(
            stopped.is_ok(),
            "stopping the runtime waited for a task blocked forever"
        );
    }
}

//! [`ProcessSlot`]: a conversation's current process, by generation.

use std::sync::Arc;
use std::time::Duration;

use agenthost_provider_api::ProviderError;
use tokio::task::JoinHandle;

use crate::AgentProcess;
use crate::driver::STDERR_SETTLE;

/// A running process of a conversation: its generation, the handle, its reader task.
#[derive(Debug)]
pub struct Live<P> {
    /// Which process of the conversation this is (0, 1, … in start order).
    pub generation: u64,
    /// The process.
    pub process: Arc<P>,
    /// The task reading its output.
    pub reader: JoinHandle<()>,
}

/// The current process of a conversation, if one runs, and the generation the next one gets.
///
/// Output and exits are tagged with their process's generation, so a reader of a process that
/// was replaced or stopped cannot act on the current one.
#[derive(Debug)]
pub struct ProcessSlot<P> {
    live: Option<Live<P>>,
    next_generation: u64,
}

impl<P> Default for ProcessSlot<P> {
    fn default() -> Self {
        Self {
            live: None,
            next_generation: 0,
        }
    }
}

impl<P> ProcessSlot<P> {
    /// The current process and its generation.
    pub fn current(&self) -> Option<(u64, Arc<P>)> {
        self.live
            .as_ref()
            .map(|live| (live.generation, Arc::clone(&live.process)))
    }

    /// Whether `generation` is the current process.
    pub fn is_current(&self, generation: u64) -> bool {
        self.live
            .as_ref()
            .is_some_and(|live| live.generation == generation)
    }

    /// Makes `process` current under the next generation; `reader` is given that generation
    /// and returns the task reading its output. Returns the generation.
    pub fn install(&mut self, process: Arc<P>, reader: impl FnOnce(u64) -> JoinHandle<()>) -> u64 {
        let generation = self.next_generation;
        self.next_generation += 1;
        self.live = Some(Live {
            generation,
            process,
            reader: reader(generation),
        });
        generation
    }

    /// Takes the current process out, whatever its generation.
    pub fn take(&mut self) -> Option<Live<P>> {
        self.live.take()
    }

    /// Takes the current process out if it is `generation`.
    pub fn take_generation(&mut self, generation: u64) -> Option<Live<P>> {
        if self.is_current(generation) {
            self.live.take()
        } else {
            None
        }
    }
}

impl Live<AgentProcess> {
    /// Stops the process: its group is terminated (`SIGTERM`, `SIGKILL` after `grace`) and
    /// reaped, and its reader aborted unless `from_reader` (the reader itself stops it and must
    /// not abort itself). Returns the exit status.
    pub async fn stop(&self, grace: Duration, from_reader: bool) -> String {
        let status = self.process.terminate(grace).await;
        if !from_reader {
            self.reader.abort();
        }
        status
    }

    /// Reaps the process after its output ended (`read_error`: why, when reading failed):
    /// its exit status, and the error that fails the turn it was running (with the stderr
    /// tail).
    pub async fn exited(
        &self,
        grace: Duration,
        read_error: Option<String>,
    ) -> (String, ProviderError) {
        let mut status = self.process.reap(grace).await;
        if let Some(read_error) = read_error {
            status = format!("{status}; {read_error}");
        }
        let stderr_tail = self.process.stderr_tail(STDERR_SETTLE).await;
        let error = ProviderError::Exited {
            status: status.clone(),
            stderr_tail,
        };
        (status, error)
    }
}

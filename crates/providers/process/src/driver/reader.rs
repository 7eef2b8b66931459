//! The stdout reader task of an agent process.

use std::future::Future;
use std::sync::Weak;

use tokio::io::AsyncRead;
use tokio::task::JoinHandle;

use crate::LineReader;

/// Why a [`MessageSource`] could not give the next message.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Reading the stream failed (or a line was over its cap).
    #[error("reading its output failed: {0}")]
    Io(#[from] std::io::Error),
    /// The bytes read are not a message of the agent's framing.
    #[error("unreadable output framing: {0}")]
    Framing(String),
}

/// Where a reader takes an agent's messages from: a line per message, or a provider's framing.
pub trait MessageSource: Send + 'static {
    /// The next message; `Ok(None)` at the end of the stream.
    fn next_message(&mut self) -> impl Future<Output = Result<Option<String>, SourceError>> + Send;
}

impl<R: AsyncRead + Unpin + Send + 'static> MessageSource for LineReader<R> {
    async fn next_message(&mut self) -> Result<Option<String>, SourceError> {
        Ok(self.next_line().await?)
    }
}

/// What handles the messages of one process generation.
pub trait MessageHandler: Send + Sync + 'static {
    /// One message of process `generation`; `false` when reading must stop.
    fn handle_message(&self, generation: u64, message: &str) -> impl Future<Output = bool> + Send;

    /// The output of process `generation` ended: `reason` is `None` at the end of the stream,
    /// the read failure otherwise.
    fn process_ended(
        &self,
        generation: u64,
        reason: Option<String>,
    ) -> impl Future<Output = ()> + Send;

    /// The output of process `generation` is not the agent's framing. The default treats it
    /// as the end of the process.
    fn unreadable(&self, generation: u64, error: SourceError) -> impl Future<Output = ()> + Send {
        self.process_ended(generation, Some(error.to_string()))
    }
}

/// Spawns the reader of process `generation`: every message of `source` goes to `handler` in
/// order, until the stream ends, a read fails, the handler says stop, or the handler is gone
/// (the conversation was dropped).
pub fn spawn_reader<H: MessageHandler, S: MessageSource>(
    handler: Weak<H>,
    generation: u64,
    mut source: S,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let read = source.next_message().await;
            let Some(handler) = handler.upgrade() else {
                return;
            };
            match read {
                Ok(Some(message)) => {
                    if !handler.handle_message(generation, &message).await {
                        return;
                    }
                }
                Ok(None) => return handler.process_ended(generation, None).await,
                Err(error @ SourceError::Io(_)) => {
                    return handler
                        .process_ended(generation, Some(error.to_string()))
                        .await;
                }
                Err(error @ SourceError::Framing(_)) => {
                    return handler.unreadable(generation, error).await;
                }
            }
        }
    })
}

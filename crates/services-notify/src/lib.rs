//! The [`Notifier`] implementations the host's composition root picks from its flags:
//!
//! - [`CommandNotifier`] (`serve --notify-command PROGRAM --notify-arg ARG…`) runs the program
//!   without a shell, the notification as one line of JSON on its stdin, stdout discarded; a
//!   program that fails, or is still running after its timeout (killed), is logged at `warn`
//!   with its exit status and the end of its stderr;
//! - [`WebhookNotifier`] (`serve --notify-webhook URL`) POSTs the JSON to the URL
//!   (`http://` or `https://`, the platform's root certificates) with a timeout per attempt and
//!   bounded retries with a growing pause; an answer other than 2xx after the last attempt is
//!   logged at `warn`;
//! - [`Notifiers`] hands each notification to several.
//!
//! **Must never** block a turn or the dispatching thread: `notify` only queues. Each notifier
//! delivers in order from a bounded queue on one task of its own; when the queue is full (a
//! receiver that hangs), a notification is dropped with a `warn`. Nothing but the notification
//! is sent: no token, no environment.

use std::path::PathBuf;
use std::sync::Arc;

use agenthost_services::{Notification, Notifier};
use tokio::sync::mpsc;

mod command;
mod webhook;

pub use command::CommandNotifier;
pub use webhook::{Retries, WebhookError, WebhookNotifier};

/// Notifications waiting for one notifier's delivery task; more are dropped.
pub const QUEUE: usize = 64;

/// A delivery task fed by a bounded queue: what both notifiers share.
#[derive(Debug, Clone)]
struct Queue {
    sender: mpsc::Sender<Notification>,
    name: &'static str,
}

impl Queue {
    /// Starts `deliver` on a task of the current runtime, one notification at a time.
    fn start<F, Fut>(name: &'static str, deliver: F) -> Self
    where
        F: Fn(Notification) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let (sender, mut receiver) = mpsc::channel::<Notification>(QUEUE);
        tokio::spawn(async move {
            while let Some(notification) = receiver.recv().await {
                deliver(notification).await;
            }
        });
        Self { sender, name }
    }

    fn push(&self, notification: Notification) {
        if let Err(error) = self.sender.try_send(notification) {
            let why = match error {
                mpsc::error::TrySendError::Full(_) => "its queue is full",
                mpsc::error::TrySendError::Closed(_) => "it stopped",
            };
            tracing::warn!(notifier = self.name, "a notification was dropped: {why}");
        }
    }
}

/// Several notifiers at once.
#[derive(Default)]
pub struct Notifiers(Vec<Arc<dyn Notifier>>);

impl std::fmt::Debug for Notifiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifiers")
            .field("count", &self.0.len())
            .finish()
    }
}

impl Notifiers {
    /// Hands each notification to every one of `notifiers` (none: notifications go nowhere).
    pub fn new(notifiers: Vec<Arc<dyn Notifier>>) -> Self {
        Self(notifiers)
    }

    /// Whether there is no notifier.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Notifier for Notifiers {
    fn notify(&self, notification: Notification) {
        for notifier in &self.0 {
            notifier.notify(notification.clone());
        }
    }
}

/// What a notifier is configured with, as `serve`'s flags give it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifyConfig {
    /// `--notify-command`: the program.
    pub command: Option<PathBuf>,
    /// `--notify-arg`: its arguments.
    pub args: Vec<String>,
    /// `--notify-webhook`: the URL.
    pub webhook: Option<String>,
}

impl NotifyConfig {
    /// The notifiers it names, started on the current runtime; a webhook URL that is not
    /// `http://` or `https://` is refused.
    pub fn notifiers(&self) -> Result<Notifiers, WebhookError> {
        let mut notifiers: Vec<Arc<dyn Notifier>> = Vec::new();
        if let Some(program) = &self.command {
            notifiers.push(Arc::new(CommandNotifier::start(
                program.clone(),
                self.args.clone(),
                command::TIMEOUT,
            )));
        }
        if let Some(url) = &self.webhook {
            notifiers.push(Arc::new(WebhookNotifier::start(
                url,
                webhook::Retries::default(),
            )?));
        }
        Ok(Notifiers::new(notifiers))
    }
}

/// The serialized notification, one line.
fn json_line(notification: &Notification) -> Vec<u8> {
    let mut line = serde_json::to_vec(notification).unwrap_or_default();
    line.push(b'\n');
    line
}

/// How long the end of a stderr quoted in a log may be.
const STDERR_TAIL: usize = 400;

/// At most the last [`STDERR_TAIL`] bytes of `bytes`, as text.
fn tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(STDERR_TAIL);
    String::from_utf8_lossy(&bytes[start..]).trim().to_owned()
}

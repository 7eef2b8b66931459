//! [`CommandNotifier`]: a program, run without a shell, the notification on its stdin.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use agenthost_services::{Notification, Notifier};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{Queue, json_line, tail};

/// How long a notification program may run before it is killed.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// Runs a program for each notification.
#[derive(Debug, Clone)]
pub struct CommandNotifier {
    queue: Queue,
}

impl CommandNotifier {
    /// Starts the delivery task (on the current runtime): `program` with `args`, killed after
    /// `timeout`.
    pub fn start(program: PathBuf, args: Vec<String>, timeout: Duration) -> Self {
        let queue = Queue::start("command", move |notification| {
            let (program, args) = (program.clone(), args.clone());
            async move {
                if let Err(error) = run(&program, &args, &notification, timeout).await {
                    tracing::warn!(
                        program = %program.display(),
                        event = notification.event.as_str(),
                        "the notification command failed: {error}"
                    );
                }
            }
        });
        Self { queue }
    }
}

impl Notifier for CommandNotifier {
    fn notify(&self, notification: Notification) {
        self.queue.push(notification);
    }
}

/// Runs `program` once with `notification` on its stdin.
async fn run(
    program: &PathBuf,
    args: &[String],
    notification: &Notification,
    timeout: Duration,
) -> Result<(), String> {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group, so a timeout kills what it started too.
        .process_group(0)
        .spawn()
        .map_err(|error| format!("cannot start it: {error}"))?;
    let group = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(i32::try_from(id).ok()?));
    let mut stdin = child.stdin.take();
    let mut stderr = child.stderr.take();
    let exchange = async {
        if let Some(stdin) = stdin.as_mut() {
            // A program that does not read its stdin is fine: a closed pipe is not an error.
            let _ = stdin.write_all(&json_line(notification)).await;
        }
        drop(stdin.take());
        let mut errors = Vec::new();
        if let Some(stderr) = stderr.as_mut() {
            let _ = stderr.take(64 * 1024).read_to_end(&mut errors).await;
        }
        let status = child.wait().await;
        (status, errors)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => {
            if let Some(group) = group {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            Err(format!("still running after {timeout:?}: killed"))
        }
        Ok((Err(error), _)) => Err(format!("cannot wait for it: {error}")),
        Ok((Ok(status), _)) if status.success() => Ok(()),
        Ok((Ok(status), errors)) => Err(format!("it ended with {status}: {}", tail(&errors))),
    }
}

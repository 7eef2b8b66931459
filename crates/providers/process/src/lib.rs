//! The agent CLIs' child processes, as every provider runs them: spawned in a process group of
//! their own, stdin written one line at a time, the tail of stderr kept for error messages, and
//! the whole group terminated at the end.
//!
//! **Central design decision: the process group is the unit.** Tools the agent runs (shell
//! commands and their children) live in the CLI's process group, so signalling the group stops
//! them too; a process that ignores `SIGTERM` for the grace period gets `SIGKILL`. Dropping an
//! [`AgentProcess`] without [`AgentProcess::terminate`] still kills the group, so no agent
//! outlives the host's handle on it.
//!
//! What is deliberately absent: any wire format. Framing and parsing stdout is the provider's
//! ([`LineReader`] reads bounded lines for the line-based ones: a line longer than its cap is an
//! error, so a CLI flooding one endless line costs the host at most the cap in memory and the
//! turn ends instead of reading forever).
#![deny(missing_docs)]

pub mod driver;

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex as AsyncMutex;
use tokio::task::JoinHandle;

/// The most stderr text kept for error messages, in bytes.
pub const STDERR_TAIL_BYTES: usize = 4096;
/// The most stderr lines kept.
pub const STDERR_TAIL_LINES: usize = 20;

/// What to run.
#[derive(Debug, Clone)]
pub struct Launch<'a> {
    /// The executable.
    pub binary: &'a std::path::Path,
    /// Its arguments.
    pub args: &'a [String],
    /// Its working directory.
    pub working_directory: &'a std::path::Path,
    /// Variables set on it (the rest of the host's environment is inherited).
    pub env: &'a [(String, std::ffi::OsString)],
    /// Variables removed from its environment.
    pub env_remove: &'a [String],
}

/// The last lines a child wrote to stderr.
#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.push_back(line);
        while lines.len() > STDERR_TAIL_LINES {
            lines.pop_front();
        }
        while lines.iter().map(String::len).sum::<usize>() > STDERR_TAIL_BYTES && lines.len() > 1 {
            lines.pop_front();
        }
    }

    /// The kept lines, newline-joined, cut to [`STDERR_TAIL_BYTES`] at a character boundary.
    pub fn text(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        let joined = lines.iter().cloned().collect::<Vec<_>>().join("\n");
        if joined.len() <= STDERR_TAIL_BYTES {
            return joined;
        }
        let mut start = joined.len() - STDERR_TAIL_BYTES;
        while !joined.is_char_boundary(start) {
            start += 1;
        }
        joined[start..].to_owned()
    }
}

/// A running agent process.
#[derive(Debug)]
pub struct AgentProcess {
    pid: Option<Pid>,
    child: AsyncMutex<Option<Child>>,
    stdin: AsyncMutex<Option<ChildStdin>>,
    stderr: StderrTail,
    stderr_task: Mutex<Option<JoinHandle<()>>>,
}

/// What [`AgentProcess::spawn`] hands back besides the process: its stdout, for the reader.
#[derive(Debug)]
pub struct Spawned {
    /// The process.
    pub process: Arc<AgentProcess>,
    /// Its standard output.
    pub stdout: ChildStdout,
}

/// How often, and how long apart, a start that met a busy executable is tried again.
const BUSY_RETRIES: u32 = 10;
const BUSY_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

/// `command.spawn()`, tried again (up to [`BUSY_RETRIES`] times, [`BUSY_PAUSE`] apart) while the
/// executable is busy (`ETXTBSY`): someone still holds it open for writing — a package manager
/// replacing the CLI, or another thread of this process whose fork inherited the descriptor of
/// a file it just wrote. Blocks the calling thread for those pauses only.
fn spawn_when_not_busy(command: &mut Command) -> std::io::Result<Child> {
    let mut tries = 0;
    loop {
        match command.spawn() {
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && tries < BUSY_RETRIES =>
            {
                tries += 1;
                std::thread::sleep(BUSY_PAUSE);
            }
            outcome => return outcome,
        }
    }
}

impl AgentProcess {
    /// Starts `launch` in a new process group, with piped stdin, stdout and stderr. An
    /// executable that is busy being written (`ETXTBSY`) is waited for briefly: up to ten tries,
    /// 10 ms apart.
    pub fn spawn(launch: &Launch<'_>) -> std::io::Result<Spawned> {
        let mut command = Command::new(launch.binary);
        command
            .args(launch.args)
            .current_dir(launch.working_directory)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        for (name, value) in launch.env {
            command.env(name, value);
        }
        for name in launch.env_remove {
            command.env_remove(name);
        }
        let mut child = spawn_when_not_busy(&mut command)?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw);
        let missing = |what: &str| std::io::Error::other(format!("the child has no {what} pipe"));
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
        let tail = StderrTail::default();
        let stderr_task = tokio::spawn(collect_stderr(stderr, tail.clone()));
        let process = Arc::new(Self {
            pid,
            child: AsyncMutex::new(Some(child)),
            stdin: AsyncMutex::new(Some(stdin)),
            stderr: tail,
            stderr_task: Mutex::new(Some(stderr_task)),
        });
        Ok(Spawned { process, stdout })
    }

    /// The process (and group) id.
    pub fn pid(&self) -> Option<i32> {
        self.pid.map(Pid::as_raw_nonzero).map(i32::from)
    }

    /// Writes `bytes` as they are (a framed message) and flushes them.
    pub async fn write_bytes(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the agent's input is closed",
            ));
        };
        pipe.write_all(bytes).await?;
        pipe.flush().await
    }

    /// Writes one line (a newline is added) and flushes it.
    pub async fn write_line(&self, line: &str) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.write_bytes(&bytes).await
    }

    /// The tail of stderr, after giving the stderr reader up to `wait` to reach the end of the
    /// stream (it does once the process has exited).
    pub async fn stderr_tail(&self, wait: Duration) -> String {
        let task = self
            .stderr_task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(wait, task).await;
        }
        self.stderr.text()
    }

    /// Waits for the process to exit (after its stdout ended), killing its group when it does
    /// not within `grace`. Returns the exit status as text.
    pub async fn reap(&self, grace: Duration) -> String {
        let mut guard = self.child.lock().await;
        let Some(child) = guard.as_mut() else {
            return "already reaped".to_owned();
        };
        let status = match tokio::time::timeout(grace, child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                self.signal_group(Signal::KILL);
                child.wait().await
            }
        };
        *guard = None;
        describe(status)
    }

    /// Closes stdin, sends `SIGTERM` to the group, waits up to `grace`, then `SIGKILL`s the group
    /// and reaps the process.
    pub async fn terminate(&self, grace: Duration) -> String {
        self.stdin.lock().await.take();
        self.signal_group(Signal::TERM);
        let mut guard = self.child.lock().await;
        let Some(child) = guard.as_mut() else {
            // Already reaped; members of its group may remain.
            self.signal_group(Signal::KILL);
            return "already reaped".to_owned();
        };
        let status = match tokio::time::timeout(grace, child.wait()).await {
            Ok(status) => {
                // The leader is gone; stray members of its group are not left behind.
                self.signal_group(Signal::KILL);
                status
            }
            Err(_) => {
                self.signal_group(Signal::KILL);
                child.wait().await
            }
        };
        *guard = None;
        describe(status)
    }

    fn signal_group(&self, signal: Signal) {
        if let Some(pid) = self.pid
            && let Err(error) = kill_process_group(pid, signal)
            && error != rustix::io::Errno::SRCH
        {
            tracing::warn!(%error, pid = pid.as_raw_nonzero(), "could not signal the agent's process group");
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        // `kill_on_drop` kills the leader only; its tools would live on.
        let reaped = self
            .child
            .try_lock()
            .map(|child| child.is_none())
            .unwrap_or(false);
        if !reaped {
            self.signal_group(Signal::KILL);
        }
    }
}

fn describe(status: std::io::Result<ExitStatus>) -> String {
    match status {
        Ok(status) => status.to_string(),
        Err(error) => format!("unknown exit status: {error}"),
    }
}

async fn collect_stderr(stderr: impl AsyncRead + Unpin, tail: StderrTail) {
    // Stderr is only quoted: an over-long line is cut, not an error, and the stream is drained
    // to its end so the child never blocks on a full stderr pipe.
    let mut reader = BufReader::new(stderr);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match read_line_capped(&mut reader, &mut buffer, STDERR_TAIL_BYTES).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&buffer);
        if !line.trim().is_empty() {
            tail.push(line.trim_end().to_owned());
        }
    }
}

/// The non-blank lines of a stream (an agent's stdout), decoded lossily (invalid UTF-8 becomes
/// U+FFFD): what every line-based provider reads.
///
/// A line longer than `cap` bytes is an [`std::io::ErrorKind::InvalidData`] error as soon as its
/// `cap + 1`th byte arrives, without reading the rest: a CLI printing one endless line costs at
/// most `cap` bytes and ends the read, where cutting the line and skipping to its newline would
/// read forever. After the error the stream is not trusted again (the next read may start in the
/// middle of that line).
#[derive(Debug)]
pub struct LineReader<R> {
    reader: BufReader<R>,
    buffer: Vec<u8>,
    cap: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Lines of `stream`, at most `cap` bytes each.
    pub fn new(stream: R, cap: usize) -> Self {
        Self {
            reader: BufReader::new(stream),
            buffer: Vec::new(),
            cap,
        }
    }

    /// The next line that is not blank (without its newline); `None` at the end of the stream;
    /// an error for a line longer than the cap.
    pub async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        loop {
            self.buffer.clear();
            if read_line_limited(&mut self.reader, &mut self.buffer, self.cap).await? == 0 {
                return Ok(None);
            }
            let line = String::from_utf8_lossy(&self.buffer);
            if !line.trim().is_empty() {
                return Ok(Some(line.into_owned()));
            }
        }
    }
}

/// Reads one line into `buffer` (without the newline); a line of more than `cap` bytes is an
/// `InvalidData` error once `cap + 1` of its bytes were read. Returns the bytes consumed (0 at
/// the end).
async fn read_line_limited(
    reader: &mut (impl AsyncBufReadExt + Unpin),
    buffer: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(consumed);
        }
        let (chunk, done) = match available.iter().position(|&byte| byte == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        if buffer.len() + chunk.len() > cap {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line of its output is longer than {cap} bytes"),
            ));
        }
        buffer.extend_from_slice(chunk);
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        consumed += used;
        if done.is_some() {
            return Ok(consumed);
        }
    }
}

/// Reads one line into `buffer` (without the newline), keeping at most `cap` bytes of it; the
/// rest of an over-long line is read and discarded. Returns the bytes consumed (0 at the end).
pub async fn read_line_capped(
    reader: &mut (impl AsyncBufReadExt + Unpin),
    buffer: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(consumed);
        }
        let (chunk, done) = match available.iter().position(|&byte| byte == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        let room = cap.saturating_sub(buffer.len());
        buffer.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        consumed += used;
        if done.is_some() {
            return Ok(consumed);
        }
    }
}

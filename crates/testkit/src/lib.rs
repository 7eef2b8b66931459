//! Test kit of agenthost: [`MockModel`], a loopback mock model server that the real agent CLIs
//! (Claude Code, Codex, Copilot CLI) run complete turns against, with no vendor account and no
//! network beyond `127.0.0.1`.
//!
//! **Central design decision: this is the reference mock `mockllm.py`, byte for byte.** The
//! fixtures of the project were captured from the CLIs running against that Python script, so
//! this crate speaks the same three wire formats (Anthropic Messages, OpenAI Responses, OpenAI
//! Chat Completions; streamed and not), takes the same stateless decision from each request
//! alone, and writes the same bytes: JSON as Python's `json.dumps` writes it (key order,
//! separators, `\uXXXX` escapes; see the `pyjson` module), SSE events one per HTTP chunk, the
//! same ids, usage and headers. Golden answers captured from the Python script keep the two
//! honest (`tests/golden.rs`).
//!
//! The decision rule, for every model call:
//! 1. the history holds a tool result → a final text (an error-aware one when the result looks
//!    denied or failed);
//! 2. else a shell-like tool is offered (`Bash`, `shell_command`, `shell`, `exec_command`,
//!    `local_shell`, `bash`, `powershell`, …) → a short text and one call of that tool running
//!    [`MockModelConfig::command`], every required argument filled from the tool's JSON schema;
//! 3. else a short plain text.
//!
//! ```no_run
//! # async fn example() -> std::io::Result<()> {
//! use agenthost_testkit::{MockModel, MockModelConfig};
//!
//! let mock = MockModel::start(MockModelConfig::default()).await?;
//! // ANTHROPIC_BASE_URL=mock.base_url(), or base_url = "{base_url}/v1" for OpenAI clients.
//! let base_url = mock.base_url();
//! # let _ = base_url;
//! // … run the CLI …
//! let decisions: Vec<String> = mock.requests().into_iter().map(|r| r.decision).collect();
//! assert_eq!(decisions, ["tool_use:Bash", "final_text"]);
//! mock.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! [`WebhookReceiver`] is a loopback endpoint recording what is POSTed to it (the host's
//! notification webhooks), answering with scripted statuses.
//!
//! What is deliberately absent: any state across requests (a conversation is decided from the
//! request alone), compressed request bodies (none of the CLIs sends one), and listening on
//! anything but a loopback address.

#![deny(missing_docs)]

mod anthropic;
mod chat;
pub mod fake_cli;
mod logs;
mod pyjson;
mod record;
mod reply;
mod responses;
mod script;
mod server;
mod webhook;

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use fake_cli::{FakeCli, Step};
pub use logs::CapturedLogs;
pub use record::{RequestKind, RequestRecord};
pub use webhook::WebhookReceiver;

use record::Recorder;
use server::Shared;

/// How the mock answers. `Default`: command `echo hi > out.txt`, every option off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockModelConfig {
    /// The shell command put into the tool call.
    pub command: String,
    /// Adds a thinking block (Anthropic `thinking_delta` then `signature_delta`) or a reasoning
    /// item with summary events (Responses) before the tool call.
    pub thinking: bool,
    /// Sets `sandbox_permissions: "require_escalated"` and a `justification` when the tool's
    /// schema has them: what makes Codex ask for approval.
    pub escalate: bool,
    /// Every model call (`…/messages`, `…/responses`, `…/chat/completions` with a JSON body)
    /// is answered with this HTTP status and a provider-shaped error body carrying
    /// [`fail_message`](Self::fail_message). Must be a status code (100–999).
    pub fail_status: Option<u16>,
    /// The message of the scripted error body.
    pub fail_message: String,
    /// Fills a `workdir` tool argument when the schema has one.
    pub workdir: Option<String>,
    /// A pause after every SSE event (cancellation tests: a turn that takes a while).
    pub event_delay: Duration,
    /// Also appends each [`RequestRecord`] as one JSON line to this file.
    pub log_path: Option<PathBuf>,
}

impl Default for MockModelConfig {
    fn default() -> MockModelConfig {
        MockModelConfig {
            command: "echo hi > out.txt".to_owned(),
            thinking: false,
            escalate: false,
            fail_status: None,
            fail_message: "mock: scripted failure".to_owned(),
            workdir: None,
            event_delay: Duration::ZERO,
            log_path: None,
        }
    }
}

/// A running mock model server on a loopback address.
///
/// Stops when [`shutdown`](Self::shutdown) is awaited or when it is dropped (then the listener
/// and connections close shortly after, on the runtime).
#[derive(Debug)]
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl MockModel {
    /// Starts a mock on `127.0.0.1` with a port the OS picks. Returns once the listener is
    /// bound: requests can be sent at once.
    pub async fn start(config: MockModelConfig) -> io::Result<MockModel> {
        MockModel::start_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), config).await
    }

    /// Starts a mock on `addr`, which must be a loopback address (`127.0.0.0/8` or `::1`):
    /// anything else is refused with [`io::ErrorKind::InvalidInput`], as is a
    /// [`fail_status`](MockModelConfig::fail_status) that is not an HTTP status code.
    pub async fn start_on(addr: SocketAddr, config: MockModelConfig) -> io::Result<MockModel> {
        if !addr.ip().is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the mock model server listens on loopback only; {addr} is not a loopback \
                     address (use 127.0.0.1)"
                ),
            ));
        }
        if let Some(status) = config.fail_status
            && !(100..=999).contains(&status)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("fail_status {status} is not an HTTP status code (100-999)"),
            ));
        }
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            recorder: Recorder::new(config.log_path.clone()),
            config,
        });
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(server::serve(listener, Arc::clone(&shared), stopped));
        Ok(MockModel {
            addr,
            shared,
            stop,
            task,
        })
    }

    /// The address the mock listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash: the base URL for Anthropic clients;
    /// OpenAI clients take it with `/v1` appended.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request answered so far, in order (the readiness probe excepted).
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.recorder.records()
    }

    /// Stops accepting, ends every open connection (streams in progress are cut), and returns
    /// once the server task has ended.
    pub async fn shutdown(self) {
        let MockModel { stop, task, .. } = self;
        // The task may have ended already; then there is no one to tell.
        let _ = stop.send(());
        if let Err(error) = task.await
            && error.is_panic()
        {
            tracing::error!(%error, "mock model: the server task panicked");
        }
    }
}

//! [`DriverState`]: the part of a conversation's state the driver manages — the process slot
//! and the waiters — and the teardown written once over it.

use std::hash::Hash;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use agenthost_protocol::SessionUri;
use agenthost_provider_api::{
    CliSettings, ProviderError, SignalSink, StartSession, TurnRequest, stderr_suffix,
    system_notice, turn_cancelled,
};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::driver::{
    Answer, Live, MessageHandler, MessageSource, ProcessSlot, RunningTurn, Waiters, await_answer,
    fail_waiters, spawn_reader,
};
use crate::{AgentProcess, Launch, Spawned};

/// A conversation's state (behind its one mutex) as the driver sees it.
pub trait DriverState: Send {
    /// The request ids of the agent's protocol.
    type Key: Eq + Hash + Send;
    /// What a request is answered with.
    type Answer: Send;

    /// The current process.
    fn slot(&mut self) -> &mut ProcessSlot<AgentProcess>;

    /// The requests awaiting an answer.
    fn waiters(&mut self) -> &mut Waiters<Self::Key, Self::Answer>;

    /// The current process was taken out (stopped or ended): reset what belonged to it.
    fn process_gone(&mut self) {}
}

fn lock<S>(state: &Mutex<S>) -> MutexGuard<'_, S> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The current process and its generation.
pub fn current_process<S: DriverState>(state: &Mutex<S>) -> Option<(u64, Arc<AgentProcess>)> {
    lock(state).slot().current()
}

/// Takes process `generation` out if it is still the current one.
pub fn take_process<S: DriverState>(
    state: &Mutex<S>,
    generation: u64,
) -> Option<Live<AgentProcess>> {
    let mut state = lock(state);
    let live = state.slot().take_generation(generation);
    if live.is_some() {
        state.process_gone();
    }
    live
}

/// Fails every request waiting on `process`, which ended with `status`.
pub async fn fail_requests<S: DriverState>(state: &Mutex<S>, status: &str, process: &AgentProcess) {
    let taken = lock(state).waiters().take_all();
    fail_waiters(taken, status, process).await;
}

/// Stops process `generation` if it is still current (`from_reader`: its own reader stops
/// it): terminated within `grace`, its waiting requests failed.
pub async fn stop_process<S: DriverState>(
    state: &Mutex<S>,
    generation: u64,
    grace: Duration,
    from_reader: bool,
    agent: &str,
) {
    if let Some(live) = take_process(state, generation) {
        let status = live.stop(grace, from_reader).await;
        tracing::debug!(status, agent, "stopped the agent");
        fail_requests(state, &status, &live.process).await;
    }
}

/// Process `generation`'s output ended (`read_error`: why, when reading failed): reaped within
/// `grace`, its waiting requests failed. The error that fails its turn; `None` when it was no
/// longer current (stopped meanwhile: nothing to report).
pub async fn reap_process<S: DriverState>(
    state: &Mutex<S>,
    generation: u64,
    grace: Duration,
    read_error: Option<String>,
    agent: &str,
) -> Option<ProviderError> {
    let live = take_process(state, generation)?;
    let (status, error) = live.exited(grace, read_error).await;
    tracing::debug!(status, agent, "the agent exited");
    fail_requests(state, &status, &live.process).await;
    Some(error)
}

/// What every conversation of one chat with an agent CLI holds besides its protocol state:
/// where it reports and works, and the lock that orders starting, cancelling and disposing.
#[derive(Debug)]
pub struct ChatBinding {
    /// The session of the chat.
    pub session: SessionUri,
    /// Where the agent works.
    pub working_directory: PathBuf,
    /// The model the chat started with, if the client chose one.
    pub default_model: Option<String>,
    /// Where signals go.
    pub signals: SignalSink,
    /// Held while a turn starts, is cancelled or the conversation is disposed.
    pub lifecycle: tokio::sync::Mutex<()>,
}

impl ChatBinding {
    /// The binding of the chat `start` opens.
    pub fn new(start: StartSession) -> Self {
        Self {
            session: start.session,
            working_directory: start.working_directory,
            default_model: start.model.map(|model| model.id),
            signals: start.signals,
            lifecycle: tokio::sync::Mutex::new(()),
        }
    }
}

impl ChatBinding {
    /// How to start the agent for this chat: `cli`'s executable in the chat's working
    /// directory with `args` and the environment changes `env` and `env_remove`.
    pub fn launch<'a>(
        &'a self,
        cli: &'a CliSettings,
        args: &'a [String],
        env: &'a [(String, std::ffi::OsString)],
        env_remove: &'a [String],
    ) -> Launch<'a> {
        Launch {
            binary: &cli.binary,
            args,
            working_directory: &self.working_directory,
            env,
            env_remove,
        }
    }

    /// The model `turn` runs with (see [`CliSettings::model_for`]).
    pub fn model(&self, turn: &TurnRequest, cli: &CliSettings) -> Option<String> {
        let chosen = turn.model.as_ref().map(|model| model.id.as_str());
        cli.model_for(chosen, self.default_model.as_deref())
    }

    /// Shows `texts` in turn `turn_id` as system notifications.
    pub async fn notify(&self, turn_id: &str, texts: impl IntoIterator<Item = String>) {
        let notices = texts
            .into_iter()
            .map(|text| system_notice(&self.session, turn_id, text))
            .collect::<Vec<_>>();
        self.signals.send_all(notices).await;
    }

    /// Reports turn `turn`, which was cancelled and has wound down.
    pub async fn cancelled(&self, turn: &RunningTurn) {
        let duration = elapsed_ms(turn.started);
        let signal = turn_cancelled(&self.session, &turn.id, duration);
        self.signals.send_all(vec![signal]).await;
    }
}

/// Makes the started `process` the conversation's current one, with a reader task feeding what
/// `source` reads from it to `handler`; returns its generation. What belonged to the previous
/// process is reset first ([`DriverState::process_gone`]).
pub fn install_process<S, H, M>(
    state: &Mutex<S>,
    handler: Weak<H>,
    process: &Arc<AgentProcess>,
    source: M,
) -> u64
where
    S: DriverState,
    H: MessageHandler,
    M: MessageSource,
{
    let mut state = lock(state);
    state.process_gone();
    let generation = state.slot().install(Arc::clone(process), |generation| {
        spawn_reader(handler, generation, source)
    });
    tracing::debug!(pid = process.pid(), generation, "started the agent");
    generation
}

/// Process `generation` if it is still the current one (output of an older process is
/// dropped).
pub fn current_generation<S: DriverState>(
    state: &Mutex<S>,
    generation: u64,
) -> Option<Arc<AgentProcess>> {
    current_process(state).and_then(|(current, process)| (current == generation).then_some(process))
}

/// Sends a new request of the conversation and waits up to `timeout` for its answer (see
/// [`send_request`]): `encode` gets the request's number and returns the bytes to write.
pub async fn request<S: DriverState<Key = u64>>(
    state: &Mutex<S>,
    process: &AgentProcess,
    timeout: Duration,
    what: (&str, &str),
    encode: impl FnOnce(u64) -> Vec<u8>,
) -> Answer<S::Answer> {
    let request = new_request(state);
    let bytes = encode(request.0);
    send_request(state, process, request, &bytes, timeout, what).await
}

/// Creates the agent's home directory `dir` (named by its variable `var` in the error) when one
/// is configured.
pub fn create_home(var: &str, dir: Option<&std::path::Path>) -> Result<(), ProviderError> {
    match dir {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|error| ProviderError::StartFailed {
            message: format!("cannot create {var} {}: {error}", dir.display()),
        }),
        None => Ok(()),
    }
}

/// A new request of the conversation: its number, and the receiver its answer arrives on.
pub fn new_request<S: DriverState<Key = u64>>(
    state: &Mutex<S>,
) -> (u64, oneshot::Receiver<Answer<S::Answer>>) {
    let mut state = lock(state);
    let id = state.waiters().next_id();
    (id, state.waiters().register(id))
}

/// Writes request `id` (from [`new_request`]) to `process` as `bytes` and waits up to `timeout`
/// for its answer (see [`await_answer`]).
pub async fn send_request<S: DriverState<Key = u64>>(
    state: &Mutex<S>,
    process: &AgentProcess,
    (id, answer): (u64, oneshot::Receiver<Answer<S::Answer>>),
    bytes: &[u8],
    timeout: Duration,
    (agent, method): (&str, &str),
) -> Answer<S::Answer> {
    let written = process.write_bytes(bytes).await;
    let forget = || lock(state).waiters().forget(&id);
    await_answer(process, written, answer, timeout, (agent, method), forget).await
}

/// A JSON-RPC response to request `id` came in: its waiter gets `result` (an error answer is
/// [`ProviderError::Refused`]). A response nobody waits for is logged and dropped.
pub fn resolve_response<S, E>(state: &mut S, id: &Value, result: Result<Value, E>)
where
    S: DriverState<Key = u64, Answer = Value>,
    E: std::fmt::Display,
{
    let answer = result.map_err(|error| ProviderError::Refused {
        message: error.to_string(),
    });
    let waited = id
        .as_u64()
        .is_some_and(|key| state.waiters().resolve(&key, answer));
    if !waited {
        tracing::debug!(%id, "a response nobody waits for");
    }
}

/// The error that fails the turn when the agent's output cannot be understood: `error`, with
/// what the agent wrote to stderr.
pub async fn unreadable_output(
    process: &AgentProcess,
    error: impl std::fmt::Display,
) -> ProviderError {
    let tail = process.stderr_tail(Duration::ZERO).await;
    ProviderError::Protocol {
        message: format!("{error}{}", stderr_suffix(&tail)),
    }
}

/// Starts the agent as `launch` says; a failure to start is [`ProviderError::StartFailed`]
/// naming the executable.
pub fn spawn_agent(launch: &Launch<'_>) -> Result<Spawned, ProviderError> {
    AgentProcess::spawn(launch).map_err(|error| ProviderError::StartFailed {
        message: format!("could not run `{}`: {error}", launch.binary.display()),
    })
}

/// How long since `started`, in milliseconds, as turn durations are reported.
pub fn elapsed_ms(started: tokio::time::Instant) -> i64 {
    i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)
}

/// Whether a conversation of `agent` may start turn `turn_id`: not once it is disposed, and not
/// while it still runs turn `running` (the client cancels it or waits for its end first).
pub fn admit_turn(
    agent: &str,
    disposed: bool,
    running: Option<&str>,
    turn_id: &str,
) -> Result<(), ProviderError> {
    if disposed {
        return Err(ProviderError::NotRunning {
            message: format!("this {agent} conversation has been disposed"),
        });
    }
    if let Some(running) = running {
        return Err(ProviderError::NotRunning {
            message: format!(
                "{agent} is still running turn `{running}`: cancel it or wait for it to end \
                 before sending `{turn_id}`"
            ),
        });
    }
    Ok(())
}

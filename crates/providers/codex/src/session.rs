//! One chat's conversation with `codex app-server`: the process, the Codex thread it follows,
//! the protocol turn it runs, the host's requests awaiting answers and the approvals and input
//! requests awaiting the host.
//!
//! The process starts on the first turn (`initialize`, `initialized`); the thread is started
//! (`thread/start`) or, for a restored chat or after a restart of the process, resumed
//! (`thread/resume`) before the first `turn/start`. A reader task feeds every stdout line to the
//! [`Translator`]; the state changes of a line apply before its signals are sent. Starting,
//! cancelling and disposing take the `lifecycle` lock.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agenthost_protocol::state::ChatInputResponseKind;
use agenthost_provider_api::{
    InputResponse, PermissionDecision, ProviderError, ResumeKey, StartSession, TurnRequest,
    is_valid_resume_id, stderr_suffix, system_notice, turn_cancelled,
};
use agenthost_provider_process::driver::{
    AgentConversation, ChatBinding, Conversation, DriverState, MessageHandler, ProcessSlot,
    STDERR_SETTLE, Waiters, admit_turn, current_generation, current_process, elapsed_ms,
    fail_requests, new_request, reap_process, resolve_response, send_request, spawn_agent,
    spawn_reader, stop_process, unreadable_output,
};
use agenthost_provider_process::{AgentProcess, Launch, LineReader};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::attachments::user_input;
use crate::config::{CodexConfig, DEFAULT_MODEL};
use crate::control;
use crate::translate::{ApprovalKind, InputKind, Output, Translator};

/// The longest stdout line read whole.
const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;
/// The client name Codex reports as the `originator` of model calls.
pub const CLIENT_NAME: &str = "agenthost";

/// Whether `id` can be a Codex thread id (it goes back to Codex in `thread/resume`).
pub fn is_valid_thread_id(id: &str) -> bool {
    is_valid_resume_id(id)
}

/// Where a Codex resume handle keeps the thread id.
pub(crate) const RESUME: ResumeKey = ResumeKey {
    key: "threadId",
    agent: "Codex",
    what: "thread id",
};

/// A conversation of one chat with Codex: the host's `ProviderSession`.
pub type CodexSession = Conversation<CodexConversation>;

/// The state of a conversation with Codex (see [`CodexSession`]).
pub struct CodexConversation {
    config: Arc<CodexConfig>,
    chat: ChatBinding,
    translator: Mutex<Translator>,
    state: Mutex<State>,
}

type Answer = Result<Value, ProviderError>;

#[derive(Default)]
struct State {
    process: ProcessSlot<AgentProcess>,
    waiters: Waiters<u64, Value>,
    thread_id: Option<String>,
    /// Whether the current process has the thread loaded (started or resumed).
    thread_loaded: bool,
    turn: Option<RunningTurn>,
    approvals: HashMap<String, Parked>,
    /// Input requests awaiting the host, by AHP request id.
    inputs: HashMap<String, ParkedInput>,
    disposed: bool,
    /// The last turn started with the plan-mode overrides.
    plan_overrides: bool,
}

impl DriverState for State {
    type Key = u64;
    type Answer = Value;

    fn slot(&mut self) -> &mut ProcessSlot<AgentProcess> {
        &mut self.process
    }

    fn waiters(&mut self) -> &mut Waiters<u64, Value> {
        &mut self.waiters
    }

    fn process_gone(&mut self) {
        self.thread_loaded = false;
    }
}

struct RunningTurn {
    id: String,
    started: Instant,
    app_turn_id: Option<String>,
    images: Vec<PathBuf>,
}

struct Parked {
    request_id: Value,
    kind: ApprovalKind,
}

struct ParkedInput {
    request_id: Value,
    kind: InputKind,
}

impl ParkedInput {
    /// The line answering it as cancelled (the turn ended before the host answered).
    fn cancelled(&self) -> String {
        let answer = control::input_unanswered(&self.kind, ChatInputResponseKind::Cancel);
        control::reply(&self.request_id, &answer)
    }
}

/// Just enough of a line to see whether it is a `turn/completed` notification.
#[derive(Deserialize)]
struct LineMethod {
    method: Option<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn remove_images(images: Vec<PathBuf>) {
    for image in images {
        if let Err(error) = std::fs::remove_file(&image)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(%error, path = %image.display(), "could not remove an image sent to Codex");
        }
    }
}

impl CodexConversation {
    pub(crate) fn start(
        config: Arc<CodexConfig>,
        start: StartSession,
        thread_id: Option<String>,
    ) -> CodexSession {
        Conversation::new(Self {
            config,
            translator: Mutex::new(Translator::new(start.session.clone())),
            state: Mutex::new(State {
                thread_id,
                ..State::default()
            }),
            chat: ChatBinding::new(start),
        })
    }

    /// The process id of the running `codex`, if one runs.
    pub fn process_id(&self) -> Option<i32> {
        self.current_process()
            .and_then(|(_, process)| process.pid())
    }

    /// The Codex thread this conversation follows, once known.
    pub fn thread_id(&self) -> Option<String> {
        lock(&self.state).thread_id.clone()
    }

    fn current_process(&self) -> Option<(u64, Arc<AgentProcess>)> {
        current_process(&self.state)
    }

    /// Sends request `method` and waits up to `timeout` for its result.
    async fn request(
        &self,
        process: &AgentProcess,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Answer {
        let (id, rx) = new_request(&self.state);
        self.send_request(process, (id, rx), method, params, timeout)
            .await
    }

    /// Sends request `id` (from `new_request`) and waits for its answer.
    async fn send_request(
        &self,
        process: &AgentProcess,
        (id, rx): (u64, oneshot::Receiver<Answer>),
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Answer {
        let mut line = control::request(id, method, &params);
        line.push('\n');
        let request = (id, rx);
        let what = ("codex", method);
        send_request(
            &self.state,
            process,
            request,
            line.as_bytes(),
            timeout,
            what,
        )
        .await
    }

    /// The running app-server, started and initialized when there is none.
    async fn ensure_process(self: &Arc<Self>) -> Result<Arc<AgentProcess>, ProviderError> {
        if let Some((_, process)) = self.current_process() {
            return Ok(process);
        }
        if let Some(home) = &self.config.codex_home {
            std::fs::create_dir_all(home).map_err(|error| ProviderError::StartFailed {
                message: format!("cannot create CODEX_HOME {}: {error}", home.display()),
            })?;
        }
        let args = self.config.args();
        let env = self.config.child_env();
        let spawned = spawn_agent(&Launch {
            binary: &self.config.cli.binary,
            args: &args,
            working_directory: &self.chat.working_directory,
            env: &env,
            env_remove: &self.config.cli.env_remove,
        })?;
        let process = spawned.process;
        let generation = {
            let mut state = lock(&self.state);
            state.thread_loaded = false;
            let lines = LineReader::new(spawned.stdout, MAX_LINE_BYTES);
            let weak = Arc::downgrade(self);
            state.process.install(Arc::clone(&process), |generation| {
                spawn_reader(weak, generation, lines)
            })
        };
        tracing::debug!(pid = process.pid(), "started codex app-server");
        let initialized = self
            .request(
                &process,
                "initialize",
                control::initialize_params(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
                self.config.cli.start_timeout,
            )
            .await;
        // Every failure of `request` already quotes the stderr tail.
        let failure = match initialized {
            Ok(_) => match process
                .write_line(&control::notification("initialized", &json!({})))
                .await
            {
                Ok(()) => return Ok(process),
                Err(error) => format!(
                    "could not send `initialized`: {error}{}",
                    stderr_suffix(&process.stderr_tail(STDERR_SETTLE).await)
                ),
            },
            Err(ProviderError::Protocol { message }) => message,
            Err(error) => error.to_string(),
        };
        self.stop_process(generation, false).await;
        Err(ProviderError::StartFailed {
            message: format!("codex app-server did not start: {failure}"),
        })
    }

    /// The thread id, after starting or resuming the thread in this process when needed; also
    /// the notices for the user (a thread that could not be resumed).
    async fn ensure_thread(
        &self,
        process: &AgentProcess,
        model: Option<&str>,
    ) -> Result<(String, Vec<String>), ProviderError> {
        let (loaded, known) = {
            let state = lock(&self.state);
            (state.thread_loaded, state.thread_id.clone())
        };
        if loaded && let Some(id) = known {
            return Ok((id, Vec::new()));
        }
        let mut notices = Vec::new();
        if let Some(id) = known {
            let resumed = self
                .request(
                    process,
                    "thread/resume",
                    control::thread_resume_params(&id),
                    self.config.request_timeout,
                )
                .await;
            match resumed {
                Ok(_) => {
                    lock(&self.translator).set_thread(&id);
                    lock(&self.state).thread_loaded = true;
                    return Ok((id, notices));
                }
                Err(ProviderError::Protocol { message }) => {
                    tracing::warn!(message, "codex could not resume its thread");
                    notices.push(format!(
                        "Codex could not resume its earlier conversation ({message}); this \
                         turn starts a new one."
                    ));
                }
                Err(error) => return Err(error),
            }
        }
        let cwd = self.chat.working_directory.to_string_lossy();
        let result = self
            .request(
                process,
                "thread/start",
                control::thread_start_params(
                    &cwd,
                    model,
                    &self.config.approval_policy,
                    &self.config.sandbox,
                ),
                self.config.request_timeout,
            )
            .await?;
        let id = result
            .pointer("/thread/id")
            .and_then(Value::as_str)
            .filter(|id| is_valid_thread_id(id))
            .ok_or_else(|| ProviderError::Protocol {
                message: format!("`thread/start` answered without a valid thread id: {result}"),
            })?
            .to_owned();
        lock(&self.translator).set_thread(&id);
        {
            let mut state = lock(&self.state);
            state.thread_id = Some(id.clone());
            state.thread_loaded = true;
        }
        Ok((id, notices))
    }

    /// Terminates process `generation` if it is still current; `from_reader` when its own
    /// reader calls (which must not abort itself).
    async fn stop_process(&self, generation: u64, from_reader: bool) {
        let grace = self.config.cli.kill_grace;
        stop_process(&self.state, generation, grace, from_reader, "codex").await;
    }

    /// Forgets the running turn and its parked approvals; returns its parked input requests,
    /// which the caller answers as cancelled when the process still runs.
    fn end_turn_state(&self) -> Vec<ParkedInput> {
        let (turn, inputs) = {
            let mut state = lock(&self.state);
            state.approvals.clear();
            let inputs = state.inputs.drain().map(|(_, parked)| parked).collect();
            (state.turn.take(), inputs)
        };
        if let Some(turn) = turn {
            remove_images(turn.images);
        }
        inputs
    }

    async fn respond_input(
        &self,
        request_id: &str,
        response: InputResponse,
    ) -> Result<(), ProviderError> {
        let not_waiting = || ProviderError::NotRunning {
            message: format!("no input request `{request_id}` is waiting for an answer"),
        };
        let (parked, process) = {
            let mut state = lock(&self.state);
            let process = state
                .process
                .current()
                .map(|(_, process)| process)
                .ok_or_else(not_waiting)?;
            let parked = state.inputs.remove(request_id).ok_or_else(not_waiting)?;
            (parked, process)
        };
        let answer = control::input_answer(&parked.kind, &response);
        process
            .write_line(&control::reply(&parked.request_id, &answer))
            .await
            .map_err(|error| ProviderError::input_closed(error, String::new()))
    }
}

impl MessageHandler for CodexConversation {
    /// One stdout line of process `generation`; `false` when reading must stop.
    async fn handle_message(&self, generation: u64, line: &str) -> bool {
        let Some(process) = current_generation(&self.state, generation) else {
            return false;
        };
        let completes_turn = serde_json::from_str::<LineMethod>(line)
            .ok()
            .and_then(|m| m.method)
            .is_some_and(|method| method == "turn/completed");
        let outcome = lock(&self.translator).on_line(line);
        let outputs = match outcome {
            Ok(outputs) => outputs,
            Err(error) => {
                let info = unreadable_output(&process, error).await.to_error_info();
                let signals = lock(&self.translator).fail_turn(info);
                // The process is stopped: its requests need no answer.
                self.end_turn_state();
                self.chat.signals.send_all(signals).await;
                self.stop_process(generation, true).await;
                return false;
            }
        };
        let mut signals = Vec::new();
        let mut writes = Vec::new();
        let mut ended = false;
        {
            let mut state = lock(&self.state);
            for output in outputs {
                match output {
                    Output::Signal(signal) => signals.push(signal),
                    Output::Response { id, result } => resolve_response(&mut *state, &id, result),
                    Output::ApprovalRequest {
                        request_id,
                        tool_call_id,
                        kind,
                    } => {
                        // A newer request for the same call replaces the waiting one, which
                        // is declined so Codex never waits for it forever.
                        if let Some(replaced) = state
                            .approvals
                            .insert(tool_call_id, Parked { request_id, kind })
                        {
                            let answer = control::approval_answer(replaced.kind, false);
                            writes.push(control::reply(&replaced.request_id, &answer));
                        }
                    }
                    Output::InputRequest {
                        request_id,
                        input_id,
                        kind,
                    } => {
                        // The translator never asks twice under one id in a turn; should it,
                        // the older request is cancelled so Codex never waits for it forever.
                        if let Some(replaced) = state
                            .inputs
                            .insert(input_id, ParkedInput { request_id, kind })
                        {
                            writes.push(replaced.cancelled());
                        }
                    }
                    Output::Reply { request_id, result } => {
                        writes.push(control::reply(&request_id, &result));
                    }
                    Output::UnsupportedRequest { request_id, method } => {
                        writes.push(control::error_reply(
                            &request_id,
                            control::METHOD_NOT_FOUND,
                            &format!("agenthost does not support `{method}`"),
                        ));
                    }
                    Output::ThreadStarted(id) if is_valid_thread_id(&id) => {
                        state.thread_id = Some(id);
                    }
                    Output::ThreadStarted(id) => {
                        tracing::warn!(
                            id = id.escape_debug().to_string(),
                            "ignoring a malformed thread id"
                        );
                    }
                    Output::TurnEnded => ended = true,
                }
            }
            if completes_turn {
                state.waiters.wound_down();
            }
        }
        if ended {
            // Input requests still waiting are answered as cancelled: the turn is over.
            writes.extend(self.end_turn_state().iter().map(ParkedInput::cancelled));
        }
        for write in writes {
            if let Err(error) = process.write_line(&write).await {
                tracing::warn!(%error, "could not answer a codex request");
            }
        }
        self.chat.signals.send_all(signals).await;
        true
    }

    /// Process `generation`'s output ended: reap it and fail the turn it was running.
    async fn process_ended(&self, generation: u64, read_error: Option<String>) {
        let grace = self.config.cli.kill_grace;
        let reaped = reap_process(&self.state, generation, grace, read_error, "codex").await;
        let Some(error) = reaped else {
            return;
        };
        let signals = lock(&self.translator).fail_turn(error.to_error_info());
        // The process is gone: its requests need no answer.
        self.end_turn_state();
        self.chat.signals.send_all(signals).await;
    }
}

impl AgentConversation for CodexConversation {
    async fn send_turn(self: &Arc<Self>, turn: TurnRequest) -> Result<(), ProviderError> {
        let _lifecycle = self.chat.lifecycle.lock().await;
        {
            let state = lock(&self.state);
            let running = state.turn.as_ref().map(|running| running.id.as_str());
            admit_turn("Codex", state.disposed, running, &turn.turn_id)?;
        }
        let process = self.ensure_process().await?;
        let model = turn
            .model
            .as_ref()
            .map(|model| model.id.clone())
            .or_else(|| self.chat.default_model.clone())
            .or_else(|| self.config.cli.model.clone())
            .filter(|model| model != DEFAULT_MODEL);
        let (thread_id, mut notices) = self.ensure_thread(&process, model.as_deref()).await?;
        let image_dir = std::env::temp_dir();
        let (input, images, skipped) = user_input(
            &turn.text,
            &turn.instructions,
            &turn.attachments,
            &image_dir,
        )
        .map_err(|error| ProviderError::Protocol {
            message: format!("the message could not be prepared for Codex: {error}"),
        })?;
        notices.extend(
            skipped
                .into_iter()
                .map(|note| format!("Not sent to Codex: {note}")),
        );
        {
            {
                let mut translator = lock(&self.translator);
                translator.set_advertised_model(
                    turn.listed_model(self.chat.default_model.as_deref(), DEFAULT_MODEL),
                );
                translator.begin_turn(&turn.turn_id);
            }
            lock(&self.state).turn = Some(RunningTurn {
                id: turn.turn_id.clone(),
                started: Instant::now(),
                app_turn_id: None,
                images,
            });
        }
        let notices: Vec<_> = notices
            .into_iter()
            .map(|text| system_notice(&self.chat.session, &turn.turn_id, text))
            .collect();
        self.chat.signals.send_all(notices).await;
        let mut params = control::turn_start_params(&thread_id, input);
        if let (Some(model), Some(object)) = (&model, params.as_object_mut()) {
            object.insert("model".into(), json!(model));
        }
        // Plan mode: a read-only sandbox that asks for nothing; the configured policy again on
        // the first turn after (Codex keeps a turn's overrides for the next ones).
        let plan = turn.mode == agenthost_provider_api::AgentMode::Plan;
        let overrides = {
            let mut state = lock(&self.state);
            let was_plan = std::mem::replace(&mut state.plan_overrides, plan);
            match (plan, was_plan) {
                (true, _) => Some(control::plan_overrides()),
                (false, true) => Some(control::turn_policy_overrides(
                    &self.config.approval_policy,
                    &self.config.sandbox,
                )),
                (false, false) => None,
            }
        };
        if let (Some(overrides), Some(object)) = (overrides, params.as_object_mut()) {
            object.extend(overrides.map(|(key, value)| (key.to_owned(), value)));
        }
        let request = new_request(&self.state);
        lock(&self.translator).turn_start_sent(&json!(request.0));
        let started = self
            .send_request(
                &process,
                request,
                "turn/start",
                params,
                self.config.request_timeout,
            )
            .await;
        match started {
            Ok(result) => {
                let app_turn = result
                    .pointer("/turn/id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let Some(running) = lock(&self.state).turn.as_mut()
                    && running.id == turn.turn_id
                {
                    running.app_turn_id = app_turn;
                }
                Ok(())
            }
            Err(error) => {
                let signals = lock(&self.translator).abort_turn();
                self.chat.signals.send_all(signals).await;
                for parked in self.end_turn_state() {
                    let _ = process.write_line(&parked.cancelled()).await;
                }
                Err(error)
            }
        }
    }

    async fn respond_to_permission(
        &self,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
        let not_waiting = || ProviderError::NotRunning {
            message: format!("no tool call `{tool_call_id}` is waiting for permission"),
        };
        let (parked, process) = {
            let mut state = lock(&self.state);
            let parked = state
                .approvals
                .remove(tool_call_id)
                .ok_or_else(not_waiting)?;
            let process = state
                .process
                .current()
                .map(|(_, process)| process)
                .ok_or_else(not_waiting)?;
            (parked, process)
        };
        let approved = matches!(decision, PermissionDecision::Approve);
        let signals = lock(&self.translator).record_decision(tool_call_id, approved);
        // Before the answer: Codex goes on (and may end the turn) only once it has it.
        self.chat.signals.send_all(signals).await;
        let answer = control::approval_answer(parked.kind, approved);
        process
            .write_line(&control::reply(&parked.request_id, &answer))
            .await
            .map_err(|error| ProviderError::input_closed(error, String::new()))
    }

    fn respond_to_input(
        &self,
        request_id: &str,
        response: InputResponse,
    ) -> Option<impl Future<Output = Result<(), ProviderError>> + Send> {
        Some(self.respond_input(request_id, response))
    }

    async fn cancel(&self, turn_id: &str) -> Result<(), ProviderError> {
        let _lifecycle = self.chat.lifecycle.lock().await;
        let (started, app_turn, approvals, inputs, thread) = {
            let mut state = lock(&self.state);
            match state.turn.take() {
                Some(turn) if turn.id == turn_id => {
                    let approvals: Vec<Parked> = state.approvals.drain().map(|(_, p)| p).collect();
                    let inputs: Vec<ParkedInput> = state.inputs.drain().map(|(_, p)| p).collect();
                    remove_images(turn.images);
                    (
                        turn.started,
                        turn.app_turn_id,
                        approvals,
                        inputs,
                        state.thread_id.clone(),
                    )
                }
                other => {
                    state.turn = other;
                    return Err(ProviderError::NotRunning {
                        message: format!("turn `{turn_id}` is not running"),
                    });
                }
            }
        };
        let app_turn = app_turn.or_else(|| lock(&self.translator).app_turn_id().map(str::to_owned));
        let cleared = lock(&self.translator).abort_turn();
        self.chat.signals.send_all(cleared).await;
        if let Some((generation, process)) = self.current_process() {
            // Approvals still waiting are declined, so the command does not run meanwhile;
            // input requests still waiting are cancelled.
            for parked in approvals {
                let answer = control::approval_answer(parked.kind, false);
                let _ = process
                    .write_line(&control::reply(&parked.request_id, &answer))
                    .await;
            }
            for parked in inputs {
                let _ = process.write_line(&parked.cancelled()).await;
            }
            let interrupted = match (thread, app_turn) {
                (Some(thread), Some(app_turn)) => {
                    let rx = lock(&self.state).waiters.expect_wind_down();
                    let params = control::turn_interrupt_params(&thread, &app_turn);
                    let grace = self.config.cli.cancel_grace;
                    let deadline = Instant::now() + grace;
                    let asked = self
                        .request(&process, "turn/interrupt", params, grace)
                        .await
                        .is_ok();
                    let done =
                        asked && matches!(tokio::time::timeout_at(deadline, rx).await, Ok(Ok(())));
                    lock(&self.state).waiters.stop_expecting_wind_down();
                    done
                }
                _ => false,
            };
            if !interrupted {
                tracing::debug!("codex did not wind the turn down in time: terminating it");
                self.stop_process(generation, false).await;
            }
        }
        let duration = elapsed_ms(started);
        self.chat
            .signals
            .send_all(vec![turn_cancelled(&self.chat.session, turn_id, duration)])
            .await;
        Ok(())
    }

    fn resume_handle(&self) -> Option<Value> {
        self.thread_id().map(|id| RESUME.handle(&id))
    }

    async fn dispose(&self) {
        let _lifecycle = self.chat.lifecycle.lock().await;
        let live = {
            let mut state = lock(&self.state);
            state.disposed = true;
            state.process.take()
        };
        let inputs = self.end_turn_state();
        let cleared = lock(&self.translator).abort_turn();
        self.chat.signals.send_all(cleared).await;
        if let Some(live) = live {
            // Input requests still waiting are cancelled before the process goes.
            for parked in inputs {
                let _ = live.process.write_line(&parked.cancelled()).await;
            }
            let status = live.process.terminate(self.config.cli.kill_grace).await;
            live.reader.abort();
            tracing::debug!(status, "disposed codex");
            fail_requests(&self.state, &status, &live.process).await;
        }
    }
}

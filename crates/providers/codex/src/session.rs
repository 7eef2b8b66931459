//! One chat's conversation with `codex app-server`: the process, the Codex thread it follows,
//! the protocol turn it runs, the host's requests awaiting answers and the approvals and input
//! requests awaiting the host.
//!
//! The process starts on the first turn (`initialize`, `initialized`); the thread is started
//! (`thread/start`) or, for a restored chat or after a restart of the process, resumed
//! (`thread/resume`) before the first `turn/start`. A reader task feeds every stdout line to the
//! [`Translator`]; the state changes of a line apply before its signals are sent. Starting,
//! cancelling and disposing take the `lifecycle` lock.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agenthost_protocol::state::ChatInputResponseKind;
use agenthost_provider_api::{
    InputResponse, PermissionDecision, ProviderError, ResumeKey, StartSession, TurnRequest,
    is_valid_resume_id, stderr_suffix,
};
use agenthost_provider_process::driver::{
    AgentConversation, AgentState, ChatBinding, Conversation, MessageHandler, ProviderState,
    STDERR_SETTLE, admit, begin_turn, cancel_turn, create_home, current_generation,
    current_process, dispose_state, end_turn, install_process, reap_process, request,
    resolve_response, spawn_agent, stop_process, take_input, take_permission, terminate,
    unreadable_output, wind_down,
};
use agenthost_provider_process::{AgentProcess, LineReader};
use serde::Deserialize;
use serde_json::{Value, json};

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

/// The conversation's state: the driver's part, the running turn with its approvals (by tool
/// call id) and input requests (by AHP request id), and [`Codex`].
type State = AgentState<Codex, Parked, ParkedInput>;

/// What the Codex conversation keeps of its own.
#[derive(Default)]
struct Codex {
    thread_id: Option<String>,
    /// Whether the current process has the thread loaded (started or resumed).
    thread_loaded: bool,
    /// The app-server's id of the running turn, once `turn/start` answered.
    app_turn_id: Option<String>,
    /// The images written for the running turn, removed when it ends.
    images: Vec<PathBuf>,
    /// The last turn started with the plan-mode overrides.
    plan_overrides: bool,
}

impl ProviderState for Codex {
    fn process_gone(&mut self) {
        self.thread_loaded = false;
    }
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
    /// The process id of the running `codex`, if one runs.
    pub fn process_id(&self) -> Option<i32> {
        current_process(&self.state).and_then(|(_, process)| process.pid())
    }

    /// The Codex thread this conversation follows, once known.
    pub fn thread_id(&self) -> Option<String> {
        lock(&self.state).thread_id.clone()
    }

    /// Sends request `method` and waits up to `timeout` for its result; `sent` is told the
    /// request's number before it goes out.
    async fn call(
        &self,
        process: &AgentProcess,
        (method, params): (&str, Value),
        timeout: Duration,
        sent: impl FnOnce(u64),
    ) -> Answer {
        request(&self.state, process, timeout, ("codex", method), |id| {
            sent(id);
            let mut line = control::request(id, method, &params);
            line.push('\n');
            line.into_bytes()
        })
        .await
    }

    /// Sends request `method` and waits up to `timeout` for its result.
    async fn request(
        &self,
        process: &AgentProcess,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Answer {
        self.call(process, (method, params), timeout, |_| {}).await
    }

    /// The running app-server, started and initialized when there is none.
    async fn ensure_process(self: &Arc<Self>) -> Result<Arc<AgentProcess>, ProviderError> {
        if let Some((_, process)) = current_process(&self.state) {
            return Ok(process);
        }
        create_home("CODEX_HOME", self.config.codex_home.as_deref())?;
        let cli = &self.config.cli;
        let (args, env) = (self.config.args(), self.config.child_env());
        let spawned = spawn_agent(&self.chat.launch(cli, &args, &env, &cli.env_remove))?;
        let process = spawned.process;
        let lines = LineReader::new(spawned.stdout, MAX_LINE_BYTES);
        let generation = install_process(&self.state, Arc::downgrade(self), &process, lines);
        let initialized = self
            .request(
                &process,
                "initialize",
                control::initialize_params(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
                cli.start_timeout,
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
        let ended = end_turn(&self.state);
        self.forget_turn_details();
        ended.inputs
    }

    /// Forgets the app-server's turn id and removes the turn's images; returns the turn id.
    fn forget_turn_details(&self) -> Option<String> {
        let (app_turn, images) = {
            let mut state = lock(&self.state);
            (state.app_turn_id.take(), std::mem::take(&mut state.images))
        };
        remove_images(images);
        app_turn
    }

    /// The running turn fails with `error`: the process is gone or being stopped, so its
    /// requests need no answer.
    async fn fail_turn(&self, error: ProviderError) {
        let signals = lock(&self.translator).fail_turn(error.to_error_info());
        self.end_turn_state();
        self.chat.signals.send_all(signals).await;
    }

    async fn respond_input(
        &self,
        request_id: &str,
        response: InputResponse,
    ) -> Result<(), ProviderError> {
        let (parked, process) = take_input(&self.state, request_id)?;
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
                self.fail_turn(unreadable_output(&process, error).await)
                    .await;
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
                            .turns
                            .park_permission(tool_call_id, Parked { request_id, kind })
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
                            .turns
                            .park_input(input_id, ParkedInput { request_id, kind })
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
        if let Some(error) = reaped {
            self.fail_turn(error).await;
        }
    }
}

impl AgentConversation for CodexConversation {
    type Config = CodexConfig;

    fn open(config: Arc<CodexConfig>, start: StartSession, thread_id: Option<String>) -> Self {
        Self {
            config,
            translator: Mutex::new(Translator::new(start.session.clone())),
            state: Mutex::new(State::new(Codex {
                thread_id,
                ..Codex::default()
            })),
            chat: ChatBinding::new(start),
        }
    }

    async fn send_turn(self: &Arc<Self>, turn: TurnRequest) -> Result<(), ProviderError> {
        let _lifecycle = self.chat.lifecycle.lock().await;
        admit(&self.state, "Codex", &turn.turn_id)?;
        let process = self.ensure_process().await?;
        let model = self.chat.model(&turn, &self.config.cli);
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
            let mut translator = lock(&self.translator);
            translator.set_advertised_model(
                turn.listed_model(self.chat.default_model.as_deref(), DEFAULT_MODEL),
            );
            translator.begin_turn(&turn.turn_id);
        }
        begin_turn(&self.state, &turn.turn_id);
        lock(&self.state).images = images;
        self.chat.notify(&turn.turn_id, notices).await;
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
        let sent = |id: u64| lock(&self.translator).turn_start_sent(&json!(id));
        let timeout = self.config.request_timeout;
        let started = self
            .call(&process, ("turn/start", params), timeout, sent)
            .await;
        match started {
            Ok(result) => {
                let app_turn = result
                    .pointer("/turn/id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let mut state = lock(&self.state);
                let running = state.turns.turn.as_ref();
                if running.is_some_and(|running| running.id == turn.turn_id) {
                    state.app_turn_id = app_turn;
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
        let (parked, process) = take_permission(&self.state, tool_call_id)?;
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
        let (turn, ended) = cancel_turn(&self.state, turn_id)?;
        let app_turn = self
            .forget_turn_details()
            .or_else(|| lock(&self.translator).app_turn_id().map(str::to_owned));
        let thread = lock(&self.state).thread_id.clone();
        let cleared = lock(&self.translator).abort_turn();
        self.chat.signals.send_all(cleared).await;
        if let Some((generation, process)) = current_process(&self.state) {
            // Approvals still waiting are declined, so the command does not run meanwhile;
            // input requests still waiting are cancelled.
            for parked in ended.permissions {
                let answer = control::approval_answer(parked.kind, false);
                let _ = process
                    .write_line(&control::reply(&parked.request_id, &answer))
                    .await;
            }
            for parked in ended.inputs {
                let _ = process.write_line(&parked.cancelled()).await;
            }
            let interrupted = match (thread, app_turn) {
                (Some(thread), Some(app_turn)) => {
                    let params = control::turn_interrupt_params(&thread, &app_turn);
                    let grace = self.config.cli.cancel_grace;
                    let ask = self.request(&process, "turn/interrupt", params, grace);
                    wind_down(&self.state, grace, async { ask.await.is_ok() }).await
                }
                _ => false,
            };
            if !interrupted {
                tracing::debug!("codex did not wind the turn down in time: terminating it");
                self.stop_process(generation, false).await;
            }
        }
        self.chat.cancelled(&turn).await;
        Ok(())
    }

    fn resume_handle(&self) -> Option<Value> {
        self.thread_id().map(|id| RESUME.handle(&id))
    }

    async fn dispose(&self) {
        let _lifecycle = self.chat.lifecycle.lock().await;
        let (live, ended) = dispose_state(&self.state);
        self.forget_turn_details();
        let cleared = lock(&self.translator).abort_turn();
        self.chat.signals.send_all(cleared).await;
        if let Some(live) = live {
            // Input requests still waiting are cancelled before the process goes.
            for parked in ended.inputs {
                let _ = live.process.write_line(&parked.cancelled()).await;
            }
            terminate(&self.state, live, self.config.cli.kill_grace, "codex").await;
        }
    }
}

//! One chat's conversation with `claude`: the process behind it, the protocol turn it runs, and
//! the permission requests and questions (`AskUserQuestion`) it is waiting on.
//!
//! The process starts on the first turn (and again after a cancel that had to kill it, a crash
//! or a model change, resuming the CLI's own session with `--resume`). A reader task feeds every
//! stdout line to the [`Translator`]; state changes of a line (parked permission requests and
//! questions, the CLI session id, the turn's end) apply before its signals are sent, so a client
//! answering a confirmation or a question at once finds the request parked, and a client starting
//! the next turn the moment it sees `chat/turnComplete` finds the conversation idle. A question
//! still parked when its turn ends, is cancelled or the chat is disposed is denied, so the CLI
//! never waits for it forever.
//!
//! Starting, cancelling and disposing take the `lifecycle` lock, so a process is never started
//! and stopped at the same time.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agenthost_provider_api::{
    InputResponse, PermissionDecision, ProviderError, StartSession, TurnRequest, stderr_suffix,
};
use agenthost_provider_process::driver::{
    AgentConversation, AgentState, ChatBinding, Conversation, MessageHandler, ProviderState,
    STDERR_SETTLE, admit, begin_turn, cancel_turn, current_generation, current_process,
    dispose_state, end_turn, install_process, reap_process, spawn_agent, stop_process, take_input,
    take_permission, terminate, unreadable_output, wind_down,
};
use agenthost_provider_process::{AgentProcess, LineReader};
use serde::Deserialize;

use crate::attachments::user_content;
use crate::config::ClaudeConfig;
use crate::control;
use crate::provider::is_valid_cli_session_id;
use crate::questions::{self, Answer};
use crate::translate::{Output, Translator};

/// The longest stdout line read whole (larger lines are cut and then fail to parse).
const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;
/// What the agent is told when the host declines a tool call without a reason.
pub const DECLINED_MESSAGE: &str = "The user declined this tool call.";

/// A conversation of one chat with Claude Code: the host's `ProviderSession`.
pub type ClaudeSession = Conversation<ClaudeConversation>;

/// The state of a conversation with Claude Code (see [`ClaudeSession`]).
pub struct ClaudeConversation {
    config: Arc<ClaudeConfig>,
    chat: ChatBinding,
    translator: Mutex<Translator>,
    state: Mutex<State>,
}

/// The conversation's state: the driver's part (control requests by request id), the running
/// turn with its parked permission requests (by tool call id) and `AskUserQuestion` requests (by
/// input request id), and [`Claude`].
type State = AgentState<Claude, Parked, Parked, String, ControlAnswer>;

/// What the Claude Code conversation keeps of its own.
#[derive(Default)]
struct Claude {
    /// The model and plan mode the current process was launched with.
    launched_with: (Option<String>, bool),
    cli_session_id: Option<String>,
}

impl ProviderState for Claude {}

struct Parked {
    request_id: String,
    input: serde_json::Value,
}

struct ControlAnswer {
    success: bool,
    error: Option<String>,
}

/// Just enough of a line to see whether it is a `result`.
#[derive(Deserialize)]
struct LineKind {
    #[serde(rename = "type")]
    kind: Option<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The `deny` answers that withdraw the parked `questions`.
fn withdrawn(questions: &[Parked]) -> Vec<String> {
    questions
        .iter()
        .map(|parked| control::deny(&parked.request_id, questions::WITHDRAWN))
        .collect()
}

impl ClaudeConversation {
    /// The process id of the running `claude`, if one runs.
    pub fn process_id(&self) -> Option<i32> {
        current_process(&self.state).and_then(|(_, process)| process.pid())
    }

    /// The CLI's own session id, once it reported one.
    pub fn cli_session_id(&self) -> Option<String> {
        lock(&self.state).cli_session_id.clone()
    }

    fn next_request_id(&self, prefix: &str) -> String {
        let id = lock(&self.state).waiters.next_id();
        format!("agenthost-{prefix}-{id}")
    }

    /// The running process, started (and initialized) when there is none or when it runs
    /// another model than `model`, or is not in plan mode as `plan` says.
    async fn ensure_process(
        self: &Arc<Self>,
        model: Option<String>,
        plan: bool,
    ) -> Result<Arc<AgentProcess>, ProviderError> {
        let (stale, resume) = {
            let state = lock(&self.state);
            match state.process.current() {
                Some((_, process)) if state.launched_with == (model.clone(), plan) => {
                    return Ok(process);
                }
                Some((generation, _)) => (Some(generation), state.cli_session_id.clone()),
                None => (None, state.cli_session_id.clone()),
            }
        };
        if let Some(generation) = stale {
            // Another model or mode: `claude` takes `--model` and `--permission-mode` at launch;
            // the conversation resumes.
            self.stop_process(generation).await;
        }
        let cli = &self.config.cli;
        // `model` is resolved already: none means the CLI's default, not the configured model.
        let launched = model.as_deref().unwrap_or(crate::DEFAULT_MODEL);
        let args = self
            .config
            .args_in_mode(Some(launched), resume.as_deref(), plan);
        let spawned = spawn_agent(&self.chat.launch(cli, &args, &cli.env, &cli.env_remove))?;
        let process = spawned.process;
        let lines = LineReader::new(spawned.stdout, MAX_LINE_BYTES);
        let generation = install_process(&self.state, Arc::downgrade(self), &process, lines);
        lock(&self.state).launched_with = (model, plan);
        lock(&self.translator).process_replaced();
        let request_id = self.next_request_id("init");
        let rx = lock(&self.state).waiters.register(request_id.clone());
        let start_failed = |message: String| ProviderError::StartFailed { message };
        if let Err(error) = process
            .write_line(&control::initialize_request(&request_id))
            .await
        {
            let tail = process.stderr_tail(STDERR_SETTLE).await;
            self.stop_process(generation).await;
            return Err(start_failed(format!(
                "could not send the initialize request: {error}{}",
                stderr_suffix(&tail)
            )));
        }
        match tokio::time::timeout(self.config.cli.start_timeout, rx).await {
            Ok(Ok(Ok(answer))) if answer.success => Ok(process),
            Ok(Ok(Ok(answer))) => {
                let tail = process.stderr_tail(STDERR_SETTLE).await;
                self.stop_process(generation).await;
                Err(start_failed(format!(
                    "claude refused to initialize: {}{}",
                    answer.error.unwrap_or_else(|| "no reason given".into()),
                    stderr_suffix(&tail)
                )))
            }
            Ok(Ok(Err(error))) => Err(error),
            Ok(Err(_)) => {
                let tail = process.stderr_tail(STDERR_SETTLE).await;
                self.stop_process(generation).await;
                Err(start_failed(format!(
                    "claude stopped before answering the initialize request{}",
                    stderr_suffix(&tail)
                )))
            }
            Err(_) => {
                self.stop_process(generation).await;
                let tail = process.stderr_tail(STDERR_SETTLE).await;
                Err(start_failed(format!(
                    "claude did not answer the initialize request within {} ms{}",
                    self.config.cli.start_timeout.as_millis(),
                    stderr_suffix(&tail)
                )))
            }
        }
    }

    /// Terminates process `generation` (if it is still the current one) and reaps it.
    async fn stop_process(&self, generation: u64) {
        self.stop_process_from(generation, false).await;
    }

    /// [`Self::stop_process`]; `from_reader` when called by that process's own reader task,
    /// which must not abort itself.
    async fn stop_process_from(&self, generation: u64, from_reader: bool) {
        let grace = self.config.cli.kill_grace;
        stop_process(&self.state, generation, grace, from_reader, "claude").await;
    }

    /// The running turn fails with `error`: the process is gone or being stopped, so its
    /// requests need no answer.
    async fn fail_turn(&self, error: ProviderError) {
        let signals = lock(&self.translator).fail_turn(error.to_error_info());
        end_turn(&self.state);
        self.chat.signals.send_all(signals).await;
    }

    /// Answers the `AskUserQuestion` parked under input request `request_id`.
    async fn answer_input(
        &self,
        request_id: &str,
        response: InputResponse,
    ) -> Result<(), ProviderError> {
        let (parked, process) = take_input(&self.state, request_id)?;
        let line = match questions::answer(&parked.input, &response) {
            Answer::Allow(updated_input) => control::allow(&parked.request_id, &updated_input),
            Answer::Deny(message) => control::deny(&parked.request_id, message),
        };
        process
            .write_line(&line)
            .await
            .map_err(|error| ProviderError::input_closed(error, String::new()))
    }

    /// Writes `answers` to `process`, logging what cannot be written.
    async fn write_answers(process: &AgentProcess, answers: Vec<String>) {
        for answer in answers {
            if let Err(error) = process.write_line(&answer).await {
                tracing::debug!(%error, "could not withdraw a question");
            }
        }
    }
}

impl MessageHandler for ClaudeConversation {
    /// One stdout line of process `generation`. Returns `false` when reading must stop.
    async fn handle_message(&self, generation: u64, line: &str) -> bool {
        let Some(process) = current_generation(&self.state, generation) else {
            return false;
        };
        let is_result = serde_json::from_str::<LineKind>(line)
            .ok()
            .and_then(|kind| kind.kind)
            .is_some_and(|kind| kind == "result");
        let outcome = lock(&self.translator).on_line(line);
        let outputs = match outcome {
            Ok(outputs) => outputs,
            Err(error) => {
                self.fail_turn(unreadable_output(&process, error).await)
                    .await;
                // The conversation is in an unknown state: a fresh process resumes it.
                self.stop_process_from(generation, true).await;
                return false;
            }
        };
        let mut signals = Vec::new();
        let mut unsupported = Vec::new();
        {
            let mut state = lock(&self.state);
            for output in outputs {
                match output {
                    Output::Signal(signal) => signals.push(signal),
                    Output::PermissionRequest {
                        request_id,
                        tool_use_id,
                        input,
                    } => {
                        // A newer request for the same call replaces the waiting one, which
                        // is denied so the CLI never waits for it forever.
                        if let Some(replaced) = state
                            .turns
                            .park_permission(tool_use_id, Parked { request_id, input })
                        {
                            unsupported.push(control::deny(&replaced.request_id, DECLINED_MESSAGE));
                        }
                    }
                    Output::InputRequest {
                        request_id,
                        input_request_id,
                        input,
                    } => {
                        if let Some(replaced) = state
                            .turns
                            .park_input(input_request_id, Parked { request_id, input })
                        {
                            unsupported
                                .push(control::deny(&replaced.request_id, questions::WITHDRAWN));
                        }
                    }
                    Output::UnsupportedControlRequest {
                        request_id,
                        subtype,
                    } => unsupported.push(control::error_response(
                        &request_id,
                        &format!("agenthost does not support `{subtype}` requests"),
                    )),
                    Output::DenyPermission {
                        request_id,
                        message,
                    } => unsupported.push(control::deny(&request_id, &message)),
                    Output::RequestCancelled { request_id } => {
                        let turns = &mut state.turns;
                        turns
                            .permissions
                            .retain(|_, parked| parked.request_id != request_id);
                        turns
                            .inputs
                            .retain(|_, parked| parked.request_id != request_id);
                    }
                    Output::ControlResponse {
                        request_id,
                        success,
                        error,
                    } => {
                        state
                            .waiters
                            .resolve(&request_id, Ok(ControlAnswer { success, error }));
                    }
                    Output::SessionId(id) if is_valid_cli_session_id(&id) => {
                        state.cli_session_id = Some(id);
                    }
                    Output::SessionId(id) => {
                        tracing::warn!(
                            id = id.escape_debug().to_string(),
                            "ignoring a malformed Claude session id"
                        );
                    }
                    Output::TurnEnded => {
                        unsupported.extend(withdrawn(&state.turns.end().inputs));
                    }
                }
            }
            if is_result {
                state.waiters.wound_down();
            }
        }
        for answer in unsupported {
            if let Err(error) = process.write_line(&answer).await {
                tracing::warn!(%error, "could not answer a control request");
            }
        }
        self.chat.signals.send_all(signals).await;
        true
    }

    /// Process `generation`'s output ended: reap it and fail the turn it was running.
    async fn process_ended(&self, generation: u64, read_error: Option<String>) {
        let grace = self.config.cli.kill_grace;
        let reaped = reap_process(&self.state, generation, grace, read_error, "claude").await;
        if let Some(error) = reaped {
            self.fail_turn(error).await;
        }
    }
}

impl AgentConversation for ClaudeConversation {
    type Config = ClaudeConfig;

    fn open(
        config: Arc<ClaudeConfig>,
        start: StartSession,
        cli_session_id: Option<String>,
    ) -> Self {
        Self {
            config,
            translator: Mutex::new(Translator::new(start.session.clone())),
            state: Mutex::new(State::new(Claude {
                cli_session_id,
                ..Claude::default()
            })),
            chat: ChatBinding::new(start),
        }
    }

    /// Starts the turn: the process if needed, then the user message.
    async fn send_turn(self: &Arc<Self>, turn: TurnRequest) -> Result<(), ProviderError> {
        let _lifecycle = self.chat.lifecycle.lock().await;
        admit(&self.state, "Claude Code", &turn.turn_id)?;
        let model = self.chat.model(&turn, &self.config.cli);
        let advertised =
            turn.listed_model(self.chat.default_model.as_deref(), crate::DEFAULT_MODEL);
        let plan = turn.mode == agenthost_provider_api::AgentMode::Plan;
        let process = self.ensure_process(model, plan).await?;
        let (content, skipped) = user_content(&turn.text, &turn.instructions, &turn.attachments);
        {
            let mut translator = lock(&self.translator);
            translator.set_model(advertised);
            translator.begin_turn(&turn.turn_id);
        }
        begin_turn(&self.state, &turn.turn_id);
        let notes = skipped
            .into_iter()
            .map(|note| format!("Not sent to Claude Code: {note}"));
        self.chat.notify(&turn.turn_id, notes).await;
        if let Err(error) = process
            .write_line(&control::user_message(&content, None))
            .await
        {
            lock(&self.translator).abort_turn();
            end_turn(&self.state);
            let stderr_tail = process.stderr_tail(STDERR_SETTLE).await;
            return Err(ProviderError::input_closed(error, stderr_tail));
        }
        Ok(())
    }

    async fn respond_to_permission(
        &self,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
        let (parked, process) = take_permission(&self.state, tool_call_id)?;
        let line = match decision {
            PermissionDecision::Approve => control::allow(&parked.request_id, &parked.input),
            PermissionDecision::Deny { reason } => control::deny(
                &parked.request_id,
                reason.as_deref().unwrap_or(DECLINED_MESSAGE),
            ),
        };
        process
            .write_line(&line)
            .await
            .map_err(|error| ProviderError::input_closed(error, String::new()))
    }

    fn respond_to_input(
        &self,
        request_id: &str,
        response: InputResponse,
    ) -> Option<impl Future<Output = Result<(), ProviderError>> + Send> {
        Some(self.answer_input(request_id, response))
    }

    async fn cancel(&self, turn_id: &str) -> Result<(), ProviderError> {
        let _lifecycle = self.chat.lifecycle.lock().await;
        let (turn, ended) = cancel_turn(&self.state, turn_id)?;
        lock(&self.translator).abort_turn();
        if let Some((generation, process)) = current_process(&self.state) {
            Self::write_answers(&process, withdrawn(&ended.inputs)).await;
            let request = control::interrupt_request(&self.next_request_id("interrupt"));
            let ask = process.write_line(&request);
            let grace = self.config.cli.cancel_grace;
            if !wind_down(&self.state, grace, async { ask.await.is_ok() }).await {
                tracing::debug!("claude did not wind the turn down in time: terminating it");
                self.stop_process(generation).await;
            }
        }
        self.chat.cancelled(&turn).await;
        Ok(())
    }

    fn resume_handle(&self) -> Option<serde_json::Value> {
        self.cli_session_id()
            .map(|id| crate::provider::RESUME.handle(&id))
    }

    async fn dispose(&self) {
        let _lifecycle = self.chat.lifecycle.lock().await;
        let (live, ended) = dispose_state(&self.state);
        lock(&self.translator).abort_turn();
        if let Some(live) = live {
            // Best effort: the process is terminated next either way.
            let withdraw = Self::write_answers(&live.process, withdrawn(&ended.inputs));
            let grace = self.config.cli.kill_grace;
            let _ = tokio::time::timeout(grace, withdraw).await;
            terminate(&self.state, live, grace, "claude").await;
        }
    }
}

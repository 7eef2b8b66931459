//! One chat's conversation with `claude`, as the driver's [`Protocol`]: the process behind it,
//! the protocol turn it runs, and the permission requests and questions (`AskUserQuestion`) it
//! is waiting on.
//!
//! The process starts on the first turn (and again after a cancel that had to kill it, a crash
//! or a model change, resuming the CLI's own session with `--resume`). A reader task feeds every
//! stdout line to the [`Translator`]; state changes of a line (parked permission requests and
//! questions, the CLI session id, the turn's end) apply before its signals are sent, so a client
//! answering a confirmation or a question at once finds the request parked, and a client starting
//! the next turn the moment it sees `chat/turnComplete` finds the conversation idle. A question
//! still parked when its turn ends, is cancelled or the chat is disposed is denied, so the CLI
//! never waits for it forever.

use std::sync::Arc;

use agenthost_protocol::AgentSignal;
use agenthost_protocol::ahp_types::state::ErrorInfo;
use agenthost_provider_api::{
    AgentMode, InputResponse, PermissionDecision, ProviderError, StartSession, TurnRequest,
    stderr_suffix,
};
use agenthost_provider_process::driver::{
    AgentState, Conversation, EndedOf, Engine, Protocol, ProviderState, Reply, RunningTurn,
    STDERR_SETTLE, begin_turn, end_turn, install_process, spawn_agent, wind_down,
};
use agenthost_provider_process::{AgentProcess, LineReader};
use serde::Deserialize;
use serde_json::Value;

use crate::attachments::user_content;
use crate::config::{ClaudeConfig, DEFAULT_MODEL};
use crate::control;
use crate::provider::{Claude, is_valid_cli_session_id};
use crate::questions::{self, Answer};
use crate::translate::{Output, Translator};

/// The longest stdout line read whole (larger lines are cut and then fail to parse).
const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;
/// What the agent is told when the host declines a tool call without a reason.
pub const DECLINED_MESSAGE: &str = "The user declined this tool call.";

/// The state of a conversation of one chat with Claude Code.
pub type ClaudeConversation = Engine<Claude>;

/// A conversation of one chat with Claude Code: the host's `ProviderSession`.
pub type ClaudeSession = Conversation<ClaudeConversation>;

/// The state of a conversation: the driver's part and [`ClaudeState`].
type State = AgentState<ClaudeState, Parked, Parked, String, ControlAnswer>;

/// What a Claude Code conversation keeps of its own.
#[derive(Default)]
pub struct ClaudeState {
    /// The model and plan mode the current process was launched with.
    launched_with: (Option<String>, bool),
    cli_session_id: Option<String>,
}

impl ProviderState for ClaudeState {}

/// A permission request or question of the CLI parked until the host answers.
pub struct Parked {
    request_id: String,
    input: Value,
}

/// The CLI's answer to a control request of the host.
pub struct ControlAnswer {
    success: bool,
    error: Option<String>,
}

/// Just enough of a line to see whether it is a `result`.
#[derive(Deserialize)]
struct LineKind {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// The `deny` answers that withdraw the parked `questions`.
fn withdrawn(questions: &[Parked]) -> Vec<String> {
    questions
        .iter()
        .map(|parked| control::deny(&parked.request_id, questions::WITHDRAWN))
        .collect()
}

fn next_request_id(engine: &Engine<Claude>, prefix: &str) -> String {
    let id = engine.state().waiters.next_id();
    format!("agenthost-{prefix}-{id}")
}

/// The running process, started (and initialized) when there is none or when it runs another
/// model than `model`, or is not in plan mode as `plan` says.
async fn ensure_process(
    engine: &Arc<Engine<Claude>>,
    model: Option<String>,
    plan: bool,
) -> Result<Arc<AgentProcess>, ProviderError> {
    let (stale, resume) = {
        let state = engine.state();
        match state.process.current() {
            Some((_, process)) if state.launched_with == (model.clone(), plan) => {
                return Ok(process);
            }
            Some((generation, _)) => (Some(generation), state.cli_session_id.clone()),
            None => (None, state.cli_session_id.clone()),
        }
    };
    if let Some(generation) = stale {
        // Another model or mode: `claude` takes `--model` and `--permission-mode` at launch; the
        // conversation resumes.
        engine.stop_process(generation, false).await;
    }
    let cli = &engine.config.cli;
    // `model` is resolved already: none means the CLI's default, not the configured model.
    let launched = model.as_deref().unwrap_or(DEFAULT_MODEL);
    let args = engine
        .config
        .args_in_mode(Some(launched), resume.as_deref(), plan);
    let spawned = spawn_agent(&engine.chat.launch(cli, &args, &cli.env, &cli.env_remove))?;
    let process = spawned.process;
    let lines = LineReader::new(spawned.stdout, MAX_LINE_BYTES);
    let generation = install_process(&engine.state, Arc::downgrade(engine), &process, lines);
    engine.state().launched_with = (model, plan);
    engine.translator().process_replaced();
    match initialize(engine, &process).await {
        Ok(()) => Ok(process),
        // The process ended: its waiters were failed with the exit and the stderr tail.
        Err(Err(error)) => Err(error),
        Err(Ok(failure)) => {
            let tail = process.stderr_tail(STDERR_SETTLE).await;
            engine.stop_process(generation, false).await;
            Err(ProviderError::StartFailed {
                message: format!("{failure}{}", stderr_suffix(&tail)),
            })
        }
    }
}

/// Sends the `initialize` control request and waits for its answer. When it fails: what went
/// wrong, or the error the process's end failed the request with.
async fn initialize(
    engine: &Engine<Claude>,
    process: &AgentProcess,
) -> Result<(), Result<String, ProviderError>> {
    let request_id = next_request_id(engine, "init");
    let answer = engine.state().waiters.register(request_id.clone());
    if let Err(error) = process
        .write_line(&control::initialize_request(&request_id))
        .await
    {
        return Err(Ok(format!(
            "could not send the initialize request: {error}"
        )));
    }
    let timeout = engine.config.cli.start_timeout;
    match tokio::time::timeout(timeout, answer).await {
        Ok(Ok(Ok(answer))) if answer.success => Ok(()),
        Ok(Ok(Ok(answer))) => Err(Ok(format!(
            "claude refused to initialize: {}",
            answer.error.unwrap_or_else(|| "no reason given".into())
        ))),
        Ok(Ok(Err(error))) => Err(Err(error)),
        Ok(Err(_)) => Err(Ok(
            "claude stopped before answering the initialize request".to_owned()
        )),
        Err(_) => Err(Ok(format!(
            "claude did not answer the initialize request within {} ms",
            timeout.as_millis()
        ))),
    }
}

impl Protocol for Claude {
    const TAKES_INPUT: bool = true;

    type Config = ClaudeConfig;
    type Translator = Translator;
    type State = State;

    fn open(
        _config: &ClaudeConfig,
        start: &StartSession,
        cli_session_id: Option<String>,
    ) -> (Translator, State) {
        let own = ClaudeState {
            cli_session_id,
            ..ClaudeState::default()
        };
        (Translator::new(start.session.clone()), State::new(own))
    }

    fn resume_id(state: &State) -> Option<&str> {
        state.cli_session_id.as_deref()
    }

    async fn write(process: &AgentProcess, message: &str) -> std::io::Result<()> {
        process.write_line(message).await
    }

    fn on_message(engine: &Engine<Claude>, line: &str) -> Result<Reply, String> {
        let is_result = serde_json::from_str::<LineKind>(line)
            .ok()
            .and_then(|kind| kind.kind)
            .is_some_and(|kind| kind == "result");
        // An unreadable line leaves the conversation in an unknown state: the engine stops the
        // process and a fresh one resumes it.
        let outputs = engine
            .translator()
            .on_line(line)
            .map_err(|e| e.to_string())?;
        let mut reply = Reply::default();
        let mut state = engine.state();
        for output in outputs {
            match output {
                Output::Signal(signal) => reply.signals.push(signal),
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
                        reply
                            .writes
                            .push(control::deny(&replaced.request_id, DECLINED_MESSAGE));
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
                        reply
                            .writes
                            .push(control::deny(&replaced.request_id, questions::WITHDRAWN));
                    }
                }
                Output::UnsupportedControlRequest {
                    request_id,
                    subtype,
                } => reply.writes.push(control::error_response(
                    &request_id,
                    &format!("agenthost does not support `{subtype}` requests"),
                )),
                Output::DenyPermission {
                    request_id,
                    message,
                } => reply.writes.push(control::deny(&request_id, &message)),
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
                    reply.writes.extend(withdrawn(&state.turns.end().inputs));
                }
            }
        }
        if is_result {
            state.waiters.wound_down();
        }
        Ok(reply)
    }

    fn fail_turn(engine: &Engine<Claude>, error: ErrorInfo) -> Vec<AgentSignal> {
        engine.translator().fail_turn(error)
    }

    /// Starts the turn: the process if needed, then the user message.
    async fn send_turn(
        engine: &Arc<Engine<Claude>>,
        turn: TurnRequest,
    ) -> Result<(), ProviderError> {
        let model = engine.chat.model(&turn, &engine.config.cli);
        let advertised = turn.listed_model(engine.chat.default_model.as_deref(), DEFAULT_MODEL);
        let plan = turn.mode == AgentMode::Plan;
        let process = ensure_process(engine, model, plan).await?;
        let (content, skipped) = user_content(&turn.text, &turn.instructions, &turn.attachments);
        {
            let mut translator = engine.translator();
            translator.set_model(advertised);
            translator.begin_turn(&turn.turn_id);
        }
        begin_turn(&engine.state, &turn.turn_id);
        let notes = skipped
            .into_iter()
            .map(|note| format!("Not sent to Claude Code: {note}"));
        engine.chat.notify(&turn.turn_id, notes).await;
        if let Err(error) = process
            .write_line(&control::user_message(&content, None))
            .await
        {
            engine.translator().abort_turn();
            end_turn(&engine.state);
            let stderr_tail = process.stderr_tail(STDERR_SETTLE).await;
            return Err(ProviderError::input_closed(error, stderr_tail));
        }
        Ok(())
    }

    async fn answer_permission(
        _engine: &Engine<Claude>,
        parked: Parked,
        process: Arc<AgentProcess>,
        _tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
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

    /// Answers a parked `AskUserQuestion`.
    async fn answer_input(
        _engine: &Engine<Claude>,
        parked: Parked,
        process: Arc<AgentProcess>,
        response: InputResponse,
    ) -> Result<(), ProviderError> {
        let line = match questions::answer(&parked.input, &response) {
            Answer::Allow(updated_input) => control::allow(&parked.request_id, &updated_input),
            Answer::Deny(message) => control::deny(&parked.request_id, message),
        };
        process
            .write_line(&line)
            .await
            .map_err(|error| ProviderError::input_closed(error, String::new()))
    }

    async fn cancel(
        engine: &Engine<Claude>,
        _turn: &RunningTurn,
        ended: EndedOf<State>,
        process: Option<&AgentProcess>,
    ) -> bool {
        engine.translator().abort_turn();
        let Some(process) = process else {
            return false;
        };
        Engine::<Claude>::withdraw(process, withdrawn(&ended.inputs)).await;
        let request = control::interrupt_request(&next_request_id(engine, "interrupt"));
        let ask = process.write_line(&request);
        let grace = engine.config.cli.cancel_grace;
        wind_down(&engine.state, grace, async { ask.await.is_ok() }).await
    }

    async fn dispose(
        engine: &Engine<Claude>,
        ended: EndedOf<State>,
        process: Option<&AgentProcess>,
    ) {
        engine.translator().abort_turn();
        if let Some(process) = process {
            // Best effort: the process is terminated next either way.
            let withdraw = Engine::<Claude>::withdraw(process, withdrawn(&ended.inputs));
            let _ = tokio::time::timeout(engine.config.cli.kill_grace, withdraw).await;
        }
    }
}

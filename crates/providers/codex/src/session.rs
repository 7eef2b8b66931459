//! One chat's conversation with `codex app-server`, as the driver's [`Protocol`]: the process,
//! the Codex thread it follows, the protocol turn it runs, the host's requests awaiting answers
//! and the approvals and input requests awaiting the host.
//!
//! The process starts on the first turn (`initialize`, `initialized`); the thread is started
//! (`thread/start`) or, for a restored chat or after a restart of the process, resumed
//! (`thread/resume`) before the first `turn/start`. A reader task feeds every stdout line to the
//! [`Translator`]; the state changes of a line apply before its signals are sent.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agenthost_protocol::AgentSignal;
use agenthost_protocol::ahp_types::state::ErrorInfo;
use agenthost_protocol::state::ChatInputResponseKind;
use agenthost_provider_api::{
    AgentMode, InputResponse, PermissionDecision, ProviderError, ResumeKey, StartSession,
    TurnRequest, is_valid_resume_id, stderr_suffix,
};
use agenthost_provider_process::driver::{
    AgentState, Conversation, EndedOf, Engine, Protocol, ProviderState, Reply, RunningTurn,
    STDERR_SETTLE, begin_turn, create_home, end_turn, install_process, request, resolve_response,
    resume_or_start, spawn_agent, wind_down,
};
use agenthost_provider_process::{AgentProcess, LineReader};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::attachments::user_input;
use crate::config::{CodexConfig, DEFAULT_MODEL};
use crate::control;
use crate::provider::Codex;
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

/// The state of a conversation of one chat with Codex.
pub type CodexConversation = Engine<Codex>;

/// A conversation of one chat with Codex: the host's `ProviderSession`.
pub type CodexSession = Conversation<CodexConversation>;

type Answer = Result<Value, ProviderError>;

/// The state of a conversation: the driver's part and [`CodexState`].
type State = AgentState<CodexState, Parked, ParkedInput>;

/// What a Codex conversation keeps of its own.
#[derive(Default)]
pub struct CodexState {
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

impl ProviderState for CodexState {
    fn process_gone(&mut self) {
        self.thread_loaded = false;
    }
}

/// An approval request of Codex parked until the host answers.
pub struct Parked {
    request_id: Value,
    kind: ApprovalKind,
}

/// An input request of Codex parked until the host answers.
pub struct ParkedInput {
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

impl Parked {
    /// The line declining it.
    fn declined(self) -> String {
        let answer = control::approval_answer(self.kind, false);
        control::reply(&self.request_id, &answer)
    }
}

/// Just enough of a line to see whether it is a `turn/completed` notification.
#[derive(Deserialize)]
struct LineMethod {
    method: Option<String>,
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

/// Sends request `method` and waits up to `timeout` for its result; `sent` is told the
/// request's number before it goes out.
async fn call(
    engine: &Engine<Codex>,
    process: &AgentProcess,
    (method, params): (&str, Value),
    timeout: Duration,
    sent: impl FnOnce(u64),
) -> Answer {
    request(&engine.state, process, timeout, ("codex", method), |id| {
        sent(id);
        let mut line = control::request(id, method, &params);
        line.push('\n');
        line.into_bytes()
    })
    .await
}

/// The running app-server, started and initialized when there is none.
async fn ensure_process(engine: &Arc<Engine<Codex>>) -> Result<Arc<AgentProcess>, ProviderError> {
    if let Some((_, process)) = engine.current_process() {
        return Ok(process);
    }
    let config = &engine.config;
    create_home("CODEX_HOME", config.codex_home.as_deref())?;
    let cli = &config.cli;
    let (args, env) = (config.args(), config.child_env());
    let spawned = spawn_agent(&engine.chat.launch(cli, &args, &env, &cli.env_remove))?;
    let process = spawned.process;
    let lines = LineReader::new(spawned.stdout, MAX_LINE_BYTES);
    let generation = install_process(&engine.state, Arc::downgrade(engine), &process, lines);
    let params = control::initialize_params(CLIENT_NAME, env!("CARGO_PKG_VERSION"));
    let initialized = call(
        engine,
        &process,
        ("initialize", params),
        cli.start_timeout,
        |_| {},
    )
    .await;
    // Every failure of `call` already quotes the stderr tail.
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
        Err(ProviderError::Protocol { message } | ProviderError::Refused { message }) => message,
        Err(error) => error.to_string(),
    };
    engine.stop_process(generation, false).await;
    Err(ProviderError::StartFailed {
        message: format!("codex app-server did not start: {failure}"),
    })
}

/// The thread id, after starting or resuming the thread in this process when needed; also the
/// notices for the user (a thread that could not be resumed).
async fn ensure_thread(
    engine: &Engine<Codex>,
    process: &AgentProcess,
    model: Option<&str>,
) -> Result<(String, Vec<String>), ProviderError> {
    let known = {
        let state = engine.state();
        (state.thread_id.clone(), state.thread_loaded)
    };
    let timeout = engine.config.request_timeout;
    let resume = |id: String| async move {
        let params = control::thread_resume_params(&id);
        call(engine, process, ("thread/resume", params), timeout, |_| {}).await?;
        Ok(id)
    };
    let start = || async move {
        let cwd = engine.chat.working_directory.to_string_lossy();
        let (policy, sandbox) = (&engine.config.approval_policy, &engine.config.sandbox);
        let params = control::thread_start_params(&cwd, model, policy, sandbox);
        let result = call(engine, process, ("thread/start", params), timeout, |_| {}).await?;
        result
            .pointer("/thread/id")
            .and_then(Value::as_str)
            .filter(|id| is_valid_thread_id(id))
            .map(str::to_owned)
            .ok_or_else(|| ProviderError::Protocol {
                message: format!("`thread/start` answered without a valid thread id: {result}"),
            })
    };
    let (id, notices) = resume_or_start("Codex", known, resume, start).await?;
    engine.translator().set_thread(&id);
    let mut state = engine.state();
    state.thread_id = Some(id.clone());
    state.thread_loaded = true;
    Ok((id, notices))
}

/// Forgets the app-server's turn id and removes the turn's images; returns the turn id.
fn forget_turn_details(engine: &Engine<Codex>) -> Option<String> {
    let (app_turn, images) = {
        let mut state = engine.state();
        (state.app_turn_id.take(), std::mem::take(&mut state.images))
    };
    remove_images(images);
    app_turn
}

/// The parameter overrides of a turn in `mode`: plan mode is a read-only sandbox that asks for
/// nothing; the first turn after it sets the configured policy again (Codex keeps a turn's
/// overrides for the next ones).
fn mode_overrides(engine: &Engine<Codex>, mode: AgentMode) -> Option<Vec<(&'static str, Value)>> {
    let plan = mode == AgentMode::Plan;
    let was_plan = std::mem::replace(&mut engine.state().plan_overrides, plan);
    let config = &engine.config;
    match (plan, was_plan) {
        (true, _) => Some(control::plan_overrides().into_iter().collect()),
        (false, true) => Some(
            control::turn_policy_overrides(&config.approval_policy, &config.sandbox)
                .into_iter()
                .collect(),
        ),
        (false, false) => None,
    }
}

impl Protocol for Codex {
    const TAKES_INPUT: bool = true;

    type Config = CodexConfig;
    type Translator = Translator;
    type State = State;

    fn open(
        _config: &CodexConfig,
        start: &StartSession,
        thread_id: Option<String>,
    ) -> (Translator, State) {
        let own = CodexState {
            thread_id,
            ..CodexState::default()
        };
        (Translator::new(start.session.clone()), State::new(own))
    }

    fn resume_id(state: &State) -> Option<&str> {
        state.thread_id.as_deref()
    }

    async fn write(process: &AgentProcess, message: &str) -> std::io::Result<()> {
        process.write_line(message).await
    }

    fn on_message(engine: &Engine<Codex>, line: &str) -> Result<Reply, String> {
        let completes_turn = serde_json::from_str::<LineMethod>(line)
            .ok()
            .and_then(|m| m.method)
            .is_some_and(|method| method == "turn/completed");
        let outputs = engine
            .translator()
            .on_line(line)
            .map_err(|e| e.to_string())?;
        let mut reply = Reply::default();
        let mut ended = false;
        let mut state = engine.state();
        for output in outputs {
            match output {
                Output::Signal(signal) => reply.signals.push(signal),
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
                        reply
                            .writes
                            .push(control::reply(&replaced.request_id, &answer));
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
                        reply.writes.push(replaced.cancelled());
                    }
                }
                Output::Reply { request_id, result } => {
                    reply.writes.push(control::reply(&request_id, &result));
                }
                Output::UnsupportedRequest { request_id, method } => {
                    reply.writes.push(control::error_reply(
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
        drop(state);
        if ended {
            // Input requests still waiting are answered as cancelled: the turn is over.
            let inputs = end_turn(&engine.state).inputs;
            reply
                .writes
                .extend(inputs.iter().map(ParkedInput::cancelled));
            forget_turn_details(engine);
        }
        Ok(reply)
    }

    fn fail_turn(engine: &Engine<Codex>, error: ErrorInfo) -> Vec<AgentSignal> {
        forget_turn_details(engine);
        engine.translator().fail_turn(error)
    }

    async fn send_turn(
        engine: &Arc<Engine<Codex>>,
        turn: TurnRequest,
    ) -> Result<(), ProviderError> {
        let process = ensure_process(engine).await?;
        let model = engine.chat.model(&turn, &engine.config.cli);
        let (thread_id, mut notices) = ensure_thread(engine, &process, model.as_deref()).await?;
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
            let mut translator = engine.translator();
            let listed = turn.listed_model(engine.chat.default_model.as_deref(), DEFAULT_MODEL);
            translator.set_advertised_model(listed);
            translator.begin_turn(&turn.turn_id);
        }
        begin_turn(&engine.state, &turn.turn_id);
        engine.state().images = images;
        engine.chat.notify(&turn.turn_id, notices).await;
        let mut params = control::turn_start_params(&thread_id, input);
        if let Some(object) = params.as_object_mut() {
            if let Some(model) = &model {
                object.insert("model".into(), json!(model));
            }
            let overrides = mode_overrides(engine, turn.mode).unwrap_or_default();
            object.extend(
                overrides
                    .into_iter()
                    .map(|(key, value)| (key.to_owned(), value)),
            );
        }
        let sent = |id: u64| engine.translator().turn_start_sent(&json!(id));
        let timeout = engine.config.request_timeout;
        match call(engine, &process, ("turn/start", params), timeout, sent).await {
            Ok(result) => {
                let app_turn = result.pointer("/turn/id").and_then(Value::as_str);
                let mut state = engine.state();
                let running = state.turns.turn.as_ref();
                if running.is_some_and(|running| running.id == turn.turn_id) {
                    state.app_turn_id = app_turn.map(str::to_owned);
                }
                Ok(())
            }
            Err(error) => {
                let signals = engine.translator().abort_turn();
                engine.chat.signals.send_all(signals).await;
                forget_turn_details(engine);
                let inputs = end_turn(&engine.state).inputs;
                let withdrawn = inputs.iter().map(ParkedInput::cancelled).collect();
                Engine::<Codex>::withdraw(&process, withdrawn).await;
                Err(error)
            }
        }
    }

    async fn answer_permission(
        engine: &Engine<Codex>,
        parked: Parked,
        process: Arc<AgentProcess>,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
        let approved = matches!(decision, PermissionDecision::Approve);
        let signals = engine.translator().record_decision(tool_call_id, approved);
        // Before the answer: Codex goes on (and may end the turn) only once it has it.
        engine.chat.signals.send_all(signals).await;
        let answer = control::approval_answer(parked.kind, approved);
        process
            .write_line(&control::reply(&parked.request_id, &answer))
            .await
            .map_err(|error| ProviderError::input_closed(error, String::new()))
    }

    async fn answer_input(
        _engine: &Engine<Codex>,
        parked: ParkedInput,
        process: Arc<AgentProcess>,
        response: InputResponse,
    ) -> Result<(), ProviderError> {
        let answer = control::input_answer(&parked.kind, &response);
        process
            .write_line(&control::reply(&parked.request_id, &answer))
            .await
            .map_err(|error| ProviderError::input_closed(error, String::new()))
    }

    async fn cancel(
        engine: &Engine<Codex>,
        _turn: &RunningTurn,
        ended: EndedOf<State>,
        process: Option<&AgentProcess>,
    ) -> bool {
        let app_turn = forget_turn_details(engine)
            .or_else(|| engine.translator().app_turn_id().map(str::to_owned));
        let thread = engine.state().thread_id.clone();
        let cleared = engine.translator().abort_turn();
        engine.chat.signals.send_all(cleared).await;
        let Some(process) = process else {
            return false;
        };
        // Approvals still waiting are declined, so the command does not run meanwhile; input
        // requests still waiting are cancelled.
        let mut withdrawn: Vec<String> = ended
            .permissions
            .into_iter()
            .map(Parked::declined)
            .collect();
        withdrawn.extend(ended.inputs.iter().map(ParkedInput::cancelled));
        Engine::<Codex>::withdraw(process, withdrawn).await;
        let (Some(thread), Some(app_turn)) = (thread, app_turn) else {
            return false;
        };
        let params = control::turn_interrupt_params(&thread, &app_turn);
        let grace = engine.config.cli.cancel_grace;
        let ask = call(engine, process, ("turn/interrupt", params), grace, |_| {});
        wind_down(&engine.state, grace, async { ask.await.is_ok() }).await
    }

    async fn dispose(
        engine: &Engine<Codex>,
        ended: EndedOf<State>,
        process: Option<&AgentProcess>,
    ) {
        forget_turn_details(engine);
        let cleared = engine.translator().abort_turn();
        engine.chat.signals.send_all(cleared).await;
        if let Some(process) = process {
            // Input requests still waiting are cancelled before the process goes.
            let withdrawn = ended.inputs.iter().map(ParkedInput::cancelled).collect();
            Engine::<Codex>::withdraw(process, withdrawn).await;
        }
    }
}

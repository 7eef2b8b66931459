//! One chat's conversation with `copilot --headless --stdio`, as the driver's [`Protocol`]: the
//! process, the Copilot session it follows, the protocol turn it runs, the host's requests
//! awaiting answers and the permission requests awaiting the host.
//!
//! The process starts on the first turn (`ping`); the Copilot session is created
//! (`session.create`) or, for a restored chat or after a restart of the process, resumed
//! (`session.resume`) before the first `session.send`. A reader task decodes the
//! `Content-Length` frames of stdout and feeds each message to the [`Translator`]; the state
//! changes of a message apply before its signals are sent. The reader never waits for an answer
//! of its own requests (it is the one that would deliver it).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agenthost_protocol::AgentSignal;
use agenthost_protocol::ahp_types::state::ErrorInfo;
use agenthost_provider_api::{
    AgentMode, InputResponse, PermissionDecision, ProviderError, StartSession, TurnRequest,
};
use agenthost_provider_process::AgentProcess;
use agenthost_provider_process::driver::{
    AgentState, Conversation, EndedOf, Engine, MessageSource, Protocol, ProviderState, Reply,
    RunningTurn, SourceError, begin_turn, create_home, end_turn, install_process, request,
    resolve_response, resume_or_start, spawn_agent, wind_down,
};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStdout;

use crate::attachments::attachments;
use crate::config::{CopilotConfig, DEFAULT_MODEL};
use crate::control;
use crate::framing::{FrameDecoder, encode};
use crate::provider::Copilot;
use crate::translate::{Output, Translator};

mod frames;
use frames::Frames;

/// The largest header section of a frame.
const MAX_HEADER_BYTES: usize = 8 * 1024;
/// The largest frame body (Copilot's system prompt and message snapshots are large).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// What the agent is told when the host declines a tool call without a reason.
pub const DECLINED_MESSAGE: &str = "The user declined this tool call.";
/// The client name Copilot records for sessions.
pub const CLIENT_NAME: &str = "agenthost";

/// Whether `id` can be a Copilot session id (it goes back to Copilot in `session.resume`).
pub fn is_valid_copilot_session_id(id: &str) -> bool {
    agenthost_provider_api::is_valid_resume_id(id)
}

/// Where a Copilot resume handle keeps the session id.
pub(crate) const RESUME: agenthost_provider_api::ResumeKey = agenthost_provider_api::ResumeKey {
    key: "sessionId",
    agent: "Copilot",
    what: "session id",
};

/// The state of a conversation of one chat with Copilot.
pub type CopilotConversation = Engine<Copilot>;

/// A conversation of one chat with Copilot: the host's `ProviderSession`.
pub type CopilotSession = Conversation<CopilotConversation>;

/// The state of a conversation: the driver's part and [`CopilotState`].
type State = AgentState<CopilotState, String, Infallible>;

/// What a Copilot conversation keeps of its own.
#[derive(Default)]
pub struct CopilotState {
    copilot_session: Option<String>,
    /// Whether the current process has the Copilot session loaded (created or resumed).
    session_loaded: bool,
    /// An abort interrupted running tools: Copilot leaves a command running in its shell, so
    /// the process is replaced to stop it.
    interrupted_tools: bool,
    /// A turn of this conversation ran in `plan` or `autopilot`.
    other_mode_used: bool,
}

impl ProviderState for CopilotState {
    fn process_gone(&mut self) {
        self.session_loaded = false;
    }
}

/// Just enough of a message to see the session events the driver itself acts on.
#[derive(Deserialize)]
struct EventKind {
    method: Option<String>,
    params: Option<EventParams>,
}

#[derive(Deserialize)]
struct EventParams {
    event: Option<EventType>,
}

#[derive(Deserialize)]
struct EventType {
    #[serde(rename = "type")]
    kind: Option<String>,
    data: Option<EventData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventData {
    tool_call_ids: Option<Vec<Value>>,
}

/// What a message means to the driver: `session.idle`, or `agent.interrupted` while tools ran.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Markers {
    idle: bool,
    interrupted_tools: bool,
}

fn markers(body: &str) -> Markers {
    let Ok(message) = serde_json::from_str::<EventKind>(body) else {
        return Markers::default();
    };
    if message.method.as_deref() != Some("session.event") {
        return Markers::default();
    }
    let Some(event) = message.params.and_then(|p| p.event) else {
        return Markers::default();
    };
    match event.kind.as_deref() {
        Some("session.idle") => Markers {
            idle: true,
            interrupted_tools: false,
        },
        Some("agent.interrupted") => Markers {
            idle: false,
            interrupted_tools: event
                .data
                .and_then(|d| d.tool_call_ids)
                .is_some_and(|ids| !ids.is_empty()),
        },
        _ => Markers::default(),
    }
}

/// Sends request `method` and waits up to `timeout` for its result; `sent` is told the
/// request's number before it goes out.
async fn call(
    engine: &Engine<Copilot>,
    process: &AgentProcess,
    (method, params): (&str, Value),
    timeout: Duration,
    sent: impl FnOnce(u64),
) -> Result<Value, ProviderError> {
    request(&engine.state, process, timeout, ("copilot", method), |id| {
        sent(id);
        encode(control::request(id, method, &params).as_bytes())
    })
    .await
}

/// The `permission.handle` request answering Copilot's permission request `request_id`, sent
/// without waiting for its answer (from the reader, which would deliver it).
fn permission_answer(
    engine: &Engine<Copilot>,
    session_id: &str,
    request_id: &str,
    (approved, feedback): (bool, Option<&str>),
) -> String {
    let params =
        control::permission_answer_params(session_id, request_id, approved, feedback, false);
    let id = engine.state().waiters.next_id();
    control::request(id, control::HANDLE_PERMISSION, &params)
}

/// The running CLI, started and pinged when there is none.
async fn ensure_process(
    engine: &Arc<Engine<Copilot>>,
    model: Option<&str>,
) -> Result<Arc<AgentProcess>, ProviderError> {
    if let Some((_, process)) = engine.current_process() {
        return Ok(process);
    }
    let config = &engine.config;
    create_home("COPILOT_HOME", config.copilot_home.as_deref())?;
    let cli = &config.cli;
    let (args, env, env_remove) = (
        config.args(),
        config.child_env(model),
        config.child_env_remove(),
    );
    let spawned = spawn_agent(&engine.chat.launch(cli, &args, &env, &env_remove))?;
    let process = spawned.process;
    let frames = Frames::new(spawned.stdout);
    let generation = install_process(&engine.state, Arc::downgrade(engine), &process, frames);
    let params = control::ping_params(CLIENT_NAME);
    match call(
        engine,
        &process,
        (control::PING, params),
        cli.start_timeout,
        |_| {},
    )
    .await
    {
        Ok(_) => Ok(process),
        Err(error) => {
            engine.stop_process(generation, false).await;
            let failure = match error {
                ProviderError::Protocol { message } | ProviderError::Refused { message } => message,
                other => other.to_string(),
            };
            Err(ProviderError::StartFailed {
                message: format!("copilot did not start: {failure}"),
            })
        }
    }
}

/// The Copilot session id, after creating or resuming the session in this process when
/// needed; also the notices for the user (a session that could not be resumed).
async fn ensure_session(
    engine: &Engine<Copilot>,
    process: &AgentProcess,
    model: Option<&str>,
) -> Result<(String, Vec<String>), ProviderError> {
    let known = {
        let state = engine.state();
        (state.copilot_session.clone(), state.session_loaded)
    };
    let cwd = engine.chat.working_directory.to_string_lossy().into_owned();
    let byok = engine.config.byok.as_ref();
    let timeout = engine.config.request_timeout;
    let cwd = cwd.as_str();
    let resume = |id: String| async move {
        let params = control::session_resume_params(&id, model, cwd, CLIENT_NAME, byok);
        let result = call(
            engine,
            process,
            (control::SESSION_RESUME, params),
            timeout,
            |_| {},
        )
        .await?;
        learn_workspace(engine, &result);
        Ok(id)
    };
    let create = || async move {
        let params = control::session_create_params(model, cwd, CLIENT_NAME, byok);
        let result = call(
            engine,
            process,
            (control::SESSION_CREATE, params),
            timeout,
            |_| {},
        )
        .await?;
        learn_workspace(engine, &result);
        result
            .get("sessionId")
            .and_then(Value::as_str)
            .filter(|id| is_valid_copilot_session_id(id))
            .map(str::to_owned)
            .ok_or_else(|| ProviderError::Protocol {
                message: format!("`session.create` answered without a valid session id: {result}"),
            })
    };
    let (id, notices) = resume_or_start("Copilot", known, resume, create).await?;
    engine.translator().set_copilot_session(&id);
    let mut state = engine.state();
    state.copilot_session = Some(id.clone());
    state.session_loaded = true;
    Ok((id, notices))
}

/// The session's state directory (`workspacePath` of a create / resume answer): the translator
/// auto-approves Copilot's own reads and writes there.
fn learn_workspace(engine: &Engine<Copilot>, result: &Value) {
    if let Some(dir) = result.get("workspacePath").and_then(Value::as_str) {
        engine.translator().set_session_state_dir(dir);
    }
}

/// Copilot's own agent mode for a turn in `mode`; `interactive` is said explicitly only after
/// another mode was used (Copilot's default otherwise).
fn agent_mode(engine: &Engine<Copilot>, mode: AgentMode) -> Option<&'static str> {
    let mut state = engine.state();
    let said = match mode {
        AgentMode::Interactive if !state.other_mode_used => None,
        mode => Some(mode.as_str()),
    };
    state.other_mode_used |= mode != AgentMode::Interactive;
    said
}

impl Protocol for Copilot {
    const TAKES_INPUT: bool = false;

    type Config = CopilotConfig;
    type Translator = Translator;
    type State = State;

    fn open(
        _config: &CopilotConfig,
        start: &StartSession,
        copilot_session: Option<String>,
    ) -> (Translator, State) {
        let mut translator = Translator::new(start.session.clone());
        if let Some(id) = &copilot_session {
            translator.set_copilot_session(id);
        }
        translator.set_working_directory(&start.working_directory.to_string_lossy());
        translator.set_temp_dir(&std::env::temp_dir().to_string_lossy());
        let own = CopilotState {
            copilot_session,
            ..CopilotState::default()
        };
        (translator, State::new(own))
    }

    fn resume_id(state: &State) -> Option<&str> {
        state.copilot_session.as_deref()
    }

    async fn write(process: &AgentProcess, message: &str) -> std::io::Result<()> {
        process.write_bytes(&encode(message.as_bytes())).await
    }

    fn on_message(engine: &Engine<Copilot>, body: &str) -> Result<Reply, String> {
        let markers = markers(body);
        let outputs = engine
            .translator()
            .on_message(body)
            .map_err(|e| e.to_string())?;
        let mut reply = Reply::default();
        let mut answers = Vec::new();
        let mut ended = false;
        let copilot_session = {
            let mut state = engine.state();
            for output in outputs {
                match output {
                    Output::Signal(signal) => reply.signals.push(signal),
                    Output::Response { id, result } => resolve_response(&mut *state, &id, result),
                    Output::PermissionRequest {
                        request_id,
                        tool_call_id,
                    } => {
                        // A newer request for the same call replaces the waiting one, which
                        // is rejected so Copilot never waits for it forever.
                        let replaced = state.turns.park_permission(tool_call_id, request_id);
                        if let Some(replaced) = replaced {
                            answers.push((replaced, false, Some(DECLINED_MESSAGE.to_owned())));
                        }
                    }
                    Output::AnswerPermission {
                        request_id,
                        approved,
                        feedback,
                    } => answers.push((request_id, approved, feedback)),
                    Output::UnsupportedRequest { request_id, method } => {
                        reply.writes.push(control::error_reply(
                            &request_id,
                            control::METHOD_NOT_FOUND,
                            &format!("agenthost does not support `{method}`"),
                        ));
                    }
                    Output::TurnEnded => ended = true,
                }
            }
            state.interrupted_tools |= markers.interrupted_tools;
            if markers.idle {
                state.waiters.wound_down();
            }
            state.copilot_session.clone()
        };
        if ended {
            end_turn(&engine.state);
        }
        if let Some(session_id) = copilot_session {
            for (request_id, approved, feedback) in answers {
                let answer = (approved, feedback.as_deref());
                reply
                    .writes
                    .push(permission_answer(engine, &session_id, &request_id, answer));
            }
        }
        Ok(reply)
    }

    fn fail_turn(engine: &Engine<Copilot>, error: ErrorInfo) -> Vec<AgentSignal> {
        engine.translator().fail_turn(error)
    }

    async fn send_turn(
        engine: &Arc<Engine<Copilot>>,
        turn: TurnRequest,
    ) -> Result<(), ProviderError> {
        let model = engine.chat.model(&turn, &engine.config.cli);
        let process = ensure_process(engine, model.as_deref()).await?;
        let (session_id, mut notices) = ensure_session(engine, &process, model.as_deref()).await?;
        let (items, skipped) = attachments(&turn.attachments, |path| std::fs::read_to_string(path));
        notices.extend(
            skipped
                .into_iter()
                .map(|note| format!("Not sent to Copilot: {note}")),
        );
        let mut prompt = turn.text.clone();
        for instruction in &turn.instructions {
            prompt.push_str("\n\n");
            prompt.push_str(instruction);
        }
        {
            let mut translator = engine.translator();
            translator
                .set_model(turn.listed_model(engine.chat.default_model.as_deref(), DEFAULT_MODEL));
            translator.begin_turn(&turn.turn_id);
        }
        begin_turn(&engine.state, &turn.turn_id);
        engine.chat.notify(&turn.turn_id, notices).await;
        let mode = agent_mode(engine, turn.mode);
        let params = control::session_send_params(&session_id, &prompt, items, mode);
        let sent = |id: u64| engine.translator().send_sent(&serde_json::json!(id));
        let timeout = engine.config.request_timeout;
        if let Err(error) = call(
            engine,
            &process,
            (control::SESSION_SEND, params),
            timeout,
            sent,
        )
        .await
        {
            engine.translator().abort_turn();
            end_turn(&engine.state);
            return Err(error);
        }
        Ok(())
    }

    async fn answer_permission(
        engine: &Engine<Copilot>,
        request_id: String,
        process: Arc<AgentProcess>,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
        let not_waiting = || ProviderError::NotRunning {
            message: format!("no tool call `{tool_call_id}` is waiting for permission"),
        };
        let session_id = engine
            .state()
            .copilot_session
            .clone()
            .ok_or_else(not_waiting)?;
        let (approved, feedback) = match &decision {
            PermissionDecision::Approve => (true, None),
            // Copilot calls the model again only when a rejection carries feedback.
            PermissionDecision::Deny { reason } => (
                false,
                Some(
                    reason
                        .clone()
                        .unwrap_or_else(|| DECLINED_MESSAGE.to_owned()),
                ),
            ),
        };
        engine.translator().record_decision(tool_call_id, approved);
        let timeout = engine.config.request_timeout;
        let mut answered = Err(not_waiting());
        // Older CLIs take other result kinds: the second attempt uses them.
        for legacy in [false, true] {
            let params = control::permission_answer_params(
                &session_id,
                &request_id,
                approved,
                feedback.as_deref(),
                legacy,
            );
            answered = call(
                engine,
                &process,
                (control::HANDLE_PERMISSION, params),
                timeout,
                |_| {},
            )
            .await;
            match &answered {
                Err(ProviderError::Refused { message }) => {
                    tracing::debug!(message, legacy, "copilot refused the permission answer");
                }
                _ => break,
            }
        }
        answered.map(|_| ())
    }

    async fn answer_input(
        _engine: &Engine<Copilot>,
        parked: Infallible,
        _process: Arc<AgentProcess>,
        _response: InputResponse,
    ) -> Result<(), ProviderError> {
        match parked {}
    }

    async fn cancel(
        engine: &Engine<Copilot>,
        _turn: &RunningTurn,
        ended: EndedOf<State>,
        process: Option<&AgentProcess>,
    ) -> bool {
        let session_id = engine.state().copilot_session.clone();
        engine.translator().abort_turn();
        let (Some(process), Some(session_id)) = (process, session_id) else {
            return false;
        };
        // Permission requests still waiting are rejected first.
        let rejected = (false, Some("The turn was cancelled."));
        let withdrawn = ended
            .permissions
            .iter()
            .map(|request_id| permission_answer(engine, &session_id, request_id, rejected))
            .collect();
        Engine::<Copilot>::withdraw(process, withdrawn).await;
        engine.state().interrupted_tools = false;
        let params = control::session_abort_params(&session_id);
        let grace = engine.config.cli.cancel_grace;
        let ask = call(
            engine,
            process,
            (control::SESSION_ABORT, params),
            grace,
            |_| {},
        );
        let done = wind_down(&engine.state, grace, async { ask.await.is_ok() }).await;
        // Copilot's abort leaves a command already running in its shell: only replacing the
        // process stops it (the next turn resumes the session).
        done && !std::mem::take(&mut engine.state().interrupted_tools)
    }

    async fn dispose(
        engine: &Engine<Copilot>,
        _ended: EndedOf<State>,
        _process: Option<&AgentProcess>,
    ) {
        engine.translator().abort_turn();
    }
}

//! One chat's conversation with `copilot --headless --stdio`: the process, the Copilot session
//! it follows, the protocol turn it runs, the host's requests awaiting answers and the
//! permission requests awaiting the host.
//!
//! The process starts on the first turn (`ping`); the Copilot session is created
//! (`session.create`) or, for a restored chat or after a restart of the process, resumed
//! (`session.resume`) before the first `session.send`. A reader task decodes the
//! `Content-Length` frames of stdout and feeds each message to the [`Translator`]; the state
//! changes of a message apply before its signals are sent. Starting, cancelling and disposing
//! take the `lifecycle` lock. The reader never waits for an answer of its own requests (it is
//! the one that would deliver it).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agenthost_provider_api::{
    AgentMode, PermissionDecision, ProviderError, StartSession, TurnRequest,
};
use agenthost_provider_process::AgentProcess;
use agenthost_provider_process::driver::{
    AgentConversation, AgentState, ChatBinding, Conversation, MessageHandler, MessageSource,
    ProviderState, SourceError, admit, begin_turn, cancel_turn, create_home, current_generation,
    current_process, dispose_state, end_turn, install_process, reap_process, request,
    resolve_response, spawn_agent, stop_process, take_permission, terminate, unreadable_output,
    wind_down,
};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStdout;

use crate::attachments::attachments;
use crate::config::{CopilotConfig, DEFAULT_MODEL};
use crate::control;
use crate::framing::{FrameDecoder, encode};
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

/// A conversation of one chat with Copilot: the host's `ProviderSession`.
pub type CopilotSession = Conversation<CopilotConversation>;

/// The state of a conversation with Copilot (see [`CopilotSession`]).
pub struct CopilotConversation {
    config: Arc<CopilotConfig>,
    chat: ChatBinding,
    translator: Mutex<Translator>,
    state: Mutex<State>,
}

type Answer = Result<Value, ProviderError>;

/// The conversation's state: the driver's part, the running turn with its permission requests
/// (Copilot's request ids, by tool call id), and [`Copilot`].
type State = AgentState<Copilot, String, Infallible>;

/// What the Copilot conversation keeps of its own.
#[derive(Default)]
struct Copilot {
    copilot_session: Option<String>,
    /// Whether the current process has the Copilot session loaded (created or resumed).
    session_loaded: bool,
    /// An abort interrupted running tools: Copilot leaves a command running in its shell, so
    /// the process is replaced to stop it.
    interrupted_tools: bool,
    /// A turn of this conversation ran in `plan` or `autopilot`.
    other_mode_used: bool,
}

impl ProviderState for Copilot {
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CopilotConversation {
    /// The process id of the running `copilot`, if one runs.
    pub fn process_id(&self) -> Option<i32> {
        current_process(&self.state).and_then(|(_, process)| process.pid())
    }

    /// The Copilot session this conversation follows, once known.
    pub fn copilot_session_id(&self) -> Option<String> {
        lock(&self.state).copilot_session.clone()
    }

    async fn write(&self, process: &AgentProcess, body: &str) -> std::io::Result<()> {
        process.write_bytes(&encode(body.as_bytes())).await
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
        request(&self.state, process, timeout, ("copilot", method), |id| {
            sent(id);
            encode(control::request(id, method, &params).as_bytes())
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

    /// Sends request `method` without waiting for its answer (from the reader).
    async fn notify_request(&self, process: &AgentProcess, method: &str, params: Value) {
        let id = lock(&self.state).waiters.next_id();
        if let Err(error) = self
            .write(process, &control::request(id, method, &params))
            .await
        {
            tracing::warn!(%error, method, "could not send a request to copilot");
        }
    }

    /// The running CLI, started and pinged when there is none.
    async fn ensure_process(
        self: &Arc<Self>,
        model: Option<&str>,
    ) -> Result<Arc<AgentProcess>, ProviderError> {
        if let Some((_, process)) = current_process(&self.state) {
            return Ok(process);
        }
        create_home("COPILOT_HOME", self.config.copilot_home.as_deref())?;
        let cli = &self.config.cli;
        let args = self.config.args();
        let env = self.config.child_env(model);
        let env_remove = self.config.child_env_remove();
        let spawned = spawn_agent(&self.chat.launch(cli, &args, &env, &env_remove))?;
        let process = spawned.process;
        let frames = Frames::new(spawned.stdout);
        let generation = install_process(&self.state, Arc::downgrade(self), &process, frames);
        let pinged = self
            .request(
                &process,
                control::PING,
                control::ping_params(CLIENT_NAME),
                cli.start_timeout,
            )
            .await;
        match pinged {
            Ok(_) => Ok(process),
            Err(error) => {
                self.stop_process(generation, false).await;
                let failure = match error {
                    ProviderError::Protocol { message } => message,
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
        &self,
        process: &AgentProcess,
        model: Option<&str>,
    ) -> Result<(String, Vec<String>), ProviderError> {
        let (loaded, known) = {
            let state = lock(&self.state);
            (state.session_loaded, state.copilot_session.clone())
        };
        if loaded && let Some(id) = known {
            return Ok((id, Vec::new()));
        }
        let cwd = self.chat.working_directory.to_string_lossy().into_owned();
        let byok = self.config.byok.as_ref();
        let mut notices = Vec::new();
        if let Some(id) = known {
            let resumed = self
                .request(
                    process,
                    control::SESSION_RESUME,
                    control::session_resume_params(&id, model, &cwd, CLIENT_NAME, byok),
                    self.config.request_timeout,
                )
                .await;
            match resumed {
                Ok(result) => {
                    self.learn_workspace(&result);
                    lock(&self.translator).set_copilot_session(&id);
                    lock(&self.state).session_loaded = true;
                    return Ok((id, notices));
                }
                Err(ProviderError::Protocol { message }) => {
                    tracing::warn!(message, "copilot could not resume its session");
                    notices.push(format!(
                        "Copilot could not resume its earlier conversation ({message}); this \
                         turn starts a new one."
                    ));
                }
                Err(error) => return Err(error),
            }
        }
        let result = self
            .request(
                process,
                control::SESSION_CREATE,
                control::session_create_params(model, &cwd, CLIENT_NAME, byok),
                self.config.request_timeout,
            )
            .await?;
        let id = result
            .get("sessionId")
            .and_then(Value::as_str)
            .filter(|id| is_valid_copilot_session_id(id))
            .ok_or_else(|| ProviderError::Protocol {
                message: format!("`session.create` answered without a valid session id: {result}"),
            })?
            .to_owned();
        self.learn_workspace(&result);
        lock(&self.translator).set_copilot_session(&id);
        {
            let mut state = lock(&self.state);
            state.copilot_session = Some(id.clone());
            state.session_loaded = true;
        }
        Ok((id, notices))
    }

    /// The session's state directory (`workspacePath` of a create / resume answer): the
    /// translator auto-approves Copilot's own reads and writes there.
    fn learn_workspace(&self, result: &Value) {
        if let Some(dir) = result.get("workspacePath").and_then(Value::as_str) {
            lock(&self.translator).set_session_state_dir(dir);
        }
    }

    /// Terminates process `generation` if it is still current; `from_reader` when its own
    /// reader calls (which must not abort itself).
    async fn stop_process(&self, generation: u64, from_reader: bool) {
        let grace = self.config.cli.kill_grace;
        stop_process(&self.state, generation, grace, from_reader, "copilot").await;
    }

    /// The running turn fails with `error` (the process is gone or being stopped).
    async fn fail_turn(&self, error: ProviderError) {
        let signals = lock(&self.translator).fail_turn(error.to_error_info());
        end_turn(&self.state);
        self.chat.signals.send_all(signals).await;
    }

    /// The CLI sent something unreadable: the turn fails and the process is stopped.
    async fn protocol_failure(&self, generation: u64, process: &AgentProcess, message: String) {
        self.fail_turn(unreadable_output(process, message).await)
            .await;
        self.stop_process(generation, true).await;
    }
}

impl MessageHandler for CopilotConversation {
    /// One message of process `generation`; `false` when reading must stop.
    async fn handle_message(&self, generation: u64, body: &str) -> bool {
        let Some(process) = current_generation(&self.state, generation) else {
            return false;
        };
        let markers = markers(body);
        let outcome = lock(&self.translator).on_message(body);
        let outputs = match outcome {
            Ok(outputs) => outputs,
            Err(error) => {
                self.protocol_failure(generation, &process, error.to_string())
                    .await;
                return false;
            }
        };
        let mut signals = Vec::new();
        let mut writes = Vec::new();
        let mut answers = Vec::new();
        let mut ended = false;
        let copilot_session = {
            let mut state = lock(&self.state);
            for output in outputs {
                match output {
                    Output::Signal(signal) => signals.push(signal),
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
                        writes.push(control::error_reply(
                            &request_id,
                            control::METHOD_NOT_FOUND,
                            &format!("agenthost does not support `{method}`"),
                        ));
                    }
                    Output::TurnEnded => ended = true,
                }
            }
            if markers.interrupted_tools {
                state.interrupted_tools = true;
            }
            if markers.idle {
                state.waiters.wound_down();
            }
            state.copilot_session.clone()
        };
        if ended {
            end_turn(&self.state);
        }
        for write in writes {
            if let Err(error) = self.write(&process, &write).await {
                tracing::warn!(%error, "could not answer a copilot request");
            }
        }
        if let Some(session_id) = copilot_session {
            for (request_id, approved, feedback) in answers {
                let params = control::permission_answer_params(
                    &session_id,
                    &request_id,
                    approved,
                    feedback.as_deref(),
                    false,
                );
                self.notify_request(&process, control::HANDLE_PERMISSION, params)
                    .await;
            }
        }
        self.chat.signals.send_all(signals).await;
        true
    }

    /// Process `generation`'s output ended: reap it and fail the turn it was running.
    async fn process_ended(&self, generation: u64, read_error: Option<String>) {
        let grace = self.config.cli.kill_grace;
        let reaped = reap_process(&self.state, generation, grace, read_error, "copilot").await;
        if let Some(error) = reaped {
            self.fail_turn(error).await;
        }
    }

    async fn unreadable(&self, generation: u64, error: SourceError) {
        if let Some((current, process)) = current_process(&self.state)
            && current == generation
        {
            self.protocol_failure(generation, &process, error.to_string())
                .await;
        }
    }
}

impl AgentConversation for CopilotConversation {
    type Config = CopilotConfig;

    fn open(
        config: Arc<CopilotConfig>,
        start: StartSession,
        copilot_session: Option<String>,
    ) -> Self {
        let mut translator = Translator::new(start.session.clone());
        if let Some(id) = &copilot_session {
            translator.set_copilot_session(id);
        }
        translator.set_working_directory(&start.working_directory.to_string_lossy());
        translator.set_temp_dir(&std::env::temp_dir().to_string_lossy());
        Self {
            config,
            translator: Mutex::new(translator),
            state: Mutex::new(State::new(Copilot {
                copilot_session,
                ..Copilot::default()
            })),
            chat: ChatBinding::new(start),
        }
    }

    async fn send_turn(self: &Arc<Self>, turn: TurnRequest) -> Result<(), ProviderError> {
        let _lifecycle = self.chat.lifecycle.lock().await;
        admit(&self.state, "Copilot", &turn.turn_id)?;
        let model = self.chat.model(&turn, &self.config.cli);
        let process = self.ensure_process(model.as_deref()).await?;
        let (session_id, mut notices) = self.ensure_session(&process, model.as_deref()).await?;
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
            let mut translator = lock(&self.translator);
            translator
                .set_model(turn.listed_model(self.chat.default_model.as_deref(), DEFAULT_MODEL));
            translator.begin_turn(&turn.turn_id);
        }
        begin_turn(&self.state, &turn.turn_id);
        self.chat.notify(&turn.turn_id, notices).await;
        // Copilot's own agent mode for this message; `interactive` is said explicitly only
        // after another mode was used (Copilot's default otherwise).
        let agent_mode = {
            let mut state = lock(&self.state);
            let mode = turn.mode;
            let said = match mode {
                AgentMode::Interactive if !state.other_mode_used => None,
                mode => Some(mode.as_str()),
            };
            state.other_mode_used |= mode != AgentMode::Interactive;
            said
        };
        let params = control::session_send_params(&session_id, &prompt, items, agent_mode);
        let sent = |id: u64| lock(&self.translator).send_sent(&serde_json::json!(id));
        let timeout = self.config.request_timeout;
        let answered = self
            .call(&process, (control::SESSION_SEND, params), timeout, sent)
            .await;
        if let Err(error) = answered {
            lock(&self.translator).abort_turn();
            end_turn(&self.state);
            return Err(error);
        }
        Ok(())
    }

    async fn respond_to_permission(
        &self,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
        let (request_id, process) = take_permission(&self.state, tool_call_id)?;
        let session_id = self
            .copilot_session_id()
            .ok_or_else(|| ProviderError::NotRunning {
                message: format!("no tool call `{tool_call_id}` is waiting for permission"),
            })?;
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
        lock(&self.translator).record_decision(tool_call_id, approved);
        let method = control::HANDLE_PERMISSION;
        let mut answered = Err(ProviderError::NotRunning {
            message: format!("no tool call `{tool_call_id}` is waiting for permission"),
        });
        // Older CLIs take other result kinds: the second attempt uses them.
        for legacy in [false, true] {
            let params = control::permission_answer_params(
                &session_id,
                &request_id,
                approved,
                feedback.as_deref(),
                legacy,
            );
            answered = self
                .request(&process, method, params, self.config.request_timeout)
                .await;
            match &answered {
                Err(ProviderError::Protocol { message }) => {
                    tracing::debug!(message, legacy, "copilot refused the permission answer");
                }
                _ => break,
            }
        }
        answered.map(|_| ())
    }

    async fn cancel(&self, turn_id: &str) -> Result<(), ProviderError> {
        let _lifecycle = self.chat.lifecycle.lock().await;
        let (turn, ended) = cancel_turn(&self.state, turn_id)?;
        let session_id = self.copilot_session_id();
        lock(&self.translator).abort_turn();
        if let Some((generation, process)) = current_process(&self.state) {
            let aborted = match session_id {
                Some(session_id) => {
                    // Permission requests still waiting are rejected first.
                    for request_id in ended.permissions {
                        let params = control::permission_answer_params(
                            &session_id,
                            &request_id,
                            false,
                            Some("The turn was cancelled."),
                            false,
                        );
                        self.notify_request(&process, control::HANDLE_PERMISSION, params)
                            .await;
                    }
                    lock(&self.state).interrupted_tools = false;
                    let params = control::session_abort_params(&session_id);
                    let grace = self.config.cli.cancel_grace;
                    let ask = self.request(&process, control::SESSION_ABORT, params, grace);
                    let done = wind_down(&self.state, grace, async { ask.await.is_ok() }).await;
                    // Copilot's abort leaves a command already running in its shell: only
                    // replacing the process stops it (the next turn resumes the session).
                    done && !std::mem::take(&mut lock(&self.state).interrupted_tools)
                }
                None => false,
            };
            if !aborted {
                tracing::debug!("copilot did not stop its work: terminating it");
                self.stop_process(generation, false).await;
            }
        }
        self.chat.cancelled(&turn).await;
        Ok(())
    }

    fn resume_handle(&self) -> Option<Value> {
        self.copilot_session_id().map(|id| RESUME.handle(&id))
    }

    async fn dispose(&self) {
        let _lifecycle = self.chat.lifecycle.lock().await;
        let (live, _) = dispose_state(&self.state);
        lock(&self.translator).abort_turn();
        if let Some(live) = live {
            terminate(&self.state, live, self.config.cli.kill_grace, "copilot").await;
        }
    }
}

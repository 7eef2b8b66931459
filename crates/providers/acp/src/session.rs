//! One chat's conversation with an ACP agent, as the driver's [`Protocol`]: the process, the ACP
//! session it follows, the protocol turn it runs, the host's requests awaiting answers and the
//! permission requests awaiting the host.
//!
//! The process starts on the first turn (`initialize` within `start_timeout`, advertising no
//! file system and no terminal); the ACP session is created (`session/new`) or, for a restored
//! chat or after the process was replaced, resumed — `session/resume` when the agent offers it,
//! else `session/load` with the replayed history dropped (the host has it) — before the first
//! `session/prompt`. The prompt's answer ends the turn. A reader task feeds each stdout line to
//! the [`Translator`]; the state changes of a line apply before its signals are sent.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agenthost_protocol::AgentSignal;
use agenthost_protocol::ahp_types::state::{ErrorInfo, Turn};
use agenthost_provider_api::history::transcript;
use agenthost_provider_api::{
    AgentMode, DEFAULT_MODEL, InputResponse, PermissionDecision, ProviderError, ResumeKey,
    StartSession, TurnRequest, is_valid_resume_id,
};
use agenthost_provider_process::driver::{
    AgentState, Conversation, EndedOf, Engine, Protocol, ProviderState, Reply, RunningTurn,
    begin_turn, end_turn, install_process, request, resolve_response, resume_or_start, spawn_agent,
    wind_down,
};
use agenthost_provider_process::{AgentProcess, Launch, LineReader};
use serde_json::{Value, json};

use crate::attachments::{PromptCapabilities, prompt_blocks};
use crate::config::{AcpAgentConfig, WorkingDirectory};
use crate::provider::Acp;
use crate::translate::{Output, Translator};
use crate::wire::{self, schema};
use crate::wire::{notification, permission_answer, request as rpc_request};

/// The longest line the agent may write (its tool outputs can be large).
const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

/// The ACP protocol version the host speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// Where an ACP resume handle keeps the session id.
pub(crate) const RESUME: ResumeKey = ResumeKey {
    key: "sessionId",
    agent: "The ACP agent",
    what: "session id",
};

/// A conversation of one chat with an ACP agent.
pub type AcpConversation = Engine<Acp>;

/// A conversation of one chat with an ACP agent: the host's `ProviderSession`.
pub type AcpSession = Conversation<AcpConversation>;

/// A parked permission request: the agent's request id and the options it offered.
type Parked = (Value, Vec<schema::PermissionOption>);

/// The answers withdrawing `parked` permission requests (`cancelled`).
fn withdrawals(parked: &[Parked]) -> Vec<String> {
    parked
        .iter()
        .map(|(id, options)| permission_answer(id, options, None))
        .collect()
}

/// The state of a conversation: the driver's part and [`AcpState`].
type State = AgentState<AcpState, Parked, Infallible>;

/// What the agent said of itself in `initialize`.
#[derive(Debug, Clone, Copy, Default)]
struct Capabilities {
    load: bool,
    resume: bool,
    prompt: PromptCapabilities,
}

/// What an ACP conversation keeps of its own.
#[derive(Default)]
pub struct AcpState {
    session_id: Option<String>,
    /// Whether the current process has the session loaded (created, loaded or resumed).
    loaded: bool,
    capabilities: Option<Capabilities>,
    /// A turn of this conversation ran in another mode than interactive.
    other_mode_used: bool,
    /// The chat was told its agent cannot resume conversations.
    told_no_resume: bool,
    /// The chat's turns before the host restarted: given to a new conversation as text when
    /// the agent cannot resume the one it had (once).
    history: Vec<Turn>,
}

/// Gives `engine` the chat's turns from before the host restarted (see [`AcpState`]).
pub(crate) fn set_history(engine: &Engine<Acp>, history: Vec<Turn>) {
    engine.state().history = history;
}

/// What goes before the first prompt of a new conversation that replaces one the agent could
/// not resume: the earlier turns, marked as such.
fn carried_history(history: &[Turn]) -> Option<String> {
    (!history.is_empty()).then(|| {
        format!(
            "<conversation-history>\nThe host restarted and could not resume your earlier \
             conversation with the user; here it is, for context:\n\n{}\n\
             </conversation-history>",
            transcript(history)
        )
    })
}

impl ProviderState for AcpState {
    fn process_gone(&mut self) {
        self.loaded = false;
        self.capabilities = None;
    }
}

/// Sends request `method` and waits up to `timeout` for its result.
async fn call(
    engine: &Engine<Acp>,
    process: &AgentProcess,
    (method, params): (&str, Value),
    timeout: Duration,
) -> Result<Value, ProviderError> {
    let agent = engine.config.provider_id();
    request(&engine.state, process, timeout, (&agent, method), |id| {
        let mut line = rpc_request(id, method, &params);
        line.push('\n');
        line.into_bytes()
    })
    .await
    .map_err(|error| match error {
        ProviderError::Refused { message } => ProviderError::Refused {
            message: format!("`{method}`: {message}"),
        },
        other => other,
    })
}

fn protocol_error(message: String) -> ProviderError {
    ProviderError::Protocol { message }
}

/// The running agent, started and initialized when there is none.
pub(crate) async fn ensure_process(
    engine: &Arc<Engine<Acp>>,
) -> Result<Arc<AgentProcess>, ProviderError> {
    if let Some((_, process)) = engine.current_process() {
        return Ok(process);
    }
    let config = &engine.config;
    let cli = &config.cli;
    let working_directory = match &config.working_directory {
        WorkingDirectory::Session => engine.chat.working_directory.as_path(),
        WorkingDirectory::Fixed(dir) => dir.as_path(),
    };
    let spawned = spawn_agent(&Launch {
        binary: &cli.binary,
        args: &cli.extra_args,
        working_directory,
        env: &cli.env,
        env_remove: &cli.env_remove,
    })?;
    let process = spawned.process;
    let lines = LineReader::new(spawned.stdout, MAX_LINE_BYTES);
    let generation = install_process(&engine.state, Arc::downgrade(engine), &process, lines);
    let params = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {
            "fs": { "readTextFile": false, "writeTextFile": false },
            "terminal": false,
        },
        "clientInfo": { "name": "agenthost", "version": env!("CARGO_PKG_VERSION") },
    });
    let started = match call(engine, &process, ("initialize", params), cli.start_timeout).await {
        Ok(result) => initialized(engine, result),
        Err(error) => Err(match error {
            ProviderError::Protocol { message } | ProviderError::Refused { message } => message,
            other => other.to_string(),
        }),
    };
    match started {
        Ok(()) => Ok(process),
        Err(failure) => {
            engine.stop_process(generation, false).await;
            Err(ProviderError::StartFailed {
                message: format!("{} did not start: {failure}", config.provider_id()),
            })
        }
    }
}

/// Reads the `initialize` answer: the protocol version must be the host's; the capabilities
/// and sign-in methods are kept.
fn initialized(engine: &Engine<Acp>, result: Value) -> Result<(), String> {
    let answer = wire::initialize_response(result).map_err(|e| e.0)?;
    let version = serde_json::to_value(answer.protocol_version).unwrap_or_default();
    if version != json!(PROTOCOL_VERSION) {
        return Err(format!(
            "it speaks ACP protocol version {version}; agenthost speaks version {PROTOCOL_VERSION}"
        ));
    }
    let agent = &answer.agent_capabilities;
    let capabilities = Capabilities {
        load: agent.load_session,
        resume: agent.session_capabilities.resume.is_some(),
        prompt: PromptCapabilities {
            image: agent.prompt_capabilities.image,
            embedded_context: agent.prompt_capabilities.embedded_context,
        },
    };
    let methods = answer
        .auth_methods
        .iter()
        .map(auth_method_text)
        .collect::<Vec<_>>();
    engine.translator().set_auth_methods(methods);
    engine.state().capabilities = Some(capabilities);
    Ok(())
}

fn auth_method_text(method: &schema::AuthMethod) -> String {
    let value = serde_json::to_value(method).unwrap_or_default();
    let field = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    match (field("name"), field("description")) {
        (Some(name), Some(description)) => format!("{name}: {description}"),
        (Some(name), None) => name,
        _ => method.id().0.to_string(),
    }
}

/// What [`ensure_session`] found: the ACP session id, notices for the user, and the earlier
/// turns as text when a new conversation replaces one the agent could not resume.
pub(crate) type Session = (String, Vec<String>, Option<String>);

/// The ACP session, after creating, resuming or loading it in this process when needed.
pub(crate) async fn ensure_session(
    engine: &Engine<Acp>,
    process: &AgentProcess,
) -> Result<Session, ProviderError> {
    let (mut known, loaded, capabilities, told) = {
        let state = engine.state();
        (
            state.session_id.clone(),
            state.loaded,
            state.capabilities.unwrap_or_default(),
            state.told_no_resume,
        )
    };
    let mut notices = Vec::new();
    let earlier = known.clone().filter(|_| !loaded);
    let carried = carried_history(&engine.state().history);
    if known.is_some() && !loaded && !capabilities.load && !capabilities.resume {
        // Nothing to resume with: a new conversation, said once.
        known = None;
        if !told {
            engine.state().told_no_resume = true;
            let given = if carried.is_some() {
                "given the earlier turns as text"
            } else {
                "without the earlier turns"
            };
            notices.push(format!(
                "{} can neither load nor resume a conversation: this turn starts a new one, \
                 {given}.",
                engine.config.provider_id()
            ));
        }
    }
    let cwd = engine.chat.working_directory.to_string_lossy().into_owned();
    let timeout = engine.config.request_timeout;
    let cwd = cwd.as_str();
    let resume = |id: String| async move {
        let params = json!({ "sessionId": id, "cwd": cwd, "mcpServers": [] });
        let result = if capabilities.resume {
            call(engine, process, ("session/resume", params), timeout).await
        } else {
            engine.translator().set_replaying(true);
            let loaded = call(engine, process, ("session/load", params), timeout).await;
            engine.translator().set_replaying(false);
            loaded
        }?;
        learn_options(engine, &result);
        Ok(id)
    };
    let create = || async move {
        let params = json!({ "cwd": cwd, "mcpServers": [] });
        let result = call(engine, process, ("session/new", params), timeout).await?;
        let answer = wire::new_session_response(result.clone()).map_err(|e| protocol_error(e.0))?;
        let id = answer.session_id.0.to_string();
        if !is_valid_resume_id(&id) {
            return Err(protocol_error(format!(
                "`session/new` answered with an unusable session id: {result}"
            )));
        }
        engine
            .translator()
            .set_config_options(answer.config_options.unwrap_or_default());
        Ok(id)
    };
    let agent = engine.config.provider_id();
    let (id, resumed_notices) = resume_or_start(&agent, (known, loaded), resume, create).await?;
    let refused = !resumed_notices.is_empty();
    notices.extend(resumed_notices);
    engine.translator().set_session(&id);
    let mut state = engine.state();
    state.session_id = Some(id.clone());
    state.loaded = true;
    // The earlier conversation is lost: the new one gets the turns from before the restart,
    // once.
    let lost = earlier.is_some_and(|earlier| earlier != id);
    let carried = carried.filter(|_| lost);
    if carried.is_some() {
        state.history.clear();
        if refused {
            notices.push("The earlier turns go to the new conversation as text.".to_owned());
        }
    }
    Ok((id, notices, carried))
}

/// Keeps the config options of a `session/load` or `session/resume` answer.
fn learn_options(engine: &Engine<Acp>, result: &Value) {
    if let Some(options) = result
        .get("configOptions")
        .cloned()
        .and_then(|options| serde_json::from_value(options).ok())
    {
        engine.translator().set_config_options(options);
    }
}

/// A select option: its id, its current value and its values with their names.
type Select = (String, String, Vec<(String, String)>);

/// The select option of `category`.
fn select_option(
    options: &[schema::SessionConfigOption],
    category: &schema::SessionConfigOptionCategory,
) -> Option<Select> {
    options.iter().find_map(|option| {
        if option.category.as_ref() != Some(category) {
            return None;
        }
        let schema::SessionConfigKind::Select(select) = &option.kind else {
            return None;
        };
        let values = match &select.options {
            schema::SessionConfigSelectOptions::Ungrouped(values) => values.clone(),
            schema::SessionConfigSelectOptions::Grouped(groups) => groups
                .iter()
                .flat_map(|group| group.options.clone())
                .collect(),
            _ => Vec::new(),
        };
        Some((
            option.id.0.to_string(),
            select.current_value.0.to_string(),
            values
                .into_iter()
                .map(|value| (value.value.0.to_string(), value.name))
                .collect(),
        ))
    })
}

/// The models an agent offers: the values of its config option of category `model`.
pub fn offered_models(options: &[schema::SessionConfigOption]) -> Vec<(String, String)> {
    select_option(options, &schema::SessionConfigOptionCategory::Model)
        .map(|(_, _, values)| values)
        .unwrap_or_default()
}

/// Sets the session's option of `category` to the value `pick` chooses among the offered ones,
/// unless it has it already; a notice when nothing offered fits (`wanted` names it).
async fn set_option(
    engine: &Engine<Acp>,
    process: &AgentProcess,
    session_id: &str,
    category: schema::SessionConfigOptionCategory,
    (wanted, pick): (&str, impl Fn(&str, &str) -> bool),
) -> Result<Option<String>, ProviderError> {
    let option = select_option(engine.translator().config_options(), &category);
    let Some((config_id, current, values)) = option else {
        return Ok(Some(format!(
            "{} offers no choice of {wanted}: it runs with its own.",
            engine.config.provider_id()
        )));
    };
    let Some((value, _)) = values.iter().find(|(value, name)| pick(value, name)) else {
        return Ok(Some(format!(
            "{} does not offer {wanted}: it runs with `{current}`.",
            engine.config.provider_id()
        )));
    };
    if *value == current {
        return Ok(None);
    }
    let params = json!({ "sessionId": session_id, "configId": config_id, "value": value });
    let timeout = engine.config.request_timeout;
    let result = call(
        engine,
        process,
        ("session/set_config_option", params),
        timeout,
    )
    .await?;
    learn_options(engine, &result);
    Ok(None)
}

/// Whether an agent's mode (its value and name) is the host's `mode`.
fn is_mode(mode: AgentMode, value: &str, name: &str) -> bool {
    let words = match mode {
        AgentMode::Interactive => &["agent", "default", "interactive", "ask"][..],
        AgentMode::Plan => &["plan"][..],
        AgentMode::Autopilot => &["autopilot", "auto", "yolo", "full-access", "bypass"][..],
    };
    let last = |text: &str| {
        text.rsplit(['#', '/', ':'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    let (value, name) = (last(value), name.to_ascii_lowercase());
    words.iter().any(|word| value == *word || name == *word)
}

impl Protocol for Acp {
    const TAKES_INPUT: bool = false;

    type Config = AcpAgentConfig;
    type Translator = Translator;
    type State = State;

    fn open(
        _config: &AcpAgentConfig,
        start: &StartSession,
        session_id: Option<String>,
    ) -> (Translator, State) {
        let mut translator = Translator::new(start.session.clone());
        if let Some(id) = &session_id {
            translator.set_session(id);
        }
        let own = AcpState {
            session_id,
            ..AcpState::default()
        };
        (translator, State::new(own))
    }

    fn resume_id(state: &State) -> Option<&str> {
        state.session_id.as_deref()
    }

    async fn write(process: &AgentProcess, message: &str) -> std::io::Result<()> {
        process.write_line(message).await
    }

    fn on_message(engine: &Engine<Acp>, line: &str) -> Result<Reply, String> {
        let outputs = engine
            .translator()
            .on_line(line)
            .map_err(|e| e.to_string())?;
        let mut reply = Reply::default();
        let mut ended = false;
        {
            let mut state = engine.state();
            for output in outputs {
                match output {
                    Output::Signal(signal) => reply.signals.push(signal),
                    Output::Response { id, result } => resolve_response(&mut *state, &id, result),
                    Output::PermissionRequest {
                        request_id,
                        tool_call_id,
                        options,
                    } => {
                        // A newer request for the same call replaces the waiting one, which is
                        // withdrawn so the agent never waits for it forever.
                        let parked = (request_id, options);
                        if let Some((id, options)) =
                            state.turns.park_permission(tool_call_id, parked)
                        {
                            reply.writes.push(permission_answer(&id, &options, None));
                        }
                    }
                    Output::Write(message) => reply.writes.push(message),
                    Output::TurnEnded => ended = true,
                }
            }
            if ended {
                state.waiters.wound_down();
            }
        }
        if ended {
            // Requests the agent left waiting when it ended the turn are withdrawn.
            let left = end_turn(&engine.state);
            reply.writes.extend(withdrawals(&left.permissions));
        }
        Ok(reply)
    }

    fn fail_turn(engine: &Engine<Acp>, error: ErrorInfo) -> Vec<AgentSignal> {
        engine.translator().fail_turn(error)
    }

    async fn send_turn(engine: &Arc<Engine<Acp>>, turn: TurnRequest) -> Result<(), ProviderError> {
        let process = ensure_process(engine).await?;
        let (session_id, mut notices, carried) = ensure_session(engine, &process).await?;
        if let Some(model) = engine.chat.model(&turn, &engine.config.cli) {
            let wanted = format!("model `{model}`");
            let pick = |value: &str, _: &str| value == model;
            let category = schema::SessionConfigOptionCategory::Model;
            notices.extend(
                set_option(engine, &process, &session_id, category, (&wanted, pick)).await?,
            );
        }
        let change_mode = {
            let mut state = engine.state();
            let change = turn.mode != AgentMode::Interactive || state.other_mode_used;
            state.other_mode_used |= turn.mode != AgentMode::Interactive;
            change
        };
        if change_mode {
            let wanted = format!("a `{}` mode", turn.mode.as_str());
            let pick = |value: &str, name: &str| is_mode(turn.mode, value, name);
            let category = schema::SessionConfigOptionCategory::Mode;
            notices.extend(
                set_option(engine, &process, &session_id, category, (&wanted, pick)).await?,
            );
        }
        let capabilities = engine.state().capabilities.unwrap_or_default();
        let (prompt, skipped) = prompt_blocks(
            &turn.text,
            &turn.instructions,
            &turn.attachments,
            capabilities.prompt,
        );
        notices.extend(skipped.into_iter().map(|note| format!("Not sent: {note}")));
        let prompt: Vec<Value> = carried
            .map(|text| json!({ "type": "text", "text": text }))
            .into_iter()
            .chain(prompt)
            .collect();
        {
            let mut translator = engine.translator();
            // Without a choice the turn runs on the agent's current model, when it names one.
            let model_option = &schema::SessionConfigOptionCategory::Model;
            let current = select_option(translator.config_options(), model_option)
                .map(|(_, current, _)| current);
            let fallback = current.as_deref().unwrap_or(DEFAULT_MODEL);
            translator.set_model(turn.listed_model(engine.chat.default_model.as_deref(), fallback));
            translator.begin_turn(&turn.turn_id);
        }
        begin_turn(&engine.state, &turn.turn_id);
        engine.chat.notify(&turn.turn_id, notices).await;
        // The prompt's answer ends the turn through the translator, not through a waiter.
        let id = engine.state().waiters.next_id();
        engine.translator().prompt_sent(Value::from(id));
        let params = json!({ "sessionId": session_id, "prompt": prompt });
        if let Err(error) = Self::write(&process, &rpc_request(id, "session/prompt", &params)).await
        {
            engine.translator().abort_turn();
            end_turn(&engine.state);
            return Err(ProviderError::input_closed(
                error,
                process.stderr_tail(Duration::ZERO).await,
            ));
        }
        Ok(())
    }

    async fn answer_permission(
        engine: &Engine<Acp>,
        (request_id, options): Parked,
        process: Arc<AgentProcess>,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
        let approved = matches!(decision, PermissionDecision::Approve);
        let signals = engine.translator().record_decision(tool_call_id, approved);
        let answer = permission_answer(&request_id, &options, Some(approved));
        if let Err(error) = Self::write(&process, &answer).await {
            return Err(ProviderError::input_closed(
                error,
                process.stderr_tail(Duration::ZERO).await,
            ));
        }
        engine.chat.signals.send_all(signals).await;
        Ok(())
    }

    async fn answer_input(
        _engine: &Engine<Acp>,
        parked: Infallible,
        _process: Arc<AgentProcess>,
        _response: InputResponse,
    ) -> Result<(), ProviderError> {
        match parked {}
    }

    async fn cancel(
        engine: &Engine<Acp>,
        _turn: &RunningTurn,
        ended: EndedOf<State>,
        process: Option<&AgentProcess>,
    ) -> bool {
        engine.translator().abort_turn();
        let session_id = engine.state().session_id.clone();
        let (Some(process), Some(session_id)) = (process, session_id) else {
            return false;
        };
        // Permission requests still waiting are answered `cancelled` first.
        Engine::<Acp>::withdraw(process, withdrawals(&ended.permissions)).await;
        let grace = engine.config.cli.cancel_grace;
        let cancel = notification("session/cancel", &json!({ "sessionId": session_id }));
        // The prompt's answer (whatever its stop reason) says the agent wound down.
        wind_down(&engine.state, grace, async {
            Self::write(process, &cancel).await.is_ok()
        })
        .await
    }

    async fn dispose(engine: &Engine<Acp>, ended: EndedOf<State>, process: Option<&AgentProcess>) {
        engine.translator().abort_turn();
        if let Some(process) = process {
            Engine::<Acp>::withdraw(process, withdrawals(&ended.permissions)).await;
        }
    }
}

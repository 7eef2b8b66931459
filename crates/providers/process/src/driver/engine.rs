//! [`Engine`]: one conversation of one chat with an agent CLI, written once over a
//! [`Protocol`] — what a provider says about its agent's wire protocol and nothing else.
//!
//! The engine owns the order of things: a turn is admitted under the lifecycle lock before the
//! protocol starts it; a message's state changes apply (under the state lock) before its signals
//! are sent and its answers written; unreadable output fails the turn and stops the process; a
//! process that ends fails its turn; a cancel takes the turn and its parked requests out before
//! the protocol winds the agent down, and terminates the process when it does not; a dispose
//! marks the conversation, lets the protocol withdraw what waits, and terminates the process.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agenthost_protocol::AgentSignal;
use agenthost_protocol::ahp_types::state::ErrorInfo;
use agenthost_provider_api::{
    AgentConfig, InputResponse, PermissionDecision, ProviderError, StartSession, TurnRequest,
};
use serde_json::Value;

use crate::AgentProcess;
use crate::driver::{
    AgentCli, AgentConversation, ChatBinding, EndedOf, MessageHandler, RunningTurn, SourceError,
    TurnState, admit, cancel_turn, current_generation, current_process, dispose_state, end_turn,
    reap_process, stop_process, take_input, take_permission, terminate, unreadable_output,
};

/// What one message of the agent asks for once applied: signals for the host and messages to
/// write back to the agent (answers to its requests), in order.
#[derive(Debug, Default)]
pub struct Reply {
    /// Signals to send, after the state changes of the message applied.
    pub signals: Vec<AgentSignal>,
    /// Messages to write to the agent (each written with [`Protocol::write`]).
    pub writes: Vec<String>,
}

/// An agent CLI's protocol as the [`Engine`] drives it: its types, how a conversation opens,
/// how a message of the agent applies, how a turn starts, how the host's answers go back, how a
/// cancelled turn winds down and what a dispose withdraws. The agent's name in messages is its
/// resume key's [`agent`](agenthost_provider_api::ResumeKey::agent), its command in logs its
/// provider [`ID`](AgentCli::ID).
pub trait Protocol: AgentCli<Conversation = Engine<Self>> + Sized {
    /// The provider's settings.
    type Config: AgentConfig;
    /// Turns the agent's messages into signals and requests.
    type Translator: Send;
    /// The conversation's state: usually an [`AgentState`](crate::driver::AgentState) over the provider's own part, its
    /// parked requests and its request ids.
    type State: TurnState + Send;

    /// The translator and state of a conversation for `start`; `resume` is the agent's id of
    /// an earlier conversation to continue.
    fn open(
        config: &Self::Config,
        start: &StartSession,
        resume: Option<String>,
    ) -> (Self::Translator, Self::State);

    /// The agent's id of the conversation, once known: what the host persists (under
    /// [`AgentCli::RESUME`]) to resume it.
    fn resume_id(state: &Self::State) -> Option<&str>;

    /// Writes one message to the agent in its framing.
    fn write(
        process: &AgentProcess,
        message: &str,
    ) -> impl Future<Output = std::io::Result<()>> + Send;

    /// Translates one message of the agent and applies it to the conversation's state; an
    /// error when the message cannot be understood (the turn then fails and the process stops).
    fn on_message(engine: &Engine<Self>, message: &str) -> Result<Reply, String>;

    /// The running turn failed with `error` (the process is gone or being stopped): the
    /// signals that end it. The engine forgets the turn and its parked requests.
    fn fail_turn(engine: &Engine<Self>, error: ErrorInfo) -> Vec<AgentSignal>;

    /// Starts the admitted turn `turn` (the engine holds the lifecycle lock).
    fn send_turn(
        engine: &Arc<Engine<Self>>,
        turn: TurnRequest,
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// Answers the permission request `parked` of `tool_call_id` on `process`.
    fn answer_permission(
        engine: &Engine<Self>,
        parked: <Self::State as TurnState>::Permission,
        process: Arc<AgentProcess>,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// Whether the agent asks the host for input (otherwise answering one is unsupported).
    const TAKES_INPUT: bool;

    /// Answers the input request `parked` on `process`.
    fn answer_input(
        engine: &Engine<Self>,
        parked: <Self::State as TurnState>::Input,
        process: Arc<AgentProcess>,
        response: InputResponse,
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// Winds the cancelled turn `turn` down: the translator forgets it, what it left parked
    /// (`ended`) is withdrawn and, when a process runs, the agent is asked to stop. Whether
    /// the agent stopped in time; when not, the engine terminates the process.
    fn cancel(
        engine: &Engine<Self>,
        turn: &RunningTurn,
        ended: EndedOf<Self::State>,
        process: Option<&AgentProcess>,
    ) -> impl Future<Output = bool> + Send;

    /// The conversation is disposed: the translator forgets its turn and what waits (`ended`)
    /// is withdrawn on `process` if one runs; the engine terminates it next.
    fn dispose(
        engine: &Engine<Self>,
        ended: EndedOf<Self::State>,
        process: Option<&AgentProcess>,
    ) -> impl Future<Output = ()> + Send;
}

/// A conversation of one chat with an agent over protocol `P`: the settings, the chat, the
/// translator and the state behind one mutex each.
pub struct Engine<P: Protocol> {
    /// The provider's settings.
    pub config: Arc<P::Config>,
    /// The chat the conversation serves.
    pub chat: ChatBinding,
    /// The protocol's translator.
    pub translator: Mutex<P::Translator>,
    /// The conversation's state.
    pub state: Mutex<P::State>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<P: Protocol> Engine<P> {
    /// The state, locked.
    pub fn state(&self) -> MutexGuard<'_, P::State> {
        lock(&self.state)
    }

    /// The translator, locked.
    pub fn translator(&self) -> MutexGuard<'_, P::Translator> {
        lock(&self.translator)
    }

    /// The process id of the running agent, if one runs.
    pub fn process_id(&self) -> Option<i32> {
        current_process(&self.state).and_then(|(_, process)| process.pid())
    }

    /// The current process and its generation.
    pub fn current_process(&self) -> Option<(u64, Arc<AgentProcess>)> {
        current_process(&self.state)
    }

    /// Terminates process `generation` if it is still current; `from_reader` when its own
    /// reader stops it (which must not abort itself).
    pub async fn stop_process(&self, generation: u64, from_reader: bool) {
        let grace = self.config.cli().kill_grace;
        stop_process(&self.state, generation, grace, from_reader, P::ID).await;
    }

    /// The running turn fails with `error`: the process is gone or being stopped, so its
    /// parked requests need no answer.
    pub async fn fail_turn(&self, error: ProviderError) {
        let signals = P::fail_turn(self, error.to_error_info());
        end_turn(&self.state);
        self.chat.signals.send_all(signals).await;
    }

    /// Writes `messages` to `process` in order; the errors of those that could not be written.
    async fn write_each(process: &AgentProcess, messages: Vec<String>) -> Vec<std::io::Error> {
        let mut errors = Vec::new();
        for message in messages {
            if let Err(error) = P::write(process, &message).await {
                errors.push(error);
            }
        }
        errors
    }

    /// Writes `withdrawn` (answers to requests that no longer wait: the turn ended, was
    /// cancelled or the conversation is disposed) to `process`, best effort: the process may be
    /// stopping already.
    pub async fn withdraw(process: &AgentProcess, withdrawn: Vec<String>) {
        for error in Self::write_each(process, withdrawn).await {
            tracing::debug!(%error, agent = P::ID, "could not withdraw a request");
        }
    }

    /// The agent wrote something unreadable: the turn fails and process `generation` stops.
    async fn unreadable_from(&self, generation: u64, process: &AgentProcess, error: String) {
        self.fail_turn(unreadable_output(process, error).await)
            .await;
        self.stop_process(generation, true).await;
    }
}

impl<P: Protocol> MessageHandler for Engine<P> {
    async fn handle_message(&self, generation: u64, message: &str) -> bool {
        let Some(process) = current_generation(&self.state, generation) else {
            return false;
        };
        match P::on_message(self, message) {
            Ok(reply) => {
                for error in Self::write_each(&process, reply.writes).await {
                    tracing::warn!(%error, agent = P::ID, "could not answer the agent");
                }
                self.chat.signals.send_all(reply.signals).await;
                true
            }
            Err(error) => {
                self.unreadable_from(generation, &process, error).await;
                false
            }
        }
    }

    async fn process_ended(&self, generation: u64, read_error: Option<String>) {
        let grace = self.config.cli().kill_grace;
        let reaped = reap_process(&self.state, generation, grace, read_error, P::ID).await;
        if let Some(error) = reaped {
            self.fail_turn(error).await;
        }
    }

    async fn unreadable(&self, generation: u64, error: SourceError) {
        if let Some(process) = current_generation(&self.state, generation) {
            self.unreadable_from(generation, &process, error.to_string())
                .await;
        }
    }
}

impl<P: Protocol> AgentConversation for Engine<P> {
    type Config = P::Config;

    fn open(config: Arc<P::Config>, start: StartSession, resume: Option<String>) -> Self {
        let (translator, state) = P::open(&config, &start, resume);
        Self {
            config,
            chat: ChatBinding::new(start),
            translator: Mutex::new(translator),
            state: Mutex::new(state),
        }
    }

    async fn send_turn(self: &Arc<Self>, turn: TurnRequest) -> Result<(), ProviderError> {
        let _lifecycle = self.chat.lifecycle.lock().await;
        admit(&self.state, P::RESUME.agent, &turn.turn_id)?;
        P::send_turn(self, turn).await
    }

    async fn respond_to_permission(
        &self,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
        let (parked, process) = take_permission(&self.state, tool_call_id)?;
        P::answer_permission(self, parked, process, tool_call_id, decision).await
    }

    fn respond_to_input(
        &self,
        request_id: &str,
        response: InputResponse,
    ) -> Option<impl Future<Output = Result<(), ProviderError>> + Send> {
        let answer = async move {
            let (parked, process) = take_input(&self.state, request_id)?;
            P::answer_input(self, parked, process, response).await
        };
        P::TAKES_INPUT.then_some(answer)
    }

    async fn cancel(&self, turn_id: &str) -> Result<(), ProviderError> {
        let _lifecycle = self.chat.lifecycle.lock().await;
        let (turn, ended) = cancel_turn(&self.state, turn_id)?;
        let current = self.current_process();
        let process = current.as_ref().map(|(_, process)| process.as_ref());
        let stopped = P::cancel(self, &turn, ended, process).await;
        if let Some((generation, _)) = current
            && !stopped
        {
            tracing::debug!(
                agent = P::ID,
                "the agent did not wind the turn down in time: terminating it"
            );
            self.stop_process(generation, false).await;
        }
        self.chat.cancelled(&turn).await;
        Ok(())
    }

    fn resume_handle(&self) -> Option<Value> {
        P::resume_id(&self.state()).map(|id| P::RESUME.handle(id))
    }

    async fn dispose(&self) {
        let _lifecycle = self.chat.lifecycle.lock().await;
        let (live, ended) = dispose_state(&self.state);
        P::dispose(self, ended, live.as_ref().map(|live| live.process.as_ref())).await;
        if let Some(live) = live {
            terminate(&self.state, live, self.config.cli().kill_grace, P::ID).await;
        }
    }
}

/// The agent's conversation id for the current process, and notices for the user: `known` when
/// the process has it `loaded`; else `known` resumed (when the agent refuses, a notice says so
/// and a new conversation starts) or a new one started.
pub async fn resume_or_start<R, S>(
    agent: &str,
    (known, loaded): (Option<String>, bool),
    resume: impl FnOnce(String) -> R,
    start: impl FnOnce() -> S,
) -> Result<(String, Vec<String>), ProviderError>
where
    R: Future<Output = Result<String, ProviderError>>,
    S: Future<Output = Result<String, ProviderError>>,
{
    let mut notices = Vec::new();
    match known {
        Some(id) if loaded => return Ok((id, notices)),
        Some(id) => match resume(id).await {
            Ok(id) => return Ok((id, notices)),
            Err(ProviderError::Protocol { message } | ProviderError::Refused { message }) => {
                tracing::warn!(
                    message,
                    agent,
                    "the agent could not resume its conversation"
                );
                notices.push(format!(
                    "{agent} could not resume its earlier conversation ({message}); this turn \
                     starts a new one."
                ));
            }
            Err(error) => return Err(error),
        },
        None => {}
    }
    Ok((start().await?, notices))
}

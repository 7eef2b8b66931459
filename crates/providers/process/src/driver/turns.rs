//! [`Turns`]: the running turn of a conversation and the agent's requests parked until the host
//! answers them, with the lifecycle written once over them — admitting a turn, taking a parked
//! request to answer it, cancelling, ending, disposing and winding a cancelled turn down.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agenthost_provider_api::ProviderError;
use tokio::time::Instant;

use crate::AgentProcess;
use crate::driver::{DriverState, Live, ProcessSlot, Waiters, admit_turn, fail_requests};

/// The turn a conversation runs: the host's turn id and when it started.
#[derive(Debug, Clone)]
pub struct RunningTurn {
    /// The host's turn id.
    pub id: String,
    /// When the turn started (cancelled turns report their duration).
    pub started: Instant,
}

/// A conversation's turn and parked requests: permission requests (`P`) by tool call id and
/// input requests (`I`) by the host's input request id. Parked requests are kept in key order,
/// so withdrawing them answers in a stable order.
#[derive(Debug)]
pub struct Turns<P, I> {
    /// The running turn.
    pub turn: Option<RunningTurn>,
    /// Permission requests awaiting the host, by tool call id.
    pub permissions: BTreeMap<String, P>,
    /// Input requests awaiting the host, by input request id.
    pub inputs: BTreeMap<String, I>,
    /// Whether the conversation was disposed (it takes no more turns).
    pub disposed: bool,
}

impl<P, I> Default for Turns<P, I> {
    fn default() -> Self {
        Self {
            turn: None,
            permissions: BTreeMap::new(),
            inputs: BTreeMap::new(),
            disposed: false,
        }
    }
}

/// What a turn left behind when it ended: the turn (if one ran) and its parked requests, which
/// the caller answers as withdrawn while the process still runs.
#[derive(Debug)]
pub struct Ended<P, I> {
    /// The turn that ended.
    pub turn: Option<RunningTurn>,
    /// Its parked permission requests.
    pub permissions: Vec<P>,
    /// Its parked input requests.
    pub inputs: Vec<I>,
}

impl<P, I> Turns<P, I> {
    /// Starts turn `turn_id` now.
    pub fn begin(&mut self, turn_id: &str) {
        self.turn = Some(RunningTurn {
            id: turn_id.to_owned(),
            started: Instant::now(),
        });
    }

    /// Ends the running turn (if any) and takes its parked requests.
    pub fn end(&mut self) -> Ended<P, I> {
        Ended {
            turn: self.turn.take(),
            permissions: std::mem::take(&mut self.permissions)
                .into_values()
                .collect(),
            inputs: std::mem::take(&mut self.inputs).into_values().collect(),
        }
    }

    /// Parks permission request `request` for `tool_call_id`; returns the one it replaces (the
    /// caller declines it, so the agent never waits for it forever).
    pub fn park_permission(&mut self, tool_call_id: String, request: P) -> Option<P> {
        self.permissions.insert(tool_call_id, request)
    }

    /// Parks input request `request` as `input_id`; returns the one it replaces (the caller
    /// withdraws it).
    pub fn park_input(&mut self, input_id: String, request: I) -> Option<I> {
        self.inputs.insert(input_id, request)
    }
}

/// A conversation's state that holds [`Turns`] besides what [`DriverState`] manages.
pub trait TurnState: DriverState {
    /// A parked permission request.
    type Permission: Send;
    /// A parked input request.
    type Input: Send;

    /// The running turn and the parked requests.
    fn turns(&mut self) -> &mut Turns<Self::Permission, Self::Input>;
}

fn lock<S>(state: &Mutex<S>) -> MutexGuard<'_, S> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether the conversation of `agent` may start turn `turn_id` (see [`admit_turn`]).
pub fn admit<S: TurnState>(
    state: &Mutex<S>,
    agent: &str,
    turn_id: &str,
) -> Result<(), ProviderError> {
    let mut state = lock(state);
    let turns = state.turns();
    let running = turns.turn.as_ref().map(|turn| turn.id.as_str());
    admit_turn(agent, turns.disposed, running, turn_id)
}

/// Starts turn `turn_id` now.
pub fn begin_turn<S: TurnState>(state: &Mutex<S>, turn_id: &str) {
    lock(state).turns().begin(turn_id);
}

/// Ends the running turn (see [`Turns::end`]).
pub fn end_turn<S: TurnState>(state: &Mutex<S>) -> EndedOf<S> {
    lock(state).turns().end()
}

/// Takes the permission request parked for `tool_call_id` and the process to answer it on; an
/// error when none waits, or when the process is gone (the request stays parked then).
pub fn take_permission<S: TurnState>(
    state: &Mutex<S>,
    tool_call_id: &str,
) -> Result<(S::Permission, Arc<AgentProcess>), ProviderError> {
    let waiting = format!("no tool call `{tool_call_id}` is waiting for permission");
    take_parked(state, waiting, |turns| {
        turns.permissions.remove(tool_call_id)
    })
}

/// Takes the input request parked as `request_id` and the process to answer it on; an error
/// when none waits, or when the process is gone (the request stays parked then).
pub fn take_input<S: TurnState>(
    state: &Mutex<S>,
    request_id: &str,
) -> Result<(S::Input, Arc<AgentProcess>), ProviderError> {
    let waiting = format!("no input request `{request_id}` is waiting for an answer");
    take_parked(state, waiting, |turns| turns.inputs.remove(request_id))
}

/// The request `take` removes from the parked ones, and the current process; `NotRunning` with
/// `message` when there is no process (nothing is removed then) or no such request.
fn take_parked<S: TurnState, T>(
    state: &Mutex<S>,
    message: String,
    take: impl FnOnce(&mut Turns<S::Permission, S::Input>) -> Option<T>,
) -> Result<(T, Arc<AgentProcess>), ProviderError> {
    let mut state = lock(state);
    let taken = match state.slot().current() {
        Some((_, process)) => take(state.turns()).map(|parked| (parked, process)),
        None => None,
    };
    taken.ok_or(ProviderError::NotRunning { message })
}

/// What a turn of a conversation with state `S` left behind (see [`Ended`]).
pub type EndedOf<S> = Ended<<S as TurnState>::Permission, <S as TurnState>::Input>;

/// Ends turn `turn_id` for a cancel: what it left behind, or an error when it is not the running
/// turn (the running turn, if another, goes on).
pub fn cancel_turn<S: TurnState>(
    state: &Mutex<S>,
    turn_id: &str,
) -> Result<(RunningTurn, EndedOf<S>), ProviderError> {
    let mut state = lock(state);
    let turns = state.turns();
    if turns.turn.as_ref().is_none_or(|turn| turn.id != turn_id) {
        return Err(ProviderError::NotRunning {
            message: format!("turn `{turn_id}` is not running"),
        });
    }
    let mut ended = turns.end();
    let turn = ended.turn.take().ok_or_else(|| ProviderError::NotRunning {
        message: format!("turn `{turn_id}` is not running"),
    })?;
    Ok((turn, ended))
}

/// Marks the conversation disposed and takes out its process and what its turn left behind.
pub fn dispose_state<S: TurnState>(state: &Mutex<S>) -> (Option<Live<AgentProcess>>, EndedOf<S>) {
    let mut state = lock(state);
    state.turns().disposed = true;
    let live = state.slot().take();
    (live, state.turns().end())
}

/// Terminates a disposed conversation's process (`SIGKILL` after `grace`) and fails what it still
/// waited for.
pub async fn terminate<S: DriverState>(
    state: &Mutex<S>,
    live: Live<AgentProcess>,
    grace: Duration,
    agent: &str,
) {
    let status = live.process.terminate(grace).await;
    live.reader.abort();
    tracing::debug!(status, agent, "disposed the agent");
    fail_requests(state, &status, &live.process).await;
}

/// Asks the agent to stop its turn (`ask`: whether the request went out) and waits, until
/// `grace` after asking began, for the turn to wind down (the reader reports it through
/// [`Waiters::wound_down`](crate::driver::Waiters::wound_down)). Whether it did: when not, the
/// caller terminates the process.
pub async fn wind_down<S: DriverState>(
    state: &Mutex<S>,
    grace: Duration,
    ask: impl Future<Output = bool>,
) -> bool {
    let wound_down = lock(state).waiters().expect_wind_down();
    let deadline = Instant::now() + grace;
    let done = ask.await
        && matches!(
            tokio::time::timeout_at(deadline, wound_down).await,
            Ok(Ok(()))
        );
    lock(state).waiters().stop_expecting_wind_down();
    done
}

/// What a provider keeps of a conversation besides what the driver manages (the agent's own
/// conversation id, whether the process has it loaded, …).
pub trait ProviderState: Default + Send {
    /// The process was replaced or is gone: reset what belonged to it.
    fn process_gone(&mut self) {}
}

/// A conversation's whole state, behind its one mutex: the process, the requests awaiting the
/// agent's answer (keys `K`, answers `A`), the running turn with the agent's parked requests
/// (`P`, `I`), and the provider's own part `X`, which the state dereferences to.
#[derive(Debug)]
pub struct AgentState<X, P, I, K = u64, A = serde_json::Value> {
    /// The current process.
    pub process: ProcessSlot<AgentProcess>,
    /// Requests awaiting the agent's answer.
    pub waiters: Waiters<K, A>,
    /// The running turn and the parked requests.
    pub turns: Turns<P, I>,
    /// The provider's own part.
    pub own: X,
}

impl<X: Default, P, I, K, A> Default for AgentState<X, P, I, K, A> {
    fn default() -> Self {
        Self::new(X::default())
    }
}

impl<X, P, I, K, A> AgentState<X, P, I, K, A> {
    /// A state without a process, turn or waiting request, with `own` as the provider's part.
    pub fn new(own: X) -> Self {
        Self {
            process: ProcessSlot::default(),
            waiters: Waiters::default(),
            turns: Turns::default(),
            own,
        }
    }
}

impl<X, P, I, K, A> std::ops::Deref for AgentState<X, P, I, K, A> {
    type Target = X;

    fn deref(&self) -> &X {
        &self.own
    }
}

impl<X, P, I, K, A> std::ops::DerefMut for AgentState<X, P, I, K, A> {
    fn deref_mut(&mut self) -> &mut X {
        &mut self.own
    }
}

impl<X, P, I, K, A> DriverState for AgentState<X, P, I, K, A>
where
    X: ProviderState,
    P: Send,
    I: Send,
    K: Eq + std::hash::Hash + Send,
    A: Send,
{
    type Key = K;
    type Answer = A;

    fn slot(&mut self) -> &mut ProcessSlot<AgentProcess> {
        &mut self.process
    }

    fn waiters(&mut self) -> &mut Waiters<K, A> {
        &mut self.waiters
    }

    fn process_gone(&mut self) {
        self.own.process_gone();
    }
}

impl<X, P: Send, I: Send, K, A> TurnState for AgentState<X, P, I, K, A>
where
    Self: DriverState,
{
    type Permission = P;
    type Input = I;

    fn turns(&mut self) -> &mut Turns<P, I> {
        &mut self.turns
    }
}

//! One chat's conversation with the scripted agent: which turn of the script comes next, and the
//! turn running now.
//!
//! At most one turn runs at a time. Whoever ends a turn (the turn's own task when its steps are
//! done, or [`ScriptedSession`]'s `cancel`) first moves it to [`Phase::Ending`] under the lock,
//! so exactly one terminal action (`turnComplete`, `turnCancelled` or `error`) is ever sent, and
//! no new turn starts before that terminal action is out.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agenthost_protocol::ahp_types::state::ToolCallResult;
use agenthost_protocol::{SafeId, SessionUri, SubagentCompleted};
use agenthost_provider_api::{
    InputResponse, PermissionDecision, ProviderError, ProviderSession, SignalSink, StartSession,
    TurnRequest,
};
use futures::future::BoxFuture;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::run::{TurnRun, duration_ms};
use crate::script::{JoinUntil, Script};

/// A conversation of one chat with the scripted agent, created by
/// [`ScriptedProvider`](crate::ScriptedProvider).
///
/// - `send_turn` while a turn runs is refused with [`ProviderError::NotRunning`] (no queue: the
///   host queues messages itself, and a refusal makes a misbehaving host visible in tests).
/// - `respond_to_permission` answers a tool waiting for permission: approve runs the tool's
///   effect and completes it; deny emits nothing more for that tool (the client's
///   `chat/toolCallConfirmed` already cancelled it) and the script continues.
/// - `complete_client_tool` hands a client tool (`"client": "<id>"`) its result: the call was
///   completed in the chat by the client (or failed by the host for a departed client), so
///   nothing more is emitted for it and the script continues.
/// - `cancel` stops the running turn, closes its open subagents and sends `chat/turnCancelled`.
/// - `resume_handle` is `{"turnsRun": n}`; a restored session continues the script at turn `n`.
#[derive(Debug)]
pub struct ScriptedSession {
    script: Arc<Script>,
    session: SessionUri,
    working_directory: PathBuf,
    signals: SignalSink,
    state: Arc<Mutex<SessionState>>,
    /// Bumped on every background subagent change (what `join` steps wait on).
    changes: Arc<watch::Sender<u64>>,
}

/// What the session and its running turn share.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    turns_run: u64,
    next_generation: u64,
    running: Option<Running>,
    disposed: bool,
    /// Background subagents still running, by their `Task` call id. They may outlive their
    /// turn (an `error` step ends the turn and leaves them running).
    background: HashMap<String, Background>,
    /// Spawn order of the next background subagent.
    next_background: u64,
    /// Client results that arrived before their run parked for them (a client may complete
    /// an approved call before the run woke from the approval), at most [`EARLY_RESULTS`].
    early_results: HashMap<String, ToolCallResult>,
}

/// How many early client results a session holds at most.
const EARLY_RESULTS: usize = 256;

/// A background subagent in progress.
#[derive(Debug)]
struct Background {
    /// The turn that started it.
    generation: u64,
    /// Spawn order: a cancel closes the newest first (a nested one before its parent).
    order: u64,
    task: Option<JoinHandle<()>>,
    /// Its confirmation was sent and is not answered yet.
    waiting: bool,
    confirmations: HashMap<String, oneshot::Sender<Answer>>,
    /// Its own `Task` call id, then the subagents it started inline and has not completed,
    /// outermost first.
    open_subagents: Vec<SafeId>,
}

#[derive(Debug)]
struct Running {
    /// Tells a turn from a later one (turn ids are the client's and might repeat).
    generation: u64,
    turn_id: String,
    started: Instant,
    phase: Phase,
    task: Option<JoinHandle<()>>,
    confirmations: HashMap<String, oneshot::Sender<Answer>>,
    /// Subagents started and not yet completed, outermost first.
    open_subagents: Vec<SafeId>,
}

/// Where the running turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Steps are running.
    Running,
    /// Someone is sending its terminal action; nothing else may end it.
    Ending,
}

/// What a parked tool call is waiting for: a permission answer, or (for a client tool) the
/// client's result. A client tool still waiting for permission may get its result instead (a
/// client completes a call it will not run straight from its pending confirmation).
#[derive(Debug)]
pub(crate) enum Answer {
    /// `respond_to_permission`.
    Permission(PermissionDecision),
    /// `complete_client_tool`.
    ClientResult(ToolCallResult),
    /// `respond_to_input` (an `ask` step).
    Input(InputResponse),
}

fn lock(state: &Mutex<SessionState>) -> MutexGuard<'_, SessionState> {
    // The state stays consistent across a panic (every update is a single assignment).
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which run of a turn a [`TurnControl`] belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    /// The turn's own steps.
    Turn,
    /// A background subagent, by its `Task` call id.
    Background(String),
}

/// A run's handle on the session state: the turn's own steps, or one background subagent.
#[derive(Debug, Clone)]
pub(crate) struct TurnControl {
    state: Arc<Mutex<SessionState>>,
    generation: u64,
    slot: Slot,
    /// Bumped whenever a background subagent starts waiting, stops waiting or ends.
    changes: Arc<watch::Sender<u64>>,
}

impl TurnControl {
    fn with_running<R>(&self, f: impl FnOnce(&mut Running) -> R) -> Option<R> {
        let mut state = lock(&self.state);
        state
            .running
            .as_mut()
            .filter(|running| running.generation == self.generation)
            .map(f)
    }

    /// `f` on this run's background record; `None` for the turn's own run, or once the
    /// record is gone (finished, cancelled, disposed).
    fn with_background<R>(&self, f: impl FnOnce(&mut Background) -> R) -> Option<R> {
        let Slot::Background(id) = &self.slot else {
            return None;
        };
        lock(&self.state).background.get_mut(id).map(f)
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Parks an answer (a permission decision or a client tool's result) for `tool_call_id`;
    /// `None` once the run is being ended.
    pub(crate) fn await_answer(&self, tool_call_id: &str) -> Option<oneshot::Receiver<Answer>> {
        let (tx, rx) = oneshot::channel();
        let early = lock(&self.state).early_results.remove(tool_call_id);
        if let Some(result) = early {
            // The receiver is still here: the send cannot fail.
            let _ = tx.send(Answer::ClientResult(result));
            return Some(rx);
        }
        let parked = match self.slot {
            Slot::Turn => self
                .with_running(|running| {
                    (running.phase == Phase::Running).then(|| {
                        running.confirmations.insert(tool_call_id.to_owned(), tx);
                    })
                })
                .flatten(),
            Slot::Background(_) => self.with_background(|background| {
                background.confirmations.insert(tool_call_id.to_owned(), tx);
            }),
        };
        parked.map(|()| rx)
    }

    /// The run's confirmation was sent (`true`) or answered (`false`); seen by `join`.
    pub(crate) fn set_waiting(&self, waiting: bool) {
        if self
            .with_background(|background| background.waiting = waiting)
            .is_some()
        {
            self.changed();
        }
    }

    /// Records that `SubagentStarted` for `id` was sent.
    pub(crate) fn subagent_opened(&self, id: &SafeId) {
        match self.slot {
            Slot::Turn => {
                self.with_running(|running| running.open_subagents.push(id.clone()));
            }
            Slot::Background(_) => {
                self.with_background(|background| background.open_subagents.push(id.clone()));
            }
        }
    }

    /// Records that `SubagentCompleted` for `id` was sent.
    pub(crate) fn subagent_closed(&self, id: &SafeId) {
        match self.slot {
            Slot::Turn => {
                self.with_running(|running| running.open_subagents.retain(|open| open != id));
            }
            Slot::Background(_) => {
                self.with_background(|background| {
                    background.open_subagents.retain(|open| open != id);
                });
            }
        }
    }

    /// The handle of the background subagent `id` started by this run.
    pub(crate) fn background(&self, id: &SafeId) -> Self {
        Self {
            state: Arc::clone(&self.state),
            generation: self.generation,
            slot: Slot::Background(id.as_str().to_owned()),
            changes: Arc::clone(&self.changes),
        }
    }

    /// Spawns `run`, the background subagent `id` (its `SubagentStarted` already sent and
    /// recorded as open in this run), and takes over its open record; `false` (nothing
    /// spawned) once this run is being ended or the session was disposed.
    pub(crate) fn spawn_background(
        &self,
        id: &SafeId,
        run: impl Future<Output = ()> + Send + 'static,
    ) -> bool {
        let mut state = lock(&self.state);
        let alive = !state.disposed
            && match &self.slot {
                Slot::Turn => state.running.as_ref().is_some_and(|running| {
                    running.generation == self.generation && running.phase == Phase::Running
                }),
                Slot::Background(own) => state.background.contains_key(own),
            };
        if !alive {
            return false;
        }
        match &self.slot {
            Slot::Turn => {
                if let Some(running) = state.running.as_mut() {
                    running.open_subagents.retain(|open| open != id);
                }
            }
            Slot::Background(own) => {
                if let Some(background) = state.background.get_mut(own) {
                    background.open_subagents.retain(|open| open != id);
                }
            }
        }
        let order = state.next_background;
        state.next_background += 1;
        // Spawned under the lock: the task needs the state only after its record exists.
        let task = tokio::spawn(run);
        state.background.insert(
            id.as_str().to_owned(),
            Background {
                generation: self.generation,
                order,
                task: Some(task),
                waiting: false,
                confirmations: HashMap::new(),
                open_subagents: vec![id.clone()],
            },
        );
        drop(state);
        self.changed();
        true
    }

    /// This background run is over: its record goes.
    pub(crate) fn background_finished(&self) {
        let Slot::Background(id) = &self.slot else {
            return;
        };
        let removed = lock(&self.state).background.remove(id).is_some();
        if removed {
            self.changed();
        }
    }

    /// Whether every background subagent in `ids` has finished, or, for
    /// [`JoinUntil::Waiting`], waits for a permission answer.
    pub(crate) fn settled(&self, ids: &[String], until: JoinUntil) -> bool {
        let state = lock(&self.state);
        ids.iter()
            .all(|id| match (state.background.get(id), until) {
                (None, _) => true,
                (Some(background), JoinUntil::Waiting) => background.waiting,
                (Some(_), JoinUntil::Done) => false,
            })
    }

    /// A receiver of background changes (see [`TurnControl::settled`]).
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Claims the right to send the turn's terminal action; `false` when the turn was cancelled
    /// or disposed meanwhile.
    pub(crate) fn begin_ending(&self) -> bool {
        self.with_running(|running| {
            let ours = running.phase == Phase::Running;
            running.phase = Phase::Ending;
            running.confirmations.clear();
            ours
        })
        .unwrap_or(false)
    }

    /// The terminal action is out: the session is free for the next turn.
    pub(crate) fn ended(&self) {
        let mut state = lock(&self.state);
        if state
            .running
            .as_ref()
            .is_some_and(|running| running.generation == self.generation)
        {
            state.running = None;
        }
    }
}

/// Stops every background subagent `select` picks (and those they start meanwhile); returns
/// their open subagents in the order to complete them: the newest subagent first, each one's
/// inline subagents innermost first, then itself.
async fn stop_background(
    state: &Mutex<SessionState>,
    select: impl Fn(&Background) -> bool,
) -> Vec<SafeId> {
    let mut stopped = Vec::new();
    loop {
        let batch: Vec<Background> = {
            let mut state = lock(state);
            let ids: Vec<String> = state
                .background
                .iter()
                .filter(|(_, background)| select(background))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter()
                .filter_map(|id| state.background.remove(id))
                .collect()
        };
        if batch.is_empty() {
            break;
        }
        for mut background in batch {
            if let Some(task) = background.task.take() {
                task.abort();
                // Waiting for the aborted task guarantees none of its signals follows ours.
                let _ = task.await;
            }
            stopped.push(background);
        }
    }
    stopped.sort_by_key(|background| std::cmp::Reverse(background.order));
    stopped
        .into_iter()
        .flat_map(|background| background.open_subagents.into_iter().rev())
        .collect()
}

impl ScriptedSession {
    /// A session whose next turn is turn `turns_run` of `script`.
    pub(crate) fn new(script: Arc<Script>, start: StartSession, turns_run: u64) -> Self {
        Self {
            script,
            session: start.session,
            working_directory: start.working_directory,
            signals: start.signals,
            state: Arc::new(Mutex::new(SessionState {
                turns_run,
                ..SessionState::default()
            })),
            changes: Arc::new(watch::Sender::new(0)),
        }
    }

    /// How many turns have been started (the index of the next one in the script).
    pub fn turns_run(&self) -> u64 {
        lock(&self.state).turns_run
    }

    /// The id of the turn running now, if any.
    pub fn running_turn(&self) -> Option<String> {
        lock(&self.state)
            .running
            .as_ref()
            .map(|running| running.turn_id.clone())
    }

    fn start_turn(&self, turn: TurnRequest) -> Result<(), ProviderError> {
        let mut state = lock(&self.state);
        if state.disposed {
            return Err(ProviderError::NotRunning {
                message: "this scripted agent session has been disposed".into(),
            });
        }
        if let Some(running) = &state.running {
            return Err(ProviderError::NotRunning {
                message: format!(
                    "the scripted agent is still running turn `{}`: cancel it or wait for it \
                     to end before sending `{}`",
                    running.turn_id, turn.turn_id
                ),
            });
        }
        let index = state.turns_run;
        state.turns_run += 1;
        let generation = state.next_generation;
        state.next_generation += 1;
        let started = Instant::now();
        let steps = self.script.turn(index).into_owned();
        let turn_id = turn.turn_id.clone();
        let run = TurnRun::new(
            self.signals.clone(),
            self.session.clone(),
            turn,
            index + 1,
            self.working_directory.clone(),
            started,
            TurnControl {
                state: Arc::clone(&self.state),
                generation,
                slot: Slot::Turn,
                changes: Arc::clone(&self.changes),
            },
        );
        // Spawned under the lock: should the task need the state at once, it waits until
        // `running` below is recorded.
        let task = tokio::spawn(run.run(steps));
        state.running = Some(Running {
            generation,
            turn_id,
            started,
            phase: Phase::Running,
            task: Some(task),
            confirmations: HashMap::new(),
            open_subagents: Vec::new(),
        });
        Ok(())
    }

    fn answer(&self, tool_call_id: &str, answer: Answer) -> Result<(), ProviderError> {
        let waiting = {
            let mut state = lock(&self.state);
            let of_turn = state
                .running
                .as_mut()
                .filter(|running| running.phase == Phase::Running)
                .and_then(|running| running.confirmations.remove(tool_call_id));
            let waiting = of_turn.or_else(|| {
                state
                    .background
                    .values_mut()
                    .find_map(|background| background.confirmations.remove(tool_call_id))
            });
            let live = state
                .running
                .as_ref()
                .is_some_and(|running| running.phase == Phase::Running)
                || !state.background.is_empty();
            match (waiting, answer) {
                (Some(waiting), answer) => (waiting, answer),
                // A client result ahead of its run: kept until the run parks for it.
                (None, Answer::ClientResult(result))
                    if live && state.early_results.len() < EARLY_RESULTS =>
                {
                    state.early_results.insert(tool_call_id.to_owned(), result);
                    return Ok(());
                }
                (None, answer) => return Err(not_waiting(tool_call_id, &answer)),
            }
        };
        let (waiting, answer) = waiting;
        let error = not_waiting(tool_call_id, &answer);
        waiting.send(answer).map_err(|_| error)
    }

    async fn cancel_turn(&self, turn_id: &str) -> Result<(), ProviderError> {
        let (generation, started, task) = {
            let mut state = lock(&self.state);
            match state.running.as_mut() {
                Some(running) if running.turn_id == turn_id => {
                    if running.phase == Phase::Ending {
                        // Already ending (finished or being cancelled): its terminal action is
                        // on its way.
                        return Ok(());
                    }
                    running.phase = Phase::Ending;
                    running.confirmations.clear();
                    (running.generation, running.started, running.task.take())
                }
                _ => {
                    return Err(ProviderError::NotRunning {
                        message: format!("turn `{turn_id}` is not running"),
                    });
                }
            }
        };
        let control = TurnControl {
            state: Arc::clone(&self.state),
            generation,
            slot: Slot::Turn,
            changes: Arc::clone(&self.changes),
        };
        let signals = self.signals.clone();
        let session = self.session.clone();
        let turn_id = turn_id.to_owned();
        // A task of its own, so the turn is ended even if the caller drops this future.
        let ending = tokio::spawn(async move {
            if let Some(task) = task {
                task.abort();
                // Waiting for the aborted task guarantees none of its signals follows ours.
                let _ = task.await;
            }
            // The turn's background subagents, then its own open ones, innermost first.
            let mut open = stop_background(&control.state, |background| {
                background.generation == generation
            })
            .await;
            control.changed();
            let own = control
                .with_running(|running| std::mem::take(&mut running.open_subagents))
                .unwrap_or_default();
            open.extend(own.into_iter().rev());
            for tool_call_id in open {
                let _ = signals
                    .send(SubagentCompleted {
                        session: session.clone(),
                        tool_call_id,
                    })
                    .await;
            }
            let _ = signals
                .send(agenthost_provider_api::turn_cancelled(
                    &session,
                    &turn_id,
                    duration_ms(started),
                ))
                .await;
            control.ended();
        });
        let _ = ending.await;
        Ok(())
    }

    async fn dispose_session(&self) {
        let task = {
            let mut state = lock(&self.state);
            state.disposed = true;
            state.running.take().and_then(|running| running.task)
        };
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
        stop_background(&self.state, |_| true).await;
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl ProviderSession for ScriptedSession {
    fn send_turn(&self, turn: TurnRequest) -> BoxFuture<'_, Result<(), ProviderError>> {
        Box::pin(async move { self.start_turn(turn) })
    }

    fn respond_to_permission<'a>(
        &'a self,
        tool_call_id: &'a str,
        decision: PermissionDecision,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move { self.answer(tool_call_id, Answer::Permission(decision)) })
    }

    fn complete_client_tool<'a>(
        &'a self,
        tool_call_id: &'a str,
        result: ToolCallResult,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move { self.answer(tool_call_id, Answer::ClientResult(result)) })
    }

    fn respond_to_input<'a>(
        &'a self,
        request_id: &'a str,
        response: InputResponse,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move { self.answer(request_id, Answer::Input(response)) })
    }

    fn cancel<'a>(&'a self, turn_id: &'a str) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(self.cancel_turn(turn_id))
    }

    fn resume_handle(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "turnsRun": self.turns_run() }))
    }

    fn dispose(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.dispose_session())
    }
}

fn not_waiting(tool_call_id: &str, answer: &Answer) -> ProviderError {
    let what = match answer {
        Answer::Permission(_) => "permission",
        Answer::ClientResult(_) => "a client's result",
        Answer::Input(_) => "an input answer",
    };
    ProviderError::NotRunning {
        message: format!("no tool call `{tool_call_id}` is waiting for {what}"),
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;

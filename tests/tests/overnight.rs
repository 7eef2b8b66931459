//! The overnight scenario (issue 13), end to end: the host as `agent-host serve --unattended
//! deny --unattended-grace 200ms --client-grace 1s` composes it, the scripted agent runs 16
//! background subagents that each call a client tool (`probe`, run by the first observer,
//! client `observer-0`), ask twice to append a line to `effects.log`, and call the client tool
//! again; clients observe everything (the session and all 17 chats, on five connections: 85
//! chat subscriptions), then the parent turn's provider errors and every observer goes at once.
//! What the seed report found stranded (16 permission requests nobody answered) must now be
//! answered by the host within the grace window, the client tool calls issued after the client
//! left must fail (`clientUnavailable`) when its window ends, the subagents must run to their
//! end, and the session must end consistent.
//!
//! - `overnight_sixteen_subagents_survive_a_provider_error_and_a_mass_disconnect`: the
//!   scenario itself; every obligation is answered (the one approved before the error ran, the
//!   others are denied with a reason) within grace + slack of the moment it became unclaimed.
//! - `overnight_reconnect_claims_what_it_shows_and_nothing_runs_twice`: a client comes back
//!   after the disconnect; subscribing claims what it shows, it approves some (each approval
//!   sent twice), keeps others waiting past many grace windows, and the append-only log proves
//!   every approved call ran exactly once and no denied one ran. Back inside its client window,
//!   it runs its client tool for the calls issued while it is there, each once; those issued
//!   after it left again fail when its window ends.
//! - `overnight_load_fifty_sessions_of_four_chats_with_ten_subscribers_each` (only with
//!   `AGENTHOST_SLOW_TESTS=1`): 50 sessions × 4 chats streaming at once, 10 connections each
//!   subscribed to all 200 chats, every turn blocked on a confirmation answered by a client or
//!   by the policy; twice, to compare memory after each round.
//!
//! Timing is observed from a monitor connection subscribed to the session channel only (a
//! session subscription claims nothing). Waits poll with deadlines; the only fixed-length waits
//! are the windows in which something must *not* happen. The tests of this file run one at a
//! time (they measure time and memory). Figures are printed: run with `--nocapture`.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agenthost::unattended::UnattendedOptions;
use agenthost_protocol::ahp_types::commands::SubscribeResult;
use agenthost_protocol::ahp_types::state::{SessionInputRequest, SnapshotState};
use agenthost_protocol::{ChatUri, SafeId, SessionUri, StateAction};
use agenthost_reducers::projection::entry_id;
use ahp::{Client, ClientConfig, ClientEventStream, SubscriptionEvent};
use serde_json::{Value, json};
use support::{STALL, ScriptedHost, connect_with, create_session, dispatch};
use tokio::time::Instant;

/// The tests of this file measure time and memory: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Background subagents of the overnight turn.
const WORKERS: usize = 16;
/// Observer connections, each subscribed to the session and all 17 chats.
const OBSERVERS: usize = 5;
/// How late after its window an answer may come (a loaded two-core machine).
const SLACK: Duration = Duration::from_millis(1500);
/// An answer may not come earlier than its window minus this: the host's timers never fire
/// early, but a listing the monitor received late makes its window look shorter.
const EARLY: Duration = Duration::from_millis(50);

fn grace_of(text: &str) -> Duration {
    UnattendedOptions::parse("deny", Some(text)).unwrap().grace
}

/// The overnight turn: 16 background workers, each asking twice to append its line to
/// `effects.log`; once all of them wait, the parent asks to append a checkpoint line (the
/// client's cue: it approves once it observes everything), then the provider errors.
fn overnight_script() -> Value {
    let worker = |k: usize| {
        json!({
            "kind": "subagent", "agent": "worker", "displayName": format!("Worker {k}"),
            "description": format!("migrate part {k}"), "background": true,
            "steps": [
                { "kind": "say", "text": format!("Worker {k}: reading part {k}."), "chunk": 7 },
                { "kind": "tool", "name": "probe", "displayName": "Probe", "client": EXECUTOR,
                  "input": { "part": k, "phase": "before" } },
                { "kind": "tool", "name": "append_log", "displayName": "Append to log",
                  "confirm": true,
                  "effect": { "kind": "appendFile", "path": "effects.log",
                              "content": format!("worker-{k}-a\n") } },
                { "kind": "tool", "name": "append_log", "displayName": "Append to log",
                  "confirm": true,
                  "effect": { "kind": "appendFile", "path": "effects.log",
                              "content": format!("worker-{k}-b\n") } },
                { "kind": "tool", "name": "probe", "displayName": "Probe", "client": EXECUTOR,
                  "input": { "part": k, "phase": "after" } },
                { "kind": "say", "text": format!("Worker {k}: done."), "chunk": 7 }
            ]
        })
    };
    let mut steps =
        vec![json!({ "kind": "say", "text": "Starting 16 workers for the night.", "chunk": 8 })];
    steps.extend((1..=WORKERS).map(worker));
    steps.push(json!({ "kind": "join", "until": "waiting" }));
    steps.push(json!({
        "kind": "tool", "name": "checkpoint", "displayName": "Checkpoint", "confirm": true,
        "effect": { "kind": "appendFile", "path": "effects.log", "content": "parent-checkpoint\n" }
    }));
    steps.push(json!({
        "kind": "error", "message": "upstream connection reset by peer",
        "errorType": "providerError"
    }));
    json!({ "turns": [{ "steps": steps }] })
}

/// The checkpoint call of the parent turn (after the say part and the 16 `Task` calls).
const CHECKPOINT: &str = "tool-1-17";

/// The `n`th (1 or 2) confirmable call of worker `k` (its calls: probe, append a, append b,
/// probe).
fn worker_call(k: usize, n: usize) -> String {
    format!("tool-1-{k}-{}", n + 1)
}

/// The client tool call of worker `k` before (`1`) or after (`2`) its confirmable calls.
fn probe_call(k: usize, n: usize) -> String {
    format!("tool-1-{k}-{}", if n == 1 { 1 } else { 4 })
}

/// The client whose tool (`probe`) every worker calls twice: the first observer, and the
/// same client id when it comes back.
const EXECUTOR: &str = "observer-0";

/// A client event buffer large enough for everything these tests watch.
fn roomy() -> ClientConfig {
    ClientConfig {
        subscription_buffer: 1 << 14,
        ..ClientConfig::default()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `subscribe` without the client library's per-channel fan-out (events still arrive on the
/// connection's event stream); returns the snapshot.
async fn subscribe(client: &Client, channel: &str) -> SnapshotState {
    let result: SubscribeResult = client
        .request("subscribe", json!({ "channel": channel }))
        .await
        .unwrap_or_else(|e| panic!("subscribe {channel}: {e}"));
    result.snapshot.expect("a snapshot").state
}

async fn unsubscribe(client: &Client, channel: &str) {
    client
        .notify("unsubscribe", json!({ "channel": channel }))
        .await
        .unwrap();
}

/// A channel's state as JSON, from a subscription that ends at once.
async fn state_json(client: &Client, channel: &str) -> Value {
    let value = match subscribe(client, channel).await {
        SnapshotState::Session(state) => serde_json::to_value(state).unwrap(),
        SnapshotState::Chat(state) => serde_json::to_value(state).unwrap(),
        other => panic!("not a session or chat snapshot: {other:?}"),
    };
    unsubscribe(client, channel).await;
    value
}

/// One obligation of the session's `inputNeeded` list, as the monitor saw it.
#[derive(Debug, Clone)]
struct Obligation {
    kind: String,
    client: Option<String>,
    chat: String,
    turn_id: String,
    tool_call_id: String,
    raised: Instant,
    removed: Option<Instant>,
}

/// Everything the session channel says, with when it arrived, from a connection subscribed to
/// the session channel only.
struct Monitor {
    client: Client,
    log: Arc<Mutex<Vec<(Instant, StateAction)>>>,
}

impl Monitor {
    async fn start(url: &str, session: &SessionUri) -> Self {
        let (client, mut events) = connect_with(url, "monitor", roomy()).await;
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        let channel = session.to_string();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                if let SubscriptionEvent::Action(envelope) = event.event
                    && envelope.channel == channel
                    && envelope.rejection_reason.is_none()
                {
                    lock(&sink).push((Instant::now(), envelope.action));
                }
            }
        });
        subscribe(&client, session.as_str()).await;
        Self { client, log }
    }

    /// Every confirmation listed so far, by entry id.
    fn obligations(&self) -> BTreeMap<String, Obligation> {
        self.ledger()
            .into_iter()
            .filter(|(_, o)| o.kind == "toolConfirmation")
            .collect()
    }

    /// Every client tool execution listed so far, by entry id.
    fn executions(&self) -> BTreeMap<String, Obligation> {
        self.ledger()
            .into_iter()
            .filter(|(_, o)| o.kind == "toolClientExecution")
            .collect()
    }

    /// Every entry listed so far, by entry id.
    fn ledger(&self) -> BTreeMap<String, Obligation> {
        ledger_of(&lock(&self.log))
    }

    /// The chats announced with `session/chatAdded`.
    fn chats_added(&self) -> BTreeSet<String> {
        lock(&self.log)
            .iter()
            .filter_map(|(_, action)| match action {
                StateAction::SessionChatAdded(added) => Some(added.summary.resource.clone()),
                _ => None,
            })
            .collect()
    }

    /// Polls `check` until it answers; panics naming `what` after [`STALL`].
    async fn until<T>(&self, what: &str, check: impl Fn(&Self) -> Option<T>) -> T {
        let deadline = Instant::now() + STALL;
        loop {
            if let Some(found) = check(self) {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "waited {STALL:?} for {what}; obligations: {:#?}",
                self.obligations()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Every entry the session channel listed, by entry id: when it was first listed and when it
/// was removed.
fn ledger_of(log: &[(Instant, StateAction)]) -> BTreeMap<String, Obligation> {
    let mut ledger = BTreeMap::new();
    for (at, action) in log {
        match action {
            StateAction::SessionInputNeededSet(set) => {
                let Some(id) = entry_id(&set.request) else {
                    continue;
                };
                let entry = serde_json::to_value(&set.request).unwrap();
                ledger
                    .entry(id.to_owned())
                    .or_insert_with(|| Obligation {
                        kind: entry["kind"].as_str().unwrap_or_default().to_owned(),
                        client: entry["clientId"].as_str().map(str::to_owned),
                        turn_id: entry["turnId"].as_str().unwrap_or_default().to_owned(),
                        chat: entry["chat"].as_str().unwrap_or_default().to_owned(),
                        tool_call_id: entry["toolCall"]["toolCallId"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        raised: *at,
                        removed: None,
                    })
                    .removed = None;
            }
            StateAction::SessionInputNeededRemoved(removed) => {
                if let Some(obligation) = ledger.get_mut(&removed.id) {
                    obligation.removed.get_or_insert(*at);
                }
            }
            _ => {}
        }
    }
    ledger
}

/// How often each client tool call was run, by `(chat, tool call id)`.
type Runs = Arc<Mutex<BTreeMap<(String, String), usize>>>;

/// Runs [`EXECUTOR`]'s client tool from `client`, as a client's engine would: every
/// `toolClientExecution` entry addressed to it that the session still lists is run once by
/// this connection and completed with `chat/toolCallComplete`. Reads the monitor's log (the
/// same session channel the client would read). Abort it before the connection goes.
fn spawn_executor(
    client: Client,
    log: Arc<Mutex<Vec<(Instant, StateAction)>>>,
    runs: Runs,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut done: BTreeSet<String> = BTreeSet::new();
        loop {
            let due: Vec<(String, Obligation)> = ledger_of(&lock(&log))
                .into_iter()
                .filter(|(id, o)| {
                    o.kind == "toolClientExecution"
                        && o.client.as_deref() == Some(EXECUTOR)
                        && o.removed.is_none()
                        && !done.contains(id)
                })
                .collect();
            for (id, execution) in due {
                done.insert(id);
                *lock(&runs)
                    .entry((execution.chat.clone(), execution.tool_call_id.clone()))
                    .or_default() += 1;
                dispatch(
                    &client,
                    &execution.chat,
                    json!({
                        "type": "chat/toolCallComplete", "turnId": execution.turn_id,
                        "toolCallId": execution.tool_call_id,
                        "result": { "success": true, "pastTenseMessage": "Probed",
                                    "content": [{ "type": "text", "text": "probed" }] }
                    }),
                )
                .await;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
}

/// Creates the session with [`EXECUTOR`] as its active client, offering the `probe` tool.
async fn create_session_with_executor(client: &Client, id: &str) -> (SessionUri, ChatUri) {
    let session = SessionUri::with_provider("scripted", SafeId::new(id).unwrap()).unwrap();
    let chat = ChatUri::default_for(&session);
    let _: Value = client
        .request(
            "createSession",
            json!({
                "channel": session.as_str(), "provider": "scripted",
                "activeClient": {
                    "clientId": EXECUTOR, "displayName": "Observer 0",
                    "tools": [{ "name": "probe", "description": "Probes a part",
                                "inputSchema": { "type": "object" } }]
                }
            }),
        )
        .await
        .unwrap();
    (session, chat)
}

/// The overnight session up to the provider error: observers subscribed to everything, 16
/// workers waiting for their first confirmation, the checkpoint approved and run.
struct Night {
    host: ScriptedHost,
    grace: Duration,
    session: SessionUri,
    parent: ChatUri,
    workers: Vec<ChatUri>,
    monitor: Monitor,
    observers: Vec<Client>,
    /// The first observer running [`EXECUTOR`]'s tool.
    executor: Option<tokio::task::JoinHandle<()>>,
    /// Every run of a client tool call.
    runs: Runs,
    chat_subscriptions: usize,
    started: Instant,
    errored: Instant,
}

impl Night {
    /// `grace`: the unattended policy's window; `client_grace`: how long a disconnected
    /// client has to come back before its client tool calls fail.
    async fn start(name: &str, grace: &str, client_grace: Duration) -> Self {
        let host = ScriptedHost::start(
            overnight_script(),
            UnattendedOptions {
                client_grace,
                ..UnattendedOptions::parse("deny", Some(grace)).unwrap()
            },
        )
        .await;
        let mut observers = Vec::new();
        let mut first_events: Option<ClientEventStream> = None;
        for n in 0..OBSERVERS {
            let (client, events) = connect_with(&host.url, &format!("observer-{n}"), roomy()).await;
            first_events.get_or_insert(events);
            observers.push(client);
        }
        let mut first_events = first_events.unwrap();
        let (session, parent) = create_session_with_executor(&observers[0], name).await;
        let monitor = Monitor::start(&host.url, &session).await;
        let runs = Runs::default();
        let executor = spawn_executor(
            observers[0].clone(),
            Arc::clone(&monitor.log),
            Arc::clone(&runs),
        );
        let workers: Vec<ChatUri> = (1..=WORKERS)
            .map(|k| ChatUri::subagent(&session, &SafeId::new(format!("tool-1-{k}")).unwrap()))
            .collect();
        // Everyone renders the session and the parent chat before the turn starts: the parent
        // view claims the subagents' tool calls too, before their chats are even open.
        for observer in &observers {
            subscribe(observer, session.as_str()).await;
            subscribe(observer, parent.as_str()).await;
        }
        let started = Instant::now();
        dispatch(
            &observers[0],
            parent.as_str(),
            json!({
                "type": "chat/turnStarted", "turnId": "t1",
                "startedAt": "2026-03-01T22:00:00.000Z",
                "message": { "text": "migrate everything overnight", "origin": { "kind": "user" } }
            }),
        )
        .await;

        // The 16 worker chats appear; every observer opens all of them.
        monitor
            .until("the 16 worker chats", |m| {
                let added = m.chats_added();
                workers
                    .iter()
                    .all(|w| added.contains(w.as_str()))
                    .then_some(())
            })
            .await;
        futures_util::future::join_all(observers.iter().map(|observer| async {
            for worker in &workers {
                subscribe(observer, worker.as_str()).await;
            }
        }))
        .await;
        let chat_subscriptions = OBSERVERS * (1 + WORKERS);

        // All 16 workers and the parent wait; nothing was answered behind the observers' backs.
        monitor
            .until("17 pending confirmations", |m| {
                let pending: Vec<_> = m
                    .obligations()
                    .into_values()
                    .filter(|o| o.removed.is_none())
                    .collect();
                (pending.len() == WORKERS + 1).then_some(())
            })
            .await;
        assert!(
            monitor.obligations().values().all(|o| o.removed.is_none()),
            "an observed obligation was answered by the host: {:#?}",
            monitor.obligations()
        );

        // The user approves the checkpoint; the agent runs it, then its provider errors.
        dispatch(
            &observers[0],
            parent.as_str(),
            json!({
                "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": CHECKPOINT,
                "approved": true, "confirmed": "user-action"
            }),
        )
        .await;
        support::until(&mut first_events, |e| {
            e.channel == parent.as_str() && matches!(e.action, StateAction::ChatError(_))
        })
        .await;
        let errored = Instant::now();
        Self {
            host,
            grace: grace_of(grace),
            session,
            parent,
            workers,
            monitor,
            observers,
            executor: Some(executor),
            runs,
            chat_subscriptions,
            started,
            errored,
        }
    }

    /// Every observer connection closes at once; returns when the first close began.
    async fn all_observers_leave(&mut self) -> Instant {
        if let Some(executor) = self.executor.take() {
            executor.abort();
            let _ = executor.await;
        }
        let gone = Instant::now();
        let observers = std::mem::take(&mut self.observers);
        futures_util::future::join_all(observers.iter().map(Client::shutdown)).await;
        drop(observers);
        gone
    }

    /// The obligation of `tool_call_id` in `chat`.
    fn obligation(&self, chat: &ChatUri, tool_call_id: &str) -> Option<Obligation> {
        self.monitor
            .obligations()
            .into_values()
            .find(|o| o.chat == chat.as_str() && o.tool_call_id == tool_call_id)
    }

    /// Waits until all 33 obligations and all 32 client tool executions were listed and
    /// removed, and every chat is idle; returns the confirmations' ledger and the session state.
    async fn until_settled(&self, auditor: &Client) -> (BTreeMap<String, Obligation>, Value) {
        let ledger = self
            .monitor
            .until(
                "all 33 obligations and 32 client executions answered",
                |m| {
                    let ledger = m.obligations();
                    let executions = m.executions();
                    (ledger.len() == 2 * WORKERS + 1
                        && ledger.values().all(|o| o.removed.is_some())
                        && executions.len() == 2 * WORKERS
                        && executions.values().all(|o| o.removed.is_some()))
                    .then_some(ledger)
                },
            )
            .await;
        let deadline = Instant::now() + STALL;
        loop {
            let session = state_json(auditor, self.session.as_str()).await;
            let chats = session["chats"].as_array().cloned().unwrap_or_default();
            let busy: Vec<&Value> = chats
                .iter()
                .filter(|c| c["status"].as_u64().unwrap_or(0) & 8 != 0)
                .collect();
            if chats.len() == WORKERS + 1 && busy.is_empty() {
                return (ledger, session);
            }
            assert!(
                Instant::now() < deadline,
                "chats still busy after every obligation was answered: {busy:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The chat's state as JSON.
    async fn chat(&self, auditor: &Client, chat: &ChatUri) -> Value {
        state_json(auditor, chat.as_str()).await
    }

    fn effects(&self) -> Vec<String> {
        std::fs::read_to_string(self.host.work.join("effects.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The tool calls of a chat's only turn, by id.
fn tool_calls(chat: &Value) -> BTreeMap<String, Value> {
    assert!(
        chat.get("activeTurn").is_none_or(Value::is_null),
        "a turn is still active: {chat:#}"
    );
    let turns = chat["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 1, "one turn: {chat:#}");
    turns[0]["responseParts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["kind"] == "toolCall")
        .map(|part| {
            let call = part["toolCall"].clone();
            (call["toolCallId"].as_str().unwrap().to_owned(), call)
        })
        .collect()
}

fn turn_state(chat: &Value) -> String {
    chat["turns"][0]["state"].as_str().unwrap_or("-").to_owned()
}

/// Asserts a worker chat's turn completed with both calls in the expected outcome (`true`:
/// ran, `false`: denied).
fn assert_worker(chat: &Value, k: usize, ran: [bool; 2]) {
    assert_eq!(turn_state(chat), "complete", "worker {k}: {chat:#}");
    let calls = tool_calls(chat);
    for (n, ran) in [(1, ran[0]), (2, ran[1])] {
        let call = &calls[&worker_call(k, n)];
        if ran {
            assert_eq!(call["status"], "completed", "worker {k} call {n}: {call:#}");
            assert_eq!(call["success"], true, "worker {k} call {n}: {call:#}");
        } else {
            assert_eq!(call["status"], "cancelled", "worker {k} call {n}: {call:#}");
            assert_eq!(call["reason"], "denied", "worker {k} call {n}: {call:#}");
        }
    }
}

/// Asserts worker `k`'s two client tool calls: the first ran on the client; the second ran
/// there too (`second_ran`) or was failed by the host for a client that had left.
fn assert_probes(chat: &Value, k: usize, second_ran: bool) {
    let calls = tool_calls(chat);
    for (n, ran) in [(1, true), (2, second_ran)] {
        let call = &calls[&probe_call(k, n)];
        assert_eq!(
            call["status"], "completed",
            "worker {k} probe {n}: {call:#}"
        );
        assert_eq!(
            call["contributor"],
            json!({ "kind": "client", "clientId": EXECUTOR })
        );
        if ran {
            assert_eq!(call["success"], true, "worker {k} probe {n}: {call:#}");
        } else {
            assert_eq!(call["success"], false, "worker {k} probe {n}: {call:#}");
            assert_eq!(
                call["error"]["code"], "clientUnavailable",
                "worker {k} probe {n}: {call:#}"
            );
        }
    }
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overnight_sixteen_subagents_survive_a_provider_error_and_a_mass_disconnect() {
    let _serial = SERIAL.lock().await;
    let client_grace = Duration::from_millis(1000);
    let mut night = Night::start("overnight", "200ms", client_grace).await;
    let grace = night.grace;
    // The first probe of every worker ran on the executing observer before the error, once.
    let probed_before: BTreeSet<String> = lock(&night.runs)
        .iter()
        .map(|((_, call), runs)| {
            assert_eq!(*runs, 1, "{call} ran {runs} times");
            call.clone()
        })
        .collect();
    assert_eq!(
        probed_before,
        (1..=WORKERS)
            .map(|k| probe_call(k, 1))
            .collect::<BTreeSet<_>>()
    );

    // The provider error ended only the parent's turn: the workers still wait, claimed.
    for (k, worker) in (1..=WORKERS).zip(&night.workers) {
        let first = night
            .obligation(worker, &worker_call(k, 1))
            .unwrap_or_else(|| panic!("worker {k} waits"));
        assert!(
            first.removed.is_none(),
            "worker {k} was answered while observed"
        );
    }
    let gone = night.all_observers_leave().await;

    let (auditor, _auditor_events) = connect_with(&night.host.url, "auditor", roomy()).await;
    // The auditor reads the session channel while waiting (that claims nothing), chats only
    // once everything is settled.
    let (ledger, session) = night.until_settled(&auditor).await;
    let answered_at = ledger
        .values()
        .chain(night.monitor.executions().values())
        .filter_map(|o| o.removed)
        .max()
        .unwrap();

    // Every worker obligation was answered within its window (+ slack), never before it: the
    // first ones from the moment the observers left, the second ones from when they were raised.
    let mut latencies = Vec::new();
    for (id, obligation) in &ledger {
        if obligation.tool_call_id == CHECKPOINT {
            continue;
        }
        let unclaimed = obligation.raised.max(gone);
        let latency = obligation.removed.unwrap() - unclaimed;
        assert!(
            latency + EARLY >= grace,
            "{id} answered {latency:?} after it became unclaimed, before the {grace:?} window"
        );
        assert!(
            latency <= grace + SLACK,
            "{id} answered {latency:?} after it became unclaimed (window {grace:?})"
        );
        latencies.push(latency);
    }
    assert_eq!(latencies.len(), 2 * WORKERS);

    // The second probes came after the executing client left: nobody ran them, the host
    // failed each one when the client's window ended (it never came back).
    let executions = night.monitor.executions();
    assert_eq!(executions.len(), 2 * WORKERS, "{executions:#?}");
    let mut failed_at = Vec::new();
    for k in 1..=WORKERS {
        let execution = executions
            .values()
            .find(|o| o.tool_call_id == probe_call(k, 2))
            .unwrap_or_else(|| panic!("worker {k}'s second probe was listed"));
        assert_eq!(execution.client.as_deref(), Some(EXECUTOR));
        let latency = execution.removed.expect("answered") - gone;
        assert!(
            latency + EARLY >= client_grace && latency <= client_grace + SLACK,
            "worker {k}'s second probe failed {latency:?} after the client left \
             (window {client_grace:?})"
        );
        failed_at.push(latency);
    }
    assert_eq!(
        lock(&night.runs).len(),
        WORKERS,
        "no second probe ran anywhere"
    );
    assert!(
        !session["activeClients"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["clientId"] == EXECUTOR),
        "the executing client left the session: {session:#}"
    );

    // The session ends consistent: nothing listed, every chat idle, every turn final.
    assert!(
        session
            .get("inputNeeded")
            .is_none_or(|l| l.as_array().is_some_and(Vec::is_empty)),
        "{session:#}"
    );
    let parent = night.chat(&auditor, &night.parent).await;
    assert_eq!(turn_state(&parent), "error", "{parent:#}");
    let calls = tool_calls(&parent);
    assert_eq!(calls[CHECKPOINT]["status"], "completed");
    assert_eq!(calls[CHECKPOINT]["success"], true);
    for k in 1..=WORKERS {
        // The `Task` calls were still running when the turn ended.
        assert_eq!(calls[&format!("tool-1-{k}")]["status"], "cancelled");
    }
    for (k, worker) in (1..=WORKERS).zip(&night.workers) {
        let chat = night.chat(&auditor, worker).await;
        assert_worker(&chat, k, [false, false]);
        assert_probes(&chat, k, false);
        let text = chat.to_string();
        assert!(text.contains(&format!("Worker {k}: done.")), "{chat:#}");
    }
    // Exactly the approved call ran; no denied one did.
    assert_eq!(night.effects(), ["parent-checkpoint"]);

    latencies.sort();
    println!(
        "overnight: {WORKERS} subagents, {} chat subscriptions on {OBSERVERS} connections; \
         provider error {} after the turn started",
        night.chat_subscriptions,
        ms(night.errored - night.started)
    );
    println!(
        "overnight: {} obligations answered (1 approved by the user, {} denied by the host); \
         answer latency after becoming unclaimed: min {}, median {}, max {} (grace {})",
        ledger.len(),
        latencies.len(),
        ms(latencies[0]),
        ms(latencies[latencies.len() / 2]),
        ms(*latencies.last().unwrap()),
        ms(grace)
    );
    failed_at.sort();
    println!(
        "overnight: {WORKERS} client tool calls ran once each on the client before the error; \
         {} issued after it left failed with clientUnavailable {} / {} after the disconnect \
         (client grace {})",
        failed_at.len(),
        ms(failed_at[0]),
        ms(*failed_at.last().unwrap()),
        ms(client_grace)
    );
    println!(
        "overnight: everything answered {} after the observers left; session settled with \
         inputNeeded empty and {} idle chats",
        ms(answered_at - gone),
        session["chats"].as_array().map_or(0, Vec::len)
    );
    auditor.shutdown().await;
    night.monitor.client.shutdown().await;
}

/// The pending confirmations a chat snapshot shows (tool call ids).
fn pending_calls(chat: &SnapshotState) -> Vec<String> {
    let SnapshotState::Chat(chat) = chat else {
        panic!("not a chat snapshot: {chat:?}");
    };
    let Some(turn) = &chat.active_turn else {
        return Vec::new();
    };
    let turn = serde_json::to_value(turn).unwrap();
    turn["responseParts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| {
            part["kind"] == "toolCall" && part["toolCall"]["status"] == "pending-confirmation"
        })
        .map(|part| part["toolCall"]["toolCallId"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether every one of `calls` was listed in `ledger` and has been removed.
fn all_answered(
    ledger: &BTreeMap<String, Obligation>,
    mut calls: impl Iterator<Item = String>,
) -> bool {
    calls.all(|call| {
        ledger
            .values()
            .any(|o| o.tool_call_id == call && o.removed.is_some())
    })
}

/// Dispatches the approval of `tool_call_id` twice (a double click, a retried send).
async fn approve_twice(client: &Client, chat: &ChatUri, turn_id: &str, tool_call_id: &str) {
    for _ in 0..2 {
        dispatch(
            client,
            chat.as_str(),
            json!({
                "type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": tool_call_id,
                "approved": true, "confirmed": "user-action"
            }),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overnight_reconnect_claims_what_it_shows_and_nothing_runs_twice() {
    let _serial = SERIAL.lock().await;
    // A longer window: the returning client must subscribe inside it on a loaded machine.
    let client_grace = Duration::from_secs(2);
    let mut night = Night::start("overnight-reconnect", "1s", client_grace).await;
    let grace = night.grace;
    let gone = night.all_observers_leave().await;

    // The client comes back (same client id, new connection) and shows workers 1-8.
    let (back, mut back_events) = connect_with(&night.host.url, "observer-0", roomy()).await;
    let rejected = Arc::new(AtomicUsize::new(0));
    let rejections = Arc::clone(&rejected);
    tokio::spawn(async move {
        while let Some(event) = back_events.recv().await {
            if let SubscriptionEvent::Action(envelope) = event.event
                && envelope.rejection_reason.is_some()
                && matches!(envelope.action, StateAction::ChatToolCallConfirmed(_))
            {
                rejections.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    subscribe(&back, night.session.as_str()).await;
    // Back inside its window: it runs its own tool again, from this connection.
    let back_executor = spawn_executor(
        back.clone(),
        Arc::clone(&night.monitor.log),
        Arc::clone(&night.runs),
    );
    let shown: Vec<(usize, ChatUri)> = (1..=WORKERS / 2)
        .map(|k| (k, night.workers[k - 1].clone()))
        .collect();
    let snapshots = futures_util::future::join_all(shown.iter().map(|(k, worker)| {
        let back = &back;
        async move { (*k, pending_calls(&subscribe(back, worker.as_str()).await)) }
    }))
    .await;
    let claimed_at = Instant::now();
    let shown_pending: BTreeMap<usize, Vec<String>> = snapshots.into_iter().collect();
    assert!(
        shown_pending.values().all(|calls| calls.len() == 1),
        "every shown worker waits for one confirmation {:?} after the disconnect:          {shown_pending:?}",
        claimed_at - gone
    );

    // It approves what workers 1-4 ask for (each approval sent twice), now and as it comes.
    let approvers = 1..=WORKERS / 4;
    let mut approved: BTreeSet<String> = BTreeSet::new();
    let deadline = Instant::now() + STALL;
    loop {
        for k in approvers.clone() {
            let worker = &night.workers[k - 1];
            for n in 1..=2 {
                let call = worker_call(k, n);
                if !approved.contains(&call)
                    && night
                        .obligation(worker, &call)
                        .is_some_and(|o| o.removed.is_none())
                {
                    approve_twice(&back, worker, &format!("tool-1-{k}-turn"), &call).await;
                    approved.insert(call);
                }
            }
        }
        let done = approvers.clone().all(|k| {
            night
                .obligation(&night.workers[k - 1], &worker_call(k, 2))
                .is_some_and(|o| o.removed.is_some())
        });
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "workers 1-4 did not finish");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Workers 9-16 were not shown: the host denies them, both calls, one window each.
    night
        .monitor
        .until("workers 9-16 denied twice", |m| {
            all_answered(
                &m.obligations(),
                (WORKERS / 2 + 1..=WORKERS).map(|k| worker_call(k, 2)),
            )
            .then_some(())
        })
        .await;
    // Workers 5-8 stay claimed by the returning client for two whole windows: unanswered.
    tokio::time::sleep_until(claimed_at + 2 * grace).await;
    for k in WORKERS / 4 + 1..=WORKERS / 2 {
        let waiting = &shown_pending[&k][0];
        let obligation = night
            .obligation(&night.workers[k - 1], waiting)
            .expect("listed");
        assert!(
            obligation.removed.is_none(),
            "worker {k}: {waiting} was answered while the returning client showed it"
        );
    }

    // Before it leaves, the second probes of the workers it saw through (1-4 approved, 9-16
    // denied) have run on it.
    night
        .monitor
        .until("the returning client ran 12 second probes", |m| {
            all_answered(
                &m.executions(),
                (1..=WORKERS)
                    .filter(|k| !(WORKERS / 4 + 1..=WORKERS / 2).contains(k))
                    .map(|k| probe_call(k, 2)),
            )
            .then_some(())
        })
        .await;

    // The client leaves again: what it held is denied one window later.
    back_executor.abort();
    let _ = back_executor.await;
    let left = Instant::now();
    back.shutdown().await;
    drop(back);
    let (auditor, _auditor_events) = connect_with(&night.host.url, "auditor", roomy()).await;
    let (ledger, session) = night.until_settled(&auditor).await;
    let mut held_latencies = Vec::new();
    for k in WORKERS / 4 + 1..=WORKERS / 2 {
        let waiting = &shown_pending[&k][0];
        let obligation = night.obligation(&night.workers[k - 1], waiting).unwrap();
        let latency = obligation.removed.unwrap() - left;
        assert!(
            latency + EARLY >= grace && latency <= grace + SLACK,
            "worker {k}: {waiting} answered {latency:?} after the client left (window {grace:?})"
        );
        held_latencies.push(latency);
    }
    assert!(
        session
            .get("inputNeeded")
            .is_none_or(|l| l.as_array().is_some_and(Vec::is_empty)),
        "{session:#}"
    );

    // What ran is exactly what was approved, each once; nothing denied ran.
    let mut ran: Vec<String> = vec!["parent-checkpoint".to_owned()];
    for (k, worker) in (1..=WORKERS).zip(&night.workers) {
        let chat = night.chat(&auditor, worker).await;
        let outcome = [1, 2].map(|n| approved.contains(&worker_call(k, n)));
        assert_worker(&chat, k, outcome);
        for (n, letter) in [(0, 'a'), (1, 'b')] {
            if outcome[n] {
                ran.push(format!("worker-{k}-{letter}"));
            }
        }
    }
    let mut effects = night.effects();
    effects.sort();
    ran.sort();
    assert_eq!(effects, ran, "the append-only log");

    // Client tools: every first probe ran once before the disconnect; the second probes of
    // workers the returning client saw through ran once on it; those of the workers it held
    // (5-8, reaching their probe only after it left again) failed at the end of its window.
    let held = WORKERS / 4 + 1..=WORKERS / 2;
    let mut expected_runs: BTreeSet<String> = (1..=WORKERS).map(|k| probe_call(k, 1)).collect();
    expected_runs.extend(
        (1..=WORKERS)
            .filter(|k| !held.contains(k))
            .map(|k| probe_call(k, 2)),
    );
    let runs = lock(&night.runs).clone();
    for ((_, call), count) in &runs {
        assert_eq!(*count, 1, "{call} ran {count} times");
    }
    assert_eq!(
        runs.keys()
            .map(|(_, call)| call.clone())
            .collect::<BTreeSet<_>>(),
        expected_runs
    );
    let executions = night.monitor.executions();
    let mut unavailable_at = Vec::new();
    for (k, worker) in (1..=WORKERS).zip(&night.workers) {
        let chat = night.chat(&auditor, worker).await;
        assert_probes(&chat, k, !held.contains(&k));
        if held.contains(&k) {
            let execution = executions
                .values()
                .find(|o| o.tool_call_id == probe_call(k, 2))
                .expect("listed");
            let latency = execution.removed.expect("answered") - left;
            assert!(
                latency + EARLY >= client_grace && latency <= client_grace + SLACK,
                "worker {k}'s second probe failed {latency:?} after the client left \
                 (window {client_grace:?})"
            );
            unavailable_at.push(latency);
        }
    }
    let duplicates = rejected.load(Ordering::SeqCst);
    assert_eq!(
        duplicates,
        approved.len(),
        "every second approval is rejected, none reaches the agent"
    );
    assert_eq!(ledger.len(), 2 * WORKERS + 1);

    println!(
        "overnight reconnect: back {} after the disconnect, claimed {} waiting calls in 8 chats",
        ms(claimed_at - gone),
        shown_pending.values().map(Vec::len).sum::<usize>()
    );
    println!(
        "overnight reconnect: {} approvals sent twice ({} duplicates rejected), {} effects in \
         the log (checkpoint included), each exactly once; {} obligations answered in all",
        approved.len(),
        duplicates,
        effects.len(),
        ledger.len()
    );
    println!(
        "overnight reconnect: {} client tool calls ran, each once ({} on the returning \
         client); {} failed with clientUnavailable {} / {} after it left (client grace {})",
        runs.len(),
        runs.len() - WORKERS,
        unavailable_at.len(),
        ms(*unavailable_at.iter().min().unwrap()),
        ms(*unavailable_at.iter().max().unwrap()),
        ms(client_grace)
    );
    println!(
        "overnight reconnect: held calls denied {} / {} after the client left (grace {})",
        ms(*held_latencies.iter().min().unwrap()),
        ms(*held_latencies.iter().max().unwrap()),
        ms(grace)
    );
    auditor.shutdown().await;
    night.monitor.client.shutdown().await;
}

const LOAD_SESSIONS: usize = 50;
const LOAD_CHATS: usize = 4;
const LOAD_CONNECTIONS: usize = 10;
/// The chat of each session whose confirmation no client answers: its subscribers leave it
/// when the confirmation shows, and the policy denies it.
const POLICY_CHAT: usize = 3;
/// Peak RSS of the whole test process (host and its 11 clients) must stay under this.
const PEAK_RSS_BOUND_KIB: u64 = 1024 * 1024;

/// Every turn streams, waits for a confirmation to append to `load.log`, streams again.
fn load_script() -> Value {
    let text = "Streaming a long answer while two hundred other chats do the same. ".repeat(3);
    json!({ "turns": [{ "steps": [
        { "kind": "say", "text": text, "chunk": 10, "delayMs": 10 },
        { "kind": "tool", "name": "append_log", "displayName": "Append to log", "confirm": true,
          "effect": { "kind": "appendFile", "path": "load.log", "content": "ran\n" } },
        { "kind": "say", "text": text, "chunk": 10, "delayMs": 10 }
    ]}]})
}

/// A `/proc/self/status` figure in KiB (`VmHWM`: peak RSS, `VmRSS`: current).
fn proc_status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// What the load clients saw and did.
#[derive(Default)]
struct LoadStats {
    /// Chat URI → (session index, chat index) of the current round.
    chats: Mutex<HashMap<String, (usize, usize)>>,
    frames: AtomicUsize,
    approvals: AtomicUsize,
    left: AtomicUsize,
    /// Turn completions seen by connection 0 (subscribed to every client-answered chat).
    completed: AtomicUsize,
    /// Connection 0: when each confirmation entry was listed, and the answer latencies.
    listed: Mutex<HashMap<String, (Instant, bool)>>,
    client_latencies: Mutex<Vec<Duration>>,
    policy_latencies: Mutex<Vec<Duration>>,
}

/// One load connection's reader: approves the confirmations assigned to it, leaves the policy
/// chats when their confirmation shows, counts.
async fn load_reader(
    j: usize,
    client: Client,
    mut events: ClientEventStream,
    stats: Arc<LoadStats>,
) {
    let mut done: std::collections::HashSet<String> = std::collections::HashSet::new();
    while let Some(event) = events.recv().await {
        let SubscriptionEvent::Action(envelope) = event.event else {
            continue;
        };
        stats.frames.fetch_add(1, Ordering::Relaxed);
        if envelope.rejection_reason.is_some() {
            continue;
        }
        match &envelope.action {
            StateAction::SessionInputNeededSet(set) => {
                let SessionInputRequest::ToolConfirmation(entry) = &set.request else {
                    continue;
                };
                let Some((s, c)) = lock(&stats.chats).get(&entry.chat).copied() else {
                    continue;
                };
                if j == 0 {
                    lock(&stats.listed)
                        .entry(entry.id.clone())
                        .or_insert((Instant::now(), c == POLICY_CHAT));
                }
                if !done.insert(entry.id.clone()) {
                    continue;
                }
                if c == POLICY_CHAT {
                    unsubscribe(&client, &entry.chat).await;
                    stats.left.fetch_add(1, Ordering::Relaxed);
                } else if (s * LOAD_CHATS + c) % LOAD_CONNECTIONS == j {
                    let call = serde_json::to_value(&entry.tool_call).unwrap();
                    dispatch(
                        &client,
                        &entry.chat,
                        json!({
                            "type": "chat/toolCallConfirmed", "turnId": entry.turn_id,
                            "toolCallId": call["toolCallId"], "approved": true,
                            "confirmed": "user-action"
                        }),
                    )
                    .await;
                    stats.approvals.fetch_add(1, Ordering::Relaxed);
                }
            }
            StateAction::SessionInputNeededRemoved(removed) if j == 0 => {
                if let Some((listed, policy)) = lock(&stats.listed).get(&removed.id).copied() {
                    let latencies = if policy {
                        &stats.policy_latencies
                    } else {
                        &stats.client_latencies
                    };
                    lock(latencies).push(listed.elapsed());
                }
            }
            StateAction::ChatTurnComplete(_) if j == 0 => {
                stats.completed.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

/// What one load round measured.
struct Round {
    streaming: Duration,
    approved: usize,
    denied: usize,
    frames: usize,
    rss_after_kib: u64,
}

async fn load_round(
    round: usize,
    host: &ScriptedHost,
    connections: &[Client],
    poller: &Client,
    stats: &LoadStats,
) -> Round {
    // 50 sessions of 4 chats: the default chat and three more.
    let mut sessions = Vec::new();
    let mut chats = HashMap::new();
    for s in 0..LOAD_SESSIONS {
        let (session, default) = create_session(poller, &format!("load-{round}-{s}")).await;
        chats.insert(default.to_string(), (s, 0));
        for c in 1..LOAD_CHATS {
            let chat = format!("ahp-chat:/load-{round}-{s}-{c}");
            let _: Value = poller
                .request(
                    "createChat",
                    json!({ "channel": session.as_str(), "chat": chat }),
                )
                .await
                .unwrap();
            chats.insert(chat, (s, c));
        }
        sessions.push(session);
    }
    let mut ordered: Vec<(String, (usize, usize))> = chats.clone().into_iter().collect();
    ordered.sort_by_key(|(_, at)| *at);
    *lock(&stats.chats) = chats;
    lock(&stats.listed).clear();
    lock(&stats.client_latencies).clear();
    lock(&stats.policy_latencies).clear();
    for counter in [
        &stats.frames,
        &stats.approvals,
        &stats.left,
        &stats.completed,
    ] {
        counter.store(0, Ordering::SeqCst);
    }

    // Ten subscribers for every session and chat.
    futures_util::future::join_all(connections.iter().map(|client| async {
        for session in &sessions {
            subscribe(client, session.as_str()).await;
        }
        for (chat, _) in &ordered {
            subscribe(client, chat).await;
        }
    }))
    .await;

    // All 200 turns at once.
    let started = Instant::now();
    futures_util::future::join_all(ordered.iter().enumerate().map(|(i, (chat, _))| {
        dispatch(
            &connections[i % LOAD_CONNECTIONS],
            chat,
            json!({
                "type": "chat/turnStarted", "turnId": "t1",
                "startedAt": "2026-03-01T23:00:00.000Z",
                "message": { "text": "stream, then append", "origin": { "kind": "user" } }
            }),
        )
    }))
    .await;

    // Every confirmation shows; the client-answered turns complete; then every session is
    // settled: nothing listed, no chat in progress.
    let policy_chats = LOAD_SESSIONS;
    let client_chats = LOAD_SESSIONS * (LOAD_CHATS - 1);
    let deadline = started + Duration::from_secs(120);
    while stats.completed.load(Ordering::SeqCst) < client_chats
        || stats.left.load(Ordering::SeqCst) < policy_chats * LOAD_CONNECTIONS
    {
        assert!(
            Instant::now() < deadline,
            "round {round}: {} of {client_chats} turns completed, {} of {} policy chats left",
            stats.completed.load(Ordering::SeqCst),
            stats.left.load(Ordering::SeqCst),
            policy_chats * LOAD_CONNECTIONS
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    loop {
        let mut unsettled = Vec::new();
        for session in &sessions {
            let state = state_json(poller, session.as_str()).await;
            let listed = state
                .get("inputNeeded")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let busy = state["chats"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["status"].as_u64().unwrap_or(0) & 8 != 0)
                .count();
            if listed > 0 || busy > 0 {
                unsettled.push(format!("{session}: {listed} listed, {busy} busy"));
            }
        }
        if unsettled.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "round {round}: stranded: {unsettled:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let streaming = started.elapsed();

    // Every turn is complete; each confirmation was answered once, by its client or the policy.
    let (mut approved, mut denied) = (0, 0);
    for (chat, (s, c)) in &ordered {
        let state = state_json(poller, chat).await;
        assert_eq!(turn_state(&state), "complete", "{chat}: {state:#}");
        let calls = tool_calls(&state);
        let call = calls.values().next().expect("one tool call");
        if *c == POLICY_CHAT {
            assert_eq!(
                call["status"], "cancelled",
                "session {s} chat {c}: {call:#}"
            );
            assert_eq!(call["reason"], "denied", "session {s} chat {c}: {call:#}");
            denied += 1;
        } else {
            assert_eq!(
                call["status"], "completed",
                "session {s} chat {c}: {call:#}"
            );
            approved += 1;
        }
    }
    assert_eq!((approved, denied), (client_chats, policy_chats));
    assert_eq!(stats.approvals.load(Ordering::SeqCst), client_chats);
    let log = std::fs::read_to_string(host.work.join("load.log")).unwrap_or_default();
    assert_eq!(
        log.lines().count(),
        client_chats * round,
        "each approved call ran exactly once"
    );
    let frames = stats.frames.load(Ordering::SeqCst);
    let (client_latency, policy_latency) = {
        let mut client = lock(&stats.client_latencies).clone();
        let mut policy = lock(&stats.policy_latencies).clone();
        client.sort();
        policy.sort();
        (client, policy)
    };
    assert_eq!(policy_latency.len(), policy_chats);
    let grace = grace_of("200ms");
    assert!(
        policy_latency[0] + EARLY >= grace,
        "a policy answer before its window: {:?}",
        policy_latency[0]
    );
    println!(
        "overnight load round {round}: {} chats in {LOAD_SESSIONS} sessions streamed and \
         settled in {}; {} chat subscriptions on {LOAD_CONNECTIONS} connections; {frames} \
         action frames delivered; {approved} \
         confirmations approved by clients (median {} after listed), {denied} denied by the \
         policy (median {}, max {})",
        ordered.len(),
        ms(streaming),
        ordered.len() * LOAD_CONNECTIONS,
        ms(client_latency[client_latency.len() / 2]),
        ms(policy_latency[policy_latency.len() / 2]),
        ms(*policy_latency.last().unwrap())
    );

    // Everyone lets go, and the sessions' live state is freed.
    futures_util::future::join_all(connections.iter().map(|client| async {
        for (chat, (_, c)) in &ordered {
            if *c != POLICY_CHAT {
                unsubscribe(client, chat).await;
            }
        }
        for session in &sessions {
            unsubscribe(client, session.as_str()).await;
        }
    }))
    .await;
    for session in &sessions {
        let _: Value = poller
            .request("disposeSession", json!({ "channel": session.as_str() }))
            .await
            .unwrap();
    }
    Round {
        streaming,
        approved,
        denied,
        frames,
        rss_after_kib: proc_status_kib("VmRSS"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overnight_load_fifty_sessions_of_four_chats_with_ten_subscribers_each() {
    if std::env::var("AGENTHOST_SLOW_TESTS").ok().as_deref() != Some("1") {
        println!("overnight load: skipped (set AGENTHOST_SLOW_TESTS=1)");
        return;
    }
    let _serial = SERIAL.lock().await;
    let began = Instant::now();
    let rss_before = proc_status_kib("VmRSS");
    let host = ScriptedHost::start(
        load_script(),
        UnattendedOptions::parse("deny", Some("200ms")).unwrap(),
    )
    .await;
    let stats = Arc::new(LoadStats::default());
    let mut connections = Vec::new();
    for j in 0..LOAD_CONNECTIONS {
        let (client, events) = connect_with(&host.url, &format!("load-{j}"), roomy()).await;
        tokio::spawn(load_reader(j, client.clone(), events, Arc::clone(&stats)));
        connections.push(client);
    }
    let (poller, _poller_events) = connect_with(&host.url, "poller", roomy()).await;

    let first = load_round(1, &host, &connections, &poller, &stats).await;
    let second = load_round(2, &host, &connections, &poller, &stats).await;
    let peak = proc_status_kib("VmHWM");
    println!(
        "overnight load: RSS before {}, after round 1 {}, after round 2 {}; peak RSS (VmHWM) {}; \
         {} + {} obligations answered ({} + {} by the policy); {} and {} frames; total {}",
        mib(rss_before),
        mib(first.rss_after_kib),
        mib(second.rss_after_kib),
        mib(peak),
        first.approved + first.denied,
        second.approved + second.denied,
        first.denied,
        second.denied,
        first.frames,
        second.frames,
        ms(began.elapsed())
    );
    println!(
        "overnight load: rounds streamed in {} and {}",
        ms(first.streaming),
        ms(second.streaming)
    );
    assert!(
        peak < PEAK_RSS_BOUND_KIB,
        "peak RSS {} over the bound {}",
        mib(peak),
        mib(PEAK_RSS_BOUND_KIB)
    );
    // A second identical round may not grow memory like the first did: allow a quarter of the
    // first round's level, at least 64 MiB, for allocator slack.
    let slack = (first.rss_after_kib / 4).max(64 * 1024);
    assert!(
        second.rss_after_kib <= first.rss_after_kib + slack,
        "RSS grew from {} to {} between two identical rounds",
        mib(first.rss_after_kib),
        mib(second.rss_after_kib)
    );
    for client in connections.iter().chain([&poller]) {
        client.shutdown().await;
    }
}

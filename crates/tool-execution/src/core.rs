//! The engine's synchronous state machine.
//!
//! It owns every piece of mutable state of one session engine; the async wrapper
//! ([`crate::SessionEngine`]) calls it under one lock and carries out the [`Effects`] it returns
//! (dispatches, runs to spawn, timer changes) after releasing the lock. Nothing in here awaits, so
//! re-validation after an await is simply "call back into the core and check the attempt".

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use agenthost_protocol::ahp_types::state::{
    SessionInputRequest, ToolCallConfirmationReason, ToolCallResult, ToolInput, ToolResultContent,
};
use agenthost_protocol::ids::{InputKey, ToolCallKey};
use agenthost_protocol::{StateAction, Uri};
use tokio::time::Instant;

use crate::answers::{self, AnswerKind, AnswerTarget};
use crate::cancel::CancelToken;
use crate::config::{AutoAnswer, ClientConfirmationMode, EngineConfig};
use crate::entry::{Class, Gate, Phase};
use crate::invocation::{InvocationStatus, LocalDecision, Presentation, SharedInvocation};
use crate::keys::{ClaimId, ClaimKey, ClaimScope, Claimant};
use crate::runner::{ToolLookup, ToolRunner};

mod claims;
mod decisions;
mod runs;
mod timers;

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// An entry id: shared, so the indexes that mention an entry do not copy its id.
type Id = Arc<str>;

/// An armed timer: its deadline and a sequence number unique among timers.
type TimerSlot = (Instant, u64);

/// Longest parent chain followed when resolving subagent ancestry (guards against cycles).
const MAX_ANCESTRY: usize = 32;

/// What the wrapper must do after a core operation, outside the lock.
#[derive(Default)]
pub(crate) struct Effects {
    /// Answers to hand to the sink, in order.
    pub dispatches: Vec<(Uri, StateAction)>,
    /// Runs to spawn.
    pub runs: Vec<RunTicket>,
    /// Whether the earliest timer deadline may have moved.
    pub timers_changed: bool,
}

/// Everything a spawned run needs; the attempt number is its identity for re-validation.
pub(crate) struct RunTicket {
    pub key: ToolCallKey,
    pub attempt: u64,
    pub tool_name: String,
    pub display_name: String,
    pub input: Option<ToolInput>,
    pub pre_approval: Option<ToolCallConfirmationReason>,
    pub must_ask: bool,
    pub context: Option<Claimant>,
    pub token: CancelToken,
    pub invocation: SharedInvocation,
}

/// How a local gate was passed without asking.
pub(crate) enum GatePass {
    /// The tool needs no confirmation.
    NotNeeded,
    /// A local setting approved it.
    Setting,
}

/// Counts of the engine's state, for diagnostics and leak checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineStats {
    /// Mirrored entries (every kind, ignored ones included).
    pub entries: usize,
    /// Tool calls with per-call state (lease holders or observer-retained invocations).
    pub tool_calls: usize,
    /// Tool calls whose lease count is above zero (live entries or an active run).
    pub leases: usize,
    /// Runs in flight (execution records).
    pub records: usize,
    /// Shared invocations registered.
    pub invocations: usize,
    /// Tool calls carrying a start marker.
    pub started: usize,
    /// Armed timers (grace windows, local-confirmation windows, hand-over windows).
    pub timers: usize,
    /// Live claims.
    pub claims: usize,
    /// Input requests with state (funnel).
    pub inputs: usize,
}

/// Where a run stands locally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunPhase {
    Preparing,
    AwaitingLocalConfirmation,
    Executing,
}

/// The execution record of a tool call while a run is in flight; holds one lease.
struct Record {
    attempt: u64,
    token: CancelToken,
    phase: RunPhase,
    /// The entry holding cancellation authority; `None` during a hand-over.
    entry: Option<Id>,
    /// The generation of the entry the run started from.
    generation: u64,
    /// Whether the run started from the confirmation-phase entry (the protocol call was still
    /// `pending-confirmation`).
    from_confirmation: bool,
    local_deadline: Option<TimerSlot>,
    handover_deadline: Option<TimerSlot>,
}

/// Per-tool-call state, forgotten when nothing holds it.
#[derive(Default)]
struct Call {
    /// Live entries referring to the call: one lease hold each.
    entries: Vec<Id>,
    record: Option<Record>,
    invocation: Option<SharedInvocation>,
    /// The start marker.
    started: bool,
    /// Funnel bits (`AnswerKind::bit`).
    funnel: u8,
    /// The call was ended remotely (skipped or denied by someone else): never start it.
    closed: bool,
}

impl Call {
    fn lease(&self) -> usize {
        self.entries.len() + usize::from(self.record.is_some())
    }
}

#[derive(Default)]
struct InputState {
    entries: Vec<Id>,
    answered: bool,
}

struct Entry {
    value: SessionInputRequest,
    chat: Uri,
    class: Class,
    /// Insertion number: orders the chat index deterministically.
    serial: u64,
    generation: u64,
    deadline: Option<TimerSlot>,
    answered: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Grace(Id),
    LocalConfirmation(ToolCallKey),
    Handover(ToolCallKey),
}

#[derive(Default)]
struct Claims {
    next: u64,
    scopes: Map<ClaimId, ClaimScope>,
    by_call: Map<ToolCallKey, BTreeMap<ClaimId, Claimant>>,
    by_input: Map<InputKey, BTreeMap<ClaimId, Claimant>>,
    by_chat: Map<Uri, BTreeMap<ClaimId, Claimant>>,
}

/// The state of one session engine.
pub(crate) struct Core {
    config: EngineConfig,
    runner: Arc<dyn ToolRunner>,
    /// Boxed: the map's slots stay small while it grows.
    entries: Map<Id, Box<Entry>>,
    by_chat: Map<Uri, BTreeMap<u64, Id>>,
    calls: Map<ToolCallKey, Call>,
    inputs: Map<InputKey, InputState>,
    claims: Claims,
    parents: Map<Uri, Uri>,
    children: Map<Uri, BTreeSet<Uri>>,
    timers: BTreeMap<TimerSlot, Timer>,
    next_timer: u64,
    next_serial: u64,
    next_attempt: u64,
    /// Runs currently showing a local confirmation.
    awaiting: usize,
    disposed: bool,
}

/// The outcome of an observer answer passed through the funnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerOutcome {
    /// First answer of its kind: dispatched.
    Dispatched,
    /// An answer of this kind was already dispatched for the obligation: dropped.
    Duplicate,
    /// Not an answer (a draft, content, …): forwarded unchanged.
    Forwarded,
    /// The engine is disposed: nothing was dispatched.
    Disposed,
}

impl Core {
    pub(crate) fn new(config: EngineConfig, runner: Arc<dyn ToolRunner>) -> Self {
        Self {
            config,
            runner,
            entries: Map::default(),
            by_chat: Map::default(),
            calls: Map::default(),
            inputs: Map::default(),
            claims: Claims::default(),
            parents: Map::default(),
            children: Map::default(),
            timers: BTreeMap::new(),
            next_timer: 0,
            next_serial: 0,
            next_attempt: 1,
            awaiting: 0,
            disposed: false,
        }
    }

    pub(crate) fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub(crate) fn is_disposed(&self) -> bool {
        self.disposed
    }

    pub(crate) fn stats(&self) -> EngineStats {
        EngineStats {
            entries: self.entries.len(),
            tool_calls: self.calls.len(),
            leases: self.calls.values().filter(|c| c.lease() > 0).count(),
            records: self.calls.values().filter(|c| c.record.is_some()).count(),
            invocations: self
                .calls
                .values()
                .filter(|c| c.invocation.is_some())
                .count(),
            started: self.calls.values().filter(|c| c.started).count(),
            timers: self.timers.len(),
            claims: self.claims.scopes.len(),
            inputs: self.inputs.len(),
        }
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.timers.first_key_value().map(|((at, _), _)| *at)
    }

    /// The grace deadline of an entry, if armed.
    pub(crate) fn entry_deadline(&self, id: &str) -> Option<Instant> {
        self.entries
            .get(id)
            .and_then(|e| e.deadline)
            .map(|(at, _)| at)
    }

    // ----- queue updates -------------------------------------------------------------------

    /// Upserts one entry (`session/inputNeededSet`).
    pub(crate) fn set_entry(&mut self, value: SessionInputRequest, now: Instant, fx: &mut Effects) {
        if self.disposed {
            return;
        }
        let Some((id, chat, class)) = Class::of(&value, self.config.client_id.as_deref()) else {
            return;
        };
        if let Some(existing) = self.entries.get_mut(id.as_str()) {
            if existing.value == value {
                return; // structurally equal: nothing happens
            }
            if existing.chat == chat && existing.class.same_obligation(&class) {
                existing.value = value;
                existing.class = class;
                self.evaluate(&id, now, fx);
                return;
            }
            if existing.chat == chat && existing.class.claim_key() == class.claim_key() {
                self.change_identity(&id, value, class, now, fx);
                return;
            }
            // The same opaque id now names another obligation: a removal and an addition.
            self.remove_entry(&id, now, fx);
        }
        self.add_entry(Id::from(id), chat, class, value, now, fx);
    }

    fn add_entry(
        &mut self,
        id: Id,
        chat: Uri,
        class: Class,
        value: SessionInputRequest,
        now: Instant,
        fx: &mut Effects,
    ) {
        let serial = self.next_serial;
        self.next_serial += 1;
        match self.by_chat.get_mut(&chat) {
            Some(ids) => {
                ids.insert(serial, Id::clone(&id));
            }
            None => {
                self.by_chat
                    .insert(chat.clone(), BTreeMap::from([(serial, Id::clone(&id))]));
            }
        }
        match &class {
            Class::Input { key } => match self.inputs.get_mut(key) {
                Some(input) => input.entries.push(Id::clone(&id)),
                None => {
                    let input = InputState {
                        entries: vec![Id::clone(&id)],
                        answered: false,
                    };
                    self.inputs.insert(key.clone(), input);
                }
            },
            Class::Ignored => {}
            _ => {
                if let Some(key) = class.tool_call() {
                    let call = match self.calls.get_mut(key) {
                        Some(call) => call,
                        None => self.calls.entry(key.clone()).or_default(),
                    };
                    call.entries.push(Id::clone(&id));
                    if let Class::Confirmation { gate, .. } = &class {
                        // A gate asked (again) is a fresh obligation: reopen its funnel.
                        call.funnel &= !gate_kind(*gate).bit();
                    }
                }
            }
        }
        self.entries.insert(
            Id::clone(&id),
            Box::new(Entry {
                value,
                chat,
                class,
                serial,
                generation: 0,
                deadline: None,
                answered: false,
            }),
        );
        self.evaluate(&id, now, fx);
    }

    /// An identity-relevant change of an existing entry.
    fn change_identity(
        &mut self,
        id: &str,
        value: SessionInputRequest,
        class: Class,
        now: Instant,
        fx: &mut Effects,
    ) {
        let key = class.tool_call().cloned();
        let owner = key
            .as_ref()
            .and_then(|key| self.calls.get(key))
            .and_then(|call| call.record.as_ref())
            .filter(|r| r.entry.as_deref() == Some(id))
            .map(|r| r.phase);
        if owner == Some(RunPhase::Executing) {
            // The in-flight run keeps going; only remember the value for equality checks.
            if let Some(entry) = self.entries.get_mut(id) {
                entry.value = value;
                entry.class = class;
            }
            return;
        }
        self.disarm_entry(id, fx);
        let gate = match &class {
            Class::Confirmation { gate, .. } => Some(*gate),
            _ => None,
        };
        if let Some(entry) = self.entries.get_mut(id) {
            entry.value = value;
            entry.class = class;
            entry.generation += 1;
            entry.answered = false;
        }
        if let Some(key) = &key {
            if let (Some(gate), Some(call)) = (gate, self.calls.get_mut(key)) {
                call.funnel &= !gate_kind(gate).bit();
            }
            if owner.is_some() {
                self.abort_attempt(key, now, fx);
            }
        }
        self.evaluate(id, now, fx);
    }

    /// Removes one entry (`session/inputNeededRemoved`); a no-op when unknown.
    pub(crate) fn remove_entry(&mut self, id: &str, now: Instant, fx: &mut Effects) {
        let Some(entry) = self.entries.remove(id) else {
            return;
        };
        if let Some(slot) = entry.deadline {
            self.drop_timer(slot, fx);
        }
        if let Some(ids) = self.by_chat.get_mut(&entry.chat) {
            ids.remove(&entry.serial);
            if ids.is_empty() {
                self.by_chat.remove(&entry.chat);
            }
        }
        match &entry.class {
            Class::Input { key } => {
                if let Some(input) = self.inputs.get_mut(key) {
                    input.entries.retain(|e| &**e != id);
                    if input.entries.is_empty() {
                        self.inputs.remove(key);
                    }
                }
            }
            Class::Ignored => {}
            class => {
                let Some(key) = class.tool_call() else {
                    return;
                };
                let is_confirmation_phase = matches!(
                    class,
                    Class::Execution {
                        phase: Phase::Confirmation,
                        ..
                    }
                );
                let handover = self.config.handover_window;
                let mut abort = false;
                let mut arm_handover = false;
                if let Some(call) = self.calls.get_mut(key) {
                    call.entries.retain(|e| &**e != id);
                    if let Some(record) = call.record.as_mut()
                        && record.entry.as_deref() == Some(id)
                    {
                        match record.phase {
                            RunPhase::Preparing | RunPhase::AwaitingLocalConfirmation => {
                                abort = true;
                            }
                            RunPhase::Executing if is_confirmation_phase => {
                                // Approved locally and running: cancellation authority moves to
                                // the execution entry about to appear, for a bounded time.
                                record.entry = None;
                                arm_handover = true;
                            }
                            RunPhase::Executing => record.token.cancel(),
                        }
                    }
                }
                if arm_handover {
                    let slot = self.add_timer(now + handover, Timer::Handover(key.clone()), fx);
                    if let Some(record) = self.calls.get_mut(key).and_then(|c| c.record.as_mut()) {
                        record.handover_deadline = Some(slot);
                    }
                }
                if abort {
                    self.abort_attempt(key, now, fx);
                }
                self.release_call(key, now, fx);
            }
        }
    }

    /// Replaces the whole list: removals first, then upserts; equal entries change nothing.
    pub(crate) fn snapshot(
        &mut self,
        list: Vec<SessionInputRequest>,
        now: Instant,
        fx: &mut Effects,
    ) {
        if self.disposed {
            return;
        }
        let wanted: BTreeSet<&str> = list
            .iter()
            .filter_map(agenthost_reducers::projection::entry_id)
            .collect();
        let stale: Vec<Id> = self
            .entries
            .keys()
            .filter(|id| !wanted.contains(&***id))
            .cloned()
            .collect();
        for id in stale {
            self.remove_entry(&id, now, fx);
        }
        for entry in list {
            self.set_entry(entry, now, fx);
        }
    }

    // ----- chat ancestry ---------------------------------------------------------------------

    pub(crate) fn invocation(&self, key: &ToolCallKey) -> Option<SharedInvocation> {
        self.calls.get(key)?.invocation.clone()
    }

    /// Gets or creates the shared invocation (whichever side arrives first creates it).
    pub(crate) fn invocation_or_create(
        &mut self,
        key: &ToolCallKey,
        presentation: Presentation,
    ) -> SharedInvocation {
        let invocation = self.invocation_for(key, &key.chat.clone(), None);
        invocation.bind_presentation(presentation);
        invocation
    }

    // ----- disposal --------------------------------------------------------------------------

    /// Cancels every run (no completion is dispatched for them), drops every timer, releases
    /// every lease. The core stays disposed.
    pub(crate) fn dispose(&mut self) {
        self.disposed = true;
        self.awaiting = 0;
        for (_, call) in self.calls.drain() {
            if let Some(record) = call.record {
                record.token.cancel();
            }
            if let Some(invocation) = call.invocation {
                invocation.settle(InvocationStatus::Cancelled);
            }
        }
        self.entries.clear();
        self.by_chat.clear();
        self.inputs.clear();
        self.timers.clear();
        self.claims = Claims::default();
    }
}

/// A borrowed claim key.
#[derive(Clone, Copy)]
enum KeyRef<'a> {
    Call(&'a ToolCallKey),
    Input(&'a InputKey),
}

/// What [`Core::evaluate`] does for one entry.
enum Decision {
    Nothing,
    Arm,
    Disarm,
    Attach,
    Start {
        context: Option<Claimant>,
        must_ask: bool,
        lookup: ToolLookup,
    },
}

/// The older of `best` and the oldest claim of `list`.
fn older<'a>(
    best: Option<(ClaimId, &'a Claimant)>,
    list: Option<&'a BTreeMap<ClaimId, Claimant>>,
) -> Option<(ClaimId, &'a Claimant)> {
    let candidate = list.and_then(|l| l.iter().next()).map(|(id, c)| (*id, c));
    match (best, candidate) {
        (Some(b), Some(c)) if c.0 < b.0 => Some(c),
        (None, c) => c,
        (b, _) => b,
    }
}

fn gate_kind(gate: Gate) -> AnswerKind {
    match gate {
        Gate::Parameters => AnswerKind::ToolCallConfirmed,
        Gate::Result => AnswerKind::ToolCallResultConfirmed,
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;

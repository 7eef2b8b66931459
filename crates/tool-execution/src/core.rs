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

    /// Records (or clears) the chat that spawned `chat` (a subagent chat's parent).
    pub(crate) fn set_parent(
        &mut self,
        chat: &Uri,
        parent: Option<Uri>,
        now: Instant,
        fx: &mut Effects,
    ) {
        if self.parents.get(chat) == parent.as_ref() {
            return;
        }
        if let Some(old) = self.parents.remove(chat)
            && let Some(siblings) = self.children.get_mut(&old)
        {
            siblings.remove(chat);
            if siblings.is_empty() {
                self.children.remove(&old);
            }
        }
        if let Some(parent) = parent
            && &parent != chat
        {
            self.children
                .entry(parent.clone())
                .or_default()
                .insert(chat.clone());
            self.parents.insert(chat.clone(), parent);
        }
        let affected = self.entries_under_chat(chat);
        self.evaluate_all(&affected, now, fx);
    }

    fn ancestors(&self, chat: &Uri) -> impl Iterator<Item = &Uri> {
        let mut current = self.parents.get(chat);
        let mut steps = 0;
        std::iter::from_fn(move || {
            let found = current?;
            steps += 1;
            if steps > MAX_ANCESTRY || found == chat {
                return None;
            }
            current = self.parents.get(found);
            Some(found)
        })
    }

    /// Entries of `chat` and of every chat below it.
    fn entries_under_chat(&self, chat: &Uri) -> Vec<Id> {
        let mut out = Vec::new();
        let mut stack = vec![chat];
        let mut visited = 0;
        while let Some(current) = stack.pop() {
            visited += 1;
            if visited > 4096 {
                break;
            }
            if let Some(ids) = self.by_chat.get(current) {
                out.extend(ids.values().cloned());
            }
            if let Some(kids) = self.children.get(current) {
                stack.extend(kids.iter().filter(|k| *k != chat));
            }
        }
        out
    }

    // ----- claims ----------------------------------------------------------------------------

    pub(crate) fn claim(
        &mut self,
        scope: ClaimScope,
        claimant: Claimant,
        now: Instant,
        fx: &mut Effects,
    ) -> ClaimId {
        self.claims.next += 1;
        let id = ClaimId(self.claims.next);
        if self.disposed {
            return id;
        }
        match &scope {
            ClaimScope::Key(ClaimKey::ToolCall(key)) => {
                self.claims
                    .by_call
                    .entry(key.clone())
                    .or_default()
                    .insert(id, claimant);
            }
            ClaimScope::Key(ClaimKey::Input(key)) => {
                self.claims
                    .by_input
                    .entry(key.clone())
                    .or_default()
                    .insert(id, claimant);
            }
            ClaimScope::Chat(chat) => {
                self.claims
                    .by_chat
                    .entry(chat.clone())
                    .or_default()
                    .insert(id, claimant);
            }
        }
        let affected = self.entries_in_scope(&scope);
        self.claims.scopes.insert(id, scope);
        self.evaluate_all(&affected, now, fx);
        id
    }

    pub(crate) fn release(&mut self, id: ClaimId, now: Instant, fx: &mut Effects) {
        let Some(scope) = self.claims.scopes.remove(&id) else {
            return;
        };
        fn remove<K: std::hash::Hash + Eq>(
            map: &mut Map<K, BTreeMap<ClaimId, Claimant>>,
            key: &K,
            id: ClaimId,
        ) {
            if let Some(list) = map.get_mut(key) {
                list.remove(&id);
                if list.is_empty() {
                    map.remove(key);
                }
            }
        }
        match &scope {
            ClaimScope::Key(ClaimKey::ToolCall(key)) => remove(&mut self.claims.by_call, key, id),
            ClaimScope::Key(ClaimKey::Input(key)) => remove(&mut self.claims.by_input, key, id),
            ClaimScope::Chat(chat) => remove(&mut self.claims.by_chat, chat, id),
        }
        let affected = self.entries_in_scope(&scope);
        self.evaluate_all(&affected, now, fx);
        if let ClaimScope::Key(ClaimKey::ToolCall(key)) = &scope {
            self.release_call(key, now, fx);
        }
    }

    fn entries_in_scope(&self, scope: &ClaimScope) -> Vec<Id> {
        match scope {
            ClaimScope::Key(ClaimKey::ToolCall(key)) => self
                .calls
                .get(key)
                .map(|c| c.entries.clone())
                .unwrap_or_default(),
            ClaimScope::Key(ClaimKey::Input(key)) => self
                .inputs
                .get(key)
                .map(|i| i.entries.clone())
                .unwrap_or_default(),
            ClaimScope::Chat(chat) => self.entries_under_chat(chat),
        }
    }

    /// The oldest live claimant of an obligation of `chat`, across key claims, chat claims on
    /// its chat and chat claims on its ancestors.
    fn oldest_claimant(&self, chat: &Uri, key: KeyRef<'_>) -> Option<(ClaimId, &Claimant)> {
        let mut best = match key {
            KeyRef::Call(key) => older(None, self.claims.by_call.get(key)),
            KeyRef::Input(key) => older(None, self.claims.by_input.get(key)),
        };
        if self.claims.by_chat.is_empty() {
            return best;
        }
        best = older(best, self.claims.by_chat.get(chat));
        let reach_ancestors = match key {
            KeyRef::Call(_) => true,
            KeyRef::Input(_) => self.config.parent_claims_subagent_inputs,
        };
        if reach_ancestors {
            for ancestor in self.ancestors(chat) {
                best = older(best, self.claims.by_chat.get(ancestor));
            }
        }
        best
    }

    fn entry_claimant(&self, entry: &Entry) -> Option<&Claimant> {
        let key = match &entry.class {
            Class::Input { key } => KeyRef::Input(key),
            class => KeyRef::Call(class.tool_call()?),
        };
        self.oldest_claimant(&entry.chat, key).map(|(_, c)| c)
    }

    fn call_claimed(&self, key: &ToolCallKey) -> bool {
        self.oldest_claimant(&key.chat, KeyRef::Call(key)).is_some()
    }

    // ----- the decision ----------------------------------------------------------------------

    fn evaluate_all(&mut self, ids: &[Id], now: Instant, fx: &mut Effects) {
        for id in ids {
            self.evaluate(id, now, fx);
        }
        // Runs showing a local confirmation follow the same claims.
        if self.awaiting == 0 {
            return;
        }
        let mut awaiting: Vec<ToolCallKey> = Vec::new();
        for id in ids {
            let Some(key) = self.entries.get(&**id).and_then(|e| e.class.tool_call()) else {
                continue;
            };
            let waits = self
                .calls
                .get(key)
                .and_then(|c| c.record.as_ref())
                .is_some_and(|r| r.phase == RunPhase::AwaitingLocalConfirmation);
            if waits && !awaiting.contains(key) {
                awaiting.push(key.clone());
            }
        }
        for key in awaiting {
            self.evaluate_local_confirmation(&key, now, fx);
        }
    }

    fn policy(&self, class: &Class) -> AutoAnswer {
        match class {
            Class::Input { .. } => self.config.chat_input,
            Class::Confirmation { .. } => self.config.tool_confirmation,
            Class::Authentication { .. } => self.config.tool_authentication,
            Class::Execution { .. } => AutoAnswer::AfterGrace,
            Class::Ignored => AutoAnswer::Wait,
        }
    }

    /// The decision for one entry, computed without touching state.
    fn decide(&self, id: &str) -> Decision {
        let Some(entry) = self.entries.get(id) else {
            return Decision::Nothing;
        };
        let armed = entry.deadline.is_some();
        let wait_or_arm = |claimed: bool| match (claimed, armed) {
            (true, true) => Decision::Disarm,
            (false, false) => Decision::Arm,
            _ => Decision::Nothing,
        };
        let (key, phase, tool_name) = match &entry.class {
            Class::Ignored => return Decision::Nothing,
            Class::Input { .. } | Class::Confirmation { .. } | Class::Authentication { .. } => {
                if self.policy(&entry.class) == AutoAnswer::Wait || entry.answered {
                    return if armed {
                        Decision::Disarm
                    } else {
                        Decision::Nothing
                    };
                }
                return wait_or_arm(self.entry_claimant(entry).is_some());
            }
            Class::Execution {
                key,
                phase,
                tool_name,
                ..
            } => (key, *phase, tool_name),
        };
        let Some(call) = self.calls.get(key) else {
            return Decision::Nothing;
        };
        if call.started {
            return Decision::Attach;
        }
        let superseded = phase == Phase::Confirmation
            && call.entries.iter().any(|other| {
                self.entries.get(&**other).is_some_and(|e| {
                    matches!(
                        e.class,
                        Class::Execution {
                            phase: Phase::Execution,
                            ..
                        }
                    )
                })
            });
        if call.closed || entry.answered || superseded {
            // Ended remotely, already denied, or the execution entry (with its trusted
            // pre-approval) is present and decides instead.
            return if armed {
                Decision::Disarm
            } else {
                Decision::Nothing
            };
        }
        let lookup = self.runner.lookup(tool_name);
        if lookup == ToolLookup::NotReady {
            return if armed {
                Decision::Disarm
            } else {
                Decision::Nothing
            };
        }
        let binding = self.config.client_confirmation == ClientConfirmationMode::HostGateBinding
            && phase == Phase::Confirmation;
        let confirmable =
            binding || matches!(lookup, ToolLookup::Found(d) if d.may_request_confirmation);
        match self.entry_claimant(entry) {
            Some(claimant) => Decision::Start {
                context: Some(claimant.clone()),
                must_ask: binding,
                lookup,
            },
            None if !confirmable => Decision::Start {
                context: None,
                must_ask: false,
                lookup,
            },
            None => wait_or_arm(false),
        }
    }

    /// Applies the decision for one entry; idempotent.
    fn evaluate(&mut self, id: &str, now: Instant, fx: &mut Effects) {
        if self.disposed {
            return;
        }
        match self.decide(id) {
            Decision::Nothing => {}
            Decision::Arm => self.arm_entry(id, now, fx),
            Decision::Disarm => self.disarm_entry(id, fx),
            Decision::Attach => {
                self.disarm_entry(id, fx);
                self.attach(id, now, fx);
            }
            Decision::Start {
                context,
                must_ask,
                lookup,
            } => self.start_run(id, context, must_ask, lookup, fx),
        }
    }

    /// An entry of a call that already carries a start marker joins the existing record.
    fn attach(&mut self, id: &str, now: Instant, fx: &mut Effects) {
        let Some((key, phase)) = self.entries.get(id).and_then(|e| match &e.class {
            Class::Execution { key, phase, .. } => Some((key.clone(), *phase)),
            _ => None,
        }) else {
            return;
        };
        let Some(record) = self.calls.get_mut(&key).and_then(|c| c.record.as_mut()) else {
            return;
        };
        if record.entry.as_deref() == Some(id) {
            return;
        }
        match record.phase {
            RunPhase::Executing => {
                if record.entry.is_none() || phase == Phase::Execution {
                    record.entry = self.entries.get_key_value(id).map(|(k, _)| Id::clone(k));
                    if let Some(slot) = record.handover_deadline.take() {
                        self.drop_timer(slot, fx);
                    }
                }
            }
            RunPhase::Preparing | RunPhase::AwaitingLocalConfirmation => {
                if phase == Phase::Execution && record.from_confirmation {
                    // Approved elsewhere while the local gate was pending (P7): the local
                    // attempt (its body never ran) gives way to a run with the trusted
                    // pre-approval the execution entry carries.
                    self.abort_attempt(&key, now, fx);
                    self.evaluate(id, now, fx);
                }
            }
        }
    }

    fn start_run(
        &mut self,
        id: &str,
        context: Option<Claimant>,
        must_ask: bool,
        lookup: ToolLookup,
        fx: &mut Effects,
    ) {
        let Some((entry_id, entry)) = self.entries.get_key_value(id) else {
            return;
        };
        let entry_id = Id::clone(entry_id);
        let Class::Execution {
            key,
            phase,
            tool_name,
            display_name,
            input,
            pre_approval,
        } = entry.class.clone()
        else {
            return;
        };
        let chat = entry.chat.clone();
        let generation = entry.generation;
        self.disarm_entry(id, fx);
        let attempt = self.next_attempt;
        self.next_attempt += 1;
        let token = CancelToken::new();
        let invocation = self.invocation_for(&key, &chat, Some(&display_name));
        invocation.begin_attempt(context.clone(), token.clone());
        if lookup == ToolLookup::Unknown {
            if let Some(call) = self.calls.get_mut(&key) {
                call.started = true;
            }
            let result = answers::local_failure_result(
                &display_name,
                &format!("The tool `{tool_name}` is not available on this client."),
                answers::TOOL_UNAVAILABLE,
            );
            self.send_tool(
                &key,
                AnswerKind::ToolCallComplete,
                answers::complete(&key, result.clone()),
                fx,
            );
            invocation.settle(InvocationStatus::Completed(result));
            return;
        }
        let Some(call) = self.calls.get_mut(&key) else {
            return;
        };
        call.started = true; // the start marker, before any await
        call.record = Some(Record {
            attempt,
            token: token.clone(),
            phase: RunPhase::Preparing,
            entry: Some(entry_id),
            generation,
            from_confirmation: phase == Phase::Confirmation,
            local_deadline: None,
            handover_deadline: None,
        });
        tracing::debug!(%key, attempt, headless = context.is_none(), "starting local run");
        fx.runs.push(RunTicket {
            key,
            attempt,
            tool_name,
            display_name,
            input,
            pre_approval,
            must_ask,
            context,
            token,
            invocation,
        });
    }

    /// Cancels an attempt whose body has not started: the record goes, the start marker is
    /// cleared (a later entry may run the call once), the invocation settles cancelled.
    fn abort_attempt(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let Some(record) = call.record.take() else {
            return;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        record.token.cancel();
        if record.phase != RunPhase::Executing {
            call.started = false;
        }
        if let Some(invocation) = &call.invocation {
            invocation.settle(InvocationStatus::Cancelled);
        }
        self.drop_record_timers(&record, fx);
        self.release_call(key, now, fx);
    }

    fn drop_record_timers(&mut self, record: &Record, fx: &mut Effects) {
        for slot in [record.local_deadline, record.handover_deadline]
            .into_iter()
            .flatten()
        {
            self.drop_timer(slot, fx);
        }
    }

    /// After a lease hold or a retaining claim went away: forget the call when nothing holds it
    /// any more, else re-decide its entries if its start marker was cleared.
    fn release_call(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let Some(call) = self.calls.get(key) else {
            return;
        };
        let retained = self.claims.by_call.contains_key(key);
        if call.lease() == 0 && !retained {
            if let Some(call) = self.calls.remove(key)
                && let Some(invocation) = call.invocation
            {
                invocation.settle(InvocationStatus::Cancelled);
            }
            return;
        }
        if !call.started && call.record.is_none() {
            let ids = call.entries.clone();
            for id in ids {
                self.evaluate(&id, now, fx);
            }
        }
    }

    fn invocation_for(
        &mut self,
        key: &ToolCallKey,
        chat: &Uri,
        display_name: Option<&str>,
    ) -> SharedInvocation {
        let derived = Presentation::derived(chat, self.parents.get(chat), display_name);
        let call = match self.calls.get_mut(key) {
            Some(call) => call,
            None => self.calls.entry(key.clone()).or_default(),
        };
        match &call.invocation {
            Some(invocation) => {
                invocation.fill_presentation(derived);
                invocation.clone()
            }
            None => {
                let invocation = SharedInvocation::new(key.clone(), derived);
                call.invocation = Some(invocation.clone());
                invocation
            }
        }
    }

    // ----- timers ----------------------------------------------------------------------------

    fn add_timer(&mut self, at: Instant, timer: Timer, fx: &mut Effects) -> TimerSlot {
        let slot = (at, self.next_timer);
        self.next_timer += 1;
        self.timers.insert(slot, timer);
        fx.timers_changed = true;
        slot
    }

    fn drop_timer(&mut self, slot: TimerSlot, fx: &mut Effects) {
        if self.timers.remove(&slot).is_some() {
            fx.timers_changed = true;
        }
    }

    fn arm_entry(&mut self, id: &str, now: Instant, fx: &mut Effects) {
        let Some((entry_id, entry)) = self.entries.get_key_value(id) else {
            return;
        };
        if entry.deadline.is_some() {
            return; // keeps its original deadline
        }
        let timer = Timer::Grace(Id::clone(entry_id));
        let slot = self.add_timer(now + self.config.grace, timer, fx);
        if let Some(entry) = self.entries.get_mut(id) {
            entry.deadline = Some(slot);
        }
    }

    fn disarm_entry(&mut self, id: &str, fx: &mut Effects) {
        if let Some(slot) = self.entries.get_mut(id).and_then(|e| e.deadline.take()) {
            self.drop_timer(slot, fx);
        }
    }

    /// A run showing its local confirmation is covered by the grace rule.
    fn evaluate_local_confirmation(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let claimed = self.call_claimed(key);
        let Some(record) = self.calls.get(key).and_then(|c| c.record.as_ref()) else {
            return;
        };
        if record.phase != RunPhase::AwaitingLocalConfirmation {
            return;
        }
        match (claimed, record.local_deadline) {
            (true, Some(slot)) => {
                self.drop_timer(slot, fx);
                if let Some(record) = self.calls.get_mut(key).and_then(|c| c.record.as_mut()) {
                    record.local_deadline = None;
                }
            }
            (false, None) => {
                let at = now + self.config.grace;
                let slot = self.add_timer(at, Timer::LocalConfirmation(key.clone()), fx);
                if let Some(record) = self.calls.get_mut(key).and_then(|c| c.record.as_mut()) {
                    record.local_deadline = Some(slot);
                }
            }
            _ => {}
        }
    }

    /// Fires every timer due at `now`.
    pub(crate) fn fire_due(&mut self, now: Instant, fx: &mut Effects) {
        while let Some(((at, _), _)) = self.timers.first_key_value() {
            if *at > now {
                break;
            }
            let Some((slot, timer)) = self.timers.pop_first() else {
                break;
            };
            fx.timers_changed = true;
            match timer {
                Timer::Grace(id) => {
                    if let Some(entry) = self.entries.get_mut(&*id)
                        && entry.deadline == Some(slot)
                    {
                        entry.deadline = None;
                        self.auto_answer(&id, fx);
                    }
                }
                Timer::LocalConfirmation(key) => {
                    let owned = self
                        .calls
                        .get_mut(&key)
                        .and_then(|c| c.record.as_mut())
                        .filter(|r| r.local_deadline == Some(slot))
                        .map(|r| r.local_deadline = None)
                        .is_some();
                    if owned {
                        self.local_confirmation_expired(&key, now, fx);
                    }
                }
                Timer::Handover(key) => {
                    if let Some(record) = self.calls.get_mut(&key).and_then(|c| c.record.as_mut())
                        && record.handover_deadline == Some(slot)
                    {
                        record.handover_deadline = None;
                        if record.entry.is_none() {
                            tracing::debug!(%key, "hand-over window elapsed; cancelling run");
                            record.token.cancel();
                        }
                    }
                }
            }
        }
    }

    /// The grace window of an entry ended: answer it if it is still unclaimed, pending, not
    /// answered and not started.
    fn auto_answer(&mut self, id: &str, fx: &mut Effects) {
        let Some(entry) = self.entries.get(id) else {
            return;
        };
        if entry.answered
            || self.policy(&entry.class) == AutoAnswer::Wait
            || self.entry_claimant(entry).is_some()
        {
            return;
        }
        let class = entry.class.clone();
        match class {
            Class::Input { key } => {
                if let Some(input) = self.inputs.get_mut(&key)
                    && !input.answered
                {
                    input.answered = true;
                    fx.dispatches
                        .push((key.chat.clone(), answers::cancel_input(&key)));
                }
            }
            Class::Confirmation {
                key,
                gate,
                tool_name,
                display_name,
                ..
            } => {
                let approve = self.config.approve_tools.contains(&tool_name);
                let action = match (gate, approve) {
                    (Gate::Parameters, true) => {
                        answers::approve_parameters(&key, ToolCallConfirmationReason::Setting, None)
                    }
                    (Gate::Parameters, false) => answers::deny_parameters(
                        &key,
                        Some(answers::unattended_denial_message(
                            &display_name,
                            self.config.grace,
                        )),
                        None,
                    ),
                    (Gate::Result, approved) => answers::confirm_result(&key, approved),
                };
                self.send_tool(&key, gate_kind(gate), action, fx);
            }
            Class::Authentication { key, .. } => {
                let action = answers::complete(&key, answers::authentication_cancelled_result());
                self.send_tool(&key, AnswerKind::ToolCallComplete, action, fx);
            }
            Class::Execution {
                key, display_name, ..
            } => {
                let Some(call) = self.calls.get_mut(&key) else {
                    return;
                };
                if call.started {
                    return;
                }
                call.started = true;
                let result = answers::client_unavailable_result(&display_name);
                if let Some(invocation) = call.invocation.take() {
                    invocation.settle(InvocationStatus::Completed(result.clone()));
                }
                tracing::info!(%key, "no observer claimed a confirmable client tool; denying");
                self.send_tool(
                    &key,
                    AnswerKind::ToolCallComplete,
                    answers::complete(&key, result),
                    fx,
                );
            }
            Class::Ignored => return,
        }
        if let Some(entry) = self.entries.get_mut(id) {
            entry.answered = true;
        }
    }

    fn local_confirmation_expired(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let claimed = self.call_claimed(key);
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let awaiting = call
            .record
            .as_ref()
            .is_some_and(|r| r.phase == RunPhase::AwaitingLocalConfirmation);
        if !awaiting || claimed {
            return;
        }
        let Some(record) = call.record.take() else {
            return;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        record.token.cancel();
        let display = call
            .invocation
            .as_ref()
            .and_then(|i| i.snapshot().presentation.display_name)
            .unwrap_or_else(|| key.tool_call_id.clone());
        let result = answers::client_unavailable_result(&display);
        if let Some(invocation) = &call.invocation {
            invocation.settle(InvocationStatus::Completed(result.clone()));
        }
        self.drop_record_timers(&record, fx);
        self.send_tool(
            key,
            AnswerKind::ToolCallComplete,
            answers::complete(key, result),
            fx,
        );
        self.release_call(key, now, fx);
    }

    // ----- the funnel ------------------------------------------------------------------------

    /// Dispatches through the funnel; `false` when an answer of this kind already went out.
    fn send_tool(
        &mut self,
        key: &ToolCallKey,
        kind: AnswerKind,
        action: StateAction,
        fx: &mut Effects,
    ) -> bool {
        if let Some(call) = self.calls.get_mut(key) {
            if call.funnel & kind.bit() != 0 {
                tracing::debug!(%key, ?kind, "funnel dropped a duplicate answer");
                return false;
            }
            call.funnel |= kind.bit();
        }
        fx.dispatches.push((key.chat.clone(), action));
        true
    }

    /// An answer forwarded by an observer.
    pub(crate) fn answer(
        &mut self,
        chat: &Uri,
        action: StateAction,
        now: Instant,
        fx: &mut Effects,
    ) -> AnswerOutcome {
        if self.disposed {
            return AnswerOutcome::Disposed;
        }
        match answers::answer_target(chat, &action) {
            None => {
                fx.dispatches.push((chat.clone(), action));
                AnswerOutcome::Forwarded
            }
            Some(AnswerTarget::Input(key)) => {
                if let Some(input) = self.inputs.get_mut(&key) {
                    if input.answered {
                        return AnswerOutcome::Duplicate;
                    }
                    input.answered = true;
                    let ids = input.entries.clone();
                    self.mark_answered(&ids, |_| true, fx);
                }
                fx.dispatches.push((chat.clone(), action));
                AnswerOutcome::Dispatched
            }
            Some(AnswerTarget::ToolCall(key, kind)) => {
                let ends = crate::update::ended_call(chat, &action).is_some();
                if !self.send_tool(&key, kind, action, fx) {
                    return AnswerOutcome::Duplicate;
                }
                if ends {
                    // A skip from a view: the local attempt must not run its body.
                    self.remote_outcome(&key, now, fx);
                }
                let ids = self
                    .calls
                    .get(&key)
                    .map(|c| c.entries.clone())
                    .unwrap_or_default();
                self.mark_answered(
                    &ids,
                    |class| match class {
                        Class::Confirmation { gate, .. } => gate_kind(*gate) == kind,
                        Class::Authentication { .. } => kind == AnswerKind::ToolCallComplete,
                        _ => false,
                    },
                    fx,
                );
                AnswerOutcome::Dispatched
            }
        }
    }

    fn mark_answered(&mut self, ids: &[Id], applies: impl Fn(&Class) -> bool, fx: &mut Effects) {
        for id in ids {
            if let Some(entry) = self.entries.get_mut(&**id)
                && applies(&entry.class)
            {
                entry.answered = true;
                self.disarm_entry(id, fx);
            }
        }
    }

    /// A chat action seen on a chat channel (from the session's envelopes): a remote skip or
    /// denial, or a cancelled completion, ends a local attempt whose body has not started.
    pub(crate) fn remote_outcome(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let executing = call
            .record
            .as_ref()
            .is_some_and(|r| r.phase == RunPhase::Executing);
        if executing {
            return;
        }
        call.closed = true;
        if call.record.is_some() {
            self.abort_attempt(key, now, fx);
        }
        let ids = self
            .calls
            .get(key)
            .map(|c| c.entries.clone())
            .unwrap_or_default();
        for id in ids {
            self.disarm_entry(&id, fx);
        }
    }

    // ----- runs: re-validation and progress --------------------------------------------------

    fn record(&self, key: &ToolCallKey, attempt: u64) -> Option<&Record> {
        self.calls
            .get(key)?
            .record
            .as_ref()
            .filter(|r| r.attempt == attempt)
    }

    /// Re-validation after an await: the attempt is still the call's current one, its
    /// token is not cancelled, and — until the body started — the entry it started from is
    /// still there with the same generation.
    pub(crate) fn is_current(&self, key: &ToolCallKey, attempt: u64) -> bool {
        if self.disposed {
            return false;
        }
        let Some(record) = self.record(key, attempt) else {
            return false;
        };
        if record.token.is_cancelled() {
            return false;
        }
        record.phase == RunPhase::Executing
            || record
                .entry
                .as_deref()
                .and_then(|id| self.entries.get(id))
                .is_some_and(|e| e.generation == record.generation)
    }

    /// Whether the protocol call is still at its parameter gate for this attempt (the
    /// confirmation-phase entry still holds authority).
    fn at_protocol_gate(&self, key: &ToolCallKey, attempt: u64) -> bool {
        self.record(key, attempt)
            .and_then(|r| r.entry.as_deref())
            .and_then(|id| self.entries.get(id))
            .is_some_and(|e| {
                matches!(
                    e.class,
                    Class::Execution {
                        phase: Phase::Confirmation,
                        ..
                    }
                )
            })
    }

    /// The run failed before its body ran (`inputReadFailed`, `invalidInput`, …): answered like
    /// a completed body, with the failed result.
    pub(crate) fn fail_run(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        result: ToolCallResult,
        now: Instant,
        fx: &mut Effects,
    ) {
        self.complete_run(key, attempt, result, now, fx);
    }

    /// The local tool needs a confirmation: show it. `None` when the attempt is gone.
    pub(crate) fn enter_confirmation(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        now: Instant,
        fx: &mut Effects,
    ) -> Option<tokio::sync::oneshot::Receiver<LocalDecision>> {
        if !self.is_current(key, attempt) {
            return None;
        }
        let call = self.calls.get_mut(key)?;
        let record = call.record.as_mut()?;
        if record.phase != RunPhase::AwaitingLocalConfirmation {
            self.awaiting += 1;
        }
        record.phase = RunPhase::AwaitingLocalConfirmation;
        let receiver = call.invocation.as_ref()?.await_decision();
        self.evaluate_local_confirmation(key, now, fx);
        Some(receiver)
    }

    /// The local gate passed without asking; reflects the approval while the protocol call
    /// is still pending. `false` when the attempt is gone.
    pub(crate) fn pass_gate(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        pass: GatePass,
        fx: &mut Effects,
    ) -> bool {
        if !self.is_current(key, attempt) {
            return false;
        }
        let reason = match pass {
            GatePass::NotNeeded => ToolCallConfirmationReason::NotNeeded,
            GatePass::Setting => ToolCallConfirmationReason::Setting,
        };
        if self.at_protocol_gate(key, attempt) {
            self.send_tool(
                key,
                AnswerKind::ToolCallConfirmed,
                answers::approve_parameters(key, reason, None),
                fx,
            );
        }
        true
    }

    /// The observer decided at the local confirmation. `true`: go on and run the body.
    pub(crate) fn local_decision(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        decision: LocalDecision,
        now: Instant,
        fx: &mut Effects,
    ) -> bool {
        if !self.is_current(key, attempt) {
            self.unwind(key, attempt, now, fx);
            return false;
        }
        let at_gate = self.at_protocol_gate(key, attempt);
        match decision {
            LocalDecision::Approve {
                reason,
                selected_option_id,
            } => {
                if at_gate {
                    self.send_tool(
                        key,
                        AnswerKind::ToolCallConfirmed,
                        answers::approve_parameters(key, reason, selected_option_id),
                        fx,
                    );
                }
                true
            }
            LocalDecision::Deny { selected_option_id } => {
                self.deny_locally(key, attempt, at_gate, selected_option_id, now, fx);
                false
            }
            LocalDecision::Cancel => {
                self.deny_locally(key, attempt, at_gate, None, now, fx);
                false
            }
        }
    }

    fn deny_locally(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        at_gate: bool,
        selected_option_id: Option<String>,
        now: Instant,
        fx: &mut Effects,
    ) {
        if at_gate {
            self.send_tool(
                key,
                AnswerKind::ToolCallConfirmed,
                answers::deny_parameters(key, None, selected_option_id),
                fx,
            );
        } else {
            // The protocol call is already running: the denial can only end it as a failure.
            let result = answers::failed_result(
                "Cancelled tool call",
                "The user denied the tool call",
                answers::CANCELLED,
            );
            self.send_tool(
                key,
                AnswerKind::ToolCallComplete,
                answers::complete(key, result),
                fx,
            );
        }
        self.finish(key, attempt, Some(InvocationStatus::Cancelled), now, fx);
    }

    /// The body is about to run. `false` when the attempt is gone.
    pub(crate) fn begin_body(&mut self, key: &ToolCallKey, attempt: u64, fx: &mut Effects) -> bool {
        if !self.is_current(key, attempt) {
            return false;
        }
        let Some(call) = self.calls.get_mut(key) else {
            return false;
        };
        let Some(record) = call.record.as_mut() else {
            return false;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        record.phase = RunPhase::Executing;
        let local = record.local_deadline.take();
        if let Some(invocation) = &call.invocation {
            invocation.begin_body();
        }
        if let Some(slot) = local {
            self.drop_timer(slot, fx);
        }
        true
    }

    /// Streamed partial content of a running body.
    pub(crate) fn content(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        content: Vec<ToolResultContent>,
        fx: &mut Effects,
    ) {
        if !self.is_current(key, attempt)
            || self.record(key, attempt).map(|r| r.phase) != Some(RunPhase::Executing)
        {
            return;
        }
        if let Some(invocation) = self.calls.get(key).and_then(|c| c.invocation.as_ref()) {
            invocation.set_content(content.clone());
        }
        fx.dispatches
            .push((key.chat.clone(), answers::content_changed(key, content)));
    }

    /// The body returned.
    pub(crate) fn complete_run(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        result: ToolCallResult,
        now: Instant,
        fx: &mut Effects,
    ) {
        if !self.is_current(key, attempt) {
            return self.unwind(key, attempt, now, fx);
        }
        self.send_tool(
            key,
            AnswerKind::ToolCallComplete,
            answers::complete(key, result.clone()),
            fx,
        );
        self.finish(
            key,
            attempt,
            Some(InvocationStatus::Completed(result)),
            now,
            fx,
        );
    }

    /// The attempt ends without an answer (cancelled, superseded): nothing is dispatched.
    pub(crate) fn unwind(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        now: Instant,
        fx: &mut Effects,
    ) {
        if self.record(key, attempt).is_none() {
            return;
        }
        self.finish_silently(key, now, fx);
    }

    fn finish_silently(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let Some(record) = call.record.take() else {
            return;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        if record.phase != RunPhase::Executing {
            call.started = false;
        }
        if let Some(invocation) = &call.invocation {
            invocation.settle(InvocationStatus::Cancelled);
        }
        self.drop_record_timers(&record, fx);
        self.release_call(key, now, fx);
    }

    /// The attempt ended with an answer: the record goes, the start marker stays.
    fn finish(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        status: Option<InvocationStatus>,
        now: Instant,
        fx: &mut Effects,
    ) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        if call.record.as_ref().map(|r| r.attempt) != Some(attempt) {
            return;
        }
        let Some(record) = call.record.take() else {
            return;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        if let (Some(invocation), Some(status)) = (&call.invocation, status) {
            invocation.settle(status);
        }
        self.drop_record_timers(&record, fx);
        self.release_call(key, now, fx);
    }

    // ----- observers' access to invocations ---------------------------------------------------

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

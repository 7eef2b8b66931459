//! Property test over random interleavings of entry set/remove (through a small host model),
//! claim/release, time advance, body completion, observer answers, disconnect and reconnect.
//! Each case drives a current-thread runtime on tokio's paused clock.
//!
//! Properties:
//! 1. the funnel: at most one answer per (tool call, answer kind) and per input request;
//! 2. nothing runs twice: at most one local body invocation per tool call, and a confirmable
//!    tool's body runs only with a claimant as context;
//! 3. timing: every policy answer (deny, cancel, give up, `clientUnavailable`) is dispatched
//!    exactly one grace window after the obligation last became visible-and-unclaimed (its
//!    appearance to the engine, or its last unclaim), never while claimed;
//! 4. once claims are released and time runs out, every obligation that stayed pending has
//!    been answered (the host model resolved it) — answered exactly once by 1;
//! 5. once the queue is empty, no lease, timer, record, invocation, marker or claim is left.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use agenthost_protocol::ahp_types::state::{SessionInputRequest, ToolCallConfirmationReason};
use agenthost_protocol::ids::{InputKey, ToolCallKey};
use agenthost_protocol::{StateAction, Uri};
use agenthost_reducers::projection::entry_id;
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::answers::{self, AnswerTarget};
use crate::fixtures::*;
use crate::harness::*;
use crate::{
    ClaimGuard, ClaimKey, Claimant, EngineConfig, EngineStats, InvocationStatus, LocalDecision,
    SessionUpdate,
};

const GRACE_MS: u64 = 5000;
const SUB_CHAT: &str = "ahp-chat:/sub";
const SLOTS: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ServerParam,
    ServerResult,
    Input,
    Auth,
    ExecPlain,
    ExecConfirmable,
    ConfPlain,
    ConfConfirmable,
    Foreign,
}

#[derive(Debug, Clone)]
enum Op {
    Appear(usize),
    TurnEnd(usize),
    Claim(usize),
    ClaimParentChat,
    Release(usize),
    Advance(u64),
    FinishBody(usize),
    ApproveLocal(usize),
    ObserverAnswer(usize),
    Disconnect,
    Reconnect,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::ServerParam),
        Just(Kind::ServerResult),
        Just(Kind::Input),
        Just(Kind::Auth),
        Just(Kind::ExecPlain),
        Just(Kind::ExecConfirmable),
        Just(Kind::ConfPlain),
        Just(Kind::ConfConfirmable),
        Just(Kind::Foreign),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    prop_oneof![
        3 => slot.clone().prop_map(Op::Appear),
        1 => slot.clone().prop_map(Op::TurnEnd),
        3 => slot.clone().prop_map(Op::Claim),
        1 => Just(Op::ClaimParentChat),
        3 => (0usize..8).prop_map(Op::Release),
        4 => prop_oneof![
            Just(0u64), Just(1), Just(500), Just(2500), Just(4999), Just(5000), Just(5001),
            Just(7000)
        ]
        .prop_map(Op::Advance),
        2 => slot.clone().prop_map(Op::FinishBody),
        2 => slot.clone().prop_map(Op::ApproveLocal),
        1 => slot.prop_map(Op::ObserverAnswer),
        1 => Just(Op::Disconnect),
        1 => Just(Op::Reconnect),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostPhase {
    NotYet,
    Pending,
    Executing,
    Done,
    Ended,
}

struct Slot {
    kind: Kind,
    chat: Uri,
    call: String,
    phase: HostPhase,
    /// When the engine last received this slot's current entry (`None`: not visible to it).
    visible_since: Option<Instant>,
    /// Live claims covering the slot, and when that count last dropped to zero.
    covering: usize,
    last_unclaimed: Option<Instant>,
}

impl Slot {
    fn key(&self) -> ToolCallKey {
        ToolCallKey::new(self.chat.clone(), TURN, self.call.clone())
    }

    fn claim_key(&self) -> ClaimKey {
        match self.kind {
            Kind::Input => ClaimKey::Input(InputKey::new(self.chat.clone(), self.call.clone())),
            _ => ClaimKey::ToolCall(self.key()),
        }
    }

    /// Whether a chat claim on the parent chat covers the slot (P13: not a subagent's input).
    fn covered_by_parent_chat(&self) -> bool {
        self.chat == CHAT || self.kind != Kind::Input
    }

    fn entry(&self) -> Option<SessionInputRequest> {
        let (chat, call) = (self.chat.as_str(), self.call.as_str());
        Some(match (self.kind, self.phase) {
            (_, HostPhase::NotYet | HostPhase::Done | HostPhase::Ended) => return None,
            (Kind::ServerParam, _) => server_confirmation(chat, call, "shell"),
            (Kind::ServerResult, _) => result_confirmation(chat, call, "shell"),
            (Kind::Input, _) => chat_input(chat, call),
            (Kind::Auth, _) => authentication(chat, call, "issues"),
            (Kind::ExecPlain, _) => client_execution(chat, call, "plain", CLIENT, "setting", "{}"),
            (Kind::ExecConfirmable, _) => {
                client_execution(chat, call, "confirm", CLIENT, "user-action", "{}")
            }
            (Kind::ConfPlain, HostPhase::Pending) => {
                client_confirmation(chat, call, "plain", CLIENT, "{}")
            }
            (Kind::ConfConfirmable, HostPhase::Pending) => {
                client_confirmation(chat, call, "confirm", CLIENT, "{}")
            }
            (Kind::ConfPlain, _) => {
                client_execution(chat, call, "plain", CLIENT, "not-needed", "{}")
            }
            (Kind::ConfConfirmable, _) => {
                client_execution(chat, call, "confirm", CLIENT, "user-action", "{}")
            }
            (Kind::Foreign, _) => {
                client_execution(chat, call, "confirm", OTHER_CLIENT, "user-action", "{}")
            }
        })
    }
}

struct World {
    rig: Rig,
    slots: Vec<Slot>,
    claims: Vec<(ClaimGuard, Vec<usize>)>,
    connected: bool,
    next_observer: usize,
    funnel: HashMap<String, usize>,
}

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

impl World {
    fn new(kinds: &[Kind]) -> Self {
        let tools = FakeTools::with(&[
            ("plain", ToolScript::plain().blocking()),
            ("confirm", ToolScript::confirmable().blocking()),
        ]);
        let rig = Rig::new(EngineConfig::responder(CLIENT), tools);
        rig.engine
            .set_chat_parent(&SUB_CHAT.to_owned(), Some(CHAT.to_owned()));
        let slots = kinds
            .iter()
            .enumerate()
            .map(|(i, kind)| Slot {
                kind: *kind,
                chat: if i % 2 == 0 { CHAT } else { SUB_CHAT }.to_owned(),
                call: format!("c{i}"),
                phase: HostPhase::NotYet,
                visible_since: None,
                covering: 0,
                last_unclaimed: None,
            })
            .collect();
        Self {
            rig,
            slots,
            claims: Vec::new(),
            connected: true,
            next_observer: 0,
            funnel: HashMap::new(),
        }
    }

    fn deliver(&mut self, update: SessionUpdate) {
        if !self.connected {
            return;
        }
        let now = Instant::now();
        match &update {
            SessionUpdate::Set(entry) => {
                let id = entry_id(entry).map(str::to_owned);
                for slot in &mut self.slots {
                    if slot.entry().and_then(|e| entry_id(&e).map(str::to_owned)) == id
                        && slot.visible_since.is_none()
                    {
                        slot.visible_since = Some(now);
                    }
                }
            }
            SessionUpdate::Removed(_) | SessionUpdate::Snapshot(_) => {}
        }
        self.rig.engine.apply(update);
    }

    fn host_set(&mut self, index: usize) {
        if let Some(entry) = self.slots[index].entry() {
            self.deliver(SessionUpdate::set(entry));
        }
    }

    fn host_remove(&mut self, index: usize, entry: Option<SessionInputRequest>) {
        if let Some(id) = entry.as_ref().and_then(entry_id) {
            let id = id.to_owned();
            if self.connected {
                self.slots[index].visible_since = None;
            }
            self.deliver(SessionUpdate::Removed(id));
        }
    }

    fn reconnect(&mut self) {
        self.connected = true;
        let now = Instant::now();
        let list: Vec<SessionInputRequest> = self.slots.iter().filter_map(Slot::entry).collect();
        for slot in &mut self.slots {
            match slot.entry() {
                None => slot.visible_since = None,
                Some(_) if slot.visible_since.is_none() => slot.visible_since = Some(now),
                Some(_) => {}
            }
        }
        self.rig.engine.apply(SessionUpdate::Snapshot(list));
    }

    fn claim(&mut self, covered: Vec<usize>, guard: ClaimGuard) {
        for &i in &covered {
            self.slots[i].covering += 1;
        }
        self.claims.push((guard, covered));
    }

    fn release(&mut self, index: usize) {
        if self.claims.is_empty() {
            return;
        }
        let (guard, covered) = self.claims.remove(index % self.claims.len());
        drop(guard);
        let now = Instant::now();
        for i in covered {
            let slot = &mut self.slots[i];
            slot.covering -= 1;
            if slot.covering == 0 {
                slot.last_unclaimed = Some(now);
            }
        }
    }

    fn slot_of(&self, target: &AnswerTarget) -> Option<usize> {
        self.slots.iter().position(|slot| match target {
            AnswerTarget::ToolCall(key, _) => slot.kind != Kind::Input && &slot.key() == key,
            AnswerTarget::Input(key) => {
                slot.kind == Kind::Input && key.chat == slot.chat && key.request_id == slot.call
            }
        })
    }

    /// Applies answers to the host model (which may publish updates) until quiet.
    async fn drain(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..20 {
            settle().await;
            let sent = self.rig.sent.take();
            if sent.is_empty() {
                return Ok(());
            }
            for answer in sent {
                self.check_and_apply(&answer)?;
            }
        }
        Err(fail("answers kept coming".to_owned()))
    }

    fn check_and_apply(&mut self, answer: &Sent) -> Result<(), TestCaseError> {
        let Some(target) = answer.target() else {
            return Ok(());
        };
        let wire = answer.wire();
        let funnel_key = format!("{target:?}");
        let count = self.funnel.entry(funnel_key.clone()).or_default();
        *count += 1;
        if *count > 1 {
            return Err(fail(format!("two answers for {funnel_key}: {wire}")));
        }
        let index = self
            .slot_of(&target)
            .ok_or_else(|| fail(format!("answer for an unknown obligation: {wire}")))?;
        if policy_answer(&wire) {
            let slot = &self.slots[index];
            if slot.covering > 0 {
                return Err(fail(format!("policy answer while claimed: {wire}")));
            }
            let since = slot
                .visible_since
                .into_iter()
                .chain(slot.last_unclaimed)
                .max()
                .ok_or_else(|| fail(format!("policy answer for an invisible entry: {wire}")))?;
            let expected = since + Duration::from_millis(GRACE_MS);
            if answer.at != expected {
                return Err(fail(format!(
                    "policy answer at {:?} instead of {:?} after the window start: {wire}",
                    answer.at.duration_since(since),
                    Duration::from_millis(GRACE_MS)
                )));
            }
        }
        self.host_reacts(index, &wire);
        Ok(())
    }

    /// The host model: what the real host does with an answer.
    fn host_reacts(&mut self, index: usize, wire: &Value) {
        let slot = &self.slots[index];
        if !matches!(slot.phase, HostPhase::Pending | HostPhase::Executing) {
            return; // a late answer: the call is already terminal, the host ignores it
        }
        let old = slot.entry();
        let kind = slot.kind;
        let phase = slot.phase;
        match wire["type"].as_str().unwrap_or_default() {
            "chat/toolCallConfirmed" if phase == HostPhase::Pending => {
                let approved = wire["approved"] == json!(true);
                if approved && matches!(kind, Kind::ConfPlain | Kind::ConfConfirmable) {
                    // Remove-before-add, as two separate updates.
                    self.slots[index].phase = HostPhase::Executing;
                    self.host_remove(index, old);
                    self.host_set(index);
                } else {
                    self.slots[index].phase = HostPhase::Done;
                    self.host_remove(index, old);
                }
            }
            "chat/toolCallResultConfirmed" | "chat/inputCompleted" | "chat/toolCallComplete" => {
                self.slots[index].phase = HostPhase::Done;
                self.host_remove(index, old);
            }
            _ => {}
        }
    }

    async fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Appear(i) => {
                if self.slots[i].phase == HostPhase::NotYet {
                    self.slots[i].phase = HostPhase::Pending;
                    self.host_set(i);
                }
            }
            Op::TurnEnd(i) => {
                if matches!(
                    self.slots[i].phase,
                    HostPhase::Pending | HostPhase::Executing
                ) {
                    let old = self.slots[i].entry();
                    self.slots[i].phase = HostPhase::Ended;
                    self.host_remove(i, old);
                }
            }
            Op::Claim(i) => {
                self.next_observer += 1;
                let claimant = Claimant::new(format!("view-{}", self.next_observer));
                let guard = self.rig.engine.claim(self.slots[i].claim_key(), claimant);
                self.claim(vec![i], guard);
            }
            Op::ClaimParentChat => {
                self.next_observer += 1;
                let claimant = Claimant::new(format!("conn-{}", self.next_observer));
                let guard = self.rig.engine.claim_chat(CHAT, claimant);
                let covered = (0..self.slots.len())
                    .filter(|&i| self.slots[i].covered_by_parent_chat())
                    .collect();
                self.claim(covered, guard);
            }
            Op::Release(i) => self.release(i),
            Op::Advance(ms) => self.advance(ms).await?,
            Op::FinishBody(i) => self.rig.tools.finish(&self.slots[i].key()),
            Op::ApproveLocal(i) => {
                if let Some(invocation) = self.rig.engine.invocation(&self.slots[i].key())
                    && invocation.status() == InvocationStatus::AwaitingConfirmation
                {
                    invocation.decide(LocalDecision::Approve {
                        reason: ToolCallConfirmationReason::UserAction,
                        selected_option_id: None,
                    });
                }
            }
            // An observer can only answer what it renders: a pending obligation.
            Op::ObserverAnswer(i) if self.slots[i].phase == HostPhase::Pending => {
                let slot = &self.slots[i];
                let action: Option<StateAction> = match slot.kind {
                    Kind::ServerParam => Some(answers::deny_parameters(&slot.key(), None, None)),
                    Kind::ServerResult => Some(answers::confirm_result(&slot.key(), true)),
                    Kind::Input => serde_json::from_value(json!({
                        "type": "chat/inputCompleted", "requestId": slot.call, "response": "accept"
                    }))
                    .ok(),
                    _ => None,
                };
                if let Some(action) = action {
                    let chat = slot.chat.clone();
                    self.rig.engine.answer(&chat, action);
                }
            }
            Op::ObserverAnswer(_) => {}
            Op::Disconnect => self.connected = false,
            Op::Reconnect => self.reconnect(),
        }
        self.drain().await
    }

    /// Advances the paused clock by `ms`, stopping at every engine deadline on the way so that
    /// each timer fires at its exact instant.
    async fn advance(&mut self, ms: u64) -> Result<(), TestCaseError> {
        let target = Instant::now() + Duration::from_millis(ms);
        loop {
            self.drain().await?;
            let now = Instant::now();
            let step = match self.rig.engine.next_deadline() {
                Some(deadline) if deadline > now && deadline < target => deadline,
                _ => target,
            };
            tokio::time::advance(step - now).await;
            self.drain().await?;
            if Instant::now() >= target {
                return Ok(());
            }
        }
    }

    fn check_runs(&self) -> Result<(), TestCaseError> {
        let mut runs: BTreeMap<ToolCallKey, usize> = BTreeMap::new();
        for invoked in self.rig.tools.invoked() {
            *runs.entry(invoked.key.clone()).or_default() += 1;
            let slot = self.slots.iter().find(|s| s.key() == invoked.key);
            let confirmable = slot
                .is_some_and(|s| matches!(s.kind, Kind::ExecConfirmable | Kind::ConfConfirmable));
            if confirmable && invoked.context.is_none() {
                return Err(fail(format!(
                    "a confirmable tool ran headless: {}",
                    invoked.key
                )));
            }
        }
        if let Some((key, n)) = runs.iter().find(|(_, n)| **n > 1) {
            return Err(fail(format!("{key} ran {n} times")));
        }
        Ok(())
    }

    /// Releases every claim, lets every body finish and every window run out.
    async fn wind_down(&mut self) -> Result<(), TestCaseError> {
        if !self.connected {
            self.reconnect();
        }
        while !self.claims.is_empty() {
            self.release(0);
        }
        self.drain().await?;
        for _ in 0..6 {
            for slot in &self.slots {
                self.rig.tools.finish(&slot.key());
            }
            self.drain().await?;
            self.advance(GRACE_MS + 1).await?;
        }
        for (i, slot) in self.slots.iter().enumerate() {
            let pending = matches!(slot.phase, HostPhase::Pending | HostPhase::Executing);
            if pending && slot.kind != Kind::Foreign {
                return Err(fail(format!(
                    "slot {i} ({:?}) was never answered: {:?}",
                    slot.kind, slot.phase
                )));
            }
        }
        for i in 0..self.slots.len() {
            self.apply(&Op::TurnEnd(i)).await?;
        }
        settle().await;
        let stats = self.rig.engine.stats();
        if stats != EngineStats::default() {
            return Err(fail(format!(
                "state leaked once the queue is empty: {stats:?}"
            )));
        }
        Ok(())
    }
}

/// Whether an answer is one the engine's policy produces (not a run's own result, not an
/// observer's answer).
fn policy_answer(wire: &Value) -> bool {
    match wire["type"].as_str().unwrap_or_default() {
        "chat/inputCompleted" => wire["response"] == json!("cancel"),
        "chat/toolCallConfirmed" => wire.get("reasonMessage").is_some(),
        "chat/toolCallResultConfirmed" => wire["approved"] == json!(false),
        "chat/toolCallComplete" => {
            let code = &wire["result"]["error"]["code"];
            code == &json!("clientUnavailable") || code == &json!("cancelled")
        }
        _ => false,
    }
}

fn run_case(kinds: &[Kind], ops: &[Op]) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut world = World::new(kinds);
        for op in ops {
            world.apply(op).await?;
            world.check_runs()?;
        }
        world.wind_down().await?;
        world.check_runs()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_pending_obligation_is_answered_once_on_time_and_nothing_leaks(
        kinds in proptest::collection::vec(kind(), SLOTS),
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        run_case(&kinds, &ops)?;
    }
}

#[test]
fn a_handpicked_interleaving_passes() {
    let kinds = [
        Kind::ConfConfirmable,
        Kind::ServerParam,
        Kind::Input,
        Kind::ExecConfirmable,
        Kind::ConfPlain,
        Kind::Auth,
    ];
    let ops = [
        Op::Claim(0),
        Op::ClaimParentChat,
        Op::Appear(0),
        Op::Appear(1),
        Op::Appear(2),
        Op::Appear(3),
        Op::Advance(2500),
        Op::Release(1),
        Op::Disconnect,
        Op::Appear(4),
        Op::Appear(5),
        Op::Advance(4999),
        Op::Reconnect,
        Op::ApproveLocal(0),
        Op::Advance(5001),
        Op::FinishBody(0),
        Op::Release(0),
        Op::Advance(7000),
    ];
    run_case(&kinds, &ops).unwrap();
}

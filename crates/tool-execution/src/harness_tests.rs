//! Test harness: a recording sink, scriptable local tools, a paused-clock timeline and a
//! minimal host that keeps a session's status with the canonical reducer.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agenthost_protocol::ahp_types::actions::{
    SessionInputNeededRemovedAction, SessionInputNeededSetAction,
};
use agenthost_protocol::ahp_types::state::{
    ContentRef, SessionInputRequest, SessionState, ToolCallConfirmationReason, ToolCallResult,
};
use agenthost_protocol::ids::ToolCallKey;
use agenthost_protocol::{StateAction, Uri};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::answers::{self, AnswerKind, AnswerTarget};
use crate::{
    AnswerSink, BoxFuture, Claimant, EngineConfig, LocalCall, LocalGate, SessionEngine,
    SessionUpdate, ToolDescriptor, ToolLookup, ToolRunner,
};

/// Lets every ready task run (timers fired by `advance`, runs, the timer driver).
pub async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

/// A paused-clock timeline measured in milliseconds from its creation.
pub struct Timeline {
    origin: Instant,
}

impl Timeline {
    pub fn start() -> Self {
        Self {
            origin: Instant::now(),
        }
    }

    pub fn now_ms(&self) -> u64 {
        u64::try_from(Instant::now().duration_since(self.origin).as_millis()).unwrap()
    }

    /// Advances the paused clock to `t` ms (never backwards) and lets everything run.
    pub async fn at(&self, t: u64) {
        settle().await;
        let now = self.now_ms();
        assert!(t >= now, "timeline cannot go back from {now} to {t}");
        if t > now {
            tokio::time::advance(Duration::from_millis(t - now)).await;
        }
        settle().await;
    }

    pub fn instant(&self, t: u64) -> Instant {
        self.origin + Duration::from_millis(t)
    }
}

/// One dispatched answer.
#[derive(Debug, Clone)]
pub struct Sent {
    pub at: Instant,
    pub chat: Uri,
    pub action: StateAction,
}

impl Sent {
    pub fn wire(&self) -> Value {
        serde_json::to_value(&self.action).unwrap()
    }

    pub fn target(&self) -> Option<AnswerTarget> {
        answers::answer_target(&self.chat, &self.action)
    }
}

/// A sink that records every dispatch.
#[derive(Default)]
pub struct Recorder {
    sent: Mutex<Vec<Sent>>,
}

impl AnswerSink for Recorder {
    fn dispatch(&self, chat: &Uri, action: StateAction) {
        self.sent.lock().unwrap().push(Sent {
            at: Instant::now(),
            chat: chat.clone(),
            action,
        });
    }
}

impl Recorder {
    pub fn all(&self) -> Vec<Sent> {
        self.sent.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.sent.lock().unwrap().len()
    }

    pub fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.sent.lock().unwrap())
    }

    /// Every answer of `kind` for `key`.
    pub fn for_call(&self, key: &ToolCallKey, kind: AnswerKind) -> Vec<Sent> {
        self.all()
            .into_iter()
            .filter(|s| s.target() == Some(AnswerTarget::ToolCall(key.clone(), kind)))
            .collect()
    }

    pub fn completions(&self, key: &ToolCallKey) -> Vec<Sent> {
        self.for_call(key, AnswerKind::ToolCallComplete)
    }

    pub fn types(&self) -> Vec<String> {
        self.all()
            .iter()
            .map(|s| s.wire()["type"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// How a scripted tool behaves.
#[derive(Debug, Clone)]
pub struct ToolScript {
    pub may_request_confirmation: bool,
    pub gate: LocalGate,
    /// When true the body waits until [`FakeTools::finish`] (or cancellation).
    pub blocking: bool,
    pub not_ready: bool,
}

impl ToolScript {
    pub fn plain() -> Self {
        Self {
            may_request_confirmation: false,
            gate: LocalGate::NotNeeded,
            blocking: false,
            not_ready: false,
        }
    }

    pub fn confirmable() -> Self {
        Self {
            may_request_confirmation: true,
            gate: LocalGate::Ask,
            ..Self::plain()
        }
    }

    pub fn blocking(mut self) -> Self {
        self.blocking = true;
        self
    }

    pub fn gate(mut self, gate: LocalGate) -> Self {
        self.gate = gate;
        self
    }
}

/// What the fake saw of one body invocation.
#[derive(Debug, Clone)]
pub struct Invoked {
    pub key: ToolCallKey,
    pub at: Instant,
    pub context: Option<Claimant>,
    pub pre_approval: Option<ToolCallConfirmationReason>,
    pub parameters: Map<String, Value>,
    pub invocation_id: u64,
    pub token: crate::CancelToken,
}

#[derive(Default)]
struct FakeState {
    tools: HashMap<String, ToolScript>,
    inputs: HashMap<Uri, Result<String, String>>,
    invoked: Vec<Invoked>,
    confirmations_asked: Vec<ToolCallKey>,
    releases: HashMap<ToolCallKey, Arc<Notify>>,
    results: HashMap<ToolCallKey, ToolCallResult>,
}

/// Scriptable local tools that record every invocation.
#[derive(Default, Clone)]
pub struct FakeTools {
    state: Arc<Mutex<FakeState>>,
}

impl FakeTools {
    pub fn with(tools: &[(&str, ToolScript)]) -> Self {
        let fake = Self::default();
        for (name, script) in tools {
            fake.set(name, script.clone());
        }
        fake
    }

    pub fn set(&self, name: &str, script: ToolScript) {
        self.state
            .lock()
            .unwrap()
            .tools
            .insert(name.to_owned(), script);
    }

    pub fn set_input(&self, uri: &str, content: Result<String, String>) {
        self.state
            .lock()
            .unwrap()
            .inputs
            .insert(uri.to_owned(), content);
    }

    pub fn invoked(&self) -> Vec<Invoked> {
        self.state.lock().unwrap().invoked.clone()
    }

    pub fn invoked_for(&self, key: &ToolCallKey) -> Vec<Invoked> {
        self.invoked()
            .into_iter()
            .filter(|i| &i.key == key)
            .collect()
    }

    pub fn confirmations_asked(&self) -> Vec<ToolCallKey> {
        self.state.lock().unwrap().confirmations_asked.clone()
    }

    /// Lets a blocking body of `key` return `result` (or "done").
    pub fn finish(&self, key: &ToolCallKey) {
        let notify = self.release(key);
        notify.notify_one();
    }

    pub fn set_result(&self, key: &ToolCallKey, result: ToolCallResult) {
        self.state
            .lock()
            .unwrap()
            .results
            .insert(key.clone(), result);
    }

    fn release(&self, key: &ToolCallKey) -> Arc<Notify> {
        Arc::clone(
            self.state
                .lock()
                .unwrap()
                .releases
                .entry(key.clone())
                .or_default(),
        )
    }
}

impl ToolRunner for FakeTools {
    fn lookup(&self, tool_name: &str) -> ToolLookup {
        match self.state.lock().unwrap().tools.get(tool_name) {
            Some(script) if script.not_ready => ToolLookup::NotReady,
            Some(script) => ToolLookup::Found(ToolDescriptor {
                may_request_confirmation: script.may_request_confirmation,
            }),
            None => ToolLookup::Unknown,
        }
    }

    fn read_input(&self, reference: &ContentRef) -> BoxFuture<'static, Result<String, String>> {
        let found = self
            .state
            .lock()
            .unwrap()
            .inputs
            .get(&reference.uri)
            .cloned();
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            found.unwrap_or_else(|| Err("no such resource".to_owned()))
        })
    }

    fn confirmation(&self, call: &LocalCall) -> BoxFuture<'static, LocalGate> {
        let gate = {
            let mut state = self.state.lock().unwrap();
            let gate = state
                .tools
                .get(&call.tool_name)
                .map_or(LocalGate::NotNeeded, |s| s.gate.clone());
            if gate == LocalGate::Ask {
                state.confirmations_asked.push(call.key.clone());
            }
            gate
        };
        Box::pin(async move { gate })
    }

    fn execute(&self, call: LocalCall) -> BoxFuture<'static, ToolCallResult> {
        let (blocking, result, release) = {
            let mut state = self.state.lock().unwrap();
            state.invoked.push(Invoked {
                key: call.key.clone(),
                at: Instant::now(),
                context: call.context.clone(),
                pre_approval: call.pre_approval.clone(),
                parameters: call.parameters.clone(),
                invocation_id: call.invocation.id(),
                token: call.cancel.clone(),
            });
            let blocking = state.tools.get(&call.tool_name).is_some_and(|s| s.blocking);
            let result = state
                .results
                .get(&call.key)
                .cloned()
                .unwrap_or_else(|| answers::text_result("Ran", "done"));
            let release = Arc::clone(state.releases.entry(call.key.clone()).or_default());
            (blocking, result, release)
        };
        Box::pin(async move {
            if blocking {
                release.notified().await;
            }
            result
        })
    }
}

/// An engine with a recorder and fake tools.
pub struct Rig {
    pub engine: SessionEngine,
    pub sent: Arc<Recorder>,
    pub tools: FakeTools,
    pub time: Timeline,
}

impl Rig {
    pub fn new(config: EngineConfig, tools: FakeTools) -> Self {
        let sent = Arc::new(Recorder::default());
        let engine = SessionEngine::new(
            config,
            Arc::clone(&sent) as Arc<dyn AnswerSink>,
            Arc::new(tools.clone()),
        )
        .unwrap();
        Self {
            engine,
            sent,
            tools,
            time: Timeline::start(),
        }
    }

    /// The designated responder executing `CLIENT`'s tools.
    pub fn responder(tools: FakeTools) -> Self {
        Self::new(EngineConfig::responder(crate::fixtures::CLIENT), tools)
    }

    pub fn set(&self, entry: SessionInputRequest) {
        self.engine.apply(SessionUpdate::set(entry));
    }

    pub fn remove(&self, id: &str) {
        self.engine.apply(SessionUpdate::Removed(id.to_owned()));
    }

    pub fn ms(&self, sent: &Sent) -> u64 {
        u64::try_from(sent.at.duration_since(self.time.origin).as_millis()).unwrap()
    }
}

/// A minimal host session: applies the list's server actions with the canonical reducer, so a
/// test can read the session status AHP derives.
pub struct FakeSession {
    pub state: SessionState,
}

impl FakeSession {
    pub fn with_status(status: u32) -> Self {
        let state = serde_json::from_value(json!({
            "provider": "scripted", "title": "s", "status": status, "lifecycle": "ready",
            "activeClients": [], "chats": []
        }))
        .unwrap();
        Self { state }
    }

    pub fn set(&mut self, entry: SessionInputRequest) {
        let action = StateAction::SessionInputNeededSet(Box::new(SessionInputNeededSetAction {
            request: entry,
        }));
        ahp::reducers::apply_action_to_session(&mut self.state, &action);
    }

    pub fn remove(&mut self, id: &str) {
        let action = StateAction::SessionInputNeededRemoved(SessionInputNeededRemovedAction {
            id: id.to_owned(),
        });
        ahp::reducers::apply_action_to_session(&mut self.state, &action);
    }

    pub fn status(&self) -> u32 {
        self.state.status
    }
}

//! [`SessionEngine`]: the per-session engine around the [`Core`] state machine — one lock, a
//! timer driver task, and one task per local run.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use agenthost_protocol::ahp_types::state::{SessionState, ToolCallResult, ToolInput};
use agenthost_protocol::ids::ToolCallKey;
use agenthost_protocol::{ActionEnvelope, StateAction, Uri};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::answers;
use crate::config::EngineConfig;
use crate::core::{AnswerOutcome, Core, Effects, EngineStats, GatePass, RunTicket};
use crate::invocation::{Presentation, SharedInvocation};
use crate::keys::{ClaimId, ClaimKey, ClaimScope, Claimant};
use crate::runner::{LocalCall, LocalGate, ToolRunner};
use crate::update::{EnvelopeMeaning, SessionUpdate, interpret, parent_of};

/// Where the engine's answers go: ordinary chat actions dispatched on the entry's chat channel.
///
/// Called outside the engine's lock, so an implementation may call back into the engine.
pub trait AnswerSink: Send + Sync + 'static {
    /// Dispatches `action` on the chat channel `chat`.
    fn dispatch(&self, chat: &Uri, action: StateAction);
}

/// Why an engine could not be created.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine spawns its timer driver and its runs on the current Tokio runtime.
    #[error("a session engine must be created inside a Tokio runtime: {0}")]
    NoRuntime(#[from] tokio::runtime::TryCurrentError),
}

/// The per-session engine: the single executor of client tools and the single dispatcher of
/// answers for the obligations in one session's `inputNeeded` list.
///
/// Cloning shares the engine. Create exactly one per session (see
/// [`EngineRegistry`](crate::EngineRegistry)); observers only claim and render.
#[derive(Clone)]
pub struct SessionEngine {
    inner: Arc<Inner>,
}

struct Inner {
    core: Mutex<Core>,
    sink: Arc<dyn AnswerSink>,
    runner: Arc<dyn ToolRunner>,
    wake: Arc<Notify>,
    handle: Handle,
    attachments: Mutex<BTreeSet<String>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Lets the timer driver notice that the engine is gone.
        self.wake.notify_one();
    }
}

impl Inner {
    fn core(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `op` on the core under the lock, then carries out its effects outside it.
    fn with_core<T>(self: &Arc<Self>, op: impl FnOnce(&mut Core, Instant, &mut Effects) -> T) -> T {
        let mut fx = Effects::default();
        let value = {
            let mut core = self.core();
            op(&mut core, Instant::now(), &mut fx)
        };
        self.carry_out(fx);
        value
    }

    fn carry_out(self: &Arc<Self>, fx: Effects) {
        if fx.timers_changed {
            self.wake.notify_one();
        }
        for ticket in fx.runs {
            self.handle.spawn(run(Arc::clone(self), ticket));
        }
        for (chat, action) in fx.dispatches {
            self.sink.dispatch(&chat, action);
        }
    }
}

impl SessionEngine {
    /// Creates an engine on the current Tokio runtime. `runner` executes the client tools of
    /// `config.client_id` (use [`NoLocalTools`](crate::NoLocalTools) when there is none).
    pub fn new(
        config: EngineConfig,
        sink: Arc<dyn AnswerSink>,
        runner: Arc<dyn ToolRunner>,
    ) -> Result<Self, EngineError> {
        let handle = Handle::try_current()?;
        let wake = Arc::new(Notify::new());
        let inner = Arc::new(Inner {
            core: Mutex::new(Core::new(config, Arc::clone(&runner))),
            sink,
            runner,
            wake: Arc::clone(&wake),
            handle: handle.clone(),
            attachments: Mutex::new(BTreeSet::new()),
        });
        handle.spawn(drive_timers(Arc::downgrade(&inner), wake));
        Ok(Self { inner })
    }

    /// The configuration.
    pub fn config(&self) -> EngineConfig {
        self.inner.core().config().clone()
    }

    /// Applies one change of the `inputNeeded` list.
    pub fn apply(&self, update: SessionUpdate) {
        self.inner.with_core(|core, now, fx| match update {
            SessionUpdate::Snapshot(list) => core.snapshot(list, now, fx),
            SessionUpdate::Set(entry) => core.set_entry(*entry, now, fx),
            SessionUpdate::Removed(id) => core.remove_entry(&id, now, fx),
        });
    }

    /// Applies a session snapshot: the chat catalog's subagent ancestry, then the list.
    pub fn apply_session_state(&self, state: &SessionState) {
        let list = state.input_needed.clone().unwrap_or_default();
        let parents: Vec<(Uri, Option<Uri>)> = state
            .chats
            .iter()
            .map(|c| (c.resource.clone(), parent_of(c.origin.as_ref())))
            .collect();
        self.inner.with_core(|core, now, fx| {
            for (chat, parent) in parents {
                core.set_parent(&chat, parent, now, fx);
            }
            core.snapshot(list, now, fx);
        });
    }

    /// Applies one envelope of the session's stream: `inputNeeded` changes, chat catalog
    /// changes (subagent ancestry) and remote tool-call outcomes seen on chat channels.
    /// Returns whether the envelope mattered to the engine.
    pub fn apply_envelope(&self, envelope: &ActionEnvelope) -> bool {
        match interpret(envelope) {
            EnvelopeMeaning::Queue(update) => self.apply(update),
            EnvelopeMeaning::Parent { chat, parent } => self.set_chat_parent(&chat, parent),
            EnvelopeMeaning::RemoteEnd(key) => self
                .inner
                .with_core(|core, now, fx| core.remote_outcome(&key, now, fx)),
            EnvelopeMeaning::Irrelevant => return false,
        }
        true
    }

    /// Records that `chat` was spawned by `parent` (a subagent chat), or clears it.
    pub fn set_chat_parent(&self, chat: &Uri, parent: Option<Uri>) {
        self.inner
            .with_core(|core, now, fx| core.set_parent(chat, parent, now, fx));
    }

    /// Claims one obligation for `claimant` (a view rendering it). Dropping the guard releases
    /// exactly this claim.
    pub fn claim(&self, key: impl Into<ClaimKey>, claimant: Claimant) -> ClaimGuard {
        self.claim_scope(ClaimScope::Key(key.into()), claimant)
    }

    /// Claims every obligation of `chat` (and the tool-call obligations of its subagent chats):
    /// what a live subscription to the chat means on the host.
    pub fn claim_chat(&self, chat: impl Into<Uri>, claimant: Claimant) -> ClaimGuard {
        self.claim_scope(ClaimScope::Chat(chat.into()), claimant)
    }

    fn claim_scope(&self, scope: ClaimScope, claimant: Claimant) -> ClaimGuard {
        let id = self.inner.with_core({
            let claimant = claimant.clone();
            move |core, now, fx| core.claim(scope, claimant, now, fx)
        });
        ClaimGuard {
            engine: Arc::downgrade(&self.inner),
            id: Some(id),
            claimant,
        }
    }

    /// Forwards an observer's answer (a server confirmation, an elicitation, a skip) through
    /// the funnel: the first answer per obligation and kind is dispatched, later ones dropped.
    pub fn answer(&self, chat: &Uri, action: StateAction) -> AnswerOutcome {
        self.inner
            .with_core(|core, now, fx| core.answer(chat, action, now, fx))
    }

    /// The shared invocation of a tool call, if one exists.
    pub fn invocation(&self, key: &ToolCallKey) -> Option<SharedInvocation> {
        self.inner.core().invocation(key)
    }

    /// Gets or creates the shared invocation of a tool call and binds `presentation` to it
    /// (attributes given replace the current ones). Observers call this *before* claiming.
    pub fn invocation_or_create(
        &self,
        key: &ToolCallKey,
        presentation: Presentation,
    ) -> SharedInvocation {
        self.inner
            .with_core(|core, _, _| core.invocation_or_create(key, presentation))
    }

    /// Adds an attachment (an opened chat, a connected client of the session).
    pub fn attach(&self, who: impl Into<String>) {
        self.attachments().insert(who.into());
    }

    /// Removes an attachment; removing the last one disposes the engine. Returns whether the
    /// engine is now disposed.
    pub fn detach(&self, who: &str) -> bool {
        let last = {
            let mut attachments = self.attachments();
            attachments.remove(who) && attachments.is_empty()
        };
        if last {
            self.dispose();
        }
        last
    }

    /// Number of attachments.
    pub fn attachment_count(&self) -> usize {
        self.attachments().len()
    }

    fn attachments(&self) -> MutexGuard<'_, BTreeSet<String>> {
        self.inner
            .attachments
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Disposes: every in-flight run is cancelled (no completion is dispatched for it), every
    /// timer dropped, every lease released. Later updates are ignored.
    pub fn dispose(&self) {
        self.inner.core().dispose();
        self.inner.wake.notify_one();
    }

    /// Whether the engine was disposed.
    pub fn is_disposed(&self) -> bool {
        self.inner.core().is_disposed()
    }

    /// Counts of the engine's state (diagnostics, leak checks).
    pub fn stats(&self) -> EngineStats {
        self.inner.core().stats()
    }

    /// The earliest armed deadline (grace, local-confirmation or hand-over window), if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.inner.core().next_deadline()
    }

    /// The grace deadline currently armed for an entry, if any.
    pub fn grace_deadline(&self, entry_id: &str) -> Option<Instant> {
        self.inner.core().entry_deadline(entry_id)
    }
}

/// A live claim; dropping it (or [`release`](Self::release)) removes exactly this claim.
#[derive(Debug)]
pub struct ClaimGuard {
    engine: Weak<Inner>,
    id: Option<ClaimId>,
    claimant: Claimant,
}

impl ClaimGuard {
    /// The claim's id.
    pub fn id(&self) -> Option<ClaimId> {
        self.id
    }

    /// The claimant.
    pub fn claimant(&self) -> &Claimant {
        &self.claimant
    }

    /// Releases the claim now.
    pub fn release(mut self) {
        self.release_now();
    }

    fn release_now(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        if let Some(inner) = self.engine.upgrade() {
            inner.with_core(|core, now, fx| core.release(id, now, fx));
        }
    }
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        self.release_now();
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionEngine").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for SessionEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionEngine")
            .field("stats", &self.stats())
            .finish()
    }
}

/// Sleeps until the earliest deadline (or a change of it) and fires what is due.
async fn drive_timers(engine: Weak<Inner>, wake: Arc<Notify>) {
    loop {
        let next = {
            let Some(inner) = engine.upgrade() else {
                return;
            };
            let core = inner.core();
            if core.is_disposed() {
                return;
            }
            core.next_deadline()
        };
        match next {
            Some(deadline) => {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
        let Some(inner) = engine.upgrade() else {
            return;
        };
        inner.with_core(|core, now, fx| core.fire_due(now, fx));
    }
}

/// One local run. Every step after an await goes back through the core, which checks
/// that the attempt is still current before anything is dispatched.
async fn run(inner: Arc<Inner>, ticket: RunTicket) {
    let RunTicket {
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
    } = ticket;
    let fail = |code: &str, message: &str| {
        let result = answers::local_failure_result(&display_name, message, code);
        inner.with_core(|core, now, fx| core.fail_run(&key, attempt, result, now, fx));
    };
    let unwind = || inner.with_core(|core, now, fx| core.unwind(&key, attempt, now, fx));

    // Read the input (possibly a content reference), then re-validate.
    let text = match input {
        None => "{}".to_owned(),
        Some(ToolInput::Inline(text)) => text,
        Some(ToolInput::ContentRef(reference)) => {
            let read = inner.runner.read_input(&reference);
            let outcome = tokio::select! {
                outcome = read => Some(outcome),
                () = token.cancelled() => None,
            };
            let current = inner.core().is_current(&key, attempt);
            match outcome {
                Some(Ok(text)) if current => text,
                Some(Err(error)) if current => {
                    return fail(answers::INPUT_READ_FAILED, &error);
                }
                _ => return unwind(),
            }
        }
    };
    let parameters = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            return fail(
                answers::INVALID_INPUT,
                "The tool input is not a JSON object.",
            );
        }
        Err(error) => {
            return fail(
                answers::INVALID_INPUT,
                &format!("The tool input is not valid JSON: {error}"),
            );
        }
    };
    let reporter = {
        let engine = Arc::downgrade(&inner);
        let key = key.clone();
        Arc::new(move |content| {
            if let Some(inner) = engine.upgrade() {
                inner.with_core(|core, _, fx| core.content(&key, attempt, content, fx));
            }
        }) as crate::runner::ContentReporter
    };
    let call = LocalCall {
        key: key.clone(),
        tool_name,
        display_name: display_name.clone(),
        parameters,
        context,
        pre_approval: pre_approval.clone(),
        cancel: token.clone(),
        invocation,
        reporter: Some(reporter),
    };

    // The local confirmation gate.
    if pre_approval.is_none() {
        let gate = if must_ask {
            LocalGate::Ask
        } else {
            let asked = inner.runner.confirmation(&call);
            let gate = tokio::select! {
                gate = asked => Some(gate),
                () = token.cancelled() => None,
            };
            match gate {
                Some(gate) if inner.core().is_current(&key, attempt) => gate,
                _ => return unwind(),
            }
        };
        let passed = match gate {
            LocalGate::NotNeeded => inner
                .with_core(|core, _, fx| core.pass_gate(&key, attempt, GatePass::NotNeeded, fx)),
            LocalGate::ApprovedBySetting => {
                inner.with_core(|core, _, fx| core.pass_gate(&key, attempt, GatePass::Setting, fx))
            }
            LocalGate::Ask => {
                let Some(decision) = inner
                    .with_core(|core, now, fx| core.enter_confirmation(&key, attempt, now, fx))
                else {
                    return unwind();
                };
                let decision = tokio::select! {
                    decision = decision => decision.ok(),
                    () = token.cancelled() => None,
                };
                let Some(decision) = decision else {
                    return unwind();
                };
                inner.with_core(|core, now, fx| {
                    core.local_decision(&key, attempt, decision, now, fx)
                })
            }
        };
        if !passed {
            return;
        }
    }

    // The body: the only place a local tool is invoked.
    if !inner.with_core(|core, _, fx| core.begin_body(&key, attempt, fx)) {
        return unwind();
    }
    let body = inner.runner.execute(call);
    let outcome: Option<ToolCallResult> = tokio::select! {
        result = body => Some(result),
        () = token.cancelled() => None,
    };
    match outcome {
        Some(result) => {
            inner.with_core(|core, now, fx| core.complete_run(&key, attempt, result, now, fx))
        }
        None => unwind(),
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;

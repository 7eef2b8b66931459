//! The registry and the per-hook fan-out.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use agenthost_protocol::ahp_types::state::Turn;
use agenthost_protocol::error_info::{INTERNAL_ERROR, error_info};
use arc_swap::ArcSwap;
use futures::FutureExt;

use crate::context::ContributionContext;
use crate::contribution::{ChatContribution, Contribution, ContributionError, Descriptor};
use crate::hooks::Hook;
use crate::host::{BridgeError, HostBridge, HostRegistration, HostSlot};
use crate::memento::MementoStore;
use crate::payload::{
    AppliedClientAction, DispatchedAction, Disposition, HydrationContext, IncomingRequest,
    OutgoingTurn, OutgoingTurnResult, RejectStage, RestoredChat, TurnEnd,
};
use crate::services::{MissingService, ServiceRegistry};

/// Why a contribution could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// A contribution with this id is registered already; checked before construction.
    #[error("Chat contribution already registered: {id}")]
    Duplicate {
        /// The id.
        id: &'static str,
    },
    /// The factory asked for a service the registry does not hold.
    #[error("Chat contribution '{id}' needs service `{service}`, which is not registered")]
    MissingService {
        /// The contribution.
        id: &'static str,
        /// The service's type name.
        service: &'static str,
    },
}

struct Record {
    descriptor: Descriptor,
    index: u64,
    contribution: Arc<dyn ChatContribution>,
    mementos: Arc<MementoStore>,
}

#[derive(Clone)]
struct Entry {
    id: &'static str,
    order: i32,
    contribution: Arc<dyn ChatContribution>,
}

/// The registrations implementing each hook, sorted by `(order, index)`. Rebuilt on every
/// registration change, so a dispatch only loads it.
#[derive(Default)]
struct Snapshot {
    hooks: [Box<[Entry]>; 7],
}

impl Snapshot {
    fn entries(&self, hook: Hook) -> &[Entry] {
        &self.hooks[hook.index()]
    }
}

#[derive(Default)]
struct Registry {
    records: Vec<Record>,
    next_index: u64,
}

/// Told of every hook a contribution runs, in the order they run: which hook, which
/// contribution. Put one in the [`ServiceRegistry`] a [`Dispatcher`] is built from (as
/// `dyn HookTrace`) to record a live host's call sequence; without one nothing is recorded.
pub trait HookTrace: Send + Sync {
    /// `contribution` is about to run `hook`.
    fn ran(&self, hook: Hook, contribution: &'static str);
}

pub(crate) struct Inner {
    services: ServiceRegistry,
    trace: Option<Arc<dyn HookTrace>>,
    registry: Mutex<Registry>,
    snapshot: ArcSwap<Snapshot>,
    pub(crate) host: HostSlot,
}

impl Inner {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        // Every mutation of the registry completes before the guard is dropped.
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, registry: &Registry) {
        let mut snapshot = Snapshot::default();
        for hook in Hook::ALL {
            let mut entries: Vec<(&Record, Entry)> = registry
                .records
                .iter()
                .filter(|r| r.descriptor.hooks.contains(hook))
                .map(|r| {
                    let entry = Entry {
                        id: r.descriptor.id,
                        order: r.descriptor.order,
                        contribution: Arc::clone(&r.contribution),
                    };
                    (r, entry)
                })
                .collect();
            entries.sort_by_key(|(r, _)| (r.descriptor.order, r.index));
            snapshot.hooks[hook.index()] = entries.into_iter().map(|(_, e)| e).collect();
        }
        self.snapshot.store(Arc::new(snapshot));
    }

    fn unregister(&self, index: u64) {
        let removed = {
            let mut registry = self.registry();
            let position = registry.records.iter().position(|r| r.index == index);
            let removed = position.map(|p| registry.records.remove(p));
            if removed.is_some() {
                self.publish(&registry);
            }
            removed
        };
        // Dropped outside the lock: a contribution's drop may itself touch the dispatcher.
        drop(removed);
    }
}

/// The registry of contributions and the per-hook fan-out. One per host process; cheap to clone
/// (clones share the registry).
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self
            .inner
            .registry()
            .records
            .iter()
            .map(|r| r.descriptor.id)
            .collect();
        f.debug_struct("Dispatcher")
            .field("contributions", &ids)
            .finish()
    }
}

/// Unregisters its contribution when dropped, and drops the contribution with its context and
/// mementos (once no dispatch in progress still holds it).
#[must_use = "dropping the registration unregisters the contribution"]
pub struct Registration {
    inner: Weak<Inner>,
    index: u64,
    id: &'static str,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .finish()
    }
}

impl Registration {
    /// The registered contribution's id.
    pub fn id(&self) -> &'static str {
        self.id
    }

    /// Unregisters now (the same as dropping the handle).
    pub fn unregister(self) {
        drop(self);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.unregister(self.index);
        }
    }
}

/// Several registrations under one handle (the built-in list returns one).
#[derive(Debug, Default)]
#[must_use = "dropping the set unregisters every contribution in it"]
pub struct RegistrationSet {
    registrations: Vec<Registration>,
}

impl RegistrationSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a registration.
    pub fn push(&mut self, registration: Registration) {
        self.registrations.push(registration);
    }

    /// The ids, in registration order.
    pub fn ids(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.registrations.iter().map(Registration::id)
    }
}

/// A handle to the host bridge slot that does not keep the dispatcher alive — what a contribution
/// holds to reach the host (holding the [`Dispatcher`] itself would be a reference cycle).
#[derive(Clone)]
pub struct HostAccess {
    inner: Weak<Inner>,
}

impl fmt::Debug for HostAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostAccess").finish_non_exhaustive()
    }
}

impl HostAccess {
    /// The registered host, if any.
    pub fn get(&self) -> Option<Arc<dyn HostBridge>> {
        self.inner.upgrade().and_then(|inner| host_of(&inner))
    }

    /// The dispatcher itself while it lives — for a contribution that runs the turn starter
    /// ([`Dispatcher::start_turn`]) or reports `onTurnEnd`. Hold it only for the call.
    pub fn dispatcher(&self) -> Option<Dispatcher> {
        self.inner.upgrade().map(|inner| Dispatcher { inner })
    }
}

fn host_of(inner: &Inner) -> Option<Arc<dyn HostBridge>> {
    inner.host.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

impl Dispatcher {
    /// A dispatcher constructing contributions from `services`.
    ///
    /// The dispatcher is itself a service: `services` gains a
    /// [`HostAccess`], the weak handle through which a contribution reaches the host bridge and
    /// the dispatcher without keeping either alive.
    pub fn new(mut services: ServiceRegistry) -> Self {
        Self {
            inner: Arc::new_cyclic(|weak| {
                services.insert(Arc::new(HostAccess {
                    inner: Weak::clone(weak),
                }));
                Inner {
                    trace: services.get::<dyn HookTrace>().ok(),
                    services,
                    registry: Mutex::new(Registry::default()),
                    snapshot: ArcSwap::from_pointee(Snapshot::default()),
                    host: Mutex::new(None),
                }
            }),
        }
    }

    /// The services contributions are constructed from.
    pub fn services(&self) -> &ServiceRegistry {
        &self.inner.services
    }

    /// Registers the contribution type `C`: duplicate check, fresh context, construction, record.
    pub fn register<C: Contribution>(&self) -> Result<Registration, RegistrationError> {
        self.register_with(Descriptor::of::<C>(), |context, services| {
            Ok(Arc::new(C::create(context, services)?))
        })
    }

    /// Registers a contribution built by `factory` under `descriptor` — for contributions whose
    /// identity is only known at run time (tests, benchmarks). The duplicate check runs before
    /// the factory.
    pub fn register_with(
        &self,
        descriptor: Descriptor,
        factory: impl FnOnce(
            ContributionContext,
            &ServiceRegistry,
        ) -> Result<Arc<dyn ChatContribution>, MissingService>,
    ) -> Result<Registration, RegistrationError> {
        let id = descriptor.id;
        let duplicate = || RegistrationError::Duplicate { id };
        if self.is_registered(id) {
            return Err(duplicate());
        }
        let context = ContributionContext::new(id);
        let mementos = Arc::clone(context.store());
        // Constructed without holding the lock: a factory may consult the dispatcher.
        let contribution = factory(context, &self.inner.services).map_err(|missing| {
            RegistrationError::MissingService {
                id,
                service: missing.service,
            }
        })?;
        let mut registry = self.inner.registry();
        // A concurrent registration of the same id may have won the race meanwhile.
        if registry.records.iter().any(|r| r.descriptor.id == id) {
            return Err(duplicate());
        }
        let index = registry.next_index;
        registry.next_index += 1;
        registry.records.push(Record {
            descriptor,
            index,
            contribution,
            mementos,
        });
        self.inner.publish(&registry);
        Ok(Registration {
            inner: Arc::downgrade(&self.inner),
            index,
            id,
        })
    }

    /// Whether a contribution with this id is registered.
    pub fn is_registered(&self, id: &str) -> bool {
        self.inner
            .registry()
            .records
            .iter()
            .any(|r| r.descriptor.id == id)
    }

    /// The execution order of one hook: `(order, id)` of each implementer.
    pub fn order_of(&self, hook: Hook) -> Vec<(i32, &'static str)> {
        self.inner
            .snapshot
            .load()
            .entries(hook)
            .iter()
            .map(|e| (e.order, e.id))
            .collect()
    }

    /// Registers the host bridge. Fails when one is registered already.
    pub fn register_host(
        &self,
        host: Arc<dyn HostBridge>,
    ) -> Result<HostRegistration, BridgeError> {
        let mut slot = self.inner.host.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return Err(BridgeError::AlreadyRegistered);
        }
        *slot = Some(Arc::clone(&host));
        Ok(HostRegistration {
            slot: Arc::downgrade(&self.inner),
            host,
        })
    }

    /// The registered host bridge; `None` until the orchestrator registers itself.
    pub fn host(&self) -> Option<Arc<dyn HostBridge>> {
        host_of(&self.inner)
    }

    /// A weak handle to the host slot, for contributions.
    pub fn host_access(&self) -> HostAccess {
        HostAccess {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Drops every chat memento of `chat`, in every contribution's context.
    pub fn evict_chat(&self, chat: &str) {
        for record in &self.inner.registry().records {
            record.mementos.evict_chat(chat);
        }
    }

    /// Drops every session memento of `session` and the chat mementos of its chats, in every
    /// contribution's context; other sessions are untouched.
    pub fn evict_session(&self, session: &str) {
        for record in &self.inner.registry().records {
            record.mementos.evict_session(session);
        }
    }

    /// `onIncomingRequest`: the first non-accept disposition wins and later contributions are
    /// not consulted; a failing contribution rejects with `internalError` (fails closed).
    pub fn incoming_request(&self, request: &IncomingRequest) -> Disposition {
        let snapshot = self.inner.snapshot.load();
        for entry in snapshot.entries(Hook::IncomingRequest) {
            self.traced(Hook::IncomingRequest, entry.id);
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                entry.contribution.on_incoming_request(request)
            }));
            match flatten(outcome) {
                Ok(None | Some(Disposition::Accept)) => {}
                Ok(Some(disposition)) => return disposition,
                Err(error) => {
                    log_failure(entry.id, &error);
                    return Disposition::Reject {
                        error: error_info(
                            INTERNAL_ERROR,
                            format!("Turn admission contribution '{}' failed", entry.id),
                        ),
                        stage: RejectStage::Validation,
                    };
                }
            }
        }
        Disposition::Accept
    }

    /// `onTurnEnd`, isolated per contribution.
    pub fn turn_end(&self, turn: &TurnEnd) {
        self.observe(Hook::TurnEnd, |c| c.on_turn_end(turn));
    }

    /// `onDidApplyClientAction`, isolated per contribution.
    pub fn did_apply_client_action(&self, action: &AppliedClientAction<'_>) {
        self.observe(Hook::DidApplyClientAction, |c| {
            c.on_did_apply_client_action(action)
        });
    }

    /// `onDidDispatchAction`, isolated per contribution.
    pub fn did_dispatch_action(&self, action: &DispatchedAction<'_>) {
        self.observe(Hook::DidDispatchAction, |c| {
            c.on_did_dispatch_action(action)
        });
    }

    /// Reports a hook call to the [`HookTrace`], when there is one.
    fn traced(&self, hook: Hook, contribution: &'static str) {
        if let Some(trace) = &self.inner.trace {
            trace.ran(hook, contribution);
        }
    }

    /// Observer fan-out. Allocation-free: the snapshot is loaded, not copied. One `catch_unwind`
    /// frame covers the whole loop (a frame per call measurably slowed the fan-out); after a
    /// panic the loop resumes with the next contribution.
    fn observe(
        &self,
        hook: Hook,
        call: impl Fn(&dyn ChatContribution) -> Result<(), ContributionError>,
    ) {
        let snapshot = self.inner.snapshot.load();
        let entries = snapshot.entries(hook);
        let mut next = 0;
        while next < entries.len() {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                while let Some(entry) = entries.get(next) {
                    self.traced(hook, entry.id);
                    if let Err(error) = call(entry.contribution.as_ref()) {
                        log_failure(entry.id, &Failure::Error(error));
                    }
                    next += 1;
                }
            }));
            if let Err(payload) = outcome {
                if let Some(entry) = entries.get(next) {
                    log_failure(entry.id, &Failure::Panic(panic_message(payload.as_ref())));
                }
                next += 1;
            }
        }
    }

    /// `onOutgoingTurn`: awaited in order; instructions appended, text replacements threaded (a
    /// later contribution sees the replaced text; an empty string counts). A failing contribution
    /// adds nothing and blocks nothing.
    pub async fn outgoing_turn(&self, turn: &OutgoingTurn) -> OutgoingTurnResult {
        let snapshot = self.inner.snapshot.load_full();
        let mut instructions: Vec<String> = Vec::new();
        let mut replaced: Option<agenthost_protocol::ahp_types::state::Message> = None;
        for entry in snapshot.entries(Hook::OutgoingTurn) {
            self.traced(Hook::OutgoingTurn, entry.id);
            let current = OutgoingTurn {
                message: replaced.clone().unwrap_or_else(|| turn.message.clone()),
                ..turn.clone()
            };
            let outcome = run_async(|| entry.contribution.on_outgoing_turn(&current)).await;
            match outcome {
                Ok(None) => {}
                Ok(Some(contribution)) => {
                    instructions.extend(contribution.instructions.into_iter().flatten());
                    if let Some(text) = contribution.text {
                        let mut message = current.message;
                        message.text = text;
                        replaced = Some(message);
                    }
                }
                Err(error) => log_failure(entry.id, &error),
            }
        }
        OutgoingTurnResult {
            instructions: (!instructions.is_empty()).then_some(instructions),
            message: replaced.unwrap_or_else(|| turn.message.clone()),
        }
    }

    /// `onHydrateTurns`: each stage's output feeds the next; a failing stage keeps the previous
    /// value. Without implementers the input comes back unchanged.
    pub async fn hydrate_turns(&self, context: &HydrationContext, turns: Vec<Turn>) -> Vec<Turn> {
        let snapshot = self.inner.snapshot.load_full();
        let mut current = turns;
        for entry in snapshot.entries(Hook::HydrateTurns) {
            self.traced(Hook::HydrateTurns, entry.id);
            match run_async(|| entry.contribution.on_hydrate_turns(context, &current)).await {
                Ok(next) => current = next,
                Err(error) => log_failure(entry.id, &error),
            }
        }
        current
    }

    /// `onHydrateChat`: a pipeline like [`hydrate_turns`](Self::hydrate_turns).
    pub async fn hydrate_chat(
        &self,
        context: &HydrationContext,
        chat: RestoredChat,
    ) -> RestoredChat {
        let snapshot = self.inner.snapshot.load_full();
        let mut current = chat;
        for entry in snapshot.entries(Hook::HydrateChat) {
            self.traced(Hook::HydrateChat, entry.id);
            match run_async(|| entry.contribution.on_hydrate_chat(context, &current)).await {
                Ok(next) => current = next,
                Err(error) => log_failure(entry.id, &error),
            }
        }
        current
    }
}

/// A failed hook: an error it returned, or a panic it raised.
enum Failure {
    Error(ContributionError),
    Panic(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Error(error) => error.fmt(f),
            Failure::Panic(message) => write!(f, "panicked: {message}"),
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}

fn flatten<T>(outcome: std::thread::Result<Result<T, ContributionError>>) -> Result<T, Failure> {
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(Failure::Error(error)),
        Err(payload) => Err(Failure::Panic(panic_message(payload.as_ref()))),
    }
}

/// Calls an async hook, catching a panic both while it builds its future and while it runs.
async fn run_async<'a, T>(
    start: impl FnOnce() -> futures::future::BoxFuture<'a, Result<T, ContributionError>>,
) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(start)) {
        Ok(future) => flatten(AssertUnwindSafe(future).catch_unwind().await),
        Err(payload) => Err(Failure::Panic(panic_message(payload.as_ref()))),
    }
}

fn log_failure(id: &str, failure: &Failure) {
    tracing::error!(contribution = id, "Contribution '{id}' failed: {failure}");
}

#[cfg(test)]
#[path = "dispatcher_tests.rs"]
mod tests;

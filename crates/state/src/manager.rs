//! [`StateManager`]: reduce, sequence, log, fan out, observe.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use agenthost_protocol::ahp_types::ROOT_RESOURCE_URI;
use agenthost_protocol::ahp_types::state::{
    ChatState, RootState, SessionState, Snapshot, SnapshotState,
};
use agenthost_protocol::{ActionEnvelope, ActionOrigin, ChatUri, SessionUri, StateAction};
use agenthost_reducers::{ApplyError, ChannelState, HostState, Reduced, StateError as HostError};

use crate::outbox::{Outbox, SubscriberId, action_frame};

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Tunables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateConfig {
    /// How many accepted envelopes the replay log keeps for `reconnect`.
    pub replay_capacity: usize,
    /// The `serverSeq` already used by earlier runs of the host (its persisted high-water mark):
    /// numbering continues above it, and a `reconnect` at or below it gets snapshots.
    pub first_server_seq: u64,
}

impl Default for StateConfig {
    fn default() -> Self {
        Self {
            replay_capacity: 10_000,
            first_server_seq: 0,
        }
    }
}

/// Persists how far `serverSeq` may go before asking again, so numbers never go backwards across
/// restarts. Called under the state lock, rarely (once per [`SEQ_RESERVATION`] numbers): keep it
/// short.
pub trait SeqReservation: Send + Sync {
    /// Records that numbers up to `up_to` may be used. Returns `false` if that could not be
    /// recorded (the state manager logs it and retries at the next number).
    fn reserve(&self, up_to: u64) -> bool;
}

/// How many sequence numbers one reservation covers.
pub const SEQ_RESERVATION: u64 = 1_000;

/// Errors of the structural and subscription operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The channel does not exist.
    #[error("no such channel: {0}")]
    UnknownChannel(String),
    /// The subscriber is not registered (its connection closed).
    #[error("unknown subscriber {0:?}")]
    UnknownSubscriber(SubscriberId),
    /// Inserting or removing a channel failed.
    #[error(transparent)]
    Host(#[from] HostError),
}

/// The outcome of a client dispatch (AHP §6.1).
#[derive(Debug, Clone, PartialEq)]
pub enum ClientDispatch {
    /// Reduced and broadcast with its origin.
    Accepted(Arc<ActionEnvelope>),
    /// Refused: the echo (with a fresh `serverSeq` and `rejectionReason`) for the dispatching
    /// connection only; it is not broadcast and not in the replay log.
    Rejected(Box<ActionEnvelope>),
    /// The channel does not exist: ignore silently, no echo.
    Ignored,
}

/// What an envelope observer sees: every envelope, accepted or rejected, with the session that
/// owns its channel.
#[derive(Debug, Clone, Copy)]
pub struct ObservedEnvelope<'a> {
    /// The envelope (with `rejection_reason` set when it was refused).
    pub envelope: &'a ActionEnvelope,
    /// The session owning the channel (the channel itself for a session), when there is one.
    pub session: Option<&'a SessionUri>,
    /// The channel as a chat, when it is one.
    pub chat: Option<&'a ChatUri>,
    /// Whether the reducer changed state (`false` for no-ops and rejections).
    pub applied: bool,
}

/// The typed URIs of a channel's owners, read under the lock for the observers.
struct Owner {
    session: Option<SessionUri>,
    chat: Option<ChatUri>,
}

/// Runs inside the state's critical section after an accepted action was reduced and numbered,
/// before any subscriber is handed its frame: whatever a client is told must already be durable
/// (the host stores a chat's record, an open-turn marker or a finished turn here). This is the
/// one place the section may block — for a single store transaction; keep it to that, retry
/// refused writes elsewhere, and never dispatch from it.
pub trait CommitHook: Send + Sync {
    /// Called once per accepted envelope, with the state it produced.
    fn before_broadcast(&self, host: &HostState, envelope: &ActionEnvelope);
}

/// Sees every envelope after it was sequenced, outside the state lock.
pub trait EnvelopeObserver: Send + Sync {
    /// Called once per envelope.
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>);
}

/// The answer to a `reconnect`.
#[derive(Debug, Clone, PartialEq)]
pub enum ReconnectOutcome {
    /// Every envelope after the watermark is still in the log.
    Replay {
        /// Those envelopes, in order, for the requested channels.
        actions: Vec<ActionEnvelope>,
        /// Requested channels that no longer exist.
        missing: Vec<String>,
    },
    /// The gap is too old (or the watermark is ahead: the host restarted): fresh snapshots of
    /// the requested channels that still exist.
    Snapshot {
        /// One per existing requested channel.
        snapshots: Vec<Snapshot>,
    },
}

struct Subscriber {
    outbox: Arc<dyn Outbox>,
    channels: HashSet<String>,
}

struct Inner {
    host: HostState,
    server_seq: u64,
    replay: VecDeque<Arc<ActionEnvelope>>,
    replay_capacity: usize,
    /// Every accepted envelope numbered above this is in `replay` (the sequence number of the
    /// last envelope evicted from the log).
    replay_floor: u64,
    /// Numbers up to this are reserved (persisted by `reservation`).
    reserved: u64,
    reservation: Option<Arc<dyn SeqReservation>>,
    commit_hooks: Vec<Arc<dyn CommitHook>>,
    subscribers: Map<SubscriberId, Subscriber>,
    channel_subscribers: Map<String, Vec<SubscriberId>>,
    next_subscriber: u64,
}

impl Inner {
    fn next_seq(&mut self) -> u64 {
        self.server_seq += 1;
        if self.server_seq > self.reserved
            && let Some(reservation) = &self.reservation
        {
            let up_to = self.server_seq.saturating_add(SEQ_RESERVATION);
            if reservation.reserve(up_to) {
                self.reserved = up_to;
            } else {
                tracing::error!(up_to, "could not persist the serverSeq reservation");
            }
        }
        self.server_seq
    }

    fn owner_of(&self, channel: &str) -> Owner {
        Owner {
            session: self.host.owning_session(channel).cloned(),
            chat: self.host.chat_uri(channel).cloned(),
        }
    }

    /// Hands a frame to every subscriber of `channel`; drops the ones that cannot take it.
    fn fan_out(&mut self, channel: &str, frame: &Arc<str>) {
        let Some(ids) = self.channel_subscribers.get(channel) else {
            return;
        };
        let lagged: Vec<SubscriberId> = ids
            .iter()
            .filter(|id| {
                self.subscribers
                    .get(id)
                    .is_some_and(|s| !s.outbox.push(Arc::clone(frame)))
            })
            .copied()
            .collect();
        for id in lagged {
            tracing::warn!(
                subscriber = id.0,
                "dropping a subscriber that cannot keep up"
            );
            self.drop_subscriber(id);
        }
    }

    fn drop_subscriber(&mut self, id: SubscriberId) {
        if let Some(subscriber) = self.subscribers.remove(&id) {
            for channel in subscriber.channels {
                self.detach(&channel, id);
            }
        }
    }

    fn detach(&mut self, channel: &str, id: SubscriberId) {
        if let Some(ids) = self.channel_subscribers.get_mut(channel) {
            ids.retain(|s| *s != id);
            if ids.is_empty() {
                self.channel_subscribers.remove(channel);
            }
        }
    }

    fn attach(&mut self, channel: &str, id: SubscriberId) -> Result<(), StateError> {
        let subscriber = self
            .subscribers
            .get_mut(&id)
            .ok_or(StateError::UnknownSubscriber(id))?;
        if subscriber.channels.insert(channel.to_owned()) {
            self.channel_subscribers
                .entry(channel.to_owned())
                .or_default()
                .push(id);
        }
        Ok(())
    }

    /// Forgets every subscription to channels that no longer exist.
    fn detach_channel(&mut self, channel: &str) {
        if let Some(ids) = self.channel_subscribers.remove(channel) {
            for id in ids {
                if let Some(s) = self.subscribers.get_mut(&id) {
                    s.channels.remove(channel);
                }
            }
        }
    }

    fn snapshot(&self, channel: &str) -> Option<Snapshot> {
        let state = if channel == ROOT_RESOURCE_URI {
            SnapshotState::Root(Box::new(self.host.root().clone()))
        } else {
            match self.host.channel(channel)?.clone() {
                ChannelState::Session(s) => SnapshotState::Session(s),
                ChannelState::Chat(c) => SnapshotState::Chat(c),
                ChannelState::Terminal(t) => SnapshotState::Terminal(t),
                ChannelState::Changeset(c) => SnapshotState::Changeset(c),
                ChannelState::Annotations(a) => SnapshotState::Annotations(a),
                ChannelState::ResourceWatch(r) => SnapshotState::ResourceWatch(r),
                ChannelState::Canvas(c) => SnapshotState::Canvas(c),
                ChannelState::Automation(a) => SnapshotState::Automations(a),
                ChannelState::AutomationRun(r) => SnapshotState::AutomationRun(r),
            }
        };
        Some(Snapshot {
            resource: channel.to_owned(),
            state,
            from_seq: i64::try_from(self.server_seq).unwrap_or(i64::MAX),
        })
    }

    /// Sequences an accepted envelope: number, log, fan out.
    fn commit(
        &mut self,
        channel: &str,
        action: StateAction,
        origin: Option<ActionOrigin>,
    ) -> Arc<ActionEnvelope> {
        let envelope = Arc::new(ActionEnvelope {
            channel: channel.to_owned(),
            action,
            server_seq: self.next_seq(),
            origin,
            rejection_reason: None,
        });
        if self.replay_capacity == 0 {
            self.replay_floor = envelope.server_seq;
        } else {
            if self.replay.len() == self.replay_capacity
                && let Some(evicted) = self.replay.pop_front()
            {
                self.replay_floor = evicted.server_seq;
            }
            self.replay.push_back(Arc::clone(&envelope));
        }
        for hook in &self.commit_hooks {
            hook.before_broadcast(&self.host, &envelope);
        }
        if self.channel_subscribers.contains_key(channel) {
            let frame = action_frame(&envelope);
            self.fan_out(channel, &frame);
        }
        envelope
    }
}

/// The authoritative state of the host. Cheap to share behind an `Arc`.
pub struct StateManager {
    inner: Mutex<Inner>,
    observers: RwLock<Vec<Arc<dyn EnvelopeObserver>>>,
}

impl fmt::Debug for StateManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateManager")
            .field("server_seq", &self.server_seq())
            .finish_non_exhaustive()
    }
}

impl StateManager {
    /// A state manager holding only `root`.
    pub fn new(root: RootState, config: StateConfig) -> Self {
        Self::with_reservation(root, config, None)
    }

    /// A state manager whose `serverSeq` continues above `config.first_server_seq` and persists
    /// its reservations through `reservation`. The number right after the first is skipped, so a
    /// client whose watermark equals the old high-water mark still gets a snapshot: whatever it
    /// saw belongs to the previous run.
    pub fn with_reservation(
        root: RootState,
        config: StateConfig,
        reservation: Option<Arc<dyn SeqReservation>>,
    ) -> Self {
        let start = if config.first_server_seq == 0 {
            0
        } else {
            config.first_server_seq.saturating_add(1)
        };
        Self {
            inner: Mutex::new(Inner {
                host: HostState::new(root),
                server_seq: start,
                replay: VecDeque::with_capacity(config.replay_capacity.min(1024)),
                replay_capacity: config.replay_capacity,
                replay_floor: start,
                reserved: start,
                reservation,
                commit_hooks: Vec::new(),
                subscribers: Map::default(),
                channel_subscribers: Map::default(),
                next_subscriber: 1,
            }),
            observers: RwLock::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every critical section leaves `Inner` consistent before it can panic (the reducers
        // are panic-free on input), so a poisoned lock still guards valid state.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a hook that runs before an accepted envelope reaches any subscriber.
    pub fn add_commit_hook(&self, hook: Arc<dyn CommitHook>) {
        self.lock().commit_hooks.push(hook);
    }

    /// Adds an envelope observer.
    pub fn add_observer(&self, observer: Arc<dyn EnvelopeObserver>) {
        self.observers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(observer);
    }

    fn observe(&self, envelope: &ActionEnvelope, owner: &Owner, applied: bool) {
        let observers = self
            .observers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let observed = ObservedEnvelope {
            envelope,
            session: owner.session.as_ref(),
            chat: owner.chat.as_ref(),
            applied,
        };
        for observer in observers {
            observer.on_envelope(&observed);
        }
    }

    /// The last `serverSeq` assigned.
    pub fn server_seq(&self) -> u64 {
        self.lock().server_seq
    }

    /// Reads the host state.
    pub fn read<R>(&self, f: impl FnOnce(&HostState) -> R) -> R {
        f(&self.lock().host)
    }

    /// Dispatches an action of the host itself: reduce, number, log, broadcast, observe.
    pub fn dispatch_server(
        &self,
        channel: &str,
        action: StateAction,
    ) -> Result<Arc<ActionEnvelope>, ApplyError> {
        let (envelope, session, applied) = {
            let mut inner = self.lock();
            let reduced = inner.host.apply_server_action(channel, &action)?;
            let session = inner.owner_of(channel);
            (
                inner.commit(channel, action, None),
                session,
                reduced == Reduced::Applied,
            )
        };
        self.observe(&envelope, &session, applied);
        Ok(envelope)
    }

    /// Dispatches a client action (AHP §6.1): validate and reduce, then broadcast with its origin;
    /// a refused action comes back as an echo for the dispatcher alone.
    pub fn dispatch_client(
        &self,
        channel: &str,
        action: StateAction,
        origin: ActionOrigin,
    ) -> ClientDispatch {
        let (outcome, session, applied) = {
            let mut inner = self.lock();
            match inner
                .host
                .apply_client_action(channel, &action, &origin.client_id)
            {
                Ok(reduced) => {
                    let session = inner.owner_of(channel);
                    let envelope = inner.commit(channel, action, Some(origin));
                    (
                        ClientDispatch::Accepted(envelope),
                        session,
                        reduced == Reduced::Applied,
                    )
                }
                Err(ApplyError::UnknownChannel(_)) => return ClientDispatch::Ignored,
                Err(ApplyError::Rejected(rejection)) => {
                    let session = inner.owner_of(channel);
                    let echo = ActionEnvelope {
                        channel: channel.to_owned(),
                        action,
                        server_seq: inner.next_seq(),
                        origin: Some(origin),
                        rejection_reason: Some(rejection.to_string()),
                    };
                    (ClientDispatch::Rejected(Box::new(echo)), session, false)
                }
            }
        };
        match &outcome {
            ClientDispatch::Accepted(envelope) => self.observe(envelope, &session, applied),
            ClientDispatch::Rejected(echo) => self.observe(echo, &session, false),
            ClientDispatch::Ignored => {}
        }
        outcome
    }

    /// Refuses a client's action without validating or applying it (a transport limit — the
    /// per-connection dispatch rate — said no): the rejection echo, with a fresh `serverSeq`,
    /// the client's own action and `reason`, observed like any rejection (hooks see it with its
    /// `rejectionReason`; nothing reduces it). `None` for a channel the host does not hold.
    pub fn reject_client(
        &self,
        channel: &str,
        action: StateAction,
        origin: ActionOrigin,
        reason: &str,
    ) -> Option<ActionEnvelope> {
        let (echo, session) = {
            let mut inner = self.lock();
            inner.host.channel_kind(channel)?;
            let session = inner.owner_of(channel);
            let echo = ActionEnvelope {
                channel: channel.to_owned(),
                action,
                server_seq: inner.next_seq(),
                origin: Some(origin),
                rejection_reason: Some(reason.to_owned()),
            };
            (echo, session)
        };
        self.observe(&echo, &session, false);
        Some(echo)
    }

    /// Adds a session.
    pub fn insert_session(&self, uri: &SessionUri, state: SessionState) -> Result<(), StateError> {
        Ok(self.lock().host.insert_session(uri, state)?)
    }

    /// Adds the chat `uri` (its `state.resource`) to a session.
    pub fn insert_chat(
        &self,
        session: &SessionUri,
        uri: &ChatUri,
        state: ChatState,
    ) -> Result<(), StateError> {
        Ok(self.lock().host.insert_chat(session, uri, state)?)
    }

    /// Adds another channel (a changeset, a terminal, …) the host computes.
    pub fn insert_channel(&self, uri: &str, state: ChannelState) -> Result<(), StateError> {
        Ok(self.lock().host.insert_channel(uri, state)?)
    }

    /// Removes a channel added with [`insert_channel`](Self::insert_channel); its
    /// subscriptions end.
    pub fn remove_channel(&self, uri: &str) -> Option<ChannelState> {
        let mut inner = self.lock();
        let removed = inner.host.remove_channel(uri)?;
        inner.detach_channel(uri);
        Some(removed)
    }

    /// Removes a session and its chats; their subscriptions end.
    pub fn remove_session(&self, uri: &str) -> Option<(SessionState, Vec<ChatState>)> {
        let mut inner = self.lock();
        let removed = inner.host.remove_session(uri)?;
        inner.detach_channel(uri);
        for chat in &removed.1 {
            inner.detach_channel(&chat.resource);
        }
        Some(removed)
    }

    /// Removes a chat; its subscriptions end.
    pub fn remove_chat(&self, uri: &str) -> Option<ChatState> {
        let mut inner = self.lock();
        let removed = inner.host.remove_chat(uri)?;
        inner.detach_channel(uri);
        Some(removed)
    }

    /// Registers a subscriber (a connection) and its outbox.
    pub fn register_subscriber(&self, outbox: Arc<dyn Outbox>) -> SubscriberId {
        let mut inner = self.lock();
        let id = SubscriberId(inner.next_subscriber);
        inner.next_subscriber += 1;
        inner.subscribers.insert(
            id,
            Subscriber {
                outbox,
                channels: HashSet::new(),
            },
        );
        id
    }

    /// Forgets a subscriber and all its subscriptions.
    pub fn remove_subscriber(&self, id: SubscriberId) {
        self.lock().drop_subscriber(id);
    }

    /// Whether a subscriber is still registered (it is dropped when it cannot keep up).
    pub fn has_subscriber(&self, id: SubscriberId) -> bool {
        self.lock().subscribers.contains_key(&id)
    }

    /// How many subscribers a channel has.
    pub fn subscriber_count(&self, channel: &str) -> usize {
        self.lock()
            .channel_subscribers
            .get(channel)
            .map_or(0, Vec::len)
    }

    /// Subscribes to a channel: the snapshot is taken and the subscription added in one critical
    /// section, so every later envelope of the channel has a higher `serverSeq` and none is
    /// missed.
    pub fn subscribe(&self, id: SubscriberId, channel: &str) -> Result<Snapshot, StateError> {
        let mut inner = self.lock();
        let snapshot = inner
            .snapshot(channel)
            .ok_or_else(|| StateError::UnknownChannel(channel.to_owned()))?;
        inner.attach(channel, id)?;
        Ok(snapshot)
    }

    /// Ends one subscription.
    pub fn unsubscribe(&self, id: SubscriberId, channel: &str) {
        let mut inner = self.lock();
        if let Some(s) = inner.subscribers.get_mut(&id) {
            s.channels.remove(channel);
        }
        inner.detach(channel, id);
    }

    /// The current snapshot of a channel.
    pub fn snapshot(&self, channel: &str) -> Option<Snapshot> {
        self.lock().snapshot(channel)
    }

    /// Sends an ephemeral notification frame (never replayed) to a channel's subscribers.
    pub fn notify(&self, channel: &str, frame: &Arc<str>) {
        self.lock().fan_out(channel, frame);
    }

    /// AHP §8.5: replay when every envelope after `last_seen` is still logged, else snapshots.
    /// Either way the subscriber is subscribed to the requested channels that exist.
    pub fn reconnect(
        &self,
        id: SubscriberId,
        last_seen: i64,
        channels: &[String],
    ) -> Result<ReconnectOutcome, StateError> {
        let mut inner = self.lock();
        let (existing, missing): (Vec<&String>, Vec<&String>) =
            channels.iter().partition(|c| inner.snapshot(c).is_some());
        let replayable = u64::try_from(last_seen)
            .ok()
            .is_some_and(|seen| inner.replay_floor <= seen && seen <= inner.server_seq);
        let outcome = if replayable {
            let seen = u64::try_from(last_seen).unwrap_or(0);
            let wanted: HashSet<&str> = existing.iter().map(|c| c.as_str()).collect();
            let actions = inner
                .replay
                .iter()
                .filter(|e| e.server_seq > seen && wanted.contains(e.channel.as_str()))
                .map(|e| (**e).clone())
                .collect();
            ReconnectOutcome::Replay {
                actions,
                missing: missing.into_iter().cloned().collect(),
            }
        } else {
            ReconnectOutcome::Snapshot {
                snapshots: existing.iter().filter_map(|c| inner.snapshot(c)).collect(),
            }
        };
        for channel in existing {
            inner.attach(channel, id)?;
        }
        Ok(outcome)
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;

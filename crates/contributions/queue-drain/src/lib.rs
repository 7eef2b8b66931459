//! The `queueDrain` contribution (order 200; `onTurnEnd`, `onDidApplyClientAction`).
//!
//! The central decision: **a queued message becomes a turn only through the same two steps as
//! any turn — the reducers' `chat/turnStarted {queuedMessageId}` and the shared turn starter
//! ([`Dispatcher::start_turn`]) — and only when the chat is truly free.** The queue itself is
//! chat state every client reduces (`ChatState.queuedMessages`); this contribution owns only
//! who queued each message (for attribution when it runs) and the decision of when the head
//! may start.
//!
//! | Trigger | Effect |
//! |---|---|
//! | `onTurnEnd` `success` / `localCommand` | try to start the next queued message of the turn's chat |
//! | `onTurnEnd` `cancelled` / `error` / `rejected` | nothing: cancelling means stop; a failed turn keeps the queue |
//! | client `chat/pendingMessageSet` (queued) | remember the sender (memento keyed by message id), then try |
//! | client `chat/pendingMessageSet` (steering) | remember the steering sender, then try (it blocks the queue) |
//! | client `chat/pendingMessageRemoved` (queued) | **delete** that sender memento, then try |
//! | client `chat/pendingMessageRemoved` (steering) | forget the steering sender when it matches, then try |
//!
//! A start happens only when: no turn is active; the queue is not empty; no steering message
//! is pending; the last turn is not a resumable error (stale queued work waits until the
//! resumable turn is over); a host bridge is registered. Then the head's sender memento is
//! read (fallback: an unknown client with the host's launch kind) and **deleted**, so senders
//! never accumulate; a fresh turn id is dispatched as `chat/turnStarted {queuedMessageId}` (the
//! reducer removes the message); the turn starter runs with source `queued`; an admitted turn
//! goes to the host's send tail through the bridge. With no agent the turn starter ends the
//! turn with `chat/error noAgent` itself, so clients see: pending set → turn started → error.
//! A local command in a queued message is handled by the gate and drains the next one.
//!
//! A queued turn that is refused — by the gate (an archived or read-only chat) or for want of an
//! agent — ends with its `chat/error` like any refused turn, and its message goes **back to the
//! head of the queue** with its sender: nothing queued is lost, and the queue does not drain on
//! `rejected`, so an archived chat's queue waits instead of cascading refusals; the next trigger
//! (a completed turn, a client's queue change) tries again.
//!
//! Known gap, kept on purpose: the providers of this host cannot inject a steering message into
//! a running turn, so a pending steering message holds the queue until a client removes it (or
//! a provider reports it consumed).
#![deny(missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::Instant;

use agenthost_dispatcher::{
    AppliedClientAction, ChatContribution, ChatKey, ClientContext, Contribution,
    ContributionContext, Dispatcher, Hook, HookResult, HookSet, HostAccess, HostBridge,
    IncomingRequest, KeySegment, MissingService, QueuedMessageSender, RequestSource,
    SendTurnMessageOptions, ServiceRegistry, TurnEnd, TurnEndReason, TurnStarterPorts,
};
use agenthost_protocol::actions::{
    ChatPendingMessageSetAction, ChatQueuedMessagesReorderedAction, ChatTurnStartedAction,
};
use agenthost_protocol::ahp_types::state::{
    ChatState, ErrorInfo, PendingMessage, PendingMessageKind,
};
use agenthost_protocol::error_info::chat_error;
use agenthost_protocol::{ChatUri, SessionUri, StateAction};
use agenthost_reducers::validation::resumable_turn;
use agenthost_services::{
    HostState, MessageSource, ProviderLocator, ServerDispatch, TelemetryReporter, TurnTracker,
    UserMessageSent,
};

/// Who queued a message, per chat and message id; deleted when the message is consumed or
/// removed, evicted with the chat.
static SENDER: ChatKey<Option<QueuedMessageSender>> = ChatKey::new("sender", || None);

/// The pending steering message's id and sender.
static STEERING_SENDER: ChatKey<Option<(String, QueuedMessageSender)>> =
    ChatKey::new("steeringSender", || None);

/// The `queueDrain` contribution. Needs `dyn HostState`, `dyn ServerDispatch`,
/// `dyn ProviderLocator`, `dyn TelemetryReporter`, `dyn TurnTracker` and the dispatcher's
/// [`HostAccess`] (which every dispatcher registers itself).
pub struct QueueDrain {
    context: ContributionContext,
    host: Arc<dyn HostState>,
    dispatch: Arc<dyn ServerDispatch>,
    providers: Arc<dyn ProviderLocator>,
    telemetry: Arc<dyn TelemetryReporter>,
    turns: Arc<dyn TurnTracker>,
    access: Arc<HostAccess>,
    /// Serialises the check-then-start of a queued turn, so two triggers (a turn end and a
    /// client's queue action) never start two turns. Never held across the turn starter, which
    /// may re-enter through `onTurnEnd` (a queued local command drains the next message).
    starting: Mutex<()>,
}

impl std::fmt::Debug for QueueDrain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueDrain").finish_non_exhaustive()
    }
}

/// A head of queue taken for starting: the message, its sender, and the new turn id.
struct Admission {
    session: SessionUri,
    chat: ChatUri,
    pending: PendingMessage,
    sender: QueuedMessageSender,
    turn_id: String,
}

impl QueueDrain {
    /// Builds the contribution from its context and the registry's services.
    pub fn from_services(
        context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self {
            context,
            host: services.get::<dyn HostState>()?,
            dispatch: services.get::<dyn ServerDispatch>()?,
            providers: services.get::<dyn ProviderLocator>()?,
            telemetry: services.get::<dyn TelemetryReporter>()?,
            turns: services.get::<dyn TurnTracker>()?,
            access: services.get::<HostAccess>()?,
            starting: Mutex::new(()),
        })
    }

    /// Starts the head of `chat`'s queue when the chat is free (see the module docs).
    fn try_consume(&self, session: &SessionUri, chat: &ChatUri) {
        let Some((admission, bridge, dispatcher)) = self.take_head(session, chat) else {
            return;
        };
        let request = IncomingRequest {
            session: admission.session.clone(),
            chat: admission.chat.clone(),
            message: admission.pending.message.clone(),
            turn_id: admission.turn_id.clone(),
            source: RequestSource::Queued,
            client_id: admission.sender.client_id.clone(),
            client_context: admission.sender.client_context.clone(),
        };
        let ports = Ports {
            drain: self,
            dispatcher: &dispatcher,
            admission: &admission,
        };
        let Some(agent) = dispatcher.start_turn(&request, &ports) else {
            return;
        };
        bridge.send_turn_message(SendTurnMessageOptions {
            agent,
            session: request.session,
            chat: request.chat,
            message: request.message,
            turn_id: request.turn_id,
            sender_client_id: request.client_id,
            client_context: request.client_context,
            turn_stopwatch: Instant::now(),
        });
    }

    /// Under the start lock: checks the conditions, consumes the sender memento and dispatches
    /// `chat/turnStarted {queuedMessageId}`.
    fn take_head(
        &self,
        session: &SessionUri,
        chat_uri: &ChatUri,
    ) -> Option<(Admission, Arc<dyn HostBridge>, Dispatcher)> {
        let chat = chat_uri.as_str();
        let _starting = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        let state = self.host.chat(chat)?;
        let head = startable_head(&state)?;
        let Some(bridge) = self.access.get() else {
            tracing::debug!(
                chat,
                "queueDrain: no host bridge registered, the queue waits"
            );
            return None;
        };
        let dispatcher = self.access.dispatcher()?;
        let segment = [KeySegment::from(head.id.as_str())];
        let sender = self
            .context
            .chat_memento(&SENDER, session, chat, &segment)
            .get()
            .unwrap_or_else(|| QueuedMessageSender {
                client_id: None,
                client_context: ClientContext::unknown(bridge.launch_kind()),
            });
        self.context
            .delete_chat_memento(&SENDER, session, chat, &segment);
        let turn_id = queued_turn_id(&head.id);
        let started = StateAction::ChatTurnStarted(ChatTurnStartedAction {
            turn_id: turn_id.clone(),
            started_at: agenthost_services::now_iso(),
            message: head.message.clone(),
            queued_message_id: Some(head.id.clone()),
            meta: None,
        });
        if let Err(error) = self.dispatch.dispatch(chat, started) {
            tracing::warn!(chat, message = %head.id, %error, "queueDrain: the queued turn could not start");
            return None;
        }
        Some((
            Admission {
                session: session.clone(),
                chat: chat_uri.clone(),
                pending: head,
                sender,
                turn_id,
            },
            bridge,
            dispatcher,
        ))
    }

    /// Puts a message whose queued turn was refused (by the gate, or for want of an agent) back
    /// at the head of its chat's queue, with its sender: nothing queued is lost, and the queue
    /// waits for the next trigger instead of cascading refusals.
    fn requeue(&self, admission: &Admission) {
        let (session, chat) = (admission.session.as_str(), admission.chat.as_str());
        let pending = &admission.pending;
        let set = StateAction::ChatPendingMessageSet(ChatPendingMessageSetAction {
            kind: PendingMessageKind::Queued,
            id: pending.id.clone(),
            message: pending.message.clone(),
        });
        if let Err(error) = self.dispatch.dispatch(chat, set) {
            tracing::warn!(chat, message = %pending.id, %error, "queueDrain: a refused queued message could not be put back");
            return;
        }
        let segment = [KeySegment::from(pending.id.as_str())];
        self.context
            .chat_memento(&SENDER, session, chat, &segment)
            .set(Some(admission.sender.clone()));
        let order: Vec<String> = self
            .host
            .chat(chat)
            .and_then(|state| state.queued_messages)
            .unwrap_or_default()
            .into_iter()
            .map(|queued| queued.id)
            .collect();
        if order.first() == Some(&pending.id) {
            return;
        }
        let head_first = std::iter::once(pending.id.clone())
            .chain(order.into_iter().filter(|id| *id != pending.id))
            .collect();
        let reorder = StateAction::ChatQueuedMessagesReordered(ChatQueuedMessagesReorderedAction {
            order: head_first,
        });
        if let Err(error) = self.dispatch.dispatch(chat, reorder) {
            tracing::warn!(chat, message = %pending.id, %error, "queueDrain: a refused queued message could not go back to the head");
        }
    }

    /// Records or forgets senders for a client's queue action; whether the queue may have
    /// become startable.
    fn observe_queue_action(&self, action: &AppliedClientAction<'_>) -> bool {
        let (Some(session), Some(chat)) = (action.session, action.chat) else {
            return false;
        };
        let (session, chat) = (session.as_str(), chat.as_str());
        let sender = || QueuedMessageSender {
            client_id: action.client_id.map(str::to_owned),
            client_context: action.client_context.clone(),
        };
        match action.action {
            StateAction::ChatPendingMessageSet(set) => {
                match set.kind {
                    PendingMessageKind::Queued => {
                        let segment = [KeySegment::from(set.id.as_str())];
                        self.context
                            .chat_memento(&SENDER, session, chat, &segment)
                            .set(Some(sender()));
                    }
                    PendingMessageKind::Steering => {
                        self.context
                            .chat_memento(&STEERING_SENDER, session, chat, &[])
                            .set(Some((set.id.clone(), sender())));
                        tracing::debug!(
                            chat,
                            message = %set.id,
                            "queueDrain: steering message pending; this host's agents cannot take \
                             steering mid-turn, so it holds the queue until it is removed"
                        );
                    }
                }
                true
            }
            StateAction::ChatPendingMessageRemoved(removed) => {
                match removed.kind {
                    PendingMessageKind::Queued => {
                        let segment = [KeySegment::from(removed.id.as_str())];
                        self.context
                            .delete_chat_memento(&SENDER, session, chat, &segment);
                    }
                    PendingMessageKind::Steering => {
                        let cell = self
                            .context
                            .chat_memento(&STEERING_SENDER, session, chat, &[]);
                        cell.update(|current| {
                            if current.as_ref().is_some_and(|(id, _)| *id == removed.id) {
                                *current = None;
                            }
                        });
                    }
                }
                true
            }
            _ => false,
        }
    }
}

/// The head of the chat's queue when a queued turn may start now.
fn startable_head(state: &ChatState) -> Option<PendingMessage> {
    if state.active_turn.is_some() || state.steering_message.is_some() {
        return None;
    }
    if resumable_turn(state).is_some() {
        return None;
    }
    state.queued_messages.as_ref()?.first().cloned()
}

/// A turn id for a queued message, unique across the chat's history (a message id may be
/// queued again later).
fn queued_turn_id(message_id: &str) -> String {
    let nanos = jiff::Timestamp::now().as_nanosecond();
    format!("queued-{message_id}-{nanos:x}")
}

impl Contribution for QueueDrain {
    const ID: &'static str = "queueDrain";
    const ORDER: i32 = 200;
    const HOOKS: HookSet = HookSet::of(&[Hook::TurnEnd, Hook::DidApplyClientAction]);

    fn create(
        context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(context, services)
    }
}

impl ChatContribution for QueueDrain {
    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        if drains_after(&turn.reason) {
            self.try_consume(&turn.session, &turn.chat);
        }
        Ok(())
    }

    fn on_did_apply_client_action(&self, action: &AppliedClientAction<'_>) -> HookResult {
        if let (Some(session), Some(chat)) = (action.session, action.chat)
            && self.observe_queue_action(action)
        {
            self.try_consume(session, chat);
        }
        Ok(())
    }
}

/// Whether a turn that ended for `reason` lets the queue move on: a completed turn or a host
/// command — never a cancel (cancelling means stop), an error or a refused request.
pub fn drains_after(reason: &TurnEndReason) -> bool {
    matches!(reason, TurnEndReason::Success | TurnEndReason::LocalCommand)
}

/// The turn starter's effects for a queued turn, through the services.
struct Ports<'a> {
    drain: &'a QueueDrain,
    dispatcher: &'a Dispatcher,
    admission: &'a Admission,
}

impl TurnStarterPorts for Ports<'_> {
    fn refuse(&self, request: &IncomingRequest, error: &ErrorInfo) {
        let action = chat_error(&request.turn_id, 0, error.clone(), false);
        if let Err(failure) = self.drain.dispatch.dispatch(&request.chat, action) {
            tracing::warn!(chat = %request.chat, %failure, "queueDrain: could not end a refused queued turn");
        }
    }

    fn agent_of(&self, session: &SessionUri) -> Option<String> {
        self.drain.providers.provider_of(session)
    }

    fn turn_end(&self, request: &IncomingRequest, reason: TurnEndReason) {
        let rejected = matches!(reason, TurnEndReason::Rejected { .. });
        self.dispatcher.turn_end(&TurnEnd {
            session: request.session.clone(),
            chat: request.chat.clone(),
            turn_id: Some(request.turn_id.clone()),
            reason,
            client_context: Some(request.client_context.clone()),
        });
        if rejected {
            self.drain.requeue(self.admission);
        }
    }

    fn accepted(&self, request: &IncomingRequest, agent: &str) {
        self.drain
            .turns
            .turn_started(&request.chat, &request.turn_id);
        self.drain.telemetry.user_message_sent(&UserMessageSent {
            session: request.session.to_string(),
            chat: request.chat.to_string(),
            turn_id: request.turn_id.clone(),
            source: MessageSource::Queued,
            provider: Some(agent.to_owned()),
        });
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

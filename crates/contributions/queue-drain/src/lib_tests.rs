use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agenthost_dispatcher::{
    AppliedClientAction, ChatContribution, ClientContext, Descriptor, Dispatcher, Disposition,
    Hook, HookResult, HookSet, HostBridge, HostRegistration, IncomingRequest, LaunchKind,
    Registration, SendTurnMessageOptions, ServiceRegistry, TurnEnd, TurnEndReason,
};
use agenthost_protocol::ActionOrigin;
use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState};
use agenthost_protocol::error_info::NO_AGENT;
use agenthost_services::fakes::{
    FakeProviderLocator, FakeTelemetry, FakeTurnTracker, TelemetryCall, TurnCall,
};
use agenthost_services::{
    HostState, MessageSource, ProviderLocator, ServerDispatch, StateHostState, StateServerDispatch,
    TelemetryReporter, TurnTracker,
};
use agenthost_state::{ClientDispatch, StateConfig, StateManager};
use serde_json::{Value, json};

use super::QueueDrain;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// `(turn id, reason)` of every `onTurnEnd`.
type Ends = Arc<Mutex<Vec<(Option<String>, String)>>>;

/// Records the turns handed to the send tail.
#[derive(Default)]
struct Bridge {
    sent: Mutex<Vec<SendTurnMessageOptions>>,
}

impl HostBridge for Bridge {
    fn launch_kind(&self) -> LaunchKind {
        LaunchKind::Serve
    }

    fn send_turn_message(&self, options: SendTurnMessageOptions) {
        self.sent.lock().unwrap().push(options);
    }
}

/// Records `onTurnEnd` and answers the gate (`/local` is handled, `/reject` rejected).
struct Probe {
    ends: Ends,
    gate: Arc<Mutex<Vec<String>>>,
}

impl ChatContribution for Probe {
    fn on_incoming_request(&self, request: &IncomingRequest) -> HookResult<Option<Disposition>> {
        self.gate
            .lock()
            .unwrap()
            .push(format!("{:?} {}", request.source, request.message.text));
        Ok(None)
    }

    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        let reason = match &turn.reason {
            TurnEndReason::Rejected { error } => format!("rejected {}", error.error_type),
            other => format!("{other:?}"),
        };
        self.ends
            .lock()
            .unwrap()
            .push((turn.turn_id.clone(), reason));
        Ok(())
    }
}

struct Harness {
    state: Arc<StateManager>,
    dispatcher: Dispatcher,
    bridge: Arc<Bridge>,
    host: Option<HostRegistration>,
    telemetry: Arc<FakeTelemetry>,
    turns: Arc<FakeTurnTracker>,
    ends: Ends,
    gate: Arc<Mutex<Vec<String>>>,
    _registrations: Vec<Registration>,
    seq: Mutex<u64>,
}

impl Harness {
    fn new() -> Self {
        Self::with_agent(Some("scripted"))
    }

    fn with_agent(agent: Option<&str>) -> Self {
        let state = Arc::new(StateManager::new(
            from::<RootState>(json!({ "agents": [] })),
            StateConfig::default(),
        ));
        let session: SessionState = from(json!({
            "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
            "activeClients": [], "chats": []
        }));
        state
            .insert_session(&SESSION.parse().unwrap(), session)
            .unwrap();
        let chat: ChatState = from(json!({
            "resource": CHAT, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": []
        }));
        state
            .insert_chat(
                &SESSION.parse().unwrap(),
                &chat.resource.parse().unwrap(),
                chat,
            )
            .unwrap();

        let providers = Arc::new(FakeProviderLocator::default());
        if let Some(agent) = agent {
            providers.script(|a| {
                a.providers = HashMap::from([(SESSION.to_owned(), agent.to_owned())]);
            });
        }
        let telemetry = Arc::new(FakeTelemetry::default());
        let turns = Arc::new(FakeTurnTracker::default());
        let mut services = ServiceRegistry::new();
        services
            .insert::<dyn HostState>(Arc::new(StateHostState::new(Arc::clone(&state))))
            .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(Arc::clone(&state))))
            .insert::<dyn ProviderLocator>(providers)
            .insert::<dyn TelemetryReporter>(telemetry.clone())
            .insert::<dyn TurnTracker>(turns.clone());
        let dispatcher = Dispatcher::new(services);
        let ends = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new(Mutex::new(Vec::new()));
        let probe = {
            let (ends, gate) = (Arc::clone(&ends), Arc::clone(&gate));
            dispatcher
                .register_with(
                    Descriptor {
                        id: "probe",
                        order: 900,
                        hooks: HookSet::of(&[Hook::TurnEnd, Hook::IncomingRequest]),
                    },
                    move |_, _| Ok(Arc::new(Probe { ends, gate })),
                )
                .unwrap()
        };
        let drain = dispatcher.register::<QueueDrain>().unwrap();
        let bridge = Arc::new(Bridge::default());
        let host = dispatcher.register_host(bridge.clone()).unwrap();
        Self {
            state,
            dispatcher,
            bridge,
            host: Some(host),
            telemetry,
            turns,
            ends,
            gate,
            _registrations: vec![probe, drain],
            seq: Mutex::new(0),
        }
    }

    /// A client's accepted action, followed by `onDidApplyClientAction` as the orchestrator
    /// calls it.
    fn client(&self, client: &str, action: Value) {
        let client_seq = {
            let mut seq = self.seq.lock().unwrap();
            *seq += 1;
            *seq
        };
        let origin = ActionOrigin {
            client_id: client.into(),
            client_seq: client_seq as _,
        };
        let action = from(action);
        let outcome = self.state.dispatch_client(CHAT, action, origin);
        let ClientDispatch::Accepted(envelope) = outcome else {
            panic!("client action refused: {outcome:?}");
        };
        let context = ClientContext {
            client_id: Some(client.into()),
            client_kind: Some("test".into()),
            launch_kind: LaunchKind::Serve,
            token: None,
        };
        self.dispatcher
            .did_apply_client_action(&AppliedClientAction {
                channel: CHAT,
                session: Some(&SESSION.parse().unwrap()),
                chat: Some(&CHAT.parse().unwrap()),
                action: &envelope.action,
                client_id: Some(client),
                client_context: &context,
            });
    }

    fn server(&self, action: Value) {
        self.state.dispatch_server(CHAT, from(action)).unwrap();
    }

    fn start_turn(&self, turn_id: &str) {
        self.client(
            "client-1",
            json!({
                "type": "chat/turnStarted", "turnId": turn_id, "startedAt": T0,
                "message": { "text": "first", "origin": { "kind": "user" } }
            }),
        );
    }

    fn queue(&self, client: &str, id: &str, text: &str) {
        self.client(client, pending_set("queued", id, text));
    }

    /// Ends the active turn `turn_id` with `reason` (the terminal action, then `onTurnEnd`).
    fn end(&self, turn_id: &str, reason: TurnEndReason) {
        let action = match &reason {
            TurnEndReason::Success | TurnEndReason::LocalCommand => {
                json!({ "type": "chat/turnComplete", "turnId": turn_id, "duration": 1 })
            }
            TurnEndReason::Cancelled => {
                json!({ "type": "chat/turnCancelled", "turnId": turn_id, "duration": 1 })
            }
            TurnEndReason::Error { resumable, .. } => json!({
                "type": "chat/error", "turnId": turn_id, "duration": 1,
                "part": { "kind": "error", "error": { "errorType": "x", "message": "boom" },
                          "resumable": resumable }
            }),
            TurnEndReason::Rejected { .. } => json!({
                "type": "chat/error", "turnId": turn_id, "duration": 0,
                "part": { "kind": "error", "error": { "errorType": "archived", "message": "no" } }
            }),
        };
        self.server(action);
        self.dispatcher.turn_end(&TurnEnd {
            session: SESSION.parse().unwrap(),
            chat: CHAT.parse().unwrap(),
            turn_id: Some(turn_id.into()),
            reason,
            client_context: None,
        });
    }

    fn chat(&self) -> ChatState {
        self.state.read(|h| h.chat(CHAT).cloned()).unwrap()
    }

    fn queued_ids(&self) -> Vec<String> {
        self.chat()
            .queued_messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| m.id)
            .collect()
    }

    fn active(&self) -> Option<(String, String)> {
        self.chat().active_turn.map(|t| (t.id, t.message.text))
    }

    /// `(turn id, text, sender client id)` of every turn handed to the send tail.
    fn sent(&self) -> Vec<(String, String, Option<String>)> {
        self.bridge
            .sent
            .lock()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o.turn_id.clone(),
                    o.message.text.clone(),
                    o.client_context.client_id.clone(),
                )
            })
            .collect()
    }

    fn ends(&self) -> Vec<(Option<String>, String)> {
        self.ends.lock().unwrap().clone()
    }
}

fn pending_set(kind: &str, id: &str, text: &str) -> Value {
    json!({
        "type": "chat/pendingMessageSet", "kind": kind, "id": id,
        "message": { "text": text, "origin": { "kind": "user" } }
    })
}

fn pending_removed(kind: &str, id: &str) -> Value {
    json!({ "type": "chat/pendingMessageRemoved", "kind": kind, "id": id })
}

fn error(resumable: bool) -> TurnEndReason {
    TurnEndReason::Error {
        error: agenthost_protocol::error_info::error_info("x", "boom"),
        resumable,
    }
}

#[test]
fn a_message_queued_while_idle_starts_at_once_as_a_queued_turn() {
    let h = Harness::new();
    h.queue("client-1", "m1", "next");

    let (turn_id, text) = h
        .active()
        .expect("the queued message became the active turn");
    assert!(turn_id.starts_with("queued-m1-"), "{turn_id}");
    assert_eq!(text, "next");
    assert!(
        h.queued_ids().is_empty(),
        "the reducer consumed the message"
    );
    assert_eq!(
        h.sent(),
        [(
            turn_id.clone(),
            "next".to_owned(),
            Some("client-1".to_owned())
        )]
    );
    assert_eq!(*h.gate.lock().unwrap(), ["Queued next"]);
    let sent = h.telemetry.calls();
    assert!(
        matches!(&sent[..], [TelemetryCall::UserMessageSent(e)]
            if e.source == MessageSource::Queued && e.turn_id == turn_id
                && e.provider.as_deref() == Some("scripted")),
        "{sent:?}"
    );
    assert_eq!(
        h.turns.calls(),
        [TurnCall::Started {
            chat: CHAT.into(),
            turn_id
        }],
        "the turn tracker learns the queued turn started"
    );
}

#[test]
fn queued_messages_wait_for_the_active_turn_and_drain_one_per_successful_end() {
    let h = Harness::new();
    h.start_turn("t1");
    h.queue("client-1", "m1", "one");
    h.queue("client-2", "m2", "two");
    assert!(h.sent().is_empty(), "nothing starts during a turn");
    assert_eq!(h.queued_ids(), ["m1", "m2"]);

    h.end("t1", TurnEndReason::Success);
    let (first, text) = h.active().unwrap();
    assert_eq!(text, "one");
    assert_eq!(h.queued_ids(), ["m2"]);

    h.end(&first, TurnEndReason::Success);
    let (second, text) = h.active().unwrap();
    assert_eq!(text, "two");
    assert!(h.queued_ids().is_empty());
    let senders: Vec<_> = h.sent().into_iter().map(|(_, _, c)| c).collect();
    assert_eq!(
        senders,
        [Some("client-1".to_owned()), Some("client-2".to_owned())],
        "each queued turn is attributed to whoever queued it"
    );
    assert_ne!(first, second);
}

#[test]
fn cancel_error_and_rejected_ends_keep_the_queue() {
    for reason in [
        TurnEndReason::Cancelled,
        error(false),
        error(true),
        TurnEndReason::Rejected {
            error: agenthost_protocol::error_info::error_info("archived", "no"),
        },
    ] {
        let h = Harness::new();
        h.start_turn("t1");
        h.queue("client-1", "m1", "one");
        h.end("t1", reason.clone());
        assert!(h.sent().is_empty(), "{reason:?} drained the queue");
        assert_eq!(h.queued_ids(), ["m1"], "{reason:?}");
        assert_eq!(h.active(), None);
    }
}

#[test]
fn a_local_command_end_drains_the_queue() {
    let h = Harness::new();
    h.start_turn("t1");
    h.queue("client-1", "m1", "one");
    h.end("t1", TurnEndReason::LocalCommand);
    assert_eq!(h.active().map(|(_, text)| text).as_deref(), Some("one"));
}

#[test]
fn a_resumable_error_holds_the_queue_until_the_logical_turn_is_over() {
    let h = Harness::new();
    h.start_turn("t1");
    h.end("t1", error(true));
    h.queue("client-1", "m1", "one");
    assert!(
        h.sent().is_empty(),
        "stale queued work waits for the resumable turn"
    );
    assert_eq!(h.queued_ids(), ["m1"]);

    // The client resumes; the turn completes; now the queue moves on.
    h.client(
        "client-1",
        json!({ "type": "chat/turnResume", "turnId": "t1" }),
    );
    h.end("t1", TurnEndReason::Success);
    assert_eq!(h.active().map(|(_, text)| text).as_deref(), Some("one"));
}

#[test]
fn a_pending_steering_message_holds_the_queue_until_it_is_removed() {
    let h = Harness::new();
    h.start_turn("t1");
    h.client("client-1", pending_set("steering", "s1", "steer"));
    h.queue("client-1", "m1", "one");
    h.end("t1", TurnEndReason::Success);
    assert!(h.sent().is_empty());
    assert_eq!(h.queued_ids(), ["m1"]);

    h.client("client-1", pending_removed("steering", "s1"));
    assert_eq!(h.active().map(|(_, text)| text).as_deref(), Some("one"));
}

#[test]
fn without_a_host_bridge_the_queue_waits_untouched() {
    let mut h = Harness::new();
    drop(h.host.take());
    h.queue("client-1", "m1", "one");
    assert_eq!(h.active(), None);
    assert_eq!(h.queued_ids(), ["m1"]);
}

#[test]
fn with_no_agent_the_queued_turn_starts_then_ends_in_no_agent_and_the_message_goes_back() {
    let h = Harness::with_agent(None);
    h.queue("client-1", "m1", "one");
    assert!(h.sent().is_empty());
    assert_eq!(
        h.queued_ids(),
        ["m1"],
        "the refused message is back in the queue, nothing lost"
    );
    assert_eq!(h.active(), None);
    let chat = h.chat();
    let last = chat.turns.last().expect("the refused turn is in history");
    assert!(last.id.starts_with("queued-m1-"));
    let ends = h.ends();
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0].1, format!("rejected {NO_AGENT}"));
    assert!(
        h.telemetry.calls().is_empty(),
        "a refused turn reports no userMessageSent"
    );
    assert!(h.turns.calls().is_empty(), "nor a started turn");
}

#[test]
fn senders_are_deleted_on_removal_and_on_consumption_never_accumulating() {
    // Removal: the memento of m1 goes; the same id queued again by the host (no client) falls
    // back to the unknown sender.
    let h = Harness::new();
    h.start_turn("t1");
    h.queue("client-1", "m1", "one");
    h.client("client-1", pending_removed("queued", "m1"));
    h.server(pending_set("queued", "m1", "again"));
    h.end("t1", TurnEndReason::Success);
    assert_eq!(h.sent()[0].2, None, "the removed sender was forgotten");

    // Consumption: the sender of m2 is used once, then deleted.
    let (turn, _) = h.active().unwrap();
    h.queue("client-2", "m2", "two");
    h.end(&turn, TurnEndReason::Success);
    assert_eq!(h.sent()[1].2.as_deref(), Some("client-2"));
    let (turn, _) = h.active().unwrap();
    h.server(pending_set("queued", "m2", "two again"));
    h.end(&turn, TurnEndReason::Success);
    assert_eq!(h.sent()[2].2, None, "the consumed sender was deleted");
}

#[test]
fn after_memento_eviction_the_sender_falls_back_to_the_unknown_client() {
    let h = Harness::new();
    h.start_turn("t1");
    h.queue("client-1", "m1", "one");
    h.dispatcher.evict_chat(CHAT);
    h.end("t1", TurnEndReason::Success);
    let sent = h.bridge.sent.lock().unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].client_context,
        ClientContext::unknown(LaunchKind::Serve),
        "unknown client with the host's launch kind"
    );
}

#[test]
fn a_queued_local_command_is_handled_by_the_gate_and_drains_the_next() {
    let h = Harness::new();
    // A gate that handles `/local` like the localCommand contribution: completes the turn.
    let state = Arc::clone(&h.state);
    let _local = h
        .dispatcher
        .register_with(
            Descriptor {
                id: "local",
                order: 50,
                hooks: HookSet::of(&[Hook::IncomingRequest]),
            },
            move |_, _| Ok(Arc::new(Local { state })),
        )
        .unwrap();
    h.start_turn("t1");
    h.queue("client-1", "m1", "/local");
    h.queue("client-1", "m2", "after");
    h.end("t1", TurnEndReason::Success);
    assert_eq!(h.active().map(|(_, text)| text).as_deref(), Some("after"));
    assert_eq!(
        h.sent().len(),
        1,
        "only the second message reached an agent"
    );
    assert!(h.ends().iter().any(|(_, reason)| reason == "LocalCommand"));
}

struct Local {
    state: Arc<StateManager>,
}

impl ChatContribution for Local {
    fn on_incoming_request(&self, request: &IncomingRequest) -> HookResult<Option<Disposition>> {
        if request.message.text != "/local" {
            return Ok(None);
        }
        self.state
            .dispatch_server(
                &request.chat,
                from(json!({ "type": "chat/turnComplete", "turnId": request.turn_id, "duration": 0 })),
            )
            .unwrap();
        Ok(Some(Disposition::Handled))
    }
}

/// Refuses every turn whose text is `blocked`, as turnAdmission refuses an archived chat's.
struct Gate;

impl ChatContribution for Gate {
    fn on_incoming_request(&self, request: &IncomingRequest) -> HookResult<Option<Disposition>> {
        Ok(
            (request.message.text == "blocked").then(|| Disposition::Reject {
                error: agenthost_protocol::error_info::error_info(
                    "archived",
                    "This chat is archived.",
                ),
                stage: agenthost_dispatcher::RejectStage::Validation,
            }),
        )
    }
}

/// A queued turn the gate refuses puts its message back at the head of the queue with its
/// sender; the rest of the queue is not drained (no cascade of refusals); the next trigger
/// tries again, attributed to whoever queued the message.
#[test]
fn a_refused_queued_message_goes_back_to_the_head_with_its_sender_and_nothing_cascades() {
    let h = Harness::new();
    let gate = h
        .dispatcher
        .register_with(
            Descriptor {
                id: "gate",
                order: 100,
                hooks: HookSet::of(&[Hook::IncomingRequest]),
            },
            |_, _| Ok(Arc::new(Gate)),
        )
        .unwrap();
    h.start_turn("t1");
    h.queue("client-1", "m1", "blocked");
    h.queue("client-2", "m2", "fine");
    h.end("t1", TurnEndReason::Success);

    assert!(h.sent().is_empty(), "nothing reached an agent");
    assert_eq!(h.active(), None);
    assert_eq!(
        h.queued_ids(),
        ["m1", "m2"],
        "back at the head, m2 untouched"
    );
    let refused = h.chat().turns.last().cloned().expect("the refused turn");
    assert!(refused.id.starts_with("queued-m1-"), "{}", refused.id);
    assert!(
        h.ends()
            .iter()
            .any(|(_, reason)| reason == "rejected archived"),
        "{:?}",
        h.ends()
    );

    // The next trigger tries again (refused again: still no cascade) and keeps the sender.
    h.client("client-3", pending_removed("queued", "m2"));
    assert_eq!(h.queued_ids(), ["m1"]);
    let message = h.chat().queued_messages.unwrap_or_default();
    assert_eq!(message[0].message.text, "blocked");
    drop(gate);
    h.client("client-3", pending_set("queued", "m3", "later"));
    assert_eq!(h.sent()[0].1, "blocked", "the gate is gone: m1 runs first");
    assert_eq!(
        h.sent()[0].2.as_deref(),
        Some("client-1"),
        "attributed to whoever queued it"
    );
}

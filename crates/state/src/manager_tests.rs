use std::sync::{Arc, Mutex};

use agenthost_protocol::ahp_types::state::{ChatState, RootState, SessionState, SnapshotState};
use agenthost_protocol::{ActionEnvelope, ActionOrigin, StateAction};
use serde_json::{Value, json};

use super::*;
use crate::Outbox;
use agenthost_reducers::HostState;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";

/// Collects frames up to a capacity, then refuses (like a full connection queue).
struct TestOutbox {
    frames: Mutex<Vec<Value>>,
    capacity: usize,
}

impl TestOutbox {
    fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            frames: Mutex::new(Vec::new()),
            capacity,
        })
    }
    fn seqs(&self) -> Vec<u64> {
        self.frames
            .lock()
            .unwrap()
            .iter()
            .filter_map(|f| f["params"]["serverSeq"].as_u64())
            .collect()
    }
}

impl Outbox for TestOutbox {
    fn push(&self, frame: Arc<str>) -> bool {
        let mut frames = self.frames.lock().unwrap();
        if frames.len() >= self.capacity {
            return false;
        }
        frames.push(serde_json::from_str(&frame).unwrap());
        true
    }
}

fn action(value: Value) -> StateAction {
    serde_json::from_value(value).unwrap()
}

fn manager(replay_capacity: usize) -> StateManager {
    let root: RootState = serde_json::from_value(json!({ "agents": [] })).unwrap();
    let state = StateManager::new(
        root,
        StateConfig {
            replay_capacity,
            ..StateConfig::default()
        },
    );
    let session: SessionState = serde_json::from_value(json!({
        "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": []
    }))
    .unwrap();
    let chat: ChatState = serde_json::from_value(json!({
        "resource": CHAT, "title": "C", "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
    }))
    .unwrap();
    state
        .insert_session(&SESSION.parse().unwrap(), session)
        .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &chat.resource.parse().unwrap(),
            chat,
        )
        .unwrap();
    state
}

fn title(t: &str) -> StateAction {
    action(json!({ "type": "session/titleChanged", "title": t }))
}

fn origin(seq: i64) -> ActionOrigin {
    ActionOrigin {
        client_id: "client-a".into(),
        client_seq: seq,
    }
}

#[test]
fn server_seq_is_one_counter_across_channels() {
    let state = manager(100);
    let a = state.dispatch_server(SESSION, title("a")).unwrap();
    let b = state
        .dispatch_server(CHAT, action(json!({ "type": "chat/draftChanged" })))
        .unwrap();
    assert_eq!((a.server_seq, b.server_seq), (1, 2));
    assert_eq!(state.server_seq(), 2);
}

#[test]
fn subscribers_get_their_channels_envelopes_in_order_after_the_snapshot() {
    let state = manager(100);
    state.dispatch_server(SESSION, title("before")).unwrap();
    let outbox = TestOutbox::new(100);
    let id = state.register_subscriber(outbox.clone());
    let snapshot = state.subscribe(id, SESSION).unwrap();
    assert_eq!(snapshot.from_seq, 1);
    match snapshot.state {
        SnapshotState::Session(s) => assert_eq!(s.title, "before"),
        other => panic!("unexpected snapshot {other:?}"),
    }
    state.dispatch_server(SESSION, title("one")).unwrap();
    state
        .dispatch_server(CHAT, action(json!({ "type": "chat/draftChanged" })))
        .unwrap();
    state.dispatch_server(SESSION, title("two")).unwrap();
    assert_eq!(
        outbox.seqs(),
        [2, 4],
        "only the subscribed channel, in serverSeq order"
    );
    let frame = &outbox.frames.lock().unwrap()[0];
    assert_eq!(frame["method"], "action");
    assert_eq!(frame["jsonrpc"], "2.0");
}

#[test]
fn a_subscriber_that_cannot_keep_up_is_dropped_without_stalling_others() {
    let state = manager(100);
    let slow = TestOutbox::new(2);
    let fast = TestOutbox::new(1000);
    let slow_id = state.register_subscriber(slow.clone());
    let fast_id = state.register_subscriber(fast.clone());
    state.subscribe(slow_id, SESSION).unwrap();
    state.subscribe(fast_id, SESSION).unwrap();
    for i in 0..10 {
        state
            .dispatch_server(SESSION, title(&i.to_string()))
            .unwrap();
    }
    assert!(!state.has_subscriber(slow_id));
    assert!(state.has_subscriber(fast_id));
    assert_eq!(slow.seqs(), [1, 2]);
    assert_eq!(fast.seqs().len(), 10);
}

#[test]
fn rejected_client_actions_echo_with_a_reason_and_are_not_broadcast_or_logged() {
    let state = manager(100);
    let outbox = TestOutbox::new(100);
    let id = state.register_subscriber(outbox.clone());
    state.subscribe(id, CHAT).unwrap();
    let cancel = action(json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 1 }));
    let ClientDispatch::Rejected(echo) = state.dispatch_client(CHAT, cancel, origin(7)) else {
        panic!("expected a rejection");
    };
    assert_eq!(
        echo.rejection_reason.as_deref(),
        Some("no active turn to cancel")
    );
    assert_eq!(echo.origin, Some(origin(7)));
    assert_eq!(echo.server_seq, 1, "the echo takes a fresh serverSeq");
    assert!(outbox.seqs().is_empty());
    match state.reconnect(id, 0, &[CHAT.to_owned()]).unwrap() {
        ReconnectOutcome::Replay { actions, .. } => assert!(actions.is_empty()),
        other => panic!("unexpected {other:?}"),
    }
    let unknown = state.dispatch_client("ahp-chat:/none", title("x"), origin(8));
    assert_eq!(unknown, ClientDispatch::Ignored);
}

/// A refusal the transport decides (a rate limit) echoes the client's own action with the reason
/// and a fresh `serverSeq`, applies nothing, broadcasts nothing, and is observed as rejected.
#[test]
fn a_transport_refusal_echoes_the_action_and_changes_nothing() {
    let state = manager(100);
    let outbox = TestOutbox::new(100);
    let id = state.register_subscriber(outbox.clone());
    state.subscribe(id, SESSION).unwrap();
    let before = state.snapshot(SESSION).unwrap();
    let rename = title("renamed by a flood");
    let echo = state
        .reject_client(SESSION, rename.clone(), origin(9), "rate limited")
        .unwrap();
    assert_eq!(echo.action, rename);
    assert_eq!(echo.rejection_reason.as_deref(), Some("rate limited"));
    assert_eq!(echo.origin, Some(origin(9)));
    assert_eq!(echo.server_seq, 1);
    assert!(outbox.seqs().is_empty(), "not broadcast");
    assert_eq!(
        state.snapshot(SESSION).unwrap().state,
        before.state,
        "not applied"
    );
    assert_eq!(
        state.reject_client("ahp-chat:/none", title("x"), origin(10), "rate limited"),
        None
    );
}

#[test]
fn accepted_client_actions_carry_their_origin() {
    let state = manager(100);
    let started = action(json!({
        "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-01-01T00:00:00.000Z",
        "message": { "text": "hi", "origin": { "kind": "user" } }
    }));
    let ClientDispatch::Accepted(envelope) = state.dispatch_client(CHAT, started, origin(1)) else {
        panic!("expected acceptance");
    };
    assert_eq!(envelope.origin, Some(origin(1)));
    assert!(state.read(|h| h.chat(CHAT).unwrap().active_turn.is_some()));
}

type Seen = (u64, Option<String>, Option<String>, Option<String>, bool);
struct Recorder(Mutex<Vec<Seen>>);
impl EnvelopeObserver for Recorder {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        self.0.lock().unwrap().push((
            observed.envelope.server_seq,
            observed.session.map(|session| session.to_string()),
            observed.chat.map(|chat| chat.to_string()),
            observed.envelope.rejection_reason.clone(),
            observed.applied,
        ));
    }
}

#[test]
fn observers_see_accepted_and_rejected_envelopes_with_their_session() {
    let state = manager(100);
    let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
    state.add_observer(recorder.clone());
    state
        .dispatch_server(CHAT, action(json!({ "type": "chat/draftChanged" })))
        .unwrap();
    let cancel = action(json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 1 }));
    let _ = state.dispatch_client(CHAT, cancel, origin(1));
    state.dispatch_server(SESSION, title("renamed")).unwrap();
    let seen = recorder.0.lock().unwrap().clone();
    let (session, chat) = (Some(SESSION.to_owned()), Some(CHAT.to_owned()));
    assert_eq!(
        seen,
        [
            (1, session.clone(), chat.clone(), None, true),
            (
                2,
                session.clone(),
                chat,
                Some("no active turn to cancel".to_owned()),
                false
            ),
            // A session's own channel: owned by the session, no chat.
            (3, session, None, None, true),
        ]
    );
}

/// An observer that dispatches in response: must not deadlock.
struct Reactor(Arc<StateManager>);
impl EnvelopeObserver for Reactor {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        if observed.envelope.channel == CHAT {
            self.0.dispatch_server(SESSION, title("reacted")).unwrap();
        }
    }
}

#[test]
fn observers_may_dispatch() {
    let state = Arc::new(manager(100));
    state.add_observer(Arc::new(Reactor(Arc::clone(&state))));
    state
        .dispatch_server(CHAT, action(json!({ "type": "chat/draftChanged" })))
        .unwrap();
    assert_eq!(
        state.read(|h| h.session(SESSION).unwrap().title.clone()),
        "reacted"
    );
}

#[test]
fn reconnect_replays_within_the_log_and_snapshots_beyond_it() {
    let state = manager(3);
    for i in 0..5 {
        state
            .dispatch_server(SESSION, title(&i.to_string()))
            .unwrap();
    }
    let id = state.register_subscriber(TestOutbox::new(100));
    let channels = [SESSION.to_owned(), "ahp-chat:/gone".to_owned()];
    // Log holds 3, 4, 5: a watermark of 2 can be replayed.
    match state.reconnect(id, 2, &channels).unwrap() {
        ReconnectOutcome::Replay { actions, missing } => {
            let seqs: Vec<u64> = actions.iter().map(|e| e.server_seq).collect();
            assert_eq!(seqs, [3, 4, 5]);
            assert_eq!(missing, ["ahp-chat:/gone"]);
        }
        other => panic!("unexpected {other:?}"),
    }
    // A watermark of 1 lost envelope 2: snapshot.
    match state.reconnect(id, 1, &channels).unwrap() {
        ReconnectOutcome::Snapshot { snapshots } => {
            assert_eq!(snapshots.len(), 1);
            assert_eq!(snapshots[0].from_seq, 5);
        }
        other => panic!("unexpected {other:?}"),
    }
    // A watermark ahead of the counter (the host restarted): snapshot.
    assert!(matches!(
        state.reconnect(id, 99, &channels).unwrap(),
        ReconnectOutcome::Snapshot { .. }
    ));
    // Reconnect subscribes: later envelopes arrive.
    let outbox = TestOutbox::new(100);
    let id = state.register_subscriber(outbox.clone());
    state.reconnect(id, 5, &channels).unwrap();
    state.dispatch_server(SESSION, title("after")).unwrap();
    assert_eq!(outbox.seqs(), [6]);
}

#[test]
fn removing_a_chat_ends_its_subscriptions() {
    let state = manager(100);
    let outbox = TestOutbox::new(100);
    let id = state.register_subscriber(outbox.clone());
    state.subscribe(id, CHAT).unwrap();
    assert!(state.remove_chat(CHAT).is_some());
    assert!(matches!(
        state.subscribe(id, CHAT),
        Err(StateError::UnknownChannel(_))
    ));
    assert!(state.remove_session(SESSION).is_some());
    assert!(state.snapshot(SESSION).is_none());
}

#[test]
fn unknown_channels_and_subscribers_are_errors() {
    let state = manager(100);
    let id = state.register_subscriber(TestOutbox::new(1));
    assert!(matches!(
        state.subscribe(id, "ahp-session:/nope"),
        Err(StateError::UnknownChannel(_))
    ));
    state.remove_subscriber(id);
    assert!(matches!(
        state.subscribe(id, SESSION),
        Err(StateError::UnknownSubscriber(_))
    ));
    assert!(
        state
            .subscribe(state.register_subscriber(TestOutbox::new(1)), "ahp-root://")
            .is_ok()
    );
}

#[test]
fn envelope_frames_round_trip() {
    let state = manager(100);
    let outbox = TestOutbox::new(10);
    let id = state.register_subscriber(outbox.clone());
    state.subscribe(id, SESSION).unwrap();
    let envelope = state.dispatch_server(SESSION, title("x")).unwrap();
    let frame = outbox.frames.lock().unwrap()[0].clone();
    let decoded: ActionEnvelope = serde_json::from_value(frame["params"].clone()).unwrap();
    assert_eq!(decoded, *envelope);
}

struct Reservations(Mutex<Vec<u64>>);
impl SeqReservation for Reservations {
    fn reserve(&self, up_to: u64) -> bool {
        self.0.lock().unwrap().push(up_to);
        true
    }
}

#[test]
fn numbering_continues_above_the_high_water_mark_and_reserves_ahead() {
    let root: RootState = serde_json::from_value(json!({ "agents": [] })).unwrap();
    let reservations = Arc::new(Reservations(Mutex::new(Vec::new())));
    let config = StateConfig {
        first_server_seq: 5_000,
        ..StateConfig::default()
    };
    let state = StateManager::with_reservation(root, config, Some(reservations.clone()));
    assert_eq!(state.server_seq(), 5_001);
    let session: SessionState = serde_json::from_value(json!({
        "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": []
    }))
    .unwrap();
    state
        .insert_session(&SESSION.parse().unwrap(), session)
        .unwrap();
    let first = state.dispatch_server(SESSION, title("a")).unwrap();
    assert_eq!(first.server_seq, 5_002);
    assert_eq!(*reservations.0.lock().unwrap(), [5_002 + SEQ_RESERVATION]);
    for i in 0..=SEQ_RESERVATION {
        state
            .dispatch_server(SESSION, title(&i.to_string()))
            .unwrap();
    }
    // One more reservation once the first ran out; never one per action.
    assert_eq!(reservations.0.lock().unwrap().len(), 2);
    // A client that saw the old high-water mark (or anything before this run) gets snapshots.
    let id = state.register_subscriber(TestOutbox::new(10));
    for seen in [4_000, 5_000] {
        assert!(matches!(
            state.reconnect(id, seen, &[SESSION.to_owned()]).unwrap(),
            ReconnectOutcome::Snapshot { .. }
        ));
    }
}

/// Records, at commit time, how many frames the subscriber already had.
struct Durable {
    outbox: Arc<TestOutbox>,
    seen_at_commit: Mutex<Vec<(u64, usize)>>,
}
impl CommitHook for Durable {
    fn before_broadcast(&self, host: &HostState, envelope: &ActionEnvelope) {
        assert!(
            host.session(SESSION).is_some(),
            "the hook sees the reduced state"
        );
        let delivered = self.outbox.frames.lock().unwrap().len();
        self.seen_at_commit
            .lock()
            .unwrap()
            .push((envelope.server_seq, delivered));
    }
}

#[test]
fn commit_hooks_run_before_any_subscriber_gets_the_frame() {
    let state = manager(100);
    let outbox = TestOutbox::new(100);
    let id = state.register_subscriber(outbox.clone());
    state.subscribe(id, SESSION).unwrap();
    let hook = Arc::new(Durable {
        outbox: outbox.clone(),
        seen_at_commit: Mutex::new(Vec::new()),
    });
    state.add_commit_hook(hook.clone());
    state.dispatch_server(SESSION, title("a")).unwrap();
    state.dispatch_server(SESSION, title("b")).unwrap();
    assert_eq!(*hook.seen_at_commit.lock().unwrap(), [(1, 0), (2, 1)]);
    assert_eq!(outbox.seqs(), [1, 2]);
}

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agenthost_protocol::StateAction;
use agenthost_protocol::error_info::INTERNAL_ERROR;
use proptest::prelude::*;

use crate::test_support::*;
use crate::{
    AppliedClientAction, ChatContribution, ChatKey, ClientContext, Contribution,
    ContributionContext, Descriptor, DispatchedAction, Disposition, Hook, HookSet, HostBridge,
    KeySegment, LaunchKind, MissingService, RegistrationError, RejectStage, RequestSource,
    RestoredChat, SendContribution, SendTurnMessageOptions, ServiceRegistry, SessionKey,
    render_order,
};

const OBSERVERS: [Hook; 3] = [
    Hook::TurnEnd,
    Hook::DidApplyClientAction,
    Hook::DidDispatchAction,
];

fn draft_action() -> StateAction {
    serde_json::from_str(r#"{"type":"chat/draftChanged"}"#).unwrap()
}

fn dispatch_observers(d: &crate::Dispatcher, rejection: Option<&str>) {
    let action = draft_action();
    let context = ClientContext::unknown(LaunchKind::Serve);
    d.turn_end(&turn_end());
    d.did_apply_client_action(&AppliedClientAction {
        channel: "ahp-chat:/c",
        session: Some(&"ahp-session:/s".parse().unwrap()),
        chat: Some(&"ahp-chat:/c".parse().unwrap()),
        action: &action,
        client_id: Some("client-a"),
        client_context: &context,
    });
    d.did_dispatch_action(&DispatchedAction {
        channel: "ahp-chat:/c",
        session: Some(&"ahp-session:/s".parse().unwrap()),
        chat: Some(&"ahp-chat:/c".parse().unwrap()),
        action: &action,
        origin: None,
        rejection_reason: rejection,
    });
}

#[test]
fn each_hook_reaches_only_its_implementers() {
    let d = dispatcher();
    let log = log();
    let _a = probe(&d, "a", 0, &[Hook::TurnEnd], &log, Act::Nothing);
    let _b = probe(&d, "b", 0, &[Hook::DidDispatchAction], &log, Act::Nothing);
    dispatch_observers(&d, None);
    assert_eq!(
        entries(&log),
        ["a onTurnEnd t1", "b onDidDispatchAction accepted"]
    );
}

#[test]
fn lower_order_first_and_ties_by_registration() {
    let d = dispatcher();
    let log = log();
    let hooks = [Hook::TurnEnd, Hook::DidDispatchAction, Hook::OutgoingTurn];
    let _first = probe(&d, "first", 10, &hooks, &log, Act::Nothing);
    let _second = probe(&d, "second", 0, &hooks, &log, Act::Nothing);
    let _third = probe(&d, "third", 10, &hooks, &log, Act::Nothing);
    d.turn_end(&turn_end());
    for hook in [Hook::TurnEnd, Hook::DidDispatchAction, Hook::OutgoingTurn] {
        let ids: Vec<&str> = d.order_of(hook).into_iter().map(|(_, id)| id).collect();
        assert_eq!(ids, ["second", "first", "third"], "{hook}");
    }
    assert_eq!(
        entries(&log),
        [
            "second onTurnEnd t1",
            "first onTurnEnd t1",
            "third onTurnEnd t1"
        ]
    );
}

struct Counted;
impl ChatContribution for Counted {}
static CONSTRUCTED: AtomicUsize = AtomicUsize::new(0);
impl Contribution for Counted {
    const ID: &'static str = "counted";
    const ORDER: i32 = 100;
    const HOOKS: HookSet = HookSet::of(&[Hook::TurnEnd]);
    fn create(_: ContributionContext, _: &ServiceRegistry) -> Result<Self, MissingService> {
        CONSTRUCTED.fetch_add(1, Ordering::SeqCst);
        Ok(Counted)
    }
}

#[test]
fn a_duplicate_id_is_refused_before_construction() {
    let d = dispatcher();
    let _first = d.register::<Counted>().unwrap();
    let before = CONSTRUCTED.load(Ordering::SeqCst);
    let error = d.register::<Counted>().unwrap_err();
    assert_eq!(error, RegistrationError::Duplicate { id: "counted" });
    assert_eq!(
        error.to_string(),
        "Chat contribution already registered: counted"
    );
    assert_eq!(
        CONSTRUCTED.load(Ordering::SeqCst),
        before,
        "the constructor must not run"
    );
}

trait TitleController: Send + Sync {
    fn title(&self) -> String;
}
struct NeedsTitles {
    titles: Arc<dyn TitleController>,
}
impl ChatContribution for NeedsTitles {
    fn on_turn_end(&self, _: &crate::TurnEnd) -> crate::HookResult {
        let _ = self.titles.title();
        Ok(())
    }
}
impl Contribution for NeedsTitles {
    const ID: &'static str = "needsTitles";
    const ORDER: i32 = 400;
    const HOOKS: HookSet = HookSet::of(&[Hook::TurnEnd]);
    fn create(_: ContributionContext, services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self {
            titles: services.get::<dyn TitleController>()?,
        })
    }
}
struct FixedTitle;
impl TitleController for FixedTitle {
    fn title(&self) -> String {
        "fixed".into()
    }
}

#[test]
fn a_missing_service_fails_the_registration_naming_it() {
    let d = dispatcher();
    let error = d.register::<NeedsTitles>().unwrap_err();
    match &error {
        RegistrationError::MissingService { id, service } => {
            assert_eq!(*id, "needsTitles");
            assert!(service.contains("TitleController"), "{service}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(error.to_string().contains("TitleController"));
    assert!(!d.is_registered("needsTitles"));

    let mut services = ServiceRegistry::new();
    services.insert::<dyn TitleController>(Arc::new(FixedTitle));
    let d = crate::Dispatcher::new(services);
    let _r = d.register::<NeedsTitles>().unwrap();
    assert!(d.is_registered("needsTitles"));
}

#[test]
fn observer_failures_and_panics_are_isolated() {
    for act in [Act::Fail, Act::Panic] {
        let d = dispatcher();
        let log = log();
        let _bad = probe(&d, "bad", 20, &OBSERVERS, &log, act);
        let _next = probe(&d, "next", 21, &OBSERVERS, &log, Act::Nothing);
        dispatch_observers(&d, None);
        assert_eq!(
            entries(&log),
            [
                "bad onTurnEnd t1",
                "next onTurnEnd t1",
                "bad onDidApplyClientAction ahp-chat:/c",
                "next onDidApplyClientAction ahp-chat:/c",
                "bad onDidDispatchAction accepted",
                "next onDidDispatchAction accepted",
            ]
        );
    }
}

#[test]
fn a_rejected_envelope_reaches_dispatched_observers_with_its_reason() {
    let d = dispatcher();
    let log = log();
    let _p = probe(&d, "p", 0, &[Hook::DidDispatchAction], &log, Act::Nothing);
    dispatch_observers(&d, Some("no active turn to cancel"));
    assert_eq!(
        entries(&log),
        ["p onDidDispatchAction no active turn to cancel"]
    );
}

#[test]
fn the_gate_stops_at_the_first_non_accept() {
    let d = dispatcher();
    let log = log();
    let _h = probe(
        &d,
        "handles",
        10,
        &[Hook::IncomingRequest],
        &log,
        Act::Dispose(Disposition::Handled),
    );
    let _f = probe(
        &d,
        "follower",
        20,
        &[Hook::IncomingRequest],
        &log,
        Act::Nothing,
    );
    assert_eq!(
        d.incoming_request(&incoming(RequestSource::Direct)),
        Disposition::Handled
    );
    assert_eq!(entries(&log), ["handles onIncomingRequest Direct"]);

    let d = dispatcher();
    let log = crate::test_support::log();
    let reject = |m: &str| Disposition::Reject {
        error: agenthost_protocol::error_info::error_info("archived", m),
        stage: RejectStage::Validation,
    };
    let _a = probe(
        &d,
        "first",
        10,
        &[Hook::IncomingRequest],
        &log,
        Act::Dispose(reject("first")),
    );
    let _b = probe(
        &d,
        "second",
        20,
        &[Hook::IncomingRequest],
        &log,
        Act::Dispose(reject("second")),
    );
    assert_eq!(
        d.incoming_request(&incoming(RequestSource::Queued)),
        reject("first")
    );
    assert_eq!(entries(&log), ["first onIncomingRequest Queued"]);
}

#[test]
fn the_gate_fails_closed() {
    for act in [Act::Fail, Act::Panic] {
        let d = dispatcher();
        let log = log();
        let _ok = probe(
            &d,
            "accepts",
            5,
            &[Hook::IncomingRequest],
            &log,
            Act::Dispose(Disposition::Accept),
        );
        let _bad = probe(&d, "broken", 10, &[Hook::IncomingRequest], &log, act);
        let _f = probe(
            &d,
            "follower",
            20,
            &[Hook::IncomingRequest],
            &log,
            Act::Nothing,
        );
        match d.incoming_request(&incoming(RequestSource::Direct)) {
            Disposition::Reject { error, stage } => {
                assert_eq!(error.error_type, INTERNAL_ERROR);
                assert_eq!(error.message, "Turn admission contribution 'broken' failed");
                assert_eq!(stage, RejectStage::Validation);
            }
            other => panic!("expected a reject, got {other:?}"),
        }
        assert_eq!(
            entries(&log),
            [
                "accepts onIncomingRequest Direct",
                "broken onIncomingRequest Direct"
            ]
        );
    }
}

#[test]
fn the_gate_accepts_without_implementers_and_passes_the_source() {
    let d = dispatcher();
    assert_eq!(
        d.incoming_request(&incoming(RequestSource::Direct)),
        Disposition::Accept
    );
    let log = log();
    let _p = probe(&d, "p", 0, &[Hook::IncomingRequest], &log, Act::Nothing);
    assert_eq!(
        d.incoming_request(&incoming(RequestSource::Queued)),
        Disposition::Accept
    );
    assert_eq!(
        d.incoming_request(&incoming(RequestSource::Direct)),
        Disposition::Accept
    );
    assert_eq!(
        entries(&log),
        ["p onIncomingRequest Queued", "p onIncomingRequest Direct"]
    );
}

fn instructions(list: &[&str]) -> Act {
    Act::Send(SendContribution {
        instructions: Some(list.iter().map(|s| (*s).to_owned()).collect()),
        text: None,
    })
}

#[tokio::test]
async fn outgoing_instructions_are_appended_in_contribution_order() {
    let d = dispatcher();
    let log = log();
    let _first = probe(
        &d,
        "first",
        11,
        &[Hook::OutgoingTurn],
        &log,
        instructions(&["from first"]),
    );
    let _second = probe(
        &d,
        "second",
        10,
        &[Hook::OutgoingTurn],
        &log,
        instructions(&["from second"]),
    );
    let result = d.outgoing_turn(&outgoing("hi")).await;
    assert_eq!(
        result.instructions,
        Some(vec!["from second".to_owned(), "from first".to_owned()])
    );
    assert_eq!(result.message, message("hi"));
}

#[tokio::test]
async fn outgoing_without_added_instructions_has_none() {
    let d = dispatcher();
    let log = log();
    let _a = probe(
        &d,
        "empty",
        1,
        &[Hook::OutgoingTurn],
        &log,
        instructions(&[]),
    );
    let _b = probe(
        &d,
        "nothing",
        2,
        &[Hook::OutgoingTurn],
        &log,
        Act::Send(SendContribution::default()),
    );
    let result = d.outgoing_turn(&outgoing("hi")).await;
    assert_eq!(result.instructions, None);
    assert_eq!(result.message, message("hi"));
}

#[tokio::test]
async fn outgoing_text_replacements_are_threaded_and_nothing_else_changes() {
    let d = dispatcher();
    let log = log();
    let _a = probe(&d, "a", 1, &[Hook::OutgoingTurn], &log, Act::Append("A"));
    let _b = probe(&d, "b", 2, &[Hook::OutgoingTurn], &log, Act::Append("B"));
    let _observer = probe(&d, "observer", 3, &[Hook::OutgoingTurn], &log, Act::Nothing);
    let result = d.outgoing_turn(&outgoing("hi")).await;
    assert_eq!(
        entries(&log),
        [
            "a onOutgoingTurn hi",
            "b onOutgoingTurn hi+A",
            "observer onOutgoingTurn hi+A+B"
        ]
    );
    let mut expected = message("hi");
    expected.text = "hi+A+B".into();
    assert_eq!(
        result.message, expected,
        "attachments, model, origin and metadata are kept"
    );
}

#[tokio::test]
async fn an_empty_text_counts_as_a_replacement() {
    let d = dispatcher();
    let log = log();
    let blank = Act::Send(SendContribution {
        instructions: None,
        text: Some(String::new()),
    });
    let _a = probe(&d, "blank", 1, &[Hook::OutgoingTurn], &log, blank);
    let result = d.outgoing_turn(&outgoing("hi")).await;
    assert_eq!(result.message.text, "");
}

#[tokio::test]
async fn a_failing_outgoing_contribution_adds_nothing_and_blocks_nothing() {
    for act in [Act::Fail, Act::Panic] {
        let d = dispatcher();
        let log = log();
        let _bad = probe(&d, "bad", 20, &[Hook::OutgoingTurn], &log, act);
        let _next = probe(
            &d,
            "next",
            21,
            &[Hook::OutgoingTurn],
            &log,
            instructions(&["kept"]),
        );
        let result = d.outgoing_turn(&outgoing("hi")).await;
        assert_eq!(result.instructions, Some(vec!["kept".to_owned()]));
        assert_eq!(result.message.text, "hi");
    }
}

#[tokio::test]
async fn hydration_stages_chain_and_a_failed_stage_keeps_the_previous_value() {
    let d = dispatcher();
    let log = log();
    let _p = probe(
        &d,
        "previous",
        10,
        &[Hook::HydrateTurns],
        &log,
        Act::Stage("previous"),
    );
    let _t = probe(&d, "throwing", 20, &[Hook::HydrateTurns], &log, Act::Panic);
    let _f = probe(
        &d,
        "following",
        30,
        &[Hook::HydrateTurns],
        &log,
        Act::Nothing,
    );
    let turns = d.hydrate_turns(&hydration(), vec![turn("t0")]).await;
    let ids: Vec<&str> = turns.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["t0", "previous"]);
    assert_eq!(
        entries(&log),
        [
            "previous onHydrateTurns t0",
            "throwing onHydrateTurns t0,previous",
            "following onHydrateTurns t0,previous",
        ]
    );
}

#[tokio::test]
async fn hydrate_chat_stages_see_earlier_results() {
    let d = dispatcher();
    let log = log();
    let _t = probe(
        &d,
        "title",
        10,
        &[Hook::HydrateChat],
        &log,
        Act::Stage("Restored"),
    );
    let _f = probe(&d, "failing", 15, &[Hook::HydrateChat], &log, Act::Fail);
    let _d = probe(
        &d,
        "draft",
        20,
        &[Hook::HydrateChat],
        &log,
        Act::DraftFromTitle,
    );
    let chat = d.hydrate_chat(&hydration(), RestoredChat::default()).await;
    assert_eq!(chat.title.as_deref(), Some("Restored"));
    assert_eq!(
        chat.draft.map(|m| m.text).as_deref(),
        Some("draft for Restored")
    );
}

#[tokio::test]
async fn hydration_without_implementers_returns_the_input_itself() {
    let d = dispatcher();
    let log = log();
    let _other = probe(&d, "other", 0, &[Hook::TurnEnd], &log, Act::Nothing);
    let turns = vec![turn("a"), turn("b")];
    let pointer = turns.as_ptr();
    let back = d.hydrate_turns(&hydration(), turns).await;
    assert_eq!(back.as_ptr(), pointer, "the identical value, not a copy");
    let chat = RestoredChat {
        title: Some("t".into()),
        ..RestoredChat::default()
    };
    assert_eq!(d.hydrate_chat(&hydration(), chat.clone()).await, chat);
}

static COUNTER_KEY: ChatKey<usize> = ChatKey::new("counter", || {
    CREATED.fetch_add(1, Ordering::SeqCst);
    0
});
static CREATED: AtomicUsize = AtomicUsize::new(0);
static SESSION_KEY: SessionKey<Option<String>> = SessionKey::new("note", || None);
static QUEUED_KEY: ChatKey<Option<String>> = ChatKey::new("sender", || None);

/// Captures its context so tests can use the mementos as the contribution would.
struct Holder {
    _context: ContributionContext,
}
impl ChatContribution for Holder {}

fn holder(d: &crate::Dispatcher, id: &'static str) -> (crate::Registration, ContributionContext) {
    let captured = Arc::new(std::sync::Mutex::new(None));
    let sink = Arc::clone(&captured);
    let descriptor = Descriptor {
        id,
        order: 0,
        hooks: HookSet::NONE,
    };
    let registration = d
        .register_with(descriptor, move |context, _| {
            *sink.lock().unwrap() = Some(context.clone());
            Ok(Arc::new(Holder { _context: context }))
        })
        .unwrap();
    let context = captured.lock().unwrap().take().unwrap();
    (registration, context)
}

#[test]
fn mementos_are_per_contribution_and_shared_within_one() {
    let d = dispatcher();
    let (_a, a) = holder(&d, "a");
    let (_b, b) = holder(&d, "b");
    let before = CREATED.load(Ordering::SeqCst);
    let a1 = a.chat_memento(&COUNTER_KEY, "ahp-session:/s", "ahp-chat:/c", &[]);
    let a2 = a.chat_memento(&COUNTER_KEY, "ahp-session:/s", "ahp-chat:/c", &[]);
    let b1 = b.chat_memento(&COUNTER_KEY, "ahp-session:/s", "ahp-chat:/c", &[]);
    assert!(a1.ptr_eq(&a2));
    assert!(
        !a1.ptr_eq(&b1),
        "the same debug name in two contributions never collides"
    );
    a1.set(5);
    assert_eq!(a2.get(), 5);
    assert_eq!(b1.get(), 0);
    assert_eq!(
        CREATED.load(Ordering::SeqCst) - before,
        2,
        "the factory runs once per contribution"
    );
    assert_eq!(a.id(), "a");
}

#[test]
fn deleting_one_segment_value_resets_only_that_entry() {
    let d = dispatcher();
    let (_r, ctx) = holder(&d, "queue");
    let q1 = [KeySegment::from("q1")];
    let q2 = [KeySegment::from("q2")];
    ctx.chat_memento(&QUEUED_KEY, "ahp-session:/s", "ahp-chat:/c", &q1)
        .set(Some("alice".into()));
    ctx.chat_memento(&QUEUED_KEY, "ahp-session:/s", "ahp-chat:/c", &q2)
        .set(Some("bob".into()));
    ctx.delete_chat_memento(&QUEUED_KEY, "ahp-session:/s", "ahp-chat:/c", &q1);
    assert_eq!(
        ctx.chat_memento(&QUEUED_KEY, "ahp-session:/s", "ahp-chat:/c", &q1)
            .get(),
        None
    );
    assert_eq!(
        ctx.chat_memento(&QUEUED_KEY, "ahp-session:/s", "ahp-chat:/c", &q2)
            .get()
            .as_deref(),
        Some("bob")
    );
    // Setting nothing keeps the entry (the same cell comes back).
    let cell = ctx.session_memento(&SESSION_KEY, "ahp-session:/s", &[]);
    cell.set(None);
    assert!(cell.ptr_eq(&ctx.session_memento(&SESSION_KEY, "ahp-session:/s", &[])));
    ctx.delete_session_memento(&SESSION_KEY, "ahp-session:/s", &[]);
    assert!(!cell.ptr_eq(&ctx.session_memento(&SESSION_KEY, "ahp-session:/s", &[])));
}

#[test]
fn eviction_is_central_and_scoped() {
    let d = dispatcher();
    let (_a, a) = holder(&d, "a");
    let (_b, b) = holder(&d, "b");
    for ctx in [&a, &b] {
        ctx.chat_memento(&COUNTER_KEY, "ahp-session:/s1", "ahp-chat:/one", &[])
            .set(1);
        ctx.chat_memento(&COUNTER_KEY, "ahp-session:/s1", "ahp-chat:/two", &[])
            .set(2);
        ctx.chat_memento(&COUNTER_KEY, "ahp-session:/s2", "ahp-chat:/three", &[])
            .set(3);
        ctx.session_memento(&SESSION_KEY, "ahp-session:/s1", &[])
            .set(Some("s1".into()));
        ctx.session_memento(&SESSION_KEY, "ahp-session:/s2", &[])
            .set(Some("s2".into()));
    }
    let held = a.chat_memento(&COUNTER_KEY, "ahp-session:/s1", "ahp-chat:/one", &[]);

    d.evict_chat("ahp-chat:/one");
    for ctx in [&a, &b] {
        assert_eq!(
            ctx.chat_memento(&COUNTER_KEY, "ahp-session:/s1", "ahp-chat:/one", &[])
                .get(),
            0
        );
        assert_eq!(
            ctx.chat_memento(&COUNTER_KEY, "ahp-session:/s1", "ahp-chat:/two", &[])
                .get(),
            2
        );
    }
    assert_eq!(
        held.get(),
        1,
        "eviction drops the entry, not the value held elsewhere"
    );

    d.evict_session("ahp-session:/s1");
    for ctx in [&a, &b] {
        assert_eq!(
            ctx.chat_memento(&COUNTER_KEY, "ahp-session:/s1", "ahp-chat:/two", &[])
                .get(),
            0
        );
        assert_eq!(
            ctx.session_memento(&SESSION_KEY, "ahp-session:/s1", &[])
                .get(),
            None
        );
        assert_eq!(
            ctx.chat_memento(&COUNTER_KEY, "ahp-session:/s2", "ahp-chat:/three", &[])
                .get(),
            3
        );
        assert_eq!(
            ctx.session_memento(&SESSION_KEY, "ahp-session:/s2", &[])
                .get()
                .as_deref(),
            Some("s2")
        );
    }
}

struct DropFlag(Arc<AtomicUsize>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
struct Disposable {
    _flag: DropFlag,
    log: Log,
}
impl ChatContribution for Disposable {
    fn on_turn_end(&self, _: &crate::TurnEnd) -> crate::HookResult {
        self.log.lock().unwrap().push("disposable".into());
        Ok(())
    }
}

fn disposable(d: &crate::Dispatcher, drops: &Arc<AtomicUsize>, log: &Log) -> crate::Registration {
    let (drops, log) = (Arc::clone(drops), Arc::clone(log));
    let descriptor = Descriptor {
        id: "disposable",
        order: 0,
        hooks: HookSet::of(&[Hook::TurnEnd]),
    };
    d.register_with(descriptor, move |_, _| {
        Ok(Arc::new(Disposable {
            _flag: DropFlag(drops),
            log,
        }))
    })
    .unwrap()
}

#[test]
fn unregistering_removes_and_disposes() {
    let d = dispatcher();
    let drops = Arc::new(AtomicUsize::new(0));
    let log = log();
    let registration = disposable(&d, &drops, &log);
    d.turn_end(&turn_end());
    registration.unregister();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the contribution is dropped"
    );
    d.turn_end(&turn_end());
    assert_eq!(entries(&log), ["disposable"]);
    assert!(!d.is_registered("disposable"));
    // The id is free again.
    let _again = disposable(&d, &drops, &log);
}

#[test]
fn dropping_the_dispatcher_disposes_every_contribution() {
    let d = dispatcher();
    let drops = Arc::new(AtomicUsize::new(0));
    let log = log();
    let registration = disposable(&d, &drops, &log);
    drop(d);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    drop(registration); // a handle outliving its dispatcher is harmless
}

/// Registers "late" from inside a dispatch, and unregisters "victim".
struct Mutator {
    dispatcher: crate::HostAccess,
    target: std::sync::Mutex<Option<crate::Registration>>,
    late: std::sync::Mutex<Option<crate::Registration>>,
    spawn: Box<dyn Fn() -> crate::Registration + Send + Sync>,
}
impl ChatContribution for Mutator {
    fn on_turn_end(&self, _: &crate::TurnEnd) -> crate::HookResult {
        let _ = self.dispatcher.get();
        drop(self.target.lock().unwrap().take());
        *self.late.lock().unwrap() = Some((self.spawn)());
        Ok(())
    }
}

#[test]
fn a_dispatch_uses_the_registrations_of_its_start() {
    let d = dispatcher();
    let log = log();
    let victim = probe(&d, "victim", 20, &[Hook::TurnEnd], &log, Act::Nothing);
    let spawner = d.clone();
    let late_log = Arc::clone(&log);
    let mutator = Mutator {
        dispatcher: d.host_access(),
        target: std::sync::Mutex::new(Some(victim)),
        late: std::sync::Mutex::new(None),
        spawn: Box::new(move || {
            probe(
                &spawner,
                "late",
                30,
                &[Hook::TurnEnd],
                &late_log,
                Act::Nothing,
            )
        }),
    };
    let descriptor = Descriptor {
        id: "mutator",
        order: 10,
        hooks: HookSet::of(&[Hook::TurnEnd]),
    };
    let mutator = Arc::new(mutator);
    let handle = Arc::clone(&mutator);
    let _m = d.register_with(descriptor, move |_, _| Ok(handle)).unwrap();

    d.turn_end(&turn_end());
    // Unregistered mid-dispatch: still called by that dispatch. Registered mid-dispatch: not.
    assert_eq!(entries(&log), ["victim onTurnEnd t1"]);
    assert!(!d.is_registered("victim"));
    assert!(d.is_registered("late"));
    drop(mutator.late.lock().unwrap().take());
}

struct Host(&'static str);
impl HostBridge for Host {
    fn launch_kind(&self) -> LaunchKind {
        LaunchKind::Embedded(self.0.into())
    }
    fn send_turn_message(&self, _: SendTurnMessageOptions) {}
}

#[test]
fn one_host_at_a_time_and_stale_handles_never_clear_a_newer_host() {
    let d = dispatcher();
    assert!(d.host().is_none());
    let first = d.register_host(Arc::new(Host("first"))).unwrap();
    let error = d.register_host(Arc::new(Host("second"))).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Chat contribution host already registered"
    );
    assert_eq!(
        d.host().unwrap().launch_kind(),
        LaunchKind::Embedded("first".into())
    );

    drop(first);
    assert!(d.host().is_none());
    let second = d.register_host(Arc::new(Host("second"))).unwrap();
    let access = d.host_access();
    assert_eq!(
        access.get().unwrap().launch_kind(),
        LaunchKind::Embedded("second".into())
    );
    // A stale handle for the same kind of host, but another instance, must not clear it.
    let stale = crate::HostRegistration {
        slot: std::sync::Arc::downgrade(&d.inner),
        host: Arc::new(Host("second")),
    };
    drop(stale);
    assert!(d.host().is_some());
    drop(second);
    assert!(access.get().is_none());
}

#[test]
fn the_ordering_snapshot_lists_every_hook() {
    let d = dispatcher();
    let log = log();
    let _a = probe(
        &d,
        "localCommand",
        50,
        &[Hook::IncomingRequest],
        &log,
        Act::Nothing,
    );
    let _b = probe(
        &d,
        "turnAdmission",
        100,
        &[Hook::IncomingRequest],
        &log,
        Act::Nothing,
    );
    let _c = probe(
        &d,
        "sessionTitle",
        400,
        &[
            Hook::TurnEnd,
            Hook::OutgoingTurn,
            Hook::DidApplyClientAction,
            Hook::HydrateChat,
        ],
        &log,
        Act::Nothing,
    );
    let _d = probe(&d, "markUnread", 500, &[Hook::TurnEnd], &log, Act::Nothing);
    let _e = probe(
        &d,
        "sideChat",
        500,
        &[Hook::TurnEnd, Hook::OutgoingTurn, Hook::HydrateTurns],
        &log,
        Act::Nothing,
    );
    insta::assert_snapshot!(render_order(&d));
}

fn ids(d: &crate::Dispatcher) -> Vec<Vec<&'static str>> {
    Hook::ALL
        .iter()
        .map(|h| d.order_of(*h).into_iter().map(|(_, id)| id).collect())
        .collect()
}

const SHUFFLE_IDS: [&str; 8] = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"];

proptest! {
    #[test]
    fn shuffled_registration_with_distinct_orders_gives_the_same_order(
        order in Just((0..8usize).collect::<Vec<_>>()).prop_shuffle(),
        hook_bits in proptest::collection::vec(0u8..128, 8),
    ) {
        let register = |sequence: &[usize]| {
            let d = dispatcher();
            let log = log();
            let registrations: Vec<_> = sequence
                .iter()
                .map(|&i| {
                    let hooks: Vec<Hook> = Hook::ALL
                        .into_iter()
                        .filter(|h| hook_bits[i] & (1 << (*h as u8)) != 0)
                        .collect();
                    probe(&d, SHUFFLE_IDS[i], (i as i32) * 10, &hooks, &log, Act::Nothing)
                })
                .collect();
            (d, registrations)
        };
        let (canonical, _r1) = register(&(0..8).collect::<Vec<_>>());
        let (shuffled, _r2) = register(&order);
        prop_assert_eq!(ids(&canonical), ids(&shuffled));
    }
}

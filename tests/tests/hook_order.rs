//! The order the host calls the contributions' hooks in, recorded from a live host (a
//! `HookTrace` in the dispatcher's registry sees every hook a contribution runs), not rendered
//! from the registry:
//!
//! - a client's `chat/turnStarted`: `onDidDispatchAction` (the envelope's observers), then the
//!   admission gate `onIncomingRequest` decides in the same call, then `onDidApplyClientAction`;
//! - a restored session runs `onHydrateChat` once for every chat of its catalog, with an empty
//!   value, so the contributions read what they own from the store (`sessionTitle` restores a
//!   title only the store's session-side mirror knows); opening the chat runs `onHydrateTurns`;
//! - each hook's contributions run by `ORDER`, whatever the registration order (a proptest
//!   shuffles it; `markUnread` and `sideChat` share `ORDER` 500 and keep their registration
//!   order, as ties break by it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agenthost::host::{Customize, HostOptions, compose};
use agenthost_dispatcher::{ClientContext, Hook, HookTrace, LaunchKind, ServiceRegistry};
use agenthost_protocol::commands::CreateSessionParams;
use agenthost_protocol::{ActionOrigin, ChatUri, SessionUri};
use agenthost_service::{AgentService, ClientDispatch, Outbox};
use agenthost_store::{MetaOwner, Store, TitleSource};
use proptest::prelude::*;
use serde_json::json;

/// Every hook call and every mark, in order.
#[derive(Default)]
struct Trace(Mutex<Vec<String>>);

impl Trace {
    fn mark(&self, mark: &str) {
        self.0.lock().unwrap().push(format!("-- {mark}"));
    }
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl HookTrace for Trace {
    fn ran(&self, hook: Hook, contribution: &'static str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("{} {contribution}", hook.name()));
    }
}

/// Frames a subscription received.
#[derive(Default)]
struct Frames(Mutex<Vec<String>>);

impl Outbox for Frames {
    fn push(&self, frame: Arc<str>) -> bool {
        self.0.lock().unwrap().push(frame.to_string());
        true
    }
}

const SESSION: &str = "scripted:/hooks";
const STORE_ONLY_TITLE: &str = "A title only the store knows";

fn options(dir: &std::path::Path) -> HostOptions {
    let script = dir.join("script.json");
    let steps = json!({ "default": { "steps": [ { "kind": "say", "text": "done" } ] } });
    std::fs::write(&script, steps.to_string()).unwrap();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    support::scripted_options(dir, &work, script)
}

async fn host(dir: &std::path::Path, order: Option<Vec<usize>>) -> (Arc<AgentService>, Arc<Trace>) {
    let trace = Arc::new(Trace::default());
    let registered = Arc::clone(&trace);
    let composed = compose(
        &options(dir),
        Customize {
            services: Some(Box::new(move |services: &mut ServiceRegistry| {
                services.insert::<dyn HookTrace>(registered);
            })),
            registration_order: order,
        },
    )
    .await
    .unwrap();
    (composed.service, trace)
}

fn context() -> ClientContext {
    ClientContext {
        client_id: Some("client".into()),
        client_kind: None,
        launch_kind: LaunchKind::Embedded("hook-order".into()),
        token: None,
    }
}

/// Waits, with a deadline, until `frames` holds one naming `needle`.
async fn until_frame(frames: &Frames, needle: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !frames.0.lock().unwrap().iter().any(|f| f.contains(needle)) {
        assert!(tokio::time::Instant::now() < deadline, "no {needle} frame");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One session, one turn, a stop, a restart that restores the session and opens its chat.
/// Returns both runs' traces.
async fn live_run(order: Option<Vec<usize>>) -> (Vec<String>, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let session = SessionUri::parse(SESSION).unwrap();
    let chat = ChatUri::default_for(&session);
    let (service, trace) = host(dir.path(), order.clone()).await;
    let params: CreateSessionParams =
        serde_json::from_value(json!({ "channel": SESSION })).unwrap();
    service.create_session(params, "client").await.unwrap();
    let frames = Arc::new(Frames::default());
    let subscriber = service.register_subscriber(frames.clone());
    service
        .subscribe("conn", Some("client"), subscriber, chat.as_str())
        .await
        .unwrap();
    let start = serde_json::from_value(json!({
        "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-03-01T10:00:00.000Z",
        "message": { "text": "hello", "origin": { "kind": "user" } }
    }))
    .unwrap();
    let origin = ActionOrigin {
        client_id: "client".into(),
        client_seq: 1,
    };
    trace.mark("dispatchAction chat/turnStarted: begin");
    let outcome = service
        .dispatch_action(chat.as_str(), start, origin, &context())
        .await;
    trace.mark("dispatchAction chat/turnStarted: end");
    assert!(matches!(outcome, ClientDispatch::Accepted(_)));
    until_frame(&frames, "chat/turnComplete").await;
    service.shutdown().await;
    let first = trace.lines();
    drop(service);

    // The chat's title now only in the session-side mirror: its own record says "default".
    let store = Store::open(dir.path().join("data/agenthost.db")).unwrap();
    store
        .set_chat_title(&chat, "placeholder", TitleSource::Default)
        .unwrap();
    store
        .set_meta(
            MetaOwner::Session(&session),
            &agenthost_contrib_session_title::mirror_key(chat.as_str()),
            Some(STORE_ONLY_TITLE),
        )
        .unwrap();
    drop(store);

    let (service, trace) = host(dir.path(), order).await;
    let frames = Arc::new(Frames::default());
    let subscriber = service.register_subscriber(frames.clone());
    trace.mark("subscribe session");
    service
        .subscribe("conn", Some("client"), subscriber, SESSION)
        .await
        .unwrap();
    trace.mark("subscribe chat");
    let snapshot = service
        .subscribe("conn", Some("client"), subscriber, chat.as_str())
        .await
        .unwrap();
    let title = serde_json::to_value(&snapshot).unwrap()["state"]["title"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    service.shutdown().await;
    (first, trace.lines(), title)
}

/// The consecutive calls of `hook` starting at `from`.
fn group(lines: &[String], from: usize, hook: Hook) -> Vec<String> {
    lines[from..]
        .iter()
        .take_while(|line| line.starts_with(&format!("{} ", hook.name())))
        .map(|line| line[hook.name().len() + 1..].to_owned())
        .collect()
}

/// Every call of `hook` in `lines`, in order.
fn calls(lines: &[String], hook: Hook) -> Vec<String> {
    let prefix = format!("{} ", hook.name());
    lines
        .iter()
        .filter_map(|line| line.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

fn position(lines: &[String], from: usize, prefix: &str) -> usize {
    from + lines[from..]
        .iter()
        .position(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} after line {from} in {lines:#?}"))
}

/// The sequences of each hook, as the snapshot shows them.
fn sequences(first: &[String], second: &[String]) -> String {
    let begin = position(first, 0, "-- dispatchAction chat/turnStarted: begin");
    let end = position(first, begin, "-- dispatchAction chat/turnStarted: end");
    let dispatched = group(first, begin + 1, Hook::DidDispatchAction);
    let gate_at = begin + 1 + dispatched.len();
    let gate = group(first, gate_at, Hook::IncomingRequest);
    let applied = group(first, gate_at + gate.len(), Hook::DidApplyClientAction);
    // All three in the dispatch's own call, nothing else in it.
    assert_eq!(
        gate_at + gate.len() + applied.len(),
        end,
        "the turn start's call: {:#?}",
        &first[begin..=end]
    );
    // The send tail and the turn's end run on tasks, interleaved with the observers of what
    // the contributions dispatch meanwhile: each hook's calls after the dispatch, in order.
    let outgoing = calls(&first[end..], Hook::OutgoingTurn);
    let turn_end = calls(&first[end..], Hook::TurnEnd);

    let restore = position(second, 0, "-- subscribe session");
    let open = position(second, restore, "-- subscribe chat");
    let hydrate_chat = group(second, restore + 1, Hook::HydrateChat);
    assert_eq!(restore + 1 + hydrate_chat.len(), open, "{second:#?}");
    let hydrate_turns = group(second, open + 1, Hook::HydrateTurns);
    assert!(
        !second[open..]
            .iter()
            .any(|l| l.starts_with(Hook::HydrateChat.name())),
        "onHydrateChat ran again when the chat opened: {second:#?}"
    );
    let mut out = String::new();
    for (name, calls) in [
        ("dispatched (chat/turnStarted)", dispatched),
        ("gate (same call)", gate),
        ("applied (same call)", applied),
        ("outgoing turn", outgoing),
        ("turn end", turn_end),
        ("hydrate chat (session restored, one chat)", hydrate_chat),
        ("hydrate turns (chat opened)", hydrate_turns),
    ] {
        out.push_str(&format!("{name}: {}\n", calls.join(", ")));
    }
    out
}

#[tokio::test]
async fn a_live_turn_and_a_restore_call_the_hooks_in_the_seed_order() {
    let (first, second, title) = live_run(None).await;
    insta::assert_snapshot!(sequences(&first, &second));
    assert_eq!(
        title, STORE_ONLY_TITLE,
        "sessionTitle restored the mirror's title"
    );
}

/// Positions of `markUnread` and `sideChat` in the registration order: both `ORDER` 500.
const TIED: (usize, usize) = (10, 16);

/// The sequences with the built-ins in their own registration order, computed once.
static EXPECTED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]
    #[test]
    fn the_sequences_do_not_depend_on_the_registration_order(
        order in Just((0..agenthost_contributions::BUILTIN_COUNT).collect::<Vec<_>>())
            .prop_shuffle()
    ) {
        let mut order = order;
        let a = order.iter().position(|&p| p == TIED.0).unwrap();
        let b = order.iter().position(|&p| p == TIED.1).unwrap();
        if a > b {
            order.swap(a, b);
        }
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let expected = EXPECTED.get_or_init(|| {
            runtime.block_on(async {
                let (first, second, _) = live_run(None).await;
                sequences(&first, &second)
            })
        });
        let shuffled = runtime.block_on(async {
            let (first, second, _) = live_run(Some(order)).await;
            sequences(&first, &second)
        });
        prop_assert_eq!(&shuffled, expected);
    }
}

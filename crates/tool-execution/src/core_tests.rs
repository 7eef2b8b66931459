//! The decision as a pure state machine: driven synchronously with explicit instants, no
//! runtime, no tasks — only the effects it asks for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use super::*;
use crate::fixtures::*;
use crate::harness::{FakeTools, ToolScript};

fn core() -> Core {
    let tools = FakeTools::with(&[
        ("search", ToolScript::plain()),
        ("browser", ToolScript::confirmable()),
    ]);
    Core::new(EngineConfig::responder(CLIENT), Arc::new(tools))
}

fn t(ms: u64) -> Instant {
    // A fixed origin keeps the arithmetic exact.
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(Instant::now) + Duration::from_millis(ms)
}

#[test]
fn an_unclaimed_confirmable_execution_arms_and_a_claim_starts_it() {
    let mut core = core();
    let mut fx = Effects::default();
    core.set_entry(
        client_execution(CHAT, "c1", "browser", CLIENT, "user-action", "{}"),
        t(0),
        &mut fx,
    );
    assert!(fx.runs.is_empty());
    assert!(fx.timers_changed);
    assert_eq!(core.next_deadline(), Some(t(5000)));

    let mut fx = Effects::default();
    let claim = core.claim(
        ClaimScope::Key(ClaimKey::ToolCall(key(CHAT, "c1"))),
        Claimant::new("v"),
        t(100),
        &mut fx,
    );
    assert_eq!(fx.runs.len(), 1, "claimed: run with context");
    assert_eq!(fx.runs[0].context, Some(Claimant::new("v")));
    assert_eq!(core.next_deadline(), None, "the timer is disarmed");
    assert_eq!(core.stats().started, 1);

    // A second decision for the same call attaches, never starts again.
    let mut fx = Effects::default();
    core.release(claim, t(200), &mut fx);
    core.set_entry(
        client_execution(CHAT, "c1", "browser", CLIENT, "setting", "{}"),
        t(300),
        &mut fx,
    );
    assert!(fx.runs.is_empty());
    assert_eq!(core.next_deadline(), None);
}

#[test]
fn the_grace_timer_fires_exactly_at_its_deadline() {
    let mut core = core();
    let mut fx = Effects::default();
    core.set_entry(server_confirmation(CHAT, "c1", "shell"), t(0), &mut fx);
    let mut fx = Effects::default();
    core.fire_due(t(4999), &mut fx);
    assert!(fx.dispatches.is_empty());
    core.fire_due(t(5000), &mut fx);
    assert_eq!(fx.dispatches.len(), 1);
    assert_eq!(core.stats().timers, 0);
    // Answered: a new unclaim does not arm again.
    let mut fx = Effects::default();
    let claim = core.claim(
        ClaimScope::Chat(CHAT.to_owned()),
        Claimant::new("conn"),
        t(6000),
        &mut fx,
    );
    core.release(claim, t(7000), &mut fx);
    assert_eq!(core.stats().timers, 0);
}

#[test]
fn a_headless_run_starts_without_any_timer() {
    let mut core = core();
    let mut fx = Effects::default();
    core.set_entry(
        client_execution(CHAT, "c1", "search", CLIENT, "not-needed", "{}"),
        t(0),
        &mut fx,
    );
    assert_eq!(fx.runs.len(), 1);
    assert_eq!(fx.runs[0].context, None);
    assert_eq!(
        fx.runs[0].pre_approval,
        Some(agenthost_protocol::ahp_types::state::ToolCallConfirmationReason::NotNeeded)
    );
    assert_eq!(core.stats().timers, 0);
    assert_eq!(core.stats().records, 1);
    let attempt = fx.runs[0].attempt;
    assert!(core.is_current(&key(CHAT, "c1"), attempt));
    // Removing the entry before the body ran cancels the attempt and clears the marker.
    let token = fx.runs[0].token.clone();
    let mut fx = Effects::default();
    core.remove_entry(
        &agenthost_reducers::projection::tool_client_execution_id(&key(CHAT, "c1")),
        t(1),
        &mut fx,
    );
    assert!(token.is_cancelled());
    assert!(!core.is_current(&key(CHAT, "c1"), attempt));
    assert_eq!(core.stats(), EngineStats::default());
}

#[test]
fn disposal_ignores_everything_afterwards() {
    let mut core = core();
    core.dispose();
    let mut fx = Effects::default();
    core.set_entry(chat_input(CHAT, "r1"), t(0), &mut fx);
    core.claim(
        ClaimScope::Chat(CHAT.to_owned()),
        Claimant::new("x"),
        t(0),
        &mut fx,
    );
    assert!(core.is_disposed());
    assert_eq!(core.stats(), EngineStats::default());
    assert!(fx.dispatches.is_empty() && fx.runs.is_empty());
}

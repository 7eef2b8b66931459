//! `dispatch_fanout_vs_direct`: each observer hook fanned out through the dispatcher to 18 no-op
//! contributions, against calling the same 18 hook methods directly in a loop over a
//! `Vec<Box<dyn ChatContribution>>`. ratio = direct time / dispatcher time, goal ≥ 0.5 (dispatch
//! at most twice the bare calls).
//!
//! `dispatch_allocations`: heap allocations made by observer dispatches after warm-up, counted by
//! an instrumented global allocator; goal 0.

use std::alloc::System;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agenthost_dispatcher::{
    AppliedClientAction, ChatContribution, ClientContext, Descriptor, DispatchedAction, Dispatcher,
    Hook, HookResult, HookSet, LaunchKind, ServiceRegistry, TurnEnd, TurnEndReason,
};
use agenthost_protocol::StateAction;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const CONTRIBUTIONS: usize = 18;
const ROUNDS: usize = 7;
const DISPATCHES: usize = 100_000;
const GOAL: f64 = 0.5;
const IDS: [&str; CONTRIBUTIONS] = [
    "c00", "c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10", "c11", "c12",
    "c13", "c14", "c15", "c16", "c17",
];

struct NoOp;

impl ChatContribution for NoOp {
    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        black_box(turn);
        Ok(())
    }
    fn on_did_apply_client_action(&self, action: &AppliedClientAction<'_>) -> HookResult {
        black_box(action);
        Ok(())
    }
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        black_box(action);
        Ok(())
    }
}

struct Payloads {
    turn_end: TurnEnd,
    action: StateAction,
    client_context: ClientContext,
}

fn dispatch_all(dispatcher: &Dispatcher, p: &Payloads) {
    dispatcher.turn_end(&p.turn_end);
    dispatcher.did_apply_client_action(&AppliedClientAction {
        channel: "ahp-chat:/c",
        session: Some(&p.turn_end.session),
        chat: Some(&p.turn_end.chat),
        action: &p.action,
        client_id: Some("client"),
        client_context: &p.client_context,
    });
    dispatcher.did_dispatch_action(&DispatchedAction {
        channel: "ahp-chat:/c",
        session: Some(&p.turn_end.session),
        chat: Some(&p.turn_end.chat),
        action: &p.action,
        origin: None,
        rejection_reason: None,
    });
}

fn call_all(direct: &[Box<dyn ChatContribution>], p: &Payloads) -> HookResult {
    for c in direct {
        c.on_turn_end(&p.turn_end)?;
    }
    let applied = AppliedClientAction {
        channel: "ahp-chat:/c",
        session: Some(&p.turn_end.session),
        chat: Some(&p.turn_end.chat),
        action: &p.action,
        client_id: Some("client"),
        client_context: &p.client_context,
    };
    for c in direct {
        c.on_did_apply_client_action(&applied)?;
    }
    let dispatched = DispatchedAction {
        channel: "ahp-chat:/c",
        session: Some(&p.turn_end.session),
        chat: Some(&p.turn_end.chat),
        action: &p.action,
        origin: None,
        rejection_reason: None,
    };
    for c in direct {
        c.on_did_dispatch_action(&dispatched)?;
    }
    Ok(())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let hooks = HookSet::of(&[
        Hook::TurnEnd,
        Hook::DidApplyClientAction,
        Hook::DidDispatchAction,
    ]);
    let mut registrations = Vec::new();
    for (i, id) in IDS.iter().enumerate() {
        let descriptor = Descriptor {
            id,
            order: (i as i32 % 5) * 100,
            hooks,
        };
        registrations.push(dispatcher.register_with(descriptor, |_, _| Ok(Arc::new(NoOp)))?);
    }
    let direct: Vec<Box<dyn ChatContribution>> = (0..CONTRIBUTIONS)
        .map(|_| Box::new(NoOp) as Box<dyn ChatContribution>)
        .collect();
    let action: StateAction = serde_json::from_str(r#"{"type":"chat/draftChanged"}"#)?;
    let payloads = Payloads {
        turn_end: TurnEnd {
            session: "ahp-session:/s".parse()?,
            chat: "ahp-chat:/c".parse()?,
            turn_id: Some("t1".into()),
            reason: TurnEndReason::Success,
            client_context: None,
        },
        action,
        client_context: ClientContext::unknown(LaunchKind::Serve),
    };

    // Warm up (thread-local state of the snapshot cell is set up on first use).
    for _ in 0..1_000 {
        dispatch_all(&dispatcher, &payloads);
    }
    let region = Region::new(GLOBAL);
    for _ in 0..DISPATCHES {
        dispatch_all(&dispatcher, &payloads);
    }
    let allocations = region.change().allocations;

    let mut ours = Vec::with_capacity(ROUNDS);
    let mut anchor = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..DISPATCHES {
            call_all(black_box(&direct), &payloads).map_err(|e| e.to_string())?;
        }
        anchor.push(start.elapsed());
        let start = Instant::now();
        for _ in 0..DISPATCHES {
            dispatch_all(black_box(&dispatcher), &payloads);
        }
        ours.push(start.elapsed());
    }
    let value = median(ours).as_secs_f64() * 1e3;
    let anchor = median(anchor).as_secs_f64() * 1e3;
    println!(
        "bench dispatch_fanout_vs_direct: value={value:.2}ms anchor={anchor:.2}ms ratio={:.2}x goal={GOAL}x",
        anchor / value
    );
    println!("bench dispatch_allocations: value={allocations}");
    drop(registrations);
    Ok(())
}

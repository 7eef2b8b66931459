//! `tool_execution_overhead`: one session engine fed 10 000 concurrent `inputNeeded` entries of
//! every kind, with random key and chat claims and releases, a grace window running out
//! half-way (policy answers, `clientUnavailable` denials) and every entry removed at the end;
//! client tools run and complete. The anchor is the same event stream, cloned the same way,
//! applied to an empty handler in the same run and runtime.
//!
//! ratio = anchor time / engine time (higher is better). Goal 0.05x: the engine may cost up to
//! 20× the bare hand-over of an event. At the measured few µs per entry that stays below the
//! cost of the JSON decoding and the envelope fan-out that deliver the same entry to the
//! engine in the first place, so the engine is never the bottleneck of a session stream.
//!
//! Memory: peak live heap bytes (a counting global allocator, sampled after every event)
//! of each pass, reported as counts in KiB.

use std::alloc::System;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agenthost_protocol::ahp_types::state::{SessionInputRequest, ToolCallResult};
use agenthost_protocol::ids::{InputKey, ToolCallKey};
use agenthost_protocol::{StateAction, Uri};
use agenthost_reducers::projection::entry_id;
use agenthost_tool_execution::answers::text_result;
use agenthost_tool_execution::{
    AnswerSink, BoxFuture, ClaimGuard, ClaimKey, Claimant, EngineConfig, LocalCall, LocalGate,
    SessionEngine, SessionUpdate, ToolDescriptor, ToolLookup, ToolRunner,
};
use serde_json::{Value, json};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ENTRIES: usize = 10_000;
const CHATS: usize = 100;
const ROUNDS: usize = 9;
const GOAL: f64 = 0.05;
const CLIENT: &str = "bench-client";
const SEED: u64 = 0x5eed_1234_abcd_0042;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// xorshift64*: deterministic, dependency-free randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }
}

#[derive(Clone)]
enum Event {
    Set(Box<SessionInputRequest>),
    Remove(String),
    Claim(ClaimKey, Claimant),
    ClaimChat(Uri, Claimant),
    Release(usize),
    Advance(Duration),
}

fn entry(value: Value) -> BenchResult<SessionInputRequest> {
    Ok(serde_json::from_value(value)?)
}

/// Entry `i` and the key an observer would claim for it.
fn make_entry(i: usize, rng: &mut Rng) -> BenchResult<(SessionInputRequest, ClaimKey)> {
    let chat = format!("ahp-chat:/bench-{}", i % CHATS);
    let turn = "turn-1";
    let call = format!("call-{i}");
    let tool_key = ClaimKey::ToolCall(ToolCallKey::new(chat.clone(), turn, call.clone()));
    let id = |kind: &str| format!("{kind}:{chat}:{turn}:{call}");
    let base = |status: &str, tool: &str| {
        json!({
            "status": status, "toolCallId": call, "toolName": tool, "displayName": tool,
            "invocationMessage": "run", "toolInput": "{\"path\":\"src/main.rs\"}"
        })
    };
    let roll = rng.below(100);
    let value = if roll < 30 {
        json!({ "kind": "toolConfirmation", "id": id("toolConfirmation"), "chat": chat,
                "turnId": turn, "toolCall": base("pending-confirmation", "shell") })
    } else if roll < 40 {
        let mut tool_call = base("pending-result-confirmation", "fetch");
        tool_call["success"] = json!(true);
        tool_call["pastTenseMessage"] = json!("fetched");
        tool_call["confirmed"] = json!("user-action");
        json!({ "kind": "toolConfirmation", "id": id("toolConfirmation"), "chat": chat,
                "turnId": turn, "toolCall": tool_call })
    } else if roll < 55 {
        let input_key = ClaimKey::Input(InputKey::new(chat.clone(), call.clone()));
        let value = json!({ "kind": "chatInput", "id": format!("chatInput:{chat}:{call}"),
                "chat": chat, "request": { "id": call, "message": "Which branch?" } });
        return Ok((entry(value)?, input_key));
    } else if roll < 60 {
        let mut tool_call = base("auth-required", "issues");
        tool_call["contributor"] = json!({ "kind": "mcp", "customizationId": "github" });
        tool_call["confirmed"] = json!("not-needed");
        tool_call["auth"] =
            json!({ "reason": "required", "resource": { "resource": "https://x" } });
        json!({ "kind": "toolAuthentication", "id": id("toolAuthentication"), "chat": chat,
                "turnId": turn, "toolCall": tool_call })
    } else {
        let tool = if roll < 85 { "search" } else { "browser" };
        let mut tool_call = base("running", tool);
        tool_call["contributor"] = json!({ "kind": "client", "clientId": CLIENT });
        tool_call["confirmed"] = json!("not-needed");
        json!({ "kind": "toolClientExecution", "id": id("toolClientExecution"), "chat": chat,
                "turnId": turn, "clientId": CLIENT, "toolCall": tool_call })
    };
    Ok((entry(value)?, tool_key))
}

/// Releases one random live claim.
fn release(events: &mut Vec<Event>, rng: &mut Rng, live: &mut Vec<usize>) {
    if !live.is_empty() {
        let index = rng.below(live.len());
        events.push(Event::Release(live.swap_remove(index)));
    }
}

/// 10 000 entries set in random order with claims and releases interleaved, a grace window
/// elapsing, then every entry removed while the remaining claims go.
fn stream() -> BenchResult<Vec<Event>> {
    let mut rng = Rng(SEED);
    let mut entries = Vec::with_capacity(ENTRIES);
    for i in 0..ENTRIES {
        entries.push(make_entry(i, &mut rng)?);
    }
    let mut events = Vec::with_capacity(ENTRIES * 4);
    let mut claims = 0usize;
    let mut live_claims: Vec<usize> = Vec::new();
    for (i, (value, key)) in entries.iter().enumerate() {
        if rng.below(100) < 40 {
            events.push(Event::Claim(
                key.clone(),
                Claimant::new(format!("view-{i}")),
            ));
            live_claims.push(claims);
            claims += 1;
        }
        if rng.below(100) < 2 {
            let chat = format!("ahp-chat:/bench-{}", rng.below(CHATS));
            events.push(Event::ClaimChat(chat, Claimant::new(format!("conn-{i}"))));
            live_claims.push(claims);
            claims += 1;
        }
        events.push(Event::Set(Box::new(value.clone())));
        if rng.below(100) < 20 {
            release(&mut events, &mut rng, &mut live_claims);
        }
    }
    events.push(Event::Advance(Duration::from_millis(5000)));
    let mut order: Vec<usize> = (0..ENTRIES).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    for i in order {
        let id = entry_id(&entries[i].0).unwrap_or_default().to_owned();
        events.push(Event::Remove(id));
        if rng.below(100) < 50 {
            release(&mut events, &mut rng, &mut live_claims);
        }
    }
    while !live_claims.is_empty() {
        release(&mut events, &mut rng, &mut live_claims);
    }
    Ok(events)
}

struct CountingSink(AtomicUsize);

impl AnswerSink for CountingSink {
    fn dispatch(&self, chat: &Uri, action: StateAction) {
        black_box((chat, action));
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

struct Tools;

impl ToolRunner for Tools {
    fn lookup(&self, tool_name: &str) -> ToolLookup {
        ToolLookup::Found(ToolDescriptor {
            may_request_confirmation: tool_name == "browser",
        })
    }

    fn confirmation(&self, _call: &LocalCall) -> BoxFuture<'static, LocalGate> {
        Box::pin(async { LocalGate::NotNeeded })
    }

    fn execute(&self, call: LocalCall) -> BoxFuture<'static, ToolCallResult> {
        black_box(&call.parameters);
        Box::pin(async { text_result("Ran", "done") })
    }
}

/// What receives the events: the engine, or nothing.
trait Handler {
    fn handle(&mut self, event: Event);
}

struct Empty;

impl Handler for Empty {
    fn handle(&mut self, event: Event) {
        black_box(event);
    }
}

struct Engine {
    engine: SessionEngine,
    claims: Vec<Option<ClaimGuard>>,
}

impl Handler for Engine {
    fn handle(&mut self, event: Event) {
        match event {
            Event::Set(entry) => self.engine.apply(SessionUpdate::Set(entry)),
            Event::Remove(id) => self.engine.apply(SessionUpdate::Removed(id)),
            Event::Claim(key, who) => self.claims.push(Some(self.engine.claim(key, who))),
            Event::ClaimChat(chat, who) => {
                self.claims.push(Some(self.engine.claim_chat(chat, who)));
            }
            Event::Release(index) => {
                if let Some(slot) = self.claims.get_mut(index) {
                    slot.take();
                }
            }
            Event::Advance(_) => {}
        }
    }
}

async fn yield_many() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}

/// What one pass cost.
struct Pass {
    elapsed: Duration,
    peak: usize,
    allocations: usize,
}

/// Applies the stream; returns the elapsed time, the allocation count and the peak live heap
/// (sampled after every event when `sample`).
async fn drive(handler: &mut impl Handler, events: &[Event], sample: bool) -> Pass {
    let base = GLOBAL.stats();
    let live = || {
        let now = GLOBAL.stats();
        let allocated = now.bytes_allocated as i128 - base.bytes_allocated as i128;
        let freed = now.bytes_deallocated as i128 - base.bytes_deallocated as i128;
        let reallocated = now.bytes_reallocated as i128 - base.bytes_reallocated as i128;
        usize::try_from((allocated - freed + reallocated).max(0)).unwrap_or(0)
    };
    let mut peak = 0;
    let started = Instant::now();
    for (index, event) in events.iter().enumerate() {
        match event {
            Event::Advance(by) => {
                tokio::time::advance(*by).await;
                yield_many().await;
            }
            other => handler.handle(other.clone()),
        }
        if index % 256 == 0 {
            tokio::task::yield_now().await;
        }
        if sample {
            peak = peak.max(live());
        }
    }
    yield_many().await;
    let elapsed = started.elapsed();
    Pass {
        elapsed,
        peak,
        allocations: GLOBAL.stats().allocations - base.allocations,
    }
}

fn engine() -> BenchResult<(Engine, Arc<CountingSink>)> {
    let sink = Arc::new(CountingSink(AtomicUsize::new(0)));
    let engine = SessionEngine::new(
        EngineConfig::responder(CLIENT),
        Arc::clone(&sink) as Arc<dyn AnswerSink>,
        Arc::new(Tools),
    )?;
    Ok((
        Engine {
            engine,
            claims: Vec::new(),
        },
        sink,
    ))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn per_entry_ns(total: Duration) -> f64 {
    total.as_nanos() as f64 / ENTRIES as f64
}

fn main() -> BenchResult<()> {
    let events = stream()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    runtime.block_on(async {
        // Warm-up, and the correctness check of the stream.
        let (mut warm, sink) = engine()?;
        drive(&mut warm, &events, false).await;
        let answers = sink.0.load(Ordering::Relaxed);
        let stats = warm.engine.stats();
        if stats.entries != 0 || stats.leases != 0 || stats.timers != 0 {
            return Err(format!("the engine leaked state: {stats:?}").into());
        }
        drop(warm);
        drive(&mut Empty, &events, false).await;

        let mut anchor = Vec::with_capacity(ROUNDS);
        let mut ours = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            anchor.push(drive(&mut Empty, &events, false).await.elapsed);
            let (mut handler, _sink) = engine()?;
            ours.push(drive(&mut handler, &events, false).await.elapsed);
        }
        let anchor_pass = drive(&mut Empty, &events, true).await;
        let (mut handler, _sink) = engine()?;
        let engine_pass = drive(&mut handler, &events, true).await;
        drop(handler);
        let (anchor_peak, engine_peak) = (anchor_pass.peak, engine_pass.peak);

        let anchor = median(anchor);
        let ours = median(ours);
        let ratio = anchor.as_secs_f64() / ours.as_secs_f64();
        println!(
            "bench tool_execution_overhead: value={:.1}ns anchor={:.1}ns ratio={:.4}x goal={GOAL}x",
            per_entry_ns(ours),
            per_entry_ns(anchor),
            ratio
        );
        let overhead = per_entry_ns(ours.saturating_sub(anchor));
        println!(
            "bench tool_execution_overhead_per_entry_ns: value={}",
            overhead.round()
        );
        println!(
            "bench tool_execution_peak_memory_kib: value={}",
            engine_peak / 1024
        );
        println!(
            "bench tool_execution_baseline_peak_memory_kib: value={}",
            anchor_peak / 1024
        );
        println!(
            "bench tool_execution_memory_per_entry_bytes: value={}",
            engine_peak.saturating_sub(anchor_peak) / ENTRIES
        );
        println!(
            "bench tool_execution_allocations_per_entry: value={}",
            engine_pass
                .allocations
                .saturating_sub(anchor_pass.allocations)
                / ENTRIES
        );
        println!("bench tool_execution_answers: value={answers}");
        println!("bench tool_execution_events: value={}", events.len());
        Ok(())
    })
}

//! `sessions_100k`: the host with 100,000 stored sessions (each with its default chat and five
//! finished turns) against the same host with 1,000, measured in the same run through the real
//! binary: time from start to listening, resident memory after start, and the latency of a
//! `listSessions` page (`limit: 100`, the first page and one behind a cursor). Goals: start and
//! page latency grow less than 2×, memory less than 3×.
//!
//! `SESSIONS_100K_LARGE` sets the large count (default 100000) for a quicker local run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agenthost_protocol::ahp_types::state::Turn;
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use agenthost_store::{ChatRecord, SessionRecord, Store, TitleSource, TurnRecord};
use serde_json::json;

const ANCHOR: usize = 1_000;
const TURNS: usize = 5;
const PAGE: i64 = 100;
const PAGE_ROUNDS: u32 = 30;

/// Stores `count` sessions, each with its default chat and [`TURNS`] turns, in `data`.
fn seed(data: &Path, count: usize) {
    std::fs::create_dir_all(data).unwrap();
    let store = Store::open(data.join("agenthost.db")).unwrap();
    for n in 0..count {
        let session =
            SessionUri::with_provider("scripted", SafeId::new(format!("s{n:06}")).unwrap())
                .unwrap();
        let chat = ChatUri::default_for(&session);
        let at = format!(
            "2026-01-01T00:{:02}:{:02}.{:03}Z",
            (n / 60_000) % 60,
            (n / 1000) % 60,
            n % 1000
        );
        store
            .put_session(&SessionRecord {
                uri: session.clone(),
                provider: "scripted".to_owned(),
                title: format!("Session {n}"),
                title_source: TitleSource::Default,
                created_at: at.clone(),
                modified_at: at.clone(),
                working_directories: vec!["file:///work".to_owned()],
                read: true,
                archived: false,
                default_chat: None,
            })
            .unwrap();
        store
            .put_chat(&ChatRecord {
                uri: chat.clone(),
                session: session.clone(),
                position: 0,
                title: "Chat".to_owned(),
                title_source: TitleSource::Default,
                modified_at: at.clone(),
                origin: None,
                interactivity: None,
                read: true,
                archived: false,
                draft: None,
                config: None,
                resume_handle: None,
                subagent: false,
            })
            .unwrap();
        for t in 0..TURNS {
            let turn: Turn = serde_json::from_value(json!({
                "id": format!("t{t}"), "startedAt": at, "duration": 1000,
                "message": { "text": format!("question {t}"), "origin": { "kind": "user" } },
                "responseParts": [{ "kind": "markdown", "id": format!("p{t}"), "content": "an answer" }],
                "state": "complete"
            }))
            .unwrap();
            store
                .append_turn(&chat, &TurnRecord::new(turn), &at)
                .unwrap();
        }
    }
}

/// `VmRSS` of `pid`, in bytes.
fn resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib * 1024
}

struct Figures {
    start: Duration,
    memory: u64,
    page: Duration,
}

/// Starts `agent-host serve` on `data`, measures, stops it.
fn measure(data: &Path, root: &Path) -> Figures {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-host"))
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let start = started.elapsed();
    let url = url.trim().to_owned();
    std::thread::sleep(Duration::from_millis(200));
    let memory = resident(child.id());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let page = runtime.block_on(async {
        let connection = agenthost_client::HostConnection::connect(&url, "bench")
            .await
            .unwrap();
        let client = connection.client();
        let first: serde_json::Value = client
            .request("listSessions", json!({ "limit": PAGE }))
            .await
            .unwrap();
        let cursor = first["nextCursor"].as_str().unwrap().to_owned();
        let began = Instant::now();
        for round in 0..PAGE_ROUNDS {
            let params = if round % 2 == 0 {
                json!({ "limit": PAGE })
            } else {
                json!({ "limit": PAGE, "cursor": cursor })
            };
            let answer: serde_json::Value = client.request("listSessions", params).await.unwrap();
            assert_eq!(answer["items"].as_array().unwrap().len(), PAGE as usize);
        }
        began.elapsed() / PAGE_ROUNDS
    });
    let _ = child.kill();
    let _ = child.wait();
    Figures {
        start,
        memory,
        page,
    }
}

fn line(name: &str, value: f64, anchor: f64, unit: &str, goal: f64) {
    println!(
        "bench {name}: value={value:.1}{unit} anchor={anchor:.1}{unit} ratio={:.2}x goal={goal}x",
        value / anchor
    );
}

fn main() {
    let large: usize = std::env::var("SESSIONS_100K_LARGE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let small_data = dir.path().join("small");
    let large_data = dir.path().join("large");
    let seeding = Instant::now();
    seed(&small_data, ANCHOR);
    seed(&large_data, large);
    eprintln!(
        "seeded {ANCHOR} and {large} sessions in {:?}",
        seeding.elapsed()
    );
    let anchor = measure(&small_data, &root);
    let value = measure(&large_data, &root);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    line(
        "sessions_100k_start",
        ms(value.start),
        ms(anchor.start),
        "ms",
        2.0,
    );
    line(
        "sessions_100k_memory",
        mib(value.memory),
        mib(anchor.memory),
        "MiB",
        3.0,
    );
    line(
        "sessions_100k_page",
        ms(value.page),
        ms(anchor.page),
        "ms",
        2.0,
    );
}

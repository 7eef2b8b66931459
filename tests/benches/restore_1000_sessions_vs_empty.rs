//! `restore_1000_sessions_vs_empty`: how much a full session database slows the start of
//! `agent-host serve`.
//!
//! A data directory is filled through `agenthost_store::Store` with 1 000 sessions of 20
//! completed turns each, shaped like the host's own rows (the session, its default chat at
//! `ChatUri::default_for`, turns with reasoning, markdown, a completed tool call and usage, the
//! agent's resume handle, the `serverSeq` high-water mark). Then the release `agent-host` binary
//! is started `RUNS` times on it, alternating with starts on a fresh empty data directory (where
//! it creates the database). The measure is the wall time from spawning the process to its first
//! stdout line (the URL, printed once it serves): process start is what is measured, so the host
//! runs as a child process, never in-process.
//!
//! ratio = empty / full (medians); goal 0.5x: a full database may at most double the start.
//! The empty start includes creating the database; the median start on an existing database
//! without sessions is printed on stderr for context.
//! `restore_rss_delta_mb` is the median resident-set difference (`VmRSS` of `/proc/<pid>/status`
//! read right after the URL line) between the two servers, in MB, clamped at 0 (a pure count;
//! goal ≤ 40, printed on stderr since the bench line format has no goal for counts).
//!
//! The binary: `cargo bench` builds the targets of this package only, never another package's
//! binaries, so the benchmark runs `cargo build --release -p agenthost --bin agent-host` itself
//! (a no-op when it is up to date) and takes `agent-host` from the profile directory it runs in.
//! That is safe under `cargo bench`, which has released its build lock when it runs the bench
//! executable. `cargo test --benches` runs the executable without `--bench`: then it only builds
//! a small data set, checks it reads back, and exits (no nested cargo, no long run).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agenthost_protocol::ahp_types::state::Turn;
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use agenthost_store::{ChatRecord, SessionRecord, Store, TitleSource, TurnRecord};
use serde_json::json;

const NAME: &str = "restore_1000_sessions_vs_empty";
const SESSIONS: usize = 1_000;
const TURNS: usize = 20;
/// Timed starts of each kind.
const RUNS: usize = 15;
const GOAL: f64 = 0.5;
const RSS_GOAL_MB: f64 = 40.0;
/// The longest a start may take before the benchmark gives up.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// `2026-01-01T00:00:00.000Z` plus `seconds`, in the host's fixed-width format.
fn timestamp(seconds: usize) -> String {
    let (hours, rest) = (seconds / 3600, seconds % 3600);
    let (day, hour) = (1 + hours / 24, hours % 24);
    format!(
        "2026-01-{day:02}T{hour:02}:{:02}:{:02}.000Z",
        rest / 60,
        rest % 60
    )
}

/// A completed turn as the host stores it: reasoning, text, a tool call, more text, usage.
fn turn(session: usize, number: usize, started_at: &str) -> Result<Turn, String> {
    let n = number + 1;
    serde_json::from_value(json!({
        "id": format!("turn-{session}-{n}"),
        "startedAt": started_at,
        "duration": 1_250 + number,
        "message": {
            "text": format!("Request {n} of session {session}: please look at the build and fix what fails."),
            "origin": { "kind": "user" }
        },
        "responseParts": [
            { "kind": "reasoning", "id": format!("reasoning-{n}-1"),
              "content": "The user wants the build fixed. I will look up the failing step first, then explain the change." },
            { "kind": "markdown", "id": format!("md-{n}-1"),
              "content": format!("Looking at the build of session {session}. The failing step is the integration test suite; here is what I found after reading its output carefully.") },
            { "kind": "toolCall", "toolCall": {
                "status": "completed", "toolCallId": format!("tool-{n}-1"), "toolName": "read_file",
                "displayName": "Read file", "invocationMessage": "Read `build.log`",
                "toolInput": "{\"path\":\"build.log\"}", "success": true,
                "pastTenseMessage": "Read `build.log`",
                "content": [{ "type": "text", "text": "error: test failed, to rerun pass `-p app --test integration`" }],
                "confirmed": "not-needed" } },
            { "kind": "markdown", "id": format!("md-{n}-2"),
              "content": "The integration test expects the old configuration path. I updated the test fixture to the new path; the suite passes again." }
        ],
        "usage": { "inputTokens": 1_800 + number, "outputTokens": 240, "model": "scripted-1" },
        "state": "complete"
    }))
    .map_err(|e| format!("the turn template does not decode: {e}"))
}

/// Fills `data_dir` with `sessions` sessions of `turns` turns each, through the store's API.
fn build_data_dir(data_dir: &Path, sessions: usize, turns: usize) -> Result<(), String> {
    std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let store = Store::open(data_dir.join("agenthost.db")).map_err(|e| e.to_string())?;
    let fail = |e: agenthost_store::StoreError| e.to_string();
    for s in 0..sessions {
        let id = SafeId::new(format!("bench-{s:04}")).map_err(|e| e.to_string())?;
        let uri = SessionUri::with_provider("scripted", id).map_err(|e| e.to_string())?;
        let chat = ChatUri::default_for(&uri);
        let created = timestamp(s * (turns + 1));
        store
            .put_session(&SessionRecord {
                uri: uri.clone(),
                provider: "scripted".into(),
                title: "New session".into(),
                title_source: TitleSource::Default,
                created_at: created.clone(),
                modified_at: created.clone(),
                working_directories: vec!["file:///home/user/src/app".into()],
                read: false,
                archived: false,
                default_chat: Some(chat.clone()),
            })
            .map_err(fail)?;
        store
            .put_chat(&ChatRecord {
                uri: chat.clone(),
                session: uri.clone(),
                position: 0,
                title: "New chat".into(),
                title_source: TitleSource::Default,
                modified_at: created,
                origin: None,
                interactivity: None,
                read: false,
                archived: false,
                draft: None,
                config: None,
                resume_handle: None,
                subagent: false,
            })
            .map_err(fail)?;
        for t in 0..turns {
            let at = timestamp(s * (turns + 1) + t + 1);
            let turn = turn(s, t, &at)?;
            let mut record = TurnRecord::new(turn);
            record.usage = record.turn.usage.clone();
            store.append_turn(&chat, &record, &at).map_err(fail)?;
        }
        store
            .set_resume_handle(&chat, Some(&json!({ "turnsRun": turns })))
            .map_err(fail)?;
    }
    store.raise_server_seq_high_water(1_000_000).map_err(fail)?;
    let stored = store.sessions().map_err(fail)?.len();
    if stored != sessions {
        return Err(format!("{stored} sessions stored, not {sessions}"));
    }
    Ok(())
}

/// Builds the release `agent-host` (a no-op when up to date) and returns its path: the profile
/// directory this benchmark runs from (`target/release/deps/<bench>` → `target/release`).
fn host_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this benchmark: {e}"))?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("unexpected benchmark location {}", exe.display()))?;
    let binary = profile_dir.join(format!("agent-host{}", std::env::consts::EXE_SUFFIX));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    eprintln!("{NAME}: cargo build --release -p agenthost --bin agent-host");
    let status = Command::new(&cargo)
        .args([
            "build",
            "--release",
            "-p",
            "agenthost",
            "--bin",
            "agent-host",
        ])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| {
            format!(
                "cannot run cargo ({}): {e}; build the host first with `cargo build --release -p \
                 agenthost`",
                Path::new(&cargo).display()
            )
        })?;
    if !status.success() {
        return Err(format!(
            "`cargo build --release -p agenthost --bin agent-host` failed ({status}); fix the \
             build (or run it yourself) before benchmarking"
        ));
    }
    if !binary.is_file() {
        return Err(format!(
            "{} is missing: run `cargo build --release -p agenthost` first (the benchmark looks \
             for the host binary next to its own profile directory)",
            binary.display()
        ));
    }
    Ok(binary)
}

/// A started host: how long it took to print its URL and its resident set then.
struct Start {
    elapsed: Duration,
    rss_kib: u64,
}

/// Kills and reaps the child when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rss_kib(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no VmRSS in /proc/{pid}/status"))
}

fn start(binary: &Path, data_dir: &Path, root: &Path) -> Result<Start, String> {
    let begin = Instant::now();
    let child = Command::new(binary)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token",
            "bench-token",
            "--root",
        ])
        .arg(root)
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let mut child = Reaped(child);
    let stdout = child.0.stdout.take().ok_or("no stdout pipe")?;
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line).map(|_| line);
        let _ = sender.send(read);
    });
    let line = lines.recv_timeout(START_DEADLINE);
    let elapsed = begin.elapsed();
    let failure = |what: String, child: &mut Reaped| {
        let _ = child.0.kill();
        let mut stderr = String::new();
        if let Some(mut pipe) = child.0.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        format!(
            "agent-host on {}: {what}; stderr:\n{stderr}",
            data_dir.display()
        )
    };
    match line {
        Ok(Ok(line)) if line.starts_with("ws://") => {}
        Ok(Ok(line)) => return Err(failure(format!("first line {line:?}"), &mut child)),
        Ok(Err(e)) => return Err(failure(format!("stdout: {e}"), &mut child)),
        Err(_) => {
            return Err(failure(
                format!("no URL within {START_DEADLINE:?}"),
                &mut child,
            ));
        }
    }
    let rss_kib = rss_kib(child.0.id())?;
    Ok(Start { elapsed, rss_kib })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

fn run() -> Result<(), String> {
    let binary = host_binary()?;
    let dir =
        tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let root = dir.path().join("work");
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    let full = dir.path().join("full");
    let built = Instant::now();
    build_data_dir(&full, SESSIONS, TURNS)?;
    let size: u64 = std::fs::read_dir(&full)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    eprintln!(
        "{NAME}: {SESSIONS} sessions × {TURNS} turns written in {:.1} s ({:.1} MB on disk)",
        built.elapsed().as_secs_f64(),
        size as f64 / 1e6
    );

    // Warm-up (page cache, binary), untimed.
    start(&binary, &full, &root)?;
    start(&binary, &dir.path().join("empty-warm-up"), &root)?;

    // For context only: a database that exists but holds no session (the warm-up made it).
    let no_sessions = dir.path().join("empty-warm-up");
    let (mut full_ms, mut empty_ms, mut rss_delta) = (Vec::new(), Vec::new(), Vec::new());
    let mut no_sessions_ms = Vec::new();
    for run in 0..RUNS {
        let with_sessions = start(&binary, &full, &root)?;
        let empty = start(&binary, &dir.path().join(format!("empty-{run}")), &root)?;
        let existing = start(&binary, &no_sessions, &root)?;
        full_ms.push(with_sessions.elapsed.as_secs_f64() * 1000.0);
        empty_ms.push(empty.elapsed.as_secs_f64() * 1000.0);
        no_sessions_ms.push(existing.elapsed.as_secs_f64() * 1000.0);
        rss_delta.push((with_sessions.rss_kib as f64 - empty.rss_kib as f64) / 1024.0);
    }
    let full_median = median(&mut full_ms);
    let empty_median = median(&mut empty_ms);
    let no_sessions_median = median(&mut no_sessions_ms);
    let delta = median(&mut rss_delta);
    eprintln!(
        "{NAME}: start to URL, median of {RUNS}: {full_median:.2} ms with {SESSIONS} sessions, \
         {empty_median:.2} ms on an empty data directory (the database is created), \
         {no_sessions_median:.2} ms on an existing database without sessions (min {:.2} / {:.2} \
         / {:.2} ms)",
        full_ms[0], empty_ms[0], no_sessions_ms[0]
    );
    eprintln!(
        "restore_rss_delta_mb: {delta:+.1} MB resident with {SESSIONS} sessions vs empty \
         (goal ≤ {RSS_GOAL_MB}{})",
        if delta > RSS_GOAL_MB {
            "; ABOVE GOAL"
        } else {
            ""
        }
    );
    println!(
        "bench {NAME}: value={full_median:.2}ms anchor={empty_median:.2}ms ratio={:.3}x goal={GOAL}x",
        empty_median / full_median
    );
    println!("bench restore_rss_delta_mb: value={:.1}", delta.max(0.0));
    Ok(())
}

/// Under `cargo test --benches`: the data set builds and reads back; nothing else.
fn smoke() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    build_data_dir(dir.path(), 3, 2)?;
    eprintln!("{NAME}: data set ok (run it with `cargo xtask bench {NAME}`)");
    Ok(())
}

fn main() -> ExitCode {
    let benchmarking = std::env::args().any(|arg| arg == "--bench");
    let result = if benchmarking { run() } else { smoke() };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("{NAME}: {problem}");
            ExitCode::FAILURE
        }
    }
}

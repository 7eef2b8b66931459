//! Crash consistency: a writer process is killed with SIGKILL in the middle of appending turns;
//! the database must reopen intact with every turn whose append had returned.
//!
//! The writer is this test binary itself, run as a child on one test (`child_writer`) with
//! [`CHILD_ENV`] naming the database. Outside such a child that test does nothing.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::fixtures::*;
use crate::{Store, TurnRecord};

/// Set (to the database path) in the child writer's environment.
const CHILD_ENV: &str = "AGENTHOST_STORE_CRASH_CHILD";

/// The child gives up by itself after this long, should the parent never kill it.
const CHILD_DEADLINE: Duration = Duration::from_secs(60);

/// The turn with ordinal `i`: between 12 KiB and 300 KiB, so each append spans several pages
/// and some take long enough for a kill to land while SQLite writes them.
fn turn_at(i: usize) -> TurnRecord {
    let id = format!("k{i:06}");
    let body = format!("{id} ").repeat(1_500 + (i % 7) * 6_000);
    TurnRecord {
        provider_event_id: Some(format!("evt-{i}")),
        ..TurnRecord::new(turn_with(&id, &body))
    }
}

/// The `modified_at` written with the turn of ordinal `i` (fixed width, so text order is time
/// order).
fn time_at(i: usize) -> String {
    format!(
        "2026-01-01T{:02}:{:02}:{:02}.000Z",
        i / 3600,
        (i / 60) % 60,
        i % 60
    )
}

/// The writer: appends turns until killed (or the deadline), printing `committed <id>` and
/// flushing after each append returns.
#[test]
fn child_writer() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return; // Not the child of `a_killed_writer_loses_no_completed_turn`.
    };
    let store = Store::open(Path::new(&path)).unwrap();
    if store.session(&session_uri("s1")).unwrap().is_none() {
        store.put_session(&session("s1")).unwrap();
        store.put_chat(&chat("s1", "c1", 0)).unwrap();
    }
    let c1 = chat_uri("c1");
    let first = usize::try_from(store.turn_count(&c1).unwrap()).unwrap();
    // Straight to the file descriptor: libtest's output capture does not see `io::stdout()`.
    let mut out = std::io::stdout().lock();
    // libtest's `test … ` line has no newline yet: start ours on a line of their own.
    writeln!(out).unwrap();
    let deadline = Instant::now() + CHILD_DEADLINE;
    for i in first.. {
        if Instant::now() > deadline {
            break;
        }
        let record = turn_at(i);
        store.append_turn(&c1, &record, &time_at(i)).unwrap();
        writeln!(out, "committed {}", record.turn.id).unwrap();
        out.flush().unwrap();
    }
}

/// Kills the child when dropped, so a failing parent never leaves a writer behind.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Adds the id of a `committed <id>` line to `committed`.
fn note(line: &str, committed: &mut Vec<String>) {
    if let Some(id) = line.strip_prefix("committed ") {
        committed.push(id.to_owned());
    }
}

/// How often the writer is killed (and the database reopened and checked).
const ROUNDS: usize = 5;
const ROUNDS_U32: u32 = 5;

#[test]
fn a_killed_writer_loses_no_completed_turn() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let (_dir, path) = temp_db();
    let exe = std::env::current_exe().unwrap();
    let c1 = chat_uri("c1");
    // Turns known to be durable: printed by a writer, or found after a reopen.
    let mut durable: Vec<String> = Vec::new();

    for round in 0..ROUNDS {
        let child = Command::new(&exe)
            .args(["--exact", "crash_tests::child_writer", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut child = Killed(child);
        let stdout = child.0.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let mut committed = Vec::new();

        // Let it write a while (a different amount each round), then SIGKILL it mid-stream, at
        // a different phase of an append each round.
        let target = 20 + 7 * round;
        let mut first_line = None;
        while committed.len() < target {
            let line = lines
                .next()
                .expect("the writer stopped before it was killed")
                .unwrap();
            note(&line, &mut committed);
            first_line.get_or_insert_with(Instant::now);
        }
        let per_append = first_line.map_or(Duration::ZERO, |start| start.elapsed())
            / u32::try_from(target).unwrap();
        std::thread::sleep(per_append * u32::try_from(round).unwrap() / ROUNDS_U32);
        child.0.kill().unwrap();
        let status = child.0.wait().unwrap();
        assert!(!status.success(), "the writer was killed, not finished");
        // Whatever it printed before dying had returned from `append_turn` too.
        for line in lines {
            note(&line.unwrap(), &mut committed);
        }
        durable.extend(committed);

        let store = Store::open(&path).unwrap();
        store.integrity_check().unwrap();
        let turns = store.turns(&c1).unwrap();
        let stored = ids(&turns);
        assert!(
            stored.len() >= durable.len() && stored.len() <= durable.len() + 1,
            "round {round}: {} turns reported committed, {} stored",
            durable.len(),
            stored.len()
        );
        assert_eq!(stored[..durable.len()], durable[..], "round {round}");
        // Every stored turn is complete: exactly what was appended at its position.
        for (i, record) in turns.iter().enumerate() {
            assert_eq!(record, &turn_at(i), "round {round}, turn {i}");
        }
        // The session's time moved in the same transaction as the last stored turn.
        let session = store.session(&session_uri("s1")).unwrap().unwrap();
        assert_eq!(
            session.modified_at,
            time_at(stored.len() - 1),
            "round {round}"
        );
        // A turn committed in the instant before the kill, unprinted, is durable all the same.
        durable = stored;
    }
}

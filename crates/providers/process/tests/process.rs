//! Agent processes across the process boundary: group termination (children included), the
//! stderr tail, bounded line reading. Waits poll with a deadline.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use agenthost_provider_process::{
    AgentProcess, Launch, STDERR_TAIL_BYTES, STDERR_TAIL_LINES, read_line_capped,
};
use rustix::process::{Pid, test_kill_process_group};
use tokio::io::BufReader;
use tokio::time::Instant;

fn sh(script: &str) -> Vec<String> {
    vec!["-c".to_owned(), script.to_owned()]
}

fn launch<'a>(args: &'a [String], dir: &'a Path) -> Launch<'a> {
    Launch {
        binary: Path::new("/bin/sh"),
        args,
        working_directory: dir,
        env: &[],
        env_remove: &[],
    }
}

async fn gone(pid: i32) {
    let pid = Pid::from_raw(pid).unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while test_kill_process_group(pid).is_ok() {
        assert!(Instant::now() < until, "process group {pid:?} still alive");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn terminate_stops_the_whole_group_even_when_sigterm_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    // The shell ignores SIGTERM and has a child of its own.
    let args = sh("trap '' TERM; sleep 60 & echo ready; wait");
    let spawned = AgentProcess::spawn(&launch(&args, dir.path())).unwrap();
    let mut stdout = BufReader::new(spawned.stdout);
    let mut line = Vec::new();
    read_line_capped(&mut stdout, &mut line, 100).await.unwrap();
    assert_eq!(line, b"ready");
    let pid = spawned.process.pid().unwrap();
    let status = spawned.process.terminate(Duration::from_millis(200)).await;
    assert!(status.contains("signal: 9"), "{status}");
    gone(pid).await;
}

#[tokio::test]
async fn dropping_the_handle_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let args = sh("sleep 60 & sleep 60");
    let spawned = AgentProcess::spawn(&launch(&args, dir.path())).unwrap();
    let pid = spawned.process.pid().unwrap();
    drop(spawned);
    gone(pid).await;
}

#[tokio::test]
async fn reap_reports_the_exit_status_and_stderr_keeps_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let args = sh("i=0; while [ $i -lt 50 ]; do echo \"line $i\" >&2; i=$((i+1)); done; exit 4");
    let spawned = AgentProcess::spawn(&launch(&args, dir.path())).unwrap();
    let status = spawned.process.reap(Duration::from_secs(10)).await;
    assert!(status.contains('4'), "{status}");
    let tail = spawned.process.stderr_tail(Duration::from_secs(10)).await;
    let lines: Vec<&str> = tail.lines().collect();
    assert_eq!(lines.len(), STDERR_TAIL_LINES);
    assert_eq!(lines.last(), Some(&"line 49"));
    assert_eq!(lines.first(), Some(&"line 30"));
}

#[tokio::test]
async fn an_endless_stderr_line_is_kept_within_its_byte_cap() {
    let dir = tempfile::tempdir().unwrap();
    let args = sh("head -c 100000 /dev/zero | tr '\\0' 'é' >&2; exit 0");
    let spawned = AgentProcess::spawn(&launch(&args, dir.path())).unwrap();
    spawned.process.reap(Duration::from_secs(10)).await;
    let tail = spawned.process.stderr_tail(Duration::from_secs(10)).await;
    assert!(tail.len() <= STDERR_TAIL_BYTES, "{}", tail.len());
    assert!(!tail.is_empty());
}

#[tokio::test]
async fn writing_to_a_process_that_exited_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let args = sh("exit 0");
    let spawned = AgentProcess::spawn(&launch(&args, dir.path())).unwrap();
    spawned.process.reap(Duration::from_secs(10)).await;
    spawned.process.terminate(Duration::from_millis(100)).await;
    assert!(spawned.process.write_line("{}").await.is_err());
}

#[tokio::test]
async fn a_missing_binary_fails_to_spawn() {
    let dir = tempfile::tempdir().unwrap();
    let launch = Launch {
        binary: Path::new("/nonexistent/agent"),
        args: &[],
        working_directory: dir.path(),
        env: &[],
        env_remove: &[],
    };
    assert!(AgentProcess::spawn(&launch).is_err());
}

#[tokio::test]
async fn lines_are_read_whole_up_to_the_cap_and_the_rest_is_skipped() {
    let input: &[u8] = b"short\nthis line is far too long\n\nlast without newline";
    let mut reader = BufReader::with_capacity(4, input);
    let mut read = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let consumed = read_line_capped(&mut reader, &mut line, 8).await.unwrap();
        if consumed == 0 {
            break;
        }
        read.push(String::from_utf8(line.clone()).unwrap());
    }
    assert_eq!(read, ["short", "this lin", "", "last wit"]);
}

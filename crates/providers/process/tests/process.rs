//! Agent processes across the process boundary: group termination (children included), the
//! stderr tail, bounded line reading (an endless stdout line is an error after the cap, invalid
//! UTF-8 is decoded lossily). Waits poll with a deadline.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use agenthost_provider_process::{
    AgentProcess, Launch, LineReader, STDERR_TAIL_BYTES, STDERR_TAIL_LINES, read_line_capped,
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

#[tokio::test]
async fn an_endless_stdout_line_is_an_error_at_the_cap_instead_of_a_read_that_never_ends() {
    let dir = tempfile::tempdir().unwrap();
    // One line that never ends: without the error the reader would skip bytes forever.
    let args = sh("echo first; tr '\\0' 'x' < /dev/zero");
    let spawned = AgentProcess::spawn(&launch(&args, dir.path())).unwrap();
    let pid = spawned.process.pid().unwrap();
    let cap = 1024 * 1024;
    let mut lines = LineReader::new(spawned.stdout, cap);
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("first"));
    let read = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the over-long line was read without end");
    let error = read.unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData, "{error}");
    assert!(error.to_string().contains(&cap.to_string()), "{error}");
    spawned.process.terminate(Duration::from_millis(200)).await;
    gone(pid).await;
}

#[tokio::test]
async fn a_line_of_exactly_the_cap_is_read_and_one_byte_more_is_an_error() {
    let input: &[u8] = b"12345678\n\nabc\n123456789\nnever read\n";
    let mut lines = LineReader::new(BufReader::with_capacity(3, input), 8);
    assert_eq!(
        lines.next_line().await.unwrap().as_deref(),
        Some("12345678")
    );
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("abc"));
    let error = lines.next_line().await.unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData, "{error}");
}

#[tokio::test]
async fn invalid_utf8_on_stdout_is_decoded_lossily_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let args = sh("printf 'ok \\377\\376 bytes\\n\\300\\n'");
    let spawned = AgentProcess::spawn(&launch(&args, dir.path())).unwrap();
    let mut lines = LineReader::new(spawned.stdout, 1024);
    assert_eq!(
        lines.next_line().await.unwrap().as_deref(),
        Some("ok \u{FFFD}\u{FFFD} bytes")
    );
    assert_eq!(
        lines.next_line().await.unwrap().as_deref(),
        Some("\u{FFFD}")
    );
    assert_eq!(lines.next_line().await.unwrap(), None);
    spawned.process.reap(Duration::from_secs(10)).await;
}

#[tokio::test]
async fn an_endless_stderr_line_is_drained_so_the_child_never_blocks_on_it() {
    let dir = tempfile::tempdir().unwrap();
    // 8 MiB on stderr without a newline, far beyond a pipe's buffer, then a normal exit.
    let args = sh("head -c 8388608 /dev/zero >&2; echo done");
    let spawned = AgentProcess::spawn(&launch(&args, dir.path())).unwrap();
    let mut lines = LineReader::new(spawned.stdout, 1024);
    let read = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the child blocked writing stderr");
    assert_eq!(read.unwrap().as_deref(), Some("done"));
    let status = spawned.process.reap(Duration::from_secs(10)).await;
    assert!(status.contains('0'), "{status}");
}

/// An executable still open for writing (a package manager replacing the CLI, or a fork in
/// another thread that inherited the descriptor of a file just written) is busy: the start
/// waits for it briefly instead of failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_waits_for_an_executable_that_is_still_being_written() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("fake-cli");
    let mut file = std::fs::File::create(&binary).unwrap();
    file.write_all(b"#!/bin/sh\necho started\n").unwrap();
    file.flush().unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Still open for writing: exec fails with ETXTBSY until the writer lets go.
    let busy = std::process::Command::new(&binary).output().unwrap_err();
    assert_eq!(
        busy.kind(),
        std::io::ErrorKind::ExecutableFileBusy,
        "{busy}"
    );
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        drop(file);
    });
    let spawned = AgentProcess::spawn(&Launch {
        binary: &binary,
        args: &[],
        working_directory: dir.path(),
        env: &[],
        env_remove: &[],
    })
    .unwrap();
    writer.join().unwrap();
    let mut reader = BufReader::new(spawned.stdout);
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut reader, &mut line)
        .await
        .unwrap();
    assert_eq!(line, "started\n");
    spawned.process.reap(Duration::from_secs(10)).await;
}

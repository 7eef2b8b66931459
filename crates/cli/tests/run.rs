//! `agent-host run` as a user runs it: the real binary, stdin and stdout pipes (so the output is
//! the plain, parseable kind), the scripted agent in a git repository, a host started in the
//! process. Waits poll with a deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::agent_host;

const DEADLINE: Duration = Duration::from_secs(60);

fn repository(dir: &Path) {
    std::fs::write(dir.join("readme.txt"), "hello\n").unwrap();
    for args in [
        &["init", "--quiet", "-b", "main"][..],
        &["add", "-A"],
        &["commit", "--quiet", "-m", "seed"],
    ] {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@invalid"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// Waits for `child` within [`DEADLINE`] (killing it after) and returns status, stdout, stderr.
fn finish(mut child: Child) -> (std::process::ExitStatus, String, String) {
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("agent-host run did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status, stdout, stderr)
}

/// Runs `command` with `stdin` typed into a pipe; returns status, stdout, stderr.
fn typed_into(mut command: Command, stdin: &str) -> (std::process::ExitStatus, String, String) {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    finish(child)
}

fn run(tmp: &Path, extra: &[&str], stdin: &str) -> (std::process::ExitStatus, String, String) {
    let work = tmp.join("work");
    std::fs::create_dir_all(&work).unwrap();
    repository(&work);
    let script = tmp.join("script.json");
    std::fs::write(
        &script,
        json!({ "turns": [{ "steps": [
            { "kind": "say", "text": "I will edit the readme.", "chunk": 64 },
            { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
              "effect": { "kind": "writeFile", "path": "readme.txt", "content": "hello\nagain\n" } },
            { "kind": "say", "text": "Done.", "chunk": 64 }
        ]}]})
        .to_string(),
    )
    .unwrap();
    let mut command = agent_host();
    command
        .args(["run", "--provider", "scripted", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(&work)
        .arg("--data-dir")
        .arg(tmp.join("data"))
        .args(extra)
        .arg("edit the readme")
        .env_remove("NO_COLOR");
    typed_into(command, stdin)
}

/// `stdout` without its last line, which for a new session says how to go on with it: checked
/// here (its id varies).
fn without_the_session_line(stdout: &str) -> String {
    let last = stdout
        .trim_end_matches('\n')
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let (text, line) = stdout.split_at(last);
    let session = line
        .strip_prefix("session: scripted:/run-")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session line at the end: {stdout}"));
    assert_eq!(
        line,
        format!(
            "session: scripted:/run-{session} (go on with `agent-host run --session \
             scripted:/run-{session} \"…\"` or `agent-host chat --session scripted:/run-{session}`)\n"
        )
    );
    text.to_owned()
}

/// Piped, the output is plain; `--yes` approves without asking and says so; the last line
/// says how to go on with the session.
#[test]
fn yes_approves_runs_the_tool_and_lists_the_change() {
    let tmp = tempfile::tempdir().unwrap();
    let (status, stdout, stderr) = run(tmp.path(), &["--yes"], "");
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let stdout = without_the_session_line(&stdout);
    assert_eq!(
        stdout,
        "> edit the readme\nI will edit the readme.\ntool: Write file\n\
         confirm: Write `readme.txt`\nWrite `readme.txt`: approved (--yes)\n\
         done: Wrote `readme.txt`\nDone.\nChanged files:\n  M readme.txt (+1 -0)\n",
        "a pipe gets no escape sequences; stderr:\n{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("work/readme.txt")).unwrap(),
        "hello\nagain\n"
    );
}

/// Without a terminal to ask on, a confirmation is denied and the output says why — also when
/// the pipe carries a `y`; `--no` denies the same way.
#[test]
fn without_a_terminal_confirmations_are_denied_saying_so() {
    for (flags, said) in [
        (
            &[][..],
            "denied (no terminal to ask on; --yes approves, --no denies without asking)",
        ),
        (&["--no"][..], "denied (--no)"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (status, stdout, _) = run(tmp.path(), flags, "y\n");
        assert!(status.success());
        let stdout = without_the_session_line(&stdout);
        assert!(
            stdout.contains(&format!("Write `readme.txt`: {said}\n")),
            "{stdout}"
        );
        assert!(!stdout.contains("[y/N"), "{stdout}");
        assert!(stdout.ends_with("No files changed.\n"), "{stdout}");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("work/readme.txt")).unwrap(),
            "hello\n"
        );
    }
}

#[test]
fn a_missing_agent_cli_names_its_npm_package() {
    let tmp = tempfile::tempdir().unwrap();
    let mut command = agent_host();
    command
        .args([
            "run",
            "--provider",
            "codex",
            "--codex-bin",
            "/nonexistent/codex",
        ])
        .arg("--cwd")
        .arg(tmp.path())
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .arg("hello")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (status, _, stderr) = finish(command.spawn().unwrap());
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("npm install -g @openai/codex"), "{stderr}");
}

#[test]
fn an_unreachable_host_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    // Port 1, below the ephemeral range: a port freed by a listener of this test could be handed
    // to another test's host (port 0) running in parallel, which would then answer.
    let mut command = agent_host();
    command
        .args(["run", "--provider", "scripted", "--connect"])
        .arg("ws://127.0.0.1:1/?tkn=secret-token")
        .arg("--cwd")
        .arg(tmp.path())
        .arg("hello")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (status, _, stderr) = finish(command.spawn().unwrap());
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("cannot reach the host"), "{stderr}");
    assert!(
        !stderr.contains("secret-token"),
        "the token is not printed: {stderr}"
    );
}

#[test]
fn sessions_lists_the_run_as_a_table_newest_first() {
    let tmp = tempfile::tempdir().unwrap();
    let (status, _, _) = run(tmp.path(), &["--yes"], "");
    assert!(status.success());
    let mut command = agent_host();
    command
        .arg("sessions")
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .current_dir(tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (status, stdout, stderr) = finish(command.spawn().unwrap());
    assert!(status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let header: Vec<&str> = lines[0]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "TITLE",
            "PROVIDER",
            "STATUS",
            "LAST ACTIVITY",
            "TURNS",
            "COST",
            "SESSION"
        ]
    );
    let row: Vec<&str> = lines[1]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(row[1..3], ["scripted", "idle"], "{stdout}");
    assert_eq!(row[4], "1", "{stdout}");
    // The script reports no usage: nothing was counted.
    assert_eq!(row[5], "-", "{stdout}");
    assert!(row[6].starts_with("scripted:/run-"), "{stdout}");
}

/// Runs `agent-host ARGS --data-dir DATA` with `stdin`; returns status, stdout, stderr.
fn command(data: &Path, args: &[&str], stdin: &str) -> (std::process::ExitStatus, String, String) {
    let mut command = agent_host();
    command.args(args).arg("--data-dir").arg(data);
    typed_into(command, stdin)
}

#[test]
fn diff_shows_the_turn_and_rollback_asks_then_restores_its_start() {
    let tmp = tempfile::tempdir().unwrap();
    let (status, _, _) = run(tmp.path(), &["--yes"], "");
    assert!(status.success());
    let data = tmp.path().join("data");
    let (_, listed, _) = command(&data, &["sessions", "list"], "");
    let session = listed.split('\t').next().unwrap().to_owned();
    assert!(session.starts_with("scripted:/run-"), "{listed}");

    let expected = "diff --git a/readme.txt b/readme.txt\n--- a/readme.txt\n+++ b/readme.txt\n\
                    @@ -1,1 +1,2 @@\n hello\n+again\n";
    for args in [
        vec!["diff", session.as_str()],
        vec!["diff", session.as_str(), "turn-1"],
        vec!["diff", session.as_str(), "--since", "turn-1"],
    ] {
        let (status, stdout, stderr) = command(&data, &args, "");
        assert!(status.success(), "{args:?}: {stderr}");
        assert_eq!(stdout, expected, "{args:?}");
    }
    let (status, _, stderr) = command(&data, &["diff", session.as_str(), "turn-9"], "");
    assert!(!status.success());
    assert!(stderr.contains("no completed turn \"turn-9\""), "{stderr}");

    let readme = tmp.path().join("work/readme.txt");
    let (status, stdout, _) = command(&data, &["rollback", session.as_str(), "turn-1"], "n\n");
    assert!(status.success());
    assert!(
        stdout.contains("changes 1 file(s):\n  readme.txt\n"),
        "{stdout}"
    );
    assert!(stdout.contains("Nothing was changed."), "{stdout}");
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "hello\nagain\n");

    let (status, stdout, stderr) = command(
        &data,
        &["rollback", session.as_str(), "turn-1", "--yes"],
        "",
    );
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("restored: readme.txt"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "hello\n");
}

#[test]
fn outside_a_git_repository_checkpoints_are_off_and_said_once() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("plain");
    std::fs::create_dir_all(&work).unwrap();
    let script = tmp.path().join("script.json");
    std::fs::write(
        &script,
        json!({ "turns": [{ "steps": [
            { "kind": "tool", "name": "write_file", "displayName": "Write file",
              "effect": { "kind": "writeFile", "path": "notes.txt", "content": "n\n" } },
            { "kind": "say", "text": "Done.", "chunk": 64 }
        ]}]})
        .to_string(),
    )
    .unwrap();
    let started = Instant::now();
    let mut command = agent_host();
    command
        .args(["run", "--provider", "scripted", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(&work)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .arg("write notes")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (status, stdout, stderr) = finish(command.spawn().unwrap());
    assert!(status.success(), "{stderr}");
    assert_eq!(
        stdout.matches("not a git repository").count(),
        1,
        "{stdout}"
    );
    assert!(!stdout.contains("Changed files"), "{stdout}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "no wait for a checkpoint that never comes: {:?}",
        started.elapsed()
    );
}

/// A subagent's chat is created and busy before `run` hears of it: its text and its tool calls
/// still show (indented under it), and its confirmation is still answered (`--yes`).
#[test]
fn a_subagent_busy_before_run_opens_its_chat_still_shows_its_work_and_gets_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    repository(&work);
    let script = tmp.path().join("script.json");
    std::fs::write(
        &script,
        json!({ "turns": [{ "steps": [
            { "kind": "subagent", "agent": "helper", "description": "helps", "prompt": "help",
              "steps": [
                { "kind": "say", "text": "sub work" },
                { "kind": "tool", "name": "write_file", "displayName": "Write file",
                  "confirm": true,
                  "effect": { "kind": "writeFile", "path": "sub.txt", "content": "s\n" } }
              ] },
            { "kind": "say", "text": "main done" }
        ]}]})
        .to_string(),
    )
    .unwrap();
    let mut command = agent_host();
    command
        .args(["run", "--provider", "scripted", "--yes", "--script"])
        .arg(&script)
        .arg("--cwd")
        .arg(&work)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .arg("delegate")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (status, stdout, stderr) = finish(command.spawn().unwrap());
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    let sub = stdout
        .find("    sub work")
        .unwrap_or_else(|| panic!("{stdout}"));
    let helps = stdout
        .find("  ↳ helps")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(helps < sub, "{stdout}");
    assert!(
        stdout.contains("Write `sub.txt`: approved (--yes)"),
        "{stdout}"
    );
    assert!(stdout.contains("main done"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(work.join("sub.txt")).unwrap(),
        "s\n"
    );
}

//! `agent-host chat` driven through a pipe, as a script drives it: a three-turn conversation
//! with a confirmation answered by the next line, a turn cancelled with Ctrl-C (SIGINT) and the
//! slash commands; a whole script piped at once, played a turn at a time; two chats on one
//! session over `--connect`, each seeing the other's turns; `--continue` after a host restart,
//! the agent resuming its conversation. (A line typed during a turn joining the queue is a
//! terminal's behaviour: `pty.rs`.)

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Write;
use std::path::Path;
use std::process::ChildStdin;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Place, Server, Spawned, agent_host};

const DEADLINE: Duration = Duration::from_secs(30);

/// A running `agent-host chat` with its stdin and stdout piped.
struct Chat {
    process: Spawned,
    stdin: Option<ChildStdin>,
    seen: Vec<String>,
}

impl Chat {
    fn start(dir: &Path, args: &[&str]) -> Self {
        let mut command = agent_host();
        command.arg("chat").args(args).current_dir(dir);
        let (process, stdin) = Spawned::spawn_with_stdin(command);
        Self {
            process,
            stdin: Some(stdin),
            seen: Vec::new(),
        }
    }

    /// `chat` with the scripted agent playing `script`, the data in the place's `data/`.
    fn scripted(place: &Place, script: &Path, more: &[&str]) -> Self {
        let (script, data) = (
            script.to_string_lossy().into_owned(),
            place.data.to_string_lossy().into_owned(),
        );
        let args = [
            "--provider",
            "scripted",
            "--script",
            &script,
            "--data-dir",
            &data,
        ];
        Self::start(&place.work, &[&args[..], more].concat())
    }

    fn type_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Reads lines until one contains `needle`; returns the lines read on the way.
    fn expect(&mut self, needle: &str) -> Vec<String> {
        let deadline = Instant::now() + DEADLINE;
        let mut read = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(line) = self.process.line_within(left) else {
                panic!(
                    "no line with {needle:?}; output so far:\n{}\nstderr:\n{}",
                    self.seen.join("\n"),
                    self.process.stderr()
                );
            };
            self.seen.push(line.clone());
            let found = line.contains(needle);
            read.push(line);
            if found {
                return read;
            }
        }
    }

    fn interrupt(&self) {
        let sent = std::process::Command::new("kill")
            .args(["-INT", &self.process.pid().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// Closes stdin and waits for the exit; returns the status, the rest of the output and
    /// stderr.
    fn finish(mut self) -> (std::process::ExitStatus, Vec<String>, String) {
        drop(self.stdin.take());
        let (status, rest, stderr) = self.process.wait();
        (status, rest.lines().map(str::to_owned).collect(), stderr)
    }
}

fn conversation_script() -> Value {
    json!({
        "turns": [
            { "steps": [
                { "kind": "say", "text": "reply one" },
                { "kind": "tool", "name": "shell", "displayName": "Run command", "confirm": true,
                  "input": "echo ran >> ran.log",
                  "effect": { "kind": "appendFile", "path": "ran.log", "content": "ran\n" } },
                { "kind": "usage", "input": 1000, "output": 100, "model": "claude-sonnet-4-5" },
                { "kind": "say", "text": "after the tool" }
            ] },
            { "steps": [ { "kind": "say", "text": "starting a long one\n" }, { "kind": "pause", "ms": 60000 } ] },
            { "steps": [ { "kind": "say", "text": "reply three" } ] }
        ],
        "default": { "steps": [ { "kind": "echo" } ] }
    })
}

#[test]
fn a_conversation_with_a_confirmation_a_cancel_and_the_slash_commands() {
    let place = Place::with_repository();
    let script = place.script(&conversation_script());
    let work = place.work.to_string_lossy().into_owned();
    let mut chat = Chat::scripted(&place, &script, &["--cwd", &work]);
    let opening = chat.expect("chat with scripted in");
    assert!(
        opening.last().unwrap().contains("(scripted:/run-"),
        "{opening:?}"
    );
    chat.type_line("first");
    chat.expect("> first");
    chat.expect("reply one");
    chat.expect("approve");
    chat.type_line("y");
    chat.expect("after the tool");
    chat.expect("cost: $0.0045");
    assert_eq!(
        std::fs::read_to_string(place.work.join("ran.log")).unwrap(),
        "ran\n"
    );
    chat.type_line("/diff");
    chat.expect("+ran");
    chat.type_line("/rollback turn-1");
    chat.expect("removed: ran.log");
    assert!(!place.work.join("ran.log").exists());

    chat.type_line("second");
    chat.expect("starting a long one");
    chat.interrupt();
    chat.expect("cancelling the turn");
    chat.expect("cancelled");

    chat.type_line("third");
    chat.expect("reply three");
    chat.type_line("/usage");
    chat.expect("last turn: no usage reported");
    chat.expect("session so far: $0.0045");
    chat.type_line("/diff");
    chat.expect("no changes");
    chat.type_line("/model");
    chat.expect("model: the agent's default");
    chat.type_line("/model claude-sonnet-4-5");
    chat.expect("model: claude-sonnet-4-5 (from the next turn on)");
    chat.type_line("/rollback");
    chat.expect("usage: /rollback TURN (this chat's turns: turn-1, turn-2, turn-3)");
    chat.type_line("/help");
    chat.expect("/quit");
    // Other commands go to the host, whose local commands answer as for every client.
    chat.type_line("/rename The readme chat");
    chat.expect("Renamed this chat to “The readme chat”.");
    chat.type_line("/quit");
    let (status, rest, stderr) = chat.finish();
    assert!(status.success(), "{stderr}");
    assert!(
        rest.iter()
            .any(|l| l.starts_with("session: scripted:/run-")),
        "{rest:?}"
    );
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "{stderr}"
    );
    // The title is the session's, kept in its data directory.
    let mut command = agent_host();
    command
        .args(["sessions", "--json", "--data-dir"])
        .arg(&place.data);
    let (status, stdout, stderr) = Spawned::spawn(command).wait();
    assert!(status.success(), "{stderr}");
    let sessions: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(sessions[0]["title"], "The readme chat", "{stdout}");
}

#[test]
fn a_script_piped_at_once_is_played_a_turn_at_a_time() {
    let place = Place::with_repository();
    let script = place.script(&json!({
        "turns": [
            { "steps": [
                { "kind": "say", "text": "one" },
                { "kind": "pause", "ms": 300 },
                { "kind": "tool", "name": "shell", "displayName": "Run command", "confirm": true,
                  "input": "echo ran >> ran.log",
                  "effect": { "kind": "appendFile", "path": "ran.log", "content": "ran\n" } },
                { "kind": "say", "text": "one done" }
            ] },
            { "steps": [ { "kind": "say", "text": "two done" } ] }
        ]
    }));
    let mut chat = Chat::scripted(&place, &script, &[]);
    // Everything at once: the `y` waits for the question, the second message for the turn's
    // end, `/quit` for the second turn's.
    for line in ["first", "y", "second", "/quit"] {
        chat.type_line(line);
    }
    let (status, rest, stderr) = chat.finish();
    assert!(status.success(), "{stderr}");
    let text = rest.join("\n");
    let order: Vec<usize> = [
        "> first",
        "approve",
        "approved",
        "one done",
        "> second",
        "two done",
        "session: ",
    ]
    .iter()
    .map(|needle| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in:\n{text}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(!text.contains("queued:"), "{text}");
    assert_eq!(
        std::fs::read_to_string(place.work.join("ran.log")).unwrap(),
        "ran\n"
    );
}

#[test]
fn two_chats_over_connect_see_each_other_and_continue_after_a_restart() {
    let place = Place::with_repository();
    let script = place.script(&json!({
        "turns": [
            { "steps": [ { "kind": "say", "text": "reply one" } ] },
            { "steps": [ { "kind": "say", "text": "reply two" } ] },
            { "steps": [ { "kind": "say", "text": "reply three" } ] }
        ]
    }));
    let server = Server::start(&place, Some(&script));
    let url = server.url.clone();
    let mut first = Chat::start(&place.work, &["--connect", &url, "--provider", "scripted"]);
    let opening = first.expect("chat with scripted in").pop().unwrap();
    let session = opening
        .rsplit_once('(')
        .unwrap()
        .1
        .trim_end_matches(')')
        .to_owned();
    first.type_line("hello from the first");
    first.expect("reply one");
    let mut second = Chat::start(&place.work, &["--connect", &url, "--session", &session]);
    second.expect(&format!("continuing hello from the first ({session})"));
    // One types, the other sees the turn and its answer.
    first.type_line("again from the first");
    first.expect("reply two");
    second.expect("> again from the first");
    second.expect("reply two");
    second.type_line("now from the second");
    second.expect("reply three");
    first.expect("> now from the second");
    first.expect("reply three");
    first.type_line("/quit");
    second.type_line("/quit");
    for chat in [first, second] {
        let (status, _, stderr) = chat.finish();
        assert!(status.success(), "{stderr}");
    }

    // The host restarts; --continue finds the session, and its agent resumes its conversation.
    server.stop_cleanly();
    let server = Server::start(&place, Some(&script));
    let mut again = Chat::start(&place.work, &["--connect", &server.url, "--continue"]);
    again.expect(&format!("({session})"));
    again.type_line("and after the restart");
    // The scripted agent goes on with its script: its three turns were run, so the fourth
    // echoes (a fresh one would say "reply one").
    again.expect("> and after the restart");
    let answer = again.expect("and after the restart");
    assert!(
        answer
            .last()
            .unwrap()
            .contains("You said: and after the restart"),
        "{answer:?}"
    );
    again.type_line("/quit");
    let (status, rest, stderr) = again.finish();
    assert!(status.success(), "{stderr}");
    assert!(rest.iter().any(|l| l.contains(&session)), "{rest:?}");
    server.kill();
}

//! Conversations from the shell, through the real binary: `run --continue` and `run --session`
//! send follow-ups to an existing session — in a host of their own over the data directory, and
//! over `--connect` across a host restart — whose agent resumes its own conversation (the
//! scripted agent continues its script where the session left it; Claude Code against the
//! loopback mock model, whose request log shows the next turn carrying the first); `sessions --json`;
//! `sessions archive|unarchive|rename` through the protocol; `completions`; and the clear
//! refusals of a session or chat that is not there.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use support::{Place, Server, Spawned, agent_host};

/// Each turn says which one it is: a restored session that resumes its conversation says the
/// next number.
fn script() -> Value {
    json!({
        "turns": [
            { "steps": [ { "kind": "say", "text": "reply one" } ] },
            { "steps": [ { "kind": "say", "text": "reply two" } ] },
            { "steps": [ { "kind": "say", "text": "reply three" } ] },
            { "steps": [ { "kind": "say", "text": "reply four" } ] }
        ],
        "default": { "steps": [ { "kind": "echo" } ] }
    })
}

/// `agent-host ARGS` in `dir` to its end: status, stdout, stderr.
fn agent_host_in(dir: &Path, args: &[&str]) -> (std::process::ExitStatus, String, String) {
    let mut command = agent_host();
    command.args(args).current_dir(dir).stdin(Stdio::null());
    Spawned::spawn(command).wait()
}

/// The session URI `run` printed in `sessions --json`'s first entry.
fn sessions_json(dir: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["sessions", "--json"];
    all.extend_from_slice(args);
    let (status, stdout, stderr) = agent_host_in(dir, &all);
    assert!(status.success(), "{stderr}");
    serde_json::from_str::<Value>(&stdout)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn run_continue_and_session_follow_up_in_a_host_of_their_own() {
    let place = Place::with_repository();
    let script = place.script(&script());
    let (script, data, work) = (
        script.to_string_lossy().into_owned(),
        place.data.to_string_lossy().into_owned(),
        place.work.to_string_lossy().into_owned(),
    );
    let common = ["--script", script.as_str(), "--data-dir", data.as_str()];
    let run = |extra: &[&str], prompt: &str| {
        let mut args = vec!["run"];
        args.extend_from_slice(&common);
        args.extend_from_slice(extra);
        args.push(prompt);
        agent_host_in(&place.work, &args)
    };

    // Nothing to continue yet.
    let (status, _, stderr) = run(&["--continue"], "too early");
    assert!(!status.success());
    assert!(
        stderr.contains("--continue: no session works in"),
        "{stderr}"
    );

    let (status, stdout, stderr) = run(&["--provider", "scripted"], "first question");
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("reply one"), "{stdout}");
    let sessions = sessions_json(&place.work, &["--data-dir", &data]);
    assert_eq!(sessions.len(), 1);
    let uri = sessions[0]["resource"].as_str().unwrap().to_owned();
    assert_eq!(sessions[0]["title"], "first question");

    // --continue: the same session, its agent on its second turn.
    let (status, stdout, stderr) = run(&["--continue"], "second question");
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("continuing first question ({uri})")),
        "{stdout}"
    );
    assert!(stdout.contains("reply two"), "{stdout}");

    // --session from another folder: the session's own folder and agent.
    let elsewhere = place.base.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let mut args = vec!["run"];
    args.extend_from_slice(&common);
    args.extend_from_slice(&["--session", &uri, "third question"]);
    let (status, stdout, stderr) = agent_host_in(&elsewhere, &args);
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("reply three"), "{stdout}");

    // Still one session, with three turns in its default chat.
    let sessions = sessions_json(&place.work, &["--data-dir", &data]);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let (status, table, stderr) = agent_host_in(&place.work, &["sessions", "--data-dir", &data]);
    assert!(status.success(), "{stderr}");
    let row = table.lines().find(|l| l.contains(&uri)).unwrap();
    assert!(row.contains("  3  "), "three turns: {table}");

    // Clear refusals.
    let (status, _, stderr) = run(&["--session", "scripted:/not-there"], "hello");
    assert!(!status.success());
    assert!(
        stderr.contains("no session scripted:/not-there in"),
        "{stderr}"
    );
    let (status, _, stderr) = run(&["--session", "not a uri"], "hello");
    assert!(!status.success());
    assert!(stderr.contains("not a session URI"), "{stderr}");
    let (status, _, stderr) = run(&["--chat", "ahp-chat:/x"], "hello");
    assert!(!status.success());
    assert!(
        stderr.contains("give --session URI or --continue"),
        "{stderr}"
    );
    let (status, _, stderr) = run(&["--continue", "--provider", "claude"], "hello");
    assert!(!status.success());
    assert!(stderr.contains("runs scripted, not claude"), "{stderr}");
    let (status, _, stderr) = run(&["--session", &uri, "--chat", "ahp-chat:/other"], "hello");
    assert!(!status.success());
    assert!(stderr.contains("has no chat ahp-chat:/other"), "{stderr}");
    // Nothing of it reached the session.
    let (_, table, _) = agent_host_in(&place.work, &["sessions", "--data-dir", &data]);
    assert!(
        table
            .lines()
            .find(|l| l.contains(&uri))
            .unwrap()
            .contains("  3  "),
        "{table}"
    );
    let _ = work;
}

#[test]
fn over_connect_a_session_is_continued_across_a_restart_and_kept_from_the_shell() {
    let place = Place::with_repository();
    let script = place.script(&script());
    let server = Server::start(&place, Some(&script));
    let url = server.url.clone();
    let run = |extra: &[&str], prompt: &str| {
        let mut args = vec!["run", "--connect", url.as_str()];
        args.extend_from_slice(extra);
        args.push(prompt);
        agent_host_in(&place.work, &args)
    };
    let (status, stdout, stderr) = run(&["--provider", "scripted"], "first question");
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("reply one"), "{stdout}");
    let (status, stdout, stderr) = run(&["--provider", "scripted"], "another session");
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("reply one"), "{stdout}");
    let sessions = sessions_json(&place.work, &["--connect", &url]);
    assert_eq!(sessions.len(), 2);
    // Newest first.
    assert_eq!(sessions[0]["title"], "another session");
    let first = sessions[1]["resource"].as_str().unwrap().to_owned();
    let second = sessions[0]["resource"].as_str().unwrap().to_owned();

    // Archive the newer one: --continue now picks the other, and the table hides it.
    let (status, stdout, stderr) = agent_host_in(
        &place.work,
        &["sessions", "archive", &second, "--connect", &url],
    );
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, format!("archived {second}\n"));
    let listed = sessions_json(&place.work, &["--connect", &url]);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        sessions_json(&place.work, &["--connect", &url, "--all"]).len(),
        2
    );
    let (status, stdout, stderr) = agent_host_in(
        &place.work,
        &[
            "sessions",
            "rename",
            &first,
            "Renamed by hand",
            "--connect",
            &url,
        ],
    );
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, format!("renamed {first} to \"Renamed by hand\"\n"));

    // The host restarts; the session, its new title and the archive flag are kept, and its
    // agent resumes its conversation at its second turn.
    server.stop_cleanly();
    let server = Server::start(&place, Some(&script));
    let url = server.url.clone();
    let (status, stdout, stderr) = agent_host_in(
        &place.work,
        &["run", "--connect", &url, "--continue", "second question"],
    );
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("continuing Renamed by hand ({first})")),
        "{stdout}"
    );
    assert!(stdout.contains("reply two"), "{stdout}");
    let listed = sessions_json(&place.work, &["--connect", &url, "--all"]);
    let archived: Vec<&Value> = listed
        .iter()
        .filter(|s| s["status"].as_u64().unwrap() & 64 != 0)
        .collect();
    assert_eq!(archived.len(), 1);
    assert_eq!(archived[0]["resource"], second.as_str());
    let (status, stdout, stderr) = agent_host_in(
        &place.work,
        &["sessions", "unarchive", &second, "--connect", &url],
    );
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, format!("unarchived {second}\n"));
    assert_eq!(sessions_json(&place.work, &["--connect", &url]).len(), 2);

    // Refusals name what is wrong.
    let (status, _, stderr) = agent_host_in(
        &place.work,
        &["sessions", "rename", &first, "  ", "--connect", &url],
    );
    assert!(!status.success());
    assert!(stderr.contains("title cannot be empty"), "{stderr}");
    let (status, _, stderr) = agent_host_in(
        &place.work,
        &[
            "sessions",
            "archive",
            "scripted:/not-there",
            "--connect",
            &url,
        ],
    );
    assert!(!status.success());
    assert!(
        stderr.contains("no session scripted:/not-there on this host"),
        "{stderr}"
    );
    let mut process = server.process;
    process.terminate();
    let (exit, _, stderr) = process.wait();
    assert!(exit.success(), "{stderr}");
    assert!(!stderr.contains("ERROR"), "{stderr}");
}

#[test]
fn completions_are_generated_for_each_shell() {
    let place = Place::new();
    for (shell, marker) in [
        ("bash", "complete -F _agent__host"),
        ("zsh", "#compdef agent-host"),
        ("fish", "complete -c agent-host"),
    ] {
        let (status, stdout, stderr) = agent_host_in(&place.work, &["completions", shell]);
        assert!(status.success(), "{shell}: {stderr}");
        assert!(stdout.contains(marker), "{shell}: {stdout}");
        // The subcommands and their flags are in it.
        assert!(
            stdout.contains("sessions") && stdout.contains("--continue"),
            "{shell}"
        );
    }
    let (status, _, stderr) = agent_host_in(&place.work, &["completions", "tcsh"]);
    assert!(!status.success());
    assert!(stderr.contains("invalid value 'tcsh'"), "{stderr}");
}

/// Claude Code against the loopback mock model, through the binary: `run` makes a file (the
/// tool approved with `--yes`) and stops its host; `chat --continue`, a new host over the same
/// data directory, goes on with that session, and the model's next request carries turn 1's
/// text — Claude resumed its own conversation (the same Claude session id) instead of starting
/// a new one.
#[test]
fn chat_continue_resumes_claudes_own_conversation_after_a_restart() {
    let Some(claude) = support::real_claude() else {
        return;
    };
    let runtime = support::runtime();
    let mock = runtime
        .block_on(agenthost_testkit::MockModel::start(
            agenthost_testkit::MockModelConfig::default(),
        ))
        .unwrap();
    let place = Place::with_repository();
    let home = place.base.join("home");
    std::fs::create_dir(&home).unwrap();
    let claude_host = |args: &[&str]| {
        let mut command = agent_host();
        command
            .args(args)
            .arg("--claude-bin")
            .arg(&claude)
            .arg("--cwd")
            .arg(&place.work)
            .arg("--data-dir")
            .arg(&place.data);
        support::claude_against_the_mock(&mut command, &mock.base_url(), &home);
        command
    };
    let turn_one = "Create out.txt containing hi";
    let mut first = claude_host(&["run", "--provider", "claude", "--yes"]);
    first.arg(turn_one).stdin(Stdio::null());
    let (status, stdout, stderr) = Spawned::spawn(first).wait();
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(
        !stderr.contains(" WARN ") && !stderr.contains("ERROR"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(place.work.join("out.txt")).unwrap(),
        "hi\n"
    );
    // The model calls of the conversation (not Claude's side requests, which carry no tools).
    let conversation = || {
        mock.requests()
            .into_iter()
            .filter(agenthost_testkit::RequestRecord::is_conversation_call)
            .collect::<Vec<_>>()
    };
    let before = conversation().len();
    assert!(before >= 2, "the tool call and the final answer");

    let (chat, mut stdin) = Spawned::spawn_with_stdin(claude_host(&["chat", "--continue"]));
    std::io::Write::write_all(&mut stdin, b"Is it there?\n/quit\n").unwrap();
    drop(stdin);
    let mut chat = chat;
    let (status, stdout, stderr) = chat.wait();
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(
        !stderr.contains(" WARN ") && !stderr.contains("ERROR"),
        "{stderr}"
    );
    assert!(stdout.contains("continuing "), "{stdout}");
    assert!(stdout.contains("> Is it there?"), "{stdout}");
    let requests = conversation();
    let resumed = &requests[before..];
    assert!(!resumed.is_empty(), "turn 2 called the model");
    let claude_session = requests[0].headers.get("x-claude-code-session-id");
    assert!(claude_session.is_some(), "{:?}", requests[0].headers);
    for record in resumed {
        let seen = record.summary.to_string();
        assert!(
            seen.contains(turn_one) && seen.contains("Is it there?"),
            "the request of turn 2 carries turn 1: {seen}"
        );
        assert_eq!(
            record.headers.get("x-claude-code-session-id"),
            claude_session,
            "the same Claude session"
        );
    }
    drop(mock);
}

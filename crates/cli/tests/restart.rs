//! The real `agent-host serve` across restarts on one `--data-dir`: what a client saw complete
//! is there again after the process is killed, `serverSeq` never goes back, the agent continues
//! its conversation; `disposeSession` keeps history, `x-deleteSession` removes it; the offline
//! `agent-host sessions` commands; data directories the host must refuse without harming them.
//!
//! Each test has its own temporary root and data directory. Servers are stopped with `SIGKILL`
//! (no graceful shutdown is needed for anything to survive). Every wait polls with a deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Command;

use agenthost_protocol::ChatUri;
use agenthost_store::SCHEMA_VERSION;
use ahp::SubscriptionEvent;
use serde_json::{Value, json};

use support::{Peer, Place, Server, Spawned, agent_host, runtime, serve_command, turns_json};

/// Two turns: the first thinks, says, calls a tool (no confirmation) and reports usage; the
/// second only says something else, so a conversation that restarted from the beginning shows.
fn two_turn_script() -> Value {
    json!({ "turns": [
        { "steps": [
            { "kind": "think", "text": "Thinking about the first answer.", "chunk": 5 },
            { "kind": "say", "text": "First reply, streamed in small chunks.", "chunk": 4 },
            { "kind": "tool", "name": "lookup", "displayName": "Lookup",
              "invocation": "Look the answer up", "result": "42" },
            { "kind": "say", "text": "The answer is 42.", "chunk": 4 },
            { "kind": "usage", "input": 12, "output": 7, "model": "scripted-1" }
        ]},
        { "steps": [
            { "kind": "say", "text": "Second reply, after the restart.", "chunk": 4 }
        ]}
    ]})
}

/// A short reply for every turn.
fn reply_script() -> Value {
    json!({ "default": { "steps": [
        { "kind": "say", "text": "A short reply.", "chunk": 3 }
    ]}})
}

fn part_kinds(turn: &Value) -> Vec<String> {
    turn["responseParts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap().to_owned())
        .collect()
}

fn markdown(turn: &Value) -> String {
    turn["responseParts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "markdown")
        .map(|p| p["content"].as_str().unwrap())
        .collect()
}

fn session_removed(peer: &Peer, session: &str) -> bool {
    peer.notifications.iter().any(|event| {
        matches!(event, SubscriptionEvent::SessionRemoved(removed) if removed.session == session)
    })
}

// ─── Restart without loss ────────────────────────────────────────────────────────────────────

#[test]
fn a_completed_turn_survives_a_kill_and_the_conversation_continues() {
    let place = Place::new();
    let script = place.script(&two_turn_script());
    let rt = runtime();

    // First run: one turn to completion, as a client reduces it.
    let server = Server::start(&place, Some(&script));
    let (session, chat, first_turn, last_seen) = rt.block_on(async {
        let mut peer = Peer::connect(&server.url, "first-run").await;
        let (session, chat) = peer.create_session("restart").await;
        let mut view = peer.open_chat(&chat).await;
        let turn = peer.run_turn(&mut view, "t1", "first question").await;
        assert_eq!(
            part_kinds(&turn),
            ["reasoning", "markdown", "toolCall", "markdown"],
            "{turn}"
        );
        assert_eq!(
            markdown(&turn),
            "First reply, streamed in small chunks.The answer is 42."
        );
        assert_eq!(turn["responseParts"][2]["toolCall"]["status"], "completed");
        assert_eq!(turn["usage"]["inputTokens"], 12, "{turn}");
        assert!(peer.listed().await.contains(&session.to_string()));
        peer.drain().await;
        (session, chat, turn, peer.max_seq)
    });
    server.kill();

    // Second run on the same data directory.
    let server = Server::start(&place, Some(&script));
    rt.block_on(async {
        let mut peer = Peer::connect(&server.url, "second-run").await;
        let first_seq = peer.conn.initialized().server_seq;
        assert!(
            first_seq > last_seen,
            "initialize reports serverSeq {first_seq}, not above {last_seen} of the first run"
        );
        assert_eq!(peer.listed().await, [session.to_string()]);

        // A client coming back with the old watermark gets snapshots, restored ones included.
        let result = Peer::reconnect(
            &server.url,
            "first-run",
            last_seen,
            &[session.as_str(), chat.as_str()],
        )
        .await;
        assert_eq!(result["type"], "snapshot", "{result}");
        let snapshots = result["snapshots"].as_array().unwrap();
        let chat_snapshot = snapshots
            .iter()
            .find(|s| s["resource"] == chat.as_str())
            .unwrap_or_else(|| panic!("no snapshot of the chat: {result}"));
        assert_eq!(chat_snapshot["state"]["turns"], json!([first_turn]));
        assert!(
            snapshots.iter().any(|s| s["resource"] == session.as_str()),
            "{result}"
        );

        // Subscribing restores the default chat with the turn exactly as the client had it.
        let mut view = peer.open_chat(&ChatUri::default_for(&session)).await;
        assert_eq!(turns_json(&view), std::slice::from_ref(&first_turn));
        assert!(view.state().active_turn.is_none());

        // The agent resumes from its stored handle: the next turn plays turn 2 of the script.
        let second = peer.run_turn(&mut view, "t2", "second question").await;
        assert_eq!(markdown(&second), "Second reply, after the restart.");
        assert_eq!(second["responseParts"][0]["id"], "md-2-1", "{second}");
        assert_eq!(turns_json(&view)[0], first_turn);
        peer.drain().await;
        assert!(peer.max_seq > last_seen);
    });
    server.kill();

    // A third run has both turns.
    let server = Server::start(&place, Some(&script));
    rt.block_on(async {
        let mut peer = Peer::connect(&server.url, "third-run").await;
        let view = peer.open_chat(&chat).await;
        let turns = turns_json(&view);
        assert_eq!(turns.len(), 2, "{turns:?}");
        assert_eq!(turns[0], first_turn);
        assert_eq!(markdown(&turns[1]), "Second reply, after the restart.");
    });
}

// ─── disposeSession and x-deleteSession ──────────────────────────────────────────────────────

#[test]
fn dispose_session_keeps_the_session_and_its_history() {
    let place = Place::new();
    let script = place.script(&reply_script());
    let server = Server::start(&place, Some(&script));
    runtime().block_on(async {
        let mut peer = Peer::connect(&server.url, "client").await;
        let (session, chat) = peer.create_session("kept").await;
        let mut view = peer.open_chat(&chat).await;
        let turn = peer.run_turn(&mut view, "t1", "hello").await;

        let dispose = json!({ "channel": session.as_str() });
        let create = json!({ "channel": session.as_str(), "provider": "scripted" });
        let _: Value = peer
            .request("disposeSession", dispose.clone())
            .await
            .unwrap();
        assert!(peer.listed().await.contains(&session.to_string()));
        // The URI stays taken while the session is not live.
        let (code, message) = peer.request_error("createSession", create.clone()).await;
        assert_eq!(code, -32003, "{message}");

        // Restored on its next use, history included, and usable.
        let mut again = peer.open_chat(&chat).await;
        assert_eq!(turns_json(&again), std::slice::from_ref(&turn));
        let next = peer.run_turn(&mut again, "t2", "still there?").await;
        assert_eq!(next["state"], "complete");
        let (code, message) = peer.request_error("createSession", create).await;
        assert_eq!(code, -32003, "{message}");

        // Disposing it again (live), and once more while not live, still keeps it.
        let _: Value = peer
            .request("disposeSession", dispose.clone())
            .await
            .unwrap();
        let _: Value = peer.request("disposeSession", dispose).await.unwrap();
        assert!(peer.listed().await.contains(&session.to_string()));
        let restored = peer.open_chat(&chat).await;
        assert_eq!(turns_json(&restored).len(), 2);

        let (code, message) = peer
            .request_error(
                "disposeSession",
                json!({ "channel": "scripted:/never-created" }),
            )
            .await;
        assert_eq!(code, -32001, "{message}");
    });
}

/// `disposeSession` frees live state only: VS Code disposes sessions it still shows, so no
/// `root/sessionRemoved` may follow. The notification would arrive before the response (both go
/// through the connection's one ordered queue), so after the response it is either among the
/// received events or was never sent.
#[test]
fn dispose_session_announces_no_removal() {
    let place = Place::new();
    let script = place.script(&reply_script());
    let server = Server::start(&place, Some(&script));
    runtime().block_on(async {
        let mut peer = Peer::connect(&server.url, "client").await;
        let (session, chat) = peer.create_session("kept").await;
        let mut view = peer.open_chat(&chat).await;
        peer.run_turn(&mut view, "t1", "hello").await;
        let _: Value = peer
            .request("disposeSession", json!({ "channel": session.as_str() }))
            .await
            .unwrap();
        peer.listed().await;
        peer.drain().await;
        assert!(
            !session_removed(&peer, session.as_str()),
            "root/sessionRemoved after disposeSession: {:?}",
            peer.notifications
        );
    });
}

#[test]
fn x_delete_session_removes_the_session_for_good() {
    let place = Place::new();
    let script = place.script(&reply_script());
    let server = Server::start(&place, Some(&script));
    let (kept, deleted) = runtime().block_on(async {
        let mut peer = Peer::connect(&server.url, "client").await;
        let (kept, _) = peer.create_session("kept").await;
        let (deleted, chat) = peer.create_session("deleted").await;
        let mut view = peer.open_chat(&chat).await;
        peer.run_turn(&mut view, "t1", "hello").await;

        let _: Value = peer
            .request("x-deleteSession", json!({ "channel": deleted.as_str() }))
            .await
            .unwrap();
        peer.drain().await;
        assert!(
            session_removed(&peer, deleted.as_str()),
            "no root/sessionRemoved for {deleted}: {:?}",
            peer.notifications
        );
        assert_eq!(peer.listed().await, [kept.to_string()]);
        let (code, message) = peer
            .request_error("subscribe", json!({ "channel": chat.as_str() }))
            .await;
        assert!(code < 0, "{code} {message}");
        (kept, deleted)
    });
    server.kill();

    let server = Server::start(&place, Some(&script));
    runtime().block_on(async {
        let peer = Peer::connect(&server.url, "client").await;
        assert_eq!(peer.listed().await, [kept.to_string()]);
        let (code, message) = peer
            .request_error(
                "subscribe",
                json!({ "channel": ChatUri::default_for(&deleted).as_str() }),
            )
            .await;
        assert!(code < 0, "{code} {message}");
    });
}

// ─── agent-host sessions ─────────────────────────────────────────────────────────────────────

fn sessions(data_dir: &Path, args: &[&str]) -> (bool, String, String) {
    let mut command = agent_host();
    command
        .arg("sessions")
        .args(args)
        .arg("--data-dir")
        .arg(data_dir);
    let mut process = Spawned::spawn(command);
    let (status, stdout, stderr) = process.wait();
    (status.success(), stdout, stderr)
}

#[test]
fn sessions_list_and_delete_work_offline() {
    let place = Place::new();
    let script = place.script(&reply_script());
    let server = Server::start(&place, Some(&script));
    let (first, second) = runtime().block_on(async {
        let mut peer = Peer::connect(&server.url, "client").await;
        let (first, chat) = peer.create_session("first").await;
        let mut view = peer.open_chat(&chat).await;
        peer.run_turn(&mut view, "t1", "hello").await;
        let (second, _) = peer.create_session("second").await;
        (first, second)
    });
    server.kill();

    let (ok, stdout, stderr) = sessions(&place.data, &["list"]);
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    for (line, uri) in lines.iter().zip([&second, &first]) {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields[0], uri.as_str(), "newest first: {stdout}");
        assert_eq!(fields[1], "scripted", "{line}");
    }

    let (ok, stdout, stderr) = sessions(&place.data, &["delete", first.as_str()]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains(first.as_str()), "{stdout}");
    let (ok, stdout, _) = sessions(&place.data, &["list"]);
    assert!(ok);
    assert!(!stdout.contains(first.as_str()), "{stdout}");
    assert!(stdout.contains(second.as_str()), "{stdout}");

    // Deleting it again, or a session that never was: a failure naming it.
    for unknown in [first.as_str(), "scripted:/never-created"] {
        let (ok, _, stderr) = sessions(&place.data, &["delete", unknown]);
        assert!(!ok, "deleting {unknown} succeeded");
        assert!(stderr.contains(unknown), "{stderr}");
    }
    let (ok, _, stderr) = sessions(&place.data, &["delete", "not a uri"]);
    assert!(!ok);
    assert!(!stderr.is_empty());

    // A host started afterwards no longer has it; the other session is intact.
    let server = Server::start(&place, Some(&script));
    runtime().block_on(async {
        let peer = Peer::connect(&server.url, "client").await;
        assert_eq!(peer.listed().await, [second.to_string()]);
    });
    server.kill();

    let (ok, _, stderr) = sessions(&place.data, &["delete", second.as_str()]);
    assert!(ok, "{stderr}");
    let (ok, stdout, stderr) = sessions(&place.data, &["list"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("no sessions"), "{stdout}");
}

#[test]
fn sessions_list_without_a_database_says_so_and_creates_nothing() {
    let place = Place::new();
    let missing = place.base.join("never-created");
    let empty = place.base.join("empty");
    std::fs::create_dir(&empty).unwrap();
    for dir in [&missing, &empty] {
        let (_, stdout, stderr) = sessions(dir, &["list"]);
        let said = format!("{stdout}{stderr}");
        assert!(said.contains("no session database"), "{said}");
        assert!(said.contains(&dir.display().to_string()), "{said}");

        let (ok, _, stderr) = sessions(dir, &["delete", "scripted:/s1"]);
        assert!(!ok);
        assert!(stderr.contains("no session database"), "{stderr}");
    }
    assert!(!missing.exists(), "listing created the data directory");
    // Without --data-dir, the default one is named, with what to pass instead.
    let mut command = agent_host();
    command
        .arg("sessions")
        .env("XDG_DATA_HOME", place.base.join("xdg"));
    let (status, _, stderr) = Spawned::spawn(command).wait();
    assert!(!status.success());
    let default = place.base.join("xdg/agenthost");
    assert!(
        stderr.contains(&format!(
            "no session database in {} (expected agenthost.db); pass --data-dir, or --connect \
             to a running host",
            default.display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

// ─── Data directories the host must refuse ───────────────────────────────────────────────────

/// `serve` on `data_dir`: it must exit non-zero without printing a URL; returns its stderr.
fn serve_fails(place: &Place, data_dir: &Path) -> String {
    let mut process = Spawned::spawn(serve_command(place, data_dir, None));
    let (status, stdout, stderr) = process.wait();
    assert!(!status.success(), "serve succeeded: {stdout}");
    assert!(stdout.is_empty(), "a URL was printed: {stdout:?}");
    stderr
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_database_that_is_a_text_file_is_refused_and_left_untouched() {
    let place = Place::new();
    std::fs::create_dir(&place.data).unwrap();
    let text = b"these are my notes, not a database\n".repeat(100);
    std::fs::write(place.database(), &text).unwrap();

    let stderr = serve_fails(&place, &place.data);
    assert!(
        stderr.contains(&place.database().display().to_string()),
        "{stderr}"
    );
    assert!(stderr.contains("not an SQLite database"), "{stderr}");
    assert_eq!(std::fs::read(place.database()).unwrap(), text);
    assert_eq!(entries(&place.data), ["agenthost.db"]);
}

/// Raises the database's `PRAGMA user_version` to `version`, with the `sqlite3` shell when there
/// is one, else by writing the header field (offset 60, big-endian) after a clean close has
/// moved everything out of the WAL.
fn set_user_version(database: &Path, version: u32) -> &'static str {
    let shell = Command::new("sqlite3")
        .arg(database)
        .arg(format!("PRAGMA user_version = {version};"))
        .output();
    if let Ok(output) = shell
        && output.status.success()
    {
        return "sqlite3";
    }
    // A clean open and close checkpoints the WAL into the main file and removes it.
    drop(agenthost_store::Store::open(database).unwrap());
    let mut bytes = std::fs::read(database).unwrap();
    bytes[60..64].copy_from_slice(&version.to_be_bytes());
    std::fs::write(database, bytes).unwrap();
    "the database header"
}

#[test]
fn a_database_of_a_newer_schema_is_refused_naming_both_versions() {
    let place = Place::new();
    Server::start(&place, None).kill();
    let newer = SCHEMA_VERSION + 7;
    let how = set_user_version(&place.database(), newer);
    eprintln!("user_version raised to {newer} through {how}");
    let before = std::fs::read(place.database()).unwrap();

    let stderr = serve_fails(&place, &place.data);
    assert!(
        stderr.contains(&place.database().display().to_string()),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("schema version {newer}")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("version {SCHEMA_VERSION} ")),
        "{stderr}"
    );
    assert_eq!(std::fs::read(place.database()).unwrap(), before);

    // The offline commands refuse it the same way.
    let (ok, _, stderr) = sessions(&place.data, &["list"]);
    assert!(!ok);
    assert!(
        stderr.contains(&format!("schema version {newer}")),
        "{stderr}"
    );
    assert_eq!(std::fs::read(place.database()).unwrap(), before);
}

#[test]
fn a_read_only_data_dir_fails_clearly_and_leaves_nothing_behind() {
    use std::os::unix::fs::PermissionsExt;

    let place = Place::new();
    std::fs::create_dir(&place.data).unwrap();
    std::fs::set_permissions(&place.data, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Restores the permissions so the temporary directory can be removed.
    struct Writable<'a>(&'a Path);
    impl Drop for Writable<'_> {
        fn drop(&mut self) {
            let _ = std::fs::set_permissions(self.0, std::fs::Permissions::from_mode(0o755));
        }
    }
    let _restore = Writable(&place.data);

    let probe = place.data.join("probe");
    if std::fs::write(&probe, b"").is_ok() {
        let _ = std::fs::remove_file(&probe);
        eprintln!(
            "SKIPPED a_read_only_data_dir_fails_clearly_and_leaves_nothing_behind: this user can \
             write into a 0555 directory (root ignores directory permissions)"
        );
        return;
    }

    // The data directory itself is read-only.
    let stderr = serve_fails(&place, &place.data);
    assert!(
        stderr.contains(&place.database().display().to_string()),
        "{stderr}"
    );
    assert!(
        stderr.contains("read-only")
            || stderr.contains("write access")
            || stderr.contains("may read and write"),
        "{stderr}"
    );
    assert!(
        entries(&place.data).is_empty(),
        "{:?}",
        entries(&place.data)
    );

    // A data directory that would have to be created inside a read-only one.
    let nested = place.data.join("nested");
    let stderr = serve_fails(&place, &nested);
    assert!(stderr.contains(&nested.display().to_string()), "{stderr}");
    assert!(
        entries(&place.data).is_empty(),
        "{:?}",
        entries(&place.data)
    );
}

/// `--idle-evict-secs 1`: a session nobody watches, idle for a second, is evicted from memory
/// (logged at info); a session a client watches stays however long it is idle; the evicted one
/// comes back intact on its next subscribe.
#[test]
fn idle_sessions_are_evicted_and_come_back_intact() {
    let place = Place::new();
    let script = place.script(&reply_script());
    let mut command = serve_command(&place, &place.data, Some(&script));
    command
        .args(["--idle-evict-secs", "1"])
        .env("RUST_LOG", "warn,agenthost_service::agent=info");
    let process = Spawned::spawn(command);
    let url = process.line();
    let evicted = |session: &str| {
        process.stderr().lines().any(|l| {
            l.contains("evicted an idle session") && l.contains(&format!("session=\"{session}\""))
        })
    };
    runtime().block_on(async {
        let mut peer = Peer::connect(&url, "leaves").await;
        let (idle, chat) = peer.create_session("idle").await;
        let mut view = peer.open_chat(&chat).await;
        let turn = peer.run_turn(&mut view, "t1", "hello").await;
        peer.close().await;
        let mut watcher = Peer::connect(&url, "stays").await;
        let (watched, watched_chat) = watcher.create_session("watched").await;
        watcher.open_chat(&watched_chat).await;

        let deadline = std::time::Instant::now() + support::DEADLINE;
        while !evicted(idle.as_str()) {
            assert!(
                std::time::Instant::now() < deadline,
                "not evicted:\n{}",
                process.stderr()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        // Another two seconds idle: the watched session is never evicted.
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        assert!(!evicted(watched.as_str()), "{}", process.stderr());

        let mut back = Peer::connect(&url, "returns").await;
        assert!(back.listed().await.contains(&idle.to_string()));
        let view = back.open_chat(&chat).await;
        assert_eq!(turns_json(&view), [turn]);
        watcher.close().await;
        back.close().await;
    });
    let stderr = process.stderr();
    assert!(
        !stderr.contains(" ERROR ") && !stderr.contains(" WARN "),
        "{stderr}"
    );
}

//! Notifications as a user sets them up, through the real binary: `serve --notify-command` with
//! `--notify-arg`s (a shell appending each notification to a file) and `--notify-webhook` (a
//! loopback receiver), the delays `--notify-input-after` and `--notify-after`, and
//! `--notify-debounce`, across a restart with other settings.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use agenthost_protocol::{ChatUri, StateAction};
use agenthost_testkit::WebhookReceiver;
use serde_json::{Value, json};
use support::{DEADLINE, Peer, Place, Spawned, runtime, serve_command};

fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect()
}

/// Polls `check` until it holds or [`DEADLINE`] passes.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !check() {
        assert!(Instant::now() < deadline, "{what} within {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts turn `turn` and returns the tool call waiting for a confirmation.
async fn pending_call(peer: &mut Peer, chat: &ChatUri, turn: &str) -> String {
    peer.conn.start_turn(chat, turn, "write it").await.unwrap();
    loop {
        let envelope = peer.next_envelope().await;
        if let StateAction::ChatToolCallReady(ready) = &envelope.action
            && envelope.channel == chat.as_str()
            && ready.confirmed.is_none()
        {
            return ready.tool_call_id.clone();
        }
    }
}

/// Waits for the end of `turn`.
async fn turn_end(peer: &mut Peer, chat: &ChatUri, turn: &str) {
    loop {
        let envelope = peer.next_envelope().await;
        if envelope.channel == chat.as_str()
            && support::ends_turn(&envelope).as_deref() == Some(turn)
        {
            return;
        }
    }
}

#[test]
fn notifications_reach_a_command_and_a_webhook_after_their_delays_and_are_debounced() {
    let place = Place::new();
    let script = place.script(&json!({ "default": { "steps": [
        { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
          "effect": { "kind": "writeFile", "path": "out.txt", "content": "x\n" } },
        { "kind": "say", "text": "done" }
    ] } }));
    let log = place.base.join("events.jsonl");
    let append = format!("cat >> '{}'", log.display());
    // The receiver serves on this runtime's workers for the whole test.
    let receiving = runtime();
    let receiver = receiving
        .block_on(WebhookReceiver::start(Vec::new()))
        .unwrap();
    let url = receiver.url().to_owned();
    let serve = |delays: [&str; 3]| {
        let mut command = serve_command(&place, &place.data, Some(&script));
        command
            .args([
                "--notify-command",
                "/bin/sh",
                "--notify-arg",
                "-c",
                "--notify-arg",
            ])
            .arg(&append)
            .args(["--notify-webhook", &url])
            .args(["--notify-input-after", delays[0]])
            .args(["--notify-after", delays[1]])
            .args(["--notify-debounce", delays[2]]);
        let process = Spawned::spawn(command);
        let url = process.line();
        (process, url)
    };

    // Every turn's end is told, a confirmation left waiting is told after 200 ms, one answered
    // at once is not.
    let (server, host) = serve(["200ms", "0s", "0s"]);
    runtime().block_on(async {
        let mut peer = Peer::connect(&host, "notify-test").await;
        let (_session, chat) = peer.create_session("notified").await;
        let _view = peer.open_chat(&chat).await;
        let call = pending_call(&mut peer, &chat, "t1").await;
        eventually("the needs-input notification", || events(&log).len() == 1);
        peer.conn
            .confirm_tool(&chat, "t1", &call, true)
            .await
            .unwrap();
        turn_end(&mut peer, &chat, "t1").await;
        let call = pending_call(&mut peer, &chat, "t2").await;
        peer.conn
            .confirm_tool(&chat, "t2", &call, true)
            .await
            .unwrap();
        turn_end(&mut peer, &chat, "t2").await;
        peer.conn.close().await;
    });
    eventually("three notifications", || events(&log).len() == 3);
    let told = events(&log);
    assert_eq!(kinds(&told), ["needsInput", "turnEnded", "turnEnded"]);
    assert_eq!(
        told[0]["summary"],
        "A tool call has waited for a confirmation for 200ms"
    );
    assert_eq!(told[0]["title"], "write it");
    assert!(told[0]["session"].as_str().unwrap().ends_with("/notified"));
    assert!(
        told[1]["summary"]
            .as_str()
            .unwrap()
            .starts_with("The turn finished after")
    );
    eventually("the webhook's three", || receiver.bodies().len() == 3);
    assert_eq!(kinds(&receiver.bodies()), kinds(&told));
    server.terminate();
    let (status, _, stderr) = { server }.wait();
    assert!(status.success());
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "{stderr}"
    );

    // Short turns are not told with --notify-after 10m, and a second wait within the debounce
    // window is not told again.
    let (server, host) = serve(["100ms", "10m", "10m"]);
    runtime().block_on(async {
        let mut peer = Peer::connect(&host, "notify-test-2").await;
        let (_session, chat) = peer.create_session("debounced").await;
        let _view = peer.open_chat(&chat).await;
        for turn in ["t1", "t2"] {
            let call = pending_call(&mut peer, &chat, turn).await;
            // Past the delay, then answered.
            tokio::time::sleep(Duration::from_millis(400)).await;
            peer.conn
                .confirm_tool(&chat, turn, &call, true)
                .await
                .unwrap();
            turn_end(&mut peer, &chat, turn).await;
        }
        peer.conn.close().await;
    });
    server.terminate();
    let (status, _, stderr) = { server }.wait();
    assert!(status.success(), "{stderr}");
    let told = events(&log);
    assert_eq!(
        kinds(&told[3..]),
        ["needsInput"],
        "one wait told, the second debounced, no short turn told: {told:#?}"
    );
}

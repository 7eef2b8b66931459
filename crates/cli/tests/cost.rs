//! Cost as a user sees it, through the real binary: `serve --prices FILE`, two `run --connect`
//! (one turn with a subagent, both reporting usage call by call), `run` printing the turn's
//! cost, a restart, `sessions` with its cost column, `sessions --since` reporting spend per
//! session and provider, and the clear refusals of a bad price file or period; a budget
//! (`serve --default-budget-usd`) stopping a turn mid-way, refusing the next one across a
//! restart until a client raises it, and a tool-call cap stopping a runaway turn.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Stdio;

use agenthost_protocol::{ChatUri, SessionUri};
use serde_json::{Value, json};
use support::{Peer, Place, Server, Spawned, action_type, agent_host, runtime, serve_command};

/// $2 per million input tokens, $0.50 cached, $3 cache writes, $10 output.
const PRICES: &str = r#"
[models."test-model"]
input = 2.0
cached_input = 0.5
cache_write = 3.0
output = 10.0
source = "the test"
"#;

/// A turn whose own two calls cost $0.003 and $0.005 and whose subagent's call costs $0.0015:
/// $0.0095 in all.
fn priced_script() -> serde_json::Value {
    json!({ "default": { "steps": [
        { "kind": "usage", "input": 1000, "output": 100, "model": "test-model" },
        { "kind": "subagent", "agent": "helper", "description": "helps", "prompt": "help",
          "steps": [
            { "kind": "say", "text": "sub work" },
            { "kind": "usage", "input": 500, "output": 50, "model": "test-model" }
          ] },
        // Running totals: the second call read 1000 tokens from the cache and wrote 500.
        { "kind": "usage", "input": 3000, "output": 300, "cacheRead": 1000, "cacheWrite": 500,
          "model": "test-model" },
        { "kind": "say", "text": "main done" }
    ] } })
}

/// Runs `agent-host` with `args` to its end; returns status, stdout, stderr.
fn agent_host_with(args: &[&str], place: &Place) -> (std::process::ExitStatus, String, String) {
    let mut command = agent_host();
    command
        .args(args)
        .current_dir(&place.work)
        .stdin(Stdio::null());
    Spawned::spawn(command).wait()
}

/// `run --connect URL --provider scripted --cwd work PROMPT` to its end.
fn run_connected(
    place: &Place,
    url: &str,
    prompt: &str,
) -> (std::process::ExitStatus, String, String) {
    let work = place.work.to_string_lossy().into_owned();
    agent_host_with(
        &[
            "run",
            "--connect",
            url,
            "--provider",
            "scripted",
            "--cwd",
            &work,
            prompt,
        ],
        place,
    )
}

/// A client changes `session`'s config with `session/configChanged`.
async fn configure(peer: &Peer, session: &SessionUri, config: Value) {
    let action = json!({ "type": "session/configChanged", "config": config });
    peer.conn
        .client()
        .dispatch(session.to_string(), serde_json::from_value(action).unwrap())
        .await
        .unwrap();
}

fn write(place: &Place, name: &str, text: &str) -> String {
    let path = place.base.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn turn_costs_are_printed_kept_across_a_restart_and_reported_by_period() {
    let place = Place::new();
    let prices = write(&place, "prices.toml", PRICES);
    let script = place.script(&priced_script());
    let mut command = serve_command(&place, &place.data, Some(&script));
    command.args(["--prices", &prices]);
    let server = Spawned::spawn(command);
    let url = server.line();
    let work = place.work.to_string_lossy().into_owned();
    let run = |prompt: &str| run_connected(&place, &url, prompt);
    let (status, stdout, stderr) = run("first");
    assert!(status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("    sub work\n"), "{stdout}");
    assert!(
        stdout.contains("cost: $0.0095 (an API-equivalent estimate; 3000 tokens in, 300 out)\n"),
        "the turn's cost counts its subagent's calls:\n{stdout}"
    );
    let (status, stdout, _) = run("second");
    assert!(status.success());
    assert!(stdout.contains("cost: $0.0095"), "{stdout}");
    server.terminate();
    let (status, _, stderr) = { server }.wait();
    assert!(status.success(), "{stderr}");
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "{stderr}"
    );

    // A new host process restores the totals from the ledger.
    let server = Server::start(&place, Some(&script));
    let (status, table, stderr) = agent_host_with(&["sessions", "--connect", &server.url], &place);
    assert!(status.success(), "{stderr}");
    let header = table.lines().next().unwrap();
    assert!(header.contains("COST"), "{table}");
    let costs: Vec<&str> = table
        .lines()
        .skip(1)
        .filter(|line| line.contains("$0.0095"))
        .collect();
    assert_eq!(costs.len(), 2, "each session's total:\n{table}");
    let (status, report, stderr) = agent_host_with(
        &["sessions", "--connect", &server.url, "--since", "7d"],
        &place,
    );
    assert!(status.success(), "{stderr}");
    assert!(report.starts_with("Spend since 7d ("), "{report}");
    assert!(report.contains("API-equivalent estimate"), "{report}");
    // Two sessions of $0.0095, each with its turn and its subagent's turn; the provider and the
    // total sum them.
    let provider = report
        .lines()
        .find(|line| line.starts_with("scripted"))
        .unwrap();
    assert_eq!(
        provider.split_whitespace().collect::<Vec<_>>(),
        ["scripted", "$0.0190", "4"],
        "{report}"
    );
    let total = report
        .lines()
        .find(|line| line.starts_with("total"))
        .unwrap();
    assert_eq!(
        total.split_whitespace().collect::<Vec<_>>(),
        ["total", "$0.0190", "4"]
    );
    let (status, report, _) = agent_host_with(
        &["sessions", "--connect", &server.url, "--since", "0m"],
        &place,
    );
    assert!(status.success());
    assert!(report.contains("no turns in this period"), "{report}");
    server.process.terminate();
    drop(server);

    // Offline, on the data directory, a model without a price costs "unknown".
    let unpriced = place.script(&json!({ "default": { "steps": [
        { "kind": "usage", "input": 10, "output": 1, "model": "mystery-model" },
        { "kind": "say", "text": "ok" }
    ] } }));
    let data = place.data.to_string_lossy().into_owned();
    let (status, stdout, stderr) = agent_host_with(
        &[
            "run",
            "--provider",
            "scripted",
            "--script",
            &unpriced.to_string_lossy(),
            "--data-dir",
            &data,
            "--prices",
            &prices,
            "--cwd",
            &work,
            "third",
        ],
        &place,
    );
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains("cost: unknown (no price for mystery-model; 10 tokens in, 1 out)"),
        "{stdout}"
    );
    let (status, table, _) = agent_host_with(&["sessions", "--data-dir", &data], &place);
    assert!(status.success());
    assert_eq!(
        table
            .lines()
            .filter(|line| line.contains(" unknown "))
            .count(),
        1,
        "{table}"
    );
}

#[test]
fn a_bad_price_file_or_period_is_refused_naming_what_is_wrong() {
    let place = Place::new();
    let data = place.data.to_string_lossy().into_owned();
    let bad = write(
        &place,
        "bad.toml",
        "[models.m]\ninput = -1\ncached_input = 0\noutput = 1\n",
    );
    let (status, _, stderr) = agent_host_with(
        &[
            "run",
            "--provider",
            "scripted",
            "--data-dir",
            &data,
            "--prices",
            &bad,
            "hi",
        ],
        &place,
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bad.toml: model `m`: `input` must be a number ≥ 0"),
        "{stderr}"
    );
    // `acp` answers its editor with the refusal instead of exiting; it says so on stderr.
    let (_, _, stderr) = agent_host_with(
        &[
            "acp",
            "--provider",
            "scripted",
            "--data-dir",
            &data,
            "--prices",
            &bad,
        ],
        &place,
    );
    assert!(
        stderr.contains("bad.toml: model `m`: `input` must be a number ≥ 0"),
        "{stderr}"
    );
    let missing = place.base.join("nowhere.toml");
    let (status, _, stderr) = agent_host_with(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            &data,
            "--prices",
            &missing.to_string_lossy(),
        ],
        &place,
    );
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("cannot read the price file"), "{stderr}");
    let (status, _, stderr) = agent_host_with(
        &["sessions", "--data-dir", &data, "--since", "a week"],
        &place,
    );
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("invalid --since `a week`"), "{stderr}");
}

/// A turn that spends $0.003, writes `first.txt`, reaches $0.008, talks slowly for a while and
/// would then write `late.txt`.
fn spending_script() -> Value {
    json!({ "default": { "steps": [
        { "kind": "usage", "input": 1000, "output": 100, "model": "test-model" },
        { "kind": "tool", "name": "write_file", "displayName": "Write file",
          "effect": { "kind": "writeFile", "path": "first.txt", "content": "1\n" } },
        { "kind": "usage", "input": 3000, "output": 300, "cacheRead": 1000, "cacheWrite": 500,
          "model": "test-model" },
        { "kind": "say", "text": "thinking it over at length", "chunk": 1, "delayMs": 100 },
        { "kind": "tool", "name": "write_file", "displayName": "Write file",
          "effect": { "kind": "writeFile", "path": "late.txt", "content": "2\n" } },
        { "kind": "say", "text": "all done" }
    ] } })
}

/// The next envelope on `channel` that ends a turn.
async fn turn_end(peer: &mut Peer, channel: &str) -> agenthost_protocol::ActionEnvelope {
    loop {
        let envelope = peer.next_envelope().await;
        if envelope.channel == channel && support::ends_turn(&envelope).is_some() {
            return envelope;
        }
    }
}

#[test]
fn a_budget_stops_a_turn_mid_way_and_refuses_the_next_across_a_restart_until_raised() {
    let place = Place::new();
    let prices = write(&place, "prices.toml", PRICES);
    let script = place.script(&spending_script());
    let serve = |place: &Place| {
        let mut command = serve_command(place, &place.data, Some(&script));
        command.args(["--prices", &prices, "--default-budget-usd", "0.005"]);
        let process = Spawned::spawn(command);
        let url = process.line();
        (process, url)
    };
    let (server, url) = serve(&place);
    let (status, stdout, stderr) = run_connected(&place, &url, "spend");
    assert!(!status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "The session's budget of $0.0050 is spent: $0.0080 so far (an API-equivalent \
             estimate). Raise budgetUsd to continue."
        ),
        "{stdout}\n{stderr}"
    );
    assert!(place.work.join("first.txt").exists());
    assert!(
        !place.work.join("late.txt").exists(),
        "the turn stopped before its later steps"
    );
    assert!(!stdout.contains("all done"), "{stdout}");
    server.terminate();
    let (status, _, stderr) = { server }.wait();
    assert!(status.success());
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "{stderr}"
    );

    // After a restart the spend and the budget are what they were: the next turn is refused.
    let (server, url) = serve(&place);
    runtime().block_on(async {
        let mut peer = Peer::connect(&url, "budget-test").await;
        let listed = peer.conn.list_sessions().await.unwrap().items;
        assert_eq!(listed.len(), 1);
        let meta = serde_json::to_value(&listed[0].meta).unwrap();
        assert_eq!(meta["agenthost.costUsd"], json!(0.008), "{meta}");
        let session = SessionUri::parse(&listed[0].resource).unwrap();
        let chat = ChatUri::default_for(&session);
        let _view = peer.open_chat(&chat).await;
        peer.conn.start_turn(&chat, "t2", "more").await.unwrap();
        let refused = turn_end(&mut peer, chat.as_str()).await;
        assert_eq!(action_type(&refused), "chat/error");
        let text = serde_json::to_string(&refused.action).unwrap();
        assert!(text.contains("budgetSpent"), "{text}");
        assert!(text.contains("budget of $0.0050 is spent"), "{text}");
        // A client raises the budget: the session takes turns again.
        configure(&peer, &session, json!({ "budgetUsd": 1 })).await;
        peer.conn.start_turn(&chat, "t3", "go on").await.unwrap();
        let ended = turn_end(&mut peer, chat.as_str()).await;
        assert_eq!(action_type(&ended), "chat/turnComplete", "{ended:?}");
        let listed = peer.conn.list_sessions().await.unwrap().items;
        let meta = serde_json::to_value(&listed[0].meta).unwrap();
        assert_eq!(meta["agenthost.budgetUsd"].as_f64(), Some(1.0), "{meta}");
        assert_eq!(meta["agenthost.costUsd"], json!(0.016), "{meta}");
        peer.conn.close().await;
    });
    assert!(place.work.join("late.txt").exists());
    server.terminate();
    let (status, _, stderr) = { server }.wait();
    assert!(status.success());
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "{stderr}"
    );
}

#[test]
fn a_tool_call_cap_stops_a_runaway_turn_and_not_the_next() {
    let place = Place::new();
    // The third call is over the cap; what comes after it must not run.
    let script = place.script(&json!({ "default": { "steps": [
        { "kind": "tool", "name": "read_file", "displayName": "Read" },
        { "kind": "tool", "name": "read_file", "displayName": "Read" },
        { "kind": "tool", "name": "read_file", "displayName": "Read" },
        { "kind": "say", "text": "and more and more", "chunk": 1, "delayMs": 100 },
        { "kind": "tool", "name": "write_file", "displayName": "Write file",
          "effect": { "kind": "writeFile", "path": "fourth.txt", "content": "4\n" } }
    ] } }));
    let server = Server::start(&place, Some(&script));
    runtime().block_on(async {
        let mut peer = Peer::connect(&server.url, "cap-test").await;
        let (session, chat) = peer.create_session("capped").await;
        configure(&peer, &session, json!({ "maxToolCallsPerTurn": 2 })).await;
        let _view = peer.open_chat(&chat).await;
        for turn in ["t1", "t2"] {
            peer.conn.start_turn(&chat, turn, "loop").await.unwrap();
            let ended = turn_end(&mut peer, chat.as_str()).await;
            let text = serde_json::to_string(&ended.action).unwrap();
            assert_eq!(action_type(&ended), "chat/error", "{text}");
            assert!(text.contains("tooManyToolCalls"), "{text}");
            assert!(
                text.contains("started 3 tool calls, over the session's maxToolCallsPerTurn of 2"),
                "{text}"
            );
        }
        peer.conn.close().await;
    });
    assert!(!place.work.join("fourth.txt").exists());
    server.process.terminate();
}

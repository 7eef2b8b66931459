//! Cost as a user sees it, through the real binary: `serve --prices FILE`, two `run --connect`
//! (one turn with a subagent, both reporting usage call by call), `run` printing the turn's
//! cost, a restart, `sessions` with its cost column, `sessions --since` reporting spend per
//! session and provider, and the clear refusals of a bad price file or period.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Stdio;

use serde_json::json;
use support::{Place, Server, Spawned, agent_host, serve_command};

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
    let run = |prompt: &str| {
        agent_host_with(
            &[
                "run",
                "--connect",
                &url,
                "--provider",
                "scripted",
                "--cwd",
                &work,
                prompt,
            ],
            &place,
        )
    };
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

//! ACP agents through the real binary: `run --provider acp.NAME --acp-agent NAME=PROGRAM` runs a
//! turn against a stand-in ACP agent (`agenthost_testkit::FakeCli`) and answers its permission
//! request; `serve --acp-agents FILE` advertises each agent as `acp.NAME` with the models a probe
//! learned, keeps them for the next start (no second probe), and refuses a bad file or an agent
//! nobody configured with a message naming the problem. Waits poll with a deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use agenthost_testkit::{FakeCli, Step};
use serde_json::{Value, json};
use support::{Place, Spawned, agent_host, runtime};

const DEADLINE: Duration = Duration::from_secs(60);
const SESSION: &str = "fake-session";

fn out(value: Value) -> Step {
    Step::Out(value.to_string())
}

fn models() -> Value {
    json!([{ "type": "select", "id": "model", "name": "Model", "category": "model",
             "currentValue": "small",
             "options": [{ "value": "small", "name": "Small" },
                         { "value": "large", "name": "Large" }] }])
}

/// `initialize` and `session/new` (a session offering two models).
fn handshake() -> Vec<Step> {
    vec![
        Step::Reply(
            json!({ "protocolVersion": 1, "agentCapabilities": { "loadSession": true } })
                .to_string(),
        ),
        Step::Reply(json!({ "sessionId": SESSION, "configOptions": models() }).to_string()),
    ]
}

fn update(update: Value) -> Step {
    out(json!({ "jsonrpc": "2.0", "method": "session/update",
                "params": { "sessionId": SESSION, "update": update } }))
}

/// Runs `command` to its end within [`DEADLINE`]: status, stdout, stderr.
fn finish(mut command: std::process::Command) -> (bool, String, String) {
    command.stdin(Stdio::null());
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let started = Instant::now();
    let output = child.wait_with_output().unwrap();
    assert!(started.elapsed() < DEADLINE);
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn run_drives_an_acp_agent_given_on_the_command_line_and_answers_its_permission() {
    let place = Place::new();
    let fake = FakeCli::new().unwrap();
    // The first start is the model probe; the second runs the turn.
    let mut probe = handshake();
    probe.push(Step::Sleep(30));
    fake.plan(1, &probe).unwrap();
    let mut turn = handshake();
    turn.extend([
        Step::In, // session/prompt (request 3)
        out(json!({ "jsonrpc": "2.0", "id": 0, "method": "session/request_permission",
                    "params": { "sessionId": SESSION,
                                "toolCall": { "toolCallId": "c1", "title": "Write notes.txt",
                                              "kind": "edit" },
                                "options": [
                                    { "optionId": "ok", "kind": "allow_once", "name": "Allow" },
                                    { "optionId": "no", "kind": "reject_once", "name": "Deny" }] } })),
        Step::In, // the answer
        update(json!({ "sessionUpdate": "tool_call_update", "toolCallId": "c1",
                       "status": "completed" })),
        update(json!({ "sessionUpdate": "agent_message_chunk",
                       "content": { "type": "text", "text": "done by the ACP agent" } })),
        out(json!({ "jsonrpc": "2.0", "id": 3, "result": { "stopReason": "end_turn" } })),
        Step::Sleep(30),
    ]);
    fake.plan(2, &turn).unwrap();
    let mut command = agent_host();
    command
        .args(["run", "--provider", "acp.fake", "--yes", "--cwd"])
        .arg(&place.work)
        .arg("--data-dir")
        .arg(&place.data)
        .arg("--acp-agent")
        .arg(format!("fake={}", fake.binary().display()))
        .arg("write the notes")
        .envs(fake.env());
    let (ok, stdout, stderr) = finish(command);
    assert!(ok, "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("done by the ACP agent"), "{stdout}");
    assert!(stdout.contains("approved (--yes)"), "{stdout}");
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "{stderr}"
    );
    let written = fake.written();
    let answer = written
        .iter()
        .find(|line| line["id"] == 0 && line.get("result").is_some())
        .unwrap_or_else(|| panic!("no permission answer in {written:#?}"));
    assert_eq!(answer["result"]["outcome"]["optionId"], "ok");
    let prompt = written
        .iter()
        .find(|line| line["method"] == "session/prompt")
        .unwrap();
    assert_eq!(prompt["params"]["prompt"][0]["text"], "write the notes");
    let new = written
        .iter()
        .rev()
        .find(|line| line["method"] == "session/new")
        .unwrap();
    assert_eq!(new["params"]["cwd"], place.work.to_str().unwrap());
}

/// The agents the host at `url` advertises, by provider id, with their model names.
fn advertised(url: &str) -> Vec<(String, Vec<String>)> {
    runtime().block_on(async {
        let peer = support::Peer::connect(url, "acp-test").await;
        let root = peer
            .request("subscribe", json!({ "channel": "ahp-root://" }))
            .await
            .unwrap();
        root["snapshot"]["state"]["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|agent| {
                let models = agent["models"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["name"].as_str().unwrap().to_owned())
                    .collect();
                (agent["provider"].as_str().unwrap().to_owned(), models)
            })
            .collect()
    })
}

#[test]
fn serve_advertises_the_agents_file_with_probed_models_kept_for_the_next_start() {
    let place = Place::new();
    let fake = FakeCli::new().unwrap();
    let mut probe = handshake();
    probe.push(Step::Sleep(30));
    fake.plan(0, &probe).unwrap();
    let file = place.base.join("agents.toml");
    std::fs::write(
        &file,
        format!(
            "[[agent]]\nname = \"fake\"\ncommand = \"{}\"\nargs = [\"--acp\"]\n\n[agent.env]\nFAKE_TOKEN = {{ from_env = \"HOST_TOKEN\" }}\n",
            fake.binary().display()
        ),
    )
    .unwrap();
    let serve = || {
        let mut command = agent_host();
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(&place.work)
            .arg("--data-dir")
            .arg(&place.data)
            .arg("--acp-agents")
            .arg(&file)
            .env("HOST_TOKEN", "secret")
            .envs(fake.env());
        Spawned::spawn(command)
    };
    for start in 1..=2 {
        let server = serve();
        let url = server.line();
        assert!(url.starts_with("ws://127.0.0.1:"), "{url}");
        let agents = advertised(&url);
        assert!(
            agents.contains(&(
                "acp.fake".to_owned(),
                vec!["Small".to_owned(), "Large".to_owned()]
            )),
            "start {start}: {agents:?}"
        );
        server.terminate();
        drop(server);
        // One probe in all: the second start reads the kept models.
        assert_eq!(fake.starts(), ["--acp"], "start {start}");
    }
}

#[test]
fn a_bad_agents_file_or_an_unknown_acp_agent_is_refused_naming_the_problem() {
    let place = Place::new();
    let file = place.base.join("agents.toml");
    std::fs::write(&file, "[[agent]]\nname = \"Bad_Name\"\ncommand = \"x\"\n").unwrap();
    let mut command = agent_host();
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&place.data)
        .arg("--acp-agents")
        .arg(&file);
    let (ok, _, stderr) = finish(command);
    assert!(!ok);
    assert!(
        stderr.contains("agents.toml") && stderr.contains("Bad_Name"),
        "{stderr}"
    );
    let mut command = agent_host();
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--provider", "acp.nope"])
        .arg("--data-dir")
        .arg(&place.data);
    let (ok, _, stderr) = finish(command);
    assert!(!ok);
    assert!(
        stderr.contains("no ACP agent `nope` is configured"),
        "{stderr}"
    );
    let mut command = agent_host();
    command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--acp-agent",
            "justaname",
        ])
        .arg("--data-dir")
        .arg(&place.data);
    let (ok, _, stderr) = finish(command);
    assert!(!ok);
    assert!(stderr.contains("NAME=PROGRAM"), "{stderr}");
}

#[test]
fn a_data_directory_in_use_by_a_host_is_refused_naming_connect_until_that_host_is_gone() {
    let place = Place::new();
    let mut server = support::Server::start(&place, None);
    let refused = |args: &[&str]| {
        let mut command = agent_host();
        command.args(args).arg("--data-dir").arg(&place.data);
        let (ok, _, stderr) = finish(command);
        assert!(!ok, "{args:?} ran over a data directory in use");
        assert!(stderr.contains("--connect"), "{args:?}: {stderr}");
    };
    refused(&["sessions"]);
    let work = place.work.to_str().unwrap().to_owned();
    refused(&["run", "--provider", "scripted", "--cwd", &work, "hello"]);
    refused(&["serve", "--listen", "127.0.0.1:0"]);
    // A killed host leaves no lock behind.
    server.process.kill();
    let mut command = agent_host();
    command.args(["sessions", "--data-dir"]).arg(&place.data);
    let (ok, stdout, stderr) = finish(command);
    assert!(ok, "{stdout}{stderr}");
}

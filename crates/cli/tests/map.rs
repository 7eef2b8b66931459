//! `agent-host map` (a captured transcript → one AHP action per line) and `agent-host
//! mock-model` (the loopback mock model as a command), through the real binary.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::path::PathBuf;

use serde_json::Value;
use support::{Spawned, agent_host};

fn claude_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../providers/claude/tests/fixtures")
        .join(name)
}

fn map(args: &[&str], input: Option<&str>) -> (bool, String, String) {
    let mut command = agent_host();
    command.arg("map").args(args);
    command.stdin(std::process::Stdio::piped());
    command.stdout(std::process::Stdio::piped());
    command.stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.unwrap_or("").as_bytes()).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn map_prints_one_action_per_line_in_order() {
    let file = claude_fixture("stdin-approve.stdout.jsonl");
    let (ok, stdout, stderr) = map(&["--provider", "claude", file.to_str().unwrap()], None);
    assert!(ok, "{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            // Each model call's usage as it arrives, then the result's.
            "chat/usage",
            "chat/responsePart",
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallReady",
            "chat/toolCallComplete",
            "chat/usage",
            "chat/responsePart",
            "chat/usage",
            "chat/turnComplete",
        ],
        "{stdout}"
    );
    // The CLI ran the tool on its own first (not-needed), then asked: the second ready is the
    // pending confirmation, with what the permission is about.
    assert_eq!(lines[3]["confirmed"], "not-needed");
    assert!(lines[4].get("confirmed").is_none(), "{}", lines[4]);
    assert_eq!(lines[4]["permissionKind"], "shell");
    assert_eq!(lines[5]["result"]["success"], true);
    assert!(lines.iter().all(|l| l["turnId"] == "turn-1"));
}

#[test]
fn map_reads_codex_app_server_and_exec_transcripts() {
    let fixtures =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../providers/codex/tests/fixtures");
    for (file, last) in [
        (
            "appserver-escalate-decline.stdout.jsonl",
            "chat/turnComplete",
        ),
        ("exec-workspace-write.stdout.jsonl", "chat/turnComplete"),
        ("exec-api-error.stdout.jsonl", "chat/error"),
    ] {
        let path = fixtures.join(file);
        let (ok, stdout, stderr) = map(&["--provider", "codex", path.to_str().unwrap()], None);
        assert!(ok, "{file}: {stderr}");
        let lines: Vec<Value> = stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(
            lines.last().map(|l| l["type"].clone()),
            Some(Value::from(last)),
            "{file}: {stdout}"
        );
    }
}

#[test]
fn map_reads_copilot_headless_frames_and_prompt_mode_lines() {
    let fixtures =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../providers/copilot/tests/fixtures");
    for (file, last) in [
        ("sdk-approve.stdout.jsonl", "chat/turnComplete"),
        ("prompt-allowall.stdout.jsonl", "chat/turnComplete"),
        ("prompt-api-error.stdout.jsonl", "chat/error"),
    ] {
        let path = fixtures.join(file);
        let (ok, stdout, stderr) = map(&["--provider", "copilot", path.to_str().unwrap()], None);
        assert!(ok, "{file}: {stderr}");
        let last_type = stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter_map(|line| line["type"].as_str().map(str::to_owned))
            .next_back();
        assert_eq!(last_type.as_deref(), Some(last), "{file}: {stdout}");
    }
}

#[test]
fn map_reads_stdin_and_names_the_bad_line() {
    let good = std::fs::read_to_string(claude_fixture("stdin-approve.stdout.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    let input = format!("{first}\nthis is not json\n");
    let (ok, stdout, stderr) = map(&["--provider", "claude", "-"], Some(&input));
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("line 2: not a JSON object"), "{stderr}");
}

#[test]
fn map_refuses_unknown_providers_and_missing_files() {
    let (ok, _, stderr) = map(&["--provider", "nope", "-"], None);
    assert!(!ok);
    assert!(
        stderr.contains("mappable: claude, codex, copilot"),
        "{stderr}"
    );
    let (ok, _, stderr) = map(&["--provider", "claude", "/nonexistent/transcript"], None);
    assert!(!ok);
    assert!(
        stderr.contains("cannot read /nonexistent/transcript"),
        "{stderr}"
    );
}

/// `lines` (JSON-RPC messages, one per line) as `copilot --headless --stdio` writes them.
fn content_length_frames(lines: &str) -> String {
    lines
        .lines()
        .map(|body| format!("Content-Length: {}\r\n\r\n{body}", body.len()))
        .collect()
}

fn copilot_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../providers/copilot/tests/fixtures")
        .join(name)
}

#[test]
fn map_reads_content_length_framed_copilot_captures_like_their_lines() {
    let path = copilot_fixture("sdk-approve.stdout.jsonl");
    let (ok, from_lines, stderr) = map(&["--provider", "copilot", path.to_str().unwrap()], None);
    assert!(ok, "{stderr}");
    assert!(from_lines.lines().count() > 3, "{from_lines}");

    let framed = content_length_frames(&std::fs::read_to_string(&path).unwrap());
    assert!(framed.starts_with("Content-Length: "));
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("sdk-approve.stdio");
    std::fs::write(&capture, &framed).unwrap();
    let (ok, from_frames, stderr) =
        map(&["--provider", "copilot", capture.to_str().unwrap()], None);
    assert!(ok, "{stderr}");
    assert_eq!(from_frames, from_lines);
    // The same from stdin.
    let (ok, from_stdin, stderr) = map(&["--provider", "copilot", "-"], Some(&framed));
    assert!(ok, "{stderr}");
    assert_eq!(from_stdin, from_lines);
}

#[test]
fn map_names_a_truncated_frame_and_a_bad_header() {
    let path = copilot_fixture("sdk-approve.stdout.jsonl");
    let framed = content_length_frames(&std::fs::read_to_string(&path).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("cut.stdio");
    std::fs::write(&capture, &framed[..framed.len() - 5]).unwrap();
    let (ok, stdout, stderr) = map(&["--provider", "copilot", capture.to_str().unwrap()], None);
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains(capture.to_str().unwrap()), "{stderr}");
    assert!(stderr.contains("is truncated"), "{stderr}");
    assert!(
        stderr.contains("shorter than its Content-Length"),
        "{stderr}"
    );

    let input = "Content-Length: 2\r\n\r\n{}Content-Length: many\r\n\r\n{}";
    let (ok, _, stderr) = map(&["--provider", "copilot", "-"], Some(input));
    assert!(!ok);
    assert!(
        stderr.contains("stdin: not a valid Content-Length capture"),
        "{stderr}"
    );
    assert!(stderr.contains("frame 2 (byte 23)"), "{stderr}");
    assert!(stderr.contains("\"many\""), "{stderr}");
}

#[test]
fn map_fails_naming_the_right_provider_when_nothing_maps() {
    let codex = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../providers/codex/tests/fixtures/exec-workspace-write.stdout.jsonl");
    let (ok, stdout, stderr) = map(&["--provider", "claude", codex.to_str().unwrap()], None);
    assert!(!ok, "{stdout}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains(codex.to_str().unwrap()), "{stderr}");
    assert!(
        stderr.contains("maps to no AHP actions as a claude transcript"),
        "{stderr}"
    );
    assert!(stderr.contains("try --provider codex"), "{stderr}");

    // A transcript the provider's mapper refuses outright gets the suggestion too.
    let app_server = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../providers/codex/tests/fixtures/appserver-escalate-decline.stdout.jsonl");
    let (ok, _, stderr) = map(
        &["--provider", "claude", app_server.to_str().unwrap()],
        None,
    );
    assert!(!ok);
    assert!(
        stderr.contains("as a claude transcript: line 1"),
        "{stderr}"
    );
    assert!(stderr.contains("try --provider codex"), "{stderr}");

    // Copilot's prompt-mode lines map best (not only) as Copilot's.
    let prompt = copilot_fixture("prompt-allowall.stdout.jsonl");
    let (ok, _, stderr) = map(&["--provider", "codex", prompt.to_str().unwrap()], None);
    assert!(!ok);
    assert!(stderr.contains("try --provider copilot"), "{stderr}");
}

#[test]
fn map_fails_on_an_empty_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "\n").unwrap();
    let (ok, stdout, stderr) = map(&["--provider", "codex", empty.to_str().unwrap()], None);
    assert!(!ok);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(&format!("{} is empty", empty.display())),
        "{stderr}"
    );
    assert!(stderr.contains("codex transcript"), "{stderr}");
    assert!(stderr.contains("`codex exec --json`"), "{stderr}");
    let (ok, _, stderr) = map(&["--provider", "copilot", "-"], Some(""));
    assert!(!ok);
    assert!(stderr.contains("stdin is empty"), "{stderr}");
}

#[test]
fn mock_model_serves_on_loopback_and_answers_like_a_model() {
    let mut command = agent_host();
    command.args(["mock-model", "--cmd", "echo mocked > m.txt"]);
    let server = Spawned::spawn(command);
    let url = server.line();
    let address = url.strip_prefix("http://").unwrap();
    assert!(address.starts_with("127.0.0.1:"), "{url}");
    let body = r#"{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"go"}],"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}]}"#;
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /v1/messages HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"tool_use\""), "{answer}");
    assert!(answer.contains("echo mocked > m.txt"), "{answer}");
}

#[test]
fn mock_model_refuses_a_non_loopback_address() {
    let mut command = agent_host();
    command.args(["mock-model", "--listen", "0.0.0.0:0"]);
    let mut server = Spawned::spawn(command);
    let (status, _, stderr) = server.wait();
    assert!(!status.success());
    assert!(stderr.contains("cannot start the mock model"), "{stderr}");
}

#[test]
fn map_reads_an_acp_agents_stdout_and_refuses_the_hosts_side() {
    let fixtures =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../providers/acp/tests/fixtures");
    let stdout = fixtures.join("acp-reject.stdout.jsonl");
    let (ok, printed, stderr) = map(&["--provider", "acp", stdout.to_str().unwrap()], None);
    assert!(ok, "{stderr}");
    let lines: Vec<Value> = printed
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let complete = lines
        .iter()
        .find(|line| line["type"] == "chat/toolCallComplete")
        .unwrap();
    assert_eq!(complete["result"]["error"]["code"], "denied", "{complete}");
    assert_eq!(lines.last().unwrap()["type"], "chat/turnComplete");
    // The adapters' transcripts (claude-agent-acp, codex-acp) map through the same command.
    for (name, end) in [
        ("claude-agent-acp-allow", "chat/turnComplete"),
        ("claude-agent-acp-reject", "chat/turnComplete"),
        ("codex-acp-allow", "chat/turnComplete"),
        ("codex-acp-reject", "chat/turnCancelled"),
    ] {
        let file = fixtures.join(format!("{name}.stdout.jsonl"));
        let (ok, printed, stderr) = map(&["--provider", "acp", file.to_str().unwrap()], None);
        assert!(ok, "{name}: {stderr}");
        let ends: Vec<String> = printed
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter_map(|line| line["type"].as_str().map(str::to_owned))
            .filter(|kind| kind.starts_with("chat/turn"))
            .collect();
        assert_eq!(ends, [end], "{name}");
    }
    // What the host wrote is no agent output: it maps to nothing, and says so.
    let stdin = fixtures.join("acp-reject.stdin.jsonl");
    let (ok, printed, stderr) = map(&["--provider", "acp", stdin.to_str().unwrap()], None);
    assert!(!ok && printed.is_empty(), "{printed}");
    assert!(
        stderr.contains("maps to no AHP actions as an acp transcript"),
        "{stderr}"
    );
}

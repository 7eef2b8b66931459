//! The stand-in CLI plays its plan: lines and frames out, lines and frames in, replies by
//! request id, a different plan per start, and it records what it was sent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use agenthost_testkit::{FakeCli, Step};

fn run(cli: &FakeCli, input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(cli.binary())
        .arg("--some-flag")
        .envs(cli.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    assert!(child.wait().unwrap().success());
    out
}

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

#[test]
fn lines_and_replies_follow_the_plan() {
    let cli = FakeCli::new().unwrap();
    cli.plan(
        0,
        &[
            Step::out(r#"{"hello":1}"#),
            Step::Reply(r#"{"ok":true}"#.into()),
            Step::Ack,
            Step::In,
        ],
    )
    .unwrap();
    let input = concat!(
        r#"{"id":7,"method":"initialize"}"#,
        "\n",
        r#"{"type":"control_request","request_id":"r1","request":{"subtype":"initialize"}}"#,
        "\n",
        "last\n"
    );
    let out = String::from_utf8(run(&cli, input.as_bytes())).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], r#"{"hello":1}"#);
    assert_eq!(lines[1], r#"{"id":7,"result":{"ok":true}}"#);
    assert!(lines[2].contains(r#""request_id":"r1""#), "{}", lines[2]);
    assert_eq!(cli.written().len(), 3);
    assert_eq!(cli.written()[2], serde_json::Value::String("last".into()));
    assert_eq!(cli.starts(), ["--some-flag"]);
    assert!(cli.pid().is_some());
}

#[test]
fn frames_are_written_and_read_with_their_length() {
    let cli = FakeCli::new().unwrap();
    cli.plan(
        0,
        &[
            Step::FrameOut(r#"{"note":"héllo"}"#.into()),
            Step::FrameReply(r#"{"pong":true}"#.into()),
            Step::FrameIn,
        ],
    )
    .unwrap();
    let mut input = frame(r#"{"id":3,"jsonrpc":"2.0","method":"ping"}"#);
    input.extend(frame(
        r#"{"id":4,"jsonrpc":"2.0","method":"x","params":{"a":"b"}}"#,
    ));
    let out = run(&cli, &input);
    let mut expected = frame(r#"{"note":"héllo"}"#);
    expected.extend(frame(r#"{"jsonrpc":"2.0","id":3,"result":{"pong":true}}"#));
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&expected)
    );
    let written = cli.written();
    assert_eq!(written[0]["method"], "ping");
    assert_eq!(written[1]["params"]["a"], "b");
}

#[test]
fn each_start_can_play_a_plan_of_its_own() {
    let cli = FakeCli::new().unwrap();
    cli.plan(0, &[Step::out("default")]).unwrap();
    cli.plan(2, &[Step::out("second")]).unwrap();
    assert_eq!(String::from_utf8(run(&cli, b"")).unwrap(), "default\n");
    assert_eq!(String::from_utf8(run(&cli, b"")).unwrap(), "second\n");
    assert_eq!(String::from_utf8(run(&cli, b"")).unwrap(), "default\n");
    assert_eq!(cli.starts().len(), 3);
}

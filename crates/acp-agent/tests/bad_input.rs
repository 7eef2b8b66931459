//! What an editor sends that is not a good ACP message gets a clear JSON-RPC error, and the
//! agent goes on reading: a line that is not JSON, one that is not UTF-8, an array, an unknown
//! method, a request with wrong parameters, a session nobody opened — and without a host every
//! session request says why, while `initialize` still works.

// Test code: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agenthost_acp_agent::{AgentOptions, serve};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn bad_lines_get_errors_and_the_agent_reads_on() {
    let (editor, agent) = tokio::io::duplex(64 * 1024);
    let (agent_in, agent_out) = tokio::io::split(agent);
    let options = AgentOptions {
        provider: Some("scripted".into()),
        agent_version: "test".into(),
    };
    let served = tokio::spawn(serve(
        Err("no agent host: the test gave none".into()),
        options,
        agent_in,
        agent_out,
    ));
    let (editor_in, mut editor_out) = tokio::io::split(editor);
    let mut lines = BufReader::new(editor_in).lines();
    let mut send = async |bytes: &[u8]| {
        editor_out.write_all(bytes).await.unwrap();
        editor_out.write_all(b"\n").await.unwrap();
    };
    send(b"this is not json").await;
    send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\xff}").await;
    send(b"[1]").await;
    send(b"").await;
    send(br#"{"jsonrpc":"2.0","id":2,"method":"session/fly","params":{}}"#).await;
    send(br#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":7}}"#).await;
    send(br#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"scripted:/x","prompt":[]}}"#).await;
    send(br#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#).await;
    send(br#"{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":1}}"#).await;
    let mut answers = Vec::new();
    while answers.len() < 8 {
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no answer after {answers:?}"))
            .unwrap()
            .expect("an answer");
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let error = |id: Value| {
        answers
            .iter()
            .filter(|a| a["id"] == id)
            .map(|a| a["error"].clone())
            .collect::<Vec<_>>()
    };
    let unnamed = error(Value::Null);
    assert_eq!(unnamed.len(), 3, "{answers:?}");
    assert!(unnamed.iter().all(|e| e["code"] == -32700));
    assert!(
        unnamed
            .iter()
            .any(|e| e["message"].as_str().unwrap().contains("UTF-8"))
    );
    assert_eq!(error(json!(2))[0]["code"], -32601);
    assert!(
        error(json!(2))[0]["message"]
            .as_str()
            .unwrap()
            .contains("session/fly")
    );
    assert_eq!(error(json!(3))[0]["code"], -32602);
    assert!(
        error(json!(3))[0]["message"]
            .as_str()
            .unwrap()
            .contains("session/new")
    );
    assert_eq!(error(json!(4))[0]["code"], -32603);
    assert_eq!(
        error(json!(5))[0]["message"],
        "no agent host: the test gave none"
    );
    let initialized = answers.iter().find(|a| a["id"] == 6).unwrap();
    assert_eq!(initialized["result"]["protocolVersion"], 1);
    // The editor closes its side: the agent stops.
    editor_out.shutdown().await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(20), served)
        .await
        .expect("the agent stops at the end of its input")
        .unwrap();
}

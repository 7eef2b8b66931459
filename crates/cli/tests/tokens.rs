//! Named tokens through the binary (issue 23): `agent-host tokens add|list|revoke` over the
//! data directory, and a running `serve` honouring them — `observe` reads and changes nothing,
//! `session:<uri>` sees and touches only that session, only a hash is stored, a revoked token's
//! open connection is closed within a second or so and a new one refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Peer, Place, Server, agent_host, runtime};

fn tokens(place: &Place, args: &[&str]) -> (bool, String, String) {
    let output = agent_host()
        .arg("tokens")
        .args(args)
        .arg("--data-dir")
        .arg(&place.data)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn with_token(url: &str, token: &str) -> String {
    let (base, _) = url.split_once("tkn=").unwrap();
    format!("{base}tkn={token}")
}

#[test]
fn named_tokens_are_scoped_stored_hashed_and_revoked_live() {
    let place = Place::new();
    let (ok, reader, err) = tokens(&place, &["add", "reader", "--scope", "observe"]);
    assert!(ok, "{err}");
    assert!(reader.len() >= 40, "{reader}");
    let (ok, mine, err) = tokens(
        &place,
        &["add", "mine", "--scope", "session:scripted:/mine"],
    );
    assert!(ok, "{err}");
    // Bad input: a taken name, an unknown scope, a reserved name.
    assert!(!tokens(&place, &["add", "reader"]).0);
    let (ok, _, err) = tokens(&place, &["add", "x", "--scope", "admin"]);
    assert!(!ok && err.contains("unknown scope"), "{err}");
    assert!(!tokens(&place, &["add", "serve"]).0);
    let (ok, listed, _) = tokens(&place, &["list"]);
    assert!(ok);
    assert!(
        listed.contains("reader  observe") && listed.contains("mine  session:scripted:/mine"),
        "{listed}"
    );
    assert!(!listed.contains(&reader) && !listed.contains(&mine));

    let server = Server::start(&place, None);
    runtime().block_on(async {
        let owner = Peer::connect(&server.url, "owner").await;
        owner.create_session("mine").await;
        owner.create_session("other").await;

        // observe: reads everything, changes nothing.
        let observer = Peer::connect(&with_token(&server.url, &reader), "observer").await;
        assert_eq!(observer.listed().await.len(), 2);
        let (code, message) = observer
            .request_error(
                "createSession",
                json!({ "channel": "scripted:/new", "provider": "scripted" }),
            )
            .await;
        assert_eq!(code, -32009, "{message}");
        let (code, _) = observer
            .request_error("x-deleteSession", json!({ "channel": "scripted:/mine" }))
            .await;
        assert_eq!(code, -32009);
        observer
            .request("subscribe", json!({ "channel": "scripted:/other" }))
            .await
            .unwrap();

        // session:scripted:/mine: that session alone.
        let scoped = Peer::connect(&with_token(&server.url, &mine), "scoped").await;
        assert_eq!(scoped.listed().await, ["scripted:/mine"]);
        let (code, _) = scoped
            .request_error("subscribe", json!({ "channel": "scripted:/other" }))
            .await;
        assert_eq!(code, -32009);
        scoped
            .request("subscribe", json!({ "channel": "scripted:/mine" }))
            .await
            .unwrap();
        let (code, _) = scoped
            .request_error(
                "resourceList",
                json!({ "channel": "ahp-root://", "uri": "file:///" }),
            )
            .await;
        assert_eq!(code, -32009);

        // A client id belongs to the token that first used it.
        let result =
            agenthost_client::HostConnection::connect(&with_token(&server.url, &reader), "owner")
                .await;
        assert!(
            result.is_err(),
            "another token took over the owner's client id"
        );

        // Revoked: the open connection is closed, a new one refused.
        let (ok, _, err) = tokens(&place, &["revoke", "reader"]);
        assert!(ok, "{err}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if observer.request("listSessions", json!({})).await.is_err() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the revoked connection stayed open"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            agenthost_client::HostConnection::connect(&with_token(&server.url, &reader), "again")
                .await
                .is_err()
        );
        // The owner was not touched.
        assert_eq!(owner.listed().await.len(), 2);
    });
    assert!(
        !tokens(&place, &["revoke", "reader"]).0,
        "revoking twice fails"
    );
    // Only hashes are stored.
    let mut bytes = std::fs::read(place.database()).unwrap();
    let mut wal = place.database().into_os_string();
    wal.push("-wal");
    bytes.extend(std::fs::read(wal).unwrap_or_default());
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains(&mine) && !text.contains(&reader));
    server.process.terminate();
}

#[test]
fn the_audit_log_names_the_token_and_client_of_a_cancel() {
    let place = Place::new();
    let script = place.script(&json!({ "default": { "steps": [
        { "kind": "say", "text": "working" },
        { "kind": "pause", "ms": 60000 },
        { "kind": "say", "text": "done" }
    ]}}));
    let (ok, laptop, err) = tokens(&place, &["add", "laptop"]);
    assert!(ok, "{err}");
    let server = Server::start(&place, Some(&script));
    runtime().block_on(async {
        let mut peer = Peer::connect(&with_token(&server.url, &laptop), "vscode-1").await;
        let (_, chat) = peer.create_session("audited").await;
        let mut view = peer.open_chat(&chat).await;
        peer.conn.start_turn(&chat, "t1", "go").await.unwrap();
        // Wait until the agent is working (its first words arrived), then cancel.
        let mut seen = Vec::new();
        loop {
            let envelope = peer.next_envelope().await;
            view.apply(&envelope);
            seen.push(support::action_type(&envelope));
            if support::action_type(&envelope) == "chat/delta" {
                break;
            }
            assert!(seen.len() < 100, "the turn never started: {seen:?}");
        }
        peer.conn.cancel_turn(&chat, "t1", 5).await.unwrap();
        loop {
            let envelope = peer.next_envelope().await;
            if support::ends_turn(&envelope).is_some() {
                break;
            }
        }
    });
    server.process.terminate();
    let (status, _, stderr) = {
        let mut process = server.process;
        process.wait()
    };
    assert!(status.success(), "{stderr}");
    let output = agent_host()
        .args(["audit", "--data-dir"])
        .arg(&place.data)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{table}");
    let line = table
        .lines()
        .find(|line| line.contains("chat/turnCancelled"))
        .unwrap_or_else(|| panic!("no cancel in the audit log:\n{table}"));
    assert!(line.contains("  laptop  vscode-1  "), "{line}");
    assert!(line.contains("\"turnId\":\"t1\""), "{line}");
    let refused = agent_host()
        .args(["audit", "--limit", "0", "--data-dir"])
        .arg(&place.data)
        .output()
        .unwrap();
    assert!(!refused.status.success());
}

#[test]
fn commands_with_different_tokens_do_not_collide_on_a_client_id() {
    let place = Place::new();
    let (ok, laptop, err) = tokens(&place, &["add", "laptop"]);
    assert!(ok, "{err}");
    let server = Server::start(&place, None);
    for url in [with_token(&server.url, &laptop), server.url.clone()] {
        let output = agent_host()
            .args([
                "run",
                "--provider",
                "scripted",
                "--yes",
                "--connect",
                &url,
                "--cwd",
            ])
            .arg(&place.work)
            .arg("hello")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    server.process.terminate();
    assert!(
        !server.process.stderr().contains("WARN"),
        "{}",
        server.process.stderr()
    );
}

//! Worktree isolation, end to end (the host as `agent-host serve` composes it, the scripted
//! agent, Microsoft's `ahp::Client` over the real WebSocket). A session created with
//! `config.isolation: "worktree"` in a git repository works in a new linked worktree: its
//! working directory is the worktree, the agent's edit lands there and not in the user's
//! checkout, the default chat's first turn starts with the worktree announcement (once, also
//! after the session is disposed and restored), and deleting the session removes the worktree
//! and its untouched branch.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agenthost_protocol::ahp_types::state::{ResponsePart, SnapshotState};
use agenthost_protocol::uri::path_to_file_uri;
use agenthost_protocol::{ChatUri, SafeId, SessionUri, StateAction};
use serde_json::{Value, json};
use support::{ScriptedHost, connect, dispatch, git, until};

fn script() -> Value {
    json!({ "turns": [
        { "steps": [
            { "kind": "tool", "name": "write_file", "displayName": "Write file",
              "effect": { "kind": "writeFile", "path": "readme.txt", "content": "edited\n" } },
            { "kind": "say", "text": "Edited.", "chunk": 4 }
        ]}
    ]})
}

/// The announcement parts of the chat's turns, per turn.
fn announcements(chat: &agenthost_protocol::ahp_types::state::ChatState) -> Vec<usize> {
    chat.turns
        .iter()
        .map(|turn| {
            turn.response_parts
                .iter()
                .filter(|part| {
                    matches!(part, ResponsePart::Markdown(m) if m.id == "worktree-announcement")
                })
                .count()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_session_works_in_its_worktree_and_announces_it() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let work = host.work.canonicalize().unwrap();
    std::fs::write(work.join("readme.txt"), "original\n").unwrap();
    git(&work, &["init", "--quiet", "-b", "main"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "--quiet", "-m", "seed"]);

    let (client, mut events) = connect(&host.url, "client-a").await;
    let session = SessionUri::with_provider("scripted", SafeId::new("iso").unwrap()).unwrap();
    let chat = ChatUri::default_for(&session);
    let _: Value = client
        .request(
            "createSession",
            json!({
                "channel": session.as_str(), "provider": "scripted",
                "workingDirectories": [path_to_file_uri(&work).unwrap()],
                "config": { "isolation": "worktree" }
            }),
        )
        .await
        .unwrap();
    let worktree = work.with_file_name("work.worktrees").join("session-iso");
    let (snapshot, session_subscription) = client.subscribe(session.to_string()).await.unwrap();
    let Some(SnapshotState::Session(state)) = snapshot.snapshot.map(|s| s.state) else {
        panic!("not a session snapshot");
    };
    assert_eq!(
        state.working_directories,
        Some(vec![path_to_file_uri(&worktree).unwrap()])
    );
    assert_eq!(state.config.unwrap().values["isolation"], "worktree");
    assert_eq!(
        git(&worktree, &["branch", "--show-current"]),
        "agents/session-iso"
    );

    let (_, chat_subscription) = client.subscribe(chat.to_string()).await.unwrap();
    dispatch(
        &client,
        chat.as_str(),
        json!({
            "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-03-01T10:00:00.000Z",
            "message": { "text": "edit the readme", "origin": { "kind": "user" } }
        }),
    )
    .await;
    let first = until(&mut events, |e| {
        e.channel == chat.as_str() && matches!(e.action, StateAction::ChatResponsePart(_))
    })
    .await;
    let StateAction::ChatResponsePart(first) = first.action else {
        unreachable!("matched above");
    };
    let ResponsePart::Markdown(announcement) = first.part else {
        panic!("the first part is not the announcement: {:?}", first.part);
    };
    assert_eq!(announcement.id, "worktree-announcement");
    assert!(
        announcement.content.contains("agents/session-iso")
            && announcement
                .content
                .contains(&worktree.display().to_string()),
        "{}",
        announcement.content
    );
    until(&mut events, |e| {
        e.channel == chat.as_str() && matches!(e.action, StateAction::ChatTurnComplete(_))
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(worktree.join("readme.txt")).unwrap(),
        "edited\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("readme.txt")).unwrap(),
        "original\n",
        "the user's checkout is untouched"
    );
    assert_eq!(git(&work, &["status", "--porcelain"]), "");

    // Disposed and restored: the history has the announcement once, at the start.
    drop(chat_subscription);
    drop(session_subscription);
    let _: Value = client
        .request("disposeSession", json!({ "channel": session.as_str() }))
        .await
        .unwrap();
    let (snapshot, _chat_again) = client.subscribe(chat.to_string()).await.unwrap();
    let Some(SnapshotState::Chat(restored)) = snapshot.snapshot.map(|s| s.state) else {
        panic!("not a chat snapshot");
    };
    assert_eq!(announcements(&restored), [1]);
    assert!(matches!(
        &restored.turns[0].response_parts[0],
        ResponsePart::Markdown(m) if m.id == "worktree-announcement"
    ));

    // Deleted: the worktree and its branch (no commits of its own) are gone.
    let _: Value = client
        .request("x-deleteSession", json!({ "channel": session.as_str() }))
        .await
        .unwrap();
    assert!(!worktree.exists());
    assert_eq!(git(&work, &["branch", "--list", "agents/*"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_that_is_not_a_repository_cannot_be_isolated() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let work = host.work.canonicalize().unwrap();
    let (client, _events) = connect(&host.url, "client-a").await;
    let session = SessionUri::with_provider("scripted", SafeId::new("plain").unwrap()).unwrap();
    let error = client
        .request::<Value, Value>(
            "createSession",
            json!({
                "channel": session.as_str(), "provider": "scripted",
                "workingDirectories": [path_to_file_uri(&work).unwrap()],
                "config": { "isolation": "worktree" }
            }),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("cannot isolate"), "{error}");
    let listed: Value = client.request("listSessions", json!({})).await.unwrap();
    assert_eq!(listed["items"], json!([]), "{listed}");
}

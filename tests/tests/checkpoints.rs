//! Per-turn checkpoints and changesets, end to end (the `checkpointAndChangeset` contribution in
//! the host as `agent-host serve` composes it, the scripted agent, Microsoft's `ahp::Client`
//! over the real WebSocket). The session's folder is a git repository; the agent's turn edits
//! one tracked file and adds another. The turn ends with
//! `refs/agents/<session>/checkpoints/turn/1` in the repository, and the session changeset a
//! client subscribed to before the turn is recomputed to list exactly the two edited files —
//! as is the turn's own changeset, subscribed afterwards.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{ChangesetStatus, SnapshotState};
use serde_json::{Value, json};
use support::{ScriptedHost, connect, create_session, dispatch, git_status as git, until};

fn script() -> Value {
    json!({ "turns": [
        { "steps": [
            { "kind": "tool", "name": "write_file", "displayName": "Write file",
              "effect": { "kind": "writeFile", "path": "readme.txt", "content": "hello\nagain\n" } },
            { "kind": "tool", "name": "write_file", "displayName": "Write file",
              "effect": { "kind": "writeFile", "path": "notes/a.txt", "content": "A\n" } },
            { "kind": "say", "text": "Edited.", "chunk": 4 }
        ]}
    ]})
}

/// The file names a changeset lists, sorted (the id is the file's `file:` URI).
fn names(
    files: &[agenthost_protocol::ahp_types::state::ChangesetFile],
    work: &Path,
) -> Vec<String> {
    let prefix = format!("file://{}/", work.display());
    let mut names: Vec<String> = files
        .iter()
        .map(|f| f.id.strip_prefix(&prefix).unwrap_or(&f.id).to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_edits_files_gets_a_checkpoint_and_an_exact_changeset() {
    let host = ScriptedHost::start(script(), Default::default()).await;
    let work = host.work.canonicalize().unwrap();
    std::fs::write(work.join("readme.txt"), "hello\n").unwrap();
    std::fs::write(work.join("keep.txt"), "untouched\n").unwrap();
    assert!(git(&work, &["init", "--quiet"]).0);
    assert!(git(&work, &["add", "."]).0);
    assert!(git(&work, &["commit", "--quiet", "-m", "seed"]).0);
    let user_head = git(&work, &["rev-parse", "HEAD"]).1;

    let (client, mut events) = connect(&host.url, "client-a").await;
    let (session, chat) = create_session(&client, "checkpoint-e2e").await;
    let (snapshot, _session_subscription) = client.subscribe(session.to_string()).await.unwrap();
    let Some(SnapshotState::Session(state)) = snapshot.snapshot.map(|s| s.state) else {
        panic!("not a session snapshot");
    };
    let catalog = state
        .changesets
        .expect("the session advertises its changesets");
    let session_changeset = catalog
        .iter()
        .find(|c| c.change_kind == "session")
        .unwrap()
        .uri_template
        .clone();
    let turn_template = catalog
        .iter()
        .find(|c| c.change_kind == "turn")
        .unwrap()
        .uri_template
        .clone();
    let (snapshot, _changeset_subscription) =
        client.subscribe(session_changeset.clone()).await.unwrap();
    let Some(SnapshotState::Changeset(before)) = snapshot.snapshot.map(|s| s.state) else {
        panic!("not a changeset snapshot");
    };
    assert!(before.files.is_empty(), "nothing changed yet");
    let (_, _chat_subscription) = client.subscribe(chat.to_string()).await.unwrap();

    dispatch(
        &client,
        chat.as_str(),
        json!({
            "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-03-01T10:00:00.000Z",
            "message": { "text": "edit the files", "origin": { "kind": "user" } }
        }),
    )
    .await;
    until(&mut events, |e| {
        e.channel == chat.as_str() && matches!(e.action, StateAction::ChatTurnComplete(_))
    })
    .await;

    // The changeset a client watches is marked recomputing, then gets exactly the edited files.
    until(&mut events, |e| {
        e.channel == session_changeset
            && matches!(&e.action, StateAction::ChangesetStatusChanged(a)
                if a.status == ChangesetStatus::Recomputing)
    })
    .await;
    let content = until(&mut events, |e| {
        e.channel == session_changeset
            && matches!(e.action, StateAction::ChangesetContentChanged(_))
    })
    .await;
    let StateAction::ChangesetContentChanged(content) = content.action else {
        unreachable!("matched above");
    };
    assert_eq!(names(&content.files, &work), ["notes/a.txt", "readme.txt"]);
    until(&mut events, |e| {
        e.channel == session_changeset
            && matches!(&e.action, StateAction::ChangesetStatusChanged(a)
                if a.status == ChangesetStatus::Ready)
    })
    .await;

    // The turn's checkpoint ref is in the repository; the user's branch and index are untouched.
    let turn_ref = "refs/agents/checkpoint-e2e/checkpoints/turn/1";
    let deadline = Instant::now() + Duration::from_secs(10);
    while !git(&work, &["rev-parse", "--verify", "--quiet", turn_ref]).0 {
        assert!(Instant::now() < deadline, "{turn_ref} never appeared");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        git(
            &work,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "refs/agents/checkpoint-e2e/checkpoints/turn/0"
            ]
        )
        .0
    );
    assert_eq!(git(&work, &["rev-parse", "HEAD"]).1, user_head);
    let (_, status) = git(&work, &["status", "--porcelain"]);
    assert_eq!(
        status, " M readme.txt\n?? notes/",
        "the index is the user's"
    );
    let (_, diff) = git(
        &work,
        &[
            "diff",
            "--name-only",
            "refs/agents/checkpoint-e2e/checkpoints/turn/0",
            turn_ref,
        ],
    );
    assert_eq!(diff, "notes/a.txt\nreadme.txt");

    // The turn's own changeset, subscribed after the fact: the same two files, with line counts.
    let turn_changeset = turn_template.replace("{turnId}", "t1");
    let (snapshot, _turn_subscription) = client.subscribe(turn_changeset).await.unwrap();
    let Some(SnapshotState::Changeset(turn)) = snapshot.snapshot.map(|s| s.state) else {
        panic!("not a changeset snapshot");
    };
    assert_eq!(turn.status, ChangesetStatus::Ready);
    assert_eq!(names(&turn.files, &work), ["notes/a.txt", "readme.txt"]);
    let readme = turn
        .files
        .iter()
        .find(|f| f.id.ends_with("/readme.txt"))
        .unwrap();
    let diff = readme.edit.diff.clone().unwrap();
    assert_eq!((diff.added, diff.removed), (Some(1), Some(0)));
    assert!(readme.edit.before.is_some() && readme.edit.after.is_some());
}

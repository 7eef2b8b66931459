#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use agenthost_store::{SessionRecord, Store, TitleSource};
use serde_json::json;

use super::*;
use agenthost_protocol::ahp_types::state::ResponsePart;
use agenthost_services::{announcement_part, isolation_config_property, wants_worktree};
use agenthost_services_store::StoreSessionData;

/// `<tmp>/proj`, a git repository with one commit, made by the git CLI with an isolated
/// configuration (its worktrees go to `<tmp>/proj.worktrees`, inside the temporary directory).
struct Project {
    tmp: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let project = Self {
            tmp: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(project.root().join("src")).unwrap();
        project.git(&["init", "-q", "-b", "main"]);
        std::fs::write(project.root().join("src/lib.rs"), "fn main() {}\n").unwrap();
        project.git(&["add", "-A"]);
        project.git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "first",
        ]);
        project
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().canonicalize().unwrap().join("proj")
    }

    fn git(&self, args: &[&str]) -> String {
        let output = Command::new("git")
            .current_dir(self.root())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    fn uri(&self, rela: &str) -> String {
        path_to_file_uri(&self.root().join(rela)).unwrap()
    }
}

fn session() -> SessionUri {
    SessionUri::parse("scripted:/0b1c-2d3e").unwrap()
}

/// Isolation over a store that holds `session()`.
fn worktrees() -> GitWorktrees {
    let store = Store::open_in_memory().unwrap();
    store
        .put_session(&SessionRecord {
            uri: session(),
            provider: "scripted".into(),
            title: "New session".into(),
            title_source: TitleSource::Default,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            modified_at: "2026-01-01T00:00:00.000Z".into(),
            working_directories: vec![],
            read: true,
            archived: false,
            default_chat: None,
        })
        .unwrap();
    GitWorktrees::new(Arc::new(StoreSessionData::new(store)))
}

fn turn(id: &str, parts: Vec<ResponsePart>) -> Turn {
    let mut turn: Turn = serde_json::from_value(json!({
        "id": id, "message": { "text": "hi", "origin": { "kind": "user" } }, "responseParts": [], "state": "complete"
    }))
    .unwrap();
    turn.response_parts = parts;
    turn
}

#[test]
fn the_config_value_selects_isolation_and_rejects_anything_else() {
    assert!(!wants_worktree(None).unwrap());
    assert!(!wants_worktree(Some(&json!("none"))).unwrap());
    assert!(wants_worktree(Some(&json!("worktree"))).unwrap());
    for bad in [
        json!("Worktree"),
        json!(true),
        json!({ "mode": "worktree" }),
    ] {
        let error = wants_worktree(Some(&bad)).unwrap_err();
        assert!(matches!(error, IsolationError::UnknownMode(_)), "{error}");
        assert!(error.to_string().contains("\"none\" or \"worktree\""));
    }
    let property = isolation_config_property();
    assert_eq!(property.session_mutable, Some(false));
    assert_eq!(property.default, Some(json!("none")));
}

#[test]
fn worktree_names_are_safe_for_any_session_uri() {
    assert_eq!(worktree_name(&session(), 0), "session-0b1c-2d3e");
    assert_eq!(worktree_name(&session(), 2), "session-0b1c-2d3e-3");
    let hostile = SessionUri::parse("copilot:/..%2F..%2Fetc").unwrap();
    let name = worktree_name(&hostile, 0);
    agenthost_checkpoint::validate_worktree_name(&name).unwrap();
    assert!(!name.contains('/') && !name.contains(".."), "{name}");
}

#[tokio::test]
async fn isolating_moves_the_directories_into_a_new_worktree_and_release_removes_it() {
    let project = Project::new();
    let worktrees = worktrees();
    let requested = vec![project.uri("src")];
    let record = worktrees.isolate(&session(), &requested).await.unwrap();

    assert_eq!(record.worktrees.len(), 1);
    let worktree = &record.worktrees[0];
    let expected = project
        .root()
        .with_file_name("proj.worktrees")
        .join("session-0b1c-2d3e");
    assert_eq!(worktree.path, expected);
    assert_eq!(worktree.branch, "agents/session-0b1c-2d3e");
    assert_eq!(record.requested, requested);
    assert_eq!(
        record.directories,
        vec![path_to_file_uri(&expected.join("src")).unwrap()]
    );
    assert!(expected.join("src/lib.rs").is_file());
    // The user's checkout still has its branch checked out.
    assert_eq!(project.git(&["branch", "--show-current"]).trim(), "main");

    worktrees.release(&record).await;
    assert!(!expected.exists());
    assert!(!project.git(&["branch", "--list"]).contains("agents/"));
}

#[tokio::test]
async fn a_taken_name_gets_the_next_one_and_a_non_repository_is_refused_cleanly() {
    let project = Project::new();
    let worktrees = worktrees();
    let first = worktrees
        .isolate(&session(), &[project.uri("")])
        .await
        .unwrap();
    let second = worktrees
        .isolate(&session(), &[project.uri("")])
        .await
        .unwrap();
    assert_eq!(second.worktrees[0].branch, "agents/session-0b1c-2d3e-2");
    worktrees.release(&first).await;
    worktrees.release(&second).await;

    let plain = tempfile::tempdir().unwrap();
    let plain_uri = path_to_file_uri(&plain.path().canonicalize().unwrap()).unwrap();
    // The repository's worktree is created first, then removed again when the plain folder fails.
    let error = worktrees
        .isolate(&session(), &[project.uri("src"), plain_uri])
        .await
        .unwrap_err();
    assert!(matches!(error, IsolationError::Refused { .. }), "{error}");
    assert!(
        !project
            .root()
            .with_file_name("proj.worktrees")
            .join("session-0b1c-2d3e")
            .exists()
    );
    assert!(matches!(
        worktrees.isolate(&session(), &[]).await.unwrap_err(),
        IsolationError::NoDirectory
    ));
}

#[tokio::test]
async fn the_live_announcement_shows_once_for_the_default_chat_and_restores_idempotently() {
    let project = Project::new();
    let worktrees = worktrees();
    let default_chat = ChatUri::default_for(&session());
    let other_chat = ChatUri::parse("ahp-chat:/side").unwrap();
    assert_eq!(
        worktrees
            .take_live_announcement(&session(), &default_chat)
            .await,
        None,
        "not isolated yet"
    );
    let record = worktrees
        .isolate(&session(), &[project.uri("")])
        .await
        .unwrap();
    worktrees.record(&session(), &record).await.unwrap();
    assert_eq!(
        worktrees.isolation(&session()).await.as_ref(),
        Some(&record)
    );

    assert_eq!(
        worktrees
            .take_live_announcement(&session(), &other_chat)
            .await,
        None
    );
    let text = worktrees
        .take_live_announcement(&session(), &default_chat)
        .await
        .unwrap();
    assert!(text.contains("agents/session-0b1c-2d3e"), "{text}");
    assert!(text.contains(&record.worktrees[0].path.display().to_string()));
    assert_eq!(
        worktrees
            .take_live_announcement(&session(), &default_chat)
            .await,
        None,
        "shown once"
    );

    let history = vec![
        turn("t1", vec![announcement_part("old text")]),
        turn("t2", vec![]),
    ];
    // A history that has it (the host's own record of the live turn) is left alone.
    let restored = worktrees
        .restore_announcement(&session(), &default_chat, history.clone())
        .await;
    assert_eq!(restored, history);
    // One without it (the agent's own history) gets it at the start of the first turn.
    let bare = vec![turn("t1", vec![]), turn("t2", vec![])];
    let restored = worktrees
        .restore_announcement(&session(), &default_chat, bare.clone())
        .await;
    assert_eq!(restored[0].response_parts, vec![announcement_part(&text)]);
    assert_eq!(restored[1], bare[1]);
    let again = worktrees
        .restore_announcement(&session(), &default_chat, restored.clone())
        .await;
    assert_eq!(again, restored);
    // Other chats pass through.
    assert_eq!(
        worktrees
            .restore_announcement(&session(), &other_chat, bare.clone())
            .await,
        bare
    );
    worktrees.release(&record).await;
}

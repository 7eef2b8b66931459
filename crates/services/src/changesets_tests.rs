#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use agenthost_checkpoint::{CheckpointConfig, GitCheckpointService, MemoryLedger};
use agenthost_protocol::ChatUri;
use agenthost_protocol::ahp_types::state::{RootState, SessionState};
use agenthost_state::StateConfig;
use serde_json::json;

use super::*;

const SESSION: &str = "ahp-session:/cs1";

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    state: Arc<StateManager>,
    checkpoints: Arc<dyn CheckpointService>,
    changesets: CheckpointChangesets,
}

fn git(repo: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@invalid"])
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().canonicalize().unwrap();
    git(&repo, &["init", "--quiet"]);
    std::fs::write(repo.join("a.txt"), "one\n").unwrap();
    std::fs::write(repo.join("keep.txt"), "keep\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "seed"]);
    let state = StateManager::new(
        serde_json::from_value::<RootState>(json!({ "agents": [] })).unwrap(),
        StateConfig::default(),
    );
    let session: SessionState = serde_json::from_value(json!({
        "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": [],
        "workingDirectories": [path_to_file_uri(&repo).unwrap()]
    }))
    .unwrap();
    state
        .insert_session(&SESSION.parse().unwrap(), session)
        .unwrap();
    let state = Arc::new(state);
    let checkpoints: Arc<dyn CheckpointService> = Arc::new(GitCheckpointService::new(
        CheckpointConfig::default(),
        Arc::new(MemoryLedger::new()),
    ));
    Fixture {
        changesets: CheckpointChangesets::new(state.clone(), checkpoints.clone()),
        _dir: dir,
        repo,
        state,
        checkpoints,
    }
}

impl Fixture {
    fn session(&self) -> SessionUri {
        SessionUri::parse(SESSION).unwrap()
    }

    async fn turn(&self, turn: &str, edit: impl FnOnce(&Path)) {
        let session = self.session();
        let chat = ChatUri::default_for(&session);
        let dirs = vec![self.repo.clone()];
        self.checkpoints.capture_baseline(&session, &dirs).await;
        self.checkpoints
            .capture_turn_start(&session, &chat, turn, &dirs)
            .await;
        edit(&self.repo);
        let written = self
            .checkpoints
            .capture_turn_end(&session, &chat, turn, &dirs)
            .await
            .unwrap();
        assert!(written.is_some(), "turn {turn} wrote no checkpoint");
    }

    fn changeset(&self, uri: &str) -> ChangesetState {
        match self.state.read(|h| h.channel(uri).cloned()) {
            Some(ChannelState::Changeset(changeset)) => *changeset,
            other => panic!("{uri} is not a changeset channel: {other:?}"),
        }
    }

    /// `(file name, added, removed)` of every file of the changeset, sorted.
    fn files(&self, uri: &str) -> Vec<(String, i64, i64)> {
        let mut files: Vec<_> = self
            .changeset(uri)
            .files
            .iter()
            .map(|file| {
                let name = file.id.rsplit('/').next().unwrap().to_owned();
                let diff = file.edit.diff.clone().unwrap();
                (name, diff.added.unwrap(), diff.removed.unwrap())
            })
            .collect();
        files.sort();
        files
    }
}

fn changeset(uri: String) -> ChangesetUri {
    ChangesetUri::parse(&uri).unwrap()
}

fn turn_uri(turn: &str) -> String {
    ChangesetUri::turn(
        &SessionUri::parse(SESSION).unwrap(),
        &agenthost_protocol::SafeId::new(turn).unwrap(),
    )
    .to_string()
}

fn session_uri() -> String {
    ChangesetUri::session(&SessionUri::parse(SESSION).unwrap()).to_string()
}

#[tokio::test]
async fn a_subscribed_changeset_lists_exactly_the_files_the_turns_changed() {
    let f = fixture();
    f.turn("t1", |repo| {
        std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(repo.join("b.txt"), "new\n").unwrap();
    })
    .await;
    f.changesets
        .materialize(&changeset(session_uri()))
        .await
        .unwrap();
    f.changesets
        .materialize(&changeset(turn_uri("t1")))
        .await
        .unwrap();
    let expected = [("a.txt".to_owned(), 1, 0), ("b.txt".to_owned(), 1, 0)];
    assert_eq!(f.files(&session_uri()), expected);
    assert_eq!(f.files(&turn_uri("t1")), expected);
    assert_eq!(f.changeset(&session_uri()).status, ChangesetStatus::Ready);

    // The file's sides: an added file has only `after`; a modified one both, with content
    // URIs naming the checkpoint revisions.
    let state = f.changeset(&turn_uri("t1"));
    let added = state
        .files
        .iter()
        .find(|file| file.id.ends_with("/b.txt"))
        .unwrap();
    assert!(added.edit.before.is_none());
    let after = added.edit.after.as_ref().unwrap();
    assert_eq!(after.uri, added.id);
    assert!(
        after
            .content
            .uri
            .starts_with("agenthost-blob:refs%2Fagents%2F"),
        "{}",
        after.content.uri
    );
    assert!(after.content.uri.contains("/b.txt?repo=file%3A%2F%2F"));

    // A second turn deletes the new file: the turn shows the deletion, the session nets it out.
    f.turn("t2", |repo| {
        std::fs::remove_file(repo.join("b.txt")).unwrap()
    })
    .await;
    f.changesets.schedule_recompute(
        &f.session(),
        ChatUri::default_for(&f.session()).as_str(),
        Some("t2"),
    );
    assert_eq!(
        f.changeset(&session_uri()).status,
        ChangesetStatus::Recomputing,
        "marked at once"
    );
    assert_eq!(
        f.files(&session_uri()),
        expected,
        "the previous files stay while recomputing"
    );
    f.changesets.refresh_session(&f.session()).await;
    assert_eq!(f.files(&session_uri()), [("a.txt".to_owned(), 1, 0)]);
    assert_eq!(f.changeset(&session_uri()).status, ChangesetStatus::Ready);
    assert_eq!(
        f.files(&turn_uri("t1")),
        expected,
        "a past turn keeps its files"
    );
    f.changesets
        .materialize(&changeset(turn_uri("t2")))
        .await
        .unwrap();
    assert_eq!(f.files(&turn_uri("t2")), [("b.txt".to_owned(), 0, 1)]);
    let deleted = &f.changeset(&turn_uri("t2")).files[0];
    assert!(deleted.edit.after.is_none() && deleted.edit.before.is_some());

    // The session advertises its catalogue.
    let catalog = f
        .state
        .read(|h| h.session(SESSION).unwrap().changesets.clone())
        .unwrap();
    assert_eq!(catalog, changeset_catalog(&f.session()));
    assert_eq!(catalog[0].uri_template, session_uri());
    assert_eq!(
        catalog[1].uri_template.replace("{turnId}", "t1"),
        turn_uri("t1")
    );

    f.changesets.forget_session(SESSION);
    assert!(f.state.read(|h| h.channel(&session_uri()).is_none()));
    assert!(f.state.read(|h| h.channel(&turn_uri("t1")).is_none()));
}

#[tokio::test]
async fn a_session_without_checkpoints_has_an_empty_changeset() {
    let f = fixture();
    f.changesets
        .materialize(&changeset(session_uri()))
        .await
        .unwrap();
    assert!(f.files(&session_uri()).is_empty());
    f.changesets
        .materialize(&changeset(turn_uri("never")))
        .await
        .unwrap();
    assert!(f.files(&turn_uri("never")).is_empty());
    assert_eq!(
        f.changeset(&turn_uri("never")).status,
        ChangesetStatus::Ready
    );
}

#[tokio::test]
async fn an_unknown_session_is_told_apart_and_nothing_is_added() {
    let f = fixture();
    let other = ChangesetUri::session(&SessionUri::parse("ahp-session:/gone").unwrap());
    assert!(matches!(
        f.changesets.materialize(&other).await,
        Err(ChangesetError::UnknownSession { .. })
    ));
    assert!(f.state.read(|h| h.channel(&other.to_string()).is_none()));
    // Refreshing a session nobody subscribed to only advertises the catalogue.
    f.changesets.refresh_session(&f.session()).await;
    assert!(f.state.read(|h| h.channel(&session_uri()).is_none()));
    assert!(
        f.state
            .read(|h| h.session(SESSION).unwrap().changesets.is_some())
    );
}

#[test]
fn blob_uris_encode_every_part() {
    let uri = blob_uri(Path::new("/r p"), "refs/x", "dir/a b.txt");
    assert_eq!(
        uri,
        "agenthost-blob:refs%2Fx/dir/a%20b.txt?repo=file%3A%2F%2F%2Fr%2520p"
    );
}

use std::path::Path;

use agenthost_protocol::ahp_types::state::{ChatState, SessionState};
use agenthost_services::PullRequest;
use agenthost_services::fakes::{DataCall, FakeHostState, FakeSessionData};
use agenthost_services::fakes::{FakeGitState, GitStateCall};
use agenthost_testkit::CapturedLogs;
use serde_json::json;

use super::*;

const SESSION: &str = "ahp-session:/s1";
const PEER: &str = "ahp-chat:/peer";
const REPO: &str = "file:///work/repo";
const OTHER: &str = "file:///work/other";
const T0: &str = "2026-01-01T00:00:00.000Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn session_state(directories: &[&str]) -> SessionState {
    from(json!({
        "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": [], "workingDirectories": directories
    }))
}

fn chat_state(uri: &str, directories: Option<&[&str]>) -> ChatState {
    let mut chat = json!({
        "resource": uri, "title": "Chat", "status": 1, "modifiedAt": T0, "turns": []
    });
    if let Some(directories) = directories {
        chat["workingDirectories"] = json!(directories);
    }
    from(chat)
}

fn default_chat() -> String {
    ChatUri::default_for(&SessionUri::parse(SESSION).unwrap()).into_string()
}

fn reference(root: &str, pull: bool) -> RepositoryReference {
    RepositoryReference {
        root: root.into(),
        remote: Some("git@github.com:org/project.git".into()),
        branch: Some("feature".into()),
        pull_request: pull.then(|| PullRequest {
            number: 42,
            url: "https://github.com/org/project/pull/42".into(),
            state: "open".into(),
            title: "Add the thing".into(),
        }),
        pull_request_unknown: false,
    }
}

struct Fixture {
    host: Arc<FakeHostState>,
    git: Arc<FakeGitState>,
    data: Arc<FakeSessionData>,
    contribution: GithubReferences,
}

fn fixture() -> Fixture {
    let host = Arc::new(FakeHostState::default());
    let git = Arc::new(FakeGitState::default());
    let data = Arc::new(FakeSessionData::default());
    host.script(|a| {
        a.sessions
            .insert(SESSION.into(), session_state(&[REPO, OTHER]));
        a.chats.insert(PEER.into(), chat_state(PEER, None));
        a.chat_sessions.insert(PEER.into(), SESSION.into());
    });
    git.answer("/work/repo", Ok(reference("/work/repo", true)));
    git.answer("/work/other", Ok(reference("/work/other", false)));
    let contribution = GithubReferences::new(host.clone(), git.clone(), data.clone());
    Fixture {
        host,
        git,
        data,
        contribution,
    }
}

fn turn_end(channel: &str, reason: TurnEndReason) -> TurnEnd {
    TurnEnd {
        session: SESSION.parse().unwrap(),
        chat: channel.parse().unwrap(),
        turn_id: Some("t1".into()),
        reason,
        client_context: None,
    }
}

fn error_info() -> agenthost_protocol::ahp_types::state::ErrorInfo {
    from(json!({ "errorType": "boom", "message": "failed" }))
}

fn error(resumable: bool) -> TurnEndReason {
    TurnEndReason::Error {
        error: error_info(),
        resumable,
    }
}

fn set_meta(key: &str, value: Value) -> DataCall {
    DataCall::SetMeta {
        owner: DataOwner::Session(SessionUri::parse(SESSION).unwrap()),
        key: key.into(),
        value: Some(value.to_string()),
    }
}

fn repo_value() -> Value {
    json!({
        "folder": REPO,
        "remote": "git@github.com:org/project.git",
        "branch": "feature",
        "pullRequest": {
            "number": 42,
            "url": "https://github.com/org/project/pull/42",
            "state": "open",
            "title": "Add the thing"
        }
    })
}

#[test]
fn reasons_that_reconcile() {
    let rejected = TurnEndReason::Rejected {
        error: error_info(),
    };
    let table = [
        (TurnEndReason::Success, true),
        (TurnEndReason::Cancelled, true),
        (error(false), true),
        (error(true), false),
        (rejected, false),
        (TurnEndReason::LocalCommand, false),
    ];
    for (reason, expected) in table {
        assert_eq!(reconciles(&reason), expected, "{reason:?}");
    }
}

#[tokio::test]
async fn started_outcomes_record_the_session_reference() {
    for reason in [
        TurnEndReason::Success,
        TurnEndReason::Cancelled,
        error(false),
    ] {
        let f = fixture();
        f.contribution
            .on_turn_end(&turn_end(SESSION, reason.clone()))
            .unwrap();
        f.contribution.flush().await;
        assert_eq!(
            f.git.calls(),
            [GitStateCall::Reference("/work/repo".into())],
            "{reason:?}"
        );
        assert_eq!(
            f.data.calls(),
            [set_meta(REFERENCE_KEY, repo_value())],
            "{reason:?}"
        );
    }
}

/// A lookup that could not ask GitHub (offline, rate-limited) keeps the pull request recorded
/// for the same folder, remote and branch; a different branch, or GitHub answering "none",
/// replaces it.
#[tokio::test]
async fn an_unanswered_lookup_keeps_the_known_pull_request() {
    let f = fixture();
    f.contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    let offline = RepositoryReference {
        pull_request_unknown: true,
        ..reference("/work/repo", false)
    };
    f.git.answer("/work/repo", Ok(offline.clone()));
    f.contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    assert_eq!(
        f.data.calls().last(),
        Some(&set_meta(REFERENCE_KEY, repo_value())),
        "offline: the pull request stays"
    );

    f.git.answer(
        "/work/repo",
        Ok(RepositoryReference {
            branch: Some("other".into()),
            ..offline
        }),
    );
    f.contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    let mut moved = repo_value();
    moved["branch"] = json!("other");
    moved.as_object_mut().unwrap().remove("pullRequest");
    assert_eq!(
        f.data.calls().last(),
        Some(&set_meta(REFERENCE_KEY, moved)),
        "another branch: the old pull request is not its"
    );

    f.git
        .answer("/work/repo", Ok(reference("/work/repo", false)));
    f.contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    let mut none = repo_value();
    none.as_object_mut().unwrap().remove("pullRequest");
    assert_eq!(f.data.calls().last(), Some(&set_meta(REFERENCE_KEY, none)));
}

#[tokio::test]
async fn other_outcomes_do_nothing() {
    let rejected = TurnEndReason::Rejected {
        error: error_info(),
    };
    for reason in [error(true), rejected, TurnEndReason::LocalCommand] {
        let f = fixture();
        f.contribution
            .on_turn_end(&turn_end(SESSION, reason.clone()))
            .unwrap();
        f.contribution.flush().await;
        assert!(f.git.calls().is_empty(), "{reason:?}");
        assert!(f.data.calls().is_empty(), "{reason:?}");
        assert!(f.host.calls().is_empty(), "{reason:?}");
    }
}

#[test]
fn folder_selection() {
    let f = fixture();
    let session_target = Some(Target {
        folder: REPO.into(),
        key: REFERENCE_KEY.into(),
    });
    // The default chat (by URI, or named by the session state).
    assert_eq!(target(&f, SESSION, &default_chat()), session_target);
    f.host.script(|a| {
        let state = a.sessions.get_mut(SESSION).unwrap();
        state.default_chat = Some("ahp-chat:/main".into());
        a.chats.insert(
            "ahp-chat:/main".into(),
            chat_state("ahp-chat:/main", Some(&[OTHER])),
        );
    });
    assert_eq!(target(&f, SESSION, "ahp-chat:/main"), session_target);
    // A peer chat without its own directories, an unknown chat, and one sharing the session's.
    assert_eq!(target(&f, SESSION, PEER), session_target);
    assert_eq!(target(&f, SESSION, "ahp-chat:/gone"), session_target);
    f.host.script(|a| {
        a.chats
            .insert(PEER.into(), chat_state(PEER, Some(&[REPO, OTHER])));
    });
    assert_eq!(target(&f, SESSION, PEER), session_target);
    // A peer chat with its own folder.
    f.host.script(|a| {
        a.chats
            .insert(PEER.into(), chat_state(PEER, Some(&[OTHER])));
    });
    assert_eq!(
        target(&f, SESSION, PEER),
        Some(Target {
            folder: OTHER.into(),
            key: format!("githubReference:{PEER}"),
        })
    );
    // A session without working directories, and a session that is gone.
    f.host.script(|a| {
        a.sessions.insert(SESSION.into(), session_state(&[]));
    });
    assert_eq!(target(&f, SESSION, &default_chat()), None);
    assert_eq!(target(&f, "ahp-session:/gone", PEER), None);
}

fn target(f: &Fixture, session: &str, chat: &str) -> Option<Target> {
    f.contribution
        .target(&session.parse().unwrap(), &chat.parse().unwrap())
}

#[tokio::test]
async fn a_peer_chat_with_its_own_folder_records_under_its_key() {
    let f = fixture();
    f.host.script(|a| {
        a.chats
            .insert(PEER.into(), chat_state(PEER, Some(&[OTHER])));
    });
    f.contribution
        .on_turn_end(&turn_end(PEER, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    assert_eq!(
        f.git.calls(),
        [GitStateCall::Reference("/work/other".into())]
    );
    assert_eq!(
        f.data.calls(),
        [set_meta(
            &chat_reference_key(PEER),
            json!({
                "folder": OTHER,
                "remote": "git@github.com:org/project.git",
                "branch": "feature"
            })
        )]
    );
}

#[tokio::test]
async fn failures_are_logged_and_never_reach_the_turn() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let f = fixture();
    f.git.answer(
        "/work/repo",
        Err(GitStateError::Unreadable {
            folder: "/work/repo".into(),
            reason: "corrupt HEAD".into(),
        }),
    );
    f.contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    assert!(f.data.calls().is_empty());
    let text = logs.text();
    assert!(text.contains("WARN"), "{text}");
    assert!(text.contains("corrupt HEAD"), "{text}");
    assert!(text.contains(SESSION) && text.contains("t1"), "{text}");

    // A failing store write is logged too.
    let f = fixture();
    f.data.script(|a| a.fail = Some("disk full".into()));
    f.contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    assert_eq!(f.data.calls().len(), 1);
    assert!(logs.text().contains("disk full"));
}

#[tokio::test]
async fn a_folder_that_is_not_a_repository_records_nothing() {
    let f = fixture();
    f.host.script(|a| {
        a.sessions
            .insert(SESSION.into(), session_state(&["file:///not/a/repo"]));
    });
    f.contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    assert_eq!(
        f.git.calls(),
        [GitStateCall::Reference("/not/a/repo".into())]
    );
    assert!(f.data.calls().is_empty());
}

#[tokio::test]
async fn non_file_folders_are_skipped() {
    let f = fixture();
    f.host.script(|a| {
        a.sessions.insert(
            SESSION.into(),
            session_state(&["vscode-remote://host/repo"]),
        );
    });
    f.contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    assert!(f.git.calls().is_empty());
    assert!(f.data.calls().is_empty());
}

#[test]
fn without_a_runtime_the_hook_returns_and_does_nothing() {
    let f = fixture();
    f.contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    assert!(f.git.calls().is_empty());
    assert!(f.data.calls().is_empty());
}

/// A [`GitState`] whose answers the test releases, to overlap two reconciles.
struct GatedGitState {
    gates: Mutex<Vec<tokio::sync::oneshot::Receiver<RepositoryReference>>>,
}

impl GitState for GatedGitState {
    fn reference(
        &self,
        _folder: &Path,
    ) -> futures::future::BoxFuture<'static, Result<RepositoryReference, GitStateError>> {
        let gate = lock(&self.gates).remove(0);
        Box::pin(async move { Ok(gate.await.unwrap()) })
    }
}

#[tokio::test]
async fn a_stale_lookup_does_not_overwrite_a_newer_one() {
    let f = fixture();
    let (first_tx, first_rx) = tokio::sync::oneshot::channel();
    let (second_tx, second_rx) = tokio::sync::oneshot::channel();
    let git = Arc::new(GatedGitState {
        gates: Mutex::new(vec![first_rx, second_rx]),
    });
    let contribution = GithubReferences::new(f.host.clone(), git, f.data.clone());
    contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    // The newer lookup answers first; the older one answers later and is dropped.
    second_tx.send(reference("/work/repo", true)).unwrap();
    tokio::task::yield_now().await;
    first_tx.send(reference("/work/repo", false)).unwrap();
    contribution.flush().await;
    assert_eq!(f.data.calls(), [set_meta(REFERENCE_KEY, repo_value())]);
    assert!(lock(&contribution.work.generations).is_empty());
}

#[test]
fn the_contribution_declares_its_id_order_and_hook() {
    assert_eq!(GithubReferences::ID, "githubReferences");
    assert_eq!(GithubReferences::ORDER, 300);
    assert_eq!(GithubReferences::HOOKS, HookSet::of(&[Hook::TurnEnd]));
}

#[tokio::test]
async fn a_graceful_shutdown_waits_for_a_reconcile_to_record_its_result() {
    let f = fixture();
    let (answer, gate) = tokio::sync::oneshot::channel();
    let git = Arc::new(GatedGitState {
        gates: Mutex::new(vec![gate]),
    });
    let contribution = GithubReferences::new(f.host.clone(), git, f.data.clone());
    contribution
        .on_turn_end(&turn_end(SESSION, TurnEndReason::Success))
        .unwrap();
    // What a host's shutdown waits for: every queued write and pending work.
    let shutdown = tokio::spawn(agenthost_services::flush_pending_writes());
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!shutdown.is_finished(), "the lookup has not answered yet");
    answer.send(reference("/work/repo", true)).unwrap();
    shutdown.await.unwrap();
    assert_eq!(
        f.data.calls(),
        [set_meta(REFERENCE_KEY, repo_value())],
        "recorded before the shutdown went on"
    );
}

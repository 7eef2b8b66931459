use std::path::PathBuf;

use agenthost_protocol::error_info::error_info;
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_services::fakes::{
    ChangesetCall, CheckpointCall, FakeChangesets, FakeCheckpoints, FakeConfiguration,
};
use agenthost_testkit::CapturedLogs;

use super::*;

const SESSION: &str = "ahp-session:/s1";
const PEER: &str = "ahp-chat:/peer";

struct Fixture {
    checkpoints: Arc<FakeCheckpoints>,
    changesets: Arc<FakeChangesets>,
    contribution: CheckpointAndChangeset,
}

fn fixture() -> Fixture {
    let checkpoints = Arc::new(FakeCheckpoints::default());
    let changesets = Arc::new(FakeChangesets::default());
    let configuration = Arc::new(FakeConfiguration::default());
    configuration.script(|a| {
        a.working_directories = vec![
            "file:///work/repo".into(),
            "https://example.invalid/not-local".into(),
        ]
    });
    let contribution =
        CheckpointAndChangeset::new(checkpoints.clone(), changesets.clone(), configuration);
    Fixture {
        checkpoints,
        changesets,
        contribution,
    }
}

fn default_chat() -> String {
    ChatUri::default_for(&SessionUri::parse(SESSION).unwrap()).into_string()
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

fn error(resumable: bool) -> TurnEndReason {
    TurnEndReason::Error {
        error: error_info("provider", "the model went away"),
        resumable,
    }
}

fn capture_of(channel: &str) -> CheckpointCall {
    CheckpointCall::TurnEnd(
        SESSION.into(),
        channel.into(),
        "t1".into(),
        vec![PathBuf::from("/work/repo")],
    )
}

#[tokio::test]
async fn a_successful_turn_schedules_the_recompute_then_captures_then_refreshes() {
    let f = fixture();
    f.contribution
        .on_turn_end(&turn_end(&default_chat(), TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    assert_eq!(
        f.changesets.calls(),
        [
            ChangesetCall::ScheduleRecompute(SESSION.into(), default_chat(), Some("t1".into())),
            ChangesetCall::RefreshSession(SESSION.into()),
        ]
    );
    // Only the local working directory is captured.
    assert_eq!(f.checkpoints.calls(), [capture_of(&default_chat())]);
}

#[tokio::test]
async fn the_hook_returns_before_the_capture_settles() {
    let f = fixture();
    f.checkpoints.hold();
    f.contribution
        .on_turn_end(&turn_end(PEER, TurnEndReason::Success))
        .unwrap();
    // The hook has returned; the recompute is scheduled, the refresh waits for the capture.
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
    assert_eq!(f.checkpoints.calls(), [capture_of(PEER)]);
    assert_eq!(
        f.changesets.calls(),
        [ChangesetCall::ScheduleRecompute(
            SESSION.into(),
            PEER.into(),
            Some("t1".into())
        )]
    );
    f.checkpoints.release();
    f.contribution.flush().await;
    assert_eq!(
        f.changesets.calls().last(),
        Some(&ChangesetCall::RefreshSession(SESSION.into()))
    );
}

#[tokio::test]
async fn a_non_resumable_error_captures_and_other_endings_do_nothing() {
    let f = fixture();
    f.contribution
        .on_turn_end(&turn_end(PEER, error(false)))
        .unwrap();
    f.contribution.flush().await;
    assert_eq!(f.checkpoints.calls(), [capture_of(PEER)]);

    for reason in [
        TurnEndReason::Cancelled,
        error(true),
        TurnEndReason::Rejected {
            error: error_info("rejected", "archived"),
        },
        TurnEndReason::LocalCommand,
    ] {
        let f = fixture();
        f.contribution
            .on_turn_end(&turn_end(PEER, reason.clone()))
            .unwrap();
        f.contribution.flush().await;
        assert!(f.checkpoints.calls().is_empty(), "{reason:?}");
        assert!(f.changesets.calls().is_empty(), "{reason:?}");
    }

    // A turn end without a turn id has nothing to capture.
    let f = fixture();
    let mut orphan = turn_end(PEER, TurnEndReason::Success);
    orphan.turn_id = None;
    f.contribution.on_turn_end(&orphan).unwrap();
    f.contribution.flush().await;
    assert!(f.checkpoints.calls().is_empty());
}

#[tokio::test]
async fn a_failed_capture_logs_one_warning_and_still_refreshes() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let f = fixture();
    f.checkpoints
        .answer_turn_end(Err("the object database is read-only".into()));
    f.contribution
        .on_turn_end(&turn_end(PEER, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    let text = logs.text();
    let expected = "Turn checkpoint capture failed for ahp-session:/s1/t1:";
    assert_eq!(text.matches(expected).count(), 1, "{text}");
    assert!(text.contains("WARN"), "{text}");
    assert!(text.contains("the object database is read-only"), "{text}");
    assert_eq!(
        f.changesets.calls().last(),
        Some(&ChangesetCall::RefreshSession(SESSION.into()))
    );

    // A capture with nothing to capture is not a failure.
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let f = fixture();
    f.contribution
        .on_turn_end(&turn_end(PEER, TurnEndReason::Success))
        .unwrap();
    f.contribution.flush().await;
    assert!(!logs.text().contains("capture failed"), "{}", logs.text());
}

#[test]
fn without_a_runtime_the_capture_is_skipped_and_the_recompute_still_scheduled() {
    let f = fixture();
    f.contribution
        .on_turn_end(&turn_end(PEER, TurnEndReason::Success))
        .unwrap();
    assert!(f.checkpoints.calls().is_empty());
    assert_eq!(f.changesets.calls().len(), 1);
}

#[test]
fn the_contract() {
    assert_eq!(CheckpointAndChangeset::ID, "checkpointAndChangeset");
    assert_eq!(CheckpointAndChangeset::ORDER, 100);
    assert_eq!(CheckpointAndChangeset::HOOKS, HookSet::of(&[Hook::TurnEnd]));
}

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use agenthost_protocol::{ChatUri, SafeId, SessionUri};

use super::*;
use crate::ledger::MemoryLedger;
use crate::testutil::{TempRepo, config};

fn session(id: &str) -> SessionUri {
    SessionUri::canonical(SafeId::new(id).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_through_the_async_service() {
    let repo = TempRepo::init();
    repo.write("a.txt", "a\n");
    repo.commit_all("seed");
    let service = GitCheckpointService::new(config(true), Arc::new(MemoryLedger::new()));
    let session = session("s1");
    let chat = ChatUri::default_for(&session);
    let dirs = vec![repo.path().to_owned()];
    service.capture_baseline(&session, &dirs).await;
    assert_eq!(
        service.baseline(&session, None).await.as_deref(),
        Some("refs/agents/s1/checkpoints/turn/0")
    );
    assert_eq!(service.latest_checkpoint(&session).await, None);
    service
        .capture_turn_start(&session, &chat, "t1", &dirs)
        .await;
    repo.write("a.txt", "edited\n");
    repo.write("b.txt", "new\n");
    let written = service.capture_turn_end(&session, &chat, "t1", &dirs).await;
    assert_eq!(
        written.unwrap().as_deref(),
        Some("refs/agents/s1/checkpoints/turn/1")
    );
    assert_eq!(
        service.latest_checkpoint(&session).await.as_deref(),
        Some("refs/agents/s1/checkpoints/turn/1")
    );
    let pair = service.turn_pair(&session, "t1", None).await.unwrap();
    assert_eq!(pair.current, "refs/agents/s1/checkpoints/turn/1");
    let changes = service
        .turn_changeset(&session, "t1", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changes.len(), 2);
    let direct = service
        .changeset(repo.path(), &pair.parent, &pair.current)
        .await
        .unwrap();
    assert_eq!(direct, changes);
    let report = service
        .rollback_turn(&session, "t1", repo.path())
        .await
        .unwrap();
    assert_eq!(report.removed, ["b.txt"]);
    assert_eq!(repo.read("a.txt").as_deref(), Some("a\n"));
    let info = service.repo_info(repo.path()).await.unwrap();
    assert_eq!(info.branch.as_deref(), Some("main"));
    service.delete_all(&session, &dirs).await;
    assert_eq!(service.baseline(&session, None).await, None);
    assert_eq!(repo.git(&["for-each-ref", "refs/agents/"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_run_in_parallel_in_one_repository() {
    let repo = TempRepo::init();
    repo.write("a.txt", "a\n");
    repo.commit_all("seed");
    let service = GitCheckpointService::new(config(true), Arc::new(MemoryLedger::new()));
    let dirs = vec![repo.path().to_owned()];
    let mut tasks = Vec::new();
    for i in 0..8 {
        let service = service.clone();
        let dirs = dirs.clone();
        tasks.push(tokio::spawn(async move {
            let session = session(&format!("p{i}"));
            let chat = ChatUri::default_for(&session);
            service.capture_baseline(&session, &dirs).await;
            service
                .capture_turn_start(&session, &chat, "t", &dirs)
                .await;
            service
                .capture_turn_end(&session, &chat, "t", &dirs)
                .await
                .unwrap();
            service.turn_pair(&session, "t", None).await.is_some()
        }));
    }
    for task in tasks {
        assert!(task.await.unwrap());
    }
    let refs = repo.git(&["for-each-ref", "--format=%(refname)", "refs/agents/"]);
    assert_eq!(refs.lines().count(), 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_over_budget_is_cancelled_and_keeps_the_session_locked_until_it_stops() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;

    let mut config = config(false);
    config.budget = Duration::from_millis(50);
    let service = GitCheckpointService::new(config, Arc::new(MemoryLedger::new()));
    let session = session("slow");
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let seen = saw_cancel.clone();
    let started = Instant::now();
    let result = service
        .run(Some(&session), move |_, cancel| {
            // Stands for a long capture: it polls the flag like the capture steps do.
            while !cancel.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(150));
            seen.store(true, Ordering::Relaxed);
        })
        .await;
    assert!(
        matches!(result, Err(CheckpointError::Timeout { budget_ms: 50 })),
        "{result:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(150),
        "the caller is not held up"
    );
    // The next operation of the session waits until the abandoned work has really stopped.
    let after = service
        .run(Some(&session), move |_, _| {
            saw_cancel.load(Ordering::Relaxed)
        })
        .await
        .unwrap();
    assert!(
        after,
        "the second operation ran before the first one stopped"
    );
    // Capture methods swallow the timeout: they return, logged.
    let repo = TempRepo::init();
    service
        .capture_baseline(&session, &[repo.path().to_owned()])
        .await;
}

#[tokio::test]
async fn the_null_service_does_nothing() {
    let service = NullCheckpointService;
    let session = session("n");
    let chat = ChatUri::default_for(&session);
    let dirs = vec![std::env::temp_dir()];
    service.capture_baseline(&session, &dirs).await;
    service
        .capture_turn_start(&session, &chat, "t", &dirs)
        .await;
    assert_eq!(
        service
            .capture_turn_end(&session, &chat, "t", &dirs)
            .await
            .unwrap(),
        None
    );
    assert_eq!(service.turn_pair(&session, "t", None).await, None);
    assert_eq!(service.baseline(&session, None).await, None);
    assert!(
        service
            .turn_changeset(&session, "t", None)
            .await
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        service.compare_turns(&session, None, "t", None).await,
        Err(CheckpointError::NotGitBacked { .. })
    ));
    let dyn_service: &dyn CheckpointService = &service;
    dyn_service.delete_all(&session, &dirs).await;
}

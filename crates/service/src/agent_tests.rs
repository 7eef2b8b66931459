use std::sync::Arc;

use agenthost_state::Outbox;
use serde_json::json;

use crate::test_support::{create_session as create, in_memory_host as host};

struct Sink;
impl Outbox for Sink {
    fn push(&self, _: Arc<str>) -> bool {
        true
    }
}

fn tempfile_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[tokio::test(start_paused = true)]
async fn sessions_idle_past_the_limit_are_evicted_and_stay_restorable() {
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    let limit = std::time::Duration::from_secs(60);
    create(&service, "scripted:/idle").await;
    create(&service, "scripted:/watched").await;
    create(&service, "scripted:/active").await;
    let watcher = state.register_subscriber(Arc::new(Sink));
    state.subscribe(watcher, "scripted:/watched").unwrap();

    assert!(host.evict_idle_once(limit).await.is_empty(), "just created");
    tokio::time::sleep(std::time::Duration::from_secs(45)).await;
    // Activity on a session (an accepted action) starts its idle time again.
    state
        .dispatch_server(
            "scripted:/active",
            serde_json::from_value(json!({ "type": "session/titleChanged", "title": "busy" }))
                .unwrap(),
        )
        .unwrap();
    assert!(host.evict_idle_once(limit).await.is_empty(), "45 s idle");
    tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    assert_eq!(host.evict_idle_once(limit).await, ["scripted:/idle"]);
    assert!(state.read(|h| h.session("scripted:/idle").is_none()));
    assert!(state.read(|h| h.session("scripted:/watched").is_some()));
    assert!(state.read(|h| h.session("scripted:/active").is_some()));
    assert_eq!(
        service.list_sessions().unwrap().items.len(),
        3,
        "evicted sessions stay listed"
    );
    service.ensure_channel("scripted:/idle").await.unwrap();
    assert!(state.read(|h| h.session("scripted:/idle").is_some()));
    // Restored, it starts a new idle time; the other one's runs out 60 s after its action.
    assert!(host.evict_idle_once(limit).await.is_empty());
    tokio::time::sleep(std::time::Duration::from_secs(40)).await;
    assert_eq!(host.evict_idle_once(limit).await, ["scripted:/active"]);
    // A watched session is never evicted, however long it is idle.
    tokio::time::sleep(std::time::Duration::from_secs(600)).await;
    assert_eq!(host.evict_idle_once(limit).await, ["scripted:/idle"]);
    assert!(state.read(|h| h.session("scripted:/watched").is_some()));
}

#[tokio::test(start_paused = true)]
async fn the_sweep_runs_on_its_own_in_a_task() {
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    create(&service, "scripted:/idle").await;
    host.spawn_idle_eviction(std::time::Duration::from_secs(60));
    tokio::time::sleep(std::time::Duration::from_secs(50)).await;
    assert!(state.read(|h| h.session("scripted:/idle").is_some()));
    // Swept every 15 s: gone by 75 s.
    tokio::time::sleep(std::time::Duration::from_secs(26)).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(state.read(|h| h.session("scripted:/idle").is_none()));
}

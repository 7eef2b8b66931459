use std::sync::Arc;

use agenthost_dispatcher::{Dispatcher, LaunchKind, RegistrationSet, ServiceRegistry};
use agenthost_protocol::commands::CreateSessionParams;
use agenthost_service::{ServiceConfig, SessionService, root_state, state_for};
use agenthost_side_effects::{Orchestrator, OrchestratorConfig};
use agenthost_state::{Outbox, StateManager};
use agenthost_store::Store;
use serde_json::json;

use super::Host;

struct Sink;
impl Outbox for Sink {
    fn push(&self, _: Arc<str>) -> bool {
        true
    }
}

fn host(root: &std::path::Path) -> (Arc<Host>, Arc<StateManager>, Arc<SessionService>) {
    let store = Store::open_in_memory().unwrap();
    let agents = vec![
        serde_json::from_value(json!({
            "provider": "scripted", "displayName": "S", "description": "",
            "models": [{ "id": "m", "provider": "scripted", "name": "M" }]
        }))
        .unwrap(),
    ];
    let state = state_for(&store, root_state(agents)).unwrap();
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let service = Arc::new(
        SessionService::new(
            Arc::clone(&state),
            dispatcher.clone(),
            store.clone(),
            ServiceConfig {
                roots: vec![root.to_path_buf()],
            },
        )
        .unwrap(),
    );
    let orchestrator = Orchestrator::start(
        Arc::clone(&state),
        dispatcher,
        Vec::new(),
        store,
        OrchestratorConfig::default(),
    )
    .unwrap();
    let host = Host::new(
        Arc::clone(&state),
        Arc::clone(&service),
        orchestrator,
        LaunchKind::Serve,
        RegistrationSet::new(),
    );
    (host, state, service)
}

async fn create(service: &SessionService, uri: &str) {
    let params: CreateSessionParams = serde_json::from_value(json!({ "channel": uri })).unwrap();
    service.create_session(params, "c").await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn idle_sessions_are_evicted_after_two_sweeps_and_stay_restorable() {
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    create(&service, "scripted:/idle").await;
    create(&service, "scripted:/watched").await;
    let watcher = state.register_subscriber(Arc::new(Sink));
    state.subscribe(watcher, "scripted:/watched").unwrap();

    assert!(
        host.evict_idle_once().await.is_empty(),
        "idle for less than one period"
    );
    assert_eq!(host.evict_idle_once().await, ["scripted:/idle"]);
    assert!(state.read(|h| h.session("scripted:/idle").is_none()));
    assert!(state.read(|h| h.session("scripted:/watched").is_some()));
    assert_eq!(
        service.list_sessions().unwrap().items.len(),
        2,
        "evicted sessions stay listed"
    );
    service.ensure_channel("scripted:/idle").await.unwrap();
    assert!(state.read(|h| h.session("scripted:/idle").is_some()));
    // Restored, it starts a new idle period.
    assert!(host.evict_idle_once().await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_sweep_runs_on_its_interval() {
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    create(&service, "scripted:/idle").await;
    let sweeping = Arc::clone(&host);
    tokio::spawn(async move {
        sweeping
            .evict_idle_sessions(std::time::Duration::from_secs(60))
            .await
    });
    // The first tick is immediate, the second after 60 s: evicted then, not before.
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    assert!(state.read(|h| h.session("scripted:/idle").is_some()));
    tokio::time::sleep(std::time::Duration::from_secs(31)).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(state.read(|h| h.session("scripted:/idle").is_none()));
}

fn tempfile_dir() -> TempDir {
    TempDir::new()
}

/// A temporary directory removed on drop (the server crate has no tempfile dependency).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "agenthost-server-host-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

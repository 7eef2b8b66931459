use std::sync::Arc;

use agenthost_service::SessionService;
use agenthost_service::test_support::{create_session as create, in_memory_host};
use agenthost_state::{Outbox, StateManager};
use serde_json::json;

use super::{Host, RATE_LIMITED_REASON};
use crate::config::ServerConfig;
use crate::connection::{Connection, Queues};
use crate::handler::ProtocolHandler;
use crate::token::Token;

fn host(root: &std::path::Path) -> (Arc<Host>, Arc<StateManager>, Arc<SessionService>) {
    let (agent, state, sessions) = in_memory_host(root);
    let host = Host::new(agent, agenthost_protocol::machine::MachineFacts::default());
    (host, state, sessions)
}

fn limited(id: u64, tweak: impl FnOnce(&mut ServerConfig)) -> (Connection, Queues) {
    let mut config = ServerConfig::new(Token::new("host-test-token".to_owned()).unwrap());
    tweak(&mut config);
    Connection::detached(id, &config)
}

async fn subscribe(host: &Host, conn: &Connection, channel: &str) -> Result<(), i32> {
    host.request(
        conn.clone(),
        "subscribe".to_owned(),
        Some(json!({ "channel": channel })),
    )
    .await
    .map(|_| ())
    .map_err(|e| e.code)
}

#[tokio::test(start_paused = true)]
async fn a_connection_holds_at_most_max_subscriptions() {
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    for id in ["a", "b", "c"] {
        create(&service, &format!("scripted:/{id}")).await;
    }
    let (conn, _queues) = limited(1, |c| c.max_subscriptions = 2);
    assert_eq!(subscribe(&host, &conn, "ahp-root://").await, Ok(()));
    assert_eq!(subscribe(&host, &conn, "scripted:/a").await, Ok(()));
    // The third is refused with PermissionDenied, and nothing was subscribed.
    assert_eq!(subscribe(&host, &conn, "scripted:/b").await, Err(-32009));
    assert_eq!(state.subscriber_count("scripted:/b"), 0);
    // Subscribing again to a held channel costs nothing.
    assert_eq!(subscribe(&host, &conn, "scripted:/a").await, Ok(()));
    // An unsubscribe frees a place.
    host.notification(
        conn.clone(),
        "unsubscribe".to_owned(),
        Some(json!({ "channel": "scripted:/a" })),
    )
    .await;
    assert_eq!(subscribe(&host, &conn, "scripted:/b").await, Ok(()));
    assert_eq!(subscribe(&host, &conn, "scripted:/c").await, Err(-32009));
    // A session disposed while this connection watches it stays live and subscribed (VS Code
    // disposes sessions it still shows): no place is freed.
    host.request(
        conn.clone(),
        "disposeSession".to_owned(),
        Some(json!({ "channel": "scripted:/b" })),
    )
    .await
    .unwrap();
    assert_eq!(state.subscriber_count("scripted:/b"), 1);
    assert_eq!(subscribe(&host, &conn, "scripted:/c").await, Err(-32009));
    host.notification(
        conn.clone(),
        "unsubscribe".to_owned(),
        Some(json!({ "channel": "scripted:/b" })),
    )
    .await;
    assert_eq!(subscribe(&host, &conn, "scripted:/c").await, Ok(()));
    // Another connection has its own places.
    let (other, _other_queues) = limited(2, |c| c.max_subscriptions = 2);
    assert_eq!(subscribe(&host, &other, "scripted:/a").await, Ok(()));
    // A disconnect forgets them.
    host.disconnected(conn.clone()).await;
    assert_eq!(state.subscriber_count("scripted:/c"), 0);
}

#[tokio::test(start_paused = true)]
async fn reconnect_reports_subscriptions_beyond_the_limit_as_missing() {
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    for id in ["a", "b", "c"] {
        create(&service, &format!("scripted:/{id}")).await;
    }
    let (conn, _queues) = limited(1, |c| c.max_subscriptions = 2);
    let params = serde_json::from_value(json!({
        "channel": "ahp-root://",
        "clientId": "c",
        "lastSeenServerSeq": state.server_seq(),
        "subscriptions": ["scripted:/a", "scripted:/a", "scripted:/b", "scripted:/c", "ahp-root://"],
    }))
    .unwrap();
    let reconnected = host.reconnect(conn.clone(), params).await.unwrap();
    let result = serde_json::to_value(&reconnected.result).unwrap();
    assert_eq!(result["type"], "replay", "{result}");
    assert_eq!(
        result["missing"],
        json!(["scripted:/c", "ahp-root://"]),
        "{result}"
    );
    assert_eq!(state.subscriber_count("scripted:/a"), 1);
    assert_eq!(state.subscriber_count("scripted:/c"), 0);
    assert_eq!(subscribe(&host, &conn, "scripted:/c").await, Err(-32009));
}

async fn dispatch(host: &Host, conn: &Connection, channel: &str, seq: u64, title: &str) {
    host.notification(
        conn.clone(),
        "dispatchAction".to_owned(),
        Some(json!({
            "channel": channel,
            "clientSeq": seq,
            "action": { "type": "session/titleChanged", "title": title },
        })),
    )
    .await;
}

fn frames(queues: &mut Queues) -> Vec<serde_json::Value> {
    std::iter::from_fn(|| queues.try_next_outbound())
        .map(|frame| serde_json::from_str(&frame).unwrap())
        .collect()
}

fn title(state: &agenthost_state::StateManager, session: &str) -> String {
    state.read(|h| h.session(session).unwrap().title.clone())
}

#[tokio::test(start_paused = true)]
async fn a_dispatch_over_the_rate_limit_is_echoed_rejected_and_changes_nothing() {
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    create(&service, "scripted:/a").await;
    let (conn, mut queues) = limited(1, |c| {
        c.dispatch_rate = 1;
        c.dispatch_burst = 2;
    });
    for seq in 1..=5 {
        dispatch(&host, &conn, "scripted:/a", seq, &format!("title {seq}")).await;
    }
    // The burst was applied; the rest came back rejected, unchanged, to this connection.
    assert_eq!(title(&state, "scripted:/a"), "title 2");
    let echoes = frames(&mut queues);
    assert_eq!(echoes.len(), 3, "{echoes:?}");
    let mut last_seq = 0;
    for (echo, seq) in echoes.iter().zip(3..) {
        let envelope = &echo["params"];
        assert_eq!(echo["method"], "action", "{echo}");
        assert_eq!(envelope["channel"], "scripted:/a");
        assert_eq!(envelope["rejectionReason"], RATE_LIMITED_REASON);
        assert_eq!(envelope["origin"]["clientSeq"], seq);
        assert_eq!(
            envelope["action"],
            json!({ "type": "session/titleChanged", "title": format!("title {seq}") })
        );
        let server_seq = envelope["serverSeq"].as_u64().unwrap();
        assert!(server_seq > last_seq, "fresh, increasing numbers");
        last_seq = server_seq;
    }
    // An unknown channel over the limit is ignored silently, as any.
    dispatch(&host, &conn, "scripted:/nowhere", 6, "x").await;
    assert!(frames(&mut queues).is_empty());
    // A second later there is a token again.
    tokio::time::advance(std::time::Duration::from_secs(1)).await;
    dispatch(&host, &conn, "scripted:/a", 7, "title 7").await;
    assert_eq!(title(&state, "scripted:/a"), "title 7");
    assert!(
        frames(&mut queues).is_empty(),
        "accepted: no echo to a non-subscriber"
    );
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

/// Server-dispatches `action` on `channel`, as the host's own code would.
fn server_action(state: &StateManager, channel: &str, action: serde_json::Value) {
    state
        .dispatch_server(channel, serde_json::from_value(action).unwrap())
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_0_9_peer_is_not_sent_an_action_1_0_introduced_and_a_1_0_peer_is() {
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    create(&service, "scripted:/s").await;
    let chat = state.read(|h| {
        h.session("scripted:/s")
            .unwrap()
            .default_chat
            .clone()
            .unwrap()
    });
    let (vscode, mut vscode_queues) = limited(1, |_| {});
    vscode.initialized_as("0.10.0", "vscode");
    let (spec, mut spec_queues) = limited(2, |_| {});
    spec.initialized_as("1.0.0", "spec");
    for conn in [&vscode, &spec] {
        subscribe(&host, conn, &chat).await.unwrap();
    }
    server_action(
        &state,
        &chat,
        json!({ "type": "chat/movableChanged", "movable": true }),
    );
    server_action(
        &state,
        "scripted:/s",
        json!({ "type": "session/titleChanged", "title": "t" }),
    );
    let types = |frames: Vec<serde_json::Value>| -> Vec<String> {
        frames
            .iter()
            .map(|f| f["params"]["action"]["type"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(types(frames(&mut spec_queues)), ["chat/movableChanged"]);
    assert!(types(frames(&mut vscode_queues)).is_empty());
    assert!(!vscode.is_closed(), "holding an action back is not a lag");
}

#[tokio::test(start_paused = true)]
async fn a_padded_derived_chat_uri_finds_an_evicted_sessions_chat() {
    use base64::Engine as _;
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    // 13 bytes: base64 pads them with two `=`, which VS Code may print as `%3D`.
    create(&service, "scripted:/abc").await;
    service
        .dispose_session(&"scripted:/abc".parse().unwrap())
        .unwrap();
    assert!(state.read(|h| h.session("scripted:/abc").is_none()));
    let padded = format!(
        "ahp-chat://default/{}",
        base64::engine::general_purpose::URL_SAFE.encode("scripted:/abc")
    )
    .replace('=', "%3D");
    let (conn, _queues) = limited(1, |_| {});
    conn.initialized_as("0.10.0", "vscode");
    assert_eq!(subscribe(&host, &conn, &padded).await, Ok(()));
    assert!(
        state.read(|h| h.session("scripted:/abc").is_some()),
        "restored"
    );
}

#[tokio::test(start_paused = true)]
async fn completions_on_a_session_uri_answer_for_its_default_chat() {
    let dir = tempfile_dir();
    let (host, _state, service) = host(dir.path());
    create(&service, "scripted:/s").await;
    let (conn, _queues) = limited(1, |_| {});
    conn.initialized_as("0.10.0", "vscode");
    let ask = |channel: &str| {
        host.request(
            conn.clone(),
            "completions".to_owned(),
            Some(json!({ "channel": channel, "kind": "userMessage", "text": "@", "offset": 1 })),
        )
    };
    assert_eq!(ask("scripted:/s").await.unwrap(), json!({ "items": [] }));
    assert_eq!(ask("scripted:/nowhere").await.unwrap_err().code, -32008);
}

/// Keeps every frame it is handed.
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<serde_json::Value>>);

impl Outbox for Recorder {
    fn push(&self, frame: Arc<str>) -> bool {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::from_str(&frame).unwrap());
        true
    }
}

impl Recorder {
    fn take(&self, method: &str) -> Vec<serde_json::Value> {
        let mut frames = self.0.lock().unwrap();
        let (wanted, rest): (Vec<_>, Vec<_>) =
            frames.drain(..).partition(|f| f["method"] == method);
        *frames = rest;
        wanted
    }
}

#[tokio::test(start_paused = true)]
async fn a_changed_session_summary_reaches_root_subscribers_with_the_changed_fields_only() {
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    let root = Arc::new(Recorder::default());
    let watcher = state.register_subscriber(root.clone());
    state.subscribe(watcher, "ahp-root://").unwrap();
    create(&service, "scripted:/s").await;
    root.take("root/sessionSummaryChanged");

    let (conn, _queues) = limited(1, |_| {});
    conn.initialized_as("1.0.0", "c");
    dispatch(&host, &conn, "scripted:/s", 1, "Renamed").await;
    let changed = root.take("root/sessionSummaryChanged");
    assert_eq!(changed.len(), 1, "{changed:?}");
    let params = &changed[0]["params"];
    assert_eq!(params["channel"], "ahp-root://");
    assert_eq!(params["session"], "scripted:/s");
    assert_eq!(params["changes"]["title"], "Renamed");
    for identity in ["resource", "provider", "createdAt"] {
        assert!(params["changes"].get(identity).is_none(), "{params}");
    }
    assert!(
        params["changes"].get("workingDirectories").is_none(),
        "unchanged: {params}"
    );
    // The same title again changes nothing and announces nothing.
    dispatch(&host, &conn, "scripted:/s", 2, "Renamed").await;
    assert!(root.take("root/sessionSummaryChanged").is_empty());
}

/// `reconnect` carries no version list: the version a client negotiated is remembered by its
/// client id (an unknown one gets the 0.9 surface), and a replay for a 0.9/0.10 peer leaves out
/// the actions AHP 1.0 introduced.
#[tokio::test(start_paused = true)]
async fn reconnect_serves_the_version_the_client_negotiated() {
    use agenthost_protocol::NegotiatedVersion;
    let dir = tempfile_dir();
    let (host, state, service) = host(dir.path());
    create(&service, "scripted:/a").await;
    let chat = state
        .read(|h| {
            h.session("scripted:/a")
                .and_then(|s| s.default_chat.clone())
        })
        .unwrap();
    for (client, version) in [("modern", "1.0.0"), ("vscode", "0.10.0")] {
        let (conn, _queues) = limited(1, |_| {});
        let params = serde_json::from_value(json!({
            "channel": "ahp-root://", "clientId": client, "protocolVersions": [version],
        }))
        .unwrap();
        host.initialize(
            conn,
            params,
            NegotiatedVersion::from_version(version).unwrap(),
        )
        .await
        .unwrap();
    }
    let seen = state.server_seq();
    state
        .dispatch_server(
            &chat,
            agenthost_protocol::StateAction::ChatMovableChanged(
                agenthost_protocol::ahp_types::actions::ChatMovableChangedAction { movable: true },
            ),
        )
        .unwrap();
    dispatch(&host, &limited(9, |_| {}).0, "scripted:/a", 1, "Renamed").await;
    let replayed = |client: &'static str| {
        let host = Arc::clone(&host);
        let chat = chat.clone();
        async move {
            let (conn, _queues) = limited(2, |_| {});
            let params = serde_json::from_value(json!({
                "channel": "ahp-root://", "clientId": client, "lastSeenServerSeq": seen,
                "subscriptions": ["scripted:/a", chat],
            }))
            .unwrap();
            let reconnected = host.reconnect(conn, params).await.unwrap();
            let result = serde_json::to_value(&reconnected.result).unwrap();
            let types: Vec<String> = result["actions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["action"]["type"].as_str().unwrap().to_owned())
                .collect();
            (reconnected.protocol_version.as_str().to_owned(), types)
        }
    };
    let (version, types) = replayed("modern").await;
    assert_eq!(version, "1.0.0");
    assert!(
        types.contains(&"chat/movableChanged".to_owned()),
        "{types:?}"
    );
    for client in ["vscode", "never-seen"] {
        let (version, types) = replayed(client).await;
        assert_eq!(
            version,
            if client == "vscode" {
                "0.10.0"
            } else {
                "0.9.0"
            }
        );
        assert!(
            !types.contains(&"chat/movableChanged".to_owned()),
            "{client}: {types:?}"
        );
        assert!(
            types.contains(&"session/titleChanged".to_owned()),
            "{client}: {types:?}"
        );
    }
}

/// Every `initialize` with a new client id is remembered, but only the newest
/// [`super::REMEMBERED_CLIENTS`]: the oldest one's `reconnect` falls back to the 0.9 surface.
#[tokio::test(start_paused = true)]
async fn the_remembered_client_versions_are_bounded() {
    use agenthost_protocol::NegotiatedVersion;
    let dir = tempfile_dir();
    let (host, _state, _service) = host(dir.path());
    let version = NegotiatedVersion::from_version("1.0.0").unwrap();
    for n in 0..=super::REMEMBERED_CLIENTS {
        let (conn, _queues) = limited(1, |_| {});
        let params = serde_json::from_value(json!({
            "channel": "ahp-root://", "clientId": format!("client-{n}"),
            "protocolVersions": ["1.0.0"],
        }))
        .unwrap();
        host.initialize(conn, params, version.clone())
            .await
            .unwrap();
    }
    let reconnect = |client: String| {
        let host = Arc::clone(&host);
        async move {
            let (conn, _queues) = limited(2, |_| {});
            let params = serde_json::from_value(json!({
                "channel": "ahp-root://", "clientId": client, "lastSeenServerSeq": 0,
                "subscriptions": [],
            }))
            .unwrap();
            let reconnected = host.reconnect(conn, params).await.unwrap();
            reconnected.protocol_version.as_str().to_owned()
        }
    };
    assert_eq!(reconnect("client-0".to_owned()).await, "0.9.0");
    assert_eq!(reconnect("client-1".to_owned()).await, "1.0.0");
    assert_eq!(
        reconnect(format!("client-{}", super::REMEMBERED_CLIENTS)).await,
        "1.0.0"
    );
}

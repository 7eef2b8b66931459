use agenthost_dispatcher::DispatchedAction;
use agenthost_protocol::ToolCallKey;
use agenthost_protocol::ahp_types::state::SessionState;
use agenthost_reducers::projection::tool_client_execution_id;
use agenthost_services::fakes::{
    FakeClientActionIntake, FakeConfiguration, FakeHostState, FakeSubscriptionTracker, IntakeCall,
};
use serde_json::{Value, json};
use tokio::time::{Duration, sleep};

use super::*;

const SESSION: &str = "scripted:/s1";
const CHAT: &str = "ahp-chat:/main";
const SUBAGENT: &str = "ahp-chat:/sub";
const TURN: &str = "turn-1";
const T0: &str = "2026-01-01T00:00:00.000Z";
const CLIENT: &str = "vscode-1";
const OTHER: &str = "cli-2";
const GRACE: Duration = Duration::from_millis(1000);
const MS: Duration = Duration::from_millis(1);

struct Harness {
    host: Arc<FakeHostState>,
    subscriptions: Arc<FakeSubscriptionTracker>,
    intake: Arc<FakeClientActionIntake>,
    contribution: ClientDeparture,
}

fn execution(chat: &str, call: &str, client: &str) -> SessionInputRequest {
    let key = ToolCallKey::new(chat, TURN, call);
    serde_json::from_value(json!({
        "kind": "toolClientExecution", "id": tool_client_execution_id(&key), "chat": chat,
        "turnId": TURN, "clientId": client,
        "toolCall": {
            "status": "running", "toolCallId": call, "toolName": "probe",
            "displayName": "Probe", "invocationMessage": "Run Probe", "toolInput": "{}",
            "confirmed": "not-needed",
            "contributor": { "kind": "client", "clientId": client }
        }
    }))
    .unwrap()
}

impl Harness {
    /// A session whose active clients are `CLIENT` and `OTHER`, a 1 s grace window.
    fn new() -> Self {
        let host = Arc::new(FakeHostState::default());
        let config = Arc::new(FakeConfiguration::default());
        config.script(|a| {
            a.root.insert(GRACE_KEY.into(), json!(1000));
        });
        let subscriptions = Arc::new(FakeSubscriptionTracker::default());
        let intake = Arc::new(FakeClientActionIntake::default());
        let contribution =
            ClientDeparture::new(host.clone(), config, subscriptions.clone(), intake.clone());
        let harness = Self {
            host,
            subscriptions,
            intake,
            contribution,
        };
        harness.set_session(&[CLIENT, OTHER], Vec::new());
        harness
    }

    fn set_session(&self, active: &[&str], input_needed: Vec<SessionInputRequest>) {
        let active: Vec<Value> = active
            .iter()
            .map(|id| json!({ "clientId": id, "tools": [] }))
            .collect();
        let state: SessionState = serde_json::from_value(json!({
            "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
            "activeClients": active,
            "chats": [
                { "resource": CHAT, "title": "Main", "status": 1, "modifiedAt": T0 },
                { "resource": SUBAGENT, "title": "Sub", "status": 1, "modifiedAt": T0,
                  "origin": { "kind": "tool", "chat": CHAT, "toolCallId": "spawn" } }
            ],
            "inputNeeded": input_needed,
        }))
        .unwrap();
        self.host.script(|a| {
            a.sessions.insert(SESSION.into(), state);
            a.chat_sessions.insert(CHAT.into(), SESSION.into());
            a.chat_sessions.insert(SUBAGENT.into(), SESSION.into());
        });
    }

    /// Connection `connection` of `client` subscribes to `channels`.
    fn connect(&self, connection: &str, client: &str, channels: &[&str]) {
        self.subscriptions.identified(connection, client);
        for channel in channels {
            self.subscriptions.subscribed(connection, channel);
        }
    }

    /// The session lists `entries` and the last one is observed being set.
    fn list(&self, active: &[&str], entries: Vec<SessionInputRequest>) {
        let last = entries.last().cloned().unwrap();
        self.set_session(active, entries);
        let action: StateAction =
            serde_json::from_value(json!({ "type": "session/inputNeededSet", "request": last }))
                .unwrap();
        self.contribution
            .on_did_dispatch_action(&DispatchedAction {
                channel: SESSION,
                session: Some(&SESSION.parse().unwrap()),
                chat: None,
                action: &action,
                origin: None,
                rejection_reason: None,
            })
            .unwrap();
    }

    fn submitted(&self) -> Vec<IntakeCall> {
        self.intake.calls()
    }
}

/// Lets the timer driver and the spawned submissions run at the current instant.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

/// `(client, channel, what)` of each submission.
fn described(calls: &[IntakeCall]) -> Vec<(String, String, String)> {
    calls
        .iter()
        .map(|call| {
            let what = match &call.action {
                StateAction::SessionActiveClientRemoved(a) => {
                    format!("activeClientRemoved {}", a.client_id)
                }
                StateAction::ChatToolCallComplete(a) => {
                    let error = a.result.error.clone().unwrap_or_default();
                    format!(
                        "toolCallComplete {} {} success={} code={}",
                        a.turn_id, a.tool_call_id, a.result.success, error["code"]
                    )
                }
                other => format!("{other:?}"),
            };
            (call.client_id.clone(), call.channel.clone(), what)
        })
        .collect()
}

fn row(client: &str, channel: &str, what: &str) -> (String, String, String) {
    (client.into(), channel.into(), what.into())
}

#[tokio::test(start_paused = true)]
async fn a_disconnected_client_departs_after_the_grace_window_and_its_calls_fail() {
    let h = Harness::new();
    h.connect("#1", CLIENT, &[SESSION, CHAT]);
    h.connect("#2", OTHER, &[SESSION]);
    h.list(
        &[CLIENT, OTHER],
        vec![
            execution(CHAT, "c1", CLIENT),
            execution(SUBAGENT, "c2", CLIENT),
            execution(CHAT, "c3", OTHER),
        ],
    );
    settle().await;
    assert!(h.submitted().is_empty(), "both clients are here");
    h.subscriptions.disconnected("#1");
    assert!(h.contribution.waiting_for(SESSION, CLIENT));
    sleep(GRACE - MS).await;
    settle().await;
    assert!(h.submitted().is_empty(), "not before the window ends");
    sleep(MS).await;
    settle().await;
    assert_eq!(
        described(&h.submitted()),
        [
            row(CLIENT, SESSION, "activeClientRemoved vscode-1"),
            row(
                CLIENT,
                CHAT,
                "toolCallComplete turn-1 c1 success=false code=\"clientUnavailable\""
            ),
            row(
                CLIENT,
                SUBAGENT,
                "toolCallComplete turn-1 c2 success=false code=\"clientUnavailable\""
            ),
        ],
        "only the departed client's calls, subagent chats included"
    );
    assert!(!h.contribution.waiting_for(SESSION, CLIENT));
    let StateAction::ChatToolCallComplete(complete) = &h.submitted()[1].action else {
        panic!("a completion");
    };
    assert_eq!(
        complete.result.past_tense_message.as_text(),
        "Couldn't run Probe"
    );
}

#[tokio::test(start_paused = true)]
async fn a_client_that_comes_back_within_the_window_keeps_its_calls() {
    let h = Harness::new();
    h.connect("#1", CLIENT, &[SESSION]);
    h.list(&[CLIENT, OTHER], vec![execution(CHAT, "c1", CLIENT)]);
    h.subscriptions.disconnected("#1");
    sleep(GRACE / 2).await;
    // It reconnects on a new connection and subscribes to a chat of the session.
    h.connect("#3", CLIENT, &[CHAT]);
    sleep(GRACE).await;
    settle().await;
    assert!(h.submitted().is_empty(), "{:?}", described(&h.submitted()));
    assert!(!h.contribution.waiting_for(SESSION, CLIENT));
}

#[tokio::test(start_paused = true)]
async fn a_client_that_reconnects_without_the_session_departs_when_the_window_ends() {
    let h = Harness::new();
    h.connect("#1", CLIENT, &[SESSION]);
    h.list(&[CLIENT, OTHER], vec![execution(CHAT, "c1", CLIENT)]);
    h.subscriptions.disconnected("#1");
    h.connect("#3", CLIENT, &["scripted:/another"]);
    sleep(GRACE).await;
    settle().await;
    assert_eq!(
        described(&h.submitted()),
        [
            row(CLIENT, SESSION, "activeClientRemoved vscode-1"),
            row(
                CLIENT,
                CHAT,
                "toolCallComplete turn-1 c1 success=false code=\"clientUnavailable\""
            ),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn unsubscribing_from_the_session_leaves_it_at_once() {
    let h = Harness::new();
    h.connect("#1", CLIENT, &[SESSION, CHAT]);
    h.list(&[CLIENT, OTHER], vec![execution(CHAT, "c1", CLIENT)]);
    h.subscriptions.unsubscribed("#1", CHAT);
    settle().await;
    assert!(h.submitted().is_empty(), "still subscribed to the session");
    h.subscriptions.unsubscribed("#1", SESSION);
    settle().await;
    assert_eq!(
        described(&h.submitted()),
        [
            row(CLIENT, SESSION, "activeClientRemoved vscode-1"),
            row(
                CLIENT,
                CHAT,
                "toolCallComplete turn-1 c1 success=false code=\"clientUnavailable\""
            ),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_for_a_client_not_in_the_session_fails_at_once() {
    let h = Harness::new();
    h.list(&[OTHER], vec![execution(SUBAGENT, "c9", CLIENT)]);
    settle().await;
    assert_eq!(
        described(&h.submitted()),
        [row(
            CLIENT,
            SUBAGENT,
            "toolCallComplete turn-1 c9 success=false code=\"clientUnavailable\""
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_for_an_active_client_nowhere_to_be_seen_gets_a_window() {
    let h = Harness::new();
    h.list(&[CLIENT, OTHER], vec![execution(CHAT, "c1", CLIENT)]);
    assert!(h.contribution.waiting_for(SESSION, CLIENT));
    sleep(GRACE - MS).await;
    // It subscribes in time: nothing happens when the window ends.
    h.connect("#5", CLIENT, &[SESSION]);
    sleep(MS).await;
    settle().await;
    assert!(h.submitted().is_empty());
    // A later call while it is present starts no window.
    h.list(
        &[CLIENT, OTHER],
        vec![execution(CHAT, "c1", CLIENT), execution(CHAT, "c2", CLIENT)],
    );
    assert!(!h.contribution.waiting_for(SESSION, CLIENT));
}

#[tokio::test(start_paused = true)]
async fn disconnects_of_anonymous_or_inactive_clients_change_nothing() {
    let h = Harness::new();
    h.subscriptions.subscribed("#1", SESSION);
    h.subscriptions.disconnected("#1");
    h.connect("#2", "stranger", &[SESSION]);
    h.subscriptions.disconnected("#2");
    sleep(GRACE * 2).await;
    settle().await;
    assert!(h.submitted().is_empty());
    assert!(!h.contribution.waiting_for(SESSION, "stranger"));
}

#[tokio::test(start_paused = true)]
async fn the_grace_window_is_configurable_and_defaults_to_five_seconds() {
    let h = Harness::new();
    assert_eq!(h.contribution.shared.grace(), GRACE);
    let config = Arc::new(FakeConfiguration::default());
    let other = ClientDeparture::new(
        h.host.clone(),
        config,
        h.subscriptions.clone(),
        h.intake.clone(),
    );
    assert_eq!(other.shared.grace(), DEFAULT_GRACE);
}

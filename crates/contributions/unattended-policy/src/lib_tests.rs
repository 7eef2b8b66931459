use agenthost_dispatcher::DispatchedAction;
use agenthost_protocol::ToolCallKey;
use agenthost_protocol::ahp_types::state::{
    SessionInputRequest, SessionState, ToolCallConfirmationReason,
};
use agenthost_reducers::projection::tool_confirmation_id;
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
const GRACE: Duration = Duration::from_millis(1000);
const MS: Duration = Duration::from_millis(1);

struct Harness {
    host: Arc<FakeHostState>,
    config: Arc<FakeConfiguration>,
    subscriptions: Arc<FakeSubscriptionTracker>,
    intake: Arc<FakeClientActionIntake>,
    contribution: UnattendedPolicyContribution,
}

impl Harness {
    /// A host whose configuration says `policy` (`None`: nothing configured) with a 1 s grace.
    fn new(policy: Option<&str>) -> Self {
        let host = Arc::new(FakeHostState::default());
        let config = Arc::new(FakeConfiguration::default());
        config.script(|a| {
            if let Some(policy) = policy {
                a.root.insert(POLICY_KEY.into(), json!(policy));
            }
            a.root.insert(GRACE_KEY.into(), json!(1000));
        });
        let subscriptions = Arc::new(FakeSubscriptionTracker::default());
        let intake = Arc::new(FakeClientActionIntake::default());
        let contribution = UnattendedPolicyContribution::new(
            host.clone(),
            config.clone(),
            subscriptions.clone(),
            intake.clone(),
        );
        let harness = Self {
            host,
            config,
            subscriptions,
            intake,
            contribution,
        };
        harness.set_session(Vec::new(), None);
        harness
    }

    /// The session's state: its `inputNeeded` list, a main chat and a subagent chat spawned by
    /// a tool call of the main chat, and optionally its own `unattended` value.
    fn set_session(&self, input_needed: Vec<SessionInputRequest>, own_policy: Option<&str>) {
        let mut state = json!({
            "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
            "activeClients": [],
            "chats": [
                { "resource": CHAT, "title": "Main", "status": 1, "modifiedAt": T0 },
                { "resource": SUBAGENT, "title": "Sub", "status": 1, "modifiedAt": T0,
                  "origin": { "kind": "tool", "chat": CHAT, "toolCallId": "spawn" } }
            ],
            "inputNeeded": input_needed,
        });
        if let Some(policy) = own_policy {
            state["config"] = json!({
                "schema": { "type": "object", "properties": {} },
                "values": { POLICY_KEY: policy }
            });
        }
        let state: SessionState = serde_json::from_value(state).unwrap();
        self.host.script(|a| {
            a.sessions.insert(SESSION.into(), state);
            a.chat_sessions.insert(CHAT.into(), SESSION.into());
            a.chat_sessions.insert(SUBAGENT.into(), SESSION.into());
        });
    }

    /// The session gains `entry`: state first, then the action is observed.
    fn raise(&self, entry: SessionInputRequest, own_policy: Option<&str>) {
        self.set_session(vec![entry.clone()], own_policy);
        let action: StateAction =
            serde_json::from_value(json!({ "type": "session/inputNeededSet", "request": entry }))
                .unwrap();
        self.observe(SESSION, &action);
    }

    fn observe(&self, channel: &str, action: &StateAction) {
        self.contribution
            .on_did_dispatch_action(&DispatchedAction {
                channel,
                session: SESSION,
                action,
                origin: None,
                rejection_reason: None,
            })
            .unwrap();
    }

    fn answers(&self) -> Vec<IntakeCall> {
        self.intake.calls()
    }
}

fn confirmation(chat: &str, call: &str, tool: &str) -> SessionInputRequest {
    let key = ToolCallKey::new(chat, TURN, call);
    serde_json::from_value(json!({
        "kind": "toolConfirmation", "id": tool_confirmation_id(&key), "chat": chat,
        "turnId": TURN,
        "toolCall": {
            "status": "pending-confirmation", "toolCallId": call, "toolName": tool,
            "displayName": tool, "invocationMessage": format!("Run {tool}"), "toolInput": "{}"
        }
    }))
    .unwrap()
}

/// Lets the timer driver and the spawned submissions run at the current instant.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

fn confirmed(call: &IntakeCall) -> &agenthost_protocol::actions::ChatToolCallConfirmedAction {
    match &call.action {
        StateAction::ChatToolCallConfirmed(a) => a,
        other => panic!("expected chat/toolCallConfirmed, got {other:?}"),
    }
}

fn as_json(call: &IntakeCall) -> Value {
    serde_json::to_value(&call.action).unwrap()
}

#[tokio::test(start_paused = true)]
async fn off_does_nothing_at_all() {
    for policy in [None, Some("off")] {
        let h = Harness::new(policy);
        h.raise(confirmation(CHAT, "call-1", "write_file"), None);
        assert_eq!(
            h.contribution.engine_count(),
            0,
            "no engine under {policy:?}"
        );
        sleep(GRACE * 10).await;
        settle().await;
        assert!(h.answers().is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn deny_answers_an_unclaimed_confirmation_after_the_grace_window_as_the_host() {
    let h = Harness::new(Some("deny"));
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);
    assert_eq!(h.contribution.engine_count(), 1);

    sleep(GRACE - MS).await;
    settle().await;
    assert!(h.answers().is_empty(), "nothing before the window ends");

    sleep(MS).await;
    settle().await;
    let answers = h.answers();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].client_id, CLIENT_ID);
    assert_eq!(answers[0].channel, CHAT);
    let answer = confirmed(&answers[0]);
    assert_eq!(
        (
            answer.turn_id.as_str(),
            answer.tool_call_id.as_str(),
            answer.approved
        ),
        (TURN, "call-1", false)
    );
    assert!(
        answer.reason_message.is_some(),
        "a denial says why: {}",
        as_json(&answers[0])
    );

    // The reducers then drop the entry: nothing is outstanding, the engine goes.
    h.set_session(Vec::new(), None);
    let removed: StateAction = serde_json::from_value(json!({
        "type": "session/inputNeededRemoved", "id": tool_confirmation_id(&ToolCallKey::new(CHAT, TURN, "call-1"))
    }))
    .unwrap();
    h.observe(SESSION, &removed);
    assert_eq!(h.contribution.engine_count(), 0);
    sleep(GRACE * 3).await;
    settle().await;
    assert_eq!(h.answers().len(), 1, "answered exactly once");
}

#[tokio::test(start_paused = true)]
async fn a_subscribed_connection_claims_until_it_disconnects_then_the_grace_re_arms() {
    let h = Harness::new(Some("deny"));
    h.subscriptions.subscribed("#1", CHAT);
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);

    sleep(GRACE * 5).await;
    settle().await;
    assert!(h.answers().is_empty(), "claimed by the subscription");

    h.subscriptions.disconnected("#1");
    sleep(GRACE - MS).await;
    settle().await;
    assert!(
        h.answers().is_empty(),
        "a full new window after the claim went"
    );

    sleep(MS).await;
    settle().await;
    assert_eq!(h.answers().len(), 1);
    assert!(!confirmed(&h.answers()[0]).approved);
}

#[tokio::test(start_paused = true)]
async fn a_subscription_made_during_the_window_claims_and_its_end_re_arms() {
    let h = Harness::new(Some("deny"));
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);
    sleep(GRACE / 2).await;
    h.subscriptions.subscribed("#2", CHAT);
    sleep(GRACE * 2).await;
    settle().await;
    assert!(h.answers().is_empty());

    h.subscriptions.unsubscribed("#2", CHAT);
    sleep(GRACE).await;
    settle().await;
    assert_eq!(h.answers().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_subagent_chat_is_claimed_through_its_parent() {
    let h = Harness::new(Some("deny"));
    h.subscriptions.subscribed("#1", CHAT);
    h.raise(confirmation(SUBAGENT, "call-9", "write_file"), None);
    sleep(GRACE * 5).await;
    settle().await;
    assert!(
        h.answers().is_empty(),
        "the parent's subscription claims it"
    );

    h.subscriptions.unsubscribed("#1", CHAT);
    sleep(GRACE).await;
    settle().await;
    let answers = h.answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(
        answers[0].channel, SUBAGENT,
        "answered on the subagent chat"
    );
}

#[tokio::test(start_paused = true)]
async fn allow_approves_the_listed_tools_only() {
    let h = Harness::new(Some("allow=read_file"));
    h.set_session(
        vec![
            confirmation(CHAT, "call-r", "read_file"),
            confirmation(CHAT, "call-w", "write_file"),
        ],
        None,
    );
    let action: StateAction = serde_json::from_value(json!({
        "type": "session/inputNeededSet", "request": confirmation(CHAT, "call-w", "write_file")
    }))
    .unwrap();
    h.observe(SESSION, &action);
    sleep(GRACE).await;
    settle().await;
    let mut answers: Vec<_> = h
        .answers()
        .iter()
        .map(|call| {
            let a = confirmed(call);
            (a.tool_call_id.clone(), a.approved, a.confirmed.clone())
        })
        .collect();
    answers.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        answers,
        [
            (
                "call-r".to_owned(),
                true,
                Some(ToolCallConfirmationReason::Setting)
            ),
            ("call-w".to_owned(), false, None),
        ]
    );
    assert!(h.answers().iter().all(|call| call.client_id == CLIENT_ID));
}

#[tokio::test(start_paused = true)]
async fn a_session_override_wins_over_the_host_policy() {
    let off_host = Harness::new(Some("off"));
    off_host.raise(confirmation(CHAT, "call-1", "write_file"), Some("deny"));
    sleep(GRACE).await;
    settle().await;
    assert_eq!(off_host.answers().len(), 1, "the session asked for deny");

    let deny_host = Harness::new(Some("deny"));
    deny_host.raise(confirmation(CHAT, "call-1", "write_file"), Some("off"));
    assert_eq!(deny_host.contribution.engine_count(), 0);
    assert_eq!(
        deny_host.contribution.settings(SESSION).policy,
        UnattendedPolicy::Off
    );
    // A bad override falls back to the host policy.
    deny_host.set_session(Vec::new(), Some("sometimes"));
    assert_eq!(
        deny_host.contribution.settings(SESSION),
        Settings {
            policy: UnattendedPolicy::Deny,
            grace: GRACE
        }
    );
    let _ = &deny_host.config;
}

#[tokio::test(start_paused = true)]
async fn a_refused_answer_is_logged_not_retried_or_panicked() {
    let h = Harness::new(Some("deny"));
    h.intake
        .script(|a| a.refuse = Some("the turn is gone".into()));
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);
    sleep(GRACE * 3).await;
    settle().await;
    assert_eq!(h.answers().len(), 1, "submitted once, refused, not retried");
}

#[tokio::test(start_paused = true)]
async fn dropping_the_contribution_stops_listening_and_disposes_its_engines() {
    let h = Harness::new(Some("deny"));
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);
    let engine = h.contribution.engine(SESSION).unwrap();
    let Harness {
        contribution,
        subscriptions,
        intake,
        ..
    } = h;
    drop(contribution);
    assert!(engine.is_disposed());
    subscriptions.subscribed("#1", CHAT);
    sleep(GRACE * 2).await;
    settle().await;
    assert!(intake.calls().is_empty());
}

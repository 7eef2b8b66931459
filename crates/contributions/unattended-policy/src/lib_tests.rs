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
                session: Some(&SESSION.parse().unwrap()),
                chat: (channel != SESSION)
                    .then(|| channel.parse().unwrap())
                    .as_ref(),
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

/// A `session/configChanged` of the session's `unattended` value, after the state says `value`
/// (the reducer has run); `rejection` makes it a rejected envelope.
fn change_policy(h: &Harness, value: &str, rejection: Option<&str>) {
    let input_needed = h
        .host
        .session(SESSION)
        .and_then(|s| s.input_needed)
        .unwrap_or_default();
    if rejection.is_none() {
        h.set_session(input_needed, Some(value));
    }
    let action: StateAction = serde_json::from_value(json!({
        "type": "session/configChanged", "config": { POLICY_KEY: value }
    }))
    .unwrap();
    h.contribution
        .on_did_dispatch_action(&DispatchedAction {
            channel: SESSION,
            session: Some(&SESSION.parse().unwrap()),
            chat: None,
            action: &action,
            origin: None,
            rejection_reason: rejection,
        })
        .unwrap();
}

#[test]
fn the_session_config_property_is_a_mutable_free_form_string_defaulting_to_the_host_policy() {
    let policy: UnattendedPolicy = "allow=read_file,list_dir".parse().unwrap();
    let property = session_config_property(&policy);
    assert_eq!(property.r#type, "string");
    assert_eq!(property.title, "Unattended policy");
    assert_eq!(property.default, Some(json!("allow=list_dir,read_file")));
    assert_eq!(property.r#enum, None, "allow= lists are free-form");
    assert_eq!(property.session_mutable, Some(true));
    let description = property.description.clone().unwrap();
    for word in ["`off`", "`deny`", "`allow=tool1,tool2`", "grace"] {
        assert!(description.contains(word), "{word} in {description}");
    }
    let wire = serde_json::to_value(&property).unwrap();
    assert_eq!(wire["sessionMutable"], json!(true));
    assert!(wire.get("enum").is_none(), "{wire}");

    assert_eq!(
        session_config_property(&UnattendedPolicy::Off).default,
        Some(json!("off"))
    );
    assert_eq!(
        Value::Object(session_config_values(&UnattendedPolicy::Deny)),
        json!({ "unattended": "deny" })
    );
}

#[tokio::test(start_paused = true)]
async fn switching_a_session_from_off_to_deny_answers_a_waiting_confirmation_after_the_grace() {
    let h = Harness::new(None);
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);
    assert_eq!(h.contribution.engine_count(), 0);
    sleep(GRACE * 3).await;
    settle().await;
    assert!(h.answers().is_empty());

    change_policy(&h, "deny", None);
    assert_eq!(h.contribution.engine_count(), 1, "created at once");
    assert_eq!(
        h.contribution.settings(SESSION).policy,
        UnattendedPolicy::Deny
    );
    sleep(GRACE - MS).await;
    settle().await;
    assert!(h.answers().is_empty(), "a full window from the change");
    sleep(MS).await;
    settle().await;
    let answers = h.answers();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].client_id, CLIENT_ID);
    assert!(!confirmed(&answers[0]).approved);
}

#[tokio::test(start_paused = true)]
async fn a_new_engine_after_a_change_is_claimed_by_the_live_subscriptions() {
    let h = Harness::new(Some("deny"));
    h.subscriptions.subscribed("#1", CHAT);
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);
    let first = h.contribution.engine(SESSION).unwrap();

    change_policy(&h, "allow=write_file", None);
    assert!(first.is_disposed(), "the old engine is gone");
    let second = h.contribution.engine(SESSION).unwrap();
    assert!(!second.is_disposed());
    sleep(GRACE * 5).await;
    settle().await;
    assert!(h.answers().is_empty(), "still claimed by #1");

    h.subscriptions.unsubscribed("#1", CHAT);
    sleep(GRACE).await;
    settle().await;
    let answers = h.answers();
    assert_eq!(answers.len(), 1);
    assert!(confirmed(&answers[0]).approved, "under the new policy");
}

#[tokio::test(start_paused = true)]
async fn switching_to_off_before_the_grace_elapses_means_never_answered() {
    // The host says deny, or the session had asked for deny itself.
    for (host, own) in [(Some("deny"), None), (None, Some("deny"))] {
        let h = Harness::new(host);
        h.raise(confirmation(CHAT, "call-1", "write_file"), own);
        let engine = h.contribution.engine(SESSION).unwrap();
        sleep(GRACE / 2).await;
        settle().await;

        change_policy(&h, "off", None);
        assert!(engine.is_disposed(), "{host:?} {own:?}");
        assert_eq!(h.contribution.engine_count(), 0);
        sleep(GRACE * 10).await;
        settle().await;
        assert!(h.answers().is_empty(), "{host:?} {own:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_rejected_config_change_changes_nothing() {
    // A rejected change to deny on an off host: still nothing, even if the state said deny.
    let h = Harness::new(None);
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);
    h.set_session(
        vec![confirmation(CHAT, "call-1", "write_file")],
        Some("deny"),
    );
    change_policy(&h, "deny", Some("not sessionMutable"));
    assert_eq!(h.contribution.engine_count(), 0);
    sleep(GRACE * 3).await;
    settle().await;
    assert!(h.answers().is_empty());

    // A rejected change to off on a deny host: the engine and its window stay.
    let h = Harness::new(Some("deny"));
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);
    let engine = h.contribution.engine(SESSION).unwrap();
    h.set_session(
        vec![confirmation(CHAT, "call-1", "write_file")],
        Some("off"),
    );
    change_policy(&h, "off", Some("not sessionMutable"));
    assert!(!engine.is_disposed());
    sleep(GRACE).await;
    settle().await;
    assert_eq!(h.answers().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_unchanged_policy_keeps_the_engine_and_its_grace_deadline() {
    let h = Harness::new(Some("deny"));
    h.raise(confirmation(CHAT, "call-1", "write_file"), None);
    let engine = h.contribution.engine(SESSION).unwrap();
    sleep(GRACE / 2).await;

    // The session now says deny explicitly: the same settings as the host's.
    change_policy(&h, "deny", None);
    // A change on another channel or of another value resolves to the same settings too.
    let other: StateAction = serde_json::from_value(json!({
        "type": "session/configChanged", "config": { "model": "m" }
    }))
    .unwrap();
    h.observe(SESSION, &other);
    h.observe(CHAT, &other);
    assert!(!engine.is_disposed(), "not recreated");
    assert_eq!(h.contribution.engine_count(), 1);

    sleep(GRACE / 2).await;
    settle().await;
    assert_eq!(h.answers().len(), 1, "the first deadline still holds");
}

#[tokio::test(start_paused = true)]
async fn a_bad_session_value_falls_back_to_the_host_policy_on_change() {
    let h = Harness::new(Some("deny"));
    h.raise(confirmation(CHAT, "call-1", "write_file"), Some("off"));
    assert_eq!(h.contribution.engine_count(), 0);
    change_policy(&h, "sometimes", None);
    assert_eq!(h.contribution.engine_count(), 1, "the host's deny applies");
    sleep(GRACE).await;
    settle().await;
    assert_eq!(h.answers().len(), 1);
}

use agenthost_dispatcher::{Descriptor, Dispatcher, Registration, RegistrationError};
use agenthost_protocol::ahp_types::state::Message;
use agenthost_services::InMemoryConfiguration;
use agenthost_services::fakes::{ConfigurationCall, FakeConfiguration};
use agenthost_testkit::CapturedLogs;
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const TEXT: &str = "built-in-send-order";

fn message(text: &str) -> Message {
    serde_json::from_value(json!({ "text": text, "origin": { "kind": "user" } })).unwrap()
}

fn outgoing() -> OutgoingTurn {
    OutgoingTurn {
        session: SESSION.parse().unwrap(),
        chat: CHAT.parse().unwrap(),
        message: message(TEXT),
        turn_id: "t1".to_owned(),
    }
}

/// The contribution over a fake configuration whose root flag is `flag` (absent with `None`).
fn with_flag(flag: Option<Value>) -> (Arc<FakeConfiguration>, ArtifactTools) {
    let config = Arc::new(FakeConfiguration::default());
    if let Some(flag) = flag {
        config.script(|a| {
            a.root.insert(ARTIFACT_TOOLS_FLAG.to_owned(), flag);
        });
    }
    (config.clone(), ArtifactTools::new(config))
}

fn dispatcher_over(config: Arc<dyn Configuration>) -> Dispatcher {
    let mut services = ServiceRegistry::new();
    services.insert::<dyn Configuration>(config);
    Dispatcher::new(services)
}

/// A stand-in adding one fixed instruction (contribution crates may not depend on each other,
/// so the neighbours of the outgoing sequence are played by these).
struct Instructs(&'static str);

impl ChatContribution for Instructs {
    fn on_outgoing_turn<'a>(
        &'a self,
        _turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            Ok(Some(SendContribution {
                instructions: Some(vec![self.0.to_owned()]),
                text: None,
            }))
        })
    }
}

fn register_stand_in(dispatcher: &Dispatcher, id: &'static str, order: i32) -> Registration {
    let descriptor = Descriptor {
        id,
        order,
        hooks: HookSet::of(&[Hook::OutgoingTurn]),
    };
    dispatcher
        .register_with(descriptor, move |_, _| Ok(Arc::new(Instructs(id))))
        .unwrap()
}

/// A configuration whose reads panic.
struct Broken;

impl Configuration for Broken {
    fn root_value(&self, _key: &str) -> Option<Value> {
        panic!("configuration unavailable")
    }
    fn session_value(&self, _session: &str, _key: &str) -> Option<Value> {
        panic!("configuration unavailable")
    }
    fn working_directories(&self, _session: &str, _chat: Option<&str>) -> Vec<String> {
        Vec::new()
    }
}

// The flag.

#[tokio::test]
async fn absent_false_or_non_boolean_flags_add_nothing() {
    for flag in [
        None,
        Some(json!(false)),
        Some(json!("true")),
        Some(json!(1)),
        Some(Value::Null),
        Some(json!([true])),
    ] {
        let (config, contribution) = with_flag(flag.clone());
        let added = contribution.on_outgoing_turn(&outgoing()).await.unwrap();
        assert_eq!(added, None, "flag {flag:?}");
        assert_eq!(
            config.calls(),
            [ConfigurationCall::RootValue {
                key: ARTIFACT_TOOLS_FLAG.into()
            }],
            "only the root value is read, once per turn"
        );
    }
}

#[tokio::test]
async fn the_flag_on_adds_exactly_the_fixed_instruction_and_keeps_the_text() {
    let (_, contribution) = with_flag(Some(json!(true)));
    let added = contribution.on_outgoing_turn(&outgoing()).await.unwrap();
    assert_eq!(
        added,
        Some(SendContribution {
            instructions: Some(vec![ARTIFACT_TOOLS_INSTRUCTION.to_owned()]),
            text: None,
        })
    );
}

#[test]
fn the_instruction_describes_the_artifacts_and_asks_for_short_replies() {
    for expected in [
        "artifact tools",
        "create or update",
        "named artifact",
        "a document, a diagram, a code file",
        "separately from the chat",
        "substantial standalone output",
        "Keep the chat reply short",
    ] {
        assert!(
            ARTIFACT_TOOLS_INSTRUCTION.contains(expected),
            "{expected:?} missing from {ARTIFACT_TOOLS_INSTRUCTION:?}"
        );
    }
}

#[test]
fn a_non_boolean_flag_is_logged_once_per_turn_at_debug() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let (_, contribution) = with_flag(Some(json!("on")));
    assert!(!contribution.is_enabled());
    let text = logs.text();
    assert_eq!(text.matches("not a boolean").count(), 1, "{text}");
    assert!(text.contains("DEBUG"), "{text}");
    assert!(text.contains(ARTIFACT_TOOLS_FLAG), "{text}");

    // Absent and boolean values are ordinary: nothing logged.
    for flag in [None, Some(json!(false)), Some(json!(true))] {
        with_flag(flag).1.is_enabled();
    }
    assert_eq!(logs.text(), text);
}

// Through the dispatcher.

#[tokio::test]
async fn it_registers_at_200_on_outgoing_turn_only_and_reads_the_flag_on_every_turn() {
    let config = Arc::new(InMemoryConfiguration::new());
    let dispatcher = dispatcher_over(config.clone());
    let _registration = dispatcher.register::<ArtifactTools>().unwrap();
    assert_eq!(
        dispatcher.order_of(Hook::OutgoingTurn),
        [(200, "artifactTools")]
    );
    for hook in [
        Hook::IncomingRequest,
        Hook::TurnEnd,
        Hook::DidApplyClientAction,
        Hook::DidDispatchAction,
        Hook::HydrateTurns,
        Hook::HydrateChat,
    ] {
        assert_eq!(dispatcher.order_of(hook), [], "{hook:?}");
    }

    let turn = outgoing();
    let result = dispatcher.outgoing_turn(&turn).await;
    assert_eq!(result.instructions, None, "absent: off");
    assert_eq!(result.message, turn.message);

    config.set_root(ARTIFACT_TOOLS_FLAG, Some(json!(true)));
    let result = dispatcher.outgoing_turn(&turn).await;
    assert_eq!(
        result.instructions,
        Some(vec![ARTIFACT_TOOLS_INSTRUCTION.to_owned()])
    );
    assert_eq!(result.message, turn.message, "the text is never changed");

    config.set_root(ARTIFACT_TOOLS_FLAG, Some(json!("true")));
    assert_eq!(dispatcher.outgoing_turn(&turn).await.instructions, None);
}

/// The built-ins' outgoing sequence, the part about these two: with the rich-links and artifact
/// flags on, the instructions come as [markdownPlanRichLinks, artifactTools] (then chatSurface), by
/// order and not by registration. `markdownPlanRichLinks` and `chatSurface` are stand-ins at
/// their orders; the builtin crate pins the sequence with the real contributions.
#[tokio::test]
async fn outgoing_sequence_puts_rich_links_before_artifact_tools() {
    let config = Arc::new(InMemoryConfiguration::new());
    config.set_root("markdownPlanRichLinks", Some(json!(true)));
    config.set_root(ARTIFACT_TOOLS_FLAG, Some(json!(true)));
    let dispatcher = dispatcher_over(config);
    let _surface = register_stand_in(&dispatcher, "chatSurface", 300);
    let _artifacts = dispatcher.register::<ArtifactTools>().unwrap();
    let _links = register_stand_in(&dispatcher, "markdownPlanRichLinks", 100);
    assert_eq!(
        dispatcher.order_of(Hook::OutgoingTurn),
        [
            (100, "markdownPlanRichLinks"),
            (200, "artifactTools"),
            (300, "chatSurface")
        ]
    );
    let turn = outgoing();
    let result = dispatcher.outgoing_turn(&turn).await;
    assert_eq!(
        result.instructions,
        Some(vec![
            "markdownPlanRichLinks".to_owned(),
            ARTIFACT_TOOLS_INSTRUCTION.to_owned(),
            "chatSurface".to_owned(),
        ])
    );
    assert_eq!(result.message.text, TEXT);
}

#[tokio::test]
async fn a_failing_configuration_never_fails_the_turn() {
    let dispatcher = dispatcher_over(Arc::new(Broken));
    let _artifacts = dispatcher.register::<ArtifactTools>().unwrap();
    let _later = register_stand_in(&dispatcher, "chatSurface", 300);
    let turn = outgoing();
    let result = dispatcher.outgoing_turn(&turn).await;
    assert_eq!(result.instructions, Some(vec!["chatSurface".to_owned()]));
    assert_eq!(result.message, turn.message);
}

#[test]
fn registration_needs_the_configuration() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<ArtifactTools>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "artifactTools");
    assert!(service.contains("Configuration"), "{service}");
}

use agenthost_dispatcher::{Descriptor, Dispatcher, RegistrationError};
use agenthost_protocol::ahp_types::state::Message;
use agenthost_services::InMemoryConfiguration;
use agenthost_services::fakes::{ConfigurationCall, FakeConfiguration};
use agenthost_testkit::CapturedLogs;
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const TEXT: &str = "plan the refactor";

fn message(text: &str) -> Message {
    serde_json::from_value(json!({ "text": text, "origin": { "kind": "user" } })).unwrap()
}

fn outgoing(chat: &str) -> OutgoingTurn {
    OutgoingTurn {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
        message: message(TEXT),
        turn_id: "t1".to_owned(),
    }
}

/// The contribution over a fake configuration whose root flag is `flag` (absent with `None`).
fn with_flag(flag: Option<Value>) -> (Arc<FakeConfiguration>, MarkdownPlanRichLinks) {
    let config = Arc::new(FakeConfiguration::default());
    if let Some(flag) = flag {
        config.script(|a| {
            a.root
                .insert(MARKDOWN_PLAN_RICH_LINKS_FLAG.to_owned(), flag);
        });
    }
    (config.clone(), MarkdownPlanRichLinks::new(config))
}

/// A stand-in at order 200 (where `artifactTools` runs) adding one fixed instruction.
struct Later;

impl ChatContribution for Later {
    fn on_outgoing_turn<'a>(
        &'a self,
        _turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async {
            Ok(Some(SendContribution {
                instructions: Some(vec!["later".to_owned()]),
                text: None,
            }))
        })
    }
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

fn register_later(dispatcher: &Dispatcher) -> agenthost_dispatcher::Registration {
    let descriptor = Descriptor {
        id: "artifactTools",
        order: 200,
        hooks: HookSet::of(&[Hook::OutgoingTurn]),
    };
    dispatcher
        .register_with(descriptor, |_, _| Ok(Arc::new(Later)))
        .unwrap()
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
        Some(json!({ "enabled": true })),
    ] {
        let (config, contribution) = with_flag(flag.clone());
        let added = contribution
            .on_outgoing_turn(&outgoing(CHAT))
            .await
            .unwrap();
        assert_eq!(added, None, "flag {flag:?}");
        assert_eq!(
            config.calls(),
            [ConfigurationCall::RootValue {
                key: MARKDOWN_PLAN_RICH_LINKS_FLAG.into()
            }],
            "only the root value is read, once per turn"
        );
    }
}

#[tokio::test]
async fn the_flag_on_adds_exactly_one_instruction_naming_the_chat_and_keeps_the_text() {
    let (_, contribution) = with_flag(Some(json!(true)));
    let added = contribution
        .on_outgoing_turn(&outgoing(CHAT))
        .await
        .unwrap();
    assert_eq!(
        added,
        Some(SendContribution {
            instructions: Some(vec![instruction(CHAT)]),
            text: None,
        })
    );
    let other = contribution
        .on_outgoing_turn(&outgoing("ahp-chat:/c2"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.instructions, Some(vec![instruction("ahp-chat:/c2")]));
}

#[test]
fn the_instruction_covers_files_lines_symbols_the_chat_and_task_lists() {
    let text = instruction(CHAT);
    for expected in [
        "[src/main.rs](file:src/main.rs)",
        "(file:src/parser.rs#L42)",
        "#L<line>",
        "workspace-relative",
        "[`Parser::parse`]",
        "[this chat](ahp-chat:/c1)",
        "`- [ ] step`",
        "`- [x] step`",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from {text:?}"
        );
    }
}

#[test]
fn a_non_boolean_flag_is_logged_once_per_turn_at_debug() {
    let logs = CapturedLogs::default();
    let _guard = logs.capture();
    let (_, contribution) = with_flag(Some(json!("yes")));
    assert!(!contribution.is_enabled());
    let text = logs.text();
    assert_eq!(text.matches("not a boolean").count(), 1, "{text}");
    assert!(text.contains("DEBUG"), "{text}");
    assert!(text.contains(MARKDOWN_PLAN_RICH_LINKS_FLAG), "{text}");

    // Absent and boolean values are ordinary: nothing logged.
    for flag in [None, Some(json!(false)), Some(json!(true))] {
        with_flag(flag).1.is_enabled();
    }
    assert_eq!(logs.text(), text);
}

// Through the dispatcher.

#[tokio::test]
async fn it_registers_at_100_on_outgoing_turn_only_and_reads_the_flag_on_every_turn() {
    let config = Arc::new(InMemoryConfiguration::new());
    let mut services = ServiceRegistry::new();
    services.insert::<dyn Configuration>(config.clone());
    let dispatcher = Dispatcher::new(services);
    let _registration = dispatcher.register::<MarkdownPlanRichLinks>().unwrap();
    assert_eq!(
        dispatcher.order_of(Hook::OutgoingTurn),
        [(100, "markdownPlanRichLinks")]
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

    let turn = outgoing(CHAT);
    let result = dispatcher.outgoing_turn(&turn).await;
    assert_eq!(result.instructions, None, "absent: off");
    assert_eq!(result.message, turn.message);

    config.set_root(MARKDOWN_PLAN_RICH_LINKS_FLAG, Some(json!(true)));
    let result = dispatcher.outgoing_turn(&turn).await;
    assert_eq!(result.instructions, Some(vec![instruction(CHAT)]));
    assert_eq!(result.message, turn.message, "the text is never changed");

    config.set_root(MARKDOWN_PLAN_RICH_LINKS_FLAG, Some(json!(false)));
    assert_eq!(dispatcher.outgoing_turn(&turn).await.instructions, None);
}

#[tokio::test]
async fn its_instruction_comes_before_the_one_at_200_whatever_the_registration_order() {
    let config = Arc::new(InMemoryConfiguration::new());
    config.set_root(MARKDOWN_PLAN_RICH_LINKS_FLAG, Some(json!(true)));
    let mut services = ServiceRegistry::new();
    services.insert::<dyn Configuration>(config);
    let dispatcher = Dispatcher::new(services);
    let _later = register_later(&dispatcher);
    let _links = dispatcher.register::<MarkdownPlanRichLinks>().unwrap();
    let result = dispatcher.outgoing_turn(&outgoing(CHAT)).await;
    assert_eq!(
        result.instructions,
        Some(vec![instruction(CHAT), "later".to_owned()])
    );
}

#[tokio::test]
async fn a_failing_configuration_never_fails_the_turn() {
    let mut services = ServiceRegistry::new();
    services.insert::<dyn Configuration>(Arc::new(Broken));
    let dispatcher = Dispatcher::new(services);
    let _links = dispatcher.register::<MarkdownPlanRichLinks>().unwrap();
    let _later = register_later(&dispatcher);
    let turn = outgoing(CHAT);
    let result = dispatcher.outgoing_turn(&turn).await;
    assert_eq!(result.instructions, Some(vec!["later".to_owned()]));
    assert_eq!(result.message, turn.message);
}

#[test]
fn registration_needs_the_configuration() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<MarkdownPlanRichLinks>().unwrap_err();
    let RegistrationError::MissingService { id, service } = error else {
        panic!("expected a missing service, got {error:?}");
    };
    assert_eq!(id, "markdownPlanRichLinks");
    assert!(service.contains("Configuration"), "{service}");
}

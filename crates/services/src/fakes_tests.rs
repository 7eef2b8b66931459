use std::sync::Arc;

use agenthost_protocol::SessionUri;
use serde_json::json;

use super::*;
use crate::MessageSource;

fn chat(id: &str) -> ChatUri {
    ChatUri::parse(&format!("ahp-chat:/{id}")).unwrap()
}

#[tokio::test]
async fn the_title_fake_records_in_order_and_answers_as_scripted() {
    let fake = FakeTitleController::default();
    assert_eq!(fake.seed_from_message("s", "c", "hi"), None);
    fake.script(|a| {
        a.seed = Some("Seed".into());
        a.refined = Some("Refined".into());
        a.refuse_set = true;
    });
    assert_eq!(
        fake.seed_from_message("s", "c", "hi").as_deref(),
        Some("Seed")
    );
    assert_eq!(fake.set_title("s", "c", "T", TitleKind::User), None);
    assert_eq!(
        fake.refine_after_first_turn("s", "c", true)
            .await
            .as_deref(),
        Some("Refined")
    );
    fake.mark_renamed("s", None, TitleKind::User);
    assert_eq!(
        fake.calls(),
        [
            TitleCall::SeedFromMessage {
                session: "s".into(),
                chat: "c".into(),
                text: "hi".into()
            },
            TitleCall::SeedFromMessage {
                session: "s".into(),
                chat: "c".into(),
                text: "hi".into()
            },
            TitleCall::SetTitle {
                session: "s".into(),
                chat: "c".into(),
                title: "T".into(),
                kind: TitleKind::User
            },
            TitleCall::RefineAfterFirstTurn {
                session: "s".into(),
                chat: "c".into(),
                successful: true
            },
            TitleCall::MarkRenamed {
                session: "s".into(),
                chat: None,
                by: TitleKind::User
            },
        ]
    );
}

#[test]
fn trackers_telemetry_and_providers_record_every_call() {
    let turns = FakeTurnTracker::default();
    turns.turn_started("c", "t");
    turns.turn_blocked("c", "t", TurnBlock::UserInput);
    turns.turn_completed("c", "t", TurnCompletion::Cancelled);
    assert_eq!(turns.active_turn("c"), None);
    assert_eq!(
        turns.calls(),
        [
            TurnCall::Started {
                chat: "c".into(),
                turn_id: "t".into()
            },
            TurnCall::Blocked {
                chat: "c".into(),
                turn_id: "t".into(),
                block: TurnBlock::UserInput
            },
            TurnCall::Completed {
                chat: "c".into(),
                turn_id: "t".into(),
                completion: TurnCompletion::Cancelled
            },
            TurnCall::ActiveTurn { chat: "c".into() },
        ]
    );

    let tools = FakeToolCallTracker::default();
    let key = ToolCallKey::new("c", "t", "1");
    tools.started(&key, "shell");
    tools.clear("c", Some("t"));
    assert_eq!(
        tools.calls(),
        [
            ToolCallCall::Started {
                call: key,
                tool_name: "shell".into()
            },
            ToolCallCall::Clear {
                chat: "c".into(),
                turn_id: Some("t".into())
            },
        ]
    );

    let telemetry = FakeTelemetry::default();
    let event = UserMessageSent {
        session: "s".into(),
        chat: "c".into(),
        turn_id: "t".into(),
        source: MessageSource::Queued,
        provider: Some("scripted".into()),
    };
    telemetry.user_message_sent(&event);
    assert_eq!(telemetry.calls(), [TelemetryCall::UserMessageSent(event)]);

    let providers = FakeProviderLocator::default();
    providers.script(|a| {
        a.providers.insert("ahp-session:/s".into(), "claude".into());
    });
    let provider_of = |session: &str| providers.provider_of(&session.parse().unwrap());
    assert_eq!(provider_of("ahp-session:/s").as_deref(), Some("claude"));
    assert_eq!(provider_of("ahp-session:/x"), None);
    assert_eq!(providers.calls().len(), 2);

    let config = FakeConfiguration::default();
    config.script(|a| {
        a.root.insert("flag".into(), json!(true));
    });
    assert!(
        config.root_flag("flag"),
        "provided methods go through the fake"
    );
    assert_eq!(
        config.calls(),
        [ConfigurationCall::RootValue { key: "flag".into() }]
    );

    let commands = FakeLocalCommands::default();
    assert_eq!(commands.try_handle("/x"), None);
    assert_eq!(
        commands.calls(),
        [LocalCommandsCall::TryHandle("/x".into())]
    );
}

#[test]
fn host_fakes_answer_from_their_script_and_record_dispatches() {
    let host = FakeHostState::default();
    let state: ChatState = serde_json::from_value(json!({
        "resource": "c1", "title": "C", "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
    }))
    .unwrap();
    host.script(|a| {
        a.chats.insert("c1".into(), state);
        a.chat_sessions
            .insert("c1".into(), "ahp-session:/s1".into());
        a.chat_sessions
            .insert("ahp-chat:/c2".into(), "ahp-session:/s1".into());
        a.chat_sessions.insert("ahp-chat:/c3".into(), "s2".into());
    });
    assert_eq!(host.chat_title("c1").as_deref(), Some("C"));
    // Entries that are not URIs are answered as absent.
    assert_eq!(host.session_chats("ahp-session:/s1"), ["ahp-chat:/c2"]);
    assert_eq!(host.chat_session("ahp-chat:/c3"), None);
    assert_eq!(host.chat_session("c9"), None);
    assert_eq!(host.calls().len(), 4);

    let dispatch: Arc<dyn ServerDispatch> = Arc::new(FakeServerDispatch::default());
    let action: StateAction =
        serde_json::from_value(json!({ "type": "session/titleChanged", "title": "T" })).unwrap();
    assert_eq!(dispatch.dispatch("c1", action.clone()), Ok(1));
    assert_eq!(dispatch.dispatch("c1", action.clone()), Ok(2));
    let fake = FakeServerDispatch::default();
    fake.script(|a| a.refuse = Some("no".into()));
    assert!(fake.dispatch("c1", action.clone()).is_err());
    assert_eq!(
        fake.calls(),
        [DispatchCall {
            channel: "c1".into(),
            action
        }]
    );
}

#[tokio::test]
async fn the_session_data_fake_stores_in_memory_and_can_fail() {
    let data = FakeSessionData::default();
    let session = DataOwner::Session(SessionUri::parse("ahp-session:/s1").unwrap());
    data.set_meta(session.clone(), "k", Some("v".into()))
        .await
        .unwrap();
    data.set_delegation(chat("c1"), "t1", Some(json!(1)))
        .await
        .unwrap();
    data.set_delegation(chat("c1"), "t1", Some(json!(2)))
        .await
        .unwrap();
    assert_eq!(
        data.meta(session.clone(), "k").await.unwrap().as_deref(),
        Some("v")
    );
    assert_eq!(
        data.delegations(chat("c1")).await.unwrap(),
        [("t1".to_owned(), json!(2))]
    );
    assert!(data.delegations(chat("c2")).await.unwrap().is_empty());
    data.set_flags(
        session.clone(),
        Flags {
            read: false,
            archived: true,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        data.flags(session.clone()).await.unwrap(),
        Some(Flags {
            read: false,
            archived: true
        })
    );

    data.script(|a| a.fail = Some("disk full".into()));
    let error = data.meta(session.clone(), "k").await.unwrap_err();
    assert!(error.to_string().contains("disk full"), "{error}");
    let calls = data.calls();
    assert_eq!(calls.len(), 9);
    assert_eq!(
        calls[0],
        DataCall::SetMeta {
            owner: session.clone(),
            key: "k".into(),
            value: Some("v".into())
        }
    );
    assert_eq!(
        calls[8],
        DataCall::Meta {
            owner: session,
            key: "k".into()
        }
    );
}

#[test]
fn every_fake_is_usable_as_its_trait_object() {
    let _: Arc<dyn TitleController> = Arc::new(FakeTitleController::default());
    let _: Arc<dyn LocalCommands> = Arc::new(FakeLocalCommands::default());
    let _: Arc<dyn TurnTracker> = Arc::new(FakeTurnTracker::default());
    let _: Arc<dyn ToolCallTracker> = Arc::new(FakeToolCallTracker::default());
    let _: Arc<dyn ProviderLocator> = Arc::new(FakeProviderLocator::default());
    let _: Arc<dyn TelemetryReporter> = Arc::new(FakeTelemetry::default());
    let _: Arc<dyn Configuration> = Arc::new(FakeConfiguration::default());
    let _: Arc<dyn HostState> = Arc::new(FakeHostState::default());
    let _: Arc<dyn ServerDispatch> = Arc::new(FakeServerDispatch::default());
    let _: Arc<dyn SessionDataStore> = Arc::new(FakeSessionData::default());
}

#[tokio::test]
async fn the_git_state_fake_records_and_answers() {
    use crate::fakes::{FakeGitState, GitStateCall};
    use crate::{GitState, RepositoryReference};
    use std::path::Path;
    let fake = FakeGitState::default();
    let reference = RepositoryReference {
        root: "/r".into(),
        remote: None,
        branch: Some("main".into()),
        pull_request: None,
        pull_request_unknown: false,
    };
    fake.answer("/r", Ok(reference.clone()));
    assert_eq!(fake.reference(Path::new("/r")).await, Ok(reference));
    assert!(fake.reference(Path::new("/other")).await.is_err());
    assert_eq!(
        fake.calls(),
        [
            GitStateCall::Reference("/r".into()),
            GitStateCall::Reference("/other".into())
        ]
    );
}

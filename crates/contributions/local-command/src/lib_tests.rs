use std::sync::Arc;

use agenthost_dispatcher::{ClientContext, Dispatcher, LaunchKind, Registration, RequestSource};
use agenthost_protocol::ahp_types::state::{
    ChatState, Message, RootState, SessionState, TurnState,
};
use agenthost_services::fakes::{
    DataCall, DispatchCall, FakeHostState, FakeLocalCommands, FakeServerDispatch, FakeSessionData,
    FakeTelemetry, FakeTitleController, LocalCommandsCall, TelemetryCall, TitleCall,
};
use agenthost_services::{
    DefaultLocalCommands, DefaultTitleController, LocalCommandError, StateHostState,
    StateServerDispatch, TracingTelemetry,
};
use agenthost_state::{StateConfig, StateManager};
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/default";
const PEER: &str = "ahp-chat:/peer";
const ARCHIVED: u32 = 64;

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn message(text: &str, kind: &str) -> Message {
    from(json!({ "text": text, "origin": { "kind": kind } }))
}

fn request(chat: &str, text: &str) -> IncomingRequest {
    IncomingRequest {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
        message: message(text, "user"),
        turn_id: "t1".to_owned(),
        source: RequestSource::Direct,
        client_id: None,
        client_context: ClientContext::unknown(LaunchKind::Serve),
    }
}

fn summary(uri: &str) -> Value {
    json!({ "resource": uri, "title": "Old", "status": 1,
            "modifiedAt": "2026-01-01T00:00:00.000Z" })
}

fn session_state(status: u32) -> SessionState {
    from(json!({
        "provider": "scripted", "title": "Old", "status": status, "lifecycle": "ready",
        "activeClients": [], "chats": [summary(CHAT), summary(PEER)], "defaultChat": CHAT
    }))
}

fn chat_state(uri: &str, extra: Value) -> ChatState {
    let mut chat = summary(uri);
    chat["turns"] = json!([]);
    chat.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    from(chat)
}

struct Fakes {
    commands: Arc<FakeLocalCommands>,
    titles: Arc<FakeTitleController>,
    host: Arc<FakeHostState>,
    dispatch: Arc<FakeServerDispatch>,
    telemetry: Arc<FakeTelemetry>,
    data: Arc<FakeSessionData>,
}

impl Fakes {
    fn new() -> Self {
        let host = Arc::new(FakeHostState::default());
        host.script(|a| {
            a.sessions.insert(SESSION.to_owned(), session_state(1));
        });
        Self {
            commands: Arc::default(),
            titles: Arc::default(),
            host,
            dispatch: Arc::default(),
            telemetry: Arc::default(),
            data: Arc::default(),
        }
    }

    fn handler(&self) -> LocalCommandHandler {
        LocalCommandHandler::new(LocalCommandServices {
            commands: self.commands.clone(),
            titles: self.titles.clone(),
            host: self.host.clone(),
            dispatch: self.dispatch.clone(),
            telemetry: self.telemetry.clone(),
            data: self.data.clone(),
        })
    }

    fn rename_to(&self, title: &str) {
        self.commands.script(|a| {
            a.handle = Some(LocalCommand::Rename {
                title: title.into(),
            })
        });
    }
}

fn call(channel: &str, action: Value) -> DispatchCall {
    DispatchCall {
        channel: channel.to_owned(),
        action: from(action),
    }
}

fn answer_and_completion(chat: &str, answer: &str) -> [DispatchCall; 2] {
    [
        call(
            chat,
            json!({ "type": "chat/responsePart", "turnId": "t1",
                    "part": { "kind": "markdown", "id": ANSWER_PART_ID, "content": answer } }),
        ),
        call(
            chat,
            json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 0 }),
        ),
    ]
}

#[test]
fn a_message_that_is_no_command_is_accepted_and_changes_nothing() {
    let fakes = Fakes::new();
    let outcome = fakes
        .handler()
        .on_incoming_request(&request(CHAT, "hello"))
        .unwrap();
    assert_eq!(outcome, None);
    assert_eq!(
        fakes.commands.calls(),
        [LocalCommandsCall::TryHandle("hello".into())]
    );
    assert!(fakes.dispatch.calls().is_empty());
    assert!(fakes.titles.calls().is_empty());
    assert!(fakes.telemetry.calls().is_empty());
}

#[test]
fn messages_not_typed_by_the_user_are_never_offered_to_the_commands() {
    let fakes = Fakes::new();
    fakes.rename_to("T");
    let handler = fakes.handler();
    for kind in ["agent", "tool", "automation", "systemNotification"] {
        let mut request = request(CHAT, "/rename T");
        request.message = message("/rename T", kind);
        assert_eq!(
            handler.on_incoming_request(&request).unwrap(),
            None,
            "{kind}"
        );
    }
    assert!(fakes.commands.calls().is_empty());
    assert!(fakes.dispatch.calls().is_empty());
}

#[test]
fn rename_in_a_peer_chat_records_a_user_title_renames_the_chat_and_completes_the_turn() {
    let fakes = Fakes::new();
    fakes.rename_to("New name");
    let outcome = fakes
        .handler()
        .on_incoming_request(&request(PEER, "/rename New name"))
        .unwrap();
    assert_eq!(outcome, Some(Disposition::Handled));

    let mut expected = vec![call(
        SESSION,
        json!({ "type": "session/chatUpdated", "chat": PEER, "changes": { "title": "New name" } }),
    )];
    expected.extend(answer_and_completion(
        PEER,
        "Renamed this chat to “New name”.",
    ));
    assert_eq!(fakes.dispatch.calls(), expected);
    assert_eq!(
        fakes.titles.calls(),
        [
            TitleCall::SetTitle {
                session: SESSION.into(),
                chat: PEER.into(),
                title: "New name".into(),
                kind: TitleKind::User,
            },
            TitleCall::MarkRenamed {
                session: SESSION.into(),
                chat: Some(PEER.into()),
                by: TitleKind::User,
            },
        ]
    );
    assert_eq!(
        fakes.telemetry.calls(),
        [TelemetryCall::LocalCommand {
            session: SESSION.into(),
            chat: PEER.into(),
            command: "rename".into(),
        }]
    );
}

#[test]
fn rename_in_the_default_chat_also_renames_the_session() {
    let fakes = Fakes::new();
    fakes.rename_to("New name");
    let outcome = fakes
        .handler()
        .on_incoming_request(&request(CHAT, "/rename New name"))
        .unwrap();
    assert_eq!(outcome, Some(Disposition::Handled));

    let mut expected = vec![
        call(
            SESSION,
            json!({ "type": "session/chatUpdated", "chat": CHAT, "changes": { "title": "New name" } }),
        ),
        call(
            SESSION,
            json!({ "type": "session/titleChanged", "title": "New name" }),
        ),
    ];
    expected.extend(answer_and_completion(
        CHAT,
        "Renamed this chat to “New name”.",
    ));
    assert_eq!(fakes.dispatch.calls(), expected);
    assert_eq!(
        fakes.titles.calls().last(),
        Some(&TitleCall::MarkRenamed {
            session: SESSION.into(),
            chat: None,
            by: TitleKind::User,
        })
    );
}

#[test]
fn an_empty_rename_is_answered_with_its_error_and_renames_nothing() {
    let fakes = Fakes::new();
    fakes.commands.script(|a| {
        a.handle = Some(LocalCommand::Invalid {
            command: "rename",
            error: LocalCommandError::EmptyTitle,
        })
    });
    let outcome = fakes
        .handler()
        .on_incoming_request(&request(PEER, "/rename   "))
        .unwrap();
    assert_eq!(outcome, Some(Disposition::Handled));
    let answer = format!("`/rename` did nothing: {}.", LocalCommandError::EmptyTitle);
    assert_eq!(fakes.dispatch.calls(), answer_and_completion(PEER, &answer));
    assert!(fakes.titles.calls().is_empty());
    assert_eq!(
        fakes.telemetry.calls(),
        [TelemetryCall::LocalCommand {
            session: SESSION.into(),
            chat: PEER.into(),
            command: "rename".into(),
        }]
    );
}

#[test]
fn a_refused_rename_is_still_handled_and_not_marked_as_renamed() {
    let fakes = Fakes::new();
    fakes.rename_to("New name");
    fakes
        .dispatch
        .script(|a| a.refuse = Some("unknown channel".into()));
    let outcome = fakes
        .handler()
        .on_incoming_request(&request(PEER, "/rename New name"))
        .unwrap();
    assert_eq!(outcome, Some(Disposition::Handled));
    let calls = fakes.dispatch.calls();
    assert_eq!(
        calls.len(),
        3,
        "the rename, the answer, the completion: {calls:?}"
    );
    assert!(
        calls
            .iter()
            .all(|c| !matches!(c.action, StateAction::SessionTitleChanged(_))),
        "nothing but the refused catalog rename was tried: {calls:?}"
    );
    assert_eq!(
        calls[1],
        answer_and_completion(PEER, "Could not rename this chat: unknown channel.")[0]
    );
    assert!(
        !fakes
            .titles
            .calls()
            .iter()
            .any(|c| matches!(c, TitleCall::MarkRenamed { .. }))
    );
}

#[test]
fn registration_needs_every_service() {
    let mut services = ServiceRegistry::new();
    services.insert::<dyn LocalCommands>(Arc::new(DefaultLocalCommands));
    let error = Dispatcher::new(services)
        .register::<LocalCommandHandler>()
        .unwrap_err();
    assert!(error.to_string().contains("TitleController"), "{error}");
}

// ---------------------------------------------------------------------------------------------
// Over a real state manager and the default services.

struct Host {
    state: Arc<StateManager>,
    titles: Arc<DefaultTitleController>,
    dispatcher: Dispatcher,
    _registration: Registration,
}

/// An archived session whose default chat is read-only, with turn `t1` started in `chat`.
fn host(chat: &str, text: &str) -> Host {
    let state = StateManager::new(
        from::<RootState>(json!({ "agents": [] })),
        StateConfig::default(),
    );
    state
        .insert_session(&SESSION.parse().unwrap(), session_state(1 | ARCHIVED))
        .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &agenthost_protocol::ChatUri::parse(
                &(chat_state(CHAT, json!({ "interactivity": "read-only" }))).resource,
            )
            .unwrap(),
            chat_state(CHAT, json!({ "interactivity": "read-only" })),
        )
        .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &chat_state(PEER, json!({})).resource.parse().unwrap(),
            chat_state(PEER, json!({})),
        )
        .unwrap();
    let state = Arc::new(state);
    state
        .dispatch_server(
            chat,
            from(json!({ "type": "chat/turnStarted", "turnId": "t1",
                         "startedAt": "2026-01-01T00:00:01.000Z",
                         "message": { "text": text, "origin": { "kind": "user" } } })),
        )
        .unwrap();
    let titles = Arc::new(DefaultTitleController::default());
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn LocalCommands>(Arc::new(DefaultLocalCommands))
        .insert::<dyn TitleController>(titles.clone())
        .insert::<dyn HostState>(Arc::new(StateHostState::new(state.clone())))
        .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(state.clone())))
        .insert::<dyn TelemetryReporter>(Arc::new(TracingTelemetry))
        .insert::<dyn SessionDataStore>(Arc::new(FakeSessionData::default()));
    let dispatcher = Dispatcher::new(services);
    let registration = dispatcher.register::<LocalCommandHandler>().unwrap();
    Host {
        state,
        titles,
        dispatcher,
        _registration: registration,
    }
}

/// The chat's completed turn `t1` and its single answer.
fn completed_answer(state: &StateManager, chat: &str) -> String {
    let chat = state.read(|h| h.chat(chat).cloned()).unwrap();
    assert_eq!(chat.active_turn, None, "the turn is over");
    let [turn] = chat.turns.as_slice() else {
        panic!("one turn expected: {:?}", chat.turns)
    };
    assert_eq!((turn.id.as_str(), turn.state), ("t1", TurnState::Complete));
    let [ResponsePart::Markdown(part)] = turn.response_parts.as_slice() else {
        panic!("one markdown answer expected: {:?}", turn.response_parts)
    };
    part.content.clone()
}

#[test]
fn over_the_state_manager_rename_in_an_archived_read_only_default_chat_renames_the_catalog_and_session()
 {
    let host = host(CHAT, "/rename   Shiny   new\u{200b} name ");
    assert_eq!(
        host.dispatcher
            .incoming_request(&request(CHAT, "/rename   Shiny   new\u{200b} name ")),
        Disposition::Handled
    );
    assert_eq!(
        completed_answer(&host.state, CHAT),
        "Renamed this chat to “Shiny new name”."
    );
    let (chat_title, session) = host.state.read(|h| {
        (
            h.chat(CHAT).unwrap().title.clone(),
            h.session(SESSION).unwrap().clone(),
        )
    });
    assert_eq!(
        chat_title, "Old",
        "the chat's own state has no title action a client could reduce"
    );
    assert_eq!(session.title, "Shiny new name");
    let catalog: Vec<(&str, &str)> = session
        .chats
        .iter()
        .map(|c| (c.resource.as_str(), c.title.as_str()))
        .collect();
    assert_eq!(catalog, [(CHAT, "Shiny new name"), (PEER, "Old")]);
    assert!(host.titles.renamed_by_user(SESSION, Some(CHAT)));
    assert!(host.titles.renamed_by_user(SESSION, None));
    assert_eq!(
        host.titles.title_state(CHAT).map(|s| (s.title, s.kind)),
        Some((Some("Shiny new name".to_owned()), TitleKind::User))
    );
}

#[test]
fn over_the_state_manager_rename_in_a_peer_chat_leaves_the_session_title() {
    let host = host(PEER, "/rename Side");
    assert_eq!(
        host.dispatcher
            .incoming_request(&request(PEER, "/rename Side")),
        Disposition::Handled
    );
    assert_eq!(
        completed_answer(&host.state, PEER),
        "Renamed this chat to “Side”."
    );
    let session = host.state.read(|h| h.session(SESSION).unwrap().clone());
    assert_eq!(session.title, "Old");
    assert_eq!(session.chats[1].title, "Side");
    assert!(!host.titles.renamed_by_user(SESSION, None));
}

#[test]
fn over_the_state_manager_an_empty_rename_is_answered_and_ends_the_turn() {
    let host = host(PEER, "/rename");
    assert_eq!(
        host.dispatcher.incoming_request(&request(PEER, "/rename")),
        Disposition::Handled
    );
    assert_eq!(
        completed_answer(&host.state, PEER),
        format!("`/rename` did nothing: {}.", LocalCommandError::EmptyTitle)
    );
    let title = host.state.read(|h| h.chat(PEER).unwrap().title.clone());
    assert_eq!(title, "Old");
    assert_eq!(host.titles.title_state(PEER), None);
}

#[test]
fn over_the_state_manager_a_plain_message_is_accepted_and_the_turn_stays_open() {
    let host = host(PEER, "hello");
    assert_eq!(
        host.dispatcher.incoming_request(&request(PEER, "hello")),
        Disposition::Accept
    );
    let active = host
        .state
        .read(|h| h.chat(PEER).unwrap().active_turn.is_some());
    assert!(active);
}

/// `/rename` persists the user's title for the chat and, in the default chat, for the session;
/// nothing is dispatched on a chat channel but the answer and the completion.
#[tokio::test]
async fn a_rename_is_persisted_as_the_users_and_never_titled_on_the_chat_channel() {
    for (chat, owners) in [
        (PEER, vec![format!("chat {PEER}")]),
        (
            CHAT,
            vec![format!("chat {CHAT}"), format!("session {SESSION}")],
        ),
    ] {
        let fakes = Fakes::new();
        fakes.rename_to("Kept");
        let handler = fakes.handler();
        handler
            .on_incoming_request(&request(chat, "/rename Kept"))
            .unwrap();
        handler.flush().await;
        let written: Vec<String> = fakes
            .data
            .calls()
            .into_iter()
            .filter_map(|c| match c {
                DataCall::SetTitle {
                    owner,
                    title,
                    source,
                } => {
                    assert_eq!((title.as_str(), source), ("Kept", TitleSource::User));
                    Some(match owner {
                        DataOwner::Chat(uri) => format!("chat {uri}"),
                        DataOwner::Session(uri) => format!("session {uri}"),
                    })
                }
                _ => None,
            })
            .collect();
        assert_eq!(written, owners, "{chat}");
        for dispatched in fakes.dispatch.calls() {
            if dispatched.channel == chat {
                assert!(
                    matches!(
                        dispatched.action,
                        StateAction::ChatResponsePart(_) | StateAction::ChatTurnComplete(_)
                    ),
                    "{dispatched:?}"
                );
            }
        }
    }
}

use std::sync::Arc;

use agenthost_dispatcher::{ClientContext, Dispatcher, LaunchKind, RequestSource};
use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::{Message, MessageAttachment, RootState};
use agenthost_protocol::error_info::INTERNAL_ERROR;
use agenthost_services::fakes::{FakeHostState, HostStateCall};
use agenthost_services::{ServerDispatch, StateHostState, StateServerDispatch};
use agenthost_state::{StateConfig, StateManager};
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/default";
const PEER: &str = "ahp-chat:/peer";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat_state(uri: &str, extra: Value) -> ChatState {
    let mut chat = json!({
        "resource": uri, "title": "Chat", "status": 1,
        "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
    });
    chat.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    from(chat)
}

fn summary(uri: &str) -> Value {
    json!({ "resource": uri, "title": "Chat", "status": 1,
            "modifiedAt": "2026-01-01T00:00:00.000Z" })
}

fn session_state(status: u32) -> SessionState {
    from(json!({
        "provider": "scripted", "title": "S", "status": status, "lifecycle": "ready",
        "activeClients": [], "chats": [summary(CHAT), summary(PEER)], "defaultChat": CHAT
    }))
}

fn request(chat: &str) -> IncomingRequest {
    IncomingRequest {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
        message: from::<Message>(json!({ "text": "hello", "origin": { "kind": "user" } })),
        turn_id: "t1".to_owned(),
        source: RequestSource::Direct,
        client_id: Some("client".to_owned()),
        client_context: ClientContext::unknown(LaunchKind::Serve),
    }
}

fn rejection(error_type: &str, message: &str) -> Option<Disposition> {
    Some(Disposition::Reject {
        error: error_info(error_type, message),
        stage: RejectStage::Validation,
    })
}

const SESSION_ARCHIVED: &str = "This session is archived. Unarchive it to send messages.";
const CHAT_ARCHIVED: &str = "This chat is archived. Unarchive it to send messages.";
const CHAT_READ_ONLY: &str = "This chat is read-only.";
const ARCHIVED_BIT: u32 = SessionStatus::IsArchived.0;

/// A fake host holding the session and both chats, each chat with `extra` fields.
fn fake_host(session_status: u32, default_extra: Value, peer_extra: Value) -> Arc<FakeHostState> {
    let host = Arc::new(FakeHostState::default());
    host.script(|a| {
        a.sessions
            .insert(SESSION.to_owned(), session_state(session_status));
        a.chats
            .insert(CHAT.to_owned(), chat_state(CHAT, default_extra));
        a.chats
            .insert(PEER.to_owned(), chat_state(PEER, peer_extra));
        a.chat_sessions.insert(CHAT.to_owned(), SESSION.to_owned());
        a.chat_sessions.insert(PEER.to_owned(), SESSION.to_owned());
    });
    host
}

/// A configuration without roots (nothing checked against them).
fn no_roots() -> Arc<dyn Configuration> {
    Arc::new(agenthost_services::fakes::FakeConfiguration::default())
}

/// A configuration whose only root is `root`.
fn rooted(root: &std::path::Path) -> Arc<dyn Configuration> {
    let config = agenthost_services::fakes::FakeConfiguration::default();
    config.script(|a| a.roots = Some(vec![root.canonicalize().unwrap()]));
    Arc::new(config)
}

fn with_attachment(uri: &str) -> IncomingRequest {
    let mut request = request(CHAT);
    request.message = from::<Message>(json!({
        "text": "look", "origin": { "kind": "user" },
        "attachments": [{ "type": "resource", "label": "the file", "uri": uri,
                          "selection": { "range": { "start": { "line": 0, "character": 0 },
                                                    "end": { "line": 1, "character": 0 } } } }]
    }));
    assert!(
        matches!(
            request.message.attachments.as_deref(),
            Some([MessageAttachment::Resource(_)])
        ),
        "the test's attachment is a resource attachment"
    );
    request
}

/// Attached files must lie inside a root, resolved through symlinks; other schemes and hosts
/// without roots pass.
#[test]
fn attachments_outside_the_roots_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(base.join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(base.join("secret.txt"), root.join("link.txt")).unwrap();
    std::fs::create_dir(base.join("rootsibling")).unwrap();
    std::fs::write(base.join("rootsibling/x.txt"), "x\n").unwrap();
    let uri = |path: &std::path::Path| agenthost_protocol::uri::path_to_file_uri(path).unwrap();
    let gate = TurnAdmission::new(fake_host(1, json!({}), json!({})), rooted(&root));

    for inside in [
        uri(&root.join("src/a.rs")),
        uri(&root.join("src/new-file.rs")),
        "untitled:Untitled-1".to_owned(),
    ] {
        assert_eq!(
            gate.on_incoming_request(&with_attachment(&inside)).unwrap(),
            None,
            "{inside}"
        );
    }
    for outside in [
        uri(&base.join("secret.txt")),
        uri(&root.join("link.txt")),
        format!("{}/../secret.txt", uri(&root)),
        uri(&base.join("rootsibling/x.txt")),
        uri(&root.join("missing-dir/x.txt")),
        "file:///etc/passwd".to_owned(),
    ] {
        let Some(Disposition::Reject { error, stage }) = gate
            .on_incoming_request(&with_attachment(&outside))
            .unwrap()
        else {
            panic!("{outside} was admitted");
        };
        assert_eq!(error.error_type, OUTSIDE_ROOTS, "{outside}");
        assert!(error.message.contains("\"the file\""), "{}", error.message);
        assert_eq!(stage, RejectStage::Validation);
    }

    let unrooted = TurnAdmission::new(fake_host(1, json!({}), json!({})), no_roots());
    assert_eq!(
        unrooted
            .on_incoming_request(&with_attachment("file:///etc/passwd"))
            .unwrap(),
        None
    );
}

#[test]
fn a_normal_chat_is_admitted_after_one_read_of_chat_and_session() {
    let host = fake_host(1, json!({}), json!({}));
    let gate = TurnAdmission::new(host.clone(), no_roots());
    assert_eq!(gate.on_incoming_request(&request(PEER)).unwrap(), None);
    assert_eq!(
        host.calls(),
        [
            HostStateCall::Chat(PEER.into()),
            HostStateCall::Session(SESSION.into())
        ]
    );
}

#[test]
fn an_archived_session_rejects_every_chat_with_archived() {
    let host = fake_host(1 | ARCHIVED_BIT, json!({}), json!({}));
    let gate = TurnAdmission::new(host, no_roots());
    for chat in [CHAT, PEER] {
        assert_eq!(
            gate.on_incoming_request(&request(chat)).unwrap(),
            rejection(ARCHIVED, SESSION_ARCHIVED),
            "{chat}"
        );
    }
}

#[test]
fn an_archived_peer_chat_is_rejected_with_archived() {
    let host = fake_host(1, json!({}), json!({ "status": 1 | ARCHIVED_BIT }));
    let gate = TurnAdmission::new(host, no_roots());
    assert_eq!(
        gate.on_incoming_request(&request(PEER)).unwrap(),
        rejection(ARCHIVED, CHAT_ARCHIVED)
    );
    assert_eq!(gate.on_incoming_request(&request(CHAT)).unwrap(), None);
}

#[test]
fn the_default_chat_of_an_unarchived_session_is_admitted_despite_a_stale_archive_flag() {
    let host = fake_host(
        1,
        json!({ "status": 1 | ARCHIVED_BIT }),
        json!({ "status": 1 | ARCHIVED_BIT }),
    );
    let gate = TurnAdmission::new(host, no_roots());
    assert_eq!(gate.on_incoming_request(&request(CHAT)).unwrap(), None);
    assert_eq!(
        gate.on_incoming_request(&request(PEER)).unwrap(),
        rejection(ARCHIVED, CHAT_ARCHIVED)
    );
}

#[test]
fn a_read_only_chat_is_rejected_with_read_only() {
    let host = fake_host(1, json!({ "interactivity": "read-only" }), json!({}));
    let gate = TurnAdmission::new(host, no_roots());
    assert_eq!(
        gate.on_incoming_request(&request(CHAT)).unwrap(),
        rejection(READ_ONLY, CHAT_READ_ONLY)
    );
    assert_eq!(gate.on_incoming_request(&request(PEER)).unwrap(), None);
}

#[test]
fn an_explicitly_full_chat_is_admitted() {
    let host = fake_host(1, json!({ "interactivity": "full" }), json!({}));
    let gate = TurnAdmission::new(host, no_roots());
    assert_eq!(gate.on_incoming_request(&request(CHAT)).unwrap(), None);
}

#[test]
fn an_unknown_chat_or_session_fails_the_hook_instead_of_admitting() {
    let host = fake_host(1, json!({}), json!({}));
    let gate = TurnAdmission::new(host.clone(), no_roots());
    let error = gate
        .on_incoming_request(&request("ahp-chat:/gone"))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        AdmissionError::UnknownChat("ahp-chat:/gone".into()).to_string()
    );

    host.script(|a| a.sessions.clear());
    let error = gate.on_incoming_request(&request(CHAT)).unwrap_err();
    assert_eq!(
        error.to_string(),
        AdmissionError::UnknownSession(SESSION.into()).to_string()
    );
}

fn registry(host: Arc<dyn HostState>) -> ServiceRegistry {
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn HostState>(host)
        .insert::<dyn Configuration>(no_roots());
    services
}

#[test]
fn through_the_dispatcher_an_unknown_chat_is_rejected_with_internal_error() {
    let dispatcher = Dispatcher::new(registry(fake_host(1, json!({}), json!({}))));
    let _registration = dispatcher.register::<TurnAdmission>().unwrap();
    assert_eq!(
        dispatcher.order_of(Hook::IncomingRequest),
        [(100, "turnAdmission")]
    );
    assert_eq!(
        dispatcher.incoming_request(&request("ahp-chat:/gone")),
        Disposition::Reject {
            error: error_info(
                INTERNAL_ERROR,
                "Turn admission contribution 'turnAdmission' failed"
            ),
            stage: RejectStage::Validation,
        }
    );
    assert_eq!(
        dispatcher.incoming_request(&request(CHAT)),
        Disposition::Accept
    );
}

#[test]
fn registration_needs_host_state() {
    let dispatcher = Dispatcher::new(ServiceRegistry::new());
    let error = dispatcher.register::<TurnAdmission>().unwrap_err();
    assert!(error.to_string().contains("HostState"), "{error}");
}

// ---------------------------------------------------------------------------------------------
// Over a real state manager: the flags as the reducers set them.

fn real_state() -> Arc<StateManager> {
    let state = StateManager::new(
        from::<RootState>(json!({ "agents": [] })),
        StateConfig::default(),
    );
    state
        .insert_session(&SESSION.parse().unwrap(), session_state(1))
        .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &chat_state(CHAT, json!({})).resource.parse().unwrap(),
            chat_state(CHAT, json!({})),
        )
        .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &agenthost_protocol::ChatUri::parse(
                &(chat_state(PEER, json!({ "interactivity": "read-only" }))).resource,
            )
            .unwrap(),
            chat_state(PEER, json!({ "interactivity": "read-only" })),
        )
        .unwrap();
    Arc::new(state)
}

fn dispatch(state: &Arc<StateManager>, channel: &str, action: Value) {
    StateServerDispatch::new(state.clone())
        .dispatch(channel, from::<StateAction>(action))
        .unwrap();
}

#[test]
fn over_the_state_manager_archive_actions_and_read_only_chats_are_refused() {
    let state = real_state();
    let dispatcher = Dispatcher::new(registry(Arc::new(StateHostState::new(state.clone()))));
    let _registration = dispatcher.register::<TurnAdmission>().unwrap();

    assert_eq!(
        dispatcher.incoming_request(&request(CHAT)),
        Disposition::Accept
    );
    assert_eq!(
        Some(dispatcher.incoming_request(&request(PEER))),
        rejection(READ_ONLY, CHAT_READ_ONLY)
    );

    dispatch(
        &state,
        SESSION,
        json!({ "type": "session/isArchivedChanged", "isArchived": true }),
    );
    assert_eq!(
        Some(dispatcher.incoming_request(&request(CHAT))),
        rejection(ARCHIVED, SESSION_ARCHIVED)
    );

    // Archiving marked the default chat too; unarchiving the session admits it again.
    dispatch(
        &state,
        CHAT,
        json!({ "type": "chat/isArchivedChanged", "isArchived": true }),
    );
    dispatch(
        &state,
        SESSION,
        json!({ "type": "session/isArchivedChanged", "isArchived": false }),
    );
    assert_eq!(
        dispatcher.incoming_request(&request(CHAT)),
        Disposition::Accept
    );

    dispatch(
        &state,
        PEER,
        json!({ "type": "chat/isArchivedChanged", "isArchived": true }),
    );
    assert_eq!(
        Some(dispatcher.incoming_request(&request(PEER))),
        rejection(ARCHIVED, CHAT_ARCHIVED)
    );
}

use std::sync::Arc;

use agenthost_dispatcher::{Dispatcher, ServiceRegistry};
use agenthost_protocol::ahp_types::state::{AgentInfo, SessionLifecycle};
use agenthost_protocol::commands::{CreateChatParams, CreateSessionParams};
use agenthost_protocol::uri::path_to_file_uri;
use agenthost_state::StateManager;
use agenthost_store::Store;
use serde_json::json;

use super::*;

fn agent(provider: &str) -> AgentInfo {
    serde_json::from_value(json!({
        "provider": provider, "displayName": provider, "description": "test",
        "models": [{ "id": "m1", "provider": provider, "name": "M1" }]
    }))
    .unwrap()
}

fn service(root: &std::path::Path) -> (Arc<StateManager>, SessionService) {
    service_on(root, Store::open_in_memory().unwrap())
}

fn service_on(root: &std::path::Path, store: Store) -> (Arc<StateManager>, SessionService) {
    service_built(root, store, None, ServiceRegistry::new())
}

/// A service with the host's `session_config` and the services in `registry`.
fn service_built(
    root: &std::path::Path,
    store: Store,
    session_config: Option<SessionConfigState>,
    registry: ServiceRegistry,
) -> (Arc<StateManager>, SessionService) {
    let state = state_for(&store, root_state(vec![agent("scripted"), agent("claude")])).unwrap();
    let service = SessionService::new(
        Arc::clone(&state),
        Dispatcher::new(registry),
        store,
        ServiceConfig {
            roots: vec![root.to_path_buf()],
            session_config,
            ..ServiceConfig::default()
        },
    )
    .unwrap();
    (state, service)
}

fn create(channel: &str) -> CreateSessionParams {
    serde_json::from_value(json!({ "channel": channel })).unwrap()
}

#[tokio::test]
async fn a_session_gets_its_default_chat_at_the_derived_uri_and_becomes_ready() {
    let dir = tempfile::tempdir().unwrap();
    let (state, service) = service(dir.path());
    let summary = service
        .create_session(create("claude:/s1"), "c")
        .await
        .unwrap();
    assert_eq!(
        summary.provider, "claude",
        "the provider comes from the scheme"
    );
    let default_chat =
        ChatUri::default_for(&SessionUri::parse("claude:/s1").unwrap()).into_string();
    assert_eq!(summary.default_chat.as_deref(), Some(default_chat.as_str()));
    let session = state.read(|h| h.session("claude:/s1").cloned()).unwrap();
    assert_eq!(session.lifecycle, SessionLifecycle::Ready);
    assert_eq!(session.chats[0].resource, default_chat);
    let root = path_to_file_uri(&dir.path().canonicalize().unwrap()).unwrap();
    assert_eq!(session.working_directories, Some(vec![root]));
    assert_eq!(service.resolve_chat(&default_chat), default_chat);
}

#[tokio::test]
async fn provider_and_existence_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (_, service) = service(dir.path());
    let error = service
        .create_session(create("codex:/s1"), "c")
        .await
        .unwrap_err();
    assert_eq!(error.code(), -32002);
    assert!(error.to_string().contains("scripted, claude"), "{error}");
    // A canonical URI with two advertised providers needs the provider named.
    assert_eq!(
        service
            .create_session(create("ahp-session:/s2"), "c")
            .await
            .unwrap_err()
            .code(),
        -32002
    );
    let mut params = create("ahp-session:/s2");
    params.provider = Some("scripted".into());
    service.create_session(params.clone(), "c").await.unwrap();
    assert_eq!(
        service
            .create_session(params, "c")
            .await
            .unwrap_err()
            .code(),
        -32003
    );
    assert_eq!(
        service
            .create_session(create("ahp-session:/.."), "c")
            .await
            .unwrap_err()
            .code(),
        -32602
    );
}

#[tokio::test]
async fn working_directories_must_lie_in_a_root() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("repo")).unwrap();
    let (_, service) = service(root.path());
    let mut params = create("scripted:/s1");
    params.working_directories = Some(vec![path_to_file_uri(outside.path()).unwrap()]);
    let error = service
        .create_session(params.clone(), "c")
        .await
        .unwrap_err();
    assert!(matches!(error, ServiceError::OutsideRoots(_)), "{error}");
    // `..` cannot climb out either.
    let sneaky = format!("{}/repo/../../", path_to_file_uri(root.path()).unwrap());
    params.working_directories = Some(vec![sneaky]);
    assert!(service.create_session(params.clone(), "c").await.is_err());
    params.working_directories = Some(vec![path_to_file_uri(&root.path().join("repo")).unwrap()]);
    service.create_session(params, "c").await.unwrap();
}

#[tokio::test]
async fn create_chat_checks_its_directories_and_attachments() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::create_dir(root_path.join("sub")).unwrap();
    let (state, service) = service(&root_path);
    let mut params = create("scripted:/s1");
    let root_uri = path_to_file_uri(&root_path).unwrap();
    let sub_uri = path_to_file_uri(&root_path.join("sub")).unwrap();
    params.working_directories = Some(vec![root_uri.clone()]);
    service.create_session(params, "c").await.unwrap();
    let outside_uri = path_to_file_uri(outside.path()).unwrap();
    let chat = |n: &str, extra: serde_json::Value| -> CreateChatParams {
        let mut params = json!({ "channel": "scripted:/s1", "chat": format!("ahp-chat:/{n}") });
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(params).unwrap()
    };
    for (n, extra) in [
        ("a", json!({ "workingDirectories": [outside_uri.clone()] })),
        // Inside the root, but not one of the session's working directories.
        ("b", json!({ "workingDirectories": [sub_uri] })),
        (
            "c",
            json!({ "initialMessage": {
                "text": "read", "origin": { "kind": "user" },
                "attachments": [{ "type": "resource", "label": "x", "uri": format!("{outside_uri}/x") }]
            }}),
        ),
    ] {
        let error = service.create_chat(&chat(n, extra)).await.unwrap_err();
        assert_eq!(error.code(), -32602, "{n}: {error}");
        assert!(state.snapshot(&format!("ahp-chat:/{n}")).is_none(), "{n}");
    }
    service
        .create_chat(&chat(
            "d",
            json!({ "workingDirectories": [root_uri.clone()] }),
        ))
        .await
        .unwrap();
    let directories = state.read(|h| h.chat("ahp-chat:/d").unwrap().working_directories.clone());
    assert_eq!(directories, Some(vec![root_uri]));
}

#[tokio::test]
async fn list_sessions_pages_with_limit_and_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let (_, service) = service(dir.path());
    for n in 0..7 {
        service
            .create_session(create(&format!("scripted:/s{n}")), "c")
            .await
            .unwrap();
    }
    // Some live, some only stored: pages merge both.
    for n in [1, 3, 5] {
        service
            .dispose_session(&format!("scripted:/s{n}").parse().unwrap())
            .unwrap();
    }
    let everything = service.list_sessions().unwrap();
    assert_eq!(everything.items.len(), 7);
    assert_eq!(everything.next_cursor, None);
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = service
            .list_sessions_page(Some(3), cursor.as_deref())
            .unwrap();
        assert!(page.items.len() <= 3);
        paged.extend(page.items.into_iter().map(|s| s.resource));
        pages += 1;
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let all: Vec<String> = everything.items.into_iter().map(|s| s.resource).collect();
    assert_eq!(paged, all);
    // A session added between pages does not shift the next page.
    let first = service.list_sessions_page(Some(2), None).unwrap();
    service
        .create_session(create("scripted:/late"), "c")
        .await
        .unwrap();
    let second = service
        .list_sessions_page(Some(2), first.next_cursor.as_deref())
        .unwrap();
    assert_eq!(second.items[0].resource, all[2]);
    for bad in [Some(0), Some(-1)] {
        assert_eq!(
            service.list_sessions_page(bad, None).unwrap_err().code(),
            -32602
        );
    }
    assert_eq!(
        service
            .list_sessions_page(Some(2), Some("not a cursor"))
            .unwrap_err()
            .code(),
        -32602
    );
}

#[tokio::test]
async fn the_active_client_must_be_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (_, service) = service(dir.path());
    let mut params = create("scripted:/s1");
    params.active_client =
        Some(serde_json::from_value(json!({ "clientId": "other", "tools": [] })).unwrap());
    assert_eq!(
        service
            .create_session(params, "me")
            .await
            .unwrap_err()
            .code(),
        -32602
    );
}

#[tokio::test]
async fn chats_are_created_listed_and_disposed() {
    let dir = tempfile::tempdir().unwrap();
    let (state, service) = service(dir.path());
    service
        .create_session(create("scripted:/s1"), "c")
        .await
        .unwrap();
    let chat: CreateChatParams =
        serde_json::from_value(json!({ "channel": "scripted:/s1", "chat": "ahp-chat:/peer" }))
            .unwrap();
    service.create_chat(&chat).await.unwrap();
    assert_eq!(service.create_chat(&chat).await.unwrap_err().code(), -32010);
    let orphan: CreateChatParams =
        serde_json::from_value(json!({ "channel": "scripted:/none", "chat": "ahp-chat:/x" }))
            .unwrap();
    assert_eq!(
        service.create_chat(&orphan).await.unwrap_err().code(),
        -32001
    );
    let list = service.list_sessions().unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].chats.as_ref().unwrap().len(), 2);

    assert_eq!(
        service
            .dispose_chat(&"ahp-chat:/peer".parse().unwrap())
            .await
            .unwrap(),
        "scripted:/s1"
    );
    assert!(state.read(|h| h.chat("ahp-chat:/peer").is_none()));
    assert_eq!(
        state.read(|h| h.session("scripted:/s1").unwrap().chats.len()),
        1
    );
    // Disposing frees live state only: the session stays listed and comes back on use.
    let chats = service
        .dispose_session(&"scripted:/s1".parse().unwrap())
        .unwrap();
    assert_eq!(chats.len(), 1);
    assert!(state.read(|h| h.session("scripted:/s1").is_none()));
    assert_eq!(service.list_sessions().unwrap().items.len(), 1);
    assert_eq!(
        service
            .create_session(create("scripted:/s1"), "c")
            .await
            .unwrap_err()
            .code(),
        -32003
    );
    service.ensure_channel("scripted:/s1").await.unwrap();
    assert_eq!(
        state.read(|h| h.session("scripted:/s1").unwrap().chats.len()),
        1
    );
    // Deleting removes it for good.
    service
        .delete_session(&"scripted:/s1".parse().unwrap())
        .await
        .unwrap();
    assert!(service.list_sessions().unwrap().items.is_empty());
    assert_eq!(
        service
            .delete_session(&"scripted:/s1".parse().unwrap())
            .await
            .unwrap_err()
            .code(),
        -32001
    );
    assert_eq!(
        service
            .dispose_session(&"scripted:/s1".parse().unwrap())
            .unwrap_err()
            .code(),
        -32001
    );
}

fn turn(value: serde_json::Value) -> agenthost_protocol::StateAction {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn completed_turns_survive_a_restart_and_come_back_hydrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agenthost.db");
    let chat = {
        let (state, service) = service_on(dir.path(), Store::open(&path).unwrap());
        service
            .create_session(create("scripted:/s1"), "c")
            .await
            .unwrap();
        let chat = ChatUri::default_for(&SessionUri::parse("scripted:/s1").unwrap()).into_string();
        for action in [
            json!({ "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-01-01T00:00:00.000Z",
                    "message": { "text": "hello", "origin": { "kind": "user" } } }),
            json!({ "type": "chat/responsePart", "turnId": "t1",
                    "part": { "kind": "markdown", "id": "m", "content": "Hi there" } }),
            json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 1500 }),
            // A turn still running when the host stops is not history yet.
            json!({ "type": "chat/turnStarted", "turnId": "t2", "startedAt": "2026-01-01T00:01:00.000Z",
                    "message": { "text": "more", "origin": { "kind": "user" } } }),
        ] {
            state.dispatch_server(&chat, turn(action)).unwrap();
        }
        chat
    };
    let (state, service) = service_on(dir.path(), Store::open(&path).unwrap());
    assert!(
        state.server_seq() > 6,
        "numbering continues above the previous run"
    );
    let listed = service.list_sessions().unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].chats.as_ref().unwrap()[0].resource, chat);
    assert!(
        state.read(|h| h.chat(&chat).is_none()),
        "chats hydrate lazily"
    );
    service.ensure_channel(&chat).await.unwrap();
    let restored = state.read(|h| h.chat(&chat).cloned()).unwrap();
    assert_eq!(restored.turns.len(), 1);
    assert_eq!(restored.turns[0].id, "t1");
    assert!(restored.active_turn.is_none());
    assert_eq!(
        serde_json::to_value(&restored.turns[0].response_parts).unwrap(),
        json!([{ "kind": "markdown", "id": "m", "content": "Hi there" }])
    );
    assert_eq!(
        service
            .fetch_turns(&"ahp-chat:/unknown".parse().unwrap())
            .await
            .unwrap_err()
            .code(),
        -32008
    );
}

#[tokio::test]
async fn deleting_a_session_removes_its_checkpoint_refs_and_disposing_keeps_them() {
    use agenthost_checkpoint::{
        CheckpointConfig, CheckpointService, GitCheckpointService, MemoryLedger,
    };
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().canonicalize().unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@invalid"])
            .args(args)
            .current_dir(&repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "--quiet"]);
    std::fs::write(repo.join("a.txt"), "a").unwrap();
    let checkpoints: Arc<dyn CheckpointService> = Arc::new(GitCheckpointService::new(
        CheckpointConfig::default(),
        Arc::new(MemoryLedger::new()),
    ));
    let mut registry = ServiceRegistry::new();
    registry.insert::<dyn CheckpointService>(Arc::clone(&checkpoints));
    let (_, service) = service_built(&repo, Store::open_in_memory().unwrap(), None, registry);
    service
        .create_session(create("scripted:/s1"), "c")
        .await
        .unwrap();
    let session = SessionUri::parse("scripted:/s1").unwrap();
    checkpoints
        .capture_baseline(&session, std::slice::from_ref(&repo))
        .await;
    assert!(checkpoints.baseline(&session, Some(&repo)).await.is_some());

    service
        .dispose_session(&"scripted:/s1".parse().unwrap())
        .unwrap();
    assert!(
        checkpoints.baseline(&session, Some(&repo)).await.is_some(),
        "disposal keeps them"
    );

    service
        .delete_session(&"scripted:/s1".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(checkpoints.baseline(&session, Some(&repo)).await, None);
}

/// A `chatConfig`-like contribution restoring a fixed configuration for every chat.
struct RestoresConfig(serde_json::Value);

impl agenthost_dispatcher::ChatContribution for RestoresConfig {
    fn on_hydrate_chat<'a>(
        &'a self,
        _context: &'a HydrationContext,
        chat: &'a RestoredChat,
    ) -> agenthost_dispatcher::HookFuture<'a, RestoredChat> {
        let config = serde_json::from_value(self.0.clone()).unwrap();
        Box::pin(async move {
            Ok(RestoredChat {
                config: Some(config),
                ..chat.clone()
            })
        })
    }
}

/// The restored `config` of `onHydrateChat` is applied to the chat before it is registered; a
/// malformed one leaves the chat inheriting the session's working directories.
#[tokio::test]
async fn a_restored_chat_configuration_is_applied_and_a_malformed_one_ignored() {
    for (config, expected) in [
        (
            json!({ "workingDirectories": ["file:///work/sub"] }),
            Some(vec!["file:///work/sub".to_owned()]),
        ),
        (json!({ "workingDirectories": "file:///work/sub" }), None),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agenthost.db");
        {
            let (_, service) = service_on(dir.path(), Store::open(&path).unwrap());
            service
                .create_session(create("scripted:/s1"), "c")
                .await
                .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let state = state_for(&store, root_state(vec![agent("scripted")])).unwrap();
        let dispatcher = Dispatcher::new(ServiceRegistry::new());
        let _registration = dispatcher
            .register_with(
                agenthost_dispatcher::Descriptor {
                    id: "restoresConfig",
                    order: 650,
                    hooks: agenthost_dispatcher::HookSet::of(&[
                        agenthost_dispatcher::Hook::HydrateChat,
                    ]),
                },
                move |_, _| Ok(Arc::new(RestoresConfig(config))),
            )
            .unwrap();
        let service = SessionService::new(
            Arc::clone(&state),
            dispatcher,
            store,
            ServiceConfig {
                roots: vec![dir.path().to_path_buf()],
                ..ServiceConfig::default()
            },
        )
        .unwrap();
        let chat = ChatUri::default_for(&SessionUri::parse("scripted:/s1").unwrap()).into_string();
        service.ensure_channel(&chat).await.unwrap();
        let restored = state.read(|h| h.chat(&chat).cloned()).unwrap();
        assert_eq!(restored.working_directories, expected);
    }
}

// ---------------------------------------------------------------------------------------------
// Side chats.

fn default_chat_of(session: &str) -> String {
    ChatUri::default_for(&SessionUri::parse(session).unwrap()).into_string()
}

/// Runs turn `t1` to completion in `chat` and leaves `t2` active.
fn run_turns(state: &StateManager, chat: &str) {
    for action in [
        json!({ "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-01-01T00:00:00.000Z",
                "message": { "text": "hello", "origin": { "kind": "user" } } }),
        json!({ "type": "chat/responsePart", "turnId": "t1",
                "part": { "kind": "markdown", "id": "m", "content": "Hi there" } }),
        json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 1500 }),
        json!({ "type": "chat/turnStarted", "turnId": "t2", "startedAt": "2026-01-01T00:01:00.000Z",
                "message": { "text": "more", "origin": { "kind": "user" } } }),
    ] {
        state.dispatch_server(chat, turn(action)).unwrap();
    }
}

fn create_chat_params(session: &str, chat: &str, source: serde_json::Value) -> CreateChatParams {
    serde_json::from_value(json!({ "channel": session, "chat": chat, "source": source })).unwrap()
}

fn side_source(chat: &str, turn_id: &str) -> serde_json::Value {
    json!({ "kind": "sideChat", "chat": chat, "turnId": turn_id })
}

fn side_origin(chat: &str, turn_id: &str, selection: Option<&str>) -> ChatOrigin {
    ChatOrigin::SideChat {
        chat: chat.to_owned(),
        turn_id: turn_id.to_owned(),
        selection: selection.map(|text| {
            serde_json::from_value(json!({ "text": text, "responsePartId": "m" })).unwrap()
        }),
    }
}

/// The origin of `chat` in its live state and in its session's catalog entry.
fn origins(state: &StateManager, session: &str, chat: &str) -> [Option<ChatOrigin>; 2] {
    state.read(|h| {
        let live = h.chat(chat).and_then(|c| c.origin.clone());
        let listed = h
            .session(session)
            .and_then(|s| s.chats.iter().find(|c| c.resource == chat).cloned())
            .and_then(|c| c.origin);
        [live, listed]
    })
}

#[tokio::test]
async fn a_side_chat_records_its_source_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agenthost.db");
    let source = default_chat_of("scripted:/s1");
    {
        let (state, service) = service_on(dir.path(), Store::open(&path).unwrap());
        service
            .create_session(create("scripted:/s1"), "c")
            .await
            .unwrap();
        run_turns(&state, &source);
        // At a completed turn, with a selection.
        let mut at_completed = side_source(&source, "t1");
        at_completed["selection"] = json!({ "text": "Hi", "responsePartId": "m" });
        service
            .create_chat(&create_chat_params(
                "scripted:/s1",
                "ahp-chat:/side-1",
                at_completed,
            ))
            .await
            .unwrap();
        let expected = Some(side_origin(&source, "t1", Some("Hi")));
        assert_eq!(
            origins(&state, "scripted:/s1", "ahp-chat:/side-1"),
            [expected.clone(), expected]
        );
        // At the active turn.
        service
            .create_chat(&create_chat_params(
                "scripted:/s1",
                "ahp-chat:/side-2",
                side_source(&source, "t2"),
            ))
            .await
            .unwrap();
        let expected = Some(side_origin(&source, "t2", None));
        assert_eq!(
            origins(&state, "scripted:/s1", "ahp-chat:/side-2"),
            [expected.clone(), expected]
        );
        // The side chat starts empty: its source's turns are not copied.
        let side = state.read(|h| h.chat("ahp-chat:/side-1").cloned()).unwrap();
        assert!(side.turns.is_empty() && side.active_turn.is_none());
        // A taken URI is still refused, side chat or not.
        let again = create_chat_params(
            "scripted:/s1",
            "ahp-chat:/side-1",
            side_source(&source, "t1"),
        );
        assert_eq!(
            service.create_chat(&again).await.unwrap_err().code(),
            -32010
        );
    }

    let (state, service) = service_on(dir.path(), Store::open(&path).unwrap());
    let listed = service.list_sessions().unwrap();
    let catalog = listed.items[0].chats.clone().unwrap();
    let origin_of = |chat: &str| {
        catalog
            .iter()
            .find(|c| c.resource == chat)
            .and_then(|c| c.origin.clone())
    };
    assert_eq!(
        origin_of("ahp-chat:/side-1"),
        Some(side_origin(&source, "t1", Some("Hi")))
    );
    assert_eq!(
        origin_of("ahp-chat:/side-2"),
        Some(side_origin(&source, "t2", None))
    );
    service.ensure_channel("ahp-chat:/side-1").await.unwrap();
    let expected = Some(side_origin(&source, "t1", Some("Hi")));
    assert_eq!(
        origins(&state, "scripted:/s1", "ahp-chat:/side-1"),
        [expected.clone(), expected]
    );

    // A source chat that is not live is restored first; its stored turns are the ones it has
    // (`t2` never completed, so it is gone).
    assert!(state.read(|h| h.chat(&source).is_none()));
    service
        .create_chat(&create_chat_params(
            "scripted:/s1",
            "ahp-chat:/side-3",
            side_source(&source, "t1"),
        ))
        .await
        .unwrap();
    assert!(state.read(|h| h.chat(&source).is_some()));
    let gone = create_chat_params(
        "scripted:/s1",
        "ahp-chat:/side-4",
        side_source(&source, "t2"),
    );
    assert_eq!(service.create_chat(&gone).await.unwrap_err().code(), -32602);
}

#[tokio::test]
async fn side_chats_with_a_bad_source_and_forks_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (state, service) = service(dir.path());
    service
        .create_session(create("scripted:/s1"), "c")
        .await
        .unwrap();
    service
        .create_session(create("scripted:/s2"), "c")
        .await
        .unwrap();
    let source = default_chat_of("scripted:/s1");
    let other_session = default_chat_of("scripted:/s2");
    run_turns(&state, &source);
    run_turns(&state, &other_session);
    let not_in_s1 = "is not a chat of scripted:/s1";
    let refusals = [
        (
            json!({ "kind": "fork", "chat": source, "turnId": "t1" }),
            "forks are not supported",
        ),
        (
            json!({ "kind": "clone", "chat": source, "turnId": "t1" }),
            "forks are not supported",
        ),
        (side_source(&other_session, "t1"), not_in_s1),
        (side_source(&source, "t9"), "has no turn \"t9\""),
        (side_source("ahp-chat:/nowhere", "t1"), not_in_s1),
        (side_source("scripted:/s1", "t1"), not_in_s1),
    ];
    for (source, why) in refusals {
        let params = create_chat_params("scripted:/s1", "ahp-chat:/side", source.clone());
        let error = service.create_chat(&params).await.unwrap_err();
        assert_eq!(error.code(), -32602, "{source}: {error}");
        assert!(error.to_string().contains(why), "{source}: {error}");
        assert!(
            state.read(|h| h.chat("ahp-chat:/side").is_none()),
            "{source}: no chat is created"
        );
    }
    assert_eq!(
        state.read(|h| h.session("scripted:/s1").unwrap().chats.len()),
        1,
        "nothing reached the catalog"
    );
    let stored = service.list_sessions().unwrap();
    assert!(
        stored
            .items
            .iter()
            .all(|s| s.chats.as_ref().unwrap().len() == 1),
        "nothing was stored"
    );
    // The session must exist before its source is looked at.
    let orphan = create_chat_params("scripted:/none", "ahp-chat:/x", side_source(&source, "t1"));
    assert_eq!(
        service.create_chat(&orphan).await.unwrap_err().code(),
        -32001
    );
}

#[test]
fn every_agent_advertises_side_chats_and_keeps_its_other_chat_capabilities() {
    let mut forking = agent("claude");
    forking.capabilities =
        Some(serde_json::from_value(json!({ "multipleChats": { "fork": false } })).unwrap());
    let root = root_state(vec![agent("scripted"), forking]);
    let capabilities: Vec<serde_json::Value> = root
        .agents
        .iter()
        .map(|a| serde_json::to_value(&a.capabilities).unwrap())
        .collect();
    assert_eq!(
        capabilities,
        [
            json!({ "multipleChats": { "sideChat": true } }),
            json!({ "multipleChats": { "fork": false, "sideChat": true } }),
        ]
    );
}

/// A schema with one session-mutable property (`mode`) and one that is not (`fixed`).
fn session_config() -> SessionConfigState {
    serde_json::from_value(json!({
        "schema": { "type": "object", "properties": {
            "mode": { "type": "string", "title": "Mode", "sessionMutable": true },
            "fixed": { "type": "string", "title": "Fixed" }
        }},
        "values": { "mode": "off", "fixed": "a" }
    }))
    .unwrap()
}

fn config_values(state: &StateManager, session: &str) -> Option<serde_json::Value> {
    state.read(|h| {
        h.session(session)
            .and_then(|s| s.config.as_ref())
            .map(|c| serde_json::to_value(&c.values).unwrap())
    })
}

/// A new session gets the host's session configuration with the client's values for its
/// known properties; a restored one gets its persisted values (what `sessionFlags`
/// writes) over the defaults; malformed persisted values fall back to the defaults.
#[tokio::test]
async fn sessions_get_the_host_config_with_client_and_persisted_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agenthost.db");
    {
        let (state, service) = service_built(
            dir.path(),
            Store::open(&path).unwrap(),
            Some(session_config()),
            ServiceRegistry::new(),
        );
        let mut params = create("scripted:/s1");
        params.config = Some(
            serde_json::from_value(json!({ "mode": "deny", "fixed": "b", "unknown": 1 })).unwrap(),
        );
        service.create_session(params, "c").await.unwrap();
        assert_eq!(
            config_values(&state, "scripted:/s1"),
            Some(json!({ "mode": "deny", "fixed": "b" })),
            "at creation every known property takes the client's value (sessionMutable is \
             about changes afterwards); unknown ones are dropped"
        );
        service
            .create_session(create("scripted:/s2"), "c")
            .await
            .unwrap();
        assert_eq!(
            config_values(&state, "scripted:/s2"),
            Some(json!({ "mode": "off", "fixed": "a" }))
        );
        let (_, bare) = service_on(dir.path(), Store::open_in_memory().unwrap());
        bare.create_session(create("scripted:/s3"), "c")
            .await
            .unwrap();
        assert_eq!(
            bare.state
                .read(|h| h.session("scripted:/s3").unwrap().config.clone()),
            None,
            "no schema set: no config"
        );
    }
    let store = Store::open(&path).unwrap();
    let s1 = SessionUri::parse("scripted:/s1").unwrap();
    let s2 = SessionUri::parse("scripted:/s2").unwrap();
    store
        .set_meta(
            MetaOwner::Session(&s1),
            SESSION_CONFIG_KEY,
            Some(r#"{"mode":"allow=read_file","fixed":"z"}"#),
        )
        .unwrap();
    store
        .set_meta(
            MetaOwner::Session(&s2),
            SESSION_CONFIG_KEY,
            Some("not json"),
        )
        .unwrap();
    let (state, service) = service_built(
        dir.path(),
        store,
        Some(session_config()),
        ServiceRegistry::new(),
    );
    service.ensure_channel("scripted:/s1").await.unwrap();
    service.ensure_channel("scripted:/s2").await.unwrap();
    assert_eq!(
        config_values(&state, "scripted:/s1"),
        Some(json!({ "mode": "allow=read_file", "fixed": "a" }))
    );
    assert_eq!(
        config_values(&state, "scripted:/s2"),
        Some(json!({ "mode": "off", "fixed": "a" }))
    );
}

/// `<tmp>/proj`: a git repository with one commit (its worktrees go to `<tmp>/proj.worktrees`).
fn project(tmp: &std::path::Path) -> std::path::PathBuf {
    let repo = tmp.canonicalize().unwrap().join("proj");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/a.txt"), "a").unwrap();
    for args in [
        &["init", "--quiet", "-b", "main"][..],
        &["add", "-A"],
        &["commit", "--quiet", "-m", "first"],
    ] {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@invalid"])
            .args(args)
            .current_dir(&repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }
    repo
}

fn isolated(channel: &str, directory: &std::path::Path, mode: &str) -> CreateSessionParams {
    serde_json::from_value(json!({
        "channel": channel,
        "workingDirectories": [path_to_file_uri(directory).unwrap()],
        "config": { "isolation": mode },
    }))
    .unwrap()
}

fn isolation_service(tmp: &std::path::Path, store: &Store) -> (Arc<StateManager>, SessionService) {
    let mut config = session_config();
    config.schema.properties.insert(
        agenthost_services::ISOLATION_KEY.to_owned(),
        agenthost_services::isolation_config_property(),
    );
    let mut registry = ServiceRegistry::new();
    registry.insert::<dyn agenthost_services::WorktreeIsolation>(Arc::new(
        agenthost_services_git::GitWorktrees::new(Arc::new(
            agenthost_services_store::StoreSessionData::new(store.clone()),
        )),
    ));
    service_built(tmp, store.clone(), Some(config), registry)
}

/// `isolation: "worktree"`: the session works in a new linked worktree (same subfolder), its
/// config says so also after a restore, and deleting it removes the worktree and its branch.
#[tokio::test]
async fn an_isolated_session_works_in_its_own_worktree_until_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = project(tmp.path());
    let store = Store::open(tmp.path().join("agenthost.db")).unwrap();
    let (state, service) = isolation_service(tmp.path(), &store);
    service
        .create_session(isolated("scripted:/s1", &repo.join("src"), "worktree"), "c")
        .await
        .unwrap();
    let worktree = repo.with_file_name("proj.worktrees").join("session-s1");
    let directories = state.read(|h| {
        h.session("scripted:/s1")
            .unwrap()
            .working_directories
            .clone()
    });
    assert_eq!(
        directories,
        Some(vec![path_to_file_uri(&worktree.join("src")).unwrap()])
    );
    assert_eq!(
        std::fs::read_to_string(worktree.join("src/a.txt")).unwrap(),
        "a"
    );
    let stored = store
        .session(&SessionUri::parse("scripted:/s1").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(stored.working_directories, directories.clone().unwrap());
    assert_eq!(
        config_values(&state, "scripted:/s1").unwrap()["isolation"],
        "worktree"
    );

    service
        .dispose_session(&"scripted:/s1".parse().unwrap())
        .unwrap();
    service.ensure_channel("scripted:/s1").await.unwrap();
    assert_eq!(
        config_values(&state, "scripted:/s1").unwrap()["isolation"],
        "worktree",
        "the restored session still says where it works"
    );
    assert!(worktree.is_dir(), "disposal keeps the worktree");

    service
        .delete_session(&"scripted:/s1".parse().unwrap())
        .await
        .unwrap();
    assert!(!worktree.exists(), "deletion removes it");
}

/// A folder that cannot be isolated, an unknown mode, or a host without the service: a clear
/// error, and no session is left in the store or the state.
#[tokio::test]
async fn a_session_that_cannot_be_isolated_is_not_created() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().canonicalize().unwrap().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let repo = project(tmp.path());
    let store = Store::open_in_memory().unwrap();
    let (state, service) = isolation_service(tmp.path(), &store);
    for (params, needle) in [
        (
            isolated("scripted:/a", &plain, "worktree"),
            "cannot isolate",
        ),
        (
            isolated("scripted:/b", &repo, "sandbox"),
            "unknown isolation",
        ),
    ] {
        let channel = params.channel.clone();
        let error = service.create_session(params, "c").await.unwrap_err();
        assert!(matches!(error, ServiceError::InvalidParams(_)), "{error}");
        assert!(error.to_string().contains(needle), "{error}");
        assert!(state.read(|h| h.session(&channel).is_none()));
        assert!(
            store
                .session(&SessionUri::parse(&channel).unwrap())
                .unwrap()
                .is_none()
        );
    }
    assert!(
        !repo
            .with_file_name("proj.worktrees")
            .join("session-b")
            .exists()
    );

    let (_, bare) = service_on(tmp.path(), Store::open_in_memory().unwrap());
    let error = bare
        .create_session(isolated("scripted:/c", &repo, "worktree"), "c")
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("cannot isolate sessions"),
        "{error}"
    );
    // `none` needs no service.
    bare.create_session(isolated("scripted:/d", &repo, "none"), "c")
        .await
        .unwrap();
}

/// A subagent chat as the orchestrator's router adds it: inserted into live state and
/// announced, never stored by the router itself.
fn add_subagent_chat(state: &StateManager, session: &str, parent: &str, chat: &str) {
    let origin = ChatOrigin::Tool {
        chat: parent.to_owned(),
        tool_call_id: "task-1".to_owned(),
    };
    let sub = empty_chat(chat, "Explore", "2026-01-01T00:00:00.500Z", Some(origin));
    let added = agenthost_reducers::server_actions::chat_added(&sub);
    state
        .insert_chat(
            &session.parse().unwrap(),
            &sub.resource.parse().unwrap(),
            sub,
        )
        .unwrap();
    state.dispatch_server(session, added).unwrap();
}

#[tokio::test]
async fn subagent_chats_and_their_turns_are_stored_and_other_chats_keep_being_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agenthost.db");
    let store = Store::open(&path).unwrap();
    let parent = default_chat_of("scripted:/s1");
    let session = SessionUri::parse("scripted:/s1").unwrap();
    let sub = ChatUri::subagent(
        &session,
        &agenthost_protocol::SafeId::new("task-1").unwrap(),
    )
    .into_string();
    {
        let (state, service) = service_on(dir.path(), store.clone());
        service
            .create_session(create("scripted:/s1"), "c")
            .await
            .unwrap();
        service
            .create_session(create("scripted:/s2"), "c")
            .await
            .unwrap();
        state
            .dispatch_server(
                &parent,
                turn(json!({ "type": "chat/turnStarted", "turnId": "t1",
                "startedAt": "2026-01-01T00:00:00.000Z",
                "message": { "text": "explore", "origin": { "kind": "user" } } })),
            )
            .unwrap();
        add_subagent_chat(&state, "scripted:/s1", &parent, &sub);
        run_turns(&state, &sub);
        state
            .dispatch_server(
                &parent,
                turn(json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 10 })),
            )
            .unwrap();
        // Another session's turns are stored after the subagent's too.
        run_turns(&state, &default_chat_of("scripted:/s2"));
        assert_eq!(service.history_backlog().0, 0, "nothing is kept");
    }
    let stored = store.chat(&ChatUri::parse(&sub).unwrap()).unwrap().unwrap();
    assert!(stored.subagent);
    assert_eq!(stored.interactivity, None);
    assert!(
        matches!(&stored.origin, Some(ChatOrigin::Tool { chat, tool_call_id })
        if chat == &parent && tool_call_id == "task-1")
    );
    let (state, service) = service_on(dir.path(), Store::open(&path).unwrap());
    service.ensure_channel(&sub).await.unwrap();
    let restored = state.read(|h| h.chat(&sub).cloned()).unwrap();
    assert_eq!(
        restored.turns.len(),
        1,
        "the subagent's finished turn is back"
    );
    for chat in [parent, default_chat_of("scripted:/s2")] {
        service.ensure_channel(&chat).await.unwrap();
        assert_eq!(
            state.read(|h| h.chat(&chat).unwrap().turns.len()),
            1,
            "{chat}"
        );
    }
    // The turns still running at the stop left their open-turn markers.
    let open = store
        .open_turn_of(&ChatUri::parse(&sub).unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        (open.id.as_str(), open.message.text.as_str()),
        ("t2", "more")
    );
    assert!(
        store
            .open_turn_of(&ChatUri::parse(&default_chat_of("scripted:/s1")).unwrap())
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_session_is_one_under_its_two_spellings_and_its_id_is_taken_under_both() {
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("agenthost.db");
    let uri = |text: &str| SessionUri::parse(text).unwrap();
    {
        let (_, service) = service_on(dir.path(), Store::open(&store_path).unwrap());
        let params: CreateSessionParams =
            serde_json::from_value(json!({ "channel": "ahp-session:/s1", "provider": "claude" }))
                .unwrap();
        service.create_session(params, "c").await.unwrap();
        service
            .create_session(create("scripted:/s2"), "c")
            .await
            .unwrap();
        assert_eq!(
            service.session_spelling(&uri("ahp-session:/s1")),
            Some(uri("ahp-session:/s1"))
        );
        assert_eq!(
            service.session_spelling(&uri("claude:/s1")),
            Some(uri("ahp-session:/s1"))
        );
        assert_eq!(
            service.session_spelling(&uri("scripted:/s1")),
            None,
            "not its provider"
        );
        assert_eq!(
            service.session_spelling(&uri("ahp-session:/s2")),
            Some(uri("scripted:/s2"))
        );
        assert_eq!(service.session_spelling(&uri("claude:/s2")), None);
        assert_eq!(service.session_spelling(&uri("claude:/s3")), None);
        for (taken, provider) in [
            ("claude:/s1", "claude"),
            ("scripted:/s1", "scripted"),
            ("ahp-session:/s2", "scripted"),
            ("claude:/s2", "claude"),
        ] {
            let params: CreateSessionParams =
                serde_json::from_value(json!({ "channel": taken, "provider": provider })).unwrap();
            let error = service.create_session(params, "c").await.unwrap_err();
            assert_eq!(error.code(), -32003, "{taken}: {error}");
        }
    }
    // A restarted host finds the other spelling in the store.
    let (_, service) = service_on(dir.path(), Store::open(&store_path).unwrap());
    assert_eq!(
        service.session_spelling(&uri("claude:/s1")),
        Some(uri("ahp-session:/s1"))
    );
    assert_eq!(
        service.session_spelling(&uri("ahp-session:/s2")),
        Some(uri("scripted:/s2"))
    );
    assert_eq!(
        service
            .create_session(create("claude:/s1"), "c")
            .await
            .unwrap_err()
            .code(),
        -32003
    );
}

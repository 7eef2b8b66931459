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
    let state = state_for(&store, root_state(vec![agent("scripted"), agent("claude")])).unwrap();
    let service = SessionService::new(
        Arc::clone(&state),
        Dispatcher::new(ServiceRegistry::new()),
        store,
        ServiceConfig {
            roots: vec![root.to_path_buf()],
        },
    )
    .unwrap();
    (state, service)
}

fn create(channel: &str) -> CreateSessionParams {
    serde_json::from_value(json!({ "channel": channel })).unwrap()
}

#[test]
fn a_session_gets_its_default_chat_at_the_derived_uri_and_becomes_ready() {
    let dir = tempfile::tempdir().unwrap();
    let (state, service) = service(dir.path());
    let summary = service.create_session(create("claude:/s1"), "c").unwrap();
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

#[test]
fn provider_and_existence_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (_, service) = service(dir.path());
    let error = service
        .create_session(create("codex:/s1"), "c")
        .unwrap_err();
    assert_eq!(error.code(), -32002);
    assert!(error.to_string().contains("scripted, claude"), "{error}");
    // A canonical URI with two advertised providers needs the provider named.
    assert_eq!(
        service
            .create_session(create("ahp-session:/s2"), "c")
            .unwrap_err()
            .code(),
        -32002
    );
    let mut params = create("ahp-session:/s2");
    params.provider = Some("scripted".into());
    service.create_session(params.clone(), "c").unwrap();
    assert_eq!(
        service.create_session(params, "c").unwrap_err().code(),
        -32003
    );
    assert_eq!(
        service
            .create_session(create("ahp-session:/.."), "c")
            .unwrap_err()
            .code(),
        -32602
    );
}

#[test]
fn working_directories_must_lie_in_a_root() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("repo")).unwrap();
    let (_, service) = service(root.path());
    let mut params = create("scripted:/s1");
    params.working_directories = Some(vec![path_to_file_uri(outside.path()).unwrap()]);
    let error = service.create_session(params.clone(), "c").unwrap_err();
    assert!(
        matches!(error, ServiceError::OutsideRoots { .. }),
        "{error}"
    );
    // `..` cannot climb out either.
    let sneaky = format!("{}/repo/../../", path_to_file_uri(root.path()).unwrap());
    params.working_directories = Some(vec![sneaky]);
    assert!(service.create_session(params.clone(), "c").is_err());
    params.working_directories = Some(vec![path_to_file_uri(&root.path().join("repo")).unwrap()]);
    service.create_session(params, "c").unwrap();
}

#[test]
fn the_active_client_must_be_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (_, service) = service(dir.path());
    let mut params = create("scripted:/s1");
    params.active_client =
        Some(serde_json::from_value(json!({ "clientId": "other", "tools": [] })).unwrap());
    assert_eq!(
        service.create_session(params, "me").unwrap_err().code(),
        -32602
    );
}

#[tokio::test]
async fn chats_are_created_listed_and_disposed() {
    let dir = tempfile::tempdir().unwrap();
    let (state, service) = service(dir.path());
    service.create_session(create("scripted:/s1"), "c").unwrap();
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
        service.dispose_chat("ahp-chat:/peer").await.unwrap(),
        "scripted:/s1"
    );
    assert!(state.read(|h| h.chat("ahp-chat:/peer").is_none()));
    assert_eq!(
        state.read(|h| h.session("scripted:/s1").unwrap().chats.len()),
        1
    );
    // Disposing frees live state only: the session stays listed and comes back on use.
    let chats = service.dispose_session("scripted:/s1").unwrap();
    assert_eq!(chats.len(), 1);
    assert!(state.read(|h| h.session("scripted:/s1").is_none()));
    assert_eq!(service.list_sessions().unwrap().items.len(), 1);
    assert_eq!(
        service
            .create_session(create("scripted:/s1"), "c")
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
    service.delete_session("scripted:/s1").await.unwrap();
    assert!(service.list_sessions().unwrap().items.is_empty());
    assert_eq!(
        service
            .delete_session("scripted:/s1")
            .await
            .unwrap_err()
            .code(),
        -32001
    );
    assert_eq!(
        service.dispose_session("scripted:/s1").unwrap_err().code(),
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
        service.create_session(create("scripted:/s1"), "c").unwrap();
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
            .fetch_turns("ahp-chat:/unknown")
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
    let (_, service) = service(&repo);
    service.set_checkpoints(Arc::clone(&checkpoints));
    service.create_session(create("scripted:/s1"), "c").unwrap();
    let session = SessionUri::parse("scripted:/s1").unwrap();
    checkpoints
        .capture_baseline(&session, std::slice::from_ref(&repo))
        .await;
    assert!(checkpoints.baseline(&session, Some(&repo)).await.is_some());

    service.dispose_session("scripted:/s1").unwrap();
    assert!(
        checkpoints.baseline(&session, Some(&repo)).await.is_some(),
        "disposal keeps them"
    );

    service.delete_session("scripted:/s1").await.unwrap();
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
            service.create_session(create("scripted:/s1"), "c").unwrap();
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
            },
        )
        .unwrap();
        let chat = ChatUri::default_for(&SessionUri::parse("scripted:/s1").unwrap()).into_string();
        service.ensure_channel(&chat).await.unwrap();
        let restored = state.read(|h| h.chat(&chat).cloned()).unwrap();
        assert_eq!(restored.working_directories, expected);
    }
}

use std::sync::Arc;

use agenthost_dispatcher::{ChatContribution, HydrationContext};
use agenthost_protocol::ahp_types::state::{ActiveTurn, Turn};
use agenthost_protocol::{ChatUri, SessionUri};
use agenthost_services_store::StoreSessionData;
use agenthost_store::{ChatRecord, SessionRecord, Store, TitleSource, TurnRecord};
use serde_json::json;

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";

fn store() -> Store {
    let store = Store::open_in_memory().unwrap();
    store
        .put_session(&SessionRecord {
            uri: SessionUri::parse(SESSION).unwrap(),
            provider: "scripted".into(),
            title: "s1".into(),
            title_source: TitleSource::Default,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            modified_at: "2026-01-01T00:00:00.000Z".into(),
            working_directories: Vec::new(),
            read: false,
            archived: false,
            default_chat: None,
        })
        .unwrap();
    store
        .put_chat(&ChatRecord {
            uri: ChatUri::parse(CHAT).unwrap(),
            session: SessionUri::parse(SESSION).unwrap(),
            position: 0,
            title: "c1".into(),
            title_source: TitleSource::Default,
            modified_at: "2026-01-01T00:00:00.000Z".into(),
            origin: None,
            interactivity: None,
            read: false,
            archived: false,
            draft: None,
            config: None,
            resume_handle: None,
            subagent: false,
        })
        .unwrap();
    store
}

fn finished(id: &str) -> Turn {
    serde_json::from_value(json!({
        "id": id, "message": { "text": "first", "origin": { "kind": "user" } },
        "responseParts": [], "state": "complete"
    }))
    .unwrap()
}

fn open(id: &str) -> ActiveTurn {
    serde_json::from_value(json!({
        "id": id, "startedAt": "2026-01-01T00:01:00.000Z",
        "message": { "text": "do the thing", "origin": { "kind": "user" } },
        "responseParts": []
    }))
    .unwrap()
}

fn context() -> HydrationContext {
    HydrationContext {
        session: SESSION.parse().unwrap(),
        chat: CHAT.parse().unwrap(),
    }
}

fn contribution(store: &Store) -> InterruptedTurn {
    InterruptedTurn::new(Arc::new(StoreSessionData::new(store.clone())))
}

#[tokio::test]
async fn an_open_turn_comes_back_interrupted_after_the_stored_turns_and_is_stored() {
    let store = store();
    let chat = ChatUri::parse(CHAT).unwrap();
    store
        .append_turn(
            &chat,
            &TurnRecord::new(finished("t1")),
            "2026-01-01T00:00:30.000Z",
        )
        .unwrap();
    store.open_turn(&chat, &open("t2")).unwrap();
    let hook = contribution(&store);
    let turns = hook
        .on_hydrate_turns(&context(), &[finished("t1")])
        .await
        .unwrap();
    assert_eq!(turns.len(), 2);
    let turn = serde_json::to_value(&turns[1]).unwrap();
    assert_eq!(
        turn,
        json!({
            "id": "t2", "startedAt": "2026-01-01T00:01:00.000Z",
            "message": { "text": "do the thing", "origin": { "kind": "user" } },
            "responseParts": [{ "kind": "error", "error": {
                "errorType": "executionInterrupted",
                "message": "The agent was interrupted before this request finished." },
                "resumable": false }],
            "state": "error"
        })
    );
    // Stored as the chat's finished turn; the marker is gone, so the next restore is the same.
    assert_eq!(store.open_turn_of(&chat).unwrap(), None);
    let stored: Vec<Turn> = store
        .turns(&chat)
        .unwrap()
        .into_iter()
        .map(|r| r.turn)
        .collect();
    assert_eq!(stored, turns);
    let again = hook.on_hydrate_turns(&context(), &stored).await.unwrap();
    assert_eq!(again, turns);
}

#[tokio::test]
async fn without_an_open_turn_the_history_is_unchanged() {
    let store = store();
    let turns = contribution(&store)
        .on_hydrate_turns(&context(), &[finished("t1")])
        .await
        .unwrap();
    assert_eq!(turns, vec![finished("t1")]);
}

#[tokio::test]
async fn a_resumed_turn_the_host_died_during_replaces_its_stored_error_in_place() {
    let store = store();
    let chat = ChatUri::parse(CHAT).unwrap();
    // t1 ended with a resumable error and was stored; a client resumed it (a new marker); t2
    // never existed.
    store.open_turn(&chat, &open("t1")).unwrap();
    let mut errored = finished("t1");
    errored.state = agenthost_protocol::ahp_types::state::TurnState::Error;
    let turns = contribution(&store)
        .on_hydrate_turns(&context(), &[errored])
        .await
        .unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0], interrupted(open("t1")));
    assert_eq!(store.open_turn_of(&chat).unwrap(), None);
}

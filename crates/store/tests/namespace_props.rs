//! Property tests for the store's namespaces: sessions whose ids are prefixes of one another or
//! hold SQL wildcards and quotes (`%`, `_`, `'`, `--`, …) never see each other's chats, turns,
//! metadata or checkpoint rows, and deleting one leaves every other exactly as it was. Rows are
//! keyed by the exact URI, never by a pattern or a string spliced into SQL.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use agenthost_protocol::ahp_types::state::Turn;
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use agenthost_store::{ChatRecord, MetaOwner, SessionRecord, Store, TitleSource, TurnRecord};
use proptest::prelude::*;
use serde_json::json;

const T0: &str = "2026-01-01T00:00:00.000Z";

/// Suffixes that turn one id into a "neighbour" a careless query would confuse with it.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "%", "_", "'", "\"", "--", ";", "\\", "*", "?", "[", "]", "/", "..", " OR 1=1", "%25",
            "é", " ", "x",
        ])
        .prop_map(str::to_owned),
        "[a-z0-9]{1,3}",
    ]
}

/// Two to five distinct session ids, most of them prefixes of the others.
fn session_ids() -> impl Strategy<Value = Vec<SafeId>> {
    (
        "[a-z%_']{1,4}",
        prop::collection::vec(fragment(), 1..5),
        prop::collection::vec(any::<String>(), 0..2),
    )
        .prop_map(|(base, suffixes, independent)| {
            let mut ids = vec![base.clone()];
            let mut grown = base;
            for suffix in suffixes {
                grown.push_str(&suffix);
                ids.push(grown.clone());
            }
            ids.extend(independent);
            let mut seen = BTreeSet::new();
            ids.into_iter()
                .filter_map(|raw| SafeId::new(raw).ok())
                .filter(|id| seen.insert(id.clone()))
                .collect()
        })
        .prop_filter("two sessions at least", |ids: &Vec<SafeId>| ids.len() >= 2)
}

fn session_record(uri: &SessionUri) -> SessionRecord {
    SessionRecord {
        uri: uri.clone(),
        provider: "scripted".to_owned(),
        title: format!("title of {uri}"),
        title_source: TitleSource::Default,
        created_at: T0.to_owned(),
        modified_at: T0.to_owned(),
        working_directories: vec!["file:///work".to_owned()],
        read: false,
        archived: false,
        default_chat: Some(ChatUri::default_for(uri)),
    }
}

fn chat_record(session: &SessionUri, chat: &ChatUri) -> ChatRecord {
    ChatRecord {
        uri: chat.clone(),
        session: session.clone(),
        position: 0,
        title: format!("chat of {session}"),
        title_source: TitleSource::Default,
        modified_at: T0.to_owned(),
        origin: None,
        interactivity: None,
        read: false,
        archived: false,
        draft: None,
        config: None,
        resume_handle: None,
        subagent: false,
    }
}

fn turn(id: &str) -> TurnRecord {
    let turn: Turn = serde_json::from_value(json!({
        "id": id, "startedAt": T0, "duration": 1,
        "message": { "text": id, "origin": { "kind": "user" } },
        "responseParts": [], "state": "complete",
    }))
    .unwrap();
    TurnRecord::new(turn)
}

/// What one session owns, as read back from the store.
#[derive(Debug, PartialEq)]
struct Owned {
    session: Option<SessionRecord>,
    chats: Vec<String>,
    turns: Vec<String>,
    session_meta: Vec<(String, String)>,
    chat_meta: Vec<(String, String)>,
    checkpoints: Vec<(String, Option<String>)>,
}

fn owned(store: &Store, session: &SessionUri) -> Owned {
    let chat = ChatUri::default_for(session);
    Owned {
        session: store.session(session).unwrap(),
        chats: store
            .chats(session)
            .unwrap()
            .into_iter()
            .map(|c| c.uri.to_string())
            .collect(),
        turns: store
            .turns(&chat)
            .unwrap()
            .into_iter()
            .map(|t| t.turn.id)
            .collect(),
        session_meta: store.meta_entries(MetaOwner::Session(session)).unwrap(),
        chat_meta: store.meta_entries(MetaOwner::Chat(&chat)).unwrap(),
        checkpoints: store.checkpoint_rows(session).unwrap(),
    }
}

/// What a session written by [`populate`] owns.
fn expected(session: &SessionUri, id: &SafeId) -> Owned {
    Owned {
        session: Some(session_record(session)),
        chats: vec![ChatUri::default_for(session).to_string()],
        turns: vec![format!("turn of {id}")],
        session_meta: vec![("owner".to_owned(), id.to_string())],
        chat_meta: vec![("owner".to_owned(), id.to_string())],
        checkpoints: vec![(
            format!("turn of {id}"),
            Some(format!("refs/agents/{id}/checkpoints/turn/1")),
        )],
    }
}

fn populate(store: &Store, session: &SessionUri, id: &SafeId) {
    let chat = ChatUri::default_for(session);
    store.put_session(&session_record(session)).unwrap();
    store.put_chat(&chat_record(session, &chat)).unwrap();
    let turn_id = format!("turn of {id}");
    store.append_turn(&chat, &turn(&turn_id), T0).unwrap();
    store
        .set_meta(MetaOwner::Session(session), "owner", Some(id))
        .unwrap();
    store
        .set_meta(MetaOwner::Chat(&chat), "owner", Some(id))
        .unwrap();
    store
        .set_checkpoint_ref(
            session,
            &turn_id,
            &format!("refs/agents/{id}/checkpoints/turn/1"),
        )
        .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sessions_with_neighbouring_ids_stay_apart(ids in session_ids(), victim in any::<prop::sample::Index>()) {
        let store = Store::open_in_memory().unwrap();
        let sessions: Vec<SessionUri> = ids.iter().cloned().map(SessionUri::canonical).collect();
        for (session, id) in sessions.iter().zip(&ids) {
            populate(&store, session, id);
        }
        for (session, id) in sessions.iter().zip(&ids) {
            prop_assert_eq!(owned(&store, session), expected(session, id), "{}", session);
        }
        prop_assert_eq!(store.sessions().unwrap().len(), sessions.len());

        let victim = victim.index(sessions.len());
        prop_assert!(store.delete_session(&sessions[victim]).unwrap());
        for (index, (session, id)) in sessions.iter().zip(&ids).enumerate() {
            let now = owned(&store, session);
            if index == victim {
                prop_assert_eq!(now, Owned {
                    session: None,
                    chats: Vec::new(),
                    turns: Vec::new(),
                    session_meta: Vec::new(),
                    chat_meta: Vec::new(),
                    checkpoints: Vec::new(),
                });
            } else {
                prop_assert_eq!(now, expected(session, id), "{} after deleting {}", session, sessions[victim]);
            }
        }
    }
}

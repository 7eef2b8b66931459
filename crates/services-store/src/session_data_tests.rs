use agenthost_protocol::SessionUri;
use agenthost_store::{ChatRecord, SessionRecord};
use serde_json::json;

use super::*;

fn session_uri(id: &str) -> SessionUri {
    SessionUri::parse(&format!("ahp-session:/{id}")).unwrap()
}

fn chat_uri(id: &str) -> ChatUri {
    ChatUri::parse(&format!("ahp-chat:/{id}")).unwrap()
}

/// A store holding sessions s1, s2 with chats c1 (s1), c2 (s1), c3 (s2).
fn store() -> StoreSessionData {
    let store = Store::open_in_memory().unwrap();
    for s in ["s1", "s2"] {
        store
            .put_session(&SessionRecord {
                uri: session_uri(s),
                provider: "scripted".into(),
                title: "New session".into(),
                title_source: TitleSource::Default,
                created_at: "2026-01-01T00:00:00.000Z".into(),
                modified_at: "2026-01-01T00:00:00.000Z".into(),
                working_directories: vec![],
                read: true,
                archived: false,
                default_chat: None,
            })
            .unwrap();
    }
    for (position, (s, c)) in [("s1", "c1"), ("s1", "c2"), ("s2", "c3")]
        .into_iter()
        .enumerate()
    {
        store
            .put_chat(&ChatRecord {
                uri: chat_uri(c),
                session: session_uri(s),
                position: position as i64,
                title: "New chat".into(),
                title_source: TitleSource::Default,
                modified_at: "2026-01-01T00:00:00.000Z".into(),
                origin: None,
                interactivity: None,
                read: true,
                archived: false,
                draft: None,
                config: None,
                resume_handle: None,
                subagent: false,
            })
            .unwrap();
    }
    StoreSessionData::new(store)
}

fn usage(input: i64) -> UsageInfo {
    serde_json::from_value(json!({ "inputTokens": input, "model": "m" })).unwrap()
}

#[tokio::test]
async fn metadata_round_trips_and_is_isolated_per_owner() {
    let data = store();
    let s1 = DataOwner::Session(session_uri("s1"));
    let s2 = DataOwner::Session(session_uri("s2"));
    let c1 = DataOwner::Chat(chat_uri("c1"));
    let c2 = DataOwner::Chat(chat_uri("c2"));
    data.set_meta(s1.clone(), "k", Some("session one".into()))
        .await
        .unwrap();
    data.set_meta(c1.clone(), "k", Some("chat one".into()))
        .await
        .unwrap();
    data.set_meta(c1.clone(), "b", Some("2".into()))
        .await
        .unwrap();

    assert_eq!(
        data.meta(s1.clone(), "k").await.unwrap().as_deref(),
        Some("session one")
    );
    assert_eq!(
        data.meta(c1.clone(), "k").await.unwrap().as_deref(),
        Some("chat one")
    );
    assert_eq!(data.meta(s2.clone(), "k").await.unwrap(), None);
    assert_eq!(data.meta(c2.clone(), "k").await.unwrap(), None);
    assert_eq!(
        data.meta_entries(c1.clone()).await.unwrap(),
        [
            ("b".to_owned(), "2".to_owned()),
            ("k".to_owned(), "chat one".to_owned())
        ]
    );

    data.set_meta(c1.clone(), "k", None).await.unwrap();
    assert_eq!(data.meta(c1.clone(), "k").await.unwrap(), None);
    assert_eq!(
        data.meta(s1.clone(), "k").await.unwrap().as_deref(),
        Some("session one")
    );
    // Deleting what is absent is fine; writing for an unknown owner is an error.
    data.set_meta(c2, "absent", None).await.unwrap();
    let unknown = DataOwner::Chat(chat_uri("missing"));
    assert!(matches!(
        data.set_meta(unknown, "k", Some("v".into())).await,
        Err(DataError::Store(_))
    ));
}

#[tokio::test]
async fn turn_usage_round_trips_per_chat_and_skips_malformed_rows() {
    let data = store();
    data.set_turn_usage(chat_uri("c1"), "t1", Some(usage(10)))
        .await
        .unwrap();
    data.set_turn_usage(chat_uri("c1"), "t2", Some(usage(20)))
        .await
        .unwrap();
    data.set_turn_usage(chat_uri("c2"), "t1", Some(usage(99)))
        .await
        .unwrap();
    let c1 = DataOwner::Chat(chat_uri("c1"));
    data.set_meta(c1.clone(), "turnUsage/bad", Some("{not json".into()))
        .await
        .unwrap();
    data.set_meta(c1.clone(), "other", Some("x".into()))
        .await
        .unwrap();

    assert_eq!(
        data.turn_usages(chat_uri("c1")).await.unwrap(),
        [("t1".to_owned(), usage(10)), ("t2".to_owned(), usage(20))]
    );
    assert_eq!(
        data.turn_usages(chat_uri("c2")).await.unwrap(),
        [("t1".to_owned(), usage(99))]
    );
    data.set_turn_usage(chat_uri("c1"), "t1", None)
        .await
        .unwrap();
    assert_eq!(data.turn_usages(chat_uri("c1")).await.unwrap().len(), 1);
    assert!(data.turn_usages(chat_uri("c3")).await.unwrap().is_empty());
}

#[tokio::test]
async fn delegations_drafts_and_config_round_trip_per_chat() {
    let data = store();
    data.set_delegation(chat_uri("c1"), "t2", Some(json!({ "agent": "a" })))
        .await
        .unwrap();
    data.set_delegation(chat_uri("c1"), "t1", Some(json!(1)))
        .await
        .unwrap();
    assert_eq!(
        data.delegations(chat_uri("c1")).await.unwrap(),
        [
            ("t2".to_owned(), json!({ "agent": "a" })),
            ("t1".to_owned(), json!(1))
        ]
    );
    assert!(data.delegations(chat_uri("c2")).await.unwrap().is_empty());
    data.set_delegation(chat_uri("c1"), "t2", None)
        .await
        .unwrap();
    assert_eq!(data.delegations(chat_uri("c1")).await.unwrap().len(), 1);

    let draft: Message =
        serde_json::from_value(json!({ "text": "half-typed", "origin": { "kind": "user" } }))
            .unwrap();
    data.set_draft(chat_uri("c1"), Some(draft.clone()))
        .await
        .unwrap();
    assert_eq!(data.draft(chat_uri("c1")).await.unwrap(), Some(draft));
    assert_eq!(data.draft(chat_uri("c2")).await.unwrap(), None);
    data.set_draft(chat_uri("c1"), None).await.unwrap();
    assert_eq!(data.draft(chat_uri("c1")).await.unwrap(), None);

    let config: JsonObject =
        serde_json::from_value(json!({ "workingDirectories": ["file:///w"] })).unwrap();
    data.set_chat_config(chat_uri("c2"), Some(config.clone()))
        .await
        .unwrap();
    assert_eq!(
        data.chat_config(chat_uri("c2")).await.unwrap(),
        Some(config)
    );
    assert_eq!(data.chat_config(chat_uri("c1")).await.unwrap(), None);
    assert_eq!(data.chat_config(chat_uri("missing")).await.unwrap(), None);
    assert!(data.set_draft(chat_uri("missing"), None).await.is_err());
}

#[tokio::test]
async fn titles_and_flags_round_trip_for_sessions_and_chats() {
    let data = store();
    let s1 = DataOwner::Session(session_uri("s1"));
    let c1 = DataOwner::Chat(chat_uri("c1"));
    data.set_title(s1.clone(), "Session title", TitleSource::User)
        .await
        .unwrap();
    data.set_title(c1.clone(), "Chat title", TitleSource::Generated)
        .await
        .unwrap();
    assert_eq!(
        data.title(s1.clone()).await.unwrap(),
        Some(StoredTitle {
            title: "Session title".into(),
            source: TitleSource::User
        })
    );
    assert_eq!(
        data.title(c1.clone()).await.unwrap(),
        Some(StoredTitle {
            title: "Chat title".into(),
            source: TitleSource::Generated
        })
    );
    assert_eq!(
        data.title(DataOwner::Chat(chat_uri("c2")))
            .await
            .unwrap()
            .map(|t| t.source),
        Some(TitleSource::Default)
    );
    assert_eq!(
        data.title(DataOwner::Session(session_uri("nope")))
            .await
            .unwrap(),
        None
    );

    let flags = Flags {
        read: false,
        archived: true,
    };
    data.set_flags(c1.clone(), flags).await.unwrap();
    assert_eq!(data.flags(c1).await.unwrap(), Some(flags));
    assert_eq!(
        data.flags(s1.clone()).await.unwrap(),
        Some(Flags {
            read: true,
            archived: false
        })
    );
    data.set_flags(s1.clone(), flags).await.unwrap();
    assert_eq!(data.flags(s1).await.unwrap(), Some(flags));
    assert!(
        data.set_flags(DataOwner::Session(session_uri("nope")), flags)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn data_survives_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agenthost.db");
    {
        let store = Store::open(&path).unwrap();
        store
            .put_session(&SessionRecord {
                uri: session_uri("s1"),
                provider: "scripted".into(),
                title: "t".into(),
                title_source: TitleSource::Default,
                created_at: "2026-01-01T00:00:00.000Z".into(),
                modified_at: "2026-01-01T00:00:00.000Z".into(),
                working_directories: vec![],
                read: true,
                archived: false,
                default_chat: None,
            })
            .unwrap();
        let data = StoreSessionData::new(store);
        data.set_meta(
            DataOwner::Session(session_uri("s1")),
            "flag",
            Some("on".into()),
        )
        .await
        .unwrap();
    }
    let data = StoreSessionData::new(Store::open(&path).unwrap());
    assert_eq!(
        data.meta(DataOwner::Session(session_uri("s1")), "flag")
            .await
            .unwrap()
            .as_deref(),
        Some("on")
    );
}

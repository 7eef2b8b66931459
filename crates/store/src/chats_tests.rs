use serde_json::json;

use crate::fixtures::*;
use crate::{ChatRecord, MetaOwner, SessionRecord, Store, StoreError, TitleSource};

#[test]
fn a_chat_round_trips_with_every_field_set_or_empty() {
    let store = Store::open_in_memory().unwrap();
    store.put_session(&session("s1")).unwrap();
    let full = full_chat("s1", "c1", 3);
    let bare = chat("s1", "c2", 4);
    store.put_chat(&full).unwrap();
    store.put_chat(&bare).unwrap();
    assert_eq!(store.chat(&chat_uri("c1")).unwrap(), Some(full));
    assert_eq!(store.chat(&chat_uri("c2")).unwrap(), Some(bare));
    assert_eq!(store.chat(&chat_uri("c3")).unwrap(), None);
}

#[test]
fn the_stored_json_is_the_wire_json() {
    let store = Store::open_in_memory().unwrap();
    store.put_session(&session("s1")).unwrap();
    store.put_chat(&full_chat("s1", "c1", 0)).unwrap();
    store.with_connection(|conn| {
        let (origin, interactivity, draft): (String, String, String) = conn
            .query_row(
                "SELECT origin, interactivity, draft FROM chats WHERE uri = 'ahp-chat:/c1'",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap();
        let origin: serde_json::Value = serde_json::from_str(&origin).unwrap();
        assert_eq!(
            origin,
            json!({ "kind": "fork", "chat": "ahp-chat:/origin", "turnId": "t0" })
        );
        assert_eq!(interactivity, "read-only");
        let draft: serde_json::Value = serde_json::from_str(&draft).unwrap();
        assert_eq!(
            draft,
            json!({ "text": "half-written", "origin": { "kind": "user" } })
        );
    });
}

#[test]
fn chats_are_listed_in_catalog_order_per_session() {
    let store = Store::open_in_memory().unwrap();
    store.put_session(&session("s1")).unwrap();
    store.put_session(&session("s2")).unwrap();
    for (name, position) in [("c", 2), ("a", 0), ("b2", 1), ("b1", 1)] {
        store.put_chat(&chat("s1", name, position)).unwrap();
    }
    store.put_chat(&chat("s2", "other", 0)).unwrap();
    let order: Vec<String> = store
        .chats(&session_uri("s1"))
        .unwrap()
        .into_iter()
        .map(|record| record.uri.into_string())
        .collect();
    assert_eq!(
        order,
        ["ahp-chat:/a", "ahp-chat:/b1", "ahp-chat:/b2", "ahp-chat:/c"]
    );
    assert!(store.chats(&session_uri("nope")).unwrap().is_empty());
}

#[test]
fn a_chat_needs_its_session() {
    let store = Store::open_in_memory().unwrap();
    let error = store.put_chat(&chat("ghost", "c1", 0)).unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::NotFound {
                kind: "session",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("ahp-session:/ghost"), "{error}");
    assert_eq!(store.chat(&chat_uri("c1")).unwrap(), None);
}

#[test]
fn put_chat_updates_in_place_and_can_move_a_chat_with_its_turns() {
    let (_dir, store) = store_with_chat();
    store.put_session(&session("s2")).unwrap();
    store.append_turn(&chat_uri("c1"), &turn("t1"), T1).unwrap();
    store
        .set_draft(&chat_uri("c1"), Some(&message("draft")))
        .unwrap();

    let moved = ChatRecord {
        session: session_uri("s2"),
        title: "Moved".to_owned(),
        ..chat("s1", "c1", 5)
    };
    store.put_chat(&moved).unwrap();
    assert!(store.chats(&session_uri("s1")).unwrap().is_empty());
    assert_eq!(store.chats(&session_uri("s2")).unwrap(), [moved]);
    assert_eq!(ids(&store.turns(&chat_uri("c1")).unwrap()), ["t1"]);
}

#[test]
fn chat_setters_update_and_clear_each_field() {
    let (_dir, store) = store_with_chat();
    let c1 = chat_uri("c1");
    let full = full_chat("s1", "c1", 0);

    store
        .set_chat_title(&c1, "Named", TitleSource::Generated)
        .unwrap();
    store.set_draft(&c1, full.draft.as_ref()).unwrap();
    store.set_chat_config(&c1, full.config.as_ref()).unwrap();
    store.set_chat_flags(&c1, true, true).unwrap();
    store
        .set_resume_handle(&c1, full.resume_handle.as_ref())
        .unwrap();
    let record = store.chat(&c1).unwrap().unwrap();
    assert_eq!(record.title, "Named");
    assert_eq!(record.title_source, TitleSource::Generated);
    assert_eq!(record.draft, full.draft);
    assert_eq!(record.config, full.config);
    assert!(record.read && record.archived);
    assert_eq!(record.resume_handle, full.resume_handle);

    store.set_draft(&c1, None).unwrap();
    store.set_chat_config(&c1, None).unwrap();
    store.set_chat_flags(&c1, false, false).unwrap();
    store.set_resume_handle(&c1, None).unwrap();
    let record = store.chat(&c1).unwrap().unwrap();
    assert_eq!(
        record,
        ChatRecord {
            title: "Named".to_owned(),
            title_source: TitleSource::Generated,
            ..chat("s1", "c1", 0)
        }
    );

    let missing = chat_uri("missing");
    for error in [
        store
            .set_chat_title(&missing, "x", TitleSource::User)
            .unwrap_err(),
        store.set_draft(&missing, None).unwrap_err(),
        store.set_chat_config(&missing, None).unwrap_err(),
        store.set_chat_flags(&missing, true, true).unwrap_err(),
        store.set_resume_handle(&missing, None).unwrap_err(),
    ] {
        assert!(
            matches!(error, StoreError::NotFound { kind: "chat", .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("ahp-chat:/missing"), "{error}");
    }
}

#[test]
fn deleting_a_chat_deletes_what_it_owns_and_clears_the_default_chat() {
    let (_dir, store) = store_with_chat();
    store.put_chat(&chat("s1", "c2", 1)).unwrap();
    store
        .put_session(&SessionRecord {
            default_chat: Some(chat_uri("c1")),
            ..session("s1")
        })
        .unwrap();
    for name in ["c1", "c2"] {
        let uri = chat_uri(name);
        store.append_turn(&uri, &turn("t1"), T1).unwrap();
        store.record_failed_turn(&uri, &failed("f1", None)).unwrap();
        store.set_delegation(&uri, "t1", Some(&json!(1))).unwrap();
        store
            .set_meta(MetaOwner::Chat(&uri), "k", Some("v"))
            .unwrap();
    }

    assert!(store.delete_chat(&chat_uri("c1")).unwrap());
    assert!(!store.delete_chat(&chat_uri("c1")).unwrap());

    let c1 = chat_uri("c1");
    assert_eq!(store.chat(&c1).unwrap(), None);
    assert_eq!(store.turn_count(&c1).unwrap(), 0);
    assert!(store.failed_turns(&c1).unwrap().is_empty());
    assert!(store.delegations(&c1).unwrap().is_empty());
    assert_eq!(store.meta(MetaOwner::Chat(&c1), "k").unwrap(), None);
    assert_eq!(
        store
            .session(&session_uri("s1"))
            .unwrap()
            .unwrap()
            .default_chat,
        None
    );

    let c2 = chat_uri("c2");
    assert_eq!(store.turn_count(&c2).unwrap(), 1);
    assert_eq!(store.failed_turns(&c2).unwrap().len(), 1);
    assert_eq!(store.delegations(&c2).unwrap().len(), 1);
    assert_eq!(
        store.meta(MetaOwner::Chat(&c2), "k").unwrap().as_deref(),
        Some("v")
    );
    store.integrity_check().unwrap();
}

use serde_json::json;

use crate::fixtures::*;
use crate::{MetaOwner, SessionRecord, Store, StoreError, TitleSource};

#[test]
fn a_session_round_trips_with_every_field() {
    let store = Store::open_in_memory().unwrap();
    let record = SessionRecord {
        title_source: TitleSource::Generated,
        working_directories: vec!["file:///a".to_owned(), "file:///b%20c".to_owned()],
        read: true,
        archived: true,
        default_chat: Some(chat_uri("c1")),
        ..session("s1")
    };
    store.put_session(&record).unwrap();
    assert_eq!(store.session(&session_uri("s1")).unwrap(), Some(record));
    assert_eq!(store.session(&session_uri("other")).unwrap(), None);

    // VS Code's provider-scheme URIs are sessions too.
    let vscode = SessionRecord {
        uri: "copilotcli:/3f2c".parse().unwrap(),
        working_directories: Vec::new(),
        ..session("x")
    };
    store.put_session(&vscode).unwrap();
    assert_eq!(store.session(&vscode.uri).unwrap(), Some(vscode));
}

#[test]
fn put_session_updates_in_place_without_touching_what_the_session_owns() {
    let (_dir, store) = store_with_chat();
    store.append_turn(&chat_uri("c1"), &turn("t1"), T1).unwrap();
    store
        .set_meta(MetaOwner::Session(&session_uri("s1")), "k", Some("v"))
        .unwrap();

    let renamed = SessionRecord {
        title: "Renamed".to_owned(),
        provider: "other".to_owned(),
        ..session("s1")
    };
    store.put_session(&renamed).unwrap();
    assert_eq!(store.session(&session_uri("s1")).unwrap(), Some(renamed));
    assert_eq!(store.chats(&session_uri("s1")).unwrap().len(), 1);
    assert_eq!(store.turn_count(&chat_uri("c1")).unwrap(), 1);
    assert_eq!(
        store
            .meta(MetaOwner::Session(&session_uri("s1")), "k")
            .unwrap()
            .as_deref(),
        Some("v")
    );
}

#[test]
fn the_catalog_lists_the_most_recently_modified_first() {
    let store = Store::open_in_memory().unwrap();
    for (name, modified_at) in [("a", T1), ("b", T2), ("c", T0), ("d", T1)] {
        store
            .put_session(&SessionRecord {
                modified_at: modified_at.to_owned(),
                ..session(name)
            })
            .unwrap();
    }
    let order: Vec<String> = store
        .sessions()
        .unwrap()
        .into_iter()
        .map(|record| record.uri.into_string())
        .collect();
    assert_eq!(
        order,
        [
            "ahp-session:/b",
            "ahp-session:/a",
            "ahp-session:/d",
            "ahp-session:/c"
        ]
    );

    store
        .touch_session(&session_uri("c"), "2026-02-01T00:00:00.000Z")
        .unwrap();
    assert_eq!(store.sessions().unwrap()[0].uri, session_uri("c"));
}

#[test]
fn title_flags_and_touch_update_one_session_and_need_it_to_exist() {
    let store = Store::open_in_memory().unwrap();
    store.put_session(&session("s1")).unwrap();
    store.put_session(&session("s2")).unwrap();
    let s1 = session_uri("s1");

    store
        .set_session_title(&s1, "Mine", TitleSource::User)
        .unwrap();
    store.set_session_flags(&s1, true, false).unwrap();
    store.touch_session(&s1, T2).unwrap();
    let record = store.session(&s1).unwrap().unwrap();
    assert_eq!(
        (
            record.title.as_str(),
            record.title_source,
            record.read,
            record.archived
        ),
        ("Mine", TitleSource::User, true, false)
    );
    assert_eq!(record.modified_at, T2);
    store.set_session_flags(&s1, false, true).unwrap();
    let record = store.session(&s1).unwrap().unwrap();
    assert_eq!((record.read, record.archived), (false, true));
    assert_eq!(
        store.session(&session_uri("s2")).unwrap(),
        Some(session("s2"))
    );

    let missing = session_uri("missing");
    for error in [
        store
            .set_session_title(&missing, "x", TitleSource::User)
            .unwrap_err(),
        store.set_session_flags(&missing, true, true).unwrap_err(),
        store.touch_session(&missing, T1).unwrap_err(),
    ] {
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
        assert!(
            error.to_string().contains("ahp-session:/missing"),
            "{error}"
        );
    }
    assert_eq!(store.sessions().unwrap().len(), 2);
}

#[test]
fn deleting_a_session_deletes_everything_it_owns_and_nothing_else() {
    let (_dir, store) = store_with_chat();
    store.put_chat(&full_chat("s1", "c2", 1)).unwrap();
    store.put_session(&session("keep")).unwrap();
    store.put_chat(&chat("keep", "kc", 0)).unwrap();
    for chat in ["c1", "c2", "kc"] {
        let uri = chat_uri(chat);
        store.append_turn(&uri, &turn("t1"), T1).unwrap();
        store
            .record_failed_turn(&uri, &failed("f1", Some("t1")))
            .unwrap();
        store
            .set_delegation(&uri, "t1", Some(&json!({ "to": chat })))
            .unwrap();
        store
            .set_meta(MetaOwner::Chat(&uri), "k", Some(chat))
            .unwrap();
    }
    store
        .set_meta(MetaOwner::Session(&session_uri("s1")), "k", Some("s"))
        .unwrap();
    store
        .set_meta(MetaOwner::Session(&session_uri("keep")), "k", Some("keep"))
        .unwrap();
    for session in ["s1", "keep"] {
        store
            .set_checkpoint_ref(&session_uri(session), "t1", "refs/cp/t1")
            .unwrap();
    }

    assert!(store.delete_session(&session_uri("s1")).unwrap());
    assert!(!store.delete_session(&session_uri("s1")).unwrap());

    assert_eq!(store.session(&session_uri("s1")).unwrap(), None);
    assert!(store.chats(&session_uri("s1")).unwrap().is_empty());
    for chat in ["c1", "c2"] {
        let uri = chat_uri(chat);
        assert_eq!(store.chat(&uri).unwrap(), None);
        assert_eq!(store.turn_count(&uri).unwrap(), 0);
        assert!(store.failed_turns(&uri).unwrap().is_empty());
        assert!(store.delegations(&uri).unwrap().is_empty());
        assert_eq!(store.meta(MetaOwner::Chat(&uri), "k").unwrap(), None);
    }
    assert_eq!(
        store
            .meta(MetaOwner::Session(&session_uri("s1")), "k")
            .unwrap(),
        None
    );
    // No row of any table still refers to the deleted session.
    store.with_connection(|conn| {
        for table in [
            "chats",
            "turns",
            "failed_turns",
            "delegations",
            "metadata",
            "checkpoint_turns",
        ] {
            let count: i64 = conn
                .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| {
                    row.get(0)
                })
                .unwrap();
            let expected = if table == "metadata" { 2 } else { 1 };
            assert_eq!(count, expected, "{table}");
        }
    });

    // The other session is intact.
    let kept = chat_uri("kc");
    assert_eq!(store.turn_count(&kept).unwrap(), 1);
    assert_eq!(store.failed_turns(&kept).unwrap().len(), 1);
    assert_eq!(store.delegations(&kept).unwrap().len(), 1);
    assert_eq!(
        store.meta(MetaOwner::Chat(&kept), "k").unwrap().as_deref(),
        Some("kc")
    );
    store.integrity_check().unwrap();
}

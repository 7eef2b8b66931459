use serde_json::json;

use crate::fixtures::*;
use crate::{DelegationRecord, MetaOwner, StoreError};

#[test]
fn metadata_is_set_read_replaced_and_deleted_per_owner() {
    let (_dir, store) = store_with_chat();
    let s1 = session_uri("s1");
    let c1 = chat_uri("c1");

    store
        .set_meta(MetaOwner::Session(&s1), "b", Some("1"))
        .unwrap();
    store
        .set_meta(MetaOwner::Session(&s1), "a", Some("2"))
        .unwrap();
    store
        .set_meta(MetaOwner::Chat(&c1), "a", Some("chat"))
        .unwrap();
    assert_eq!(
        store.meta(MetaOwner::Session(&s1), "a").unwrap().as_deref(),
        Some("2")
    );
    assert_eq!(
        store.meta(MetaOwner::Chat(&c1), "a").unwrap().as_deref(),
        Some("chat")
    );
    assert_eq!(store.meta(MetaOwner::Chat(&c1), "b").unwrap(), None);
    assert_eq!(
        store.meta_entries(MetaOwner::Session(&s1)).unwrap(),
        [
            ("a".to_owned(), "2".to_owned()),
            ("b".to_owned(), "1".to_owned())
        ]
    );

    store
        .set_meta(MetaOwner::Session(&s1), "a", Some("3"))
        .unwrap();
    assert_eq!(
        store.meta(MetaOwner::Session(&s1), "a").unwrap().as_deref(),
        Some("3")
    );
    store.set_meta(MetaOwner::Session(&s1), "a", None).unwrap();
    store
        .set_meta(MetaOwner::Session(&s1), "never-set", None)
        .unwrap();
    assert_eq!(store.meta(MetaOwner::Session(&s1), "a").unwrap(), None);
    assert_eq!(
        store.meta_entries(MetaOwner::Session(&s1)).unwrap().len(),
        1
    );
    assert_eq!(store.meta_entries(MetaOwner::Chat(&c1)).unwrap().len(), 1);
}

#[test]
fn metadata_needs_its_owner() {
    let store = crate::Store::open_in_memory().unwrap();
    let error = store
        .set_meta(MetaOwner::Session(&session_uri("ghost")), "k", Some("v"))
        .unwrap_err();
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
    let error = store
        .set_meta(MetaOwner::Chat(&chat_uri("ghost")), "k", Some("v"))
        .unwrap_err();
    assert!(
        matches!(error, StoreError::NotFound { kind: "chat", .. }),
        "{error:?}"
    );
    // Deleting needs nothing.
    store
        .set_meta(MetaOwner::Chat(&chat_uri("ghost")), "k", None)
        .unwrap();
}

#[test]
fn delegations_round_trip_in_order_and_are_replaced_and_deleted() {
    let (_dir, store) = store_with_chat();
    let c1 = chat_uri("c1");
    store
        .set_delegation(
            &c1,
            "t2",
            Some(&json!({ "chat": "ahp-chat:/sub", "depth": 1 })),
        )
        .unwrap();
    store
        .set_delegation(&c1, "t1", Some(&json!("plain")))
        .unwrap();
    store
        .set_delegation(&c1, "t2", Some(&json!([1, 2])))
        .unwrap();
    assert_eq!(
        store.delegations(&c1).unwrap(),
        [
            DelegationRecord {
                turn_id: "t2".to_owned(),
                value: json!([1, 2])
            },
            DelegationRecord {
                turn_id: "t1".to_owned(),
                value: json!("plain")
            },
        ]
    );
    store.set_delegation(&c1, "t2", None).unwrap();
    store.set_delegation(&c1, "never", None).unwrap();
    assert_eq!(store.delegations(&c1).unwrap().len(), 1);
    assert!(store.delegations(&chat_uri("other")).unwrap().is_empty());

    let error = store
        .set_delegation(&chat_uri("ghost"), "t1", Some(&json!(1)))
        .unwrap_err();
    assert!(
        matches!(error, StoreError::NotFound { kind: "chat", .. }),
        "{error:?}"
    );
}

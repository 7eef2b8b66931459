use std::thread;

use crate::fixtures::*;
use crate::{Store, StoreError};

#[test]
fn the_high_water_mark_starts_at_zero_and_never_goes_down() {
    let (_dir, path) = temp_db();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.server_seq_high_water().unwrap(), 0);
    assert_eq!(store.raise_server_seq_high_water(10).unwrap(), 10);
    assert_eq!(store.raise_server_seq_high_water(3).unwrap(), 10);
    assert_eq!(store.raise_server_seq_high_water(10).unwrap(), 10);
    assert_eq!(store.server_seq_high_water().unwrap(), 10);
    // The whole u64 range, beyond SQLite's signed integers.
    assert_eq!(
        store.raise_server_seq_high_water(u64::MAX).unwrap(),
        u64::MAX
    );
    assert_eq!(store.raise_server_seq_high_water(1).unwrap(), u64::MAX);
    drop(store);
    assert_eq!(
        Store::open(&path).unwrap().server_seq_high_water().unwrap(),
        u64::MAX
    );
}

#[test]
fn concurrent_raises_keep_the_maximum() {
    let store = Store::open_in_memory().unwrap();
    let handles: Vec<_> = (0..4_u64)
        .map(|thread| {
            let store = store.clone();
            thread::spawn(move || {
                for seq in (0..200).map(|i| i * 4 + thread) {
                    store.raise_server_seq_high_water(seq).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(store.server_seq_high_water().unwrap(), 199 * 4 + 3);
}

#[test]
fn integrity_check_passes_on_a_used_database_and_reports_damage() {
    let (_dir, store) = store_with_chat();
    for i in 0..50 {
        store
            .append_turn(&chat_uri("c1"), &full_turn(&format!("t{i}")), T1)
            .unwrap();
    }
    store.delete_chat(&chat_uri("c1")).unwrap();
    store.integrity_check().unwrap();

    // A dangling reference (written with foreign keys off) is reported.
    store.with_connection(|conn| {
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO chats (uri, session, position, title, title_source, modified_at)
                 VALUES ('ahp-chat:/orphan', 'ahp-session:/gone', 0, 'x', 'default', 'x');
             PRAGMA foreign_keys = ON;",
        )
        .unwrap();
    });
    let error = store.integrity_check().unwrap_err();
    assert!(matches!(error, StoreError::Integrity { .. }), "{error:?}");
    assert!(error.to_string().contains("chats row"), "{error}");
}

#[test]
fn clones_share_one_database() {
    let store = Store::open_in_memory().unwrap();
    let clone = store.clone();
    clone.put_session(&session("s1")).unwrap();
    assert_eq!(store.sessions().unwrap().len(), 1);
    assert_eq!(store.path().to_str(), Some(":memory:"));
    assert!(format!("{store:?}").contains(":memory:"));
}

#[test]
fn a_full_disk_fails_the_write_and_leaves_the_database_unchanged() {
    let (_dir, store) = store_with_chat();
    store.append_turn(&chat_uri("c1"), &turn("t1"), T1).unwrap();
    // SQLite's size limit stands in for a full disk: the same SQLITE_FULL.
    store.with_connection(|conn| {
        let pages: i64 = conn
            .pragma_query_value(None, "page_count", |row| row.get(0))
            .unwrap();
        conn.pragma_update(None, "max_page_count", pages).unwrap();
    });
    let big = big_turn("t2", 64 * 1024);
    let error = store.append_turn(&chat_uri("c1"), &big, T2).unwrap_err();
    assert!(matches!(error, StoreError::DiskFull { .. }), "{error:?}");
    assert!(error.to_string().contains("agenthost.db"), "{error}");
    assert!(error.to_string().contains("unchanged"), "{error}");

    assert_eq!(ids(&store.turns(&chat_uri("c1")).unwrap()), ["t1"]);
    let session = store.session(&session_uri("s1")).unwrap().unwrap();
    assert_eq!(
        session.modified_at, T1,
        "modified_at rolled back with the turn"
    );
    store.integrity_check().unwrap();

    // Once there is room again, the same append succeeds.
    store.with_connection(|conn| {
        conn.pragma_update(None, "max_page_count", 1_000_000)
            .unwrap();
    });
    store.append_turn(&chat_uri("c1"), &big, T2).unwrap();
    assert_eq!(store.turn_count(&chat_uri("c1")).unwrap(), 2);
}

#[test]
fn a_panic_while_the_lock_is_held_leaves_the_store_usable() {
    let (_dir, store) = store_with_chat();
    let clone = store.clone();
    let panicked = thread::spawn(move || {
        let _ = clone.write::<()>(|tx| {
            tx.execute("DELETE FROM sessions", []).unwrap();
            panic!("boom inside a transaction")
        });
    })
    .join();
    assert!(panicked.is_err());
    // The transaction was rolled back while unwinding; the poisoned lock is taken over.
    assert_eq!(store.sessions().unwrap().len(), 1);
    store.put_session(&session("s2")).unwrap();
    assert_eq!(store.sessions().unwrap().len(), 2);
}

#[test]
fn blocking_runs_on_the_blocking_pool_and_reports_panics() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let store = Store::open_in_memory().unwrap();
    runtime.block_on(async {
        store
            .blocking(|store| store.put_session(&session("s1")))
            .await
            .unwrap();
        let sessions = store.blocking(|store| store.sessions()).await.unwrap();
        assert_eq!(sessions.len(), 1);

        let error = store
            .blocking(|_| -> crate::Result<()> { panic!("closure failed") })
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::Task { .. }), "{error:?}");
    });
    assert_eq!(store.sessions().unwrap().len(), 1);
}

#[test]
fn errors_are_actionable() {
    let store = Store::open_in_memory().unwrap();
    let error = store
        .set_session_title(&session_uri("nope"), "x", crate::TitleSource::User)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "no session `ahp-session:/nope` in the session database; create it before writing to it"
    );
}

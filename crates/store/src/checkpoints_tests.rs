use rusqlite::Connection;

use crate::fixtures::*;
use crate::schema::{APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, configure, migrate};
use crate::{MetaOwner, Store};

/// `(turn, ref)` rows as the store returns them, from literals.
fn rows(expected: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    expected
        .iter()
        .map(|(turn, reference)| ((*turn).to_owned(), reference.map(str::to_owned)))
        .collect()
}

/// Every schema object as `type name sql`, in a stable order.
fn schema_objects(conn: &Connection) -> Vec<String> {
    let mut statement = conn
        .prepare(
            "SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master \
             ORDER BY type, name",
        )
        .unwrap();
    statement
        .query_map([], |row| row.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn rows_keep_insertion_order_per_session_without_duplicates() {
    let store = Store::open_in_memory().unwrap();
    let s1 = session_uri("s1");
    let s2 = session_uri("s2");

    store.checkpoint_ensure_turn(&s1, "t1").unwrap();
    store.checkpoint_ensure_turn(&s2, "x1").unwrap();
    store.checkpoint_ensure_turn(&s1, "t2").unwrap();
    store.set_checkpoint_ref(&s1, "t3", "refs/cp/t3").unwrap();
    // Ensuring an existing turn neither duplicates nor moves it.
    store.checkpoint_ensure_turn(&s1, "t1").unwrap();

    assert_eq!(
        store.checkpoint_rows(&s1).unwrap(),
        rows(&[("t1", None), ("t2", None), ("t3", Some("refs/cp/t3"))])
    );
    assert_eq!(store.checkpoint_rows(&s2).unwrap(), rows(&[("x1", None)]));
    assert!(
        store
            .checkpoint_rows(&session_uri("none"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn set_checkpoint_ref_updates_in_place_and_ensure_keeps_the_ref() {
    let store = Store::open_in_memory().unwrap();
    let s1 = session_uri("s1");

    store.checkpoint_ensure_turn(&s1, "t1").unwrap();
    store.checkpoint_ensure_turn(&s1, "t2").unwrap();
    store.set_checkpoint_ref(&s1, "t1", "refs/cp/a").unwrap();
    store.set_checkpoint_ref(&s1, "t1", "refs/cp/b").unwrap();
    store.checkpoint_ensure_turn(&s1, "t1").unwrap();

    assert_eq!(
        store.checkpoint_rows(&s1).unwrap(),
        rows(&[("t1", Some("refs/cp/b")), ("t2", None)])
    );
}

#[test]
fn delete_checkpoint_rows_removes_only_that_session() {
    let store = Store::open_in_memory().unwrap();
    let s1 = session_uri("s1");
    let s2 = session_uri("s2");
    store.set_checkpoint_ref(&s1, "t1", "refs/cp/1").unwrap();
    store.set_checkpoint_ref(&s2, "t1", "refs/cp/2").unwrap();

    store.delete_checkpoint_rows(&s1).unwrap();
    store.delete_checkpoint_rows(&session_uri("none")).unwrap();

    assert!(store.checkpoint_rows(&s1).unwrap().is_empty());
    assert_eq!(
        store.checkpoint_rows(&s2).unwrap(),
        rows(&[("t1", Some("refs/cp/2"))])
    );
    // A deleted session's turns start over at the end.
    store.checkpoint_ensure_turn(&s1, "t2").unwrap();
    store.checkpoint_ensure_turn(&s1, "t1").unwrap();
    assert_eq!(
        store.checkpoint_rows(&s1).unwrap(),
        rows(&[("t2", None), ("t1", None)])
    );
}

#[test]
fn rows_need_no_session_row_and_go_with_the_deleted_session() {
    let store = Store::open_in_memory().unwrap();
    let s1 = session_uri("s1");
    let keep = session_uri("keep");

    // Written before the session rows exist.
    store.set_checkpoint_ref(&s1, "t1", "refs/cp/1").unwrap();
    store.set_checkpoint_ref(&keep, "t1", "refs/cp/k").unwrap();
    store.put_session(&session("s1")).unwrap();
    store.put_session(&session("keep")).unwrap();
    store.checkpoint_ensure_turn(&s1, "t2").unwrap();
    store.integrity_check().unwrap();

    assert!(store.delete_session(&s1).unwrap());

    assert!(store.checkpoint_rows(&s1).unwrap().is_empty());
    assert_eq!(
        store.checkpoint_rows(&keep).unwrap(),
        rows(&[("t1", Some("refs/cp/k"))])
    );
}

#[test]
fn rows_survive_reopening_the_file() {
    let (_dir, path) = temp_db();
    let s1 = session_uri("s1");
    {
        let store = Store::open(&path).unwrap();
        store.checkpoint_ensure_turn(&s1, "t1").unwrap();
        store.set_checkpoint_ref(&s1, "t2", "refs/cp/2").unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.checkpoint_rows(&s1).unwrap(),
        rows(&[("t1", None), ("t2", Some("refs/cp/2"))])
    );
}

#[test]
fn a_version_2_database_is_migrated_and_its_ledger_works() {
    let (_dir, path) = temp_db();
    {
        // A database exactly as the version 2 build left it, with data in it.
        let mut conn = Connection::open(&path).unwrap();
        configure(&conn, &path, true).unwrap();
        let version_2: Vec<_> = MIGRATIONS
            .iter()
            .copied()
            .filter(|step| step.version <= 2)
            .collect();
        migrate(&mut conn, &path, &version_2).unwrap();
        assert_eq!(
            conn.pragma_query_value(None, "user_version", |row| row.get::<_, i64>(0))
                .unwrap(),
            2
        );
        conn.execute_batch(&format!(
            "INSERT INTO sessions (uri, provider, title, title_source, created_at, modified_at)
                 VALUES ('ahp-session:/old', 'scripted', 'Old', 'user', '{T0}', '{T1}');
             INSERT INTO metadata VALUES ('session', 'ahp-session:/old', 'k', 'v');"
        ))
        .unwrap();
    }

    let store = Store::open(&path).unwrap();
    store.with_connection(|conn| {
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, i64::from(SCHEMA_VERSION));
        let id: i32 = conn
            .pragma_query_value(None, "application_id", |row| row.get(0))
            .unwrap();
        assert_eq!(id, APPLICATION_ID);
        // The migrated file has exactly the schema of a new one.
        let fresh = Store::open_in_memory().unwrap();
        assert_eq!(schema_objects(conn), fresh.with_connection(schema_objects));
    });
    let old = session_uri("old");
    assert_eq!(store.session(&old).unwrap().unwrap().title, "Old");
    assert_eq!(
        store
            .meta(MetaOwner::Session(&old), "k")
            .unwrap()
            .as_deref(),
        Some("v")
    );

    store.checkpoint_ensure_turn(&old, "t1").unwrap();
    store.set_checkpoint_ref(&old, "t1", "refs/cp/1").unwrap();
    assert_eq!(
        store.checkpoint_rows(&old).unwrap(),
        rows(&[("t1", Some("refs/cp/1"))])
    );
    // The migration installed the trigger too.
    assert!(store.delete_session(&old).unwrap());
    assert!(store.checkpoint_rows(&old).unwrap().is_empty());
    store.integrity_check().unwrap();
}

use std::fs;
use std::path::Path;

use rusqlite::Connection;

use super::*;
use crate::fixtures::*;
use crate::{Store, StoreError};

/// Schema version 1 exactly as it shipped, written out by hand: the fixture of the migration
/// tests, and the pin that keeps the shipped step from being edited.
const SHIPPED_V1: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT, WITHOUT ROWID;
CREATE TABLE sessions (
    uri TEXT PRIMARY KEY NOT NULL, provider TEXT NOT NULL, title TEXT NOT NULL,
    title_source TEXT NOT NULL CHECK (title_source IN ('default', 'generated', 'user')),
    created_at TEXT NOT NULL, modified_at TEXT NOT NULL,
    working_directories TEXT NOT NULL DEFAULT '[]',
    read INTEGER NOT NULL DEFAULT 0 CHECK (read IN (0, 1)),
    archived INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    default_chat TEXT
) STRICT;
CREATE INDEX sessions_by_modified_at ON sessions (modified_at DESC, uri);
CREATE TABLE chats (
    uri TEXT PRIMARY KEY NOT NULL,
    session TEXT NOT NULL REFERENCES sessions (uri) ON DELETE CASCADE,
    position INTEGER NOT NULL, title TEXT NOT NULL,
    title_source TEXT NOT NULL CHECK (title_source IN ('default', 'generated', 'user')),
    modified_at TEXT NOT NULL, origin TEXT, interactivity TEXT,
    read INTEGER NOT NULL DEFAULT 0 CHECK (read IN (0, 1)),
    archived INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    draft TEXT, config TEXT, resume_handle TEXT,
    subagent INTEGER NOT NULL DEFAULT 0 CHECK (subagent IN (0, 1))
) STRICT;
CREATE INDEX chats_by_session ON chats (session, position, uri);
CREATE TRIGGER chats_clear_default_chat AFTER DELETE ON chats BEGIN
    UPDATE sessions SET default_chat = NULL WHERE default_chat = OLD.uri;
END;
CREATE TABLE turns (
    chat TEXT NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL CHECK (ordinal >= 0), turn_id TEXT NOT NULL,
    provider_event_id TEXT, turn TEXT NOT NULL, checkpoint_ref TEXT, usage TEXT,
    PRIMARY KEY (chat, ordinal), UNIQUE (chat, turn_id)
) STRICT;
";

/// The schema SQLite records for `sql`, normalised: one line per object, whitespace collapsed.
fn schema_of(sql: &str) -> Vec<String> {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(sql).unwrap();
    dump_schema(&conn)
}

fn dump_schema(conn: &Connection) -> Vec<String> {
    let mut statement = conn
        .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")
        .unwrap();
    statement
        .query_map([], |row| row.get::<_, String>(0))
        .unwrap()
        .map(|sql| {
            sql.unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .map(|sql| sql.replace("( ", "(").replace(" )", ")"))
        .collect()
}

fn pragma_i64(conn: &Connection, name: &str) -> i64 {
    conn.pragma_query_value(None, name, |row| row.get(0))
        .unwrap()
}

fn object_count(conn: &Connection) -> i64 {
    conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
        [],
        |row| row.get(0),
    )
    .unwrap()
}

/// The bytes of `path`, to show a refused file was left untouched.
fn bytes(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap()
}

fn mentions_path(error: &StoreError, path: &Path) -> bool {
    error.to_string().contains(&path.display().to_string())
}

#[test]
fn the_shipped_version_1_step_is_unchanged() {
    assert_eq!(schema_of(V1_CONVERSATION), schema_of(SHIPPED_V1));
    assert_eq!(MIGRATIONS.last().unwrap().version, SCHEMA_VERSION);
    let versions: Vec<u32> = MIGRATIONS.iter().map(|step| step.version).collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
}

#[test]
fn a_missing_file_is_created_with_wal_and_our_id_and_reopens_with_its_data() {
    let (_dir, path) = temp_db();
    {
        let store = Store::open(&path).unwrap();
        store.put_session(&session("s1")).unwrap();
        store.put_chat(&chat("s1", "c1", 0)).unwrap();
        store.append_turn(&chat_uri("c1"), &turn("t1"), T1).unwrap();
        store.raise_server_seq_high_water(41).unwrap();
        store.with_connection(|conn| {
            assert_eq!(
                pragma_i64(conn, "application_id"),
                i64::from(APPLICATION_ID)
            );
            assert_eq!(pragma_i64(conn, "user_version"), i64::from(SCHEMA_VERSION));
            assert_eq!(pragma_i64(conn, "foreign_keys"), 1);
            assert_eq!(pragma_i64(conn, "synchronous"), 1, "NORMAL");
            assert_eq!(pragma_i64(conn, "busy_timeout"), 5_000);
            let mode: String = conn
                .pragma_query_value(None, "journal_mode", |row| row.get(0))
                .unwrap();
            assert_eq!(mode, "wal");
        });
    }
    assert!(path.exists());

    let store = Store::open(&path).unwrap();
    assert_eq!(store.path(), path);
    assert_eq!(
        store
            .session(&session_uri("s1"))
            .unwrap()
            .unwrap()
            .modified_at,
        T1
    );
    assert_eq!(store.chats(&session_uri("s1")).unwrap().len(), 1);
    assert_eq!(ids(&store.turns(&chat_uri("c1")).unwrap()), ["t1"]);
    assert_eq!(store.server_seq_high_water().unwrap(), 41);
    store.integrity_check().unwrap();
}

#[test]
fn an_empty_file_or_an_empty_sqlite_database_is_initialised() {
    let (_dir, path) = temp_db();
    fs::write(&path, b"").unwrap();
    Store::open(&path).unwrap().integrity_check().unwrap();

    // Version 0: an SQLite file without tables, application id or user version.
    let (_dir, path) = temp_db();
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA page_size = 4096; VACUUM;")
        .unwrap();
    assert!(bytes(&path).starts_with(b"SQLite format 3\0"));
    let store = Store::open(&path).unwrap();
    store.put_session(&session("s1")).unwrap();
    store.integrity_check().unwrap();
}

#[test]
fn a_version_1_database_is_migrated_keeping_its_data() {
    let (_dir, path) = temp_db();
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(SHIPPED_V1).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1;
             INSERT INTO meta VALUES ('server_seq_high_water', '77');
             INSERT INTO sessions VALUES ('ahp-session:/old', 'scripted', 'Old', 'user', '{T0}',
                 '{T1}', '[\"file:///work\"]', 1, 0, 'ahp-chat:/old');
             INSERT INTO chats (uri, session, position, title, title_source, modified_at)
                 VALUES ('ahp-chat:/old', 'ahp-session:/old', 0, 'Old chat', 'default', '{T1}');"
        ))
        .unwrap();
        let turn = serde_json::to_string(&turn("t1").turn).unwrap();
        conn.execute(
            "INSERT INTO turns (chat, ordinal, turn_id, turn) VALUES ('ahp-chat:/old', 0, 't1', ?1)",
            [turn],
        )
        .unwrap();
    }

    let store = Store::open(&path).unwrap();
    store.with_connection(|conn| {
        assert_eq!(pragma_i64(conn, "user_version"), i64::from(SCHEMA_VERSION));
        // The migrated file has exactly the schema of a new one.
        let fresh = Store::open_in_memory().unwrap();
        assert_eq!(dump_schema(conn), fresh.with_connection(dump_schema));
    });
    let old = store.session(&session_uri("old")).unwrap().unwrap();
    assert_eq!(old.title, "Old");
    assert_eq!(old.title_source, crate::TitleSource::User);
    assert!(old.read);
    assert_eq!(old.default_chat, Some(chat_uri("old")));
    assert_eq!(ids(&store.turns(&chat_uri("old")).unwrap()), ["t1"]);
    assert_eq!(store.server_seq_high_water().unwrap(), 77);
    // The tables of version 2 work.
    store
        .set_meta(crate::MetaOwner::Chat(&chat_uri("old")), "k", Some("v"))
        .unwrap();
    store
        .record_failed_turn(&chat_uri("old"), &failed("t2", Some("t1")))
        .unwrap();
    store.integrity_check().unwrap();
}

#[test]
fn a_newer_schema_is_refused_naming_both_versions_and_left_untouched() {
    let (_dir, path) = temp_db();
    Store::open(&path).unwrap();
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 9)
        .unwrap();
    let before = bytes(&path);

    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::TooNew {
                found: 9,
                supported: SCHEMA_VERSION,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("schema version 9"), "{message}");
    assert!(
        message.contains(&format!("version {SCHEMA_VERSION}")),
        "{message}"
    );
    assert!(mentions_path(&error, &path), "{message}");
    assert_eq!(bytes(&path), before);
}

#[test]
fn a_text_file_is_refused_naming_it_and_left_byte_for_byte_unchanged() {
    let (dir, path) = temp_db();
    let text = b"my notes, not a database\n".repeat(300);
    fs::write(&path, &text).unwrap();

    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(error, StoreError::NotADatabase { .. }),
        "{error:?}"
    );
    assert!(mentions_path(&error, &path), "{error}");
    assert!(error.to_string().contains("left untouched"), "{error}");
    assert_eq!(bytes(&path), text);
    // Nothing was created beside it either.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);

    // A file shorter than the SQLite header too.
    fs::write(&path, b"SQLite").unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(error, StoreError::NotADatabase { .. }),
        "{error:?}"
    );
    assert_eq!(bytes(&path), b"SQLite");
}

#[test]
fn a_corrupted_database_is_refused_naming_it_and_left_unchanged() {
    // The SQLite header followed by garbage.
    let (_dir, path) = temp_db();
    let mut garbage = b"SQLite format 3\0".to_vec();
    let mut state: u32 = 0x1234_5678;
    garbage.extend((0..8192).map(|_| {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (state >> 16) as u8
    }));
    fs::write(&path, &garbage).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    assert!(mentions_path(&error, &path), "{error}");
    assert_eq!(bytes(&path), garbage);

    // A real database whose schema page was overwritten.
    let (_dir, path) = temp_db();
    {
        let store = Store::open(&path).unwrap();
        store.put_session(&session("s1")).unwrap();
    }
    let mut damaged = bytes(&path);
    for byte in &mut damaged[100..4096] {
        *byte = 0xA5;
    }
    fs::write(&path, &damaged).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    assert!(mentions_path(&error, &path), "{error}");
    assert_eq!(bytes(&path), damaged);
}

#[test]
fn a_foreign_sqlite_database_is_refused_naming_it_and_left_unchanged() {
    // Unknown tables and no application id.
    let (_dir, path) = temp_db();
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'ada');")
        .unwrap();
    let before = bytes(&path);
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Foreign { .. }), "{error:?}");
    assert!(mentions_path(&error, &path), "{error}");
    assert!(error.to_string().contains("table users"), "{error}");
    assert_eq!(bytes(&path), before);

    // Another application's id, even without tables.
    let (_dir, path) = temp_db();
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "application_id", 0x0F0E_0D0C)
        .unwrap();
    let before = bytes(&path);
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Foreign { .. }), "{error:?}");
    assert!(error.to_string().contains("0x0f0e0d0c"), "{error}");
    assert!(mentions_path(&error, &path), "{error}");
    assert_eq!(bytes(&path), before);
}

#[test]
fn a_missing_directory_is_a_clear_error() {
    let (dir, _) = temp_db();
    let path = dir.path().join("no-such-dir").join("agenthost.db");
    let error = Store::open(&path).unwrap_err();
    assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
    assert!(mentions_path(&error, &path), "{error}");
    assert!(!dir.path().join("no-such-dir").exists());
}

#[cfg(unix)]
#[test]
fn a_read_only_directory_is_a_clear_error_and_leaves_nothing() {
    use std::os::unix::fs::PermissionsExt;

    let (dir, path) = temp_db();
    let existing_dir = tempfile::tempdir().unwrap();
    let existing = existing_dir.path().join("agenthost.db");
    Store::open(&existing)
        .unwrap()
        .put_session(&session("s1"))
        .unwrap();
    let before = bytes(&existing);

    for directory in [dir.path(), existing_dir.path()] {
        fs::set_permissions(directory, fs::Permissions::from_mode(0o555)).unwrap();
    }
    // Privileged users (root, CAP_DAC_OVERRIDE) write into read-only directories regardless:
    // detect that instead of asserting something the kernel will not do.
    let probe = dir.path().join("probe");
    let privileged = fs::write(&probe, b"").is_ok();
    let new_result = Store::open(&path);
    let existing_result = Store::open(&existing);
    for directory in [dir.path(), existing_dir.path()] {
        fs::set_permissions(directory, fs::Permissions::from_mode(0o755)).unwrap();
    }
    if privileged {
        eprintln!("skipped: this user writes into read-only directories (running as root?)");
        return;
    }

    let error = new_result.unwrap_err();
    assert!(matches!(error, StoreError::Open { .. }), "{error:?}");
    assert!(mentions_path(&error, &path), "{error}");
    assert!(error.to_string().contains("writ"), "{error}");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);

    // An existing database in a read-only directory cannot create its WAL index.
    let error = existing_result.unwrap_err();
    assert!(mentions_path(&error, &existing), "{error}");
    assert_eq!(bytes(&existing), before);
}

#[test]
fn a_full_disk_rolls_the_whole_migration_back() {
    let (_dir, path) = temp_db();
    {
        let mut conn = Connection::open(&path).unwrap();
        configure(&conn, &path, true).unwrap();
        // SQLite's size limit stands in for a full disk: the same SQLITE_FULL.
        conn.pragma_update(None, "max_page_count", 3).unwrap();
        let error = migrate(&mut conn, &path, MIGRATIONS).unwrap_err();
        let StoreError::Migration {
            from, to, reason, ..
        } = &error
        else {
            panic!("{error:?}");
        };
        assert_eq!((*from, *to), (0, SCHEMA_VERSION));
        assert!(
            matches!(**reason, StoreError::DiskFull { .. }),
            "{reason:?}"
        );
        assert!(mentions_path(&error, &path), "{error}");
        assert!(error.to_string().contains("Nothing was changed"), "{error}");

        assert_eq!(object_count(&conn), 0);
        assert_eq!(pragma_i64(&conn, "user_version"), 0);
        assert_eq!(pragma_i64(&conn, "application_id"), 0);
    }
    // Nothing half-done stays behind: the next open initialises the file.
    let store = Store::open(&path).unwrap();
    store.put_session(&session("s1")).unwrap();
    store.integrity_check().unwrap();
}

#[test]
fn a_failing_step_rolls_back_the_steps_before_it() {
    let (_dir, path) = temp_db();
    let mut conn = Connection::open(&path).unwrap();
    let broken = [
        MIGRATIONS[0],
        Migration {
            version: 2,
            sql: "CREATE TABLE extra (x INTEGER); INSERT INTO no_such_table VALUES (1);",
        },
    ];
    let error = migrate(&mut conn, &path, &broken).unwrap_err();
    assert!(
        matches!(error, StoreError::Migration { from: 0, to: 2, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("no_such_table"), "{error}");
    assert_eq!(object_count(&conn), 0);
    assert_eq!(pragma_i64(&conn, "user_version"), 0);
}

#[test]
fn two_stores_on_one_file_see_each_others_writes() {
    let (_dir, path) = temp_db();
    let first = Store::open(&path).unwrap();
    let second = Store::open(&path).unwrap();
    first.put_session(&session("s1")).unwrap();
    assert!(second.session(&session_uri("s1")).unwrap().is_some());
    second.raise_server_seq_high_water(5).unwrap();
    assert_eq!(first.server_seq_high_water().unwrap(), 5);
}

#[test]
fn host_values_are_kept_and_the_high_water_mark_is_not_one() {
    let (_dir, path) = temp_db();
    {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.host_value("modelLimits").unwrap(), None);
        store.set_host_value("modelLimits", Some("{}")).unwrap();
        store
            .set_host_value("modelLimits", Some("{\"a\":1}"))
            .unwrap();
        store.raise_server_seq_high_water(7).unwrap();
        assert!(matches!(
            store.set_host_value("server_seq_high_water", Some("0")),
            Err(StoreError::InvalidKey(_))
        ));
        assert_eq!(store.host_value("server_seq_high_water").unwrap(), None);
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.host_value("modelLimits").unwrap().as_deref(),
        Some("{\"a\":1}")
    );
    assert_eq!(store.server_seq_high_water().unwrap(), 7);
    store.set_host_value("modelLimits", None).unwrap();
    assert_eq!(store.host_value("modelLimits").unwrap(), None);
}

#[test]
fn an_exclusive_open_locks_the_directory_against_other_processes_for_the_process() {
    let (dir, path) = temp_db();
    let other_process_may_lock = || {
        std::process::Command::new("flock")
            .args(["--nonblock", "--conflict-exit-code", "3"])
            .arg(dir.path())
            .arg("true")
            .status()
            .unwrap()
            .code()
    };
    assert_eq!(other_process_may_lock(), Some(0));
    let first = Store::open_exclusive(&path).unwrap();
    // Another process cannot take the directory; this one can open it again (hosts in one
    // process, one after the other), and plain opens are not held back.
    assert_eq!(other_process_may_lock(), Some(3));
    Store::open_exclusive(&path).unwrap();
    Store::open(&path).unwrap();
    drop(first);
    assert_eq!(
        other_process_may_lock(),
        Some(3),
        "held for the rest of the process"
    );
}

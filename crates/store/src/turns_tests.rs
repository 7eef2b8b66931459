use serde_json::json;

use crate::fixtures::*;
use crate::{ChatRecord, StoreError, TurnRecord};

#[test]
fn turns_come_back_in_append_order_with_every_field() {
    let (_dir, store) = store_with_chat();
    let c1 = chat_uri("c1");
    let records = [full_turn("t1"), turn("t2"), full_turn("a0")];
    for record in &records {
        store.append_turn(&c1, record, T1).unwrap();
    }
    assert_eq!(store.turns(&c1).unwrap(), records);
    assert_eq!(store.turn_count(&c1).unwrap(), 3);
    assert!(store.turns(&chat_uri("other")).unwrap().is_empty());
    assert_eq!(store.turn_count(&chat_uri("other")).unwrap(), 0);
}

#[test]
fn a_turn_is_stored_as_its_complete_wire_json() {
    let (_dir, store) = store_with_chat();
    let record = full_turn("t1");
    store.append_turn(&chat_uri("c1"), &record, T1).unwrap();
    store.with_connection(|conn| {
        let (turn, usage): (String, String) = conn
            .query_row("SELECT turn, usage FROM turns", [], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .unwrap();
        let turn: serde_json::Value = serde_json::from_str(&turn).unwrap();
        assert_eq!(turn, serde_json::to_value(&record.turn).unwrap());
        assert_eq!(turn["responseParts"][1]["content"], "answer t1");
        let usage: serde_json::Value = serde_json::from_str(&usage).unwrap();
        assert_eq!(usage, json!({ "inputTokens": 5, "outputTokens": 10 }));
    });
}

#[test]
fn appending_the_same_turn_id_again_replaces_it_in_place() {
    let (_dir, store) = store_with_chat();
    let c1 = chat_uri("c1");
    store.append_turn(&c1, &turn("t1"), T1).unwrap();
    store.append_turn(&c1, &turn("t2"), T1).unwrap();
    store.append_turn(&c1, &turn("t1"), T1).unwrap();
    assert_eq!(ids(&store.turns(&c1).unwrap()), ["t1", "t2"]);

    let replaced = TurnRecord {
        checkpoint_ref: Some("refs/x".to_owned()),
        ..TurnRecord::new(turn_with("t1", "a better answer"))
    };
    store.append_turn(&c1, &replaced, T1).unwrap();
    let turns = store.turns(&c1).unwrap();
    assert_eq!(ids(&turns), ["t1", "t2"]);
    assert_eq!(turns[0], replaced);
    assert_eq!(store.turn_count(&c1).unwrap(), 2);
}

#[test]
fn appending_advances_the_chat_and_session_times_never_backwards() {
    let (_dir, store) = store_with_chat();
    let c1 = chat_uri("c1");
    store.append_turn(&c1, &turn("t1"), T2).unwrap();
    assert_eq!(store.chat(&c1).unwrap().unwrap().modified_at, T2);
    assert_eq!(
        store
            .session(&session_uri("s1"))
            .unwrap()
            .unwrap()
            .modified_at,
        T2
    );

    store.append_turn(&c1, &turn("t2"), T1).unwrap();
    assert_eq!(store.chat(&c1).unwrap().unwrap().modified_at, T2);
    assert_eq!(
        store
            .session(&session_uri("s1"))
            .unwrap()
            .unwrap()
            .modified_at,
        T2
    );
}

#[test]
fn appending_to_an_unknown_chat_fails_and_writes_nothing() {
    let (_dir, store) = store_with_chat();
    let error = store
        .append_turn(&chat_uri("ghost"), &turn("t1"), T2)
        .unwrap_err();
    assert!(
        matches!(error, StoreError::NotFound { kind: "chat", .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("ahp-chat:/ghost"), "{error}");
    assert_eq!(
        store
            .session(&session_uri("s1"))
            .unwrap()
            .unwrap()
            .modified_at,
        T0
    );
    store.with_connection(|conn| {
        let count: i64 = conn
            .query_row("SELECT COUNT(*) FROM turns", [], |row| row.get(0))
            .unwrap();
        assert_eq!(count, 0);
    });
}

/// A chat `c1` with turns t0..t4, failed turns before t0, after t1 and after t3, and a
/// delegation on every completed and failed turn.
fn history() -> (tempfile::TempDir, crate::Store) {
    let (dir, store) = store_with_chat();
    let c1 = chat_uri("c1");
    store
        .record_failed_turn(&c1, &failed("f-first", None))
        .unwrap();
    for i in 0..5 {
        store.append_turn(&c1, &turn(&format!("t{i}")), T1).unwrap();
    }
    store
        .record_failed_turn(&c1, &failed("f1", Some("t1")))
        .unwrap();
    store
        .record_failed_turn(&c1, &failed("f3", Some("t3")))
        .unwrap();
    for id in ["t0", "t1", "t2", "t3", "t4", "f-first", "f1", "f3"] {
        store.set_delegation(&c1, id, Some(&json!(id))).unwrap();
    }
    (dir, store)
}

fn failed_ids(store: &crate::Store) -> Vec<String> {
    let turns = store.failed_turns(&chat_uri("c1")).unwrap();
    turns.into_iter().map(|failed| failed.turn_id).collect()
}

fn delegation_ids(store: &crate::Store) -> Vec<String> {
    let delegations = store.delegations(&chat_uri("c1")).unwrap();
    delegations
        .into_iter()
        .map(|record| record.turn_id)
        .collect()
}

#[test]
fn truncating_keeps_the_history_through_the_turn() {
    let (_dir, store) = history();
    let c1 = chat_uri("c1");
    assert_eq!(store.truncate_turns(&c1, Some("t1")).unwrap(), 3);
    assert_eq!(ids(&store.turns(&c1).unwrap()), ["t0", "t1"]);
    // The failure after t1 belonged to the discarded future; the one before t0 stays.
    assert_eq!(failed_ids(&store), ["f-first"]);
    assert_eq!(delegation_ids(&store), ["t0", "t1", "f-first"]);

    // New turns continue after the kept ones.
    store.append_turn(&c1, &turn("t9"), T2).unwrap();
    assert_eq!(ids(&store.turns(&c1).unwrap()), ["t0", "t1", "t9"]);
    assert_eq!(store.truncate_turns(&c1, Some("t9")).unwrap(), 0);
    store.integrity_check().unwrap();
}

#[test]
fn truncating_without_a_turn_clears_the_history() {
    let (_dir, store) = history();
    let c1 = chat_uri("c1");
    assert_eq!(store.truncate_turns(&c1, None).unwrap(), 5);
    assert_eq!(store.turn_count(&c1).unwrap(), 0);
    assert!(failed_ids(&store).is_empty());
    assert!(delegation_ids(&store).is_empty());
    store.append_turn(&c1, &turn("t0"), T2).unwrap();
    assert_eq!(ids(&store.turns(&c1).unwrap()), ["t0"]);
}

#[test]
fn truncating_to_an_unknown_turn_removes_nothing() {
    let (_dir, store) = history();
    let c1 = chat_uri("c1");
    let error = store.truncate_turns(&c1, Some("nope")).unwrap_err();
    assert!(
        matches!(error, StoreError::NotFound { kind: "turn", .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("`nope` of chat `ahp-chat:/c1`"),
        "{error}"
    );
    assert_eq!(store.turn_count(&c1).unwrap(), 5);
    assert_eq!(failed_ids(&store).len(), 3);
    assert_eq!(delegation_ids(&store).len(), 8);

    let error = store.truncate_turns(&chat_uri("ghost"), None).unwrap_err();
    assert!(
        matches!(error, StoreError::NotFound { kind: "chat", .. }),
        "{error:?}"
    );
}

#[test]
fn failed_turns_round_trip_in_recording_order_and_re_recording_replaces() {
    let (_dir, store) = store_with_chat();
    let c1 = chat_uri("c1");
    store.append_turn(&c1, &turn("t1"), T1).unwrap();
    let first = failed("f2", Some("t1"));
    let second = failed("f1", None);
    store.record_failed_turn(&c1, &first).unwrap();
    store.record_failed_turn(&c1, &second).unwrap();
    assert_eq!(
        store.failed_turns(&c1).unwrap(),
        [first.clone(), second.clone()]
    );

    let again = crate::FailedTurnRecord {
        error: error_info("failed again"),
        recorded_at: T2.to_owned(),
        ..first
    };
    store.record_failed_turn(&c1, &again).unwrap();
    assert_eq!(store.failed_turns(&c1).unwrap(), [again, second]);
}

#[test]
fn a_failed_turn_needs_its_chat_and_its_anchor() {
    let (_dir, store) = store_with_chat();
    let error = store
        .record_failed_turn(&chat_uri("ghost"), &failed("f1", None))
        .unwrap_err();
    assert!(
        matches!(error, StoreError::NotFound { kind: "chat", .. }),
        "{error:?}"
    );
    let error = store
        .record_failed_turn(&chat_uri("c1"), &failed("f1", Some("t-unknown")))
        .unwrap_err();
    assert!(
        matches!(error, StoreError::NotFound { kind: "turn", .. }),
        "{error:?}"
    );
    assert!(store.failed_turns(&chat_uri("c1")).unwrap().is_empty());
}

#[test]
fn a_damaged_turn_row_is_reported_with_its_place() {
    let (_dir, store) = store_with_chat();
    store.append_turn(&chat_uri("c1"), &turn("t1"), T1).unwrap();
    store.with_connection(|conn| {
        conn.execute("UPDATE turns SET turn = '{\"id\": \"t1\"}'", [])
            .unwrap();
    });
    let error = store.turns(&chat_uri("c1")).unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Decode {
                table: "turns",
                column: "turn",
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("ahp-chat:/c1 t1"), "{message}");
    assert!(message.contains("agenthost.db"), "{message}");
}

#[test]
fn the_turns_of_a_subagent_chat_are_its_own() {
    let (_dir, store) = store_with_chat();
    let sub = ChatRecord {
        subagent: true,
        ..chat("s1", "sub", 1)
    };
    store.put_chat(&sub).unwrap();
    store.append_turn(&chat_uri("c1"), &turn("t1"), T1).unwrap();
    store.append_turn(&sub.uri, &turn("t1"), T1).unwrap();
    store.append_turn(&sub.uri, &turn("t2"), T1).unwrap();
    assert_eq!(store.turn_count(&chat_uri("c1")).unwrap(), 1);
    assert_eq!(ids(&store.turns(&sub.uri).unwrap()), ["t1", "t2"]);
}

#[test]
fn a_turn_and_the_agents_resume_handle_are_written_together() {
    let (_dir, store) = store_with_chat();
    let c1 = chat_uri("c1");
    let handle = json!({ "turnsRun": 1 });
    store
        .append_turn_with_resume_handle(&c1, &turn("t1"), T1, Some(&handle))
        .unwrap();
    assert_eq!(store.turns(&c1).unwrap().len(), 1);
    assert_eq!(
        store.chat(&c1).unwrap().unwrap().resume_handle,
        Some(handle)
    );
    // A plain append leaves the handle alone.
    store.append_turn(&c1, &turn("t2"), T1).unwrap();
    assert!(store.chat(&c1).unwrap().unwrap().resume_handle.is_some());
}

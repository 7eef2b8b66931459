use agenthost_protocol::ChatUri;
use agenthost_protocol::ahp_types::state::ActiveTurn;

use crate::fixtures::*;
use crate::{ChatRecord, HistoryWrite, HistoryWriter, Store};

fn turn_write(id: &str) -> HistoryWrite {
    HistoryWrite::Turn {
        record: Box::new(turn(id)),
        modified_at: T1.to_owned(),
        resume_handle: None,
    }
}

fn no_repair(_: &ChatUri) -> Option<ChatRecord> {
    None
}

fn opened(id: &str) -> ActiveTurn {
    ActiveTurn {
        id: id.to_owned(),
        started_at: T1.to_owned(),
        message: message(&format!("question {id}")),
        response_parts: Vec::new(),
        usage: None,
    }
}

/// Makes every write of `store` fail as a read-only database does (`on`), or work again.
fn refuse_writes(store: &Store, on: bool) {
    store.with_connection(|conn| {
        conn.pragma_update(None, "query_only", on).unwrap();
    });
}

#[test]
fn a_turn_of_a_chat_without_a_record_is_stored_after_the_record_is_repaired() {
    let (_dir, store) = temp_store();
    store.put_session(&session("s1")).unwrap();
    let writer = HistoryWriter::new(store.clone(), 16);
    let sub = chat_uri("sub");
    let repair = |uri: &ChatUri| (uri == &sub).then(|| chat("s1", "sub", 1));
    writer.submit(&sub, turn_write("t1"), &repair);
    assert_eq!(writer.pending(), 0);
    assert_eq!(writer.peak(), 0, "nothing ever waited");
    assert_eq!(ids(&store.turns(&sub).unwrap()), ["t1"]);
    assert_eq!(store.chat(&sub).unwrap().unwrap().title, "Chat sub");
}

#[test]
fn a_write_for_a_chat_nobody_has_is_dropped_and_blocks_nothing() {
    let (_dir, store) = store_with_chat();
    let writer = HistoryWriter::new(store.clone(), 16);
    writer.submit(&chat_uri("gone"), turn_write("t1"), &no_repair);
    writer.submit(&chat_uri("c1"), turn_write("t2"), &no_repair);
    assert_eq!(writer.pending(), 0);
    assert_eq!(ids(&store.turns(&chat_uri("c1")).unwrap()), ["t2"]);
}

#[test]
fn a_chat_record_write_keeps_a_stored_chat_as_it_is() {
    let (_dir, store) = store_with_chat();
    let writer = HistoryWriter::new(store.clone(), 16);
    store
        .set_chat_title(&chat_uri("c1"), "Renamed", crate::TitleSource::User)
        .unwrap();
    writer.submit(
        &chat_uri("c1"),
        HistoryWrite::Chat(Box::new(chat("s1", "c1", 0))),
        &no_repair,
    );
    assert_eq!(
        store.chat(&chat_uri("c1")).unwrap().unwrap().title,
        "Renamed"
    );
}

#[test]
fn refused_writes_are_kept_in_order_per_chat_and_another_chat_is_not_held_back() {
    let (_dir, store) = store_with_chat();
    store.put_chat(&chat("s1", "c2", 1)).unwrap();
    let writer = HistoryWriter::new(store.clone(), 16);
    let (c1, c2) = (chat_uri("c1"), chat_uri("c2"));
    refuse_writes(&store, true);
    writer.submit(&c1, turn_write("t1"), &no_repair);
    writer.submit(&c1, turn_write("t2"), &no_repair);
    // A truncation queued behind the turns lands after them: t2 does not come back.
    writer.submit(
        &c1,
        HistoryWrite::Truncate {
            keep_through: Some("t1".into()),
        },
        &no_repair,
    );
    assert_eq!(writer.pending(), 3);
    refuse_writes(&store, false);
    writer.submit(&c2, turn_write("u1"), &no_repair);
    assert_eq!(ids(&store.turns(&c2).unwrap()), ["u1"]);
    assert_eq!(writer.flush(&no_repair), 0);
    assert_eq!(ids(&store.turns(&c1).unwrap()), ["t1"]);
    assert_eq!(writer.peak(), 3);
}

#[test]
fn at_the_limit_new_turns_are_refused_with_the_cause_until_the_store_takes_writes() {
    let (_dir, store) = store_with_chat();
    let writer = HistoryWriter::new(store.clone(), 2);
    let c1 = chat_uri("c1");
    refuse_writes(&store, true);
    writer.submit(&c1, turn_write("t1"), &no_repair);
    assert_eq!(writer.refusal(), None);
    writer.submit(&c1, turn_write("t2"), &no_repair);
    let refusal = writer.refusal().expect("refused at the limit");
    assert!(refusal.contains("2 writes are waiting"), "{refusal}");
    assert!(refusal.contains("read-only"), "{refusal}");
    refuse_writes(&store, false);
    assert_eq!(writer.flush(&no_repair), 0);
    assert_eq!(writer.refusal(), None);
    assert_eq!(ids(&store.turns(&c1).unwrap()), ["t1", "t2"]);
}

#[test]
fn an_open_turn_marker_is_replaced_by_its_finished_turn_in_one_write() {
    let (_dir, store) = store_with_chat();
    let writer = HistoryWriter::new(store.clone(), 16);
    let c1 = chat_uri("c1");
    writer.submit(
        &c1,
        HistoryWrite::Opened(Box::new(opened("t1"))),
        &no_repair,
    );
    assert_eq!(store.open_turn_of(&c1).unwrap(), Some(opened("t1")));
    writer.submit(&c1, turn_write("t1"), &no_repair);
    assert_eq!(store.open_turn_of(&c1).unwrap(), None);
    // Another turn's record leaves a newer marker alone.
    writer.submit(
        &c1,
        HistoryWrite::Opened(Box::new(opened("t2"))),
        &no_repair,
    );
    writer.submit(&c1, turn_write("t1"), &no_repair);
    assert_eq!(store.open_turn_of(&c1).unwrap(), Some(opened("t2")));
    assert!(store.close_open_turn(&c1, "t2").unwrap());
    assert_eq!(store.open_turn_of(&c1).unwrap(), None);
}

#[test]
fn deleting_the_chat_deletes_its_open_turn() {
    let (_dir, store) = store_with_chat();
    let c1 = chat_uri("c1");
    store.open_turn(&c1, &opened("t1")).unwrap();
    assert!(store.delete_chat(&c1).unwrap());
    assert_eq!(store.open_turn_of(&c1).unwrap(), None);
}

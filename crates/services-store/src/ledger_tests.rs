use agenthost_checkpoint_api::MemoryLedger;

use super::*;

fn session_uri(id: &str) -> SessionUri {
    SessionUri::parse(&format!("ahp-session:/{id}")).unwrap()
}

fn store_ledger() -> StoreLedger {
    StoreLedger::new(Arc::new(Store::open_in_memory().unwrap()))
}

/// One write to a ledger.
#[derive(Debug, Clone, Copy)]
enum Op {
    Ensure(&'static str, &'static str),
    Set(&'static str, &'static str, &'static str),
}

fn apply(ledger: &dyn CheckpointLedger, op: Op) {
    match op {
        Op::Ensure(session, turn) => ledger.ensure_turn(&session_uri(session), turn).unwrap(),
        Op::Set(session, turn, reference) => ledger
            .set_turn_checkpoint_ref(&session_uri(session), turn, reference)
            .unwrap(),
    }
}

/// Sessions and turns every answer is asked about: written ones and unknown ones.
const SESSIONS: [&str; 3] = ["s1", "s2", "unknown"];
const TURNS: [&str; 7] = ["t1", "t2", "t3", "t4", "t5", "t6", "unknown"];

/// Every answer a ledger gives about [`SESSIONS`] and [`TURNS`], in a fixed order.
#[derive(Debug, PartialEq, Eq)]
struct Answers {
    all: Vec<Vec<String>>,
    turn: Vec<Option<String>>,
    previous: Vec<Option<String>>,
}

fn answers(ledger: &dyn CheckpointLedger) -> Answers {
    let mut result = Answers {
        all: Vec::new(),
        turn: Vec::new(),
        previous: Vec::new(),
    };
    for session in SESSIONS.map(session_uri) {
        result
            .all
            .push(ledger.all_checkpoint_refs(&session).unwrap());
        for turn in TURNS {
            result
                .turn
                .push(ledger.turn_checkpoint_ref(&session, turn).unwrap());
            result
                .previous
                .push(ledger.previous_checkpoint_ref(&session, turn).unwrap());
        }
    }
    result
}

/// A chat's life: turns recorded before and after their checkpoints, refs replaced, a turn
/// without a ref between two with one, another session interleaved.
const SCENARIO: &[Op] = &[
    Op::Ensure("s1", "t1"),
    Op::Set("s1", "t1", "refs/cp/s1/t1"),
    Op::Ensure("s2", "t1"),
    Op::Ensure("s1", "t2"),
    Op::Set("s1", "t3", "refs/cp/s1/t3"),
    Op::Ensure("s1", "t1"),
    Op::Set("s2", "t2", "refs/cp/s2/t2"),
    Op::Set("s1", "t1", "refs/cp/s1/t1-again"),
    Op::Ensure("s1", "t4"),
    Op::Ensure("s1", "t3"),
    Op::Set("s2", "t1", "refs/cp/s2/t1"),
    Op::Set("s1", "t5", "refs/cp/s1/t5"),
];

#[test]
fn the_store_ledger_answers_as_the_memory_ledger_after_every_write() {
    let memory = MemoryLedger::new();
    let store = store_ledger();
    assert_eq!(answers(&store), answers(&memory));
    for &op in SCENARIO {
        apply(&memory, op);
        apply(&store, op);
        assert_eq!(answers(&store), answers(&memory), "after {op:?}");
    }

    // Spot checks, so equal answers are also the right ones.
    let s1 = session_uri("s1");
    assert_eq!(
        store.all_checkpoint_refs(&s1).unwrap(),
        ["refs/cp/s1/t1-again", "refs/cp/s1/t3", "refs/cp/s1/t5"]
    );
    assert_eq!(store.turn_checkpoint_ref(&s1, "t2").unwrap(), None);
    assert_eq!(
        store.previous_checkpoint_ref(&s1, "t4").unwrap().as_deref(),
        Some("refs/cp/s1/t3")
    );
    assert_eq!(store.previous_checkpoint_ref(&s1, "t1").unwrap(), None);
    assert_eq!(
        store
            .previous_checkpoint_ref(&s1, "unknown")
            .unwrap()
            .as_deref(),
        Some("refs/cp/s1/t5")
    );
}

#[test]
fn removing_a_session_answers_as_the_memory_ledger() {
    let memory = MemoryLedger::new();
    let store = store_ledger();
    for &op in SCENARIO {
        apply(&memory, op);
        apply(&store, op);
    }
    memory.remove_session(&session_uri("s1"));
    store.remove_session(&session_uri("s1")).unwrap();
    assert_eq!(answers(&store), answers(&memory));

    // The removed session starts over.
    for op in [Op::Ensure("s1", "t3"), Op::Set("s1", "t1", "refs/cp/new")] {
        apply(&memory, op);
        apply(&store, op);
    }
    assert_eq!(answers(&store), answers(&memory));
}

#[test]
fn the_ledger_survives_reopening_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agenthost.db");
    let memory = MemoryLedger::new();
    {
        let store = StoreLedger::new(Arc::new(Store::open(&path).unwrap()));
        for &op in SCENARIO {
            apply(&memory, op);
            apply(&store, op);
        }
    }

    let reopened = StoreLedger::new(Arc::new(Store::open(&path).unwrap()));
    assert_eq!(answers(&reopened), answers(&memory));
    assert_eq!(
        reopened
            .turn_checkpoint_ref(&session_uri("s2"), "t2")
            .unwrap()
            .as_deref(),
        Some("refs/cp/s2/t2")
    );

    // Turns recorded after the restart come after the earlier ones.
    apply(&memory, Op::Ensure("s1", "t6"));
    apply(&reopened, Op::Ensure("s1", "t6"));
    assert_eq!(answers(&reopened), answers(&memory));
    assert_eq!(
        reopened
            .previous_checkpoint_ref(&session_uri("s1"), "t6")
            .unwrap()
            .as_deref(),
        Some("refs/cp/s1/t5")
    );
}

use super::*;
use crate::fixtures::*;

fn spend(chat: &str, turn: &str, cost: Option<f64>, incomplete: bool, at: &str) -> SpendRecord {
    SpendRecord {
        chat: chat_uri(chat),
        turn_id: turn.to_owned(),
        provider: "claude".to_owned(),
        cost_usd: cost,
        incomplete,
        at: at.to_owned(),
    }
}

#[test]
fn a_sessions_spend_sums_its_turns_and_counts_the_unpriced_ones() {
    let (_dir, store) = store_with_chat();
    store
        .set_turn_spend(&spend("c1", "t1", Some(0.5), false, T0))
        .unwrap();
    store
        .set_turn_spend(&spend("c1", "t2", Some(0.25), true, T1))
        .unwrap();
    store
        .set_turn_spend(&spend("c1", "t3", None, false, T1))
        .unwrap();
    // A later report of a turn replaces its row.
    store
        .set_turn_spend(&spend("c1", "t1", Some(1.0), false, T2))
        .unwrap();
    let total = store.session_spend(&session_uri("s1")).unwrap();
    assert_eq!(
        total,
        SpendTotal {
            cost_usd: 1.25,
            priced_turns: 2,
            unpriced_turns: 2,
        }
    );
    assert_eq!(
        store.session_spend(&session_uri("other")).unwrap(),
        SpendTotal::default()
    );
}

#[test]
fn spend_since_counts_only_the_turns_of_the_period() {
    let (_dir, store) = store_with_chat();
    store
        .set_turn_spend(&spend("c1", "old", Some(5.0), false, T0))
        .unwrap();
    store
        .set_turn_spend(&spend("c1", "new", Some(1.0), false, T2))
        .unwrap();
    let all = store.spend_since(None).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].total.cost_usd, 6.0);
    assert_eq!(all[0].provider, "claude");
    let recent = store.spend_since(Some(T1)).unwrap();
    assert_eq!(recent[0].total.cost_usd, 1.0);
    assert!(
        store
            .spend_since(Some("2030-01-01T00:00:00Z"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn spend_needs_a_stored_chat_and_goes_with_it() {
    let (_dir, store) = store_with_chat();
    assert!(
        store
            .set_turn_spend(&spend("nope", "t1", Some(1.0), false, T0))
            .is_err()
    );
    store
        .set_turn_spend(&spend("c1", "t1", Some(1.0), false, T0))
        .unwrap();
    store.delete_session(&session_uri("s1")).unwrap();
    assert!(store.spend_since(None).unwrap().is_empty());
}

#![allow(clippy::unwrap_used)]

use super::*;

fn token(name: &str, hash: &str) -> TokenRecord {
    TokenRecord {
        name: name.to_owned(),
        hash: hash.to_owned(),
        scope: "observe".to_owned(),
        created_at: "2026-12-05T00:00:00.000Z".to_owned(),
    }
}

#[test]
fn tokens_are_added_listed_and_revoked_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("agenthost.db")).unwrap();
    store.add_token(&token("ci", "aa")).unwrap();
    store.add_token(&token("laptop", "bb")).unwrap();
    assert!(matches!(
        store.add_token(&token("ci", "cc")),
        Err(StoreError::AlreadyExists { .. })
    ));
    assert!(matches!(
        store.add_token(&token("other", "aa")),
        Err(StoreError::AlreadyExists { .. })
    ));
    let names: Vec<String> = store
        .tokens()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["ci", "laptop"]);
    assert!(store.revoke_token("ci").unwrap());
    assert!(!store.revoke_token("ci").unwrap());
    assert_eq!(store.tokens().unwrap(), vec![token("laptop", "bb")]);
}

#[test]
fn the_audit_log_keeps_entries_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("agenthost.db")).unwrap();
    for n in 0..5 {
        store
            .append_audit(&AuditRecord {
                at: format!("2026-12-05T00:00:0{n}.000Z"),
                token: "serve".to_owned(),
                client_id: "c".to_owned(),
                channel: "ahp-chat:/x".to_owned(),
                action: "chat/turnCancelled".to_owned(),
                detail: format!("{{\"n\":{n}}}"),
            })
            .unwrap();
    }
    let last: Vec<String> = store
        .audit(2)
        .unwrap()
        .into_iter()
        .map(|a| a.detail)
        .collect();
    assert_eq!(last, ["{\"n\":3}", "{\"n\":4}"]);
}

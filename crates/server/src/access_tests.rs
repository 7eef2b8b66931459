#![allow(clippy::unwrap_used)]

use super::*;

fn named(name: &str, token: &str, scope: Scope) -> NamedToken {
    NamedToken {
        hash: token_hash(token.as_bytes()),
        grant: Grant {
            name: name.to_owned(),
            scope,
        },
    }
}

#[test]
fn scopes_parse_and_print_back() {
    for text in [
        "full",
        "observe",
        "session:ahp-session:/s1",
        "session:claude:/abc",
    ] {
        assert_eq!(text.parse::<Scope>().unwrap().to_string(), text);
    }
    for bad in ["", "admin", "session:", "session:not a uri"] {
        assert!(bad.parse::<Scope>().is_err(), "{bad}");
    }
}

#[test]
fn a_presented_token_gets_its_grant_and_a_revoked_one_none() {
    let credentials = Credentials::new(Token::new("primary".to_owned()).unwrap());
    assert_eq!(credentials.grant_for(b"primary"), Some(Grant::primary()));
    assert_eq!(credentials.grant_for(b"reader-secret"), None);
    let mut changes = credentials.changes();
    credentials.replace_named(vec![named("reader", "reader-secret", Scope::Observe)]);
    assert!(changes.has_changed().unwrap());
    let grant = credentials.grant_for(b"reader-secret").unwrap();
    assert_eq!(grant.name, "reader");
    assert!(credentials.still_granted(&grant));
    changes.mark_unchanged();
    // The same set again changes nothing.
    credentials.replace_named(vec![named("reader", "reader-secret", Scope::Observe)]);
    assert!(!changes.has_changed().unwrap());
    credentials.replace_named(Vec::new());
    assert!(changes.has_changed().unwrap());
    assert!(!credentials.still_granted(&grant));
    assert_eq!(credentials.grant_for(b"reader-secret"), None);
    assert!(credentials.still_granted(&Grant::primary()));
}

#[test]
fn the_hash_is_sha256_hex() {
    assert_eq!(
        token_hash(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn a_session_scope_covers_both_spellings_of_its_session() {
    let scope: Scope = "session:claude:/abc".parse().unwrap();
    assert!(scope.sees_session("claude:/abc"));
    assert!(scope.sees_session("ahp-session:/abc"));
    assert!(
        !scope.sees_session("codex:/abc"),
        "another provider's session"
    );
    assert!(!scope.sees_session("ahp-session:/abcd"));
    let canonical: Scope = "session:ahp-session:/abc".parse().unwrap();
    assert!(canonical.sees_session("claude:/abc"));
    let added = |uri: &str| {
        serde_json::json!({ "jsonrpc": "2.0", "method": "root/sessionAdded",
                            "params": { "summary": { "resource": uri } } })
        .to_string()
    };
    assert!(frame_visible(&scope, &added("ahp-session:/abc")));
    assert!(!frame_visible(&scope, &added("ahp-session:/other")));
}

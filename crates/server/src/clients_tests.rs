#![allow(clippy::unwrap_used)]

use super::*;
use crate::ServerConfig;
use crate::access::{Grant, Scope};

fn conn(id: u64, token: &str) -> Connection {
    let config = ServerConfig::new(crate::Token::new("t".to_owned()).unwrap());
    let grant = Grant {
        name: token.to_owned(),
        scope: Scope::Full,
    };
    Connection::detached_with(id, &config, grant).0
}

#[test]
fn a_client_id_belongs_to_its_first_token_and_one_live_connection() {
    let mut bindings = ClientBindings::default();
    let first = conn(1, "laptop");
    assert!(bindings.bind("vscode", &first).unwrap().is_none());
    // Another token never gets it, connected or not.
    let intruder = conn(2, "ci");
    assert_eq!(
        bindings.bind("vscode", &intruder).unwrap_err(),
        TakenClientId {
            owner: "laptop".to_owned()
        }
    );
    bindings.disconnected("vscode", first.id());
    assert!(bindings.bind("vscode", &intruder).is_err());
    // The same token takes it over; the older connection is handed back to be closed.
    let again = conn(3, "laptop");
    assert!(bindings.bind("vscode", &again).unwrap().is_none());
    let window = conn(4, "laptop");
    assert_eq!(
        bindings.bind("vscode", &window).unwrap().unwrap().id(),
        again.id()
    );
    // Binding the same connection twice replaces nothing.
    assert!(bindings.bind("vscode", &window).unwrap().is_none());
}

#[test]
fn one_tokens_flood_cannot_free_another_tokens_ids() {
    let mut bindings = ClientBindings::default();
    let owner = conn(1, "laptop");
    bindings.bind("victim", &owner).unwrap();
    bindings.disconnected("victim", owner.id());
    let flooder = conn(2, "ci");
    for n in 0..(BINDINGS_PER_TOKEN + 10) {
        let id = format!("flood-{n}");
        bindings.bind(&id, &flooder).unwrap();
        bindings.disconnected(&id, flooder.id());
    }
    assert!(bindings.bind("victim", &flooder).is_err());
    assert!(bindings.owners.len() <= BINDINGS_PER_TOKEN + 1);
}

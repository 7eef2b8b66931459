use super::check;
use crate::metadata::Metadata;

fn violations(fixture: &str) -> Vec<String> {
    check(&Metadata::parse(fixture).unwrap())
}

const LOWER_LAYERS_ONLY: &str = "a crate may depend only on strictly lower layers";

#[test]
fn a_workspace_following_every_rule_passes() {
    assert_eq!(
        violations(include_str!("../tests/fixtures/passing.json")),
        Vec::<String>::new()
    );
}

#[test]
fn every_upward_or_sideways_edge_is_reported_by_name() {
    assert_eq!(
        violations(include_str!("../tests/fixtures/upward_edge.json")),
        vec![
            format!(
                "agenthost-protocol (layer 0) -> agenthost-reducers (layer 1): {LOWER_LAYERS_ONLY}"
            ),
            format!(
                "agenthost-side-effects (layer 6) -> agenthost-service (layer 7): {LOWER_LAYERS_ONLY}"
            ),
            format!(
                "agenthost-state (layer 2) -> agenthost-server (layer 8) [build-dependency]: \
                 {LOWER_LAYERS_ONLY}"
            ),
        ]
    );
}

#[test]
fn the_server_depends_on_the_service_and_the_protocol_alone() {
    // The mutant: the server reaching past the service to the orchestrator (and a test-only
    // dependency, which stays allowed).
    assert_eq!(
        violations(include_str!(
            "../tests/fixtures/server_beyond_its_pins.json"
        )),
        vec![
            "agenthost-server -> agenthost-side-effects: of the workspace, agenthost-server may \
             depend only on agenthost-protocol, agenthost-service (the server is only the \
             transport: every use case goes through agenthost-service)"
                .to_owned()
        ]
    );
}

#[test]
fn the_test_support_feature_is_enabled_by_dev_dependencies_only() {
    // reducers enables `test-support` of the protocol (normal) and of the testkit (dev).
    assert_eq!(
        violations(include_str!(
            "../tests/fixtures/test_support_in_a_normal_dependency.json"
        )),
        vec![
            "agenthost-reducers -> agenthost-protocol: the `test-support` feature is test code; \
             enable it in [dev-dependencies] only"
                .to_owned()
        ]
    );
}

#[test]
fn a_package_missing_from_the_layer_table_is_named() {
    let missing = |name: &str| {
        format!(
            "workspace package `{name}` is missing from the layer table: add it to LAYERS in \
             xtask/src/layers.rs with its layer from ARCHITECTURE.md"
        )
    };
    assert_eq!(
        violations(include_str!("../tests/fixtures/missing_package.json")),
        vec![missing("agenthost-contrib-"), missing("agenthost-mystery")]
    );
}

#[test]
fn a_contribution_never_depends_on_another_contribution_even_for_tests() {
    let message = "a contribution must never depend on another contribution; move the shared code \
                   into dispatcher, services or a lower layer";
    assert_eq!(
        violations(include_str!(
            "../tests/fixtures/contribution_to_contribution.json"
        )),
        vec![
            format!("agenthost-contrib-title -> agenthost-contrib-local-command: {message}"),
            format!(
                "agenthost-contrib-unread -> agenthost-contrib-title [dev-dependency]: {message}"
            ),
        ]
    );
}

#[test]
fn gix_rusqlite_and_websockets_belong_to_their_owners() {
    let gix = "only agenthost-checkpoint may depend on gix (`gix`, `gix-*`)";
    let websocket = "only agenthost-server, agenthost-client, agenthost, agenthost-e2e may depend \
                     on WebSocket crates (`tokio-tungstenite`, `tungstenite`, `ahp-ws`)";
    assert_eq!(
        violations(include_str!("../tests/fixtures/external_crates.json")),
        vec![
            "agenthost-reducers -> rusqlite: only agenthost-store may depend on rusqlite"
                .to_owned(),
            format!("agenthost-service -> ahp-ws: {websocket}"),
            format!("agenthost-service -> tokio-tungstenite: {websocket}"),
            format!("agenthost-services -> gix [dev-dependency]: {gix}"),
            format!("agenthost-state -> gix-hash: {gix}"),
        ]
    );
}

#[test]
fn dev_dependency_cycles_are_reported_with_their_path() {
    let why = "dev-dependencies may point anywhere but must not close a cycle (the crate would be \
               built twice and its types would not match)";
    assert_eq!(
        violations(include_str!("../tests/fixtures/dev_dependency_cycle.json")),
        vec![
            format!(
                "dependency cycle among workspace packages: agenthost-protocol --dev--> \
                 agenthost-testkit --normal--> agenthost-protocol; {why}"
            ),
            format!(
                "dependency cycle among workspace packages: agenthost-reducers --dev--> \
                 agenthost-state --normal--> agenthost-reducers (the cycle also runs through \
                 agenthost-tool-execution); {why}"
            ),
        ]
    );
}

#[test]
fn nothing_depends_on_tooling_while_tooling_depends_on_anything() {
    assert_eq!(
        violations(include_str!("../tests/fixtures/depends_on_tooling.json")),
        vec![
            "agenthost-state -> xtask [dev-dependency]: nothing may depend on the tooling package \
             `xtask`"
                .to_owned(),
            "dependency cycle among workspace packages: agenthost-e2e --dev--> agenthost-state \
             --dev--> xtask --normal--> agenthost-e2e; dev-dependencies may point anywhere but \
             must not close a cycle (the crate would be built twice and its types would not \
             match)"
                .to_owned(),
            "xtask -> agenthost-e2e: nothing may depend on the tooling package `agenthost-e2e`"
                .to_owned(),
        ]
    );
}

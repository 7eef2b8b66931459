use super::*;

#[test]
fn defaults_match_the_spec() {
    let config = EngineConfig::default();
    assert_eq!(config.grace, Duration::from_millis(5000));
    assert_eq!(config.handover_window, config.grace);
    assert_eq!(config.chat_input, AutoAnswer::AfterGrace);
    assert_eq!(config.tool_confirmation, AutoAnswer::AfterGrace);
    assert_eq!(config.tool_authentication, AutoAnswer::AfterGrace);
    assert_eq!(
        config.client_confirmation,
        ClientConfirmationMode::LocalDecides
    );
    assert!(!config.parent_claims_subagent_inputs);
    assert!(!config.is_inert());
}

#[test]
fn a_client_engine_waits_for_every_user_facing_kind() {
    let config = EngineConfig::client("c1");
    assert_eq!(config.client_id.as_deref(), Some("c1"));
    assert_eq!(config.chat_input, AutoAnswer::Wait);
    assert_eq!(config.tool_confirmation, AutoAnswer::Wait);
    assert_eq!(config.tool_authentication, AutoAnswer::Wait);
    assert!(!config.is_inert(), "it still executes its own tools");
}

#[test]
fn with_grace_moves_the_handover_window_too() {
    let config = EngineConfig::responder("c1").with_grace(Duration::from_millis(250));
    assert_eq!(config.grace, Duration::from_millis(250));
    assert_eq!(config.handover_window, Duration::from_millis(250));
}

#[test]
fn an_engine_without_client_that_waits_is_inert() {
    let config = EngineConfig {
        chat_input: AutoAnswer::Wait,
        tool_confirmation: AutoAnswer::Wait,
        tool_authentication: AutoAnswer::Wait,
        ..EngineConfig::default()
    };
    assert!(config.is_inert());
}

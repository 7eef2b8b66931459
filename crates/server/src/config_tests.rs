use super::*;

fn config() -> ServerConfig {
    ServerConfig::new(Token::new("config-test-token".to_owned()).unwrap())
}

#[test]
fn the_defaults_are_valid() {
    let config = config();
    assert!(config.validate().is_ok());
    assert_eq!(
        config.max_subscriptions,
        ServerConfig::DEFAULT_MAX_SUBSCRIPTIONS
    );
    assert_eq!(config.dispatch_rate, ServerConfig::DEFAULT_DISPATCH_RATE);
    assert_eq!(config.dispatch_burst, ServerConfig::DEFAULT_DISPATCH_BURST);
    assert_eq!(
        config.max_connections,
        ServerConfig::DEFAULT_MAX_CONNECTIONS
    );
}

/// A limit's name and how to set it to zero.
type Zeroing = (&'static str, fn(&mut ServerConfig));

#[test]
fn every_limit_must_be_at_least_one_naming_it() {
    let cases: [Zeroing; 6] = [
        ("max_frame_bytes", |c| c.max_frame_bytes = 0),
        ("outbound_queue", |c| c.outbound_queue = 0),
        ("inbound_queue", |c| c.inbound_queue = 0),
        ("max_subscriptions", |c| c.max_subscriptions = 0),
        ("dispatch_burst", |c| c.dispatch_burst = 0),
        ("max_connections", |c| c.max_connections = 0),
    ];
    for (name, zero) in cases {
        let mut config = config();
        zero(&mut config);
        let error = config.validate().unwrap_err().to_string();
        assert!(error.contains(name), "{name}: {error}");
    }
}

#[test]
fn a_dispatch_rate_of_zero_means_unlimited_and_is_valid() {
    let config = ServerConfig {
        dispatch_rate: 0,
        ..config()
    };
    assert!(config.validate().is_ok());
}

//! The launch settings: the command line `claude` gets, the variables set on it, and a `Debug`
//! that names variables without their values. (`ClaudeConfig` has no `Display`.) That the
//! variables reach the child is checked in `driver.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agenthost_provider_claude::{ClaudeConfig, ClaudeProvider};

/// The flags every launch carries: stream-json both ways, permission requests over stdio.
const REQUIRED: [&str; 8] = [
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--permission-prompt-tool",
    "stdio",
];

const KEY: &str = "sk-ant-api03-very-secret-value";
const TOKEN: &str = "oauth-token-very-secret-value";
const BASE_URL: &str = "http://127.0.0.1:4711/anthropic";

fn bare() -> ClaudeConfig {
    ClaudeConfig {
        partial_messages: false,
        ..ClaudeConfig::new("claude")
    }
}

fn with_secrets() -> ClaudeConfig {
    ClaudeConfig::new("claude")
        .with_env("ANTHROPIC_BASE_URL", BASE_URL)
        .with_env("ANTHROPIC_API_KEY", KEY)
        .with_env("ANTHROPIC_AUTH_TOKEN", TOKEN)
}

#[test]
fn the_command_line_is_exactly_the_stream_json_flags() {
    assert_eq!(bare().args(None, None), REQUIRED);
}

#[test]
fn partial_messages_add_one_flag_after_the_required_ones() {
    let args = ClaudeConfig::new("claude").args(None, None);
    let mut expected: Vec<&str> = REQUIRED.to_vec();
    expected.push("--include-partial-messages");
    assert_eq!(args, expected);
}

#[test]
fn the_model_is_passed_when_set() {
    let mut config = bare();
    config.cli.model = Some("sonnet".into());
    let mut expected: Vec<&str> = REQUIRED.to_vec();
    expected.extend(["--model", "sonnet"]);
    assert_eq!(config.args(None, None), expected);
    // The client's choice wins over the configured one.
    let mut chosen: Vec<&str> = REQUIRED.to_vec();
    chosen.extend(["--model", "haiku"]);
    assert_eq!(config.args(Some("haiku"), None), chosen);
    // `default` means "no --model".
    assert_eq!(config.args(Some("default"), None), REQUIRED);
    assert_eq!(bare().args(Some("haiku"), None), chosen);
}

#[test]
fn every_setting_lands_after_the_required_flags() {
    let mut config = ClaudeConfig::new("claude");
    config.cli.model = Some("opus".into());
    config.permission_mode = Some("acceptEdits".into());
    config.allowed_tools = vec!["Bash".into(), "Read".into()];
    config.cli.extra_args = vec!["--debug".into()];
    let args = config.args(None, Some("session-1"));
    assert_eq!(args[..REQUIRED.len()], REQUIRED);
    assert_eq!(
        args[REQUIRED.len()..],
        [
            "--include-partial-messages",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash,Read",
            "--model",
            "opus",
            "--resume",
            "session-1",
            "--debug",
        ]
    );
}

#[test]
fn the_base_url_and_keys_are_set_on_the_child_as_given() {
    let config = with_secrets();
    let env: Vec<(&str, &str)> = config
        .cli
        .env
        .iter()
        .map(|(name, value)| (name.as_str(), value.to_str().unwrap()))
        .collect();
    assert_eq!(
        env,
        [
            ("ANTHROPIC_BASE_URL", BASE_URL),
            ("ANTHROPIC_API_KEY", KEY),
            ("ANTHROPIC_AUTH_TOKEN", TOKEN),
        ]
    );
    // Variables never reach the command line.
    let args = config.args(None, None).join(" ");
    assert!(!args.contains(KEY) && !args.contains(TOKEN) && !args.contains(BASE_URL));
}

#[test]
fn debug_names_the_variables_but_never_prints_their_values() {
    let config = with_secrets();
    let provider = ClaudeProvider::new(config.clone()).unwrap();
    for text in [
        format!("{config:?}"),
        format!("{config:#?}"),
        format!("{provider:?}"),
        format!("{provider:#?}"),
    ] {
        for name in [
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
        ] {
            assert!(text.contains(name), "{name} is not named: {text}");
        }
        assert!(!text.contains(KEY), "the key leaks: {text}");
        assert!(!text.contains(TOKEN), "the token leaks: {text}");
        assert!(!text.contains("very-secret"), "a value leaks: {text}");
    }
}

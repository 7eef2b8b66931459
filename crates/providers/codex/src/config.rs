//! How the provider launches `codex app-server`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use agenthost_provider_api::DEFAULT_MODEL;
use agenthost_provider_api::{AgentConfig, CliSettings, InvalidConfig};

/// The approval policies `thread/start` accepts (`untrusted` is refused by Codex 0.169).
pub const APPROVAL_POLICIES: &[&str] = &["on-request", "never"];
/// The sandbox modes `thread/start` accepts.
pub const SANDBOX_MODES: &[&str] = &["read-only", "workspace-write", "danger-full-access"];
/// The wire APIs a model provider may use (`chat` is refused by Codex 0.169).
pub const WIRE_APIS: &[&str] = &["responses"];
/// The flags that keep Codex on the configured endpoint only (no plugin sync, no analytics).
pub const HYGIENE_ARGS: &[&str] = &[
    "--disable",
    "plugins",
    "--disable",
    "remote_plugin",
    "--disable",
    "apps",
    "-c",
    "analytics.enabled=false",
];

/// A model provider entry (`-c model_providers.<id>={…}`): where Codex sends model calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelProvider {
    /// The provider id (letters, digits, `-`, `_`).
    pub id: String,
    /// The API base URL, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// The wire API (`responses`).
    pub wire_api: String,
    /// The environment variable holding the API key.
    pub env_key: String,
}

/// Launch settings of the Codex provider: the shared [`CliSettings`] and Codex's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexConfig {
    /// The executable, models, command line, environment and time limits
    /// ([`CliSettings::start_timeout`] bounds `initialize`, [`CliSettings::cancel_grace`] the
    /// wind-down of an interrupted turn).
    pub cli: CliSettings,
    /// A model provider to configure and select.
    pub model_provider: Option<ModelProvider>,
    /// `approvalPolicy` of new threads (one of [`APPROVAL_POLICIES`]).
    pub approval_policy: String,
    /// `sandbox` of new threads (one of [`SANDBOX_MODES`]).
    pub sandbox: String,
    /// Adds [`HYGIENE_ARGS`] (on by default).
    pub offline_hygiene: bool,
    /// `CODEX_HOME` (Codex's config and state directory); inherited when `None`.
    pub codex_home: Option<PathBuf>,
    /// How long it may take to answer `thread/start`, `thread/resume`, `turn/start`.
    pub request_timeout: Duration,
}

fn plain(value: &str) -> bool {
    !value.is_empty()
        && !value
            .chars()
            .any(|c| c == '"' || c == '\\' || c.is_control())
}

fn id_like(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl CodexConfig {
    /// Defaults for the executable at `binary`: `on-request` approvals in a `workspace-write`
    /// sandbox, hygiene flags on, 30 s to start, 30 s per request, 5 s for an interrupt, 3 s to
    /// exit.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            cli: CliSettings::new(binary),
            model_provider: None,
            approval_policy: "on-request".to_owned(),
            sandbox: "workspace-write".to_owned(),
            offline_hygiene: true,
            codex_home: None,
            request_timeout: Duration::from_secs(30),
        }
    }

    /// Sets one environment variable of the child.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.cli.set_env(name, value);
        self
    }

    fn check(&self) -> Result<(), String> {
        if !APPROVAL_POLICIES.contains(&self.approval_policy.as_str()) {
            return Err(format!(
                "unknown Codex approval policy `{}` (expected one of {})",
                self.approval_policy,
                APPROVAL_POLICIES.join(", ")
            ));
        }
        if !SANDBOX_MODES.contains(&self.sandbox.as_str()) {
            return Err(format!(
                "unknown Codex sandbox `{}` (expected one of {})",
                self.sandbox,
                SANDBOX_MODES.join(", ")
            ));
        }
        if let Some(provider) = &self.model_provider {
            if !id_like(&provider.id) {
                return Err(format!(
                    "the Codex model provider id `{}` may only hold letters, digits, `-` and `_`",
                    provider.id.escape_debug()
                ));
            }
            if !id_like(&provider.env_key) {
                return Err(format!(
                    "the Codex model provider key variable `{}` is not a variable name",
                    provider.env_key.escape_debug()
                ));
            }
            if !WIRE_APIS.contains(&provider.wire_api.as_str()) {
                return Err(format!(
                    "Codex supports only the `responses` wire API, not `{}`",
                    provider.wire_api.escape_debug()
                ));
            }
            let scheme_ok = provider.base_url.starts_with("http://")
                || provider.base_url.starts_with("https://");
            if !plain(&provider.base_url) || !scheme_ok {
                return Err(format!(
                    "the Codex model provider URL `{}` is not a plain http(s) URL",
                    provider.base_url.escape_debug()
                ));
            }
        }
        if let Some(model) = &self.cli.model
            && !plain(model)
        {
            return Err(format!(
                "the Codex model `{}` is not valid",
                model.escape_debug()
            ));
        }
        Ok(())
    }

    /// The `codex app-server` command line.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["app-server".to_owned()];
        if let Some(provider) = &self.model_provider {
            args.push("-c".to_owned());
            args.push(format!("model_provider={}", provider.id));
            args.push("-c".to_owned());
            args.push(format!(
                "model_providers.{id}={{name=\"{id}\",base_url=\"{url}\",wire_api=\"{wire}\",env_key=\"{key}\"}}",
                id = provider.id,
                url = provider.base_url,
                wire = provider.wire_api,
                key = provider.env_key,
            ));
        }
        if self.offline_hygiene {
            args.extend(HYGIENE_ARGS.iter().map(|arg| (*arg).to_owned()));
        }
        args.extend(self.cli.extra_args.iter().cloned());
        args
    }

    /// The child's environment additions (`CODEX_HOME` first, then [`CliSettings::env`]).
    pub fn child_env(&self) -> Vec<(String, OsString)> {
        let mut env = Vec::new();
        if let Some(home) = &self.codex_home {
            env.push(("CODEX_HOME".to_owned(), home.clone().into_os_string()));
        }
        env.extend(self.cli.env.iter().cloned());
        env
    }
}

impl AgentConfig for CodexConfig {
    fn cli(&self) -> &CliSettings {
        &self.cli
    }

    fn validate(&self) -> Result<(), InvalidConfig> {
        self.cli.validate("codex")?;
        self.check().map_err(InvalidConfig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mock() -> ModelProvider {
        ModelProvider {
            id: "mock".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            wire_api: "responses".into(),
            env_key: "MOCK_API_KEY".into(),
        }
    }

    #[test]
    fn the_command_line_configures_the_provider_and_the_hygiene_flags() {
        let config = CodexConfig {
            model_provider: Some(mock()),
            ..CodexConfig::new("codex")
        };
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(
            config.args().join(" "),
            "app-server -c model_provider=mock -c model_providers.mock={name=\"mock\",\
             base_url=\"http://127.0.0.1:9/v1\",wire_api=\"responses\",env_key=\"MOCK_API_KEY\"} \
             --disable plugins --disable remote_plugin --disable apps -c analytics.enabled=false"
        );
    }

    #[test]
    fn settings_that_could_break_out_of_the_config_value_are_refused() {
        let bad_url = ModelProvider {
            base_url: "http://x\",wire_api=\"chat".into(),
            ..mock()
        };
        let bad_id = ModelProvider {
            id: "mock x".into(),
            ..mock()
        };
        let chat = ModelProvider {
            wire_api: "chat".into(),
            ..mock()
        };
        for provider in [bad_url, bad_id, chat] {
            let config = CodexConfig {
                model_provider: Some(provider.clone()),
                ..CodexConfig::new("codex")
            };
            assert!(config.validate().is_err(), "{provider:?} was accepted");
        }
        let untrusted = CodexConfig {
            approval_policy: "untrusted".into(),
            ..CodexConfig::new("codex")
        };
        assert!(untrusted.validate().unwrap_err().0.contains("untrusted"));
        let sandbox = CodexConfig {
            sandbox: "none".into(),
            ..CodexConfig::new("codex")
        };
        assert!(sandbox.validate().unwrap_err().0.contains("sandbox"));
    }

    #[test]
    fn debug_shows_variable_names_never_values() {
        let config = CodexConfig::new("codex").with_env("MOCK_API_KEY", "sk-secret");
        let debug = format!("{config:?}");
        assert!(debug.contains("MOCK_API_KEY"));
        assert!(!debug.contains("sk-secret"));
    }
}

//! How the provider launches `copilot --headless --stdio`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use agenthost_provider_api::DEFAULT_MODEL;
use agenthost_provider_api::{AgentConfig, CliSettings, InvalidConfig};

pub use crate::control::ByokProvider;

/// The arguments of every launch.
pub const BASE_ARGS: &[&str] = &[
    "--headless",
    "--stdio",
    "--no-auto-update",
    "--no-auto-login",
];

/// The GitHub token variables a bring-your-own-key run does not pass on (unless asked to).
pub const GITHUB_TOKEN_VARS: &[&str] = &["GITHUB_TOKEN", "GH_TOKEN", "COPILOT_GITHUB_TOKEN"];

/// The provider types Copilot's bring-your-own-key mode knows.
pub const BYOK_TYPES: &[&str] = &["openai", "anthropic", "azure"];

/// Launch settings of the Copilot provider: the shared [`CliSettings`] and Copilot's own.
///
/// Environment values and the API key are passed to the child and never logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopilotConfig {
    /// The executable, models, command line, environment and time limits
    /// ([`CliSettings::start_timeout`] bounds `ping`, [`CliSettings::cancel_grace`] how long an
    /// aborted turn may take to go idle).
    pub cli: CliSettings,
    /// Bring-your-own-key provider: offline mode, no GitHub account.
    pub byok: Option<ByokProvider>,
    /// Pass GitHub token variables on even in bring-your-own-key mode.
    pub pass_github_tokens: bool,
    /// `COPILOT_HOME` (created when missing); inherited when `None`.
    pub copilot_home: Option<PathBuf>,
    /// How long it may take to answer `session.create`, `session.resume`, `session.send`, …
    pub request_timeout: Duration,
}

fn plain(value: &str) -> bool {
    !value.is_empty() && !value.chars().any(char::is_control)
}

impl CopilotConfig {
    /// Defaults for the executable at `binary`: 60 s to start, 60 s per request, 5 s for an
    /// abort, 3 s to exit.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            cli: CliSettings {
                start_timeout: Duration::from_secs(60),
                ..CliSettings::new(binary)
            },
            byok: None,
            pass_github_tokens: false,
            copilot_home: None,
            request_timeout: Duration::from_secs(60),
        }
    }

    /// Sets one environment variable of the child.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.cli.set_env(name, value);
        self
    }

    fn check(&self) -> Result<(), String> {
        if let Some(byok) = &self.byok {
            if !BYOK_TYPES.contains(&byok.kind.as_str()) {
                return Err(format!(
                    "unknown Copilot provider type `{}` (expected one of {})",
                    byok.kind.escape_debug(),
                    BYOK_TYPES.join(", ")
                ));
            }
            let scheme_ok =
                byok.base_url.starts_with("http://") || byok.base_url.starts_with("https://");
            if !plain(&byok.base_url) || !scheme_ok {
                return Err(format!(
                    "the Copilot provider URL `{}` is not a plain http(s) URL",
                    byok.base_url.escape_debug()
                ));
            }
            if byok.api_key.chars().any(char::is_control) {
                return Err("the Copilot provider API key holds control characters".to_owned());
            }
        }
        if let Some(model) = &self.cli.model
            && !plain(model)
        {
            return Err(format!(
                "the Copilot model `{}` is not valid",
                model.escape_debug()
            ));
        }
        Ok(())
    }

    /// The command line.
    pub fn args(&self) -> Vec<String> {
        BASE_ARGS
            .iter()
            .map(|arg| (*arg).to_owned())
            .chain(self.cli.extra_args.iter().cloned())
            .collect()
    }

    /// The child's environment additions: `COPILOT_HOME`, the offline bring-your-own-key
    /// variables, then [`CliSettings::env`].
    pub fn child_env(&self, model: Option<&str>) -> Vec<(String, OsString)> {
        let mut env = Vec::new();
        if let Some(home) = &self.copilot_home {
            env.push(("COPILOT_HOME".to_owned(), home.clone().into_os_string()));
        }
        if let Some(byok) = &self.byok {
            env.push(("COPILOT_OFFLINE".to_owned(), "true".into()));
            env.push(("COPILOT_AUTO_UPDATE".to_owned(), "false".into()));
            env.push((
                "COPILOT_PROVIDER_BASE_URL".to_owned(),
                byok.base_url.clone().into(),
            ));
            env.push((
                "COPILOT_PROVIDER_API_KEY".to_owned(),
                byok.api_key.clone().into(),
            ));
            if byok.kind == "anthropic" {
                env.push(("COPILOT_PROVIDER_TYPE".to_owned(), "anthropic".into()));
            }
            if let Some(model) = model {
                env.push(("COPILOT_MODEL".to_owned(), model.into()));
            }
        }
        env.extend(self.cli.env.iter().cloned());
        env
    }

    /// The variables removed from the child's environment: the GitHub tokens in
    /// bring-your-own-key mode (unless passed on), then [`CliSettings::env_remove`].
    pub fn child_env_remove(&self) -> Vec<String> {
        let mut remove = Vec::new();
        if self.byok.is_some() && !self.pass_github_tokens {
            remove.extend(GITHUB_TOKEN_VARS.iter().map(|var| (*var).to_owned()));
        }
        remove.extend(self.cli.env_remove.iter().cloned());
        remove
    }
}

impl AgentConfig for CopilotConfig {
    fn cli(&self) -> &CliSettings {
        &self.cli
    }

    fn validate(&self) -> Result<(), InvalidConfig> {
        self.cli.validate("copilot")?;
        self.check().map_err(InvalidConfig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn byok() -> ByokProvider {
        ByokProvider {
            kind: "openai".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: "sk-secret".into(),
        }
    }

    #[test]
    fn byok_runs_offline_without_github_tokens() {
        let config = CopilotConfig {
            byok: Some(byok()),
            ..CopilotConfig::new("copilot")
        };
        assert_eq!(config.validate(), Ok(()));
        let env = config.child_env(Some("gpt-5.4"));
        let get = |name: &str| {
            env.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("COPILOT_OFFLINE").as_deref(), Some("true"));
        assert_eq!(
            get("COPILOT_PROVIDER_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(get("COPILOT_MODEL").as_deref(), Some("gpt-5.4"));
        assert!(
            config
                .child_env_remove()
                .contains(&"GITHUB_TOKEN".to_owned())
        );
        let passing = CopilotConfig {
            pass_github_tokens: true,
            ..config.clone()
        };
        assert!(passing.child_env_remove().is_empty());
        assert_eq!(
            config.args(),
            [
                "--headless",
                "--stdio",
                "--no-auto-update",
                "--no-auto-login"
            ]
        );
    }

    #[test]
    fn bad_provider_settings_are_refused_and_the_key_never_shows() {
        let bad = CopilotConfig {
            byok: Some(ByokProvider {
                kind: "gemini".into(),
                ..byok()
            }),
            ..CopilotConfig::new("copilot")
        };
        assert!(bad.validate().unwrap_err().0.contains("gemini"));
        let url = CopilotConfig {
            byok: Some(ByokProvider {
                base_url: "file:///etc/passwd".into(),
                ..byok()
            }),
            ..CopilotConfig::new("copilot")
        };
        assert!(url.validate().is_err());
        let shown = format!(
            "{:?}",
            CopilotConfig {
                byok: Some(byok()),
                ..CopilotConfig::new("copilot").with_env("TOKEN", "hidden-value")
            }
        );
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(!shown.contains("hidden-value"), "{shown}");
    }
}

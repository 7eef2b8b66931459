//! How the provider launches `copilot --headless --stdio`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use agenthost_provider_api::InvalidConfig;

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

/// Launch settings of the Copilot provider.
///
/// Environment values and the API key are passed to the child and never logged.
#[derive(Clone)]
pub struct CopilotConfig {
    /// The `copilot` executable.
    pub binary: PathBuf,
    /// The model of new sessions when the client selects none.
    pub model: Option<String>,
    /// The models advertised to clients. Empty: one entry named `default`.
    pub models: Vec<String>,
    /// Bring-your-own-key provider: offline mode, no GitHub account.
    pub byok: Option<ByokProvider>,
    /// Pass GitHub token variables on even in bring-your-own-key mode.
    pub pass_github_tokens: bool,
    /// `COPILOT_HOME` (created when missing); inherited when `None`.
    pub copilot_home: Option<PathBuf>,
    /// Extra arguments appended to the command line.
    pub extra_args: Vec<String>,
    /// Variables set on the child; the host's own environment is inherited otherwise.
    pub env: Vec<(String, OsString)>,
    /// Variables removed from the child's environment.
    pub env_remove: Vec<String>,
    /// How long the CLI may take to answer `ping`.
    pub start_timeout: Duration,
    /// How long it may take to answer `session.create`, `session.resume`, `session.send`, …
    pub request_timeout: Duration,
    /// How long an aborted turn may take to go idle before the process is terminated.
    pub abort_grace: Duration,
    /// How long the process may take to exit after `SIGTERM` before it is killed.
    pub kill_grace: Duration,
}

/// The model id meaning "whatever Copilot uses by default".
pub const DEFAULT_MODEL: &str = "default";

fn plain(value: &str) -> bool {
    !value.is_empty() && !value.chars().any(char::is_control)
}

impl CopilotConfig {
    /// Defaults for the executable at `binary`: 60 s to start, 60 s per request, 5 s for an
    /// abort, 3 s to exit.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
            model: None,
            models: Vec::new(),
            byok: None,
            pass_github_tokens: false,
            copilot_home: None,
            extra_args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            start_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(60),
            abort_grace: Duration::from_secs(5),
            kill_grace: Duration::from_secs(3),
        }
    }

    /// Sets one environment variable of the child.
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Checks the settings before any process starts; the message names the bad one.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        self.check().map_err(InvalidConfig)
    }

    fn check(&self) -> Result<(), String> {
        if self.binary.as_os_str().is_empty() {
            return Err("the path of the `copilot` executable is empty".to_owned());
        }
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
        if let Some(model) = &self.model
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
            .chain(self.extra_args.iter().cloned())
            .collect()
    }

    /// The child's environment additions: `COPILOT_HOME`, the offline bring-your-own-key
    /// variables, then [`Self::env`].
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
        env.extend(self.env.iter().cloned());
        env
    }

    /// The variables removed from the child's environment: the GitHub tokens in
    /// bring-your-own-key mode (unless passed on), then [`Self::env_remove`].
    pub fn child_env_remove(&self) -> Vec<String> {
        let mut remove = Vec::new();
        if self.byok.is_some() && !self.pass_github_tokens {
            remove.extend(GITHUB_TOKEN_VARS.iter().map(|var| (*var).to_owned()));
        }
        remove.extend(self.env_remove.iter().cloned());
        remove
    }
}

impl fmt::Debug for CopilotConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("CopilotConfig")
            .field("binary", &self.binary)
            .field("model", &self.model)
            .field("models", &self.models)
            .field("byok", &self.byok)
            .field("pass_github_tokens", &self.pass_github_tokens)
            .field("copilot_home", &self.copilot_home)
            .field("extra_args", &self.extra_args)
            .field("env", &env_names)
            .field("env_remove", &self.env_remove)
            .field("start_timeout", &self.start_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("abort_grace", &self.abort_grace)
            .field("kill_grace", &self.kill_grace)
            .finish()
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

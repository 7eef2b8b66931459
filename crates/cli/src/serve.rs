//! `agent-host serve`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use agenthost_dispatcher::LaunchKind;
use agenthost_server::ServerConfig;

use crate::host::{HostOptions, bind_with};

use crate::CliError;

/// The server limits `agent-host serve` takes as flags (each documented on
/// [`ServerConfig`]); the default is [`ServerConfig`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// `--max-frame-bytes`: the largest inbound WebSocket message.
    pub max_frame_bytes: usize,
    /// `--max-subscriptions`: channels one connection may subscribe to at once.
    pub max_subscriptions: usize,
    /// `--dispatch-rate`: sustained `dispatchAction`s per second per connection; 0 = no limit.
    pub dispatch_rate: u32,
    /// `--dispatch-burst`: `dispatchAction`s a connection may send at once.
    pub dispatch_burst: u32,
    /// `--outbound-queue`: frames waiting for a slow client before it is closed as lagged.
    pub outbound_queue: usize,
    /// `--max-connections`: connections open at once.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_frame_bytes: ServerConfig::DEFAULT_MAX_FRAME_BYTES,
            max_subscriptions: ServerConfig::DEFAULT_MAX_SUBSCRIPTIONS,
            dispatch_rate: ServerConfig::DEFAULT_DISPATCH_RATE,
            dispatch_burst: ServerConfig::DEFAULT_DISPATCH_BURST,
            outbound_queue: ServerConfig::DEFAULT_OUTBOUND_QUEUE,
            max_connections: ServerConfig::DEFAULT_MAX_CONNECTIONS,
        }
    }
}

impl ServerLimits {
    /// Sets these limits on `config`.
    pub fn apply(&self, config: &mut ServerConfig) {
        config.max_frame_bytes = self.max_frame_bytes;
        config.max_subscriptions = self.max_subscriptions;
        config.dispatch_rate = self.dispatch_rate;
        config.dispatch_burst = self.dispatch_burst;
        config.outbound_queue = self.outbound_queue;
        config.max_connections = self.max_connections;
    }
}

/// Refuses a listen address other machines can reach unless `allow_remote` (`--allow-remote`):
/// the host runs agents that edit files and run commands, so exposing it is a decision.
pub fn check_listen(listen: SocketAddr, allow_remote: bool) -> Result<(), CliError> {
    if listen.ip().is_loopback() || allow_remote {
        return Ok(());
    }
    Err(CliError::Host(format!(
        "--listen {listen} is reachable from other machines: pass --allow-remote to serve there \
         (every client still needs the connection token)"
    )))
}

/// The options of `agent-host serve`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Providers to advertise.
    pub providers: Vec<String>,
    /// Script for the scripted provider.
    pub script: Option<PathBuf>,
    /// Connection token; generated when `None`.
    pub token: Option<String>,
    /// Roots; the current directory when empty.
    pub roots: Vec<PathBuf>,
    /// The data directory (the session database).
    pub data_dir: PathBuf,
    /// How long a session must be idle before it is evicted from memory (`None`: never).
    pub idle_eviction: Option<std::time::Duration>,
    /// How often history writes the session database refused are tried again (`None`: the
    /// default, [`crate::host::DEFAULT_HISTORY_RETRY`]).
    pub history_retry: Option<std::time::Duration>,
    /// How many refused history writes may wait before new turns are refused (`None`: the
    /// store's default, 4096).
    pub history_backlog: Option<usize>,
    /// How the `claude` provider launches Claude Code.
    pub claude: Option<agenthost_provider_claude::ClaudeConfig>,
    /// How the `codex` provider launches Codex.
    pub codex: Option<agenthost_provider_codex::CodexConfig>,
    /// How the `copilot` provider launches the Copilot CLI.
    pub copilot: Option<agenthost_provider_copilot::CopilotConfig>,
    /// The ACP agents, each offered as `acp.NAME`.
    pub acp_agents: Vec<agenthost_provider_acp::AcpAgentConfig>,
    /// The unattended policy and its grace window.
    pub unattended: crate::unattended::UnattendedOptions,
    /// Root configuration flags turned on.
    pub enable: Vec<String>,
    /// The price table (`--prices FILE`); `None`: the built-in one.
    pub prices: Option<agenthost_services::prices::PriceTable>,
    /// The budget new sessions get (`--default-budget-usd`); `None`: no budget.
    pub default_budget_usd: Option<f64>,
    /// The notification flags.
    pub notify: crate::host::NotifyOptions,
    /// The server's limits.
    pub limits: ServerLimits,
    /// `--allow-origin`: browser origins allowed besides VS Code's desktop windows.
    pub allowed_origins: Vec<String>,
    /// `--web`: serve the host's page; its URL is printed on stderr.
    pub web: bool,
    /// `--vscode-discovery`: `Some` publishes a local discovery entry for VS Code, in this
    /// user-data directory (`Some(None)`: VS Code's default one).
    pub discovery: Option<Option<PathBuf>>,
}

/// Serves until Ctrl-C, after printing the URL as the first line on stdout.
pub async fn run(options: ServeOptions) -> Result<(), CliError> {
    let limits = options.limits;
    let origins = options.allowed_origins;
    let web = options.web;
    let server = bind_with(
        HostOptions {
            listen: options.listen,
            providers: options.providers,
            script: options.script,
            token: options.token,
            roots: options.roots,
            launch_kind: LaunchKind::Serve,
            data_dir: Some(options.data_dir),
            idle_eviction: options.idle_eviction,
            history_retry: options.history_retry,
            history_backlog: options.history_backlog,
            claude: options.claude,
            codex: options.codex,
            copilot: options.copilot,
            acp_agents: options.acp_agents,
            unattended: options.unattended,
            enable: options.enable,
            prices: options.prices,
            default_budget_usd: options.default_budget_usd,
            notify: options.notify,
        },
        |config| {
            limits.apply(config);
            config.allowed_origins = origins;
            config.web = web;
        },
    )
    .await?;
    // Written before the URL is printed, held until `serve` returns: dropping it removes it.
    let _discovery = match options.discovery {
        None => None,
        Some(user_data_dir) => {
            let user_data_dir = user_data_dir
                .or_else(crate::discovery::default_vscode_user_data_dir)
                .ok_or_else(|| CliError::usage("--vscode-discovery: cannot find VS Code's user-data directory; pass --vscode-user-data-dir"))?;
            let entries = crate::discovery::entries_dir(&user_data_dir);
            let entry = crate::discovery::DiscoveryEntry::publish(
                &entries,
                server.local_addr(),
                server.credentials().primary(),
            )
            .map_err(|e| {
                CliError::Host(format!(
                    "--vscode-discovery: cannot write the entry in {}: {e}",
                    entries.display()
                ))
            })?;
            tracing::info!(path = %entry.path().display(), "published the VS Code discovery entry");
            Some(entry)
        }
    };
    // Installed before the URL is printed: a stop requested the moment the URL appears is
    // still a clean shutdown, not the signal's default (death by SIGTERM).
    let stop = ShutdownSignals::install();
    // The contract: the first line on stdout is the full URL, token included.
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", server.url())
        .map_err(|e| CliError::Host(format!("cannot write to stdout: {e}")))?;
    stdout
        .flush()
        .map_err(|e| CliError::Host(format!("cannot write to stdout: {e}")))?;
    if web {
        // Printed, not logged: it carries the token.
        eprintln!("web page: {}", server.page_url());
    }
    tracing::info!(address = %server.local_addr(), "serving AHP");
    server
        .serve(async move {
            let signal = stop.recv().await;
            tracing::info!(signal, "shutting down");
        })
        .await;
    Ok(())
}

/// The requests to stop, listened for from [`ShutdownSignals::install`] on: Ctrl-C (SIGINT)
/// everywhere, and on Unix also SIGTERM (a service manager, `kill`) — each one a clean shutdown:
/// agents stopped, the discovery entry removed. SIGHUP keeps its default: handling it would
/// defeat `nohup agent-host serve`.
struct ShutdownSignals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl ShutdownSignals {
    /// Installs the handlers now (a signal that cannot be handled leaves its default).
    fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Self {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// Resolves on the first request to stop; returns the signal's name.
    async fn recv(self) -> &'static str {
        #[cfg(unix)]
        {
            async fn next(signal: Option<tokio::signal::unix::Signal>) {
                match signal {
                    Some(mut stream) => {
                        stream.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                () = next(self.interrupt) => "SIGINT",
                () = next(self.terminate) => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

#[cfg(test)]
mod tests {
    use agenthost_server::Token;

    use super::*;

    fn config() -> ServerConfig {
        ServerConfig::new(Token::new("serve-test-token".to_owned()).unwrap())
    }

    #[test]
    fn the_default_limits_are_the_servers() {
        let mut applied = config();
        ServerLimits::default().apply(&mut applied);
        let defaults = config();
        assert_eq!(applied.max_frame_bytes, defaults.max_frame_bytes);
        assert_eq!(applied.max_subscriptions, defaults.max_subscriptions);
        assert_eq!(applied.dispatch_rate, defaults.dispatch_rate);
        assert_eq!(applied.dispatch_burst, defaults.dispatch_burst);
        assert_eq!(applied.outbound_queue, defaults.outbound_queue);
        assert_eq!(applied.max_connections, defaults.max_connections);
    }

    #[test]
    fn every_limit_reaches_the_server_configuration_and_is_validated() {
        let limits = ServerLimits {
            max_frame_bytes: 1,
            max_subscriptions: 2,
            dispatch_rate: 3,
            dispatch_burst: 4,
            outbound_queue: 5,
            max_connections: 6,
        };
        let mut applied = config();
        limits.apply(&mut applied);
        let got = (
            applied.max_frame_bytes,
            applied.max_subscriptions,
            applied.dispatch_rate,
            applied.dispatch_burst,
            applied.outbound_queue,
            applied.max_connections,
        );
        assert_eq!(got, (1, 2, 3, 4, 5, 6));
        assert!(applied.validate().is_ok());
        ServerLimits {
            max_subscriptions: 0,
            ..limits
        }
        .apply(&mut applied);
        let error = applied.validate().unwrap_err().to_string();
        assert!(error.contains("max_subscriptions"), "{error}");
    }
}

//! `agent-host serve`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use agenthost_dispatcher::LaunchKind;

use crate::host::{HostOptions, bind};

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
    /// How often idle sessions are evicted from memory (`None`: never).
    pub idle_eviction: Option<std::time::Duration>,
    /// How the `claude` provider launches Claude Code.
    pub claude: Option<agenthost_provider_claude::ClaudeConfig>,
    /// How the `codex` provider launches Codex.
    pub codex: Option<agenthost_provider_codex::CodexConfig>,
    /// How the `copilot` provider launches the Copilot CLI.
    pub copilot: Option<agenthost_provider_copilot::CopilotConfig>,
    /// The unattended policy and its grace window.
    pub unattended: crate::unattended::UnattendedOptions,
    /// Root configuration flags turned on.
    pub enable: Vec<String>,
}

/// Serves until Ctrl-C, after printing the URL as the first line on stdout.
pub async fn run(options: ServeOptions) -> Result<(), String> {
    let server = bind(HostOptions {
        listen: options.listen,
        providers: options.providers,
        script: options.script,
        token: options.token,
        roots: options.roots,
        launch_kind: LaunchKind::Serve,
        data_dir: Some(options.data_dir),
        idle_eviction: options.idle_eviction,
        claude: options.claude,
        codex: options.codex,
        copilot: options.copilot,
        unattended: options.unattended,
        enable: options.enable,
    })
    .await?;
    // The contract: the first line on stdout is the full URL, token included.
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", server.url()).map_err(|e| format!("cannot write to stdout: {e}"))?;
    stdout
        .flush()
        .map_err(|e| format!("cannot write to stdout: {e}"))?;
    tracing::info!(address = %server.local_addr(), "serving AHP");
    server
        .serve(async {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("shutting down");
        })
        .await;
    Ok(())
}

//! `agent-host`: an agent host speaking the Agent Host Protocol.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// An agent host: hosts agent sessions for AHP clients (VS Code, the `ahp` Rust client, scripts)
/// and drives coding agents.
#[derive(Debug, Parser)]
#[command(name = "agent-host", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve AHP over WebSocket. The first line on stdout is the URL to connect to, token
    /// included; logs go to stderr.
    Serve(ServeArgs),
    /// Run a two-turn session end to end against an in-process host and print it.
    Demo(DemoArgs),
    /// List or delete stored sessions (offline: for a running host use `x-deleteSession`).
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
        /// The data directory (default: $XDG_DATA_HOME/agenthost or ~/.local/share/agenthost).
        #[arg(long, global = true, env = "AGENT_HOST_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// Every stored session, newest first.
    List,
    /// Delete a session and its history for good.
    Delete {
        /// The session URI, e.g. `scripted:/3f2c…`.
        session: String,
    },
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address to listen on; port 0 lets the OS pick one.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// An agent to offer (repeatable); exactly these are advertised.
    #[arg(long = "provider", value_name = "NAME", default_values_t = vec!["scripted".to_owned()])]
    providers: Vec<String>,
    /// Script for the scripted provider (JSON; see crates/providers/scripted/README.md).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Connection token clients must present; generated when absent.
    #[arg(long, env = "AGENT_HOST_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A directory sessions and working directories may use (repeatable; default: the current
    /// directory). The first is the default working directory.
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// Where the session database lives (default: $XDG_DATA_HOME/agenthost or
    /// ~/.local/share/agenthost).
    #[arg(long, env = "AGENT_HOST_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Evict sessions idle for this many seconds from memory (they stay listed and come back on
    /// use); 0 never evicts.
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    idle_evict_secs: u64,
}

fn data_dir(given: Option<PathBuf>) -> Result<PathBuf, String> {
    given
        .or_else(agenthost::host::default_data_dir)
        .ok_or_else(|| "no data directory: pass --data-dir (HOME is not set)".to_owned())
}

#[derive(Debug, clap::Args)]
struct DemoArgs {
    /// Print the raw AHP actions too.
    #[arg(long)]
    verbose: bool,
}

fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("agent-host: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Serve(args) => {
            init_logging("info");
            data_dir(args.data_dir).and_then(|data_dir| {
                runtime.block_on(agenthost::serve::run(agenthost::serve::ServeOptions {
                    listen: args.listen,
                    providers: args.providers,
                    script: args.script,
                    token: args.token,
                    roots: args.roots,
                    data_dir,
                    idle_eviction: (args.idle_evict_secs > 0)
                        .then(|| std::time::Duration::from_secs(args.idle_evict_secs)),
                }))
            })
        }
        Command::Sessions {
            command,
            data_dir: dir,
        } => {
            init_logging("warn");
            data_dir(dir).and_then(|dir| match command {
                SessionsCommand::List => agenthost::sessions::list(&dir),
                SessionsCommand::Delete { session } => agenthost::sessions::delete(&dir, &session),
            })
        }
        Command::Demo(args) => {
            init_logging("warn");
            runtime.block_on(agenthost::demo::run(args.verbose))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agent-host: {error}");
            ExitCode::FAILURE
        }
    }
}

//! `agent-host`: an agent host speaking the Agent Host Protocol.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod agent_args;
mod host_args;

use agent_args::AgentFlags;
use host_args::{AnswerArgs, ChatArgs, EditorArgs, RunArgs, data_dir};

use agenthost::CliError;

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
    Serve(Box<ServeArgs>),
    /// Run one turn with an agent in a folder and stream it here: confirmations are asked
    /// (`y`/`n`), Ctrl-C cancels the turn, the changed files are listed at the end.
    Run(Box<RunArgs>),
    /// Talk with an agent, turn after turn: a new session, or an existing one (--session URI,
    /// --continue). Lines typed while a turn runs are queued; confirmations are asked inline;
    /// Ctrl-C cancels the turn (twice at the prompt leaves); /help lists the slash commands.
    Chat(Box<ChatArgs>),
    /// Be an Agent Client Protocol agent on stdin and stdout, for editors that start their
    /// agent as a child process (Zed, JetBrains IDEs): its sessions are host sessions. Logs go
    /// to stderr.
    Acp(Box<EditorArgs>),
    /// Follow a session another client runs, from now on: its confirmations are asked here
    /// too (whichever client answers first wins); Ctrl-C detaches.
    Attach(AttachArgs),
    /// What the agent changed, as a unified diff: one turn, everything since a turn started
    /// (`--since`), or the whole session.
    Diff(DiffArgs),
    /// Put the working tree back to the start of a turn (that turn and every later one are
    /// undone), after showing what will change and asking.
    Rollback(RollbackArgs),
    /// Run a two-turn session end to end against an in-process host and print it.
    Demo(DemoArgs),
    /// Print the AHP actions an agent transcript maps to, one JSON object per line (for
    /// debugging a provider and checking new transcripts).
    Map(MapArgs),
    /// Serve a scripted mock model (Anthropic Messages, OpenAI Responses and Chat Completions)
    /// on loopback; the first line on stdout is its base URL.
    MockModel(MockModelArgs),
    /// Named connection tokens with scopes, kept (hashed) in the data directory: `serve`
    /// accepts each besides its own `--token`.
    Tokens {
        #[command(subcommand)]
        command: TokensCommand,
        /// The data directory (default: $XDG_DATA_HOME/agenthost or ~/.local/share/agenthost).
        #[arg(long, global = true, env = "AGENT_HOST_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The audit log: every confirmation answer, cancel and rollback, with the token and
    /// client id that made it, oldest first.
    Audit {
        /// How many of the latest entries to print.
        #[arg(long, default_value_t = 100, value_parser = at_least_one)]
        limit: usize,
        /// The data directory (default: $XDG_DATA_HOME/agenthost or ~/.local/share/agenthost).
        #[arg(long, env = "AGENT_HOST_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The sessions as a table (title, provider, status, last activity, turns, cost), newest
    /// first — of a running host with `--connect`, else of the data directory; `--json` prints
    /// them as JSON; `--since 7d` reports what each session and provider cost in that period
    /// instead; `archive`, `unarchive` and `rename` change a session through the protocol;
    /// `list` and `delete` work on the database offline (for a running host use
    /// `x-deleteSession`).
    Sessions {
        #[command(subcommand)]
        command: Option<SessionsCommand>,
        /// Include archived sessions in the table.
        #[arg(long)]
        all: bool,
        /// Print the sessions as a JSON array of AHP session summaries instead of a table.
        #[arg(long, conflicts_with = "since")]
        json: bool,
        /// Report spend per session and per provider over this last period (`7d`, `24h`,
        /// `30m`), an API-equivalent estimate.
        #[arg(long, value_name = "PERIOD")]
        since: Option<String>,
        /// A running host: the URL `agent-host serve` printed, token included.
        #[arg(
            long,
            global = true,
            env = "AGENT_HOST_URL",
            hide_env_values = true,
            value_name = "URL"
        )]
        connect: Option<String>,
        /// The data directory (default: $XDG_DATA_HOME/agenthost or ~/.local/share/agenthost).
        #[arg(long, global = true, env = "AGENT_HOST_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Prints a completion script for a shell: `agent-host completions bash > ~/.local/share/bash-completion/completions/agent-host`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
enum TokensCommand {
    /// Create a named token and print it once (only its SHA-256 is kept). A running host
    /// accepts it within a second.
    Add {
        /// A name for it (letters, digits, `.`, `_`, `-`), shown in logs and the audit log.
        name: String,
        /// What it may do: `full`, `observe` (read only) or `session:<session URI>` (that
        /// session alone).
        #[arg(long, default_value = "full")]
        scope: String,
    },
    /// The named tokens (names, scopes, creation times; never the tokens).
    List,
    /// Revoke a named token; a running host closes its connections within a second.
    Revoke {
        /// The token's name.
        name: String,
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
    /// Archive a session (hidden from the table without --all; VS Code shows it archived).
    Archive {
        /// The session URI.
        session: String,
    },
    /// Take a session out of the archive.
    Unarchive {
        /// The session URI.
        session: String,
    },
    /// Give a session a title (kept as the user's: the agent's titles no longer replace it).
    Rename {
        /// The session URI.
        session: String,
        /// The new title.
        title: String,
    },
}

/// The session and the change of a `sessions archive|unarchive|rename`; the offline commands
/// (`list`, `delete`) back as they are.
fn session_change(
    command: SessionsCommand,
) -> Result<(String, agenthost::sessions::Change), SessionsCommand> {
    use agenthost::sessions::Change;
    match command {
        SessionsCommand::Archive { session } => Ok((session, Change::Archive)),
        SessionsCommand::Unarchive { session } => Ok((session, Change::Unarchive)),
        SessionsCommand::Rename { session, title } => Ok((session, Change::Rename(title))),
        offline => Err(offline),
    }
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address to listen on; port 0 lets the OS pick one. Loopback unless `--allow-remote`.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Allow `--listen` on an address other machines can reach (every client still needs the
    /// token; keep it secret and prefer `--token` from a secret store).
    #[arg(long)]
    allow_remote: bool,
    /// A browser origin allowed to connect (repeatable), besides vscode-file://vscode-app
    /// (VS Code's desktop windows). An upgrade carrying any other Origin header gets 403;
    /// clients that send none (VS Code over SSH, the CLI, scripts) are not affected.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Serve the host's own page on the same address: open the `http://…/?tkn=…` URL printed on
    /// stderr in any browser (a phone too) to watch sessions, answer confirmations, send and
    /// cancel. Without the token the page answers 403.
    #[arg(long)]
    web: bool,
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
    /// How often chat history the session database refused (a full disk, a read-only file) is
    /// tried again (e.g. `2s`, `500ms`; default 500ms). Stopping with SIGTERM or Ctrl-C tries
    /// once more before exiting.
    #[arg(long, value_name = "DURATION", value_parser = agenthost::unattended::parse_interval)]
    history_retry: Option<std::time::Duration>,
    /// How many history writes the session database refused may wait in memory before new
    /// turns are refused, with the cause (default 4096).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    history_backlog: Option<u64>,
    /// What the host does with a confirmation, input request or authentication that no
    /// connection claims (a live subscription to its chat, or to a subagent chat's parent, is a
    /// claim): `off` leaves it waiting, `deny` denies or cancels it after the grace window,
    /// `allow=tool1,tool2` approves those tools' confirmations and denies the rest.
    #[arg(long, default_value = "off", value_name = "off|deny|allow=TOOLS", value_parser = agenthost::unattended::parse_policy)]
    unattended: agenthost::unattended::UnattendedPolicy,
    /// How long an obligation may stay unclaimed before `--unattended` answers it (e.g. `2s`,
    /// `500ms`; default 5s, the engine's grace window).
    #[arg(long, value_name = "DURATION", value_parser = agenthost::unattended::parse_grace)]
    unattended_grace: Option<std::time::Duration>,
    /// The budget in US dollars every new session gets (its `budgetUsd` config; a client may
    /// change it per session): when a session's estimated spend reaches it, its turns stop.
    #[arg(long, value_name = "USD", value_parser = parse_budget)]
    default_budget_usd: Option<f64>,
    /// A program to run (without a shell) for each notification, the notification as JSON on
    /// its stdin: a session waiting for input, a long turn ended, a budget warning or stop, an
    /// agent crash.
    #[arg(long, value_name = "PROGRAM")]
    notify_command: Option<PathBuf>,
    /// An argument for --notify-command (repeatable).
    #[arg(long = "notify-arg", value_name = "ARG", allow_hyphen_values = true)]
    notify_args: Vec<String>,
    /// A URL to POST each notification to as JSON (timeout 10s, 3 attempts).
    #[arg(long, value_name = "URL")]
    notify_webhook: Option<String>,
    /// Tell of a turn's end when it ran at least this long (`90s`, `2m`; default 60s).
    #[arg(long, value_name = "DURATION", value_parser = agenthost::unattended::parse_grace)]
    notify_after: Option<std::time::Duration>,
    /// Tell of a confirmation, input request or client tool still waiting after this long
    /// (default 60s).
    #[arg(long, value_name = "DURATION", value_parser = agenthost::unattended::parse_grace)]
    notify_input_after: Option<std::time::Duration>,
    /// The least time between two notifications of one kind for one session (default 60s).
    #[arg(long, value_name = "DURATION", value_parser = agenthost::unattended::parse_grace)]
    notify_debounce: Option<std::time::Duration>,
    /// How long a client that disconnected may take to come back (reconnect and subscribe to
    /// the session again) before its running client tools are failed with `clientUnavailable`,
    /// so no agent waits for a tool whose runner is gone (e.g. `10s`; default 5s). Always on.
    #[arg(long, value_name = "DURATION", value_parser = agenthost::unattended::parse_grace)]
    client_grace: Option<std::time::Duration>,
    /// Turn on a root configuration flag; repeatable: `markdownPlanRichLinks` (plan link and
    /// task-list guidance in every outgoing turn), `artifactTools` (artifact-tool guidance).
    #[arg(long, value_name = "FLAG", value_parser = clap::builder::PossibleValuesParser::new(agenthost::host::ENABLE_FLAGS))]
    enable: Vec<String>,
    /// Announce this host in VS Code's local discovery registry
    /// (`<user data>/agent-host/local-endpoint/entries/`, a 0600 file holding the URL's token),
    /// removed on shutdown; off by default.
    #[arg(long)]
    vscode_discovery: bool,
    /// VS Code's user-data directory for `--vscode-discovery` (default: `~/.config/Code` on
    /// Linux, `~/Library/Application Support/Code` on macOS, `%APPDATA%\Code` on Windows).
    #[arg(long, value_name = "DIR", requires = "vscode_discovery")]
    vscode_user_data_dir: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    agents: AgentFlags,
}

/// The server's limits (see `agenthost_server::ServerConfig`). A client that reaches one gets
/// the answer the README's serve table names; the host and other clients carry on.
#[derive(Debug, clap::Args)]
struct LimitArgs {
    /// Largest inbound WebSocket message in bytes; a larger one is answered -32600 and its
    /// connection closed (1009).
    #[arg(long, value_name = "BYTES", default_value_t = agenthost_server::ServerConfig::DEFAULT_MAX_FRAME_BYTES, value_parser = at_least_one)]
    max_frame_bytes: usize,
    /// Channels one connection may subscribe to at once; one more `subscribe` is answered
    /// -32009.
    #[arg(long, value_name = "N", default_value_t = agenthost_server::ServerConfig::DEFAULT_MAX_SUBSCRIPTIONS, value_parser = at_least_one)]
    max_subscriptions: usize,
    /// Sustained dispatchAction notifications per second per connection; an excess action is
    /// echoed back rejected ("rate limited"). 0 turns the limit off.
    #[arg(long, value_name = "PER_SECOND", default_value_t = agenthost_server::ServerConfig::DEFAULT_DISPATCH_RATE)]
    dispatch_rate: u32,
    /// dispatchAction notifications a connection may send at once, above --dispatch-rate.
    #[arg(long, value_name = "N", default_value_t = agenthost_server::ServerConfig::DEFAULT_DISPATCH_BURST, value_parser = clap::value_parser!(u32).range(1..))]
    dispatch_burst: u32,
    /// Frames queued for a client that does not read; when full it is closed as lagged (1013)
    /// and reconnects.
    #[arg(long, value_name = "FRAMES", default_value_t = agenthost_server::ServerConfig::DEFAULT_OUTBOUND_QUEUE, value_parser = at_least_one)]
    outbound_queue: usize,
    /// Connections open at once; one more gets HTTP 503.
    #[arg(long, value_name = "N", default_value_t = agenthost_server::ServerConfig::DEFAULT_MAX_CONNECTIONS, value_parser = at_least_one)]
    max_connections: usize,
}

impl LimitArgs {
    fn limits(&self) -> agenthost::serve::ServerLimits {
        agenthost::serve::ServerLimits {
            max_frame_bytes: self.max_frame_bytes,
            max_subscriptions: self.max_subscriptions,
            dispatch_rate: self.dispatch_rate,
            dispatch_burst: self.dispatch_burst,
            outbound_queue: self.outbound_queue,
            max_connections: self.max_connections,
        }
    }
}

/// A limit: a whole number of at least 1.
fn at_least_one(value: &str) -> Result<usize, CliError> {
    match value.parse::<usize>() {
        Ok(0) => Err(CliError::usage("must be at least 1")),
        Ok(n) => Ok(n),
        Err(error) => Err(CliError::Usage(error.to_string())),
    }
}

#[derive(Debug, clap::Args)]
struct DiffArgs {
    /// The session URI (as `agent-host sessions` lists it).
    session: String,
    /// One turn's changes.
    #[arg(conflicts_with = "since")]
    turn: Option<String>,
    /// Everything from the start of this turn on.
    #[arg(long, value_name = "TURN")]
    since: Option<String>,
    #[command(flatten)]
    host: HostArgs,
}

/// Where a command finds its sessions: a running host, else the data directory.
#[derive(Debug, clap::Args)]
struct HostArgs {
    /// A running host: the URL `agent-host serve` printed, token included (default: the
    /// sessions stored in the data directory).
    #[arg(
        long,
        env = "AGENT_HOST_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    connect: Option<String>,
    /// Where the session database lives (as for `serve`).
    #[arg(long, env = "AGENT_HOST_DATA_DIR")]
    data_dir: Option<PathBuf>,
}

impl HostArgs {
    /// Runs `command` against the running host, or against one started over the data
    /// directory for the command's length (see [`agenthost::host::with_host`]).
    async fn with_host<T, F, Fut>(self, what: &str, command: F) -> Result<T, CliError>
    where
        F: FnOnce(String) -> Fut,
        Fut: std::future::Future<Output = Result<T, CliError>>,
    {
        let dir = self.data_dir;
        agenthost::host::with_host(self.connect, || data_dir(dir), what, command).await
    }
}

#[derive(Debug, clap::Args)]
struct RollbackArgs {
    /// The session URI.
    session: String,
    /// The turn whose start the working tree goes back to.
    turn: String,
    /// Do not ask.
    #[arg(long)]
    yes: bool,
    #[command(flatten)]
    host: HostArgs,
}

#[derive(Debug, clap::Args)]
struct AttachArgs {
    /// The session URI (as `agent-host sessions` lists it).
    session: String,
    /// The running host: the URL `agent-host serve` printed, token included.
    #[arg(
        long,
        env = "AGENT_HOST_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    connect: String,
    #[command(flatten)]
    answers: AnswerArgs,
    /// Exit when the running turn ends (at once when none is running).
    #[arg(long)]
    until_done: bool,
}

#[derive(Debug, clap::Args)]
struct MockModelArgs {
    /// Loopback address to listen on; port 0 lets the OS pick one.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The shell command the model asks to run.
    #[arg(long = "cmd", default_value = "echo hi > out.txt")]
    command: String,
    /// Add a thinking (reasoning) block before the tool call.
    #[arg(long)]
    thinking: bool,
    /// Ask for sandbox escalation where the tool schema allows it (what makes Codex ask).
    #[arg(long)]
    escalate: bool,
    /// Answer every model call with this HTTP status and an error body.
    #[arg(long, value_name = "STATUS")]
    fail_status: Option<u16>,
    /// The message of those errors.
    #[arg(long, default_value = "mock: scripted failure")]
    fail_message: String,
    /// Fill a `workdir` tool argument with this directory.
    #[arg(long, value_name = "DIR")]
    workdir: Option<String>,
    /// Milliseconds to wait between streamed events.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    delay_ms: u64,
    /// Append one JSON line per request to this file.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct MapArgs {
    /// The provider whose output format the transcript is in: claude, codex, copilot, or acp
    /// (any ACP agent's stdout).
    #[arg(long, value_name = "NAME")]
    provider: String,
    /// The transcript: the agent's stdout, one JSON object per line (`-` for stdin).
    file: PathBuf,
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
    // Colour only for a person at a terminal: a log file or pipe gets plain text, and so does
    // anyone who set NO_COLOR (https://no-color.org: any non-empty value).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(agenthost::term::LogOutput)
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
            let args = *args;
            init_logging("info");
            let prices = args.agents.prices();
            let copilot = args.agents.copilot.config();
            let acp_agents = args.agents.acp.agents();
            data_dir(args.data_dir).and_then(|data_dir| {
                let copilot = copilot?;
                let acp_agents = acp_agents?;
                let prices = prices?;
                agenthost::serve::check_listen(args.listen, args.allow_remote)?;
                runtime.block_on(agenthost::serve::run(agenthost::serve::ServeOptions {
                    listen: args.listen,
                    providers: args.providers,
                    script: args.script,
                    token: args.token,
                    roots: args.roots,
                    data_dir,
                    idle_eviction: (args.idle_evict_secs > 0)
                        .then(|| std::time::Duration::from_secs(args.idle_evict_secs)),
                    history_retry: args.history_retry,
                    history_backlog: args
                        .history_backlog
                        .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                    claude: Some(args.agents.claude.config()),
                    codex: Some(args.agents.codex.config()),
                    copilot: Some(copilot),
                    acp_agents,
                    unattended: agenthost::unattended::UnattendedOptions {
                        policy: args.unattended,
                        grace: args
                            .unattended_grace
                            .unwrap_or(agenthost::unattended::DEFAULT_GRACE),
                        client_grace: args
                            .client_grace
                            .unwrap_or(agenthost::unattended::DEFAULT_CLIENT_GRACE),
                    },
                    enable: args.enable,
                    limits: args.limits.limits(),
                    allowed_origins: args.allow_origins,
                    web: args.web,
                    discovery: args.vscode_discovery.then_some(args.vscode_user_data_dir),
                    prices,
                    default_budget_usd: args.default_budget_usd,
                    notify: notify_options(
                        args.notify_command,
                        args.notify_args,
                        args.notify_webhook,
                        [
                            args.notify_after,
                            args.notify_input_after,
                            args.notify_debounce,
                        ],
                    ),
                }))
            })
        }
        Command::Sessions {
            command,
            all,
            json,
            since,
            connect,
            data_dir: dir,
        } => {
            init_logging("warn");
            match (command, connect) {
                (None, connect) if json => runtime
                    .block_on(agenthost::host::with_host(
                        connect,
                        || data_dir(dir),
                        "sessions",
                        |url| async move { agenthost::sessions::json(&url, all).await },
                    ))
                    .map(|text| print!("{text}")),
                (None, connect) if since.is_some() => {
                    let label = since.unwrap_or_default();
                    agenthost::sessions::since(&label).and_then(|start| {
                        runtime
                            .block_on(agenthost::host::with_host(
                                connect,
                                || data_dir(dir),
                                "sessions",
                                |url| async move {
                                    agenthost::sessions::spend(&url, &start, &label).await
                                },
                            ))
                            .map(|report| print!("{report}"))
                    })
                }
                (None, connect) => runtime
                    .block_on(agenthost::host::with_host(
                        connect,
                        || data_dir(dir),
                        "sessions",
                        |url| async move { agenthost::sessions::table(&url, all).await },
                    ))
                    .map(|table| print!("{table}")),
                (Some(command), connect) => match session_change(command) {
                    Ok((session, change)) => runtime
                        .block_on(agenthost::host::with_host(
                            connect,
                            || data_dir(dir),
                            "sessions",
                            |url| async move {
                                agenthost::sessions::change(&url, &session, change).await
                            },
                        ))
                        .map(|done| print!("{done}")),
                    Err(offline) => data_dir(dir).and_then(|dir| match offline {
                        SessionsCommand::Delete { session } => {
                            agenthost::sessions::delete(&dir, &session)
                        }
                        _ => agenthost::sessions::list(&dir),
                    }),
                },
            }
        }
        Command::Tokens {
            command,
            data_dir: dir,
        } => {
            init_logging("warn");
            data_dir(dir).and_then(|dir| match command {
                TokensCommand::Add { name, scope } => {
                    agenthost::tokens::add(&dir, &name, &scope).map(|token| println!("{token}"))
                }
                TokensCommand::List => agenthost::tokens::list(&dir).map(|t| print!("{t}")),
                TokensCommand::Revoke { name } => agenthost::tokens::revoke(&dir, &name),
            })
        }
        Command::Audit {
            limit,
            data_dir: dir,
        } => {
            init_logging("warn");
            data_dir(dir)
                .and_then(|dir| agenthost::tokens::audit(&dir, limit))
                .map(|table| print!("{table}"))
        }
        Command::MockModel(args) => {
            init_logging("info");
            let config = agenthost_testkit::MockModelConfig {
                command: args.command,
                thinking: args.thinking,
                escalate: args.escalate,
                fail_status: args.fail_status,
                fail_message: args.fail_message,
                workdir: args.workdir,
                event_delay: std::time::Duration::from_millis(args.delay_ms),
                log_path: args.log,
            };
            runtime.block_on(agenthost::mock_model::run(args.listen, config))
        }
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "agent-host", &mut std::io::stdout());
            Ok(())
        }
        Command::Map(args) => {
            init_logging("warn");
            agenthost::map::run(&args.provider, &args.file)
        }
        Command::Run(args) => {
            init_logging("warn");
            let outcome = args.resolve().and_then(|(target, options)| {
                runtime.block_on(agenthost::run::command(target, options))
            });
            return match outcome {
                Ok(agenthost::run::Outcome::Completed) => ExitCode::SUCCESS,
                Ok(agenthost::run::Outcome::Cancelled) => ExitCode::from(130),
                Ok(agenthost::run::Outcome::Failed(_)) => ExitCode::FAILURE,
                Err(error) => {
                    eprintln!("agent-host: {error}");
                    ExitCode::FAILURE
                }
            };
        }
        Command::Acp(args) => {
            init_logging("warn");
            let provider = args.provider();
            // A flag the host cannot start with is still an error the editor can show: the
            // agent speaks ACP and answers its session requests with it.
            let target = args.resolve();
            runtime.block_on(agenthost::editor::command(target, provider))
        }
        Command::Chat(args) => {
            init_logging("warn");
            args.resolve().and_then(|(target, options)| {
                runtime.block_on(agenthost::chat::command(target, options))
            })
        }
        Command::Attach(args) => {
            init_logging("warn");
            let options = agenthost::run::AttachOptions {
                json: args.answers.json,
                answers: args.answers.answers(),
                until_done: args.until_done,
                stall: agenthost::run::DEFAULT_STALL,
            };
            runtime
                .block_on(agenthost::run::attach_command(
                    &args.connect,
                    &args.session,
                    options,
                ))
                .map(|_| ())
        }
        Command::Diff(args) => {
            init_logging("warn");
            let diff = runtime.block_on(args.host.with_host("diff", |url| async move {
                agenthost::checkpoints::diff(
                    &url,
                    &args.session,
                    args.turn.as_deref(),
                    args.since.as_deref(),
                )
                .await
            }));
            diff.and_then(|diff| {
                let stdout = std::io::stdout();
                let style =
                    agenthost::term::Style::detect(std::io::IsTerminal::is_terminal(&stdout));
                agenthost::checkpoints::print_diff(&mut stdout.lock(), &diff.diff, style)
                    .map_err(|e| CliError::Usage(format!("cannot write the diff: {e}")))
            })
        }
        Command::Rollback(args) => {
            init_logging("warn");
            let turn = args.turn.clone();
            runtime
                .block_on(args.host.with_host("rollback", |url| async move {
                    agenthost::checkpoints::rollback(
                        &url,
                        &args.session,
                        &args.turn,
                        args.yes,
                        &mut std::io::stdout(),
                        |out| {
                            agenthost::checkpoints::ask_stdin(
                                out,
                                &format!("Roll back to the start of turn {turn}?"),
                            )
                        },
                    )
                    .await
                }))
                .map(|_| ())
        }
        Command::Demo(args) => {
            init_logging("warn");
            runtime.block_on(agenthost::demo::run(args.verbose))
        }
    };
    // Everything was flushed above: wait for stragglers only up to the exit deadline.
    agenthost::stop_runtime(runtime, agenthost::EXIT_DEADLINE);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agent-host: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `--default-budget-usd`: a number of US dollars ≥ 0.
fn parse_budget(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(budget) if budget.is_finite() && budget >= 0.0 => Ok(budget),
        _ => Err(format!(
            "`{text}` is not a budget: expected US dollars as a number ≥ 0, as in `5` or `0.50`"
        )),
    }
}

/// The notification flags of `serve`: `delays` are `--notify-after`, `--notify-input-after` and
/// `--notify-debounce`, each defaulting to a minute.
fn notify_options(
    command: Option<PathBuf>,
    args: Vec<String>,
    webhook: Option<String>,
    delays: [Option<std::time::Duration>; 3],
) -> agenthost::host::NotifyOptions {
    let defaults = agenthost_services::NotificationSettings::default();
    let [turn_after, input_after, debounce] = delays;
    agenthost::host::NotifyOptions {
        config: agenthost_services_notify::NotifyConfig {
            command,
            args,
            webhook,
        },
        settings: agenthost_services::NotificationSettings {
            input_after: input_after.unwrap_or(defaults.input_after),
            turn_after: turn_after.unwrap_or(defaults.turn_after),
            debounce: debounce.unwrap_or(defaults.debounce),
        },
    }
}

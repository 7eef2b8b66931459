//! Composing a host: providers, state, dispatcher, orchestrator, service, server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use agenthost_checkpoint::{CheckpointConfig, GitCheckpointService};
use agenthost_contributions::register_builtin_contributions;
use agenthost_dispatcher::{Dispatcher, LaunchKind, ServiceRegistry};
use agenthost_provider_acp::{AcpAgentConfig, AcpProvider};
use agenthost_provider_api::Provider;
use agenthost_provider_claude::{ClaudeConfig, ClaudeProvider};
use agenthost_provider_codex::{CodexConfig, CodexProvider};
use agenthost_provider_copilot::{CopilotConfig, CopilotProvider};
use agenthost_provider_scripted::{Script, ScriptedProvider};
use agenthost_server::{BoundServer, Host, Server, ServerConfig, Token};
use agenthost_service::{AgentService, HostParts};
use agenthost_service::{ServiceConfig, SessionService, root_state, state_for};
use agenthost_services::prices::PriceTable;
use agenthost_services::{
    ChangesetService, CheckpointChangesets, CheckpointService, ClientActionRequests, Configuration,
    HostConfiguration, WorktreeIsolation,
};
use agenthost_services::{
    DefaultLocalCommands, DefaultTitleController, HostState, LocalCommands, ProviderLocator,
    ServerDispatch, SessionDataStore, StateHostState, StateProviderLocator, StateServerDispatch,
    TelemetryReporter, TitleController, TracingTelemetry,
};
use agenthost_services::{
    DefaultToolCallTracker, DefaultTurnTracker, FileService, GitState, InMemoryConfiguration,
    LocalFiles, ToolCallTracker, TurnTracker,
};
use agenthost_services::{TurnStopRequests, TurnStopper, turn_stop_queue};
use agenthost_services_git::GitWorktrees;
use agenthost_services_git::{GitHubConfig, GitHubGitState};
use agenthost_services_store::StoreLedger;
use agenthost_services_store::StoreSessionData;
use agenthost_side_effects::{Orchestrator, OrchestratorConfig};
use agenthost_state::StateManager;
use agenthost_store::Store;

use crate::CliError;

/// Everything a host needs to start.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Address to listen on (port 0: the OS picks).
    pub listen: SocketAddr,
    /// Provider ids to advertise, exactly.
    pub providers: Vec<String>,
    /// Script for the scripted provider (its built-in script when `None`).
    pub script: Option<PathBuf>,
    /// Connection token; generated when `None`.
    pub token: Option<String>,
    /// Where sessions may work; the current directory when empty.
    pub roots: Vec<PathBuf>,
    /// How the host was launched.
    pub launch_kind: LaunchKind,
    /// Where the session database lives; `None` keeps sessions in memory only (the demo).
    pub data_dir: Option<PathBuf>,
    /// How long a session must be idle (no subscriber, no running turn, no action) before it is
    /// evicted from memory; it stays listed and restorable. `None` never evicts.
    pub idle_eviction: Option<std::time::Duration>,
    /// How often chat-history writes the session database refused (a full disk, a read-only
    /// file) are tried again; `None`: [`DEFAULT_HISTORY_RETRY`]. A graceful stop tries once
    /// more whatever this is.
    pub history_retry: Option<std::time::Duration>,
    /// How many refused chat-history writes may wait before new turns are refused with the
    /// cause; `None`: [`agenthost_store::DEFAULT_BACKLOG_LIMIT`].
    pub history_backlog: Option<usize>,
    /// How the `claude` provider launches Claude Code (`claude` on the `PATH`, defaults
    /// otherwise, when `None`).
    pub claude: Option<ClaudeConfig>,
    /// How the `codex` provider launches Codex (`codex` on the `PATH`, defaults otherwise, when
    /// `None`).
    pub codex: Option<CodexConfig>,
    /// How the `copilot` provider launches the Copilot CLI (`copilot` on the `PATH`, defaults
    /// otherwise, when `None`).
    pub copilot: Option<CopilotConfig>,
    /// The ACP agents (`--acp-agents`, `--acp-agent`): each is offered as provider `acp.NAME`;
    /// those whose models are not set are probed for them (see [`crate::acp`]).
    pub acp_agents: Vec<agenthost_provider_acp::AcpAgentConfig>,
    /// The unattended policy (`--unattended`, `--unattended-grace`; off by default).
    pub unattended: crate::unattended::UnattendedOptions,
    /// Root configuration flags turned on (`serve --enable markdownPlanRichLinks`); see
    /// [`ENABLE_FLAGS`].
    pub enable: Vec<String>,
    /// The price table the cost estimates use (`--prices FILE`); `None`: the built-in one.
    pub prices: Option<PriceTable>,
    /// The budget new sessions get (`serve --default-budget-usd`); `None`: no budget.
    pub default_budget_usd: Option<f64>,
    /// Where notifications go (`--notify-command`, `--notify-webhook`; nowhere by default) and
    /// when they are sent (`--notify-after`, `--notify-input-after`, `--notify-debounce`).
    pub notify: NotifyOptions,
}

/// `serve`'s notification flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NotifyOptions {
    /// The command and webhook.
    pub config: agenthost_services_notify::NotifyConfig,
    /// The delays and the debounce window.
    pub settings: agenthost_services::NotificationSettings,
}

impl HostOptions {
    /// A host on a free loopback port serving `roots` with the scripted agent (its built-in
    /// script), launched as `launch_kind`, no data directory and every other option at its
    /// default; set the rest with struct update syntax.
    pub fn scripted(roots: Vec<PathBuf>, launch_kind: LaunchKind) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            providers: vec!["scripted".into()],
            script: None,
            token: None,
            roots,
            launch_kind,
            data_dir: None,
            idle_eviction: None,
            history_retry: None,
            history_backlog: None,
            claude: None,
            codex: None,
            copilot: None,
            acp_agents: Vec::new(),
            unattended: Default::default(),
            enable: Vec::new(),
            prices: None,
            default_budget_usd: None,
            notify: NotifyOptions::default(),
        }
    }
}

/// The root configuration flags `serve --enable` turns on: the outgoing-turn guidance of the
/// `markdownPlanRichLinks` and `artifactTools` contributions.
pub const ENABLE_FLAGS: &[&str] = &[
    agenthost_contrib_markdown_plan_rich_links::MARKDOWN_PLAN_RICH_LINKS_FLAG,
    agenthost_contrib_artifact_tools::ARTIFACT_TOOLS_FLAG,
];

/// How often refused chat-history writes are tried again by default (`serve --history-retry`).
pub const DEFAULT_HISTORY_RETRY: std::time::Duration = std::time::Duration::from_millis(500);

/// The database file inside a data directory.
pub const DATABASE_FILE: &str = "agenthost.db";

/// Opens (creating it and its directory when missing) the store of a data directory, or an
/// in-memory store.
pub fn open_store(data_dir: Option<&std::path::Path>) -> Result<Store, CliError> {
    open_with(data_dir, Store::open)
}

/// [`open_store`] for a host in this process: the data directory stays locked for the rest of
/// the process (`agenthost_store::hold_exclusively`), and a directory another host process
/// holds is refused with a message naming `--connect`.
pub fn open_host_store(data_dir: Option<&std::path::Path>) -> Result<Store, CliError> {
    open_with(data_dir, Store::open_exclusive).map_err(|error| match error {
        CliError::Store(agenthost_store::StoreError::Locked { directory, .. }) => {
            CliError::Host(format!(
                "another agent-host process (a `serve`, say) is using the data directory {}: \
                 connect to it with --connect URL (the URL `agent-host serve` printed), stop it, \
                 or pass another --data-dir",
                directory.display()
            ))
        }
        other => other,
    })
}

fn open_with(
    data_dir: Option<&std::path::Path>,
    open: impl FnOnce(std::path::PathBuf) -> agenthost_store::Result<Store>,
) -> Result<Store, CliError> {
    match data_dir {
        None => Ok(Store::open_in_memory()?),
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                CliError::io(
                    format!("cannot create the data directory {}", dir.display()),
                    e,
                )
            })?;
            Ok(open(dir.join(DATABASE_FILE))?)
        }
    }
}

/// The default data directory: `$XDG_DATA_HOME/agenthost`, else `~/.local/share/agenthost`.
pub fn default_data_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".local/share"))
        })
        .map(|base| base.join("agenthost"))
}

/// The directory inside the data directory that is `COPILOT_HOME` of bring-your-own-key runs.
pub const COPILOT_HOME_DIR: &str = "copilot-home";

/// How the `copilot` provider launches: `configured`, or `copilot` on the `PATH` with defaults.
///
/// In bring-your-own-key mode without an explicit `COPILOT_HOME` (`--copilot-home`), the CLI's
/// state goes to `<data_dir>/copilot-home` (created by the provider when missing): the offline
/// run must neither read nor write the user's own `~/.copilot` (sign-in, sessions, settings).
/// Signed-in runs keep inheriting it, and so does a host without a data directory (the
/// in-memory demo).
pub fn copilot_config(
    configured: Option<&CopilotConfig>,
    data_dir: Option<&std::path::Path>,
) -> CopilotConfig {
    let mut config = configured
        .cloned()
        .unwrap_or_else(|| CopilotConfig::new("copilot"));
    if config.byok.is_some()
        && config.copilot_home.is_none()
        && let Some(data_dir) = data_dir
    {
        config.copilot_home = Some(data_dir.join(COPILOT_HOME_DIR));
    }
    config
}

/// Providers this build can run (and `acp.NAME` for each configured ACP agent).
const AVAILABLE: &[&str] = &["scripted", "claude", "codex", "copilot"];

/// The providers `options` name, then every ACP agent of `acp_agents` not named.
fn providers(
    options: &HostOptions,
    acp_agents: &[AcpAgentConfig],
) -> Result<Vec<Arc<dyn Provider>>, CliError> {
    if options.providers.is_empty() && acp_agents.is_empty() {
        return Err(CliError::usage("at least one --provider is needed"));
    }
    let acp_provider = |config: &AcpAgentConfig| -> Result<Arc<dyn Provider>, CliError> {
        Ok(Arc::new(
            AcpProvider::new(config.clone()).map_err(|error| CliError::Usage(error.0))?,
        ))
    };
    let mut providers: Vec<Arc<dyn Provider>> = Vec::new();
    for name in &options.providers {
        if providers.iter().any(|p| p.id() == name) {
            continue;
        }
        if let Some(agent) = name.strip_prefix(agenthost_provider_acp::PROVIDER_PREFIX) {
            let config = acp_agents
                .iter()
                .find(|config| config.name == agent)
                .ok_or_else(|| {
                    CliError::Usage(format!(
                        "no ACP agent `{agent}` is configured: describe it in --acp-agents FILE,                          or give --acp-agent {agent}=PROGRAM"
                    ))
                })?;
            providers.push(acp_provider(config)?);
            continue;
        }
        match name.as_str() {
            "scripted" => {
                let script = match &options.script {
                    Some(path) => Script::load(path)?,
                    None => Script::builtin(),
                };
                providers.push(Arc::new(ScriptedProvider::new(script)));
            }
            "claude" => {
                let config = options
                    .claude
                    .clone()
                    .unwrap_or_else(|| ClaudeConfig::new("claude"));
                providers.push(Arc::new(
                    ClaudeProvider::new(config).map_err(|error| CliError::Usage(error.0))?,
                ));
            }
            "codex" => {
                let config = options
                    .codex
                    .clone()
                    .unwrap_or_else(|| CodexConfig::new("codex"));
                providers.push(Arc::new(
                    CodexProvider::new(config).map_err(|error| CliError::Usage(error.0))?,
                ));
            }
            "copilot" => {
                let config = copilot_config(options.copilot.as_ref(), options.data_dir.as_deref());
                providers.push(Arc::new(
                    CopilotProvider::new(config).map_err(|error| CliError::Usage(error.0))?,
                ));
            }
            other => {
                return Err(CliError::Usage(format!(
                    "provider {other:?} is not available in this build (available: {}, and \
                     acp.NAME for an ACP agent given with --acp-agents or --acp-agent)",
                    AVAILABLE.join(", ")
                )));
            }
        }
    }
    for config in acp_agents {
        if !providers.iter().any(|p| p.id() == config.provider_id()) {
            providers.push(acp_provider(config)?);
        }
    }
    if options.script.is_some() && !options.providers.iter().any(|p| p == "scripted") {
        return Err(CliError::usage("--script needs --provider scripted"));
    }
    Ok(providers)
}

/// Carries out the contributions' requests to stop a turn, in order, on a task that ends with
/// the host (held weakly: it owns the contributions that ask).
fn serve_turn_stops(mut requests: TurnStopRequests, host: &Arc<AgentService>) {
    let host = Arc::downgrade(host);
    tokio::spawn(async move {
        while let Some(request) = requests.recv().await {
            let Some(host) = host.upgrade() else {
                break;
            };
            let (chat, turn) = (request.chat.clone(), request.turn_id.clone());
            if !host.stop_turn(request) {
                tracing::debug!(chat = %chat, turn, "the turn to stop had ended already");
            }
        }
    });
}

/// The services the built-in contributions are built from: the default implementation of each,
/// over the host's state.
fn services(
    state: &Arc<StateManager>,
    store: &Store,
    provider_ids: Vec<String>,
    roots: &[PathBuf],
) -> (ServiceRegistry, ClientActionRequests, TurnStopRequests) {
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn GitState>(Arc::new(GitHubGitState::new(GitHubConfig::from_env())))
        .insert::<dyn FileService>(Arc::new(LocalFiles))
        .insert::<dyn ProviderLocator>(Arc::new(StateProviderLocator::new(
            Arc::clone(state),
            provider_ids,
        )))
        .insert::<dyn HostState>(Arc::new(StateHostState::new(Arc::clone(state))))
        .insert::<dyn ServerDispatch>(Arc::new(StateServerDispatch::new(Arc::clone(state))))
        .insert::<dyn LocalCommands>(Arc::new(DefaultLocalCommands))
        .insert::<dyn TitleController>(Arc::new(DefaultTitleController::default()))
        .insert::<dyn TelemetryReporter>(Arc::new(TracingTelemetry))
        .insert::<dyn SessionDataStore>(Arc::new(StoreSessionData::new(store.clone())))
        .insert::<dyn agenthost_services::AuditLog>(Arc::new(
            agenthost_services_store::StoreAuditLog::new(store.clone()),
        ));
    services
        .insert::<dyn TurnTracker>(Arc::new(DefaultTurnTracker::default()))
        .insert::<dyn ToolCallTracker>(Arc::new(DefaultToolCallTracker::default()));
    let intake_requests = crate::unattended::register_services(&mut services);
    let (stops, stop_requests) = turn_stop_queue();
    services.insert::<dyn TurnStopper>(Arc::new(stops));
    // Per-turn checkpoints, their refs recorded in the session database, and the changesets
    // computed from them.
    let checkpoints: Arc<dyn CheckpointService> = Arc::new(GitCheckpointService::new(
        CheckpointConfig::default(),
        Arc::new(StoreLedger::new(Arc::new(store.clone()))),
    ));
    services
        .insert::<dyn ChangesetService>(Arc::new(CheckpointChangesets::new(
            Arc::clone(state),
            Arc::clone(&checkpoints),
        )))
        .insert::<dyn CheckpointService>(checkpoints)
        .insert::<dyn WorktreeIsolation>(Arc::new(GitWorktrees::new(Arc::new(
            StoreSessionData::new(store.clone()),
        ))));
    // Configuration values from the flags, working directories from the host state.
    if let Ok(values) = services.get::<InMemoryConfiguration>() {
        let host: Arc<dyn HostState> = Arc::new(StateHostState::new(Arc::clone(state)));
        // Canonical, as the session service compares them (a root that cannot be resolved is
        // refused there before anything runs).
        let roots = roots.iter().filter_map(|r| r.canonicalize().ok()).collect();
        services.insert::<dyn Configuration>(Arc::new(
            HostConfiguration::new(values, host).with_roots(roots),
        ));
    }
    (services, intake_requests, stop_requests)
}

/// Builds the host (providers, state, dispatcher, orchestrator, service) and binds its server;
/// call `serve` on the result. The server has the default limits of [`ServerConfig`].
pub async fn bind(options: HostOptions) -> Result<BoundServer, CliError> {
    bind_with(options, |_| {}).await
}

/// [`bind`], with `configure` applied to the server configuration (its limits: frame size,
/// subscriptions, dispatch rate, queues, connections) after `listen` and the token are set. The
/// configuration is validated when the server binds.
pub async fn bind_with(
    options: HostOptions,
    configure: impl FnOnce(&mut ServerConfig),
) -> Result<BoundServer, CliError> {
    let composed = compose(&options, Customize::default()).await?;
    let token = match &options.token {
        Some(token) => {
            Token::new(token.clone()).map_err(|e| CliError::Host(format!("--token: {e}")))?
        }
        None => Token::generate()?,
    };
    let mut config = ServerConfig::new(token);
    config.listen = options.listen;
    configure(&mut config);
    let host = Host::new(composed.service, composed.machine);
    let server = Server::bind(config, host).await?;
    crate::tokens::keep_current(composed.store, &server.credentials())?;
    Ok(server)
}

/// Adds services to a registry.
pub type AddServices = Box<dyn FnOnce(&mut ServiceRegistry) + Send>;

/// What [`compose`] lets its caller change.
#[derive(Default)]
pub struct Customize {
    /// Adds services to the registry before the dispatcher is built from it (a
    /// `dyn agenthost_dispatcher::HookTrace` recording the hooks a live host runs, say).
    pub services: Option<AddServices>,
    /// Registers the built-in contributions in this order (positions in their registration
    /// order, each once) instead of theirs.
    pub registration_order: Option<Vec<usize>>,
}

impl std::fmt::Debug for Customize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Customize")
            .field("services", &self.services.is_some())
            .field("registration_order", &self.registration_order)
            .finish()
    }
}

/// A composed host: its use cases, ready for a transport.
#[derive(Debug)]
pub struct Composed {
    /// The host's use cases (the server's [`Host`] speaks the protocol over them).
    pub service: Arc<AgentService>,
    /// The machine it runs on, for the diagnostics requests.
    pub machine: agenthost_protocol::machine::MachineFacts,
    /// Its session database.
    pub store: Store,
}

/// Builds the host's parts — providers, store, state, services, dispatcher with the built-in
/// contributions, orchestrator, session service — into its [`AgentService`], without a
/// transport ([`bind_with`] adds the server).
pub async fn compose(options: &HostOptions, customize: Customize) -> Result<Composed, CliError> {
    // Settings a provider refuses are reported before the data directory is touched.
    providers(options, &options.acp_agents)?;
    let store = open_host_store(options.data_dir.as_deref())?;
    let acp_agents = crate::acp::with_models(options.acp_agents.clone(), &store).await;
    let providers = providers(options, &acp_agents)?;
    let roots = if options.roots.is_empty() {
        vec![
            std::env::current_dir()
                .map_err(|e| CliError::Host(format!("cannot read the current directory: {e}")))?,
        ]
    } else {
        options.roots.clone()
    };
    let mut agents: Vec<_> = providers.iter().map(|p| p.agent_info()).collect();
    // The model limits agents reported in earlier runs (they are learned from turns).
    match store.host_value(agenthost_side_effects::MODEL_LIMITS_KEY) {
        Ok(Some(stored)) => match serde_json::from_str(&stored) {
            Ok(stored) => agenthost_provider_api::apply_stored_model_limits(&mut agents, &stored),
            Err(error) => tracing::info!(%error, "stored model limits ignored: not JSON"),
        },
        Ok(None) => {}
        Err(error) => tracing::warn!(%error, "stored model limits could not be read"),
    }
    let machine = machine_facts();
    let mut root = root_state(agents);
    root.meta = Some(agenthost_protocol::machine::root_meta(&machine));
    let state = state_for(&store, root)?;
    let provider_ids = providers.iter().map(|p| p.id().to_owned()).collect();
    let (mut registry, intake_requests, stop_requests) =
        services(&state, &store, provider_ids, &roots);
    let prices = options.prices.clone().unwrap_or_else(PriceTable::builtin);
    registry.insert::<PriceTable>(Arc::new(prices));
    let notifiers = options
        .notify
        .config
        .notifiers()
        .map_err(|e| CliError::Usage(e.to_string()))?;
    registry
        .insert::<dyn agenthost_services::Notifier>(Arc::new(notifiers))
        .insert::<agenthost_services::NotificationSettings>(Arc::new(options.notify.settings));
    if let Some(add) = customize.services {
        add(&mut registry);
    }
    let dispatcher = Dispatcher::new(registry);
    let unattended =
        crate::unattended::Wiring::new(dispatcher.services(), &options.unattended, intake_requests);
    if let Ok(configuration) = dispatcher.services().get::<InMemoryConfiguration>() {
        for flag in &options.enable {
            if !ENABLE_FLAGS.contains(&flag.as_str()) {
                return Err(CliError::Host(format!(
                    "unknown flag `{flag}` to enable: expected one of {}",
                    ENABLE_FLAGS.join(", ")
                )));
            }
            configuration.set_root(flag, Some(true.into()));
        }
    }
    let audit = dispatcher
        .services()
        .get::<dyn agenthost_services::AuditLog>()
        .ok();
    let contributions = match &customize.registration_order {
        None => register_builtin_contributions(&dispatcher),
        Some(order) => agenthost_contributions::register_builtins_in_order(&dispatcher, order)
            .ok_or_else(|| {
                CliError::usage("the registration order must list every built-in once")
            })?,
    }
    .map_err(|e| CliError::Host(format!("cannot register the built-in contributions: {e}")))?;
    let token_store = store.clone();
    let orchestrator = Orchestrator::start(
        Arc::clone(&state),
        dispatcher.clone(),
        providers,
        store.clone(),
        OrchestratorConfig {
            launch_kind: options.launch_kind.clone(),
            default_directory: roots[0].clone(),
            ..OrchestratorConfig::default()
        },
    )?;
    let service = SessionService::new(
        Arc::clone(&state),
        dispatcher,
        store,
        ServiceConfig {
            roots: roots.clone(),
            session_config: Some(crate::unattended::session_config(
                &options.unattended,
                options.default_budget_usd,
            )),
            resume_handles: Some(Arc::new(orchestrator.clone())),
            history_limit: options.history_backlog,
        },
    )?;
    let service = Arc::new(service);
    service.spawn_history_retries(options.history_retry.unwrap_or(DEFAULT_HISTORY_RETRY));
    let service = AgentService::new(HostParts {
        state,
        sessions: service,
        orchestrator,
        launch_kind: options.launch_kind.clone(),
        contributions,
        audit,
        subscriptions: unattended.tracker(),
        shutdown_write_timeout: agenthost_service::DEFAULT_SHUTDOWN_WRITE_TIMEOUT,
    });
    if let Some(limit) = options.idle_eviction {
        service.spawn_idle_eviction(limit);
    }
    unattended.serve_intake(&service, options.launch_kind.clone());
    serve_turn_stops(stop_requests, &service);
    Ok(Composed {
        service,
        machine,
        store: token_store,
    })
}

/// The machine this process runs on: the operating system, architecture, CPUs and memory
/// (`/proc/meminfo` where there is one; unknown elsewhere) and the proxy variables set.
fn machine_facts() -> agenthost_protocol::machine::MachineFacts {
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|line| line.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kib.checked_mul(1024)
        });
    let proxy_env = agenthost_protocol::machine::PROXY_VARIABLES
        .iter()
        .flat_map(|name| [name.to_string(), name.to_ascii_lowercase()])
        .filter_map(|name| std::env::var(&name).ok().map(|value| (name, value)))
        .collect();
    agenthost_protocol::machine::MachineFacts {
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        cpu_count: std::thread::available_parallelism()
            .ok()
            .and_then(|n| u64::try_from(n.get()).ok()),
        memory_bytes,
        proxy_env,
    }
}

/// The options of a host started in this process to answer one command (`sessions`, `diff`,
/// `rollback`) over the sessions stored in `data_dir`: loopback, the scripted provider only
/// (nothing runs a turn), the current directory as its root.
pub fn local_options(data_dir: PathBuf, command: &str) -> Result<HostOptions, CliError> {
    if !data_dir.join(DATABASE_FILE).exists() {
        return Err(CliError::Host(format!(
            "no session database in {} (expected {DATABASE_FILE}); pass --data-dir, or \
             --connect to a running host",
            data_dir.display()
        )));
    }
    let root = std::env::current_dir()
        .map_err(|e| CliError::Host(format!("cannot read the current directory: {e}")))?;
    Ok(HostOptions {
        data_dir: Some(data_dir),
        ..HostOptions::scripted(
            vec![root],
            LaunchKind::Embedded(format!("agent-host {command}")),
        )
    })
}

/// Runs `work` against a command's host — `--connect URL`, else a [`LocalHost`] over the
/// data directory `data_dir` gives, stopped again once `work` is done.
pub async fn with_host<T, F>(
    connect: Option<String>,
    data_dir: impl FnOnce() -> Result<PathBuf, CliError>,
    command: &str,
    work: impl FnOnce(String) -> F,
) -> Result<T, CliError>
where
    F: std::future::Future<Output = Result<T, CliError>>,
{
    match connect {
        Some(url) => work(url).await,
        None => {
            let local = LocalHost::start(local_options(data_dir()?, command)?).await?;
            let result = work(local.url().to_owned()).await;
            local.stop().await;
            result
        }
    }
}

/// A host served in this process for one command (`run`, `sessions`), until [`Self::stop`].
#[derive(Debug)]
pub struct LocalHost {
    url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<()>,
}

impl LocalHost {
    /// Binds a host with `options` and serves it in a task.
    pub async fn start(options: HostOptions) -> Result<Self, CliError> {
        let server = bind(options).await?;
        let url = server.url();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.serve(async {
            let _ = stopped.await;
        }));
        Ok(Self { url, stop, serving })
    }

    /// Its URL, token included.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Shuts it down (pending writes are flushed) and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.serving.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(enable: &[&str]) -> HostOptions {
        HostOptions {
            enable: enable.iter().map(|f| (*f).to_owned()).collect(),
            ..HostOptions::scripted(
                vec![std::env::temp_dir()],
                LaunchKind::Embedded("host-test".into()),
            )
        }
    }

    fn byok(config: CopilotConfig) -> CopilotConfig {
        CopilotConfig {
            byok: Some(agenthost_provider_copilot::ByokProvider {
                kind: "openai".into(),
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key: "dummy".into(),
            }),
            ..config
        }
    }

    #[test]
    fn copilot_config_keeps_byok_runs_out_of_the_users_copilot_home() {
        let data_dir = std::path::Path::new("/data/agenthost");
        let offline = byok(CopilotConfig::new("copilot"));
        let config = copilot_config(Some(&offline), Some(data_dir));
        assert_eq!(
            config.copilot_home.as_deref(),
            Some(data_dir.join("copilot-home").as_path())
        );
        let home = config
            .child_env(None)
            .into_iter()
            .find(|(name, _)| name == "COPILOT_HOME")
            .map(|(_, value)| value);
        assert_eq!(home, Some(data_dir.join("copilot-home").into_os_string()));
    }

    #[test]
    fn copilot_config_keeps_an_explicit_home_and_signed_in_runs_inherit() {
        let data_dir = std::path::Path::new("/data/agenthost");
        let mut explicit = byok(CopilotConfig::new("copilot"));
        explicit.copilot_home = Some("/elsewhere".into());
        let config = copilot_config(Some(&explicit), Some(data_dir));
        assert_eq!(
            config.copilot_home.as_deref(),
            Some(std::path::Path::new("/elsewhere"))
        );
        // Signed in (no BYOK): the user's own Copilot state, as before.
        let config = copilot_config(Some(&CopilotConfig::new("copilot")), Some(data_dir));
        assert_eq!(config.copilot_home, None);
        assert_eq!(copilot_config(None, Some(data_dir)).copilot_home, None);
        // No data directory (in-memory host): nothing to put it in.
        let offline = byok(CopilotConfig::new("copilot"));
        assert_eq!(copilot_config(Some(&offline), None).copilot_home, None);
    }

    #[tokio::test]
    async fn enable_refuses_an_unknown_flag_naming_the_known_ones() {
        let Err(error) = bind(options(&["telepathy"])).await else {
            panic!("an unknown flag was accepted");
        };
        assert!(error.to_string().contains("telepathy"), "{error}");
        assert!(error.to_string().contains("artifactTools"), "{error}");
        assert!(bind(options(ENABLE_FLAGS)).await.is_ok());
    }
}

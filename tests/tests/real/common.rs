// The shared part of the real-agent test binaries (`real_agents.rs`, `real_acp_agents.rs`),
// included by each: the agents, a place and a host for them, and the scenarios.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agenthost::host::{HostOptions, bind};
use agenthost_client::ahp::SubscriptionEvent;
use agenthost_client::{ChatView, Event, HostConnection};
use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use agenthost_provider_claude::ClaudeConfig;
use agenthost_provider_codex::{CodexConfig, ModelProvider};
use agenthost_provider_acp::AcpAgentConfig;
use agenthost_provider_copilot::{ByokProvider, CopilotConfig};
use agenthost_testkit::{MockModel, MockModelConfig};
use tokio::time::Instant;

/// The longest a test waits for the next event from the host.
const STALL: Duration = Duration::from_secs(60);

/// The agents under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    Claude,
    Codex,
    Copilot,
    /// `copilot --acp` through the ACP provider, as agent `acp.copilot`.
    AcpCopilot,
    /// Claude Code through `claude-agent-acp` 0.101.0 on Node 22, as agent `acp.claude`.
    AcpClaude,
    /// Codex through `codex-acp` 2.6.0 on Node 22, as agent `acp.codex`.
    AcpCodex,
}

impl Agent {
    fn provider(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
            Agent::AcpCopilot => "acp.copilot",
            Agent::AcpClaude => "acp.claude",
            Agent::AcpCodex => "acp.codex",
        }
    }

    /// Whether the agent is driven through the ACP provider.
    fn is_acp(self) -> bool {
        matches!(self, Agent::AcpCopilot | Agent::AcpClaude | Agent::AcpCodex)
    }

    /// The binary's variable, its path in the CLI cache and its npm package.
    fn install(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Agent::Claude => (
                "AGENTHOST_CLAUDE_BIN",
                "node_modules/.bin/claude",
                "@anthropic-ai/claude-code@2.1.328",
            ),
            Agent::Codex => (
                "AGENTHOST_CODEX_BIN",
                "node_modules/.bin/codex",
                "@openai/codex@0.169.0",
            ),
            Agent::AcpClaude => (
                "AGENTHOST_CLAUDE_ACP_JS",
                "acp/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js",
                "@agentclientprotocol/claude-agent-acp@0.101.0",
            ),
            Agent::AcpCodex => (
                "AGENTHOST_CODEX_ACP_JS",
                "acp/node_modules/@agentclientprotocol/codex-acp/dist/index.js",
                "@agentclientprotocol/codex-acp@2.6.0",
            ),
            Agent::Copilot | Agent::AcpCopilot => (
                "AGENTHOST_COPILOT_BIN",
                "node_modules/.bin/copilot",
                "@github/copilot@1.0.102",
            ),
        }
    }

    /// Where the CLI is, or `None` (after saying why) when the tests cannot run.
    fn binary(self) -> Option<PathBuf> {
        let (variable, name, package) = self.install();
        let explicit = std::env::var_os(variable).map(PathBuf::from);
        let found = explicit.or_else(|| {
            cli_cache()
                .map(|dir| dir.join(name))
                .filter(|path| path.exists())
        });
        if found.is_none() {
            let why = format!(
                "{package} was not found (set {variable}, or install it as `.ci/run` does: it \
                 looks for {name} in $AGENTHOST_CLI_CACHE, default ~/.cache/agenthost/clis)"
            );
            assert!(
                std::env::var_os("AGENTHOST_REQUIRE_CLIS").is_none(),
                "AGENTHOST_REQUIRE_CLIS is set but {why}"
            );
            eprintln!("skipped: {why}");
        }
        found
    }

    /// The mock model settings the scenarios need: Codex asks for approval only when the model
    /// requests sandbox escalation.
    fn mock(self, config: MockModelConfig) -> MockModelConfig {
        MockModelConfig {
            escalate: matches!(self, Agent::Codex | Agent::AcpCodex),
            ..config
        }
    }
}

/// Sets `set` on `agent`'s environment and removes `remove` from it.
fn with_environment<const N: usize>(
    agent: &mut AcpAgentConfig,
    set: [(&str, String); N],
    remove: &[&str],
) {
    for (name, value) in set {
        agent.cli.set_env(name, value);
    }
    agent.cli.env_remove = remove.iter().map(|name| (*name).to_owned()).collect();
}

/// The npm cache of the agent CLIs: `$AGENTHOST_CLI_CACHE`, else `~/.cache/agenthost/clis`.
fn cli_cache() -> Option<PathBuf> {
    std::env::var_os("AGENTHOST_CLI_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/agenthost/clis"))
        })
}

/// A cache path the ACP adapters need besides their own script (Node 22, Claude Code), or a
/// failure naming how to install it.
fn cached(relative: &str, package: &str) -> PathBuf {
    let path = cli_cache()
        .map(|dir| dir.join(relative))
        .filter(|path| path.exists());
    path.unwrap_or_else(|| {
        panic!("{relative} is missing from the CLI cache (`.ci/run` installs {package})")
    })
}

/// What outlives a host: the mock model, the working directory, the agent's home (its session
/// files) and the host's data directory.
struct Place {
    agent: Agent,
    binary: PathBuf,
    mock: MockModel,
    work: PathBuf,
    home: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl Place {
    async fn new(agent: Agent, mock: MockModelConfig) -> Option<Self> {
        let binary = agent.binary()?;
        let mock = MockModel::start(agent.mock(mock)).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        let home = dir.path().join("home");
        std::fs::create_dir(&work).unwrap();
        std::fs::create_dir(&home).unwrap();
        Some(Self {
            agent,
            binary,
            mock,
            work: work.canonicalize().unwrap(),
            home,
            data: dir.path().join("data"),
            _dir: dir,
        })
    }

    fn claude(&self) -> ClaudeConfig {
        let mut claude = ClaudeConfig::new(&self.binary)
            .with_env("ANTHROPIC_BASE_URL", self.mock.base_url())
            .with_env("ANTHROPIC_API_KEY", "dummy")
            .with_env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .with_env("DISABLE_TELEMETRY", "1")
            .with_env("HOME", &self.home);
        claude.cli.env_remove = vec!["ANTHROPIC_AUTH_TOKEN".into(), "CLAUDE_CONFIG_DIR".into()];
        claude.cli.start_timeout = Duration::from_secs(60);
        claude.cli.cancel_grace = Duration::from_secs(10);
        claude.cli.kill_grace = Duration::from_secs(2);
        claude
    }

    fn codex(&self) -> CodexConfig {
        let mut codex = CodexConfig::new(&self.binary)
            .with_env("MOCK_API_KEY", "dummy")
            .with_env("HOME", &self.home);
        codex.codex_home = Some(self.home.join("codex"));
        codex.cli.model = Some("gpt-5.5".into());
        codex.model_provider = Some(ModelProvider {
            id: "mock".into(),
            base_url: format!("{}/v1", self.mock.base_url()),
            wire_api: "responses".into(),
            env_key: "MOCK_API_KEY".into(),
        });
        // Approvals happen only on escalation out of a read-only sandbox.
        codex.sandbox = "read-only".into();
        codex.cli.env_remove = vec!["OPENAI_API_KEY".into(), "CODEX_API_KEY".into()];
        codex.cli.start_timeout = Duration::from_secs(60);
        codex.request_timeout = Duration::from_secs(60);
        codex.cli.cancel_grace = Duration::from_secs(10);
        codex.cli.kill_grace = Duration::from_secs(2);
        codex
    }

    fn copilot(&self) -> CopilotConfig {
        let mut copilot = CopilotConfig::new(&self.binary).with_env("HOME", &self.home);
        copilot.copilot_home = Some(self.home.join("copilot"));
        copilot.cli.model = Some("gpt-5.4".into());
        copilot.byok = Some(ByokProvider {
            kind: "openai".into(),
            base_url: format!("{}/v1", self.mock.base_url()),
            api_key: "dummy".into(),
        });
        copilot.cli.start_timeout = Duration::from_secs(60);
        copilot.request_timeout = Duration::from_secs(60);
        copilot.cli.cancel_grace = Duration::from_secs(10);
        copilot.cli.kill_grace = Duration::from_secs(2);
        copilot
    }

    /// The place's ACP agent, offline against the mock model.
    fn acp_agent(&self) -> AcpAgentConfig {
        let mut agent = match self.agent {
            Agent::AcpClaude => self.acp_claude(),
            Agent::AcpCodex => self.acp_codex(),
            _ => self.acp_copilot(),
        };
        agent.cli.start_timeout = Duration::from_secs(90);
        agent.request_timeout = Duration::from_secs(60);
        agent.cli.cancel_grace = Duration::from_secs(10);
        agent.cli.kill_grace = Duration::from_secs(2);
        agent
    }

    /// An ACP adapter script run by Node 22, as agent `name`.
    fn node_agent(&self, name: &str) -> AcpAgentConfig {
        let node = cached("node22/node_modules/.bin/node", "node@22");
        let mut agent = AcpAgentConfig::new(name, node);
        agent.cli.extra_args = vec![self.binary.to_string_lossy().into_owned()];
        agent.cli.set_env("HOME", &self.home);
        agent
    }

    /// `claude-agent-acp` over our Claude Code, in Claude's `default` permission mode (it
    /// starts in `auto`, which lets a classifier approve, when nothing says otherwise); as
    /// root it needs `IS_SANDBOX=1` to start at all.
    fn acp_claude(&self) -> AcpAgentConfig {
        let mut agent = self.node_agent("claude");
        let claude = cached("node_modules/.bin/claude", "@anthropic-ai/claude-code");
        std::fs::create_dir_all(self.home.join(".claude")).unwrap();
        std::fs::write(
            self.home.join(".claude/settings.json"),
            r#"{"permissions":{"defaultMode":"default"}}"#,
        )
        .unwrap();
        with_environment(
            &mut agent,
            [
                ("CLAUDE_CODE_EXECUTABLE", claude.to_string_lossy().into_owned()),
                ("ANTHROPIC_BASE_URL", self.mock.base_url()),
                ("ANTHROPIC_API_KEY", "dummy".into()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
                ("DISABLE_TELEMETRY", "1".into()),
                ("IS_SANDBOX", "1".into()),
            ],
            &["ANTHROPIC_AUTH_TOKEN", "CLAUDE_CONFIG_DIR"],
        );
        agent
    }

    /// `codex-acp` (its own Codex) on the mock model, in the `read-only` mode whose approvals
    /// go to the user (its default mode lets Codex's own reviewer decide).
    fn acp_codex(&self) -> AcpAgentConfig {
        let mut agent = self.node_agent("codex");
        let home = self.home.join("codex");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join("config.toml"),
            format!(
                "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\n\
                 name = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\n\
                 env_key = \"MOCK_API_KEY\"\n\n[analytics]\nenabled = false\n\n[features]\n\
                 plugins = false\nremote_plugin = false\napps = false\n",
                self.mock.base_url()
            ),
        )
        .unwrap();
        with_environment(
            &mut agent,
            [
                ("CODEX_HOME", home.to_string_lossy().into_owned()),
                ("MOCK_API_KEY", "dummy".into()),
                ("NO_BROWSER", "1".into()),
                ("INITIAL_AGENT_MODE", "read-only".into()),
            ],
            &["OPENAI_API_KEY", "CODEX_API_KEY"],
        );
        agent
    }

    /// `copilot --acp`, offline with bring-your-own-key variables, as ACP agent `copilot`.
    fn acp_copilot(&self) -> AcpAgentConfig {
        let mut agent = AcpAgentConfig::new("copilot", &self.binary);
        agent.cli.extra_args = ["--acp", "--no-auto-update", "--disable-client-telemetry"]
            .map(String::from)
            .to_vec();
        let home = self.home.join("copilot");
        with_environment(
            &mut agent,
            [
                ("COPILOT_OFFLINE", "true".into()),
                ("COPILOT_AUTO_UPDATE", "false".into()),
                ("COPILOT_PROVIDER_BASE_URL", format!("{}/v1", self.mock.base_url())),
                ("COPILOT_PROVIDER_API_KEY", "dummy".into()),
                ("COPILOT_MODEL", "gpt-5.4".into()),
                ("COPILOT_HOME", home.to_string_lossy().into_owned()),
                ("HOME", self.home.to_string_lossy().into_owned()),
            ],
            &["GH_TOKEN", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN"],
        );
        agent
    }
}

/// One host with the place's agent pointed at its mock model, and a client on the
/// default chat of session `<provider>:/s1`.
struct Run {
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<()>,
    work: PathBuf,
    client: HostConnection,
    chat: ChatUri,
    view: ChatView,
    events: agenthost_client::ahp::ClientEventStream,
}

/// The cost limits a host is started with: a price table and a default budget.
#[derive(Default)]
struct Limits {
    prices: Option<agenthost_services::prices::PriceTable>,
    budget: Option<f64>,
}

impl Run {
    /// A host on `place`; creates the session unless it is already stored there.
    async fn start(place: &Place, create: bool) -> Self {
        Self::start_with(place, create, Limits::default()).await
    }

    /// [`start`](Self::start), the host with `limits`.
    async fn start_with(place: &Place, create: bool, limits: Limits) -> Self {
        let server = bind(HostOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            providers: vec![place.agent.provider().into()],
            script: None,
            token: None,
            roots: vec![place.work.clone()],
            launch_kind: LaunchKind::Embedded("agenthost-e2e".into()),
            data_dir: Some(place.data.clone()),
            idle_eviction: None,
            history_retry: None,
            history_backlog: None,
            claude: (place.agent == Agent::Claude).then(|| place.claude()),
            codex: (place.agent == Agent::Codex).then(|| place.codex()),
            copilot: (place.agent == Agent::Copilot).then(|| place.copilot()),
            acp_agents: if place.agent.is_acp() {
                vec![place.acp_agent()]
            } else {
                Vec::new()
            },
            unattended: Default::default(),
            enable: Vec::new(),
            prices: limits.prices,
            default_budget_usd: limits.budget,
            notify: Default::default(),
        })
        .await
        .unwrap();
        let url = server.url();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.serve(async {
            let _ = stopped.await;
        }));
        let client = HostConnection::connect(&url, "claude-e2e").await.unwrap();
        let events = client.client().events();
        let provider = place.agent.provider();
        let session = SessionUri::with_provider(provider, SafeId::new("s1").unwrap()).unwrap();
        let chat = ChatUri::default_for(&session);
        if create {
            let directory = format!("file://{}", place.work.display());
            let (_, created) = client
                .create_session(provider, "s1", Some(directory))
                .await
                .unwrap();
            assert_eq!(created, chat);
        }
        let (view, _subscription) = client.open_chat(&chat).await.unwrap();
        Self {
            stop,
            serving,
            work: place.work.clone(),
            client,
            chat,
            view,
            events,
        }
    }

    /// Shuts the host down as `agent-host serve` does on Ctrl-C (its agents are stopped).
    async fn shut_down(self) {
        self.client.close().await;
        let _ = self.stop.send(());
        self.serving.await.unwrap();
    }

    /// A place with `mock` and a host on it; `None` when the CLI is missing.
    async fn fresh(agent: Agent, mock: MockModelConfig) -> Option<(Place, Self)> {
        let place = Place::new(agent, mock).await?;
        let run = Self::start(&place, true).await;
        Some((place, run))
    }

    /// The next events of the chat (at least one), failing after [`STALL`] of silence.
    async fn next(&mut self) -> Vec<Event> {
        loop {
            let event = tokio::time::timeout(STALL, self.events.recv())
                .await
                .expect("the host went silent")
                .expect("the connection closed");
            let SubscriptionEvent::Action(envelope) = event.event else {
                continue;
            };
            if envelope.channel != self.chat.as_str() {
                continue;
            }
            let events = self.view.apply(&envelope);
            if !events.is_empty() {
                return events;
            }
        }
    }

    /// Events until `stop` picks one; returns every event seen, the picked one last.
    async fn until(&mut self, mut stop: impl FnMut(&Event) -> bool) -> Vec<Event> {
        let mut seen = Vec::new();
        loop {
            for event in self.next().await {
                let done = stop(&event);
                seen.push(event);
                if done {
                    return seen;
                }
            }
        }
    }

    async fn confirmation(&mut self) -> String {
        let seen = self
            .until(|e| {
                matches!(
                    e,
                    Event::ConfirmationNeeded { .. } | Event::TurnEnded { .. }
                )
            })
            .await;
        match seen.last() {
            Some(Event::ConfirmationNeeded { tool_call_id, .. }) => tool_call_id.clone(),
            other => panic!("expected a confirmation, got {other:?} after {seen:?}"),
        }
    }

    async fn turn_end(&mut self) -> (Vec<Event>, Option<String>, bool) {
        let seen = self.until(|e| matches!(e, Event::TurnEnded { .. })).await;
        match seen.last() {
            Some(Event::TurnEnded {
                error, cancelled, ..
            }) => {
                let (error, cancelled) = (error.clone(), *cancelled);
                (seen, error, cancelled)
            }
            _ => unreachable!("until returns the picked event last"),
        }
    }
}

/// The model calls of the conversation itself: those offering the agent's tools. Not the side
/// requests some agents make of the model on their own (a session title, a summary), which
/// offer none — the mock answers them `side_text`, or `final_text` when they quote the tool
/// result of the conversation so far.
fn conversation_requests(place: &Place) -> Vec<agenthost_testkit::RequestRecord> {
    place
        .mock
        .requests()
        .into_iter()
        .filter(agenthost_testkit::RequestRecord::is_conversation_call)
        .collect()
}

fn tool_results(events: &[Event]) -> Vec<bool> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolFinished { success, .. } => Some(*success),
            _ => None,
        })
        .collect()
}

/// Processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|cmdline| {
                    String::from_utf8_lossy(&cmdline)
                        .replace('\0', " ")
                        .contains(needle)
                })
                .unwrap_or(false)
        })
        .collect()
}

async fn poll(what: &str, deadline: Duration, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + deadline;
    while !check() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

async fn an_approved_tool_call_creates_the_file(agent: Agent) {
    let Some((place, mut run)) = Run::fresh(agent, MockModelConfig::default()).await else {
        return;
    };
    run.client
        .start_turn(&run.chat, "t1", "Create out.txt containing hi")
        .await
        .unwrap();
    let tool = run.confirmation().await;
    assert_eq!(read(&run.work.join("out.txt")), None, "ran before approval");
    run.client
        .confirm_tool(&run.chat, "t1", &tool, true)
        .await
        .unwrap();
    let (events, error, cancelled) = run.turn_end().await;
    assert_eq!((error, cancelled), (None, false), "{events:?}");
    assert_eq!(tool_results(&events), vec![true], "{events:?}");
    assert_eq!(read(&run.work.join("out.txt")).as_deref(), Some("hi\n"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Text(t) if t.contains("Done"))),
        "the final answer streams into the chat: {events:?}"
    );
    let calls = conversation_requests(&place);
    assert_eq!(
        calls.len(),
        2,
        "one call for the tool, one for the answer: {:#?}",
        calls
            .iter()
            .map(|record| (&record.decision, &record.summary))
            .collect::<Vec<_>>()
    );
    // The agent reported its model's context window: the host's model list carries it (what
    // VS Code's model picker shows), under the model entry the session runs on.
    let root: serde_json::Value = run
        .client
        .client()
        .request("subscribe", serde_json::json!({ "channel": "ahp-root://" }))
        .await
        .unwrap();
    // (An ACP agent lists the models it offers; the session runs on its current one.)
    let models = root["snapshot"]["state"]["agents"][0]["models"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        models
            .iter()
            .any(|model| model["maxContextWindow"].as_u64().is_some_and(|n| n > 0)),
        "no context window learned from the agent: {root}"
    );
}

/// The session switched to plan mode (VS Code's Agent Mode picker): the same request that
/// writes `out.txt` otherwise changes nothing — the agent runs in its own plan mode and the
/// host denies every confirmation it still asks for — and the turn still ends.
async fn in_plan_mode_the_agent_changes_nothing(agent: Agent) {
    let Some((_place, mut run)) = Run::fresh(agent, MockModelConfig::default()).await else {
        return;
    };
    let session = SessionUri::with_provider(agent.provider(), SafeId::new("s1").unwrap()).unwrap();
    let plan: agenthost_protocol::StateAction = serde_json::from_value(
        serde_json::json!({ "type": "session/configChanged", "config": { "mode": "plan" } }),
    )
    .unwrap();
    run.client
        .client()
        .dispatch(session.to_string(), plan)
        .await
        .unwrap();
    run.client
        .start_turn(&run.chat, "t1", "Create out.txt containing hi")
        .await
        .unwrap();
    // Confirmations are left to the host (it denies them in plan mode).
    let (events, _error, cancelled) = run.turn_end().await;
    assert!(!cancelled, "{events:?}");
    assert_eq!(
        read(&run.work.join("out.txt")),
        None,
        "the agent changed a file in plan mode: {events:?}"
    );
    assert!(
        tool_results(&events).iter().all(|ran| !ran),
        "a tool ran successfully in plan mode: {events:?}"
    );
}

async fn a_denied_tool_call_does_not_run_and_the_turn_still_completes(agent: Agent) {
    let Some((place, mut run)) = Run::fresh(agent, MockModelConfig::default()).await else {
        return;
    };
    run.client
        .start_turn(&run.chat, "t1", "Create out.txt containing hi")
        .await
        .unwrap();
    let tool = run.confirmation().await;
    run.client
        .confirm_tool(&run.chat, "t1", &tool, false)
        .await
        .unwrap();
    let (events, error, cancelled) = run.turn_end().await;
    assert_eq!(tool_results(&events), vec![false], "{events:?}");
    assert_eq!(read(&run.work.join("out.txt")), None);
    if agent == Agent::AcpCodex {
        // codex-acp offers only "No, and tell Codex what to do differently" for this command:
        // Codex cancels its turn on it, which the host shows as the agent's own cancel.
        assert_eq!((error, cancelled), (None, true), "{events:?}");
        return;
    }
    assert_eq!((error, cancelled), (None, false), "{events:?}");
    if agent == Agent::AcpCopilot {
        // Copilot's ACP mode ends the turn at a rejection without asking the model again.
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Text(t) if t.contains("cancelled by user"))),
            "the rejection is said in the chat: {events:?}"
        );
        assert_eq!(
            conversation_requests(&place).len(),
            1,
            "the model was not asked again"
        );
        return;
    }
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Text(t) if t.contains("did not run"))),
        "the model was told the tool was denied: {events:?}"
    );
}

/// A session with a budget of 5 cents, on a model whose price makes the first model call cost
/// 10 cents (the mock model reports 100 input tokens a call): the budget stops the turn after
/// that call — no final answer, and for the agents that report a call's usage as it ends no
/// second call and no tool run — and refuses the next turn.
async fn a_budget_stops_the_turn_after_the_call_that_spent_it(agent: Agent) {
    let Some(place) = Place::new(agent, MockModelConfig::default()).await else {
        return;
    };
    let mut prices = agenthost_services::prices::PriceTable::empty();
    // Each agent's model as it reports it (Claude Code's default, and what the tests set).
    for model in ["claude-opus-5-5", "gpt-5.5", "gpt-5.4"] {
        prices.insert(
            model,
            agenthost_services::prices::PriceEntry {
                price: agenthost_services::prices::ModelPrice {
                    input: 1000.0,
                    cached_input: 1000.0,
                    cache_write: None,
                    output: 1000.0,
                },
                source: "the test".into(),
                as_of: None,
            },
        );
    }
    let limits = Limits {
        prices: Some(prices),
        budget: Some(0.05),
    };
    let mut run = Run::start_with(&place, true, limits).await;
    run.client
        .start_turn(&run.chat, "t1", "Create out.txt containing hi")
        .await
        .unwrap();
    // A confirmation is approved: Codex reports a call's usage only once the tool it asked for
    // has run, so its budget stop comes after the approval.
    let seen = loop {
        let seen = run
            .until(|e| matches!(e, Event::ConfirmationNeeded { .. } | Event::TurnEnded { .. }))
            .await;
        match seen.last() {
            Some(Event::ConfirmationNeeded { tool_call_id, .. }) => run
                .client
                .confirm_tool(&run.chat, "t1", tool_call_id, true)
                .await
                .unwrap(),
            _ => break seen,
        }
    };
    let Some(Event::TurnEnded {
        error: Some(error),
        cancelled: false,
        ..
    }) = seen.last()
    else {
        panic!("the turn was not stopped by its budget: {seen:?}");
    };
    assert!(
        error.contains("The session's budget of $0.0500 is spent"),
        "{error}"
    );
    assert!(
        !seen.iter().any(|e| matches!(e, Event::Text(t) if t.contains("Done"))),
        "the turn went on to its final answer: {seen:?}"
    );
    let calls = conversation_requests(&place);
    let decisions: Vec<_> = calls.iter().map(|r| &r.decision).collect();
    if matches!(agent, Agent::Codex | Agent::AcpCodex) {
        // The second call may already be on its way when the usage of the first arrives.
        assert!(calls.len() <= 2, "{decisions:#?}");
    } else {
        assert_eq!(calls.len(), 1, "stopped after the first model call: {decisions:#?}");
        assert_eq!(read(&run.work.join("out.txt")), None, "the tool ran");
    }
    let before = calls.len();
    // The next turn is refused, naming the budget.
    run.client
        .start_turn(&run.chat, "t2", "Try again")
        .await
        .unwrap();
    let (_, error, _) = run.turn_end().await;
    assert!(
        error.is_some_and(|e| e.contains("budget of $0.0500 is spent")),
        "the next turn ran"
    );
    assert_eq!(conversation_requests(&place).len(), before);
    run.shut_down().await;
}

async fn an_api_error_surfaces_as_a_chat_error(agent: Agent) {
    let config = MockModelConfig {
        fail_status: Some(400),
        fail_message: "mock refuses this request".into(),
        ..MockModelConfig::default()
    };
    let Some((_place, mut run)) = Run::fresh(agent, config).await else {
        return;
    };
    run.client
        .start_turn(&run.chat, "t1", "Create out.txt containing hi")
        .await
        .unwrap();
    let (events, error, cancelled) = run.turn_end().await;
    assert!(!cancelled);
    if matches!(agent, Agent::AcpCopilot | Agent::AcpCodex) {
        // Copilot's ACP mode and codex-acp report a model error as message text and end the
        // turn with `end_turn`: ACP carries no error for the host to map, so the text shows.
        assert_eq!(error, None, "{events:?}");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Text(t) if t.contains("mock refuses this request"))),
            "the error shows in the chat: {events:?}"
        );
        return;
    }
    let error = error.unwrap_or_else(|| panic!("the turn should fail: {events:?}"));
    assert!(error.contains("mock refuses this request"), "{error}");
    assert!(tool_results(&events).is_empty());
}

async fn cancelling_mid_turn_stops_the_running_tool_and_the_conversation_goes_on(agent: Agent) {
    // A tool that runs until it is killed, under a name no other process on the machine has.
    // (Claude Code refuses a long `sleep`, so it follows a file instead.)
    let marker = format!("started-{}.txt", std::process::id());
    let config = MockModelConfig {
        command: format!("touch {marker} && tail -f {marker} && echo late > late.txt"),
        ..MockModelConfig::default()
    };
    let Some((_place, mut run)) = Run::fresh(agent, config).await else {
        return;
    };
    let started = Instant::now();
    run.client
        .start_turn(&run.chat, "t1", "Create late.txt")
        .await
        .unwrap();
    let tool = run.confirmation().await;
    run.client
        .confirm_tool(&run.chat, "t1", &tool, true)
        .await
        .unwrap();
    poll("the tool runs", Duration::from_secs(30), || {
        !processes_with(&marker).is_empty()
    })
    .await;
    let elapsed = i64::try_from(started.elapsed().as_millis()).unwrap();
    run.client
        .cancel_turn(&run.chat, "t1", elapsed)
        .await
        .unwrap();
    let (events, _, cancelled) = run.turn_end().await;
    assert!(cancelled, "{events:?}");
    poll("the tool process is gone", Duration::from_secs(15), || {
        processes_with(&marker).is_empty()
    })
    .await;
    assert_eq!(read(&run.work.join("late.txt")), None);
    // The conversation survives the cancel: the next turn runs to completion.
    run.client
        .start_turn(&run.chat, "t2", "Are you still there?")
        .await
        .unwrap();
    let (events, error, cancelled) = run.turn_end().await;
    assert_eq!((error, cancelled), (None, false), "{events:?}");
}

fn after_a_host_restart_the_next_turn_resumes_the_agent_conversation(agent: Agent) {
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    };
    // The mock model outlives both hosts on a runtime of its own.
    let model_runtime = runtime();
    let Some(place) = model_runtime.block_on(Place::new(agent, MockModelConfig::default())) else {
        return;
    };
    // First host: one approved turn, then the host shuts down (stopping its agent).
    let first = runtime();
    first.block_on(async {
        let mut run = Run::start(&place, true).await;
        run.client
            .start_turn(&run.chat, "t1", "Create out.txt containing hi")
            .await
            .unwrap();
        let tool = run.confirmation().await;
        run.client
            .confirm_tool(&run.chat, "t1", &tool, true)
            .await
            .unwrap();
        let (events, error, _) = run.turn_end().await;
        assert_eq!(error, None, "{events:?}");
        run.shut_down().await;
    });
    drop(first);
    let before = conversation_requests(&place).len();
    // Second host on the same data directory: the chat comes back from the store and the next
    // turn continues Claude's own conversation (`--resume`), so the model sees the first turn.
    runtime().block_on(async {
        let mut run = Run::start(&place, false).await;
        assert_eq!(
            run.view.state().turns.len(),
            1,
            "the first turn is restored"
        );
        run.client
            .start_turn(&run.chat, "t2", "Is it there?")
            .await
            .unwrap();
        let seen = run
            .until(|e| {
                matches!(
                    e,
                    Event::TurnEnded { .. } | Event::ConfirmationNeeded { .. }
                )
            })
            .await;
        assert!(
            matches!(seen.last(), Some(Event::TurnEnded { error: None, .. })),
            "a resumed conversation has the tool result and answers at once: {seen:?}"
        );
    });
    // The model saw the first turn's tool result: only a resumed conversation has it.
    let requests = conversation_requests(&place);
    let resumed = &requests[before..];
    assert!(!resumed.is_empty());
    for record in resumed {
        assert_eq!(record.decision, "final_text", "{:?}", record.summary);
    }
    if agent == Agent::Claude {
        // Claude names its session in a header: the same one continues.
        let session_of = |record: &agenthost_testkit::RequestRecord| {
            record.headers.get("x-claude-code-session-id").cloned()
        };
        let first_session = session_of(&requests[0]);
        assert!(first_session.is_some(), "{:?}", requests[0].headers);
        for record in resumed {
            assert_eq!(session_of(record), first_session, "the same Claude session");
        }
    }
}


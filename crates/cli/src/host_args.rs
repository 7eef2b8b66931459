//! The flags of the commands that talk to a host as a client (`run`, `chat`, `acp`), and of the host
//! they start in this process when not given `--connect`.

use std::net::SocketAddr;
use std::path::PathBuf;

use agenthost::CliError;

use crate::agent_args::AgentFlags;

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// What to ask the agent.
    prompt: String,
    #[command(flatten)]
    conversation: ConversationArgs,
    #[command(flatten)]
    answers: AnswerArgs,
}

/// `agent-host chat`'s flags: `run`'s, without a prompt or `--json`.
#[derive(Debug, clap::Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    conversation: ConversationArgs,
    /// Approve every confirmation without asking.
    #[arg(long, conflicts_with = "no")]
    yes: bool,
    /// Deny every confirmation without asking.
    #[arg(long)]
    no: bool,
}

/// Which session a terminal conversation (`run`, `chat`) talks in, and where its host is.
#[derive(Debug, clap::Args)]
pub(crate) struct ConversationArgs {
    /// The agent of a new session (claude, codex, copilot, scripted, or acp.NAME for an ACP
    /// agent given with --acp-agents or --acp-agent; default: claude). With --session or
    /// --continue, the session's own agent.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Go on with this existing session (its default chat) instead of starting one; a stored
    /// session is restored and its agent resumes its own conversation.
    #[arg(long, value_name = "URI", conflicts_with = "resume_latest")]
    session: Option<String>,
    /// Go on with the most recently active session in this folder (--cwd).
    #[arg(long = "continue", id = "resume_latest")]
    resume_latest: bool,
    /// With --session or --continue: the chat of the session to talk in (default: its
    /// default chat).
    #[arg(long, value_name = "URI")]
    chat: Option<String>,
    /// The model, when not the agent's default.
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// The folder the agent works in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Use a running host (the URL `agent-host serve` printed, token included) instead of
    /// starting one in this process: its sessions are shared with other clients, whose turns
    /// `chat` shows as they happen.
    #[arg(long, value_name = "URL")]
    connect: Option<String>,
    #[command(flatten)]
    host: LocalHostArgs,
}

/// How a terminal client (`run`, `attach`) shows the conversation and answers confirmations.
#[derive(Debug, clap::Args)]
pub(crate) struct AnswerArgs {
    /// Print AHP action envelopes as JSON lines instead of the rendered conversation.
    #[arg(long)]
    pub(crate) json: bool,
    /// Approve every confirmation without asking.
    #[arg(long, conflicts_with = "no")]
    yes: bool,
    /// Deny every confirmation without asking (without a terminal, the default).
    #[arg(long)]
    no: bool,
}

impl AnswerArgs {
    /// The answering policy, asking on stdin when it is a terminal.
    pub(crate) fn answers(&self) -> agenthost::run::Answers {
        agenthost::run::Answers::from_flags(
            self.yes,
            self.no,
            std::io::IsTerminal::is_terminal(&std::io::stdin()),
        )
    }
}

/// The agent `acp` starts its host with when not told.
const DEFAULT_EDITOR_PROVIDER: &str = "claude";

#[derive(Debug, clap::Args)]
pub(crate) struct EditorArgs {
    /// The agent new sessions use (claude, codex, copilot, scripted, or acp.NAME for an ACP
    /// agent given with --acp-agents or --acp-agent; default: claude, or with --connect the
    /// first agent the host offers).
    #[arg(long, value_name = "NAME")]
    pub(crate) provider: Option<String>,
    /// Use a running host (the URL `agent-host serve` printed, token included) instead of
    /// starting one in this process: its sessions are then shared with VS Code and the CLI.
    #[arg(long, value_name = "URL")]
    connect: Option<String>,
    /// A directory sessions may work in (repeatable; default: the current directory). An
    /// editor's `session/new` outside them is refused.
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    #[command(flatten)]
    host: LocalHostArgs,
}

impl EditorArgs {
    /// The agent new sessions use (`None`: the connected host's first).
    pub(crate) fn provider(&self) -> Option<String> {
        match (&self.provider, &self.connect) {
            (Some(provider), _) => Some(provider.clone()),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_EDITOR_PROVIDER.to_owned()),
        }
    }

    /// Where the host is.
    pub(crate) fn resolve(self) -> Result<agenthost::run::Target, CliError> {
        if let Some(url) = self.connect {
            return Ok(agenthost::run::Target::Connect(url));
        }
        let roots =
            if self.roots.is_empty() {
                vec![std::env::current_dir().map_err(|e| {
                    CliError::Usage(format!("cannot read the current directory: {e}"))
                })?]
            } else {
                self.roots
            };
        let roots = roots
            .into_iter()
            .map(|root| {
                root.canonicalize().map_err(|e| {
                    CliError::Usage(format!("the root {} is not usable: {e}", root.display()))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;

        let provider = self.provider.as_deref().unwrap_or(DEFAULT_EDITOR_PROVIDER);
        let host = self
            .host
            .options(provider, roots, "agent-host acp", Default::default())?;
        Ok(agenthost::run::Target::Start(Box::new(host)))
    }
}

/// What a host started in this process (`run`, `acp`) is made of.
#[derive(Debug, clap::Args)]
pub(crate) struct LocalHostArgs {
    /// Script for the scripted provider (JSON; see crates/providers/scripted/README.md).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Where the session database lives (as for `serve`).
    #[arg(long, env = "AGENT_HOST_DATA_DIR")]
    data_dir: Option<PathBuf>,
    #[command(flatten)]
    agents: AgentFlags,
}

impl LocalHostArgs {
    /// The options of a host offering `provider`, with `roots`, for `command`; the provider's
    /// CLI must be installed.
    fn options(
        self,
        provider: &str,
        roots: Vec<PathBuf>,
        command: &str,
        unattended: agenthost::unattended::UnattendedOptions,
    ) -> Result<agenthost::host::HostOptions, CliError> {
        let program = match provider {
            "claude" => Some(self.agents.claude.claude_bin.clone()),
            "codex" => Some(self.agents.codex.codex_bin.clone()),
            "copilot" => Some(self.agents.copilot.copilot_bin.clone()),
            _ => None,
        };
        if let Some(program) = program {
            agenthost::run::check_provider_cli(provider, &program)?;
        }
        let prices = self.agents.prices()?;
        let copilot = self.agents.copilot.config()?;
        let acp_agents = self.agents.acp.agents()?;
        Ok(agenthost::host::HostOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            providers: vec![provider.to_owned()],
            script: self.script,
            token: None,
            roots,
            launch_kind: agenthost_dispatcher::LaunchKind::Embedded(command.into()),
            data_dir: Some(data_dir(self.data_dir)?),
            idle_eviction: None,
            history_retry: None,
            history_backlog: None,
            claude: Some(self.agents.claude.config()),
            codex: Some(self.agents.codex.config()),
            copilot: Some(copilot),
            acp_agents,
            unattended,
            enable: Vec::new(),
            prices,
            default_budget_usd: None,
            notify: Default::default(),
        })
    }
}

impl RunArgs {
    /// The options and where the host is.
    pub(crate) fn resolve(
        self,
    ) -> Result<(agenthost::run::Target, agenthost::run::RunOptions), CliError> {
        let answers = self.answers.answers();
        self.conversation
            .resolve(self.prompt, self.answers.json, answers, "agent-host run")
    }
}

impl ChatArgs {
    /// The options and where the host is (as `run` finds them).
    pub(crate) fn resolve(
        self,
    ) -> Result<(agenthost::run::Target, agenthost::chat::ChatOptions), CliError> {
        let answers = match (self.yes, self.no) {
            (true, _) => agenthost::run::Answers::ApproveAll,
            (_, true) => agenthost::run::Answers::DenyAll,
            // Without a terminal the next line of the pipe answers, as a typed one does.
            _ => agenthost::run::Answers::Ask,
        };
        // The lines typed are kept with the sessions (and over --connect, with this user's).
        let history = data_dir(self.conversation.host.data_dir.clone())
            .ok()
            .map(|dir| dir.join("chat-history"));
        let (target, options) =
            self.conversation
                .resolve(String::new(), false, answers, "agent-host chat")?;
        Ok((
            target,
            agenthost::chat::ChatOptions {
                provider: options.provider,
                model: options.model,
                cwd: options.cwd,
                resume: options.resume,
                chat: options.chat,
                answers,
                history,
            },
        ))
    }
}

impl ConversationArgs {
    /// `run`'s options for `prompt`, and where the host is: `--connect`, or one started in this
    /// process for `command` (with `--session` / `--continue`, for the session's agent and
    /// folders, read from the data directory first).
    fn resolve(
        self,
        prompt: String,
        json: bool,
        answers: agenthost::run::Answers,
        command: &str,
    ) -> Result<(agenthost::run::Target, agenthost::run::RunOptions), CliError> {
        let cwd = match self.cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir()
                .map_err(|e| CliError::Usage(format!("cannot read the current directory: {e}")))?,
        };
        if self.chat.is_some() && self.session.is_none() && !self.resume_latest {
            return Err(CliError::usage(
                "--chat names a chat of an existing session: give --session URI or --continue",
            ));
        }
        let resume = match (self.session, self.resume_latest) {
            (Some(uri), _) => Some(agenthost::run::Resume::Session(uri)),
            (None, true) => Some(agenthost::run::Resume::Latest),
            (None, false) => None,
        };
        let mut options = agenthost::run::RunOptions {
            provider: self.provider.clone().unwrap_or_else(|| "claude".to_owned()),
            model: self.model,
            cwd: cwd.clone(),
            prompt,
            json,
            answers,
            stall: agenthost::run::DEFAULT_STALL,
            resume,
            chat: self.chat,
        };
        if let Some(url) = self.connect {
            return Ok((agenthost::run::Target::Connect(url), options));
        }
        let root = cwd.canonicalize().map_err(|e| {
            CliError::Usage(format!("the folder {} is not usable: {e}", cwd.display()))
        })?;
        let mut roots = vec![root.clone()];
        if let Some(resume) = &options.resume {
            // The host in this process serves the session's agent, in the session's folders:
            // which session, read from the data directory before the host starts.
            let dir = data_dir(self.host.data_dir.clone())?;
            let record = agenthost::run::stored_session(&dir, resume, &root)?;
            if let Some(asked) = &self.provider
                && *asked != record.provider
            {
                return Err(CliError::Usage(format!(
                    "{} runs {}, not {asked}: leave out --provider to continue it",
                    record.uri, record.provider
                )));
            }
            options.provider = record.provider.clone();
            options.resume = Some(agenthost::run::Resume::Session(record.uri.to_string()));
            for directory in &record.working_directories {
                if let Ok(path) = agenthost_protocol::uri::file_uri_to_path(directory)
                    && !roots.contains(&path)
                {
                    roots.push(path);
                }
            }
        }
        let host = self
            .host
            .options(&options.provider, roots, command, Default::default())?;
        Ok((agenthost::run::Target::Start(Box::new(host)), options))
    }
}

pub(crate) fn data_dir(given: Option<PathBuf>) -> Result<PathBuf, CliError> {
    given
        .or_else(agenthost::host::default_data_dir)
        .ok_or_else(|| CliError::usage("no data directory: pass --data-dir (HOME is not set)"))
}

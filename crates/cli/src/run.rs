//! `agent-host run "PROMPT"`: one turn with an agent in a folder, from a terminal — over the
//! host's real protocol (`agenthost-client`), with a host started in-process or one given with
//! `--connect`. By default the turn starts a new session; `--session URI` sends it to an
//! existing one (`--chat` for another of its chats) and `--continue` to the most recently
//! active session in the folder — a stored session is restored, and its agent resumes its own
//! conversation.
//!
//! The conversation streams through [`crate::term::Renderer`] (or, with `--json`, as one AHP
//! action envelope per line); subagents are followed and indented; a tool call that waits for
//! confirmation shows its command or diff and asks `approve …? [y/N/a]` on a terminal (`a`
//! approves the tool for the rest of the run); `--yes` / `--no` answer everything, and without
//! a terminal every confirmation is denied, saying so; the first interrupt (Ctrl-C) cancels the turn, a second one stops
//! waiting. At the end the turn's changeset is summarised (`M path (+a -r)`), when the folder is
//! a git repository.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use agenthost_client::HostConnection;
use agenthost_protocol::ChatUri;
use agenthost_protocol::ahp_types::state::SnapshotState;
use agenthost_protocol::uri::path_to_file_uri;
use tokio::sync::mpsc;

use crate::host::HostOptions;
use crate::term::Renderer;

mod follow;

pub(crate) use follow::Follow;
use follow::{Pending, summarize_changeset};

use crate::CliError;

/// How long `run` waits for the host between two events before giving up.
pub const DEFAULT_STALL: Duration = Duration::from_secs(600);

/// How often the progress line is refreshed.
const PROGRESS_TICK: Duration = Duration::from_millis(250);

/// The progress line's spinner.
const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];

/// How long the changeset summary waits for the turn's checkpoint.
const CHANGESET_WAIT: Duration = Duration::from_secs(10);

/// How confirmations are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answers {
    /// Ask on the terminal: `y` approves, `n` (or anything else) denies, `a` approves this tool
    /// for the rest of the run.
    Ask,
    /// Approve every confirmation (`--yes`).
    ApproveAll,
    /// Deny every confirmation (`--no`).
    DenyAll,
    /// Deny every confirmation: there is no terminal to ask on (stdin is not a TTY) and neither
    /// `--yes` nor `--no` was given.
    NoTerminal,
}

impl Answers {
    /// The policy of the flags, on a terminal or not.
    pub fn from_flags(yes: bool, no: bool, terminal: bool) -> Self {
        match (yes, no, terminal) {
            (true, _, _) => Self::ApproveAll,
            (_, true, _) => Self::DenyAll,
            (_, _, true) => Self::Ask,
            _ => Self::NoTerminal,
        }
    }

    /// The policy's answer, when it does not ask: approved?, and why.
    fn policy(self) -> Option<(bool, &'static str)> {
        match self {
            Self::Ask => None,
            Self::ApproveAll => Some((true, "approved (--yes)")),
            Self::DenyAll => Some((false, "denied (--no)")),
            Self::NoTerminal => Some((
                false,
                "denied (no terminal to ask on; --yes approves, --no denies without asking)",
            )),
        }
    }
}

/// What `run` does.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The provider to talk to (`claude`, `codex`, `copilot`, `scripted`).
    pub provider: String,
    /// The model, when not the provider's default.
    pub model: Option<String>,
    /// The folder the agent works in.
    pub cwd: PathBuf,
    /// The message.
    pub prompt: String,
    /// Print AHP action envelopes as JSON lines instead of rendering.
    pub json: bool,
    /// How confirmations are answered.
    pub answers: Answers,
    /// How long to wait for the host between two events.
    pub stall: Duration,
    /// An existing session to send the prompt to, instead of a new one.
    pub resume: Option<Resume>,
    /// With `resume`: the chat to send to (default: the session's default chat).
    pub chat: Option<String>,
}

/// Which existing session a run continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// `--session URI`.
    Session(String),
    /// `--continue`: the most recently active session (not archived) whose working directory is
    /// the run's folder.
    Latest,
}

/// A session opened for a conversation: new, or an existing one restored, with its chat
/// subscribed and mirrored.
pub(crate) struct Conversation {
    /// The session.
    pub(crate) session: agenthost_protocol::SessionUri,
    /// The chat the conversation goes to.
    pub(crate) chat: ChatUri,
    /// The session's title when it was opened.
    pub(crate) title: String,
    /// The template of the session's per-turn changeset, when it has one.
    pub(crate) turn_template: Option<String>,
    /// The folder the session works in.
    pub(crate) cwd: PathBuf,
    /// The session's `_meta` when it was opened (its cost so far).
    pub(crate) meta: Option<agenthost_protocol::ahp_types::common::JsonObject>,
    /// The chat, mirrored.
    pub(crate) view: agenthost_client::ChatView,
    /// The session's and the chat's subscriptions, held while the conversation lasts.
    pub(crate) subscriptions: Vec<agenthost_client::ahp::SessionSubscription>,
}

/// Creates the session `options` asks for — or, with `options.resume`, finds the existing one
/// — subscribes to it (which restores a stored session, whose agent resumes its own
/// conversation) and to its chat.
pub(crate) async fn open_conversation(
    client: &HostConnection,
    options: &RunOptions,
) -> Result<Conversation, CliError> {
    let cwd = options.cwd.canonicalize().map_err(|e| {
        CliError::Host(format!(
            "the working directory {} is not usable: {e}",
            options.cwd.display()
        ))
    })?;
    let directory = path_to_file_uri(&cwd)?;
    let (session, chat) = match &options.resume {
        None => client
            .create_session(&options.provider, &new_session_id(), Some(directory))
            .await
            .map_err(|e| CliError::Host(format!("cannot create a session: {e}")))?,
        Some(resume) => {
            let session = match resume {
                Resume::Session(uri) => {
                    agenthost_protocol::SessionUri::parse(uri).map_err(|e| {
                        CliError::Usage(format!("--session {uri}: not a session URI: {e}"))
                    })?
                }
                Resume::Latest => latest_session(client, &cwd, &directory).await?,
            };
            let chat = match &options.chat {
                Some(chat) => ChatUri::parse(chat)
                    .map_err(|e| CliError::Usage(format!("--chat {chat}: not a chat URI: {e}")))?,
                None => ChatUri::default_for(&session),
            };
            (session, chat)
        }
    };
    // Subscribing restores a stored session (its agent resumes its own conversation).
    let (snapshot, session_subscription) = client
        .client()
        .subscribe(session.to_string())
        .await
        .map_err(|e| CliError::Host(format!("no session {session} on this host: {e}")))?;
    let state = match snapshot.snapshot.map(|s| s.state) {
        Some(SnapshotState::Session(state)) => state,
        _ => {
            return Err(CliError::Host(format!(
                "{session} is not a session this host knows"
            )));
        }
    };
    if options.resume.is_some() && !state.chats.iter().any(|c| c.resource == chat.as_str()) {
        return Err(CliError::Usage(format!("{session} has no chat {chat}")));
    }
    let turn_template = state
        .changesets
        .clone()
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.change_kind == "turn")
        .map(|c| c.uri_template);
    // The folder the session works in: where its changed files are.
    let cwd = state
        .working_directories
        .as_ref()
        .and_then(|dirs| dirs.first())
        .and_then(|d| agenthost_protocol::uri::file_uri_to_path(d).ok())
        .unwrap_or(cwd);
    let (view, chat_subscription) = client.open_chat(&chat).await?;
    Ok(Conversation {
        session,
        chat,
        title: state.title.clone(),
        turn_template,
        cwd,
        meta: state.meta.clone(),
        view,
        subscriptions: vec![session_subscription, chat_subscription],
    })
}

/// The stored session `resume` names, for a host this process starts: `--session`'s URI, or
/// for `--continue` the most recently modified session (not archived) working in `folder`. A
/// clear error when there is none.
pub fn stored_session(
    data_dir: &std::path::Path,
    resume: &Resume,
    folder: &std::path::Path,
) -> Result<agenthost_store::SessionRecord, CliError> {
    if !data_dir.join(crate::host::DATABASE_FILE).exists() {
        // No database yet: no session at all.
        return Err(match resume {
            Resume::Session(uri) => CliError::Usage(format!(
                "no session {uri} in {} (it holds no sessions yet)",
                data_dir.display()
            )),
            Resume::Latest => no_session_in(folder),
        });
    }
    let store = crate::sessions::existing_store(data_dir)?;
    match resume {
        Resume::Session(uri) => {
            let parsed = agenthost_protocol::SessionUri::parse(uri)
                .map_err(|e| CliError::Usage(format!("--session {uri}: not a session URI: {e}")))?;
            store.session(&parsed)?.ok_or_else(|| {
                CliError::Usage(format!(
                    "no session {uri} in {} (`agent-host sessions` lists them)",
                    data_dir.display()
                ))
            })
        }
        Resume::Latest => {
            let directory = path_to_file_uri(folder)?;
            // The catalog comes newest first.
            store
                .sessions()?
                .into_iter()
                .find(|s| !s.archived && s.working_directories.contains(&directory))
                .ok_or_else(|| no_session_in(folder))
        }
    }
}

fn no_session_in(folder: &std::path::Path) -> CliError {
    CliError::Usage(format!(
        "--continue: no session works in {} yet; start one with `agent-host run \"…\"`",
        folder.display()
    ))
}

/// The most recently active session (not archived) of the host whose working directories hold
/// `directory` (a `file:` URI).
async fn latest_session(
    client: &HostConnection,
    folder: &std::path::Path,
    directory: &str,
) -> Result<agenthost_protocol::SessionUri, CliError> {
    use agenthost_protocol::ahp_types::state::SessionStatus;
    let sessions = client.list_sessions().await?.items;
    let latest = sessions
        .into_iter()
        .filter(|s| !SessionStatus::from_bits(s.status).contains(SessionStatus::IsArchived))
        .filter(|s| {
            s.working_directories
                .as_ref()
                .is_some_and(|dirs| dirs.iter().any(|d| d == directory))
        })
        .max_by(|a, b| a.modified_at.cmp(&b.modified_at))
        .ok_or_else(|| no_session_in(folder))?;
    agenthost_protocol::SessionUri::parse(&latest.resource)
        .map_err(|e| CliError::Host(format!("the host listed a bad session URI: {e}")))
}

/// A turn id the chat has not used: `turn-<n>` after its `n - 1` turns.
pub(crate) fn next_turn_id(chat: &agenthost_protocol::ahp_types::state::ChatState) -> String {
    let used: std::collections::HashSet<&str> = chat
        .turns
        .iter()
        .map(|t| t.id.as_str())
        .chain(chat.active_turn.iter().map(|t| t.id.as_str()))
        .collect();
    let mut n = chat.turns.len() + 1;
    loop {
        let id = format!("turn-{n}");
        if !used.contains(id.as_str()) {
            return id;
        }
        n += 1;
    }
}

/// How the turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The agent finished.
    Completed,
    /// The turn failed with this message.
    Failed(String),
    /// The turn was cancelled.
    Cancelled,
}

/// What the user types and presses, as `run` receives it.
#[derive(Debug)]
pub struct Input {
    /// Lines typed (answers to confirmations).
    pub lines: mpsc::Receiver<String>,
    /// Interrupts (Ctrl-C).
    pub interrupts: mpsc::Receiver<()>,
}

/// A session id for a new run: time-based, unique enough per machine.
fn new_session_id() -> String {
    format!("run-{}", unique_suffix())
}

/// `<seconds>-<nanoseconds>` of now, in hex: unique enough per machine for ids a client picks.
pub(crate) fn unique_suffix() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{:x}-{:x}", now.as_secs(), now.subsec_nanos())
}

/// Runs one turn against the host at `url`, rendering into `out`. Returns how the turn ended.
pub async fn run<W: Write>(
    url: &str,
    options: &RunOptions,
    mut input: Input,
    out: &mut Renderer<W>,
) -> Result<Outcome, CliError> {
    let client = connect_host(url, "agent-host-run").await?;
    let mut events = client.client().events();
    let Conversation {
        session,
        chat,
        title,
        turn_template,
        cwd,
        view,
        subscriptions: _subscriptions,
        ..
    } = open_conversation(&client, options).await?;
    if let Some(running) = &view.state().active_turn {
        return Err(CliError::Host(format!(
            "{session} is busy with a turn ({}): follow it with `agent-host attach {session}`, \
             or wait for it to end",
            running.id
        )));
    }
    let turn_id = match options.resume {
        None => "turn-1".to_owned(),
        Some(_) => next_turn_id(view.state()),
    };
    let mut follow = Follow {
        client: &client,
        chat: chat.clone(),
        views: HashMap::from([(chat.to_string(), view)]),
        subscriptions: Vec::new(),
        pending: Vec::new(),
        always: std::collections::HashSet::new(),
    };
    let checkpointed = in_git_repository(&cwd);
    if !options.json {
        if options.resume.is_some() {
            out.line(&format!("continuing {title} ({session})"))
                .map_err(io_error)?;
        }
        out.line(&format!("> {}", options.prompt))
            .map_err(io_error)?;
        if !checkpointed {
            out.line(&format!(
                "{} is not a git repository: checkpoints are off (no changed-file list, diff or \
                 rollback for this session)",
                cwd.display()
            ))
            .map_err(io_error)?;
        }
    }
    let turn_id = turn_id.as_str();
    client
        .start_turn_with_model(&chat, turn_id, &options.prompt, options.model.as_deref())
        .await
        .map_err(|e| CliError::Host(format!("cannot start the turn: {e}")))?;
    let started = std::time::Instant::now();
    let mut cancelled = false;
    // Progress on a terminal while nothing arrives for more than a second (the agent's process
    // starting, a checkpoint of a large repository, a slow model).
    let mut ticker = tokio::time::interval(PROGRESS_TICK);
    let mut last_event = tokio::time::Instant::now();
    let mut frame = 0usize;
    let outcome = loop {
        tokio::select! {
            _ = ticker.tick() => {
                let quiet = last_event.elapsed();
                if quiet >= Duration::from_secs(1) && follow.pending.is_empty() && !options.json {
                    frame = (frame + 1) % SPINNER.len();
                    out.status(&format!(
                        "{} waiting for {}… {}s",
                        SPINNER[frame],
                        options.provider,
                        quiet.as_secs()
                    ))
                    .map_err(io_error)?;
                }
            }
            event = tokio::time::timeout(options.stall, events.recv()) => {
                last_event = tokio::time::Instant::now();
                let event = event
                    .map_err(|_| CliError::Host(format!("the host sent nothing for {}s", options.stall.as_secs())))?
                    .ok_or_else(|| CliError::host("the connection to the host closed"))?;
                if let Some(outcome) = follow.handle(event, turn_id, options, out).await? {
                    break outcome;
                }
                follow.answer_or_ask(options, out).await?;
            }
            line = input.lines.recv(), if follow.asking() => {
                follow.typed(line, options, out).await?;
                follow.answer_or_ask(options, out).await?;
            }
            interrupt = input.interrupts.recv() => {
                if interrupt.is_none() || cancelled {
                    return Err(CliError::Interrupted);
                }
                cancelled = true;
                let elapsed = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
                client
                    .cancel_turn(&chat, turn_id, elapsed)
                    .await
                    ?;
            }
        }
    };
    if !options.json
        && let Some(line) = follow
            .views
            .get(chat.as_str())
            .and_then(|view| view.state().turns.iter().find(|t| t.id == turn_id).cloned())
            .and_then(|turn| turn.usage)
            .and_then(|usage| cost_line(&usage))
    {
        out.line(&line).map_err(io_error)?;
    }
    if !options.json
        && checkpointed
        && outcome == Outcome::Completed
        && let Some(template) = turn_template
    {
        let uri = template.replace("{turnId}", turn_id);
        summarize_changeset(&client, &mut events, &uri, &cwd, out).await?;
    }
    if !options.json && options.resume.is_none() {
        // A new session: how to go on with it.
        out.line(&format!(
            "session: {session} (go on with `agent-host run --session {session} \"…\"` or \
             `agent-host chat --session {session}`)"
        ))
        .map_err(io_error)?;
    }
    drop(follow);
    client.close().await;
    Ok(outcome)
}

/// The turn's cost and tokens as `run` prints them at the end: `cost: $0.0123 (an
/// API-equivalent estimate; 1200 tokens in, 80 out)`; `None` when no usage was reported.
pub fn cost_line(usage: &agenthost_protocol::ahp_types::state::UsageInfo) -> Option<String> {
    use agenthost_protocol::usage::{Cost, cost};
    let tokens = match (usage.input_tokens, usage.output_tokens) {
        (None, None) => String::new(),
        (input, output) => format!(
            "; {} tokens in, {} out",
            input.unwrap_or(0),
            output.unwrap_or(0)
        ),
    };
    let model = usage.model.as_deref().unwrap_or("its model");
    Some(match cost(usage.meta.as_ref()) {
        Cost::Absent if tokens.is_empty() => return None,
        Cost::Absent | Cost::Unknown => {
            format!("cost: unknown (no price for {model}{tokens})")
        }
        known => format!("cost: {known} (an API-equivalent estimate{tokens})"),
    })
}

/// What `attach` does.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// Print AHP action envelopes as JSON lines instead of rendering.
    pub json: bool,
    /// How confirmations are answered.
    pub answers: Answers,
    /// Stop when the default chat's running turn ends (or at once when none is running).
    pub until_done: bool,
    /// How long to wait for the host between two events.
    pub stall: Duration,
}

/// `agent-host attach SESSION`: follows a session another client runs — its default chat and
/// the subagents it starts — from now on. The confirmations waiting when it attaches and those
/// that come later are asked here (or approved with `--yes`); whichever client answers first
/// wins, the host never runs a tool twice. Ctrl-C detaches (the turn goes on). Returns the
/// outcome of the turn it saw end, if any.
pub async fn attach<W: Write>(
    url: &str,
    session: &str,
    options: &AttachOptions,
    mut input: Input,
    out: &mut Renderer<W>,
) -> Result<Option<Outcome>, CliError> {
    let session = agenthost_protocol::SessionUri::parse(session)
        .map_err(|e| CliError::Host(format!("not a session URI: {e}")))?;
    let client = connect_host(url, "agent-host-attach").await?;
    let mut events = client.client().events();
    let (snapshot, _session_subscription) = client
        .client()
        .subscribe(session.to_string())
        .await
        .map_err(|e| CliError::Host(format!("cannot attach to {session}: {e}")))?;
    let Some(SnapshotState::Session(state)) = snapshot.snapshot.map(|s| s.state) else {
        return Err(CliError::Host(format!(
            "{session} is not a session this host knows"
        )));
    };
    let chat = ChatUri::default_for(&session);
    let (view, _chat_subscription) = client.open_chat(&chat).await?;
    let running = view.state().active_turn.as_ref().map(|t| t.id.clone());
    let run_like = RunOptions {
        provider: state.provider.clone(),
        model: None,
        cwd: PathBuf::new(),
        prompt: String::new(),
        json: options.json,
        answers: options.answers,
        stall: options.stall,
        resume: None,
        chat: None,
    };
    if !options.json {
        let status = match &running {
            Some(turn) => format!("turn {turn} running"),
            None => "idle".to_owned(),
        };
        out.line(&format!(
            "attached to {session} — {} ({status})",
            state.title
        ))
        .map_err(io_error)?;
    }
    let mut follow = Follow {
        client: &client,
        chat: chat.clone(),
        views: HashMap::new(),
        subscriptions: Vec::new(),
        pending: waiting_confirmations(&chat, view.state()),
        always: std::collections::HashSet::new(),
    };
    follow.views.insert(chat.to_string(), view);
    if options.until_done && running.is_none() {
        return Ok(None);
    }
    let mut seen = None;
    loop {
        follow.answer_or_ask(&run_like, out).await?;
        tokio::select! {
            event = tokio::time::timeout(options.stall, events.recv()) => {
                let event = event
                    .map_err(|_| CliError::Host(format!("the host sent nothing for {}s", options.stall.as_secs())))?
                    .ok_or_else(|| CliError::host("the connection to the host closed"))?;
                let turn = follow
                    .views
                    .get(chat.as_str())
                    .and_then(|v| v.state().active_turn.as_ref().map(|t| t.id.clone()))
                    .or_else(|| running.clone())
                    .unwrap_or_default();
                if let Some(outcome) = follow.handle(event, &turn, &run_like, out).await? {
                    seen = Some(outcome);
                    if options.until_done {
                        break;
                    }
                }
            }
            line = input.lines.recv(), if follow.asking() => {
                follow.typed(line, &run_like, out).await?;
            }
            _ = input.interrupts.recv() => break,
        }
    }
    drop(follow);
    client.close().await;
    Ok(seen)
}

/// The confirmations the chat's running turn waits for.
fn waiting_confirmations(
    chat: &ChatUri,
    state: &agenthost_protocol::ahp_types::state::ChatState,
) -> Vec<Pending> {
    use agenthost_protocol::ahp_types::state::{ResponsePart, ToolCallState};
    let Some(turn) = &state.active_turn else {
        return Vec::new();
    };
    turn.response_parts
        .iter()
        .filter_map(|part| match part {
            ResponsePart::ToolCall(call) => match &call.tool_call {
                ToolCallState::PendingConfirmation(pending) => Some(Pending {
                    chat: chat.to_string(),
                    turn_id: turn.id.clone(),
                    tool_call_id: pending.tool_call_id.clone(),
                    invocation: pending.invocation_message.as_text().to_owned(),
                    tool_name: pending.tool_name.clone(),
                    input: match &pending.tool_input {
                        Some(agenthost_protocol::ahp_types::state::ToolInput::Inline(text)) => {
                            Some(text.clone())
                        }
                        _ => None,
                    },
                    asked: false,
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Whether `dir` is inside a git work tree (a `.git` directory or worktree file in it or
/// above) — where the host captures checkpoints.
fn in_git_repository(dir: &std::path::Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

/// Where `run` finds its host.
#[derive(Debug)]
pub enum Target {
    /// A running host (`agent-host serve`'s URL, token included).
    Connect(String),
    /// A host started in this process for the run, over the data directory `serve` uses.
    Start(Box<HostOptions>),
}

/// The npm package that provides a provider's CLI.
pub fn npm_package(provider: &str) -> Option<&'static str> {
    match provider {
        "claude" => Some("@anthropic-ai/claude-code"),
        "codex" => Some("@openai/codex"),
        "copilot" => Some("@github/copilot"),
        _ => None,
    }
}

/// Whether `program` can be started: a path that exists, or a name found on `PATH`.
fn found(program: &std::path::Path) -> bool {
    if program.components().count() > 1 {
        return program.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// A clear error when the provider's CLI is missing, naming the npm package that provides it.
pub fn check_provider_cli(provider: &str, program: &std::path::Path) -> Result<(), CliError> {
    match npm_package(provider) {
        Some(package) if !found(program) => Err(CliError::Host(format!(
            "the {provider} CLI (`{}`) is not installed or not on PATH: install it with \
             `npm install -g {package}`, or point --{provider}-bin at it",
            program.display()
        ))),
        _ => Ok(()),
    }
}

/// `agent-host attach`: [`attach`] with stdin, Ctrl-C and stdout.
pub async fn attach_command(
    url: &str,
    session: &str,
    options: AttachOptions,
) -> Result<Option<Outcome>, CliError> {
    let input = stdin_input();
    let style = crate::term::Style::detect(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    let mut renderer = Renderer::new(std::io::stdout(), style);
    attach(url, session, &options, input, &mut renderer).await
}

/// Lines from stdin (read on a thread of their own; the channel closes when stdin ends) and
/// Ctrl-C presses.
pub(crate) fn stdin_input() -> Input {
    let (line_tx, lines) = mpsc::channel(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if line_tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let (interrupt_tx, interrupts) = mpsc::channel(4);
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if interrupt_tx.send(()).await.is_err() {
                break;
            }
        }
    });
    Input { lines, interrupts }
}

/// `agent-host run`: finds or starts the host, reads answers from stdin and Ctrl-C, renders to
/// stdout in the style the terminal allows.
pub async fn command(target: Target, options: RunOptions) -> Result<Outcome, CliError> {
    let (url, local) = match target {
        Target::Connect(url) => (url, None),
        Target::Start(host) => {
            let local = crate::host::LocalHost::start(*host).await?;
            (local.url().to_owned(), Some(local))
        }
    };
    let input = stdin_input();
    let style = crate::term::Style::detect(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    let mut renderer = Renderer::new(std::io::stdout(), style);
    let outcome = run(&url, &options, input, &mut renderer).await;
    if let Some(local) = local {
        local.stop().await;
    }
    outcome
}

/// Connects to the host at `url` as a client of this invocation,
/// `<kind>-<process id>-<start time>` (a client id is bound to one live connection and to its
/// token, so two commands running at once, or with different tokens, must not share one), with
/// an error a person can act on: a refused token, an unreachable host (the token is never
/// printed).
pub async fn connect_host(url: &str, kind: &str) -> Result<HostConnection, CliError> {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let client_id = format!("{kind}-{}-{started:x}", std::process::id());
    HostConnection::connect(url, &client_id).await.map_err(|e| {
        let text = e.to_string();
        if text.contains("403") {
            CliError::host(format!(
                "the host at {} refused the connection token: use the exact URL `agent-host \
                 serve` printed (its ?tkn=…)",
                redact(url)
            ))
        } else {
            CliError::host(format!("cannot reach the host at {}: {text}", redact(url)))
        }
    })
}

pub(crate) fn io_error(error: std::io::Error) -> CliError {
    CliError::io("cannot write the output", error)
}

/// The URL without its token, for messages.
fn redact(url: &str) -> String {
    match url.split_once('?') {
        Some((base, _)) => format!("{base}?…"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;

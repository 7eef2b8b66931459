//! `agent-host chat`: a conversation with an agent in the terminal, turn after turn, over the
//! host's real protocol — a new session, or an existing one (`--session URI`, `--continue`).
//!
//! Each line typed is a message: it starts a turn, or, while one runs, joins the host's queue
//! (`chat/pendingMessageSet`, so VS Code and the web page see it too) and runs after it. The
//! answer streams as `run` renders it, subagents indented; a confirmation is asked inline and the
//! next line typed answers it (`y`, `n`, `a`; a slash command runs instead, and the question is
//! asked again). Ctrl-C cancels the running turn; at the prompt, a second one leaves. Turns
//! other clients start in the session appear as they happen. Slash commands: `/diff
//! [TURN|all]`, `/rollback TURN`, `/model [ID]`, `/usage`, `/help`, `/quit`; any other
//! (`/rename TITLE` among them) goes to the host as a message, where its `localCommand` handles
//! it as it does for every client.
//!
//! On a terminal, lines are typed at a line editor (`rustyline-async`: editing keys, Up/Down
//! through the history kept in `<data dir>/chat-history`) whose prompt stays on the last line
//! while the conversation streams above it (so no transient status line is drawn). Through a
//! pipe, everything printed is a plain, word-prefixed line and the lines are a script: the next
//! one is read once the turn has ended, or as the answer when a question is asked — so
//! `printf 'fix the test\ny\n/quit\n' | agent-host chat` sends, approves, and leaves after the
//! answer. When its input ends (Ctrl-D), `chat` waits for the running turn and the queue, then
//! leaves.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use agenthost_client::HostConnection;
use agenthost_client::ahp::SubscriptionEvent;
use agenthost_protocol::StateAction;

use crate::CliError;
use crate::run::{Answers, Conversation, Follow, Input, Resume, RunOptions, Target};
use crate::term::Renderer;

mod input;

/// Said when the input ends (Ctrl-D) while there is still something to wait for.
pub(crate) const INPUT_ENDED: &str =
    "(the input has ended: chat leaves once the running turn and the queue are done)";

/// What `chat` does.
#[derive(Debug, Clone)]
pub struct ChatOptions {
    /// The agent of a new session.
    pub provider: String,
    /// The model, when not the agent's default (`/model` changes it).
    pub model: Option<String>,
    /// The folder a new session works in (and `--continue` looks in).
    pub cwd: PathBuf,
    /// An existing session to go on with.
    pub resume: Option<Resume>,
    /// With `resume`: the chat to talk in (default: the session's default chat).
    pub chat: Option<String>,
    /// How confirmations are answered: asked (the next line answers), or all approved / denied.
    pub answers: Answers,
    /// The file the line editor keeps the lines typed in (on a terminal); `None`: this run only.
    pub history: Option<PathBuf>,
}

impl ChatOptions {
    /// The same choices in `run`'s terms (the conversation opener and the follower take those).
    fn as_run(&self) -> RunOptions {
        RunOptions {
            provider: self.provider.clone(),
            model: self.model.clone(),
            cwd: self.cwd.clone(),
            prompt: String::new(),
            json: false,
            answers: self.answers,
            stall: crate::run::DEFAULT_STALL,
            resume: self.resume.clone(),
            chat: self.chat.clone(),
        }
    }
}

/// What a slash command asks of the loop.
enum Slash {
    /// Leave.
    Quit,
    /// Handled here.
    Done,
    /// Not one of ours: send the line to the host as a message.
    Message,
}

/// The running turn of the conversation's chat, as the mirrored chat holds it (the host's
/// state, never this client's own bookkeeping).
fn active_turn(follow: &Follow<'_>, chat: &agenthost_protocol::ChatUri) -> Option<String> {
    follow
        .views
        .get(chat.as_str())?
        .state()
        .active_turn
        .as_ref()
        .map(|turn| turn.id.clone())
}

/// Talks with the host at `url` until the user leaves or the input ends. `terminal`: the user
/// types at a line editor (their own lines are on the screen already).
pub async fn chat<W: Write>(
    url: &str,
    options: &ChatOptions,
    input: &mut Input,
    terminal: bool,
    out: &mut Renderer<W>,
) -> Result<(), CliError> {
    let client = crate::run::connect_host(url, "agent-host-chat").await?;
    let mut events = client.client().events();
    let mut run_like = options.as_run();
    let Conversation {
        session,
        chat,
        title,
        cwd,
        meta,
        view,
        subscriptions,
        ..
    } = crate::run::open_conversation(&client, &run_like).await?;
    let io = crate::run::io_error;
    let mut meta = meta;
    let running = view
        .state()
        .active_turn
        .as_ref()
        .map(|turn| turn.id.clone());
    let opening = match (&options.resume, &running) {
        (None, _) => format!(
            "chat with {} in {} ({session})",
            options.provider,
            cwd.display()
        ),
        (Some(_), None) => format!("continuing {title} ({session})"),
        (Some(_), Some(turn)) => format!("continuing {title} ({session}); turn {turn} is running"),
    };
    out.line(&opening).map_err(io)?;
    out.line("type a message; /help lists the commands")
        .map_err(io)?;
    // A turn already running may wait for a confirmation: what it holds is shown and asked.
    let backlog: Vec<_> = view
        .backlog()
        .into_iter()
        .rev()
        .take_while(|event| !matches!(event, agenthost_client::Event::TurnEnded { .. }))
        .collect();
    let mut follow = Follow {
        client: &client,
        chat: chat.clone(),
        views: HashMap::from([(chat.to_string(), view)]),
        subscriptions,
        pending: Vec::new(),
        always: HashSet::new(),
    };
    if running.is_some() {
        for event in backlog.into_iter().rev() {
            follow.take(chat.as_str(), event, "", &run_like, out)?;
        }
        follow.answer_or_ask(&run_like, out).await?;
    }
    let mut interrupted_at_prompt = false;
    let mut closing = false;
    // A turn this client started whose echo has not come back yet.
    let mut starting = false;
    // When this client first saw each running turn (a cancel's duration is measured on our own
    // clock), and the turn it asked to cancel.
    let mut seen: HashMap<String, Instant> = HashMap::new();
    let mut cancelling: Option<String> = None;
    loop {
        let running = active_turn(&follow, &chat);
        if let Some(turn) = &running {
            seen.entry(turn.clone()).or_insert_with(Instant::now);
        }
        let queue_empty = follow.views.get(chat.as_str()).is_none_or(|view| {
            view.state()
                .queued_messages
                .as_ref()
                .is_none_or(Vec::is_empty)
        });
        if closing && running.is_none() && !starting && queue_empty && follow.pending.is_empty() {
            break;
        }
        tokio::select! {
            event = events.recv() => {
                let event = event.ok_or_else(|| CliError::host("the connection to the host closed"))?;
                if let SubscriptionEvent::Action(envelope) = &event.event {
                    let ours = envelope
                        .origin
                        .as_ref()
                        .is_some_and(|origin| origin.client_id == client.client_id());
                    if let Some(reason) = &envelope.rejection_reason {
                        if ours {
                            out.line(&format!("refused: {reason}")).map_err(io)?;
                            if matches!(envelope.action, StateAction::ChatTurnStarted(_)) {
                                starting = false;
                            }
                        }
                        continue;
                    }
                    match &envelope.action {
                        StateAction::SessionMetaChanged(changed) if envelope.channel == session.as_str() => {
                            meta.clone_from(&changed.meta);
                        }
                        StateAction::ChatTurnStarted(started) if envelope.channel == chat.as_str() => {
                            // Our own line is on the screen already when typed at a terminal.
                            if !ours || !terminal {
                                out.line(&format!("> {}", started.message.text)).map_err(io)?;
                            }
                            if ours {
                                starting = false;
                            }
                        }
                        _ => {}
                    }
                }
                // The turn running before this event: the one an end in it ends.
                let turn = running.unwrap_or_default();
                // The renderer has said how the turn ended ("cancelled", "failed: …").
                if follow.handle(event, &turn, &run_like, out).await?.is_some() {
                    if let Some(line) = turn_usage(&follow, &chat, &turn).and_then(|u| crate::run::cost_line(&u)) {
                        out.line(&line).map_err(io)?;
                    }
                    seen.remove(&turn);
                }
                follow.answer_or_ask(&run_like, out).await?;
                if closing && follow.asking() {
                    // The input has ended: nobody is left to answer, the question is denied.
                    follow.typed(None, &run_like, out).await?;
                }
            }
            // A terminal reads on while a turn runs (a line then joins the queue); a script's
            // next line waits for the turn to end, unless a question takes it as the answer.
            // A closed input (a pipe's end, Ctrl-D) is its end.
            item = input.lines.recv(), if !closing && (terminal || follow.asking() || (running.is_none() && !starting)) => match item {
                Some(line) => {
                    interrupted_at_prompt = false;
                    let text = line.trim();
                    let command = text.strip_prefix('/');
                    // A question takes the next line as its answer — unless it is a command
                    // (`/diff` before answering, say): that runs, and the question is asked again.
                    if follow.asking() && command.is_none() {
                        follow.typed(Some(line), &run_like, out).await?;
                        follow.answer_or_ask(&run_like, out).await?;
                        continue;
                    }
                    if text.is_empty() {
                        continue;
                    }
                    let done = match command {
                        Some(command) => slash(command, url, &session, &follow, &chat, &mut run_like, &meta, out).await?,
                        None => Slash::Message,
                    };
                    match done {
                        Slash::Quit => break,
                        Slash::Done => {}
                        Slash::Message => {
                            let busy = running.is_some() || starting;
                            send(&client, &follow, &chat, text, busy, &run_like, out).await?;
                            // A second line typed before the echo queues behind this one.
                            starting |= !busy;
                        }
                    }
                    if follow.asking() {
                        follow.ask(&run_like, out)?;
                    }
                }
                None => {
                    if follow.asking() {
                        // Nobody is left to answer: the question is denied.
                        follow.typed(None, &run_like, out).await?;
                    }
                    if terminal && (running.is_some() || starting || !queue_empty) {
                        out.line(INPUT_ENDED).map_err(io)?;
                    }
                    // Leaves once the running turn (even one whose start is not echoed yet),
                    // the queue and the questions are done.
                    closing = true;
                }
            },
            Some(()) = input.interrupts.recv() => match running {
                    Some(turn) if cancelling.as_ref() != Some(&turn) => {
                        let elapsed = seen.get(&turn).map_or(0, |at| {
                            i64::try_from(at.elapsed().as_millis()).unwrap_or(i64::MAX)
                        });
                        client.cancel_turn(&chat, &turn, elapsed).await?;
                        cancelling = Some(turn);
                        out.line("cancelling the turn… (Ctrl-C at the prompt leaves)").map_err(io)?;
                    }
                    Some(_) => {}
                    None if starting => {
                        out.line("the turn is starting; Ctrl-C again to cancel it").map_err(io)?;
                    }
                    None if interrupted_at_prompt => break,
                    None => {
                        interrupted_at_prompt = true;
                        out.line("(Ctrl-C again, or /quit, to leave)").map_err(io)?;
                    }
                },
        }
    }
    out.line(&format!(
        "session: {session} (go on with `agent-host chat --session {session}`)"
    ))
    .map_err(io)?;
    drop(follow);
    client.close().await;
    Ok(())
}

/// The usage of turn `turn` of the conversation's chat, once it ended.
fn turn_usage(
    follow: &Follow<'_>,
    chat: &agenthost_protocol::ChatUri,
    turn: &str,
) -> Option<agenthost_protocol::ahp_types::state::UsageInfo> {
    follow
        .views
        .get(chat.as_str())?
        .state()
        .turns
        .iter()
        .find(|t| t.id == turn)?
        .usage
        .clone()
}

/// Sends a message: a new turn when none runs, else into the host's queue.
async fn send<W: Write>(
    client: &HostConnection,
    follow: &Follow<'_>,
    chat: &agenthost_protocol::ChatUri,
    text: &str,
    busy: bool,
    options: &RunOptions,
    out: &mut Renderer<W>,
) -> Result<(), CliError> {
    let io = crate::run::io_error;
    if busy {
        let id = format!("queued-{}", crate::run::unique_suffix());
        client.queue_message(chat, &id, text).await?;
        return out.line(&format!("queued: {text}")).map_err(io);
    }
    let turn = follow
        .views
        .get(chat.as_str())
        .map(|view| crate::run::next_turn_id(view.state()))
        .ok_or_else(|| CliError::host("the conversation's chat is not followed"))?;
    client
        .start_turn_with_model(chat, &turn, text, options.model.as_deref())
        .await
        .map_err(|e| CliError::Host(format!("cannot start the turn: {e}")))
}

/// Runs a slash command (`command` without its `/`).
#[allow(clippy::too_many_arguments)]
async fn slash<W: Write>(
    command: &str,
    url: &str,
    session: &agenthost_protocol::SessionUri,
    follow: &Follow<'_>,
    chat: &agenthost_protocol::ChatUri,
    options: &mut RunOptions,
    meta: &Option<agenthost_protocol::ahp_types::common::JsonObject>,
    out: &mut Renderer<W>,
) -> Result<Slash, CliError> {
    let io = crate::run::io_error;
    let (name, argument) = match command.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, Some(rest.trim()).filter(|r| !r.is_empty())),
        None => (command, None),
    };
    let turns: Vec<String> = follow
        .views
        .get(chat.as_str())
        .map(|view| view.state().turns.iter().map(|t| t.id.clone()).collect())
        .unwrap_or_default();
    match name {
        "quit" | "exit" => return Ok(Slash::Quit),
        "help" => {
            for line in [
                "/diff [TURN|all]  the last turn's changes (or TURN's, or the whole session's)",
                "/rollback TURN    put the files back as they were when TURN started",
                "/model [ID]       the model of the next turns (without ID: the one in use)",
                "/usage            the last turn's tokens and cost, and the session's cost",
                "/quit             leave (a running turn goes on; Ctrl-C twice at the prompt too)",
                "/rename TITLE and any other /command go to the host and the agent as a message",
            ] {
                out.line(line).map_err(io)?;
            }
        }
        "diff" => {
            let turn = match argument {
                Some("all") => None,
                Some(turn) => Some(turn.to_owned()),
                None => match turns.last() {
                    Some(last) => Some(last.clone()),
                    None => {
                        return out
                            .line("no turn has ended yet")
                            .map(|()| Slash::Done)
                            .map_err(io);
                    }
                },
            };
            match crate::checkpoints::diff(url, session.as_str(), turn.as_deref(), None).await {
                Ok(diff) if diff.diff.trim().is_empty() => out.line("no changes").map_err(io)?,
                Ok(diff) => {
                    let mut text = Vec::new();
                    crate::checkpoints::print_diff(&mut text, &diff.diff, out.style())
                        .map_err(io)?;
                    for line in String::from_utf8_lossy(&text).lines() {
                        out.line(line).map_err(io)?;
                    }
                }
                Err(error) => out.line(&format!("error: {error}")).map_err(io)?,
            }
        }
        "rollback" => {
            let Some(turn) = argument else {
                let known = if turns.is_empty() {
                    "none yet".to_owned()
                } else {
                    turns.join(", ")
                };
                return out
                    .line(&format!(
                        "usage: /rollback TURN (this chat's turns: {known})"
                    ))
                    .map(|()| Slash::Done)
                    .map_err(io);
            };
            let mut text = Vec::new();
            let done =
                crate::checkpoints::rollback(url, session.as_str(), turn, true, &mut text, |_| {
                    true
                })
                .await;
            for line in String::from_utf8_lossy(&text).lines() {
                out.line(line).map_err(io)?;
            }
            if let Err(error) = done {
                out.line(&format!("error: {error}")).map_err(io)?;
            }
        }
        "model" => match argument {
            Some(model) => {
                options.model = Some(model.to_owned());
                out.line(&format!("model: {model} (from the next turn on)"))
                    .map_err(io)?;
            }
            None => {
                let model = options.model.as_deref().unwrap_or("the agent's default");
                out.line(&format!("model: {model}")).map_err(io)?;
            }
        },
        "usage" => {
            let last = turns.last().and_then(|turn| turn_usage(follow, chat, turn));
            match last.as_ref().and_then(crate::run::cost_line) {
                Some(line) => out.line(&format!("last turn: {line}")).map_err(io)?,
                None => out.line("last turn: no usage reported").map_err(io)?,
            }
            let total = agenthost_protocol::usage::cost(meta.as_ref());
            out.line(&format!("session so far: {total}")).map_err(io)?;
        }
        _ => return Ok(Slash::Message),
    }
    Ok(Slash::Done)
}

/// `agent-host chat`: finds or starts the host, reads lines (with the line editor on a
/// terminal), renders to stdout.
pub async fn command(target: Target, options: ChatOptions) -> Result<(), CliError> {
    let (url, local) = match target {
        Target::Connect(url) => (url, None),
        Target::Start(host) => {
            let local = crate::host::LocalHost::start(*host).await?;
            (local.url().to_owned(), Some(local))
        }
    };
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdin())
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let style = crate::term::Style::detect(terminal);
    // Once the editor gives the terminal back, Ctrl-C is SIGINT again: while the host in this
    // process stops (its history written), it is heard here instead of ending the process (a
    // pipe's input listens for it all along).
    let _interrupts = terminal
        .then(|| tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()))
        .and_then(|listening| {
            listening
                .inspect_err(|error| tracing::debug!(%error, "Ctrl-C is not listened for"))
                .ok()
        });
    let result = if terminal {
        on_a_terminal(&url, &options, style).await
    } else {
        let mut input = crate::run::stdin_input();
        // A question ends its line: a script reading the output sees it whole.
        let mut renderer =
            Renderer::new(std::io::stdout(), style).with_questions_on_their_own_line();
        chat(&url, &options, &mut input, false, &mut renderer).await
    };
    if let Some(local) = local {
        local.stop().await;
    }
    result
}

/// The conversation at the line editor; the terminal is given back before this returns.
async fn on_a_terminal(
    url: &str,
    options: &ChatOptions,
    style: crate::term::Style,
) -> Result<(), CliError> {
    let (editor, mut input, writer) = input::Editor::start(options.history.clone())?;
    // The answer is typed at the editor's prompt, below the question; the editor keeps the
    // prompt on the last line, so no transient status line is drawn.
    let mut renderer = Renderer::new(writer, style)
        .with_questions_on_their_own_line()
        .without_status_lines();
    let result = chat(url, options, &mut input, true, &mut renderer).await;
    drop(renderer);
    drop(input);
    editor.close().await;
    result
}

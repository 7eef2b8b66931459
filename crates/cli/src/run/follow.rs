//! Following a run's chats — the main one and its subagents — until the turn ends, asking for
//! confirmations on the way, then the summary of the turn's changeset.

use std::collections::HashMap;
use std::io::Write;

use agenthost_client::ahp::{ClientEvent, ClientEventStream, SubscriptionEvent};
use agenthost_client::{ChatView, Event, HostConnection};
use agenthost_protocol::ahp_types::state::{ChangesetStatus, SnapshotState};
use agenthost_protocol::{ChatUri, StateAction};

use super::*;

use crate::CliError;

/// A confirmation waiting for the user.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) chat: String,
    pub(crate) turn_id: String,
    pub(crate) tool_call_id: String,
    pub(crate) invocation: String,
    pub(crate) tool_name: String,
    pub(crate) input: Option<String>,
    pub(crate) asked: bool,
}

/// The chats being followed (the main one and its subagents).
pub(crate) struct Follow<'a> {
    pub(crate) client: &'a HostConnection,
    pub(crate) chat: ChatUri,
    pub(crate) views: HashMap<String, ChatView>,
    pub(crate) subscriptions: Vec<agenthost_client::ahp::SessionSubscription>,
    pub(crate) pending: Vec<Pending>,
    /// Tools the user approved for the rest of the run (`a`).
    pub(crate) always: std::collections::HashSet<String>,
}

impl Follow<'_> {
    /// Handles one event; `Some` when the main chat's turn ended.
    pub(crate) async fn handle<W: Write>(
        &mut self,
        event: ClientEvent,
        turn: &str,
        options: &RunOptions,
        out: &mut Renderer<W>,
    ) -> Result<Option<Outcome>, CliError> {
        let SubscriptionEvent::Action(envelope) = event.event else {
            return Ok(None);
        };
        if options.json {
            let line = serde_json::to_string(&envelope)
                .map_err(|e| CliError::host(format!("cannot write the action as JSON: {e}")))?;
            out.line(&line).map_err(io_error)?;
        }
        if let StateAction::SessionChatAdded(added) = &envelope.action
            && added.summary.resource != self.chat.as_str()
            && !self.views.contains_key(&added.summary.resource)
        {
            let uri = ChatUri::parse(&added.summary.resource)?;
            let (view, subscription) = self.client.open_chat(&uri).await?;
            if !options.json {
                out.line(&format!("  ↳ {}", added.summary.title))
                    .map_err(io_error)?;
            }
            // The chat may have been busy before this client knew of it: what it already
            // holds is shown (and its waiting confirmations asked) as if followed from the
            // start.
            let backlog = view.backlog();
            self.views.insert(uri.to_string(), view);
            self.subscriptions.push(subscription);
            for event in backlog {
                self.take(uri.as_str(), event, turn, options, out)?;
            }
            return Ok(None);
        }
        let Some(view) = self.views.get_mut(&envelope.channel) else {
            return Ok(None);
        };
        for event in view.apply(&envelope) {
            if let Some(outcome) = self.take(&envelope.channel, event, turn, options, out)? {
                return Ok(Some(outcome));
            }
        }
        Ok(None)
    }

    /// One event of chat `channel`: shown (indented for a subagent's chat), a confirmation
    /// kept to be answered, and the run's outcome when it ends the main chat's turn `turn`.
    pub(crate) fn take<W: Write>(
        &mut self,
        channel: &str,
        event: Event,
        turn: &str,
        options: &RunOptions,
        out: &mut Renderer<W>,
    ) -> Result<Option<Outcome>, CliError> {
        let main = channel == self.chat.as_str();
        if !options.json {
            let indent = if main { "" } else { "    " };
            out.event(indent, &event).map_err(io_error)?;
        }
        match event {
            Event::ConfirmationNeeded {
                turn_id,
                tool_call_id,
                invocation,
                tool_name,
                input,
            } if !self.pending.iter().any(|p| p.tool_call_id == tool_call_id) => {
                self.pending.push(Pending {
                    chat: channel.to_owned(),
                    turn_id,
                    tool_call_id,
                    invocation,
                    tool_name,
                    input,
                    asked: false,
                });
            }
            Event::ToolFinished { tool_call_id, .. } => {
                self.pending.retain(|p| p.tool_call_id != tool_call_id);
            }
            Event::TurnEnded {
                turn_id,
                error,
                cancelled,
            } if main && turn_id == turn => {
                return Ok(Some(match (error, cancelled) {
                    (Some(error), _) => Outcome::Failed(error),
                    (None, true) => Outcome::Cancelled,
                    (None, false) => Outcome::Completed,
                }));
            }
            _ => {}
        }
        Ok(None)
    }

    /// Whether a question is on the screen, waiting for a typed answer.
    pub(crate) fn asking(&self) -> bool {
        self.pending.first().is_some_and(|p| p.asked)
    }

    /// Answers what the policy (or an `a` given earlier) answers, then asks about the oldest
    /// confirmation still open.
    pub(crate) async fn answer_or_ask<W: Write>(
        &mut self,
        options: &RunOptions,
        out: &mut Renderer<W>,
    ) -> Result<(), CliError> {
        while let Some(first) = self.pending.first() {
            if first.asked {
                return Ok(());
            }
            if let Some((approved, why)) = options.answers.policy() {
                self.answer(approved, why, options, out).await?;
            } else if self.always.contains(&first.tool_name) {
                let why = format!("approved (always {})", first.tool_name);
                self.answer(true, &why, options, out).await?;
            } else {
                return self.ask(options, out);
            }
        }
        Ok(())
    }

    /// Shows the oldest confirmation — its command or diff too — and asks.
    pub(crate) fn ask<W: Write>(
        &mut self,
        options: &RunOptions,
        out: &mut Renderer<W>,
    ) -> Result<(), CliError> {
        let Some(first) = self.pending.first_mut() else {
            return Ok(());
        };
        first.asked = true;
        let mut shown = String::new();
        if let Some(input) = first.input.as_deref().filter(|i| !i.trim().is_empty()) {
            for line in input.lines().take(40) {
                shown.push_str(&format!("    {line}\n"));
            }
        }
        let question = format!(
            "{shown}approve {}? [y/N/a = always {}] ",
            first.invocation,
            if first.tool_name.is_empty() {
                "this tool"
            } else {
                &first.tool_name
            }
        );
        if options.json {
            eprint!("{question}");
            Ok(())
        } else {
            out.ask(&question).map_err(io_error)
        }
    }

    /// Answers the question on the screen with the typed `line` (`None`: stdin closed, a no).
    pub(crate) async fn typed<W: Write>(
        &mut self,
        line: Option<String>,
        options: &RunOptions,
        out: &mut Renderer<W>,
    ) -> Result<(), CliError> {
        let answer = line.as_deref().map(str::trim).unwrap_or_default();
        match answer {
            "y" | "Y" | "yes" => self.answer(true, "approved", options, out).await,
            "a" | "A" | "always" => {
                if let Some(first) = self.pending.first() {
                    self.always.insert(first.tool_name.clone());
                }
                self.answer(
                    true,
                    "approved, and from now on for this tool",
                    options,
                    out,
                )
                .await
            }
            _ => self.answer(false, "denied", options, out).await,
        }
    }

    /// Answers the oldest confirmation and says how.
    pub(crate) async fn answer<W: Write>(
        &mut self,
        approved: bool,
        why: &str,
        options: &RunOptions,
        out: &mut Renderer<W>,
    ) -> Result<(), CliError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = self.pending.remove(0);
        let chat = ChatUri::parse(&pending.chat)?;
        self.client
            .confirm_tool(&chat, &pending.turn_id, &pending.tool_call_id, approved)
            .await?;
        if options.json {
            // Stdout carries envelopes only; the answer shows in them.
            return Ok(());
        }
        let line = if pending.asked {
            why.to_owned()
        } else {
            format!("{}: {why}", pending.invocation)
        };
        out.line(&line).map_err(io_error)
    }
}

/// Prints the files the turn changed, from its changeset channel, once it is ready.
pub(crate) async fn summarize_changeset<W: Write>(
    client: &HostConnection,
    events: &mut ClientEventStream,
    uri: &str,
    cwd: &std::path::Path,
    out: &mut Renderer<W>,
) -> Result<(), CliError> {
    let Ok((snapshot, _subscription)) = client.client().subscribe(uri.to_owned()).await else {
        return Ok(());
    };
    let Some(SnapshotState::Changeset(mut state)) = snapshot.snapshot.map(|s| s.state) else {
        return Ok(());
    };
    let deadline = tokio::time::Instant::now() + CHANGESET_WAIT;
    if state.status != ChangesetStatus::Ready {
        out.status("capturing the turn's checkpoint…")
            .map_err(io_error)?;
    }
    while state.status != ChangesetStatus::Ready {
        let Ok(Some(event)) = tokio::time::timeout_at(deadline, events.recv()).await else {
            break;
        };
        let SubscriptionEvent::Action(envelope) = event.event else {
            continue;
        };
        if envelope.channel != uri {
            continue;
        }
        match envelope.action {
            StateAction::ChangesetContentChanged(content) => state.files = content.files,
            StateAction::ChangesetStatusChanged(status) => state.status = status.status,
            _ => {}
        }
    }
    if state.files.is_empty() {
        return out.line("No files changed.").map_err(io_error);
    }
    out.line("Changed files:").map_err(io_error)?;
    for file in &state.files {
        let mark = match (&file.edit.before, &file.edit.after) {
            (None, _) => 'A',
            (_, None) => 'D',
            _ => 'M',
        };
        let name = agenthost_protocol::uri::file_uri_to_path(&file.id)
            .map(|p| p.strip_prefix(cwd).unwrap_or(&p).display().to_string())
            .unwrap_or_else(|_| file.id.clone());
        let stats = file
            .edit
            .diff
            .as_ref()
            .map(|d| {
                format!(
                    " (+{} -{})",
                    d.added.unwrap_or_default(),
                    d.removed.unwrap_or_default()
                )
            })
            .unwrap_or_default();
        out.line(&format!("  {mark} {name}{stats}"))
            .map_err(io_error)?;
    }
    Ok(())
}

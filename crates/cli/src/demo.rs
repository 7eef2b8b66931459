//! `agent-host demo`: a host in-process on a fresh repository, the scripted agent, and a client
//! over the real WebSocket running a two-turn session, printed for a person to read.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use agenthost_client::ahp::{ClientEvent, SubscriptionEvent};
use agenthost_client::{ChatView, Event, HostConnection};
use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::ahp_types::state::SessionStatus;
use agenthost_protocol::uri::path_to_file_uri;
use agenthost_protocol::{ChatUri, StateAction};

use crate::host::{HostOptions, bind};
use crate::term::{Renderer, Style};

use crate::CliError;

const TURNS: [(&str, &str); 2] = [
    (
        "turn-1",
        "Please add a friendly hello.txt to this repository.",
    ),
    (
        "turn-2",
        "Have a subagent check what you wrote, then sum up.",
    ),
];

/// How long the demo waits for the host between two events before giving up.
const STALL: Duration = Duration::from_secs(30);

fn init_repository(path: &Path) -> bool {
    std::process::Command::new("git")
        .args(["init", "--quiet"])
        .current_dir(path)
        .status()
        .is_ok_and(|s| s.success())
}

/// The demo's output: the shared terminal renderer on stdout, plus the demo's own lines.
struct Printer {
    verbose: bool,
    renderer: Renderer<std::io::Stdout>,
}

impl Printer {
    fn line(&mut self, text: &str) {
        let _ = self.renderer.line(text);
    }

    fn event(&mut self, indent: &str, event: &Event) {
        let _ = self.renderer.event(indent, event);
    }
}

/// Runs the demo and prints it; `verbose` also prints each action's sequence number and channel.
pub async fn run(verbose: bool) -> Result<(), CliError> {
    let workspace = tempfile::tempdir()
        .map_err(|e| CliError::Host(format!("cannot create a temporary directory: {e}")))?;
    let root = workspace
        .path()
        .canonicalize()
        .map_err(|e| CliError::Host(format!("cannot resolve the temporary directory: {e}")))?;
    let repository = init_repository(&root);
    let server = bind(HostOptions::scripted(vec![root.clone()], LaunchKind::Demo)).await?;
    let url = server.url();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));
    let outcome = converse(&url, &root, verbose).await;
    let _ = stop.send(());
    let _ = serving.await;
    outcome?;
    let hello = root.join("hello.txt");
    let written = std::fs::read_to_string(&hello)
        .map_err(|e| CliError::Host(format!("the agent's file is missing: {e}")))?;
    println!();
    println!("The agent wrote {}:", hello.display());
    for line in written.lines() {
        println!("  | {line}");
    }
    if !repository {
        println!("(git was not found, so the workspace was not a repository)");
    }
    Ok(())
}

async fn converse(url: &str, root: &Path, verbose: bool) -> Result<(), CliError> {
    let client = HostConnection::connect(url, "agent-host-demo").await?;
    let directory = path_to_file_uri(root)?;
    let mut events = client.client().events();
    let (session, chat) = client
        .create_session("scripted", "demo", Some(directory))
        .await?;
    let _ = client.client().subscribe(session.to_string()).await?;
    let (view, _subscription) = client.open_chat(&chat).await?;
    let mut views: HashMap<String, ChatView> = HashMap::from([(chat.to_string(), view)]);
    let mut style = Style::detect(std::io::stdout().is_terminal());
    style.show_reasoning = verbose;
    let mut printer = Printer {
        verbose,
        renderer: Renderer::new(std::io::stdout(), style),
    };
    println!(
        "agent-host demo — the scripted agent in a fresh repository at {}",
        root.display()
    );
    for (turn, prompt) in TURNS {
        printer.line("");
        printer.line(&format!("> {prompt}"));
        client.start_turn(&chat, turn, prompt).await?;
        loop {
            let event = tokio::time::timeout(STALL, events.recv())
                .await
                .map_err(|_| {
                    CliError::Host(format!("the host sent nothing for {}s", STALL.as_secs()))
                })?
                .ok_or_else(|| CliError::host("the connection to the host closed"))?;
            if handle(&client, &chat, &mut views, &mut printer, event, turn).await? {
                break;
            }
        }
    }
    let status = client
        .list_sessions()
        .await?
        .items
        .first()
        .map(|s| s.status);
    if let Some(status) = status {
        let idle = SessionStatus::from_bits(status).contains(SessionStatus::Idle);
        printer.line(&format!(
            "\nSession {session}: {}",
            if idle { "idle" } else { "busy" }
        ));
    }
    client.close().await;
    Ok(())
}

/// Handles one event; returns whether the main chat's turn `turn` ended.
async fn handle(
    client: &HostConnection,
    chat: &ChatUri,
    views: &mut HashMap<String, ChatView>,
    printer: &mut Printer,
    event: ClientEvent,
    turn: &str,
) -> Result<bool, CliError> {
    let SubscriptionEvent::Action(envelope) = event.event else {
        return Ok(false);
    };
    if printer.verbose {
        printer.line(&format!(
            "    [{}] {}",
            envelope.server_seq, envelope.channel
        ));
    }
    if let StateAction::SessionChatAdded(added) = &envelope.action
        && added.summary.resource != chat.as_str()
    {
        // A subagent's chat: follow it too.
        let uri = ChatUri::parse(&added.summary.resource)?;
        let (view, _subscription) = client.open_chat(&uri).await?;
        printer.line(&format!("  ↳ subagent: {}", added.summary.title));
        views.insert(uri.to_string(), view);
        return Ok(false);
    }
    let main = envelope.channel == chat.as_str();
    let Some(view) = views.get_mut(&envelope.channel) else {
        return Ok(false);
    };
    let indent = if main { "" } else { "    " };
    for event in view.apply(&envelope) {
        printer.event(indent, &event);
        match event {
            Event::ConfirmationNeeded {
                turn_id,
                tool_call_id,
                ..
            } => {
                let target = ChatUri::parse(&envelope.channel)?;
                client
                    .confirm_tool(&target, &turn_id, &tool_call_id, true)
                    .await?;
                printer.line(&format!("{indent}  approved by the demo client"));
            }
            Event::TurnEnded { turn_id, error, .. } if main && turn_id == turn => {
                return match error {
                    Some(error) => Err(CliError::Host(format!("the turn failed: {error}"))),
                    None => Ok(true),
                };
            }
            _ => {}
        }
    }
    Ok(false)
}

//! The real `claude` CLI (Claude Code 2.1.328) end to end: the testkit's mock model on
//! 127.0.0.1, our host (`agenthost::host::bind`, provider `claude`) over the real WebSocket, and
//! `agenthost-client` as the AHP client.
//!
//! The CLI comes from `AGENTHOST_CLAUDE_BIN`, else from the npm cache directory
//! (`$AGENTHOST_CLI_CACHE`, default `~/.cache/agenthost/clis`, where `.ci/run` installs it).
//! Without it the tests print why and pass, unless `AGENTHOST_REQUIRE_CLIS=1` (set by `.ci/run`),
//! which turns a missing CLI into a failure. Every wait polls with a deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agenthost::host::{HostOptions, bind};
use agenthost_client::ahp::SubscriptionEvent;
use agenthost_client::{ChatView, Event, HostConnection};
use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::{ChatUri, SafeId, SessionUri};
use agenthost_provider_claude::ClaudeConfig;
use agenthost_testkit::{MockModel, MockModelConfig};
use tokio::time::Instant;

/// The longest a test waits for the next event from the host.
const STALL: Duration = Duration::from_secs(60);

/// Where `claude` is, or `None` (after saying why) when the tests cannot run.
fn claude_binary() -> Option<PathBuf> {
    let explicit = std::env::var_os("AGENTHOST_CLAUDE_BIN").map(PathBuf::from);
    let cache = std::env::var_os("AGENTHOST_CLI_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/agenthost/clis"))
        });
    let found = explicit.or_else(|| {
        cache
            .map(|dir| dir.join("node_modules/.bin/claude"))
            .filter(|path| path.exists())
    });
    if found.is_none() {
        let why = "the claude CLI was not found (set AGENTHOST_CLAUDE_BIN, or `npm install \
                   @anthropic-ai/claude-code@2.1.328` in ~/.cache/agenthost/clis)";
        assert!(
            std::env::var_os("AGENTHOST_REQUIRE_CLIS").is_none(),
            "AGENTHOST_REQUIRE_CLIS is set but {why}"
        );
        eprintln!("skipped: {why}");
    }
    found
}

/// What outlives a host: the mock model, the working directory, `claude`'s home (its session
/// files) and the host's data directory.
struct Place {
    binary: PathBuf,
    mock: MockModel,
    work: PathBuf,
    home: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl Place {
    async fn new(mock: MockModelConfig) -> Option<Self> {
        let binary = claude_binary()?;
        let mock = MockModel::start(mock).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        let home = dir.path().join("home");
        std::fs::create_dir(&work).unwrap();
        std::fs::create_dir(&home).unwrap();
        Some(Self {
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
        claude.env_remove = vec!["ANTHROPIC_AUTH_TOKEN".into(), "CLAUDE_CONFIG_DIR".into()];
        claude.start_timeout = Duration::from_secs(60);
        claude.interrupt_grace = Duration::from_secs(10);
        claude.kill_grace = Duration::from_secs(2);
        claude
    }
}

/// One host with the `claude` provider pointed at the place's mock model, and a client on the
/// default chat of session `claude:/s1`.
struct Run {
    work: PathBuf,
    client: HostConnection,
    chat: ChatUri,
    view: ChatView,
    events: agenthost_client::ahp::ClientEventStream,
}

impl Run {
    /// A host on `place`; creates the session unless it is already stored there.
    async fn start(place: &Place, create: bool) -> Self {
        let server = bind(HostOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            providers: vec!["claude".into()],
            script: None,
            token: None,
            roots: vec![place.work.clone()],
            launch_kind: LaunchKind::Embedded("agenthost-e2e".into()),
            data_dir: Some(place.data.clone()),
            idle_eviction: None,
            claude: Some(place.claude()),
        })
        .await
        .unwrap();
        let url = server.url();
        tokio::spawn(server.serve(std::future::pending()));
        let client = HostConnection::connect(&url, "claude-e2e").await.unwrap();
        let events = client.client().events();
        let session = SessionUri::with_provider("claude", SafeId::new("s1").unwrap()).unwrap();
        let chat = ChatUri::default_for(&session);
        if create {
            let directory = format!("file://{}", place.work.display());
            let (_, created) = client
                .create_session("claude", "s1", Some(directory))
                .await
                .unwrap();
            assert_eq!(created, chat);
        }
        let (view, _subscription) = client.open_chat(&chat).await.unwrap();
        Self {
            work: place.work.clone(),
            client,
            chat,
            view,
            events,
        }
    }

    /// A place with `mock` and a host on it; `None` when the CLI is missing.
    async fn fresh(mock: MockModelConfig) -> Option<(Place, Self)> {
        let place = Place::new(mock).await?;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_tool_call_creates_the_file() {
    let Some((place, mut run)) = Run::fresh(MockModelConfig::default()).await else {
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
    assert_eq!(
        place.mock.requests().len(),
        2,
        "one call for the tool, one for the answer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_tool_call_does_not_run_and_the_turn_still_completes() {
    let Some((_place, mut run)) = Run::fresh(MockModelConfig::default()).await else {
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
    assert_eq!((error, cancelled), (None, false), "{events:?}");
    assert_eq!(tool_results(&events), vec![false], "{events:?}");
    assert_eq!(read(&run.work.join("out.txt")), None);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Text(t) if t.contains("did not run"))),
        "the model was told the tool was denied: {events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_error_surfaces_as_a_chat_error() {
    let config = MockModelConfig {
        fail_status: Some(400),
        fail_message: "mock refuses this request".into(),
        ..MockModelConfig::default()
    };
    let Some((_place, mut run)) = Run::fresh(config).await else {
        return;
    };
    run.client
        .start_turn(&run.chat, "t1", "Create out.txt containing hi")
        .await
        .unwrap();
    let (events, error, cancelled) = run.turn_end().await;
    assert!(!cancelled);
    let error = error.unwrap_or_else(|| panic!("the turn should fail: {events:?}"));
    assert!(error.contains("400"), "{error}");
    assert!(tool_results(&events).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_turn_stops_the_running_tool_and_the_conversation_goes_on() {
    // A tool that runs until it is killed, under a name no other process on the machine has.
    // (Claude Code refuses a long `sleep`, so it follows a file instead.)
    let marker = format!("started-{}.txt", std::process::id());
    let config = MockModelConfig {
        command: format!("touch {marker} && tail -f {marker} && echo late > late.txt"),
        ..MockModelConfig::default()
    };
    let Some((_place, mut run)) = Run::fresh(config).await else {
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

#[test]
fn after_a_host_restart_the_next_turn_resumes_the_claude_conversation() {
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    };
    // The mock model outlives both hosts on a runtime of its own.
    let model_runtime = runtime();
    let Some(place) = model_runtime.block_on(Place::new(MockModelConfig::default())) else {
        return;
    };
    // First host: one approved turn, then the whole host goes away (its runtime is dropped,
    // which kills the agent's process group).
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
    });
    drop(first);
    let before = place.mock.requests().len();
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
    let requests = place.mock.requests();
    let session_of = |record: &agenthost_testkit::RequestRecord| {
        record.headers.get("x-claude-code-session-id").cloned()
    };
    let first_session = session_of(&requests[0]);
    assert!(first_session.is_some(), "{:?}", requests[0].headers);
    let resumed = &requests[before..];
    assert!(!resumed.is_empty());
    for record in resumed {
        assert_eq!(session_of(record), first_session, "the same Claude session");
        assert_eq!(record.decision, "final_text");
    }
}

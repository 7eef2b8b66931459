//! The durability scenario matrix: features mixed the way people use them, through the real
//! `agent-host serve` over WebSocket with the scripted agent, stopped with `SIGTERM` and with
//! `SIGKILL`, started again on the same data directory, and compared.
//!
//! Each row runs its scenario, then a *held* turn: the agent starts a subagent that streams a
//! line and then waits (a long pause), so a turn — and a subagent's turn — is running when the
//! host stops. `SIGTERM` stops it there; `SIGKILL` kills it a random moment later (the seed is
//! printed; `AGENTHOST_SCENARIO_SEED=<seed>` replays). After the restart a fresh client
//! subscribes to every session and every chat the first client saw — subagent and side chats
//! included — and compares the turns with what the first client rebuilt, with the canonical
//! `ahp` reducers, from the actions it received (it never reads host state or the database):
//!
//! - a turn the client saw finished is restored with the same id, message, response parts and
//!   state;
//! - a turn the client saw running is restored finished (`complete`) or interrupted (state
//!   `error` with an `executionInterrupted` part); nothing else appears;
//! - every stop leaves at least one `executionInterrupted` (the held turns), and the parent's
//!   interrupted turn keeps its subagent's `Task` call (cancelled);
//! - the host's stderr (`RUST_LOG=warn`) holds no `ERROR` or `WARN` line, before or after the
//!   restart.
//!
//! Fields that legitimately change on restore (active clients, status, modification times) are
//! not compared. Each row is one `#[test]` running both stop kinds (with
//! `AGENTHOST_SLOW_TESTS=1`, five kills at different random moments).

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use agenthost_client::ChatView;
use agenthost_protocol::ahp_types::state::ChatState;
use agenthost_protocol::uri::path_to_file_uri;
use agenthost_protocol::{ActionEnvelope, ChatUri, SessionUri, StateAction};
use serde_json::{Value, json};

use support::{Peer, Place, Rng, STALL, Spawned, agent_host, git, runtime, seed_from};

/// The held turn every row ends with: a foreground subagent that says a line and then waits
/// far longer than any test.
fn held_turn() -> Value {
    json!({ "steps": [
        { "kind": "say", "text": "Starting a long investigation.", "chunk": 8 },
        { "kind": "subagent", "agent": "explorer", "description": "Investigate at length",
          "prompt": "Take your time", "steps": [
            { "kind": "say", "text": "Holding the subagent open.", "chunk": 8 },
            { "kind": "pause", "ms": 600000 }
        ]}
    ]})
}

/// A script: `turns` for a chat's first turns, then the held turn.
fn script(turns: Value) -> Value {
    json!({ "turns": turns, "default": held_turn() })
}

fn say(text: &str) -> Value {
    json!({ "kind": "say", "text": text, "chunk": 6 })
}

fn subagent(description: &str, steps: Value, background: bool) -> Value {
    json!({ "kind": "subagent", "agent": "helper", "description": description,
            "prompt": description, "result": format!("{description}: done"),
            "background": background, "steps": steps })
}

fn tool(name: &str) -> Value {
    json!({ "kind": "tool", "name": name, "invocation": format!("Run {name}"), "result": "ok" })
}

/// What one scenario does before the held turn.
type Scenario = for<'a> fn(&'a mut Client) -> Pin<Box<dyn Future<Output = ()> + 'a>>;

/// One row of the matrix.
struct Row {
    name: &'static str,
    script: Value,
    flags: &'static [&'static str],
    /// The work root is a git repository (for worktree isolation).
    git: bool,
    scenario: Scenario,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    Term,
    Kill,
}

/// The first client: one connection, every session it created watched, every chat it learns
/// of (`session/chatAdded`) subscribed and mirrored with the canonical reducer.
struct Client {
    peer: Peer,
    work: std::path::PathBuf,
    sessions: Vec<SessionUri>,
    views: BTreeMap<String, ChatView>,
    /// Envelopes of chats not subscribed yet (a view ignores those at or below its snapshot).
    early: Vec<ActionEnvelope>,
    /// Chats announced and not opened yet.
    announced: Vec<String>,
}

impl Client {
    async fn connect(url: &str, work: &Path) -> Self {
        Self {
            peer: Peer::connect(url, "scenario-client").await,
            work: work.to_path_buf(),
            sessions: Vec::new(),
            views: BTreeMap::new(),
            early: Vec::new(),
            announced: Vec::new(),
        }
    }

    /// Creates a session (with `config`), watches it and opens its default chat.
    async fn session(&mut self, id: &str, config: Option<Value>) -> ChatUri {
        let chat = self.session_only(id, config).await;
        self.open(chat.as_str()).await;
        chat
    }

    /// Creates a session and watches the session channel only; returns its default chat.
    async fn session_only(&mut self, id: &str, config: Option<Value>) -> ChatUri {
        let session = support::session_uri(id);
        let mut params = json!({
            "channel": session.as_str(), "provider": "scripted",
            "workingDirectories": [path_to_file_uri(&self.work).unwrap()]
        });
        if let Some(config) = config {
            params["config"] = config;
        }
        self.peer.request("createSession", params).await.unwrap();
        self.peer
            .request("subscribe", json!({ "channel": session.as_str() }))
            .await
            .unwrap();
        self.sessions.push(session.clone());
        ChatUri::default_for(&session)
    }

    async fn open(&mut self, chat: &str) {
        if self.views.contains_key(chat) {
            return;
        }
        let uri = ChatUri::parse(chat).unwrap();
        let mut view = self.peer.open_chat(&uri).await;
        for envelope in self.early.iter().filter(|e| e.channel == chat) {
            view.apply(envelope);
        }
        self.early.retain(|e| e.channel != chat);
        self.views.insert(chat.to_owned(), view);
    }

    async fn dispatch(&self, channel: &str, action: Value) {
        let action: StateAction = serde_json::from_value(action).unwrap();
        self.peer
            .conn
            .client()
            .dispatch(channel.to_owned(), action)
            .await
            .unwrap();
    }

    async fn start(&self, chat: &ChatUri, turn: &str, text: &str) {
        self.peer.conn.start_turn(chat, turn, text).await.unwrap();
    }

    /// Receives and applies envelopes until `done` holds (checked before each wait).
    async fn until(&mut self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = tokio::time::Instant::now() + STALL * 3;
        loop {
            while let Some(chat) = self.announced.pop() {
                self.open(&chat).await;
            }
            if done(self) {
                return;
            }
            let envelope = self
                .peer
                .next_envelope_by(deadline)
                .await
                .unwrap_or_else(|| panic!("waiting for {what}: nothing more came"));
            self.receive(envelope);
        }
    }

    fn receive(&mut self, envelope: ActionEnvelope) {
        if let StateAction::SessionChatAdded(added) = &envelope.action {
            self.announced.push(added.summary.resource.clone());
        }
        match self.views.get_mut(&envelope.channel) {
            Some(view) => {
                view.apply(&envelope);
            }
            None if envelope.channel.starts_with("ahp-chat:") => self.early.push(envelope),
            None => {}
        }
    }

    fn chat(&self, chat: &ChatUri) -> &ChatState {
        self.views[chat.as_str()].state()
    }

    /// The state (`complete`, `cancelled`, `error`) of a finished turn.
    fn finished(&self, chat: &ChatUri, turn: &str) -> Option<String> {
        let state = self.views.get(chat.as_str())?.state();
        let turn = state.turns.iter().find(|t| t.id == turn)?;
        Some(
            serde_json::to_value(turn.state)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned(),
        )
    }

    /// Runs a turn and waits for its end; returns its final state.
    async fn turn(&mut self, chat: &ChatUri, turn: &str, text: &str) -> String {
        self.start(chat, turn, text).await;
        self.until(&format!("{turn} to end"), |c| {
            c.finished(chat, turn).is_some()
        })
        .await;
        self.finished(chat, turn).unwrap()
    }

    /// Whether some subagent chat runs a turn that streamed `text`.
    fn subagent_streams(&self, text: &str) -> bool {
        self.views.iter().any(|(uri, view)| {
            uri.starts_with("ahp-chat://subagent/")
                && view.state().active_turn.as_ref().is_some_and(|turn| {
                    serde_json::to_string(&turn.response_parts)
                        .unwrap()
                        .contains(text)
                })
        })
    }
}

fn is_interrupted(turn: &Value) -> bool {
    turn["state"] == "error"
        && turn["responseParts"].as_array().is_some_and(|parts| {
            parts
                .iter()
                .any(|p| p["error"]["errorType"] == "executionInterrupted")
        })
}

/// The compared fields of a turn.
fn compared(turn: &Value) -> Value {
    json!({
        "id": turn["id"], "message": turn["message"],
        "responseParts": turn["responseParts"], "state": turn["state"]
    })
}

/// Compares one chat as the first client saw it with the restored one; returns how many
/// restored turns are interrupted.
fn compare_chat(seen: &ChatState, restored: &ChatState, context: &str) -> usize {
    let uri = &seen.resource;
    assert!(
        restored.active_turn.is_none(),
        "{context}: {uri} restored with a running turn"
    );
    let restored: Vec<Value> = restored
        .turns
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    let find = |id: &str| restored.iter().find(|t| t["id"] == id);
    for turn in &seen.turns {
        let turn = serde_json::to_value(turn).unwrap();
        let id = turn["id"].as_str().unwrap();
        let back = find(id).unwrap_or_else(|| {
            panic!("{context}: {uri}: turn {id}, seen finished, is gone after the restart")
        });
        assert_eq!(
            compared(back),
            compared(&turn),
            "{context}: {uri}: turn {id} changed across the restart"
        );
    }
    let mut allowed: BTreeSet<&str> = seen.turns.iter().map(|t| t.id.as_str()).collect();
    if let Some(active) = &seen.active_turn {
        allowed.insert(&active.id);
        let back = find(&active.id).unwrap_or_else(|| {
            panic!(
                "{context}: {uri}: turn {}, seen running, is gone after the restart",
                active.id
            )
        });
        assert!(
            back["state"] == "complete" || is_interrupted(back),
            "{context}: {uri}: turn {}, seen running, came back neither complete nor \
             interrupted: {back}",
            active.id
        );
        assert_eq!(
            back["message"],
            serde_json::to_value(&active.message).unwrap(),
            "{context}: {uri}: the running turn's message"
        );
    }
    for turn in &restored {
        let id = turn["id"].as_str().unwrap();
        assert!(
            allowed.contains(id),
            "{context}: {uri}: turn {id} appeared after the restart"
        );
    }
    restored.iter().filter(|t| is_interrupted(t)).count()
}

/// The interrupted turn of the chat that ran the held turn keeps what it had done up to its
/// last tool call: the subagent's `Task` call, cancelled, after the text streamed before it.
fn assert_keeps_its_task_call(chat: &ChatState, context: &str) {
    let turns: Vec<Value> = chat
        .turns
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .filter(is_interrupted)
        .collect();
    let kept =
        turns.iter().any(|turn| {
            turn["responseParts"].as_array().unwrap().iter().any(|p| {
                p["toolCall"]["toolName"] == "Task" && p["toolCall"]["status"] == "cancelled"
            })
        });
    assert!(
        kept,
        "{context}: no interrupted turn of {} keeps its Task call: {turns:?}",
        chat.resource
    );
}

fn serve(place: &Place, script: &Path, flags: &[&str]) -> (Spawned, String) {
    let mut command = agent_host();
    command.args(["serve", "--listen", "127.0.0.1:0", "--root"]);
    command.arg(&place.work).arg("--data-dir").arg(&place.data);
    command.arg("--script").arg(script).args(flags);
    // Warnings and errors from everything, and the shutdown's history summary.
    command.env("RUST_LOG", "warn,agenthost_service::agent=info");
    let process = Spawned::spawn(command);
    let url = process.line();
    (process, url)
}

/// Panics on any `ERROR` or `WARN` line of a host's stderr.
fn assert_quiet(stderr: &str, context: &str) {
    let noisy: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(" ERROR ") || l.contains(" WARN "))
        .collect();
    assert!(
        noisy.is_empty(),
        "{context}: the host logged:\n{}",
        noisy.join("\n")
    );
}

/// Both stop kinds; with `AGENTHOST_SLOW_TESTS=1`, four more kills at other random moments.
fn run_row(row: &Row) {
    let seed = seed_from("AGENTHOST_SCENARIO_SEED");
    let kills = if slow() { 5 } else { 1 };
    run_once(row, Stop::Term, seed);
    for n in 0..kills {
        run_once(row, Stop::Kill, seed.wrapping_add(n));
    }
}

fn run_once(row: &Row, stop: Stop, seed: u64) {
    let context = format!(
        "row {:?}, {stop:?} (AGENTHOST_SCENARIO_SEED={seed} replays)",
        row.name
    );
    let place = Place::new();
    if row.git {
        std::fs::write(place.work.join("readme.txt"), "seed\n").unwrap();
        for args in [
            &["init", "--quiet", "-b", "main"][..],
            &["add", "."],
            &["commit", "--quiet", "-m", "seed"],
        ] {
            git(&place.work, args);
        }
    }
    let script = place.script(&row.script);
    let rt = runtime();
    let (mut host, url) = serve(&place, &script, row.flags);
    let (sessions, seen) = rt.block_on(async {
        let mut client = Client::connect(&url, &place.work).await;
        (row.scenario)(&mut client).await;
        // The held turn, in the first session's default chat.
        let chat = ChatUri::default_for(&client.sessions[0]);
        client.start(&chat, "held", "investigate at length").await;
        client
            .until("the held subagent", |c| {
                c.subagent_streams("Holding the subagent open.")
            })
            .await;
        if stop == Stop::Kill {
            let delay = Rng(seed).below(300);
            eprintln!("{context}: SIGKILL {delay} ms after the held subagent streamed");
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        // Everything received so far counts as seen.
        while let Some(envelope) = client
            .peer
            .next_envelope_by(tokio::time::Instant::now())
            .await
        {
            client.receive(envelope);
        }
        let seen: BTreeMap<String, ChatState> = client
            .views
            .iter()
            .map(|(uri, view)| (uri.clone(), view.state().clone()))
            .collect();
        (client.sessions.clone(), seen)
    });
    match stop {
        Stop::Term => {
            host.terminate();
            let (status, _, stderr) = host.wait();
            assert!(status.success(), "{context}: {status}\n{stderr}");
            assert_quiet(&stderr, &context);
            let summary = stderr
                .lines()
                .find(|l| l.contains("chat history written"))
                .unwrap_or_else(|| panic!("{context}: no history summary:\n{stderr}"));
            assert!(
                summary.contains("kept=0") && summary.contains("peak=0"),
                "{context}: {summary}"
            );
            eprintln!("matrix | {} | history at shutdown: {summary}", row.name);
        }
        Stop::Kill => {
            host.kill();
            assert_quiet(&host.stderr(), &context);
        }
    }
    let (mut again, url) = serve(&place, &script, row.flags);
    let interrupted = rt.block_on(async {
        let peer = Peer::connect(&url, "after-restart").await;
        let listed = peer.listed().await;
        let mut interrupted = 0;
        for session in &sessions {
            assert!(
                listed.contains(&session.to_string()),
                "{context}: {session} is not listed after the restart"
            );
            let snapshot = peer
                .request("subscribe", json!({ "channel": session.as_str() }))
                .await
                .unwrap();
            let catalog: BTreeSet<String> = snapshot["snapshot"]["state"]["chats"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["resource"].as_str().unwrap().to_owned())
                .collect();
            for chat in seen.keys().filter(|c| {
                ChatUri::parse(c)
                    .ok()
                    .and_then(|c| chat_session(&c, &sessions))
                    .as_ref()
                    == Some(session)
            }) {
                assert!(
                    catalog.contains(chat),
                    "{context}: {chat} is missing from {session}'s catalog after the restart"
                );
            }
        }
        let held_chat = ChatUri::default_for(&sessions[0]).to_string();
        for (uri, seen_chat) in &seen {
            let (view, _subscription) = peer
                .conn
                .open_chat(&ChatUri::parse(uri).unwrap())
                .await
                .unwrap_or_else(|e| panic!("{context}: {uri} after the restart: {e}"));
            interrupted += compare_chat(seen_chat, view.state(), &context);
            if *uri == held_chat {
                assert_keeps_its_task_call(view.state(), &context);
            }
        }
        peer.close().await;
        interrupted
    });
    assert!(
        interrupted >= 1,
        "{context}: no executionInterrupted after the restart"
    );
    again.terminate();
    let (status, _, stderr) = again.wait();
    assert!(status.success(), "{context}: {status}\n{stderr}");
    assert_quiet(&stderr, &format!("{context}, after the restart"));
    eprintln!(
        "matrix | {} | {stop:?} | {} chats compared | {interrupted} interrupted | ok",
        row.name,
        seen.len()
    );
}

/// The session of a chat the client saw: a default chat's, else the session whose id its
/// subagent URI encodes, else (a side chat) the one session that has it.
fn chat_session(chat: &ChatUri, sessions: &[SessionUri]) -> Option<SessionUri> {
    if let Ok(Some(session)) = chat.default_chat_session() {
        return Some(session);
    }
    if let Ok(Some((session, _))) = chat.subagent_parent() {
        return Some(session);
    }
    (sessions.len() == 1).then(|| sessions[0].clone())
}

// ---- The rows ----

fn foreground_subagent() -> Row {
    Row {
        name: "foreground subagent",
        script: script(json!([
            { "steps": [ say("Looking into it."),
                subagent("Read the code", json!([say("Reading."), tool("grep")]), false),
                say("Found it.") ] }
        ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let chat = c.session("fg", None).await;
                assert_eq!(c.turn(&chat, "t1", "find the bug").await, "complete");
            })
        },
    }
}

fn background_subagents() -> Row {
    Row {
        name: "two background subagents, one still running",
        script: script(json!([
            { "steps": [
                subagent("Quick look", json!([say("Quick.")]), true),
                subagent("Long look", json!([say("Holding the subagent open."),
                    { "kind": "pause", "ms": 600000 }]), true),
                say("Both started.") ] }
        ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let chat = c.session("bg", None).await;
                c.start(&chat, "t1", "look twice").await;
                // The quick one finished, the long one streams; the turn waits for both (the
                // held turn of this row is t1 itself, so nothing more is started).
                c.until("the quick subagent to finish", |c| {
                    c.views.iter().any(|(uri, v)| {
                        uri.starts_with("ahp-chat://subagent/")
                            && v.state().active_turn.is_none()
                            && !v.state().turns.is_empty()
                    }) && c.subagent_streams("Holding the subagent open.")
                })
                .await;
            })
        },
    }
}

fn nested_subagent() -> Row {
    Row {
        name: "nested subagent",
        script: script(json!([
            { "steps": [ subagent("Outer", json!([say("Outer work."),
                subagent("Inner", json!([say("Inner work.")]), false)]), false),
                say("Nested done.") ] }
        ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let chat = c.session("nested", None).await;
                assert_eq!(c.turn(&chat, "t1", "dig deep").await, "complete");
                let subagents = c
                    .views
                    .keys()
                    .filter(|u| u.starts_with("ahp-chat://subagent/"))
                    .count();
                assert_eq!(subagents, 2, "outer and inner subagent chats");
            })
        },
    }
}

fn side_chat() -> Row {
    Row {
        name: "side chat of a chat with a subagent",
        script: script(json!([
            { "steps": [ subagent("Survey", json!([say("Surveying.")]), false), say("Surveyed.") ] }
        ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let chat = c.session("side", None).await;
                assert_eq!(c.turn(&chat, "t1", "survey").await, "complete");
                let side = "ahp-chat:/side-1";
                c.peer
                    .request(
                        "createChat",
                        json!({ "channel": c.sessions[0].as_str(), "chat": side,
                                "source": { "kind": "sideChat", "chat": chat.as_str(),
                                            "turnId": "t1" } }),
                    )
                    .await
                    .unwrap();
                c.until("the side chat", |c| c.announced.is_empty()).await;
                c.open(side).await;
                let side = ChatUri::parse(side).unwrap();
                // A side chat plays the script from its first turn: a subagent of its own.
                assert_eq!(c.turn(&side, "s1", "and the tests?").await, "complete");
            })
        },
    }
}

fn queued_messages() -> Row {
    Row {
        name: "queued messages draining",
        script: script(json!([
            { "steps": [ say("First, slowly."), { "kind": "pause", "ms": 300 }, say("Done.") ] },
            { "steps": [ say("Second.") ] },
            { "steps": [ say("Third.") ] }
        ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let chat = c.session("queue", None).await;
                c.start(&chat, "t1", "first").await;
                for (id, text) in [("q1", "second"), ("q2", "third")] {
                    c.dispatch(
                        chat.as_str(),
                        json!({ "type": "chat/pendingMessageSet", "kind": "queued", "id": id,
                                "message": { "text": text, "origin": { "kind": "user" } } }),
                    )
                    .await;
                }
                c.until("the queue to drain", |c| {
                    c.chat(&chat).turns.len() == 3 && c.chat(&chat).active_turn.is_none()
                })
                .await;
            })
        },
    }
}

fn cancelled_turn() -> Row {
    Row {
        name: "a cancelled turn",
        script: script(json!([
            { "steps": [ say("Working on it."), { "kind": "pause", "ms": 600000 } ] },
            { "steps": [ say("After the cancel.") ] }
        ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let chat = c.session("cancel", None).await;
                c.start(&chat, "t1", "take forever").await;
                c.until("t1 to stream", |c| {
                    c.chat(&chat)
                        .active_turn
                        .as_ref()
                        .is_some_and(|t| !t.response_parts.is_empty())
                })
                .await;
                c.peer.conn.cancel_turn(&chat, "t1", 50).await.unwrap();
                c.until("t1 cancelled", |c| c.finished(&chat, "t1").is_some())
                    .await;
                assert_eq!(c.finished(&chat, "t1").unwrap(), "cancelled");
                assert_eq!(c.turn(&chat, "t2", "then this").await, "complete");
            })
        },
    }
}

fn resumable_error() -> Row {
    Row {
        name: "a resumable error, then resume",
        script: script(json!([
            { "steps": [ say("Trying."),
                { "kind": "error", "message": "rate limited", "errorType": "rateLimited",
                  "resumable": true } ] },
            { "steps": [ say("Resumed and finished.") ] }
        ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let chat = c.session("resume", None).await;
                assert_eq!(c.turn(&chat, "t1", "try").await, "error");
                c.dispatch(
                    chat.as_str(),
                    json!({ "type": "chat/turnResume", "turnId": "t1" }),
                )
                .await;
                // The agent is asked again under the same turn id, and this time it finishes.
                c.until("t1 to finish after the resume", |c| {
                    c.finished(&chat, "t1").as_deref() == Some("complete")
                })
                .await;
                let turn = serde_json::to_string(&c.chat(&chat).turns[0]).unwrap();
                assert!(turn.contains("Resumed and finished."), "{turn}");
            })
        },
    }
}

fn rename() -> Row {
    Row {
        name: "a /rename",
        script: script(json!([ { "steps": [ say("An answer.") ] } ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let chat = c.session("rename", None).await;
                assert_eq!(c.turn(&chat, "t1", "hello").await, "complete");
                assert_eq!(
                    c.turn(&chat, "r1", "/rename Durable title").await,
                    "complete"
                );
            })
        },
    }
}

fn truncation() -> Row {
    Row {
        name: "a truncation",
        script: script(json!([
            { "steps": [ say("One.") ] }, { "steps": [ say("Two.") ] },
            { "steps": [ say("Three.") ] }, { "steps": [ say("Four.") ] }
        ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let chat = c.session("truncate", None).await;
                for (turn, text) in [("t1", "one"), ("t2", "two"), ("t3", "three")] {
                    assert_eq!(c.turn(&chat, turn, text).await, "complete");
                }
                c.dispatch(
                    chat.as_str(),
                    json!({ "type": "chat/truncated", "turnId": "t1" }),
                )
                .await;
                c.until("the truncation", |c| c.chat(&chat).turns.len() == 1)
                    .await;
                assert_eq!(c.turn(&chat, "t4", "four").await, "complete");
            })
        },
    }
}

fn unattended_deny() -> Row {
    Row {
        name: "a confirmation denied by --unattended deny",
        script: script(json!([
            { "steps": [
                say("I need to write a file."),
                { "kind": "tool", "name": "write_file", "confirm": true,
                  "effect": { "kind": "writeFile", "path": "notes.txt", "content": "x\n" } },
                say("Moving on.") ] }
        ])),
        flags: &["--unattended", "deny", "--unattended-grace", "200ms"],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                // Nobody claims the confirmation: the client watches the session only (a live
                // chat subscription is a claim) until the turn has ended.
                let chat = c.session_only("unattended", None).await;
                c.start(&chat, "t1", "write the notes").await;
                let deadline = std::time::Instant::now() + STALL;
                loop {
                    let sessions = c.peer.conn.list_sessions().await.unwrap();
                    let done = sessions.items.iter().any(|s| {
                        // Requests are handled in order: the turn has started by now, so
                        // "not in progress" means it ended.
                        s.resource == c.sessions[0].as_str() && s.status & 8 == 0
                    });
                    if done {
                        break;
                    }
                    assert!(std::time::Instant::now() < deadline, "t1 never ended");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                c.open(chat.as_str()).await;
                c.until("t1 in the chat", |c| c.finished(&chat, "t1").is_some())
                    .await;
                let turn = serde_json::to_string(&c.chat(&chat).turns[0]).unwrap();
                assert!(turn.contains("Moving on."), "{turn}");
                assert!(!c.work.join("notes.txt").exists(), "the denied call ran");
            })
        },
    }
}

fn worktree() -> Row {
    Row {
        name: "a worktree-isolated session",
        script: script(json!([
            { "steps": [ { "kind": "tool", "name": "write_file",
                "effect": { "kind": "writeFile", "path": "iso.txt", "content": "isolated\n" } },
                subagent("Check", json!([say("Checked.")]), false) ] }
        ])),
        flags: &[],
        git: true,
        scenario: |c| {
            Box::pin(async move {
                let chat = c
                    .session("iso", Some(json!({ "isolation": "worktree" })))
                    .await;
                assert_eq!(c.turn(&chat, "t1", "write in isolation").await, "complete");
                assert!(
                    !c.work.join("iso.txt").exists(),
                    "written outside the worktree"
                );
            })
        },
    }
}

fn two_sessions() -> Row {
    Row {
        name: "two sessions interleaved",
        script: script(json!([
            { "steps": [ say("First of this chat."),
                subagent("Side work", json!([say("Side work.")]), false) ] },
            { "steps": [ say("Second of this chat.") ] }
        ])),
        flags: &[],
        git: false,
        scenario: |c| {
            Box::pin(async move {
                let a = c.session("one", None).await;
                let b = c.session("two", None).await;
                c.start(&a, "a1", "first in one").await;
                c.start(&b, "b1", "first in two").await;
                c.until("both first turns", |c| {
                    c.finished(&a, "a1").is_some() && c.finished(&b, "b1").is_some()
                })
                .await;
                c.start(&b, "b2", "second in two").await;
                c.start(&a, "a2", "second in one").await;
                c.until("both second turns", |c| {
                    c.finished(&a, "a2").is_some() && c.finished(&b, "b2").is_some()
                })
                .await;
            })
        },
    }
}

/// `AGENTHOST_SLOW_TESTS=1`: more kills per row.
fn slow() -> bool {
    std::env::var("AGENTHOST_SLOW_TESTS").is_ok_and(|v| v == "1")
}

#[test]
fn matrix_foreground_subagent() {
    run_row(&foreground_subagent());
}

#[test]
fn matrix_background_subagents() {
    run_row(&background_subagents());
}

#[test]
fn matrix_nested_subagent() {
    run_row(&nested_subagent());
}

#[test]
fn matrix_side_chat() {
    run_row(&side_chat());
}

#[test]
fn matrix_queued_messages() {
    run_row(&queued_messages());
}

#[test]
fn matrix_cancelled_turn() {
    run_row(&cancelled_turn());
}

#[test]
fn matrix_resumable_error() {
    run_row(&resumable_error());
}

#[test]
fn matrix_rename() {
    run_row(&rename());
}

#[test]
fn matrix_truncation() {
    run_row(&truncation());
}

#[test]
fn matrix_unattended_deny() {
    run_row(&unattended_deny());
}

#[test]
fn matrix_worktree() {
    run_row(&worktree());
}

#[test]
fn matrix_two_sessions() {
    run_row(&two_sessions());
}

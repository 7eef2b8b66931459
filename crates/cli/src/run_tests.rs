#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use agenthost_dispatcher::LaunchKind;
use agenthost_protocol::StateAction;
use serde_json::{Value, json};

use super::*;
use crate::host::{HostOptions, bind};
use crate::term::Style;

/// A host with the scripted provider running `script`, rooted at `<tmp>/work` (a git repository
/// with one commit); served until the test ends. Returns the URL and the work folder.
async fn host(tmp: &Path, script: Value) -> (String, PathBuf) {
    let work = tmp.canonicalize().unwrap().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("readme.txt"), "hello\n").unwrap();
    for args in [
        &["init", "--quiet", "-b", "main"][..],
        &["add", "-A"],
        &["commit", "--quiet", "-m", "seed"],
    ] {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@invalid"])
            .args(args)
            .current_dir(&work)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success());
    }
    let script_path = tmp.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let server = bind(HostOptions {
        script: Some(script_path),
        data_dir: Some(tmp.join("data")),
        ..HostOptions::scripted(vec![work.clone()], LaunchKind::Embedded("run-test".into()))
    })
    .await
    .unwrap();
    let url = server.url();
    tokio::spawn(server.serve(std::future::pending()));
    (url, work)
}

fn confirm_script() -> Value {
    json!({ "turns": [{ "steps": [
        { "kind": "say", "text": "I will edit the readme.", "chunk": 8 },
        { "kind": "tool", "name": "write_file", "displayName": "Write file", "confirm": true,
          "effect": { "kind": "writeFile", "path": "readme.txt", "content": "hello\nagain\n" } },
        { "kind": "say", "text": "Done.", "chunk": 8 }
    ]}]})
}

fn options(work: &Path, json: bool) -> RunOptions {
    RunOptions {
        provider: "scripted".into(),
        model: None,
        cwd: work.to_owned(),
        prompt: "edit the readme".into(),
        json,
        answers: Answers::Ask,
        stall: Duration::from_secs(20),
        resume: None,
        chat: None,
    }
}

/// Input with `answers` typed ahead; the interrupt sender is returned to keep it open.
fn input(answers: &[&str]) -> (Input, mpsc::Sender<()>, mpsc::Sender<String>) {
    let (line_tx, lines) = mpsc::channel(8);
    for answer in answers {
        line_tx.try_send((*answer).to_owned()).unwrap();
    }
    let (interrupt_tx, interrupts) = mpsc::channel(1);
    (Input { lines, interrupts }, interrupt_tx, line_tx)
}

/// Runs and returns what was printed — without the last line, which for a new session says
/// how to go on with it (checked here: its id varies).
async fn run_plain(url: &str, options: &RunOptions, input: Input) -> (Outcome, String) {
    let mut renderer = Renderer::new(Vec::new(), Style::plain());
    let outcome = run(url, options, input, &mut renderer).await.unwrap();
    let mut text = String::from_utf8(renderer.into_inner()).unwrap();
    if options.resume.is_none() && !options.json {
        let last = text.trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
        let line = text.split_off(last);
        let session = line
            .strip_prefix("session: ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no session line at the end: {line:?}"));
        assert_eq!(
            line,
            format!(
                "session: {session} (go on with `agent-host run --session {session} \"…\"` or \
                 `agent-host chat --session {session}`)\n"
            )
        );
    }
    (outcome, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_tool_runs_and_the_changed_files_are_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, work) = host(tmp.path(), confirm_script()).await;
    let (input, _interrupts, _lines) = input(&["y"]);
    let (outcome, text) = run_plain(&url, &options(&work, false), input).await;
    assert_eq!(outcome, Outcome::Completed, "{text}");
    assert_eq!(
        text,
        "> edit the readme\nI will edit the readme.\ntool: Write file\n\
         confirm: Write `readme.txt`\n    {\"content\":\"hello\\nagain\\n\",\"path\":\"readme.txt\"}\n\
         approve Write `readme.txt`? [y/N/a = always write_file] approved\n\
         done: Wrote `readme.txt`\nDone.\nChanged files:\n  M readme.txt (+1 -0)\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("readme.txt")).unwrap(),
        "hello\nagain\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_tool_does_not_run_and_nothing_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, work) = host(tmp.path(), confirm_script()).await;
    let (input, _interrupts, _lines) = input(&["n"]);
    let (outcome, text) = run_plain(&url, &options(&work, false), input).await;
    assert_eq!(outcome, Outcome::Completed, "{text}");
    assert!(text.contains("denied\n"), "{text}");
    assert!(text.ends_with("No files changed.\n"), "{text}");
    assert_eq!(
        std::fs::read_to_string(work.join("readme.txt")).unwrap(),
        "hello\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_cancels_the_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({ "turns": [{ "steps": [
        { "kind": "say", "text": "Thinking hard.", "chunk": 32 },
        { "kind": "pause", "ms": 60000 },
        { "kind": "say", "text": "Never said.", "chunk": 32 }
    ]}]});
    let (url, work) = host(tmp.path(), script).await;
    let (input, interrupts, _lines) = input(&[]);
    // Pressed before the turn even started: `run` reads interrupts only once its turn has been
    // sent, and the host takes the turn and its cancellation from one connection in order.
    interrupts.send(()).await.unwrap();
    let options = options(&work, false);
    let running = tokio::spawn(async move { run_plain(&url, &options, input).await });
    let (outcome, text) = tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, Outcome::Cancelled, "{text}");
    assert!(text.contains("cancelled"), "{text}");
    assert!(!text.contains("Never said"), "{text}");
}

/// `--json`: every line parses as an action envelope, and reducing the chat's envelopes from an
/// empty chat gives the chat the host holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_reduces_to_the_hosts_chat() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, work) = host(tmp.path(), confirm_script()).await;
    let mut options = options(&work, true);
    options.answers = Answers::ApproveAll;
    let (input, _interrupts, _lines) = input(&[]);
    let (outcome, text) = run_plain(&url, &options, input).await;
    assert_eq!(outcome, Outcome::Completed);
    let envelopes: Vec<agenthost_protocol::ActionEnvelope> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let chat = envelopes
        .iter()
        .find(|e| matches!(e.action, StateAction::ChatTurnStarted(_)))
        .unwrap()
        .channel
        .clone();

    let client = HostConnection::connect(&url, "checker").await.unwrap();
    let (view, _subscription) = client
        .open_chat(&ChatUri::parse(&chat).unwrap())
        .await
        .unwrap();
    // The chat as it was before the turn, then every envelope `--json` printed for it.
    let mut mine = view.state().clone();
    mine.turns.clear();
    mine.active_turn = None;
    for envelope in envelopes.iter().filter(|e| e.channel == chat) {
        ahp::reducers::apply_action_to_chat(&mut mine, &envelope.action);
    }
    assert_eq!(mine.turns, view.state().turns);
    assert_eq!(mine.turns.len(), 1);
}

/// `attach` from a second client answers the confirmation `run` is asking about: the first
/// view sees the tool finish without answering, and the tool ran once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_answers_a_confirmation_another_client_is_asking_about() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, work) = host(tmp.path(), confirm_script()).await;
    let (run_input, _run_interrupts, run_lines) = input(&[]);
    let run_url = url.clone();
    let run_options = options(&work, false);
    let running = tokio::spawn(async move { run_plain(&run_url, &run_options, run_input).await });

    // The session `run` created, once its turn waits for the confirmation.
    let client = HostConnection::connect(&url, "watcher").await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let session = loop {
        let sessions = client.list_sessions().await.unwrap().items;
        if let Some(summary) = sessions.first()
            && agenthost_protocol::ahp_types::state::SessionStatus::from_bits(summary.status)
                .contains(agenthost_protocol::ahp_types::state::SessionStatus::InputNeeded)
        {
            break summary.resource.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "no session waits");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    client.close().await;

    let (attach_input, _attach_interrupts, _attach_lines) = input(&["y"]);
    let mut renderer = Renderer::new(Vec::new(), Style::plain());
    let attach_options = AttachOptions {
        json: false,
        answers: Answers::Ask,
        until_done: true,
        stall: Duration::from_secs(20),
    };
    let seen = attach(&url, &session, &attach_options, attach_input, &mut renderer)
        .await
        .unwrap();
    let attached = String::from_utf8(renderer.into_inner()).unwrap();
    assert_eq!(seen, Some(Outcome::Completed), "{attached}");
    assert!(
        attached.starts_with(&format!("attached to {session}")),
        "{attached}"
    );
    assert!(
        attached.contains("approve Write `readme.txt`? [y/N/a = always write_file] approved\n"),
        "{attached}"
    );
    assert!(attached.contains("done: Wrote `readme.txt`"), "{attached}");

    let (outcome, ran) = tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .unwrap()
        .unwrap();
    drop(run_lines);
    assert_eq!(outcome, Outcome::Completed, "{ran}");
    assert!(ran.contains("approve Write `readme.txt`? [y/N/a"), "{ran}");
    assert!(
        !ran.contains("approved"),
        "the first view never answered: {ran}"
    );
    assert_eq!(ran.matches("done: Wrote").count(), 1, "{ran}");
    assert_eq!(
        std::fs::read_to_string(work.join("readme.txt")).unwrap(),
        "hello\nagain\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_named_and_never_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let (url, _work) = host(tmp.path(), confirm_script()).await;
    let (base, _) = url.split_once("?tkn=").unwrap();
    let wrong = format!("{base}?tkn=not-the-token-12345");
    let Err(error) = connect_host(&wrong, "test").await else {
        panic!("a wrong token connected");
    };
    assert!(
        error.to_string().contains("refused the connection token"),
        "{error}"
    );
    assert!(
        !error.to_string().contains("not-the-token-12345"),
        "{error}"
    );
}

/// `a` approves the tool for the rest of the run: its next confirmation is answered without
/// asking; the policies answer and say why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_approves_the_tool_from_then_on_and_policies_say_why() {
    let script = json!({ "turns": [{ "steps": [
        { "kind": "tool", "name": "append_file", "displayName": "Append", "confirm": true,
          "effect": { "kind": "appendFile", "path": "log.txt", "content": "one\n" } },
        { "kind": "tool", "name": "append_file", "displayName": "Append", "confirm": true,
          "effect": { "kind": "appendFile", "path": "log.txt", "content": "two\n" } }
    ]}]});
    let tmp = tempfile::tempdir().unwrap();
    let (url, work) = host(tmp.path(), script.clone()).await;
    let (typed, _interrupts, _lines) = input(&["a"]);
    let (outcome, text) = run_plain(&url, &options(&work, false), typed).await;
    assert_eq!(outcome, Outcome::Completed, "{text}");
    assert_eq!(
        text.matches("[y/N/a = always append_file]").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("approved, and from now on for this tool"),
        "{text}"
    );
    assert!(text.contains(": approved (always append_file)"), "{text}");
    assert_eq!(
        std::fs::read_to_string(work.join("log.txt")).unwrap(),
        "one\ntwo\n"
    );

    for (answers, said, log) in [
        (Answers::DenyAll, "denied (--no)", None),
        (Answers::NoTerminal, "denied (no terminal to ask on", None),
        (Answers::ApproveAll, "approved (--yes)", Some("one\ntwo\n")),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (url, work) = host(tmp.path(), script.clone()).await;
        let mut options = options(&work, false);
        options.answers = answers;
        let (nothing, _interrupts, _lines) = input(&[]);
        let (_, text) = run_plain(&url, &options, nothing).await;
        assert_eq!(text.matches(said).count(), 2, "{answers:?}: {text}");
        assert!(!text.contains("[y/N"), "{answers:?} never asks: {text}");
        assert_eq!(
            std::fs::read_to_string(work.join("log.txt"))
                .ok()
                .as_deref(),
            log,
            "{answers:?}"
        );
    }
}

//! The ACP driver against a stand-in agent (`agenthost_testkit::FakeCli`, a POSIX shell script
//! that plays a plan of lines, answers requests and logs what the driver writes): the
//! handshake, a prompt, the permission round trip, cancel (permissions withdrawn first, an
//! agent that answers a cancel with `end_turn`, one that never stops), a restored chat loading
//! its session with the replay dropped, model selection, a crash, dispose. Waits across the
//! process boundary poll with a deadline; every timeout of the driver is set short here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use agenthost_protocol::StateAction;
use agenthost_protocol::state::{ModelSelection, Turn};
use agenthost_provider_acp::{AcpAgentConfig, AcpProvider};
use agenthost_provider_api::testing::{SignalLog, action, start_request, turn_request};
use agenthost_provider_api::{PermissionDecision, Provider, ProviderSession, RestoreSession};
use agenthost_testkit::{FakeCli, Step};
use rustix::process::{Pid, test_kill_process_group};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(20);
const SESSION: &str = "acp-s1";

struct Fake {
    cli: FakeCli,
}

impl Fake {
    fn new() -> Self {
        Self {
            cli: FakeCli::new().unwrap(),
        }
    }

    fn plan(&self, start: usize, steps: &[Step]) {
        self.cli.plan(start, steps).unwrap();
    }

    fn config(&self) -> AcpAgentConfig {
        let mut config = AcpAgentConfig::new("fake", self.cli.binary());
        config.cli.env = self.cli.env();
        config.cli.start_timeout = Duration::from_secs(10);
        config.request_timeout = Duration::from_secs(10);
        config.cli.cancel_grace = Duration::from_secs(5);
        config.cli.kill_grace = Duration::from_millis(500);
        config
    }

    fn written(&self) -> Vec<Value> {
        self.cli.written()
    }

    fn starts(&self) -> Vec<String> {
        self.cli.starts()
    }

    fn pid(&self) -> Option<Pid> {
        self.cli.pid().and_then(Pid::from_raw)
    }
}

struct Chat {
    session: std::sync::Arc<dyn ProviderSession>,
    log: SignalLog,
    _work: tempfile::TempDir,
}

impl std::ops::Deref for Chat {
    type Target = SignalLog;
    fn deref(&self) -> &SignalLog {
        &self.log
    }
}

impl Chat {
    /// Starts turn `id` with `text`; the start must succeed.
    async fn send(&self, id: &str, text: &str) {
        self.session
            .send_turn(turn_request(id, text))
            .await
            .unwrap();
    }
}

impl std::ops::DerefMut for Chat {
    fn deref_mut(&mut self) -> &mut SignalLog {
        &mut self.log
    }
}

async fn start(config: AcpAgentConfig, resume: Option<&str>) -> Chat {
    start_with(config, resume, Vec::new()).await
}

/// What the first turn of a chat started with `config` fails with (the agent's start).
async fn first_turn_error(config: AcpAgentConfig) -> agenthost_provider_api::ProviderError {
    start(config, None)
        .await
        .session
        .send_turn(turn_request("t1", "x"))
        .await
        .unwrap_err()
}

/// A turn of the chat's history: `request` answered with `response`.
fn history_turn(id: &str, request: &str, response: &str) -> Turn {
    serde_json::from_value(json!({
        "id": id,
        "message": { "text": request, "origin": { "kind": "user" } },
        "responseParts": [{ "kind": "markdown", "id": format!("{id}#m"), "content": response }],
        "state": "complete",
    }))
    .unwrap()
}

async fn start_with(config: AcpAgentConfig, resume: Option<&str>, history: Vec<Turn>) -> Chat {
    let provider = AcpProvider::new(config).unwrap();
    let work = tempfile::tempdir().unwrap();
    let (request, rx) = start_request(work.path());
    let session = match resume {
        None => provider.start_session(request).await.unwrap(),
        Some(id) => provider
            .restore_session(RestoreSession {
                start: request,
                resume_handle: json!({ "sessionId": id }),
                history,
            })
            .await
            .unwrap(),
    };
    Chat {
        session,
        log: SignalLog::new(rx, DEADLINE),
        _work: work,
    }
}

async fn poll(what: &str, check: impl FnMut() -> bool) {
    agenthost_provider_api::testing::poll(what, DEADLINE, check).await;
}

fn out(value: Value) -> Step {
    Step::Out(value.to_string())
}

fn initialize(load: bool) -> Step {
    Step::Reply(
        json!({ "protocolVersion": 1, "agentCapabilities": { "loadSession": load },
                "authMethods": [] })
        .to_string(),
    )
}

/// `initialize`, then `session/new` → [`SESSION`] with `options`.
fn handshake(options: Value) -> Vec<Step> {
    vec![
        initialize(true),
        Step::Reply(json!({ "sessionId": SESSION, "configOptions": options }).to_string()),
    ]
}

fn update(update: Value) -> Step {
    out(json!({ "jsonrpc": "2.0", "method": "session/update",
                "params": { "sessionId": SESSION, "update": update } }))
}

fn say(text: &str) -> Step {
    update(json!({ "sessionUpdate": "agent_message_chunk",
                   "content": { "type": "text", "text": text } }))
}

fn stop(id: u64, reason: &str) -> Step {
    out(json!({ "jsonrpc": "2.0", "id": id, "result": { "stopReason": reason } }))
}

fn ask_permission(id: u64, call: &str) -> Step {
    out(
        json!({ "jsonrpc": "2.0", "id": id, "method": "session/request_permission", "params": {
        "sessionId": SESSION,
        "toolCall": { "toolCallId": call, "title": "Run ls", "kind": "execute",
                      "rawInput": { "command": "ls" } },
        "options": [
            { "optionId": "once", "kind": "allow_once", "name": "Allow" },
            { "optionId": "never", "kind": "reject_once", "name": "Deny" },
        ],
    } }),
    )
}

fn method<'a>(written: &'a [Value], name: &str) -> &'a Value {
    written
        .iter()
        .find(|line| line["method"] == name)
        .unwrap_or_else(|| panic!("no {name} in {written:#?}"))
}

#[tokio::test]
async fn a_turn_runs_through_the_handshake_and_the_prompts_answer_ends_it() {
    let fake = Fake::new();
    let mut plan = handshake(json!([]));
    plan.extend([Step::In, say("hello"), stop(3, "end_turn"), Step::In]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config(), None).await;
    chat.send("t1", "say hello").await;
    chat.turn_complete("t1").await;
    let written = fake.written();
    let init = method(&written, "initialize");
    assert_eq!(init["jsonrpc"], "2.0");
    assert_eq!(init["params"]["protocolVersion"], 1);
    assert_eq!(
        init["params"]["clientCapabilities"],
        json!({ "fs": { "readTextFile": false, "writeTextFile": false }, "terminal": false })
    );
    let new = method(&written, "session/new");
    assert_eq!(new["params"]["mcpServers"], json!([]));
    assert!(Path::new(new["params"]["cwd"].as_str().unwrap()).is_absolute());
    let prompt = method(&written, "session/prompt");
    assert_eq!(prompt["params"]["sessionId"], SESSION);
    assert_eq!(
        prompt["params"]["prompt"],
        json!([{ "type": "text", "text": "say hello" }])
    );
    assert_eq!(
        chat.session.resume_handle(),
        Some(json!({ "sessionId": SESSION }))
    );
}

#[tokio::test]
async fn an_approval_and_a_denial_go_back_as_the_agents_own_options() {
    let fake = Fake::new();
    let mut plan = handshake(json!([]));
    plan.extend([
        Step::In,
        ask_permission(0, "c1"),
        Step::In,
        ask_permission(1, "c2"),
        Step::In,
        stop(3, "end_turn"),
        Step::In,
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config(), None).await;
    chat.send("t1", "work").await;
    let first = chat.pending_confirmation().await;
    chat.session
        .respond_to_permission(&first, PermissionDecision::Approve)
        .await
        .unwrap();
    let second = chat.pending_confirmation().await;
    chat.session
        .respond_to_permission(
            &second,
            PermissionDecision::Deny {
                reason: Some("no".into()),
            },
        )
        .await
        .unwrap();
    chat.turn_complete("t1").await;
    let answers: Vec<Value> = fake
        .written()
        .into_iter()
        .filter(|line| line.get("result").is_some())
        .collect();
    assert_eq!(
        answers[0],
        json!({ "jsonrpc": "2.0", "id": 0,
                "result": { "outcome": { "outcome": "selected", "optionId": "once" } } })
    );
    assert_eq!(answers[1]["id"], 1);
    assert_eq!(answers[1]["result"]["outcome"]["optionId"], "never");
}

#[tokio::test]
async fn cancel_withdraws_waiting_permissions_first_and_an_end_turn_after_it_is_no_completion() {
    let fake = Fake::new();
    let mut plan = handshake(json!([]));
    plan.extend([
        Step::In,
        ask_permission(0, "c1"),
        Step::In, // the withdrawn permission
        Step::In, // session/cancel
        // Copilot answers a cancel with `end_turn`.
        stop(3, "end_turn"),
        Step::In,
        say("second"),
        stop(4, "end_turn"),
        Step::In,
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config(), None).await;
    chat.send("t1", "work").await;
    chat.pending_confirmation().await;
    chat.session.cancel("t1").await.unwrap();
    chat.turn_cancelled("t1").await;
    let written = fake.written();
    let withdrawn = written.iter().position(|l| l["id"] == 0).unwrap();
    let cancel = written
        .iter()
        .position(|l| l["method"] == "session/cancel")
        .unwrap();
    assert!(withdrawn < cancel, "{written:#?}");
    assert_eq!(
        written[withdrawn]["result"]["outcome"]["outcome"],
        "cancelled"
    );
    assert_eq!(written[cancel]["params"]["sessionId"], SESSION);
    // The conversation goes on in the same process.
    chat.send("t2", "again").await;
    chat.turn_complete("t2").await;
    assert_eq!(fake.starts().len(), 1);
    let completed_t1 = chat
        .seen()
        .iter()
        .any(|s| matches!(action(s), Some(StateAction::ChatTurnComplete(c)) if c.turn_id == "t1"));
    assert!(!completed_t1, "the cancelled turn never completes");
}

#[tokio::test]
async fn an_agent_that_does_not_stop_on_cancel_is_terminated_and_the_next_turn_loads_its_session() {
    let fake = Fake::new();
    let mut first = handshake(json!([]));
    first.extend([Step::In, Step::In, Step::Sleep(30)]);
    fake.plan(1, &first);
    fake.plan(
        2,
        &[
            initialize(true),
            Step::In, // session/load
            say("replayed history"),
            out(json!({ "jsonrpc": "2.0", "id": 5, "result": null })),
            Step::In,
            say("fresh"),
            stop(6, "end_turn"),
            Step::In,
        ],
    );
    fake.plan(0, &[Step::Exit(9)]);
    let mut config = fake.config();
    config.cli.cancel_grace = Duration::from_millis(300);
    let mut chat = start(config, None).await;
    chat.send("t1", "work").await;
    poll("the agent started", || fake.pid().is_some()).await;
    let pid = fake.pid().unwrap();
    chat.session.cancel("t1").await.unwrap();
    chat.turn_cancelled("t1").await;
    poll("the process group is gone", || {
        test_kill_process_group(pid).is_err()
    })
    .await;
    chat.send("t2", "again").await;
    chat.turn_complete("t2").await;
    let load = method(&fake.written(), "session/load").clone();
    assert_eq!(load["params"]["sessionId"], SESSION);
    let texts: Vec<String> = chat
        .seen()
        .iter()
        .filter_map(|s| match action(s) {
            Some(StateAction::ChatResponsePart(part)) => Some(format!("{:?}", part.part)),
            _ => None,
        })
        .collect();
    assert!(texts.iter().any(|t| t.contains("fresh")), "{texts:?}");
    assert!(
        !texts.iter().any(|t| t.contains("replayed history")),
        "the replay is dropped: {texts:?}"
    );
}

#[tokio::test]
async fn a_restored_chat_of_an_agent_that_cannot_resume_starts_anew_with_the_history_as_text() {
    let fake = Fake::new();
    fake.plan(
        0,
        &[
            initialize(false),
            Step::Reply(json!({ "sessionId": "new-s" }).to_string()),
            Step::In,
            out(json!({ "jsonrpc": "2.0", "id": 3, "result": { "stopReason": "end_turn" } })),
            Step::In,
        ],
    );
    let history = vec![history_turn(
        "t0",
        "What is in a.txt?",
        "It says forty-two.",
    )];
    let mut chat = start_with(fake.config(), Some(SESSION), history).await;
    chat.send("t1", "go on").await;
    chat.turn_complete("t1").await;
    let written = fake.written();
    assert!(written.iter().all(|l| l["method"] != "session/load"));
    method(&written, "session/new");
    // The new conversation gets the earlier turns as text, before the prompt.
    let prompt = &method(&written, "session/prompt")["params"]["prompt"];
    let carried = prompt[0]["text"].as_str().unwrap();
    assert!(carried.starts_with("<conversation-history>"), "{carried}");
    assert!(
        carried.contains("User request:\nWhat is in a.txt?") && carried.contains("forty-two"),
        "{carried}"
    );
    assert_eq!(prompt[1]["text"], "go on");
    let notices: Vec<String> = chat
        .seen()
        .iter()
        .filter_map(|s| match action(s) {
            Some(StateAction::ChatResponsePart(part)) => Some(format!("{:?}", part.part)),
            _ => None,
        })
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("can neither load nor resume")
                && n.contains("given the earlier turns as text")),
        "{notices:?}"
    );
    assert_eq!(
        chat.session.resume_handle(),
        Some(json!({ "sessionId": "new-s" }))
    );
}

#[tokio::test]
async fn the_turns_model_is_chosen_through_the_agents_model_option() {
    let fake = Fake::new();
    let options = json!([{ "type": "select", "id": "model", "name": "Model", "category": "model",
        "currentValue": "small",
        "options": [{ "value": "small", "name": "Small" }, { "value": "large", "name": "Large" }] }]);
    let mut plan = handshake(options.clone());
    plan.extend([
        Step::Reply(json!({ "configOptions": options }).to_string()),
        Step::In,
        stop(4, "end_turn"),
        Step::In,
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config(), None).await;
    let mut turn = turn_request("t1", "hi");
    turn.model = Some(ModelSelection {
        id: "large".into(),
        config: None,
    });
    chat.session.send_turn(turn).await.unwrap();
    chat.turn_complete("t1").await;
    let set = method(&fake.written(), "session/set_config_option").clone();
    assert_eq!(
        set["params"],
        json!({ "sessionId": SESSION, "configId": "model", "value": "large" })
    );
}

#[tokio::test]
async fn an_agent_dying_mid_turn_is_a_chat_error_with_its_stderr() {
    let fake = Fake::new();
    let mut plan = handshake(json!([]));
    plan.extend([
        Step::In,
        Step::Err("model backend unreachable".into()),
        Step::Exit(3),
    ]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config(), None).await;
    chat.send("t1", "work").await;
    let (_, message) = chat.chat_error().await;
    assert!(message.contains("model backend unreachable"), "{message}");
}

#[tokio::test]
async fn garbage_on_stdout_fails_the_turn_and_stops_the_agent() {
    let fake = Fake::new();
    let mut plan = handshake(json!([]));
    plan.extend([Step::In, Step::out("this is not JSON-RPC"), Step::Sleep(30)]);
    fake.plan(0, &plan);
    let mut chat = start(fake.config(), None).await;
    chat.send("t1", "work").await;
    let pid = fake.pid().unwrap();
    let (_, message) = chat.chat_error().await;
    assert!(message.contains("this is not JSON-RPC"), "{message}");
    poll("the process group is gone", || {
        test_kill_process_group(pid).is_err()
    })
    .await;
}

#[tokio::test]
async fn a_missing_program_and_a_wrong_protocol_version_are_start_failures() {
    let fake = Fake::new();
    let mut config = fake.config();
    config.cli.binary = "/nonexistent/agent".into();
    let error = first_turn_error(config).await;
    assert!(error.to_string().contains("/nonexistent/agent"), "{error}");
    fake.plan(
        0,
        &[
            Step::Reply(json!({ "protocolVersion": 2, "agentCapabilities": {} }).to_string()),
            Step::Sleep(30),
        ],
    );
    let error = first_turn_error(fake.config()).await;
    assert!(error.to_string().contains("protocol version 2"), "{error}");
}

#[tokio::test]
async fn an_agent_hanging_at_start_times_out_and_its_group_is_killed() {
    let fake = Fake::new();
    fake.plan(0, &[Step::Sleep(30)]);
    let mut config = fake.config();
    config.cli.start_timeout = Duration::from_millis(300);
    let error = first_turn_error(config).await;
    assert!(error.to_string().contains("did not start"), "{error}");
    let pid = fake.pid().unwrap();
    poll("the process group is gone", || {
        test_kill_process_group(pid).is_err()
    })
    .await;
}

//! The engine over a toy protocol: the agent is `cat`, so every line the protocol writes comes
//! back as the agent's next message. This is all a provider has to write — its types, how a
//! message applies, how a turn starts, how answers go back, how a cancel winds down — and the
//! engine does the rest: admission, message order, failures, cancel and dispose.

#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use agenthost_protocol::ahp_types::common::StringOrMarkdown;
use agenthost_protocol::ahp_types::state::{ErrorInfo, ResponsePart};
use agenthost_protocol::{AgentSignal, StateAction};
use agenthost_provider_api::testing::{SignalLog, action, poll, start_request, turn_request};
use agenthost_provider_api::{
    AgentConfig, CliSettings, InputResponse, InvalidConfig, PermissionDecision, ProviderError,
    ProviderSession, ResumeKey, StartSession, TurnRequest, system_notice,
};
use agenthost_provider_process::driver::{
    AgentCli, AgentState, CliProvider, Conversation, EndedOf, Engine, Protocol, ProviderState,
    Reply, RunningTurn, begin_turn, end_turn, install_process, spawn_agent, wind_down,
};
use agenthost_provider_process::{AgentProcess, LineReader};

/// The echo agent's settings: `cat`, and nothing of its own.
#[derive(Debug)]
struct EchoConfig(CliSettings);

impl AgentConfig for EchoConfig {
    fn cli(&self) -> &CliSettings {
        &self.0
    }

    fn validate(&self) -> Result<(), InvalidConfig> {
        self.0.validate("cat")
    }
}

/// What the echo conversation keeps: the id its agent reported.
#[derive(Default)]
struct EchoOwn {
    id: Option<String>,
}

impl ProviderState for EchoOwn {}

type State = AgentState<EchoOwn, String, Infallible>;

/// The echo agent.
struct Echo;

impl AgentCli for Echo {
    type Conversation = Engine<Echo>;

    const ID: &'static str = "echo";
    const DISPLAY_NAME: &'static str = "Echo";
    const DESCRIPTION: &'static str = "cat, as an agent.";
    const RESUME: ResumeKey = ResumeKey {
        key: "echoId",
        agent: "Echo",
        what: "conversation id",
    };
}

/// The running turn's id, for the notices.
fn running(engine: &Engine<Echo>) -> String {
    let state = engine.state();
    state
        .turns
        .turn
        .as_ref()
        .map_or_else(String::new, |turn| turn.id.clone())
}

impl Protocol for Echo {
    type Config = EchoConfig;
    type Translator = ();
    type State = State;

    fn open(_config: &EchoConfig, _start: &StartSession, resume: Option<String>) -> ((), State) {
        ((), State::new(EchoOwn { id: resume }))
    }

    fn resume_id(state: &State) -> Option<&str> {
        state.id.as_deref()
    }

    async fn write(process: &AgentProcess, message: &str) -> std::io::Result<()> {
        process.write_line(message).await
    }

    /// `say <text>` is a notice, `id <id>` the conversation id, `ask <call>` a permission
    /// request, `end` the end of the turn, `stopped` a wound-down cancel; anything else is
    /// unreadable.
    fn on_message(engine: &Engine<Echo>, line: &str) -> Result<Reply, String> {
        let mut reply = Reply::default();
        let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
        let turn = running(engine);
        match verb {
            "say" => {
                reply
                    .signals
                    .push(system_notice(&engine.chat.session, &turn, rest.to_owned()))
            }
            "id" => engine.state().id = Some(rest.to_owned()),
            "ask" => {
                let replaced = engine
                    .state()
                    .turns
                    .park_permission(rest.to_owned(), format!("req-{rest}"));
                if let Some(replaced) = replaced {
                    reply.writes.push(format!("say withdrawn {replaced}"));
                }
                let text = format!("the agent asks for {rest}");
                reply
                    .signals
                    .push(system_notice(&engine.chat.session, &turn, text));
            }
            "end" => {
                end_turn(&engine.state);
                let text = format!("turn {turn} ended");
                reply
                    .signals
                    .push(system_notice(&engine.chat.session, &turn, text));
            }
            "stopped" => engine.state().waiters.wound_down(),
            _ => return Err(format!("not an echo message: {line:?}")),
        }
        Ok(reply)
    }

    fn fail_turn(engine: &Engine<Echo>, error: ErrorInfo) -> Vec<AgentSignal> {
        let text = format!("failed: {}", error.message);
        vec![system_notice(&engine.chat.session, &running(engine), text)]
    }

    async fn send_turn(engine: &Arc<Engine<Echo>>, turn: TurnRequest) -> Result<(), ProviderError> {
        let process = match engine.current_process() {
            Some((_, process)) => process,
            None => {
                let cli = &engine.config.0;
                let launch = engine.chat.launch(cli, &[], &[], &[]);
                let spawned = spawn_agent(&launch)?;
                let lines = LineReader::new(spawned.stdout, 4096);
                let process = spawned.process;
                install_process(&engine.state, Arc::downgrade(engine), &process, lines);
                process
            }
        };
        begin_turn(&engine.state, &turn.turn_id);
        process
            .write_line(&turn.text)
            .await
            .map_err(|error| ProviderError::input_closed(error, String::new()))
    }

    async fn answer_permission(
        _engine: &Engine<Echo>,
        request: String,
        process: Arc<AgentProcess>,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
        let verdict = matches!(decision, PermissionDecision::Approve);
        let line = format!("say {request} for {tool_call_id}: {verdict}");
        process
            .write_line(&line)
            .await
            .map_err(|error| ProviderError::input_closed(error, String::new()))
    }

    const TAKES_INPUT: bool = false;

    async fn answer_input(
        _engine: &Engine<Echo>,
        parked: Infallible,
        _process: Arc<AgentProcess>,
        _response: InputResponse,
    ) -> Result<(), ProviderError> {
        match parked {}
    }

    /// Asks `cat` to say `stopped` when the turn's text says `obedient`; otherwise the agent
    /// never stops and the engine terminates it.
    async fn cancel(
        engine: &Engine<Echo>,
        _turn: &RunningTurn,
        ended: EndedOf<State>,
        process: Option<&AgentProcess>,
    ) -> bool {
        let Some(process) = process else {
            return false;
        };
        let withdrawn = ended
            .permissions
            .iter()
            .map(|request| format!("say withdrew {request}"))
            .collect();
        Engine::<Echo>::withdraw(process, withdrawn).await;
        let obedient = engine.state().id.as_deref() == Some("obedient");
        let ask = async { !obedient || process.write_line("stopped").await.is_ok() };
        let grace = engine.config.0.cancel_grace;
        obedient && wind_down(&engine.state, grace, ask).await
    }

    async fn dispose(
        _engine: &Engine<Echo>,
        _ended: EndedOf<State>,
        _process: Option<&AgentProcess>,
    ) {
    }
}

struct Chat {
    session: Conversation<Engine<Echo>>,
    log: SignalLog,
    _dir: tempfile::TempDir,
}

fn provider() -> CliProvider<Echo> {
    let mut settings = CliSettings::new("cat");
    settings.cancel_grace = Duration::from_millis(300);
    settings.kill_grace = Duration::from_millis(300);
    CliProvider::<Echo>::new(EchoConfig(settings)).unwrap()
}

fn chat() -> Chat {
    let dir = tempfile::tempdir().unwrap();
    let (start, rx) = start_request(dir.path());
    Chat {
        session: provider().start(start),
        log: SignalLog::new(rx, Duration::from_secs(10)),
        _dir: dir,
    }
}

/// The text of a system notice, if `signal` is one.
fn notice(signal: &AgentSignal) -> Option<String> {
    match action(signal) {
        Some(StateAction::ChatResponsePart(part)) => match &part.part {
            ResponsePart::SystemNotification(notice) => match &notice.content {
                StringOrMarkdown::Plain(text) => Some(text.clone()),
                StringOrMarkdown::Markdown { markdown } => Some(markdown.clone()),
            },
            _ => None,
        },
        _ => None,
    }
}

async fn notice_containing(log: &mut SignalLog, text: &str) -> String {
    let signal = log
        .until(text, |s| notice(s).is_some_and(|n| n.contains(text)))
        .await;
    notice(&signal).unwrap_or_default()
}

#[tokio::test]
async fn a_turn_runs_through_the_protocol_and_the_next_is_admitted_only_after_it_ends() {
    let mut chat = chat();
    chat.session
        .send_turn(turn_request("t1", "id conv-1"))
        .await
        .unwrap();
    poll("the agent reports its id", Duration::from_secs(10), || {
        chat.session.resume_handle().is_some()
    })
    .await;
    assert_eq!(
        ProviderSession::resume_handle(&chat.session),
        Some(serde_json::json!({ "echoId": "conv-1" }))
    );
    let busy = chat
        .session
        .send_turn(turn_request("t2", "say hello"))
        .await
        .unwrap_err();
    assert!(
        busy.to_string().contains("Echo is still running turn `t1`"),
        "{busy}"
    );
    let wrong = ProviderSession::cancel(&chat.session, "t9")
        .await
        .unwrap_err();
    assert!(wrong.to_string().contains("`t9` is not running"), "{wrong}");
    // The agent ends the turn (the line goes to `cat` through the protocol's answer path).
    let process = chat.session.current_process().unwrap().1;
    process.write_line("end").await.unwrap();
    assert_eq!(
        notice_containing(&mut chat.log, "ended").await,
        "turn t1 ended"
    );
    chat.session
        .send_turn(turn_request("t2", "say hello"))
        .await
        .unwrap();
    notice_containing(&mut chat.log, "hello").await;
    ProviderSession::dispose(&chat.session).await;
    assert_eq!(chat.session.process_id(), None);
    let disposed = chat
        .session
        .send_turn(turn_request("t3", "say late"))
        .await
        .unwrap_err();
    assert!(disposed.to_string().contains("disposed"), "{disposed}");
}

#[tokio::test]
async fn a_permission_is_parked_until_answered_once_and_input_is_unsupported() {
    let mut chat = chat();
    chat.session
        .send_turn(turn_request("t1", "ask call-1"))
        .await
        .unwrap();
    notice_containing(&mut chat.log, "asks for call-1").await;
    chat.session
        .respond_to_permission("call-1", PermissionDecision::Approve)
        .await
        .unwrap();
    let said = notice_containing(&mut chat.log, "req-call-1").await;
    assert_eq!(said, "req-call-1 for call-1: true");
    let again = chat
        .session
        .respond_to_permission("call-1", PermissionDecision::Approve)
        .await
        .unwrap_err();
    assert!(
        again.to_string().contains("no tool call `call-1`"),
        "{again}"
    );
    let input = ProviderSession::respond_to_input(
        &chat.session,
        "q1",
        InputResponse {
            response: agenthost_protocol::state::ChatInputResponseKind::Cancel,
            answers: Default::default(),
        },
    )
    .await
    .unwrap_err();
    assert!(
        matches!(input, ProviderError::Unsupported { .. }),
        "{input}"
    );
    ProviderSession::dispose(&chat.session).await;
}

#[tokio::test]
async fn unreadable_output_fails_the_turn_and_stops_the_agent_and_the_next_turn_starts_another() {
    let mut chat = chat();
    chat.session
        .send_turn(turn_request("t1", "garbage"))
        .await
        .unwrap();
    let failed = notice_containing(&mut chat.log, "failed:").await;
    assert!(failed.contains("not an echo message"), "{failed}");
    poll("the agent is stopped", Duration::from_secs(10), || {
        chat.session.process_id().is_none()
    })
    .await;
    // The turn is over: the next is admitted and runs in a new process.
    chat.session
        .send_turn(turn_request("t2", "end"))
        .await
        .unwrap();
    assert_eq!(
        notice_containing(&mut chat.log, "ended").await,
        "turn t2 ended"
    );
    ProviderSession::dispose(&chat.session).await;
}

#[tokio::test]
async fn an_agent_that_dies_fails_its_turn_with_the_exit() {
    let mut chat = chat();
    chat.session
        .send_turn(turn_request("t1", "say up"))
        .await
        .unwrap();
    notice_containing(&mut chat.log, "up").await;
    let pid = chat.session.process_id().unwrap();
    let group = rustix::process::Pid::from_raw(pid).unwrap();
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
    let failed = notice_containing(&mut chat.log, "failed:").await;
    assert!(failed.contains("exited"), "{failed}");
    assert_eq!(chat.session.process_id(), None);
    ProviderSession::dispose(&chat.session).await;
}

#[tokio::test]
async fn a_cancel_winds_an_obedient_agent_down_and_terminates_one_that_does_not_stop() {
    let mut chat = chat();
    chat.session
        .send_turn(turn_request("t1", "id obedient"))
        .await
        .unwrap();
    poll("the agent reports its id", Duration::from_secs(10), || {
        chat.session.resume_handle().is_some()
    })
    .await;
    let first = chat.session.process_id();
    ProviderSession::cancel(&chat.session, "t1").await.unwrap();
    chat.log
        .until("turnCancelled", |s| {
            matches!(action(s), Some(StateAction::ChatTurnCancelled(_)))
        })
        .await;
    assert_eq!(
        chat.session.process_id(),
        first,
        "an agent that stops keeps running"
    );

    chat.session
        .send_turn(turn_request("t2", "id stubborn"))
        .await
        .unwrap();
    poll(
        "the agent reports its new id",
        Duration::from_secs(10),
        || {
            ProviderSession::resume_handle(&chat.session)
                == Some(serde_json::json!({ "echoId": "stubborn" }))
        },
    )
    .await;
    ProviderSession::cancel(&chat.session, "t2").await.unwrap();
    assert_eq!(
        chat.session.process_id(),
        None,
        "an agent that does not stop is terminated"
    );
    ProviderSession::dispose(&chat.session).await;
}

#[tokio::test]
async fn a_conversation_resumes_a_valid_id_and_refuses_a_hostile_one() {
    use agenthost_provider_api::{Provider, RestoreSession};
    let dir = tempfile::tempdir().unwrap();
    let provider = provider();
    let restore = |id: &str| {
        let (start, _rx) = start_request(dir.path());
        RestoreSession {
            start,
            resume_handle: serde_json::json!({ "echoId": id }),
            history: Vec::new(),
        }
    };
    let resumed = provider.restore_session(restore("conv-9")).await.unwrap();
    assert_eq!(
        resumed.resume_handle(),
        Some(serde_json::json!({ "echoId": "conv-9" }))
    );
    assert!(provider.restore_session(restore("--help")).await.is_err());
}

//! The shared agent-CLI driver: process generations, the reader task, request correlation and
//! the `ProviderSession` adapter.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agenthost_protocol::state::ChatInputResponseKind;
use agenthost_provider_api::testing::start_request;
use agenthost_provider_api::{
    AgentConfig, AgentMode, CliSettings, InputResponse, InvalidConfig, PermissionDecision,
    Provider, ProviderError, ProviderSession, RestoreSession, ResumeKey, StartSession, TurnRequest,
};
use agenthost_provider_process::driver::{
    AgentCli, AgentConversation, ChatBinding, CliProvider, Conversation, DriverState,
    MessageHandler, MessageSource, ProcessSlot, SourceError, Waiters, admit_turn, await_answer,
    current_generation, current_process, elapsed_ms, fail_waiters, new_request, reap_process,
    resolve_response, send_request, spawn_agent, spawn_reader, stop_process, unreadable_output,
};
use agenthost_provider_process::{AgentProcess, Launch};

/// A child that reads stdin forever and writes `stderr` once to its stderr.
fn child(stderr: &str) -> Arc<AgentProcess> {
    let dir = std::env::temp_dir();
    let args = vec![
        "-c".to_owned(),
        format!("printf '{stderr}' >&2; cat >/dev/null"),
    ];
    AgentProcess::spawn(&Launch {
        binary: Path::new("/bin/sh"),
        args: &args,
        working_directory: &dir,
        env: &[],
        env_remove: &[],
    })
    .unwrap()
    .process
}

#[test]
fn a_slot_hands_out_generations_and_gives_up_only_the_current_one() {
    let mut slot: ProcessSlot<&str> = ProcessSlot::default();
    assert!(slot.current().is_none());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let first = slot.install(Arc::new("first"), |_| tokio::spawn(async {}));
    assert_eq!(first, 0);
    assert!(slot.is_current(0));
    let (generation, process) = slot.current().unwrap();
    assert_eq!((generation, *process), (0, "first"));

    // A replacement gets the next generation; the old generation can no longer take it.
    let _ = slot.take();
    let second = slot.install(Arc::new("second"), |generation| {
        assert_eq!(generation, 1);
        tokio::spawn(async {})
    });
    assert_eq!(second, 1);
    assert!(slot.take_generation(0).is_none());
    assert!(slot.is_current(1));
    assert_eq!(*slot.take_generation(1).unwrap().process, "second");
    assert!(slot.current().is_none());
}

#[test]
fn waiters_answer_each_request_once_and_ignore_unknown_answers() {
    let mut waiters: Waiters<u64, &str> = Waiters::default();
    let (one, two) = (waiters.next_id(), waiters.next_id());
    assert_eq!((one, two), (1, 2));
    let mut first = waiters.register(one);
    let mut second = waiters.register(two);
    assert!(waiters.resolve(&one, Ok("a")));
    assert!(!waiters.resolve(&one, Ok("again")), "answered twice");
    assert!(!waiters.resolve(&99, Ok("nobody")));
    assert_eq!(first.try_recv().unwrap().unwrap(), "a");
    waiters.forget(&two);
    assert!(second.try_recv().is_err(), "a forgotten waiter is dropped");
    assert!(waiters.take_all().is_empty());
}

#[tokio::test]
async fn the_end_of_a_process_fails_every_waiter_with_its_stderr() {
    let process = child("boom\\n");
    // Across the process boundary: wait, with a deadline, until the child has written.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !process.stderr_tail(Duration::ZERO).await.contains("boom") {
        assert!(
            std::time::Instant::now() < deadline,
            "the child wrote nothing"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut waiters: Waiters<String, ()> = Waiters::default();
    let pending = waiters.register("init".into());
    fail_waiters(waiters.take_all(), "exit status: 3", &process).await;
    match pending.await.unwrap() {
        Err(ProviderError::Exited {
            status,
            stderr_tail,
        }) => {
            assert_eq!(status, "exit status: 3");
            assert!(stderr_tail.contains("boom"), "{stderr_tail}");
        }
        other => panic!("expected an exit, got {other:?}"),
    }
    process.terminate(Duration::from_millis(100)).await;
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_request_times_out_naming_the_agent_and_method_and_is_forgotten() {
    let process = child("");
    let mut waiters: Waiters<u64, ()> = Waiters::default();
    let id = waiters.next_id();
    let answer = waiters.register(id);
    let waiters = Mutex::new(waiters);
    let forget = || waiters.lock().unwrap().forget(&id);
    let error = await_answer(
        &process,
        Ok(()),
        answer,
        Duration::from_secs(30),
        ("codex", "thread/start"),
        forget,
    )
    .await
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("codex did not answer `thread/start` within 30000 ms"),
        "{error}"
    );
    assert!(waiters.lock().unwrap().take_all().is_empty());
    process.terminate(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn a_failed_write_is_the_agents_input_closing() {
    let process = child("");
    let (_, answer) = tokio::sync::oneshot::channel::<Result<(), ProviderError>>();
    let mut forgotten = false;
    let error = await_answer(
        &process,
        Err(std::io::Error::other("broken pipe")),
        answer,
        Duration::from_secs(1),
        ("copilot", "ping"),
        || forgotten = true,
    )
    .await
    .unwrap_err();
    assert!(forgotten);
    assert!(
        error
            .to_string()
            .contains("its input is closed: broken pipe"),
        "{error}"
    );
    process.terminate(Duration::from_millis(100)).await;
}

/// Messages from memory, then the end or a failure.
struct Script(VecDeque<Result<Option<String>, SourceError>>);

impl MessageSource for Script {
    async fn next_message(&mut self) -> Result<Option<String>, SourceError> {
        self.0.pop_front().unwrap_or(Ok(None))
    }
}

#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
    stop_at: Option<&'static str>,
}

impl MessageHandler for Recorder {
    async fn handle_message(&self, generation: u64, message: &str) -> bool {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{generation}:{message}"));
        self.stop_at != Some(message)
    }

    async fn process_ended(&self, generation: u64, reason: Option<String>) {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{generation}:ended:{reason:?}"));
    }
}

fn script(items: Vec<Result<Option<String>, SourceError>>) -> Script {
    Script(items.into())
}

#[tokio::test]
async fn the_reader_hands_over_messages_in_order_then_the_end() {
    let handler = Arc::new(Recorder::default());
    let source = script(vec![Ok(Some("a".into())), Ok(Some("b".into()))]);
    spawn_reader(Arc::downgrade(&handler), 4, source)
        .await
        .unwrap();
    assert_eq!(
        *handler.seen.lock().unwrap(),
        ["4:a", "4:b", "4:ended:None"]
    );
}

#[tokio::test]
async fn a_read_failure_or_bad_framing_ends_the_process_with_the_reason() {
    let handler = Arc::new(Recorder::default());
    let failing = script(vec![
        Ok(Some("a".into())),
        Err(SourceError::Io(std::io::Error::other("line over its cap"))),
    ]);
    spawn_reader(Arc::downgrade(&handler), 0, failing)
        .await
        .unwrap();
    let framing = script(vec![Err(SourceError::Framing("no header".into()))]);
    spawn_reader(Arc::downgrade(&handler), 1, framing)
        .await
        .unwrap();
    assert_eq!(
        *handler.seen.lock().unwrap(),
        [
            "0:a",
            "0:ended:Some(\"reading its output failed: line over its cap\")",
            "1:ended:Some(\"unreadable output framing: no header\")",
        ]
    );
}

#[tokio::test]
async fn the_reader_stops_when_told_or_when_the_conversation_is_gone() {
    let handler = Arc::new(Recorder {
        stop_at: Some("stop"),
        ..Recorder::default()
    });
    let source = script(vec![Ok(Some("stop".into())), Ok(Some("never".into()))]);
    spawn_reader(Arc::downgrade(&handler), 0, source)
        .await
        .unwrap();
    assert_eq!(*handler.seen.lock().unwrap(), ["0:stop"]);

    let dropped = Arc::new(Recorder::default());
    let weak = Arc::downgrade(&dropped);
    drop(dropped);
    spawn_reader(weak, 0, script(vec![Ok(Some("a".into()))]))
        .await
        .unwrap();
}

/// A conversation recording what the adapter calls.
#[derive(Default)]
struct Calls(Mutex<Vec<String>>, Option<String>);

/// The settings of the recording agent: only the shared ones, and a refusal of one model.
#[derive(Debug)]
struct CallsConfig(CliSettings);

impl AgentConfig for CallsConfig {
    fn cli(&self) -> &CliSettings {
        &self.0
    }

    fn validate(&self) -> Result<(), InvalidConfig> {
        if self.0.model.as_deref() == Some("refused") {
            return Err(InvalidConfig("the model `refused` is refused".into()));
        }
        self.0.validate("calls")
    }
}

/// The recording agent as a provider.
struct CallsCli;

impl AgentCli for CallsCli {
    type Conversation = Calls;

    const ID: &'static str = "calls";
    const DISPLAY_NAME: &'static str = "Calls";
    const DESCRIPTION: &'static str = "Records what the adapter calls.";
    const RESUME: ResumeKey = ResumeKey {
        key: "callsId",
        agent: "Calls",
        what: "conversation id",
    };
}

impl Calls {
    fn push(&self, call: String) {
        self.0.lock().unwrap().push(call);
    }
}

impl AgentConversation for Calls {
    type Config = CallsConfig;

    fn open(_config: Arc<CallsConfig>, _start: StartSession, resume: Option<String>) -> Self {
        Self(Mutex::default(), resume)
    }

    async fn send_turn(self: &Arc<Self>, turn: TurnRequest) -> Result<(), ProviderError> {
        self.push(format!("send_turn {}", turn.turn_id));
        Ok(())
    }

    async fn respond_to_permission(
        &self,
        tool_call_id: &str,
        decision: PermissionDecision,
    ) -> Result<(), ProviderError> {
        self.push(format!("permission {tool_call_id} {decision:?}"));
        Ok(())
    }

    async fn cancel(&self, turn_id: &str) -> Result<(), ProviderError> {
        self.push(format!("cancel {turn_id}"));
        Ok(())
    }

    fn resume_handle(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "threadId": "t1" }))
    }

    async fn dispose(&self) {
        self.push("dispose".into());
    }
}

#[tokio::test]
async fn the_adapter_forwards_every_call_and_reports_input_unsupported_by_default() {
    let session = Conversation::new(Calls::default());
    let provider_session: &dyn ProviderSession = &session;
    let turn = TurnRequest {
        turn_id: "t1".into(),
        text: "hi".into(),
        instructions: Vec::new(),
        attachments: Vec::new(),
        model: None,
        mode: AgentMode::default(),
    };
    provider_session.send_turn(turn).await.unwrap();
    provider_session
        .respond_to_permission("call-1", PermissionDecision::Approve)
        .await
        .unwrap();
    let input = provider_session
        .respond_to_input(
            "q1",
            InputResponse {
                response: ChatInputResponseKind::Cancel,
                answers: Default::default(),
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            input,
            ProviderError::Unsupported {
                operation: "input requests"
            }
        ),
        "{input}"
    );
    provider_session.cancel("t1").await.unwrap();
    assert_eq!(
        provider_session.resume_handle(),
        Some(serde_json::json!({ "threadId": "t1" }))
    );
    provider_session.dispose().await;
    assert_eq!(
        *session.0.lock().unwrap(),
        [
            "send_turn t1",
            "permission call-1 Approve",
            "cancel t1",
            "dispose"
        ]
    );
}

/// A conversation's state with one process-scoped flag.
#[derive(Default)]
struct ChatState {
    slot: ProcessSlot<AgentProcess>,
    waiters: Waiters<u64, ()>,
    loaded: bool,
}

impl DriverState for ChatState {
    type Key = u64;
    type Answer = ();

    fn slot(&mut self) -> &mut ProcessSlot<AgentProcess> {
        &mut self.slot
    }

    fn waiters(&mut self) -> &mut Waiters<u64, ()> {
        &mut self.waiters
    }

    fn process_gone(&mut self) {
        self.loaded = false;
    }
}

fn running(
    script: &str,
) -> (
    Mutex<ChatState>,
    u64,
    tokio::sync::oneshot::Receiver<Result<(), ProviderError>>,
) {
    let dir = std::env::temp_dir();
    let args = vec!["-c".to_owned(), script.to_owned()];
    let spawned = AgentProcess::spawn(&Launch {
        binary: Path::new("/bin/sh"),
        args: &args,
        working_directory: &dir,
        env: &[],
        env_remove: &[],
    })
    .unwrap();
    let mut state = ChatState {
        loaded: true,
        ..ChatState::default()
    };
    let generation = state
        .slot
        .install(spawned.process, |_| tokio::spawn(std::future::pending()));
    let id = state.waiters.next_id();
    let answer = state.waiters.register(id);
    (Mutex::new(state), generation, answer)
}

#[tokio::test]
async fn stopping_the_current_process_fails_its_requests_and_resets_its_state() {
    let (state, generation, answer) = running("cat >/dev/null");
    assert!(current_process(&state).is_some());

    // A stale generation stops nothing.
    stop_process(
        &state,
        generation + 1,
        Duration::from_secs(5),
        false,
        "test",
    )
    .await;
    assert!(current_process(&state).is_some());

    stop_process(&state, generation, Duration::from_secs(5), false, "test").await;
    assert!(current_process(&state).is_none());
    assert!(!state.lock().unwrap().loaded);
    assert!(matches!(
        answer.await.unwrap(),
        Err(ProviderError::Exited { .. })
    ));
}

#[tokio::test]
async fn a_process_that_ended_is_reaped_once_with_its_status_and_stderr() {
    let (state, generation, answer) = running("echo bye >&2; exit 3");
    let error = reap_process(&state, generation, Duration::from_secs(5), None, "test")
        .await
        .unwrap();
    match &error {
        ProviderError::Exited {
            status,
            stderr_tail,
        } => {
            assert!(status.contains('3'), "{status}");
            assert!(stderr_tail.contains("bye"), "{stderr_tail}");
        }
        other => panic!("expected an exit, got {other:?}"),
    }
    assert!(!state.lock().unwrap().loaded);
    assert!(answer.await.unwrap().is_err());
    // Already gone: nothing more to report.
    let again = reap_process(&state, generation, Duration::from_secs(5), None, "test").await;
    assert!(again.is_none());
}

#[test]
fn a_chat_binding_takes_what_the_start_request_says() {
    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    let session: agenthost_protocol::SessionUri = "codex:/s1".parse().unwrap();
    let chat = agenthost_protocol::ChatUri::default_for(&session);
    let binding = ChatBinding::new(StartSession {
        session: session.clone(),
        chat: chat.clone(),
        working_directory: "/work".into(),
        model: None,
        signals: agenthost_provider_api::SignalSink::new(chat.clone(), tx),
    });
    assert_eq!(binding.session, session);
    assert_eq!(binding.working_directory, Path::new("/work"));
    assert_eq!(binding.default_model, None);
    assert_eq!(binding.signals.chat(), &chat);
}

/// A JSON-RPC conversation's state: numbered requests answered with JSON.
#[derive(Default)]
struct RpcState {
    slot: ProcessSlot<AgentProcess>,
    waiters: Waiters<u64, serde_json::Value>,
}

impl DriverState for RpcState {
    type Key = u64;
    type Answer = serde_json::Value;

    fn slot(&mut self) -> &mut ProcessSlot<AgentProcess> {
        &mut self.slot
    }

    fn waiters(&mut self) -> &mut Waiters<u64, serde_json::Value> {
        &mut self.waiters
    }
}

#[tokio::test]
async fn a_request_is_written_and_answered_by_the_response_with_its_id() {
    let process = child("");
    let state = Mutex::new(RpcState::default());
    let generation = state
        .lock()
        .unwrap()
        .slot
        .install(Arc::clone(&process), |_| {
            tokio::spawn(std::future::pending())
        });
    assert!(current_generation(&state, generation).is_some());
    assert!(current_generation(&state, generation + 1).is_none());

    let request = new_request(&state);
    let id = request.0;
    let answer = async {
        // The reader's side: the agent's responses, the first for nobody.
        let mut locked = state.lock().unwrap();
        resolve_response::<_, String>(
            &mut *locked,
            &serde_json::json!(999),
            Ok(serde_json::json!(0)),
        );
        resolve_response::<_, String>(
            &mut *locked,
            &serde_json::json!(id),
            Ok(serde_json::json!({ "ok": true })),
        );
    };
    let (result, ()) = tokio::join!(
        send_request(
            &state,
            &process,
            request,
            b"{\"id\":1}\n",
            Duration::from_secs(10),
            ("test", "ping"),
        ),
        answer
    );
    assert_eq!(result.unwrap(), serde_json::json!({ "ok": true }));

    let failing = new_request(&state);
    resolve_response(
        &mut *state.lock().unwrap(),
        &serde_json::json!(failing.0),
        Err("no such method"),
    );
    let error = failing.1.await.unwrap().unwrap_err();
    assert!(
        matches!(&error, ProviderError::Refused { message } if message == "no such method"),
        "{error}"
    );
    process.terminate(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn unreadable_output_quotes_stderr_and_a_missing_binary_is_a_start_failure() {
    let process = child("panic: bad state\\n");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !process
        .stderr_tail(Duration::ZERO)
        .await
        .contains("bad state")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the child wrote nothing"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let error = unreadable_output(&process, "line 3 is not JSON").await;
    let text = error.to_string();
    assert!(text.contains("line 3 is not JSON"), "{text}");
    assert!(text.contains("bad state"), "{text}");
    process.terminate(Duration::from_millis(100)).await;

    let dir = std::env::temp_dir();
    let missing = spawn_agent(&Launch {
        binary: Path::new("/nonexistent/agent"),
        args: &[],
        working_directory: &dir,
        env: &[],
        env_remove: &[],
    })
    .unwrap_err();
    assert!(
        matches!(&missing, ProviderError::StartFailed { message } if message.contains("could not run `/nonexistent/agent`")),
        "{missing}"
    );
}

#[tokio::test(start_paused = true)]
async fn elapsed_time_is_reported_in_milliseconds() {
    let started = tokio::time::Instant::now();
    tokio::time::advance(Duration::from_millis(1500)).await;
    assert_eq!(elapsed_ms(started), 1500);
}

#[test]
fn a_turn_is_refused_once_disposed_or_while_another_runs() {
    assert!(admit_turn("Codex", false, None, "t2").is_ok());
    let disposed = admit_turn("Codex", true, None, "t2").unwrap_err();
    assert_eq!(
        disposed.to_string(),
        ProviderError::NotRunning {
            message: "this Codex conversation has been disposed".into()
        }
        .to_string()
    );
    let busy = admit_turn("Codex", false, Some("t1"), "t2").unwrap_err();
    assert!(
        busy.to_string().contains(
            "Codex is still running turn `t1`: cancel it or wait for it to end before sending `t2`"
        ),
        "{busy}"
    );
}

#[tokio::test]
async fn a_cli_provider_checks_its_settings_lists_their_models_and_resumes_only_valid_ids() {
    let mut refused = CliSettings::new("calls");
    refused.model = Some("refused".into());
    let error = CliProvider::<CallsCli>::new(CallsConfig(refused)).unwrap_err();
    assert_eq!(error.0, "the model `refused` is refused");
    let error = CliProvider::<CallsCli>::new(CallsConfig(CliSettings::new(""))).unwrap_err();
    assert_eq!(error.0, "the path of the `calls` executable is empty");

    let mut settings = CliSettings::new("calls");
    settings.models = vec!["default".into(), "big".into()];
    let provider = CliProvider::<CallsCli>::new(CallsConfig(settings)).unwrap();
    let info = provider.agent_info();
    assert_eq!(
        (info.provider.as_str(), info.display_name.as_str()),
        ("calls", "Calls")
    );
    let models: Vec<(&str, &str)> = info
        .models
        .iter()
        .map(|model| (model.id.as_str(), model.name.as_str()))
        .collect();
    assert_eq!(models, [("default", "Default model"), ("big", "big")]);

    let restore = |handle: serde_json::Value| RestoreSession {
        start: start_request(&std::env::temp_dir()).0,
        resume_handle: handle,
        history: Vec::new(),
    };
    let restored = provider
        .restore_session(restore(serde_json::json!({ "callsId": "c-1" })))
        .await;
    assert!(restored.is_ok());
    for hostile in [
        serde_json::json!({ "callsId": "--help" }),
        serde_json::json!({}),
    ] {
        let Err(error) = provider.restore_session(restore(hostile.clone())).await else {
            panic!("{hostile} was resumed");
        };
        assert!(
            matches!(error, ProviderError::StartFailed { .. }),
            "{error}"
        );
    }
    assert_eq!(
        provider.start(start_request(&std::env::temp_dir()).0).1,
        None
    );
}

//! `agent-host acp` driven by the official ACP crate's client side, as an editor (Zed, a
//! JetBrains IDE) drives it: over the child's stdin and stdout, with the scripted provider.
//!
//! - one editor: new (the session's config options: mode, unattended policy) → a config change
//!   (kept by the host, refused when not on offer) → a prompt whose confirmation is approved
//!   (the file is written) → one whose confirmation is rejected (nothing written) → a prompt
//!   cancelled mid-turn → list → load replays the history; stdout carries ACP alone and stderr no warning (bad input lines:
//!   `crates/acp-agent/tests/bad_input.rs`);
//! - `serve` and two `acp --connect`: a session made in one is listed and loaded by the other,
//!   both editors are asked about its confirmation, and an answer given over AHP withdraws both
//!   questions (`$/cancel_request`);
//! - the real Claude Code against the loopback mock model (skipped, saying why, without the
//!   CLI unless `AGENTHOST_REQUIRE_CLIS=1`): a prompt whose command is approved writes the file,
//!   and a load replays it;
//! - a cwd outside the roots and a host that refuses the token are ACP errors naming the cause;
//!   while `acp` runs its own host, a `serve` on the same data directory is refused.
//!
//! Waits poll with a deadline.

// Test helpers outside `#[test]` functions: a panic here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, CreateElicitationRequest, CreateElicitationResponse,
    InitializeRequest, ListSessionsRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionId, SessionNotification, SetSessionConfigOptionRequest,
    StopReason, TextContent,
};
use agent_client_protocol::{Agent, Client, Lines};
use serde_json::{Value, json};
use support::{Place, Server, agent_host, runtime};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const DEADLINE: Duration = Duration::from_secs(30);

/// The longest one editor's whole conversation may take.
const EDITOR_DEADLINE: Duration = Duration::from_secs(120);

/// What one editor saw.
#[derive(Default)]
struct Seen {
    /// Every `session/update`, as JSON.
    updates: Vec<Value>,
    /// Every permission question's `toolCall`.
    asked: Vec<Value>,
    /// Questions the agent withdrew before they were answered.
    withdrawn: usize,
    /// Every form the agent asked the editor to fill in (`elicitation/create`).
    forms: Vec<Value>,
}

/// How the editor answers permission questions: in turn, or never (it waits for the agent to
/// withdraw them).
#[derive(Clone)]
enum Answers {
    InTurn(Arc<Mutex<Vec<&'static str>>>),
    Never,
}

/// `agent-host acp ARGS` with its pipes as an ACP transport; stderr is kept.
struct Editor {
    child: tokio::process::Child,
    stderr: Arc<Mutex<String>>,
}

impl Editor {
    /// `acp` with its own host over `place` (`--root work --data-dir data`), the scripted
    /// provider and `script`.
    fn scripted(
        place: &Place,
        script: Option<&Path>,
    ) -> (Self, impl agent_client_protocol::ConnectTo<Client> + use<>) {
        let mut args = vec![
            "--provider",
            "scripted",
            "--data-dir",
            path_arg(&place.data),
            "--root",
            path_arg(&place.work),
        ];
        if let Some(script) = script {
            args.extend(["--script", path_arg(script)]);
        }
        Self::spawn(&args)
    }

    fn spawn(args: &[&str]) -> (Self, impl agent_client_protocol::ConnectTo<Client> + use<>) {
        Self::spawn_command(tokio::process::Command::from(agent_host()), args)
    }

    /// `command` (an `agent-host` with its environment set) run as `acp ARGS`.
    fn spawn_command(
        mut command: tokio::process::Command,
        args: &[&str],
    ) -> (Self, impl agent_client_protocol::ConnectTo<Client> + use<>) {
        command
            .arg("acp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = Arc::new(Mutex::new(String::new()));
        let kept = Arc::clone(&stderr);
        tokio::spawn(async move {
            while let Ok(Some(line)) = errors.next_line().await {
                let mut kept = kept.lock().unwrap();
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        let outgoing = futures::sink::unfold(stdin, |mut stdin, line: String| async move {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await?;
            Ok::<_, std::io::Error>(stdin)
        });
        let incoming = futures::stream::unfold(BufReader::new(stdout).lines(), |mut lines| async {
            match lines.next_line().await {
                Ok(Some(line)) => {
                    // Everything on stdout is ACP: one JSON-RPC object per line.
                    let message: Value = serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
                    assert_eq!(message["jsonrpc"], "2.0", "{line}");
                    Some((Ok(line), lines))
                }
                Ok(None) => None,
                Err(error) => Some((Err(error), lines)),
            }
        });
        (Self { child, stderr }, Lines::new(outgoing, incoming))
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits for the agent to exit (its input closed) and checks it logged no warning or error.
    async fn finish_cleanly(mut self) {
        let status = tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .unwrap()
            .unwrap();
        let stderr = self.stderr();
        assert!(status.success(), "{status}: {stderr}");
        assert!(
            !stderr.contains("WARN") && !stderr.contains("ERROR"),
            "{stderr}"
        );
    }
}

/// Runs `work` as an editor connected through `transport`; what it saw is in `seen`.
async fn as_editor<T>(
    transport: impl agent_client_protocol::ConnectTo<Client> + 'static,
    seen: Arc<Mutex<Seen>>,
    answers: Answers,
    work: impl AsyncFnOnce(ConnectionTo<Agent>) -> T + Send,
) -> T
where
    T: Send + 'static,
{
    let recorded = Arc::clone(&seen);
    let questions = Arc::clone(&seen);
    let forms = Arc::clone(&seen);
    let mut out = None;
    let editor = Client
        .v1()
        .name("agenthost-acp-test")
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let update = serde_json::to_value(&notification.update).unwrap();
                recorded.lock().unwrap().updates.push(update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, cx| {
                questions
                    .lock()
                    .unwrap()
                    .asked
                    .push(serde_json::to_value(&request.tool_call).unwrap());
                match &answers {
                    Answers::InTurn(queue) => {
                        let option = queue.lock().unwrap().remove(0);
                        responder.respond(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                                option,
                            )),
                        ))
                    }
                    Answers::Never => {
                        let cancellation = responder.cancellation();
                        let seen = Arc::clone(&questions);
                        cx.spawn(async move {
                            cancellation.cancelled().await;
                            seen.lock().unwrap().withdrawn += 1;
                            responder.respond(RequestPermissionResponse::new(
                                RequestPermissionOutcome::Cancelled,
                            ))
                        })
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CreateElicitationRequest, responder, _cx| {
                forms
                    .lock()
                    .unwrap()
                    .forms
                    .push(serde_json::to_value(&request).unwrap());
                // The editor's user picks the second option of the first question.
                let params = serde_json::to_value(&request).unwrap();
                let (question, schema) = params["requestedSchema"]["properties"]
                    .as_object()
                    .and_then(|p| p.iter().next())
                    .map(|(id, schema)| (id.clone(), schema.clone()))
                    .unwrap();
                let picked = schema["oneOf"][1]["const"].clone();
                responder.respond(
                    serde_json::from_value::<CreateElicitationResponse>(
                        json!({ "action": "accept", "content": { question: picked } }),
                    )
                    .unwrap(),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async |cx: ConnectionTo<Agent>| {
            out = Some(work(cx).await);
            Ok(())
        });
    // A turn that never ends (a question nobody is asked) fails the test instead of hanging it.
    tokio::time::timeout(EDITOR_DEADLINE, editor)
        .await
        .expect("the editor's work did not finish in time")
        .unwrap();
    out.unwrap()
}

/// `initialize` at protocol version 1.
async fn initialize(cx: &ConnectionTo<Agent>) {
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
}

/// A new session in `cwd`: its id.
async fn new_session(cx: &ConnectionTo<Agent>, cwd: std::path::PathBuf) -> SessionId {
    cx.send_request(NewSessionRequest::new(cwd))
        .block_task()
        .await
        .unwrap()
        .session_id
}

fn text(block: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(block))]
}

/// Waits until `check` holds for what the editor saw.
async fn until(seen: &Mutex<Seen>, what: &str, check: impl Fn(&Seen) -> bool) {
    let started = Instant::now();
    while !check(&seen.lock().unwrap()) {
        assert!(started.elapsed() < DEADLINE, "waited too long for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The text of every update of `kind`, joined.
fn texts(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// The last status the updates gave tool call `id`.
fn tool_status(updates: &[Value], id: &str) -> Option<String> {
    updates
        .iter()
        .rev()
        .find(|u| u["toolCallId"] == id && u.get("status").is_some())
        .map(|u| u["status"].as_str().unwrap().to_owned())
}

/// The config option `id` of a session response.
fn option<'a>(response: &'a Value, id: &str) -> &'a Value {
    response["configOptions"]
        .as_array()
        .and_then(|options| options.iter().find(|o| o["id"] == id))
        .unwrap_or_else(|| panic!("no config option {id} in {response}"))
}

fn say(text: &str) -> Value {
    json!({ "kind": "say", "text": text })
}

fn write(path: &str) -> Value {
    json!({ "kind": "tool", "name": "write_file", "confirm": true,
            "effect": { "kind": "writeFile", "path": path, "content": "hi" } })
}

/// Turn 1 writes `a.txt` after a confirmation, turn 2 `b.txt`, turn 3 works for a minute.
fn script(place: &Place) -> std::path::PathBuf {
    place.script(&json!({ "turns": [
        { "steps": [say("hello"), write("a.txt"), say("after a")] },
        { "steps": [write("b.txt"), say("after b")] },
        { "steps": [say("working"), { "kind": "pause", "ms": 60_000 }, say("never")] },
    ] }))
}

fn path_arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn an_editor_prompts_approves_rejects_cancels_lists_and_loads() {
    let place = Place::new();
    let script = script(&place);
    runtime().block_on(async {
        let (editor, transport) = Editor::scripted(&place, Some(&script));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let answers = Answers::InTurn(Arc::new(Mutex::new(vec!["allow_once", "reject_once"])));
        let work = place.work.clone();
        let watched = Arc::clone(&seen);
        as_editor(transport, Arc::clone(&seen), answers, async move |cx| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await
                .unwrap();
            let init = serde_json::to_value(&init).unwrap();
            assert_eq!(init["protocolVersion"], 1);
            assert_eq!(init["agentCapabilities"]["loadSession"], true);
            assert_eq!(init["authMethods"], json!([]));

            let created = cx
                .send_request(NewSessionRequest::new(work.clone()))
                .block_task()
                .await
                .unwrap();
            let session = created.session_id.clone();
            assert!(session.0.starts_with("scripted:/"), "{session:?}");
            // The session's config: its mode (also as ACP modes) and its unattended policy.
            let created = serde_json::to_value(&created).unwrap();
            assert_eq!(option(&created, "mode")["category"], "mode");
            assert_eq!(option(&created, "unattended")["currentValue"], "off");
            assert_eq!(created["modes"]["currentModeId"], "interactive");
            let set: SetSessionConfigOptionRequest = serde_json::from_value(json!({
                "sessionId": session.0.as_ref(), "configId": "unattended", "value": "deny"
            }))
            .unwrap();
            let changed = cx.send_request(set).block_task().await.unwrap();
            let changed = serde_json::to_value(&changed).unwrap();
            assert_eq!(option(&changed, "unattended")["currentValue"], "deny");
            let wrong: SetSessionConfigOptionRequest = serde_json::from_value(json!({
                "sessionId": session.0.as_ref(), "configId": "mode", "value": "yolo"
            }))
            .unwrap();
            let error = cx.send_request(wrong).block_task().await.unwrap_err();
            assert_eq!(i32::from(error.code), -32602, "{error:?}");

            // Approved: the file is written, the tool call completes.
            let done = cx
                .send_request(PromptRequest::new(session.clone(), text("write a")))
                .block_task()
                .await
                .unwrap();
            assert_eq!(done.stop_reason, StopReason::EndTurn);
            assert_eq!(std::fs::read_to_string(work.join("a.txt")).unwrap(), "hi");
            {
                let seen = watched.lock().unwrap();
                assert_eq!(texts(&seen.updates, "agent_message_chunk"), "helloafter a");
                assert_eq!(seen.asked.len(), 1);
                assert_eq!(seen.asked[0]["title"], "Write `a.txt`");
                assert_eq!(seen.asked[0]["rawInput"]["path"], "a.txt");
                assert_eq!(
                    tool_status(&seen.updates, "tool-1-1").as_deref(),
                    Some("completed")
                );
            }

            // Rejected: nothing is written, the call fails, the turn goes on.
            let done = cx
                .send_request(PromptRequest::new(session.clone(), text("write b")))
                .block_task()
                .await
                .unwrap();
            assert_eq!(done.stop_reason, StopReason::EndTurn);
            assert!(!work.join("b.txt").exists());
            {
                let seen = watched.lock().unwrap();
                assert_eq!(seen.asked.len(), 2);
                assert_eq!(
                    tool_status(&seen.updates, "tool-2-1").as_deref(),
                    Some("failed")
                );
                assert!(texts(&seen.updates, "agent_message_chunk").ends_with("after b"));
            }

            // Cancelled mid-turn: the prompt's answer says so.
            let running = cx.send_request(PromptRequest::new(session.clone(), text("work")));
            until(&watched, "the third turn's text", |seen| {
                texts(&seen.updates, "agent_message_chunk").ends_with("working")
            })
            .await;
            cx.send_notification(CancelNotification::new(session.clone()))
                .unwrap();
            let done = running.block_task().await.unwrap();
            assert_eq!(done.stop_reason, StopReason::Cancelled);

            let listed = cx
                .send_request(ListSessionsRequest::new().cwd(work.clone()))
                .block_task()
                .await
                .unwrap();
            let listed = serde_json::to_value(&listed).unwrap();
            assert_eq!(listed["sessions"][0]["sessionId"], session.0.as_ref());
            assert_eq!(listed["sessions"][0]["cwd"], work.to_str().unwrap());
            let elsewhere = cx
                .send_request(ListSessionsRequest::new().cwd(std::env::temp_dir()))
                .block_task()
                .await
                .unwrap();
            assert!(elsewhere.sessions.is_empty());

            // Load replays the history: each message, what the agent said, the final status of
            // each tool call.
            watched.lock().unwrap().updates.clear();
            let loaded = cx
                .send_request(LoadSessionRequest::new(session.clone(), work.clone()))
                .block_task()
                .await
                .unwrap();
            let loaded = serde_json::to_value(&loaded).unwrap();
            assert_eq!(
                option(&loaded, "unattended")["currentValue"],
                "deny",
                "the host kept the editor's choice"
            );
            let seen = watched.lock().unwrap();
            assert_eq!(
                texts(&seen.updates, "user_message_chunk"),
                "write awrite bwork"
            );
            assert_eq!(
                texts(&seen.updates, "agent_message_chunk"),
                "helloafter aafter bworking"
            );
            assert_eq!(
                tool_status(&seen.updates, "tool-1-1").as_deref(),
                Some("completed")
            );
            assert_eq!(
                tool_status(&seen.updates, "tool-2-1").as_deref(),
                Some("failed")
            );
            assert_eq!(seen.asked.len(), 2, "a replay asks nothing");
        })
        .await;
        editor.finish_cleanly().await;
    });
}

#[test]
fn a_cwd_outside_the_roots_and_a_refused_token_are_errors_the_editor_shows() {
    let place = Place::new();
    runtime().block_on(async {
        let (mut editor, transport) = Editor::scripted(&place, None);
        let outside = place.base.clone();
        let place_for_serve = &place;
        as_editor(transport, Arc::default(), Answers::Never, async move |cx| {
            initialize(&cx).await;
            let error = cx
                .send_request(NewSessionRequest::new(outside))
                .block_task()
                .await
                .unwrap_err();
            assert_eq!(i32::from(error.code), -32602, "{error:?}");
            assert!(
                error.message.contains("outside the folders") && error.message.contains("--root"),
                "{error:?}"
            );
            let error = cx
                .send_request(PromptRequest::new(
                    SessionId::new("scripted:/nope"),
                    text("x"),
                ))
                .block_task()
                .await
                .unwrap_err();
            assert!(
                error.message.contains("load or resume it first"),
                "{error:?}"
            );
            // While it runs, the editor's host holds the data directory: a `serve` on it
            // is refused, naming --connect.
            let mut refused = support::Spawned::spawn(support::serve_command(
                place_for_serve,
                &place_for_serve.data,
                None,
            ));
            let (status, _, stderr) = tokio::task::block_in_place(|| refused.wait());
            assert!(!status.success());
            assert!(stderr.contains("--connect URL"), "{stderr}");
        })
        .await;
        tokio::time::timeout(DEADLINE, editor.child.wait())
            .await
            .unwrap()
            .unwrap();

        let server = Server::start(&place, None);
        let (bad, _) = server.url.split_once("tkn=").unwrap();
        let wrong = format!("{bad}tkn=wrong");
        let (_editor, transport) = Editor::spawn(&["--connect", &wrong]);
        let work = place.work.clone();
        as_editor(transport, Arc::default(), Answers::Never, async move |cx| {
            // The agent still speaks ACP: initialize works, a session request says why not.
            initialize(&cx).await;
            let error = cx
                .send_request(NewSessionRequest::new(work))
                .block_task()
                .await
                .unwrap_err();
            assert!(
                error.message.contains("refused the connection token"),
                "{error:?}"
            );
            assert!(
                !error.message.contains("wrong"),
                "the token is never shown: {error:?}"
            );
        })
        .await;
    });
}

#[test]
fn two_editors_on_one_serve_share_a_session_and_an_ahp_answer_withdraws_their_questions() {
    let place = Place::new();
    let script =
        place.script(&json!({ "default": { "steps": [write("shared.txt"), say("shared done")] } }));
    let server = Server::start(&place, Some(&script));
    runtime().block_on(async {
        // Without --provider, the first agent the host offers (scripted, as `serve` has it).
        let (_first, first) = Editor::spawn(&["--connect", &server.url]);
        let (_second, second) =
            Editor::spawn(&["--provider", "scripted", "--connect", &server.url]);
        let seen_first = Arc::new(Mutex::new(Seen::default()));
        let seen_second = Arc::new(Mutex::new(Seen::default()));
        let (session_tx, session_rx) = tokio::sync::oneshot::channel::<SessionId>();
        let work = place.work.clone();
        let url = server.url.clone();

        // The first editor makes the session and prompts; nobody in either editor answers.
        let watched = Arc::clone(&seen_first);
        let first_editor = as_editor(
            first,
            Arc::clone(&seen_first),
            Answers::Never,
            async move |cx| {
                initialize(&cx).await;
                let session = new_session(&cx, work.clone()).await;
                session_tx.send(session.clone()).unwrap();
                // With an image: it reaches the host's turn as an attachment.
                let mut prompt = text("write shared");
                prompt.push(
                    serde_json::from_value(
                        json!({ "type": "image", "data": "aGk=", "mimeType": "image/png" }),
                    )
                    .unwrap(),
                );
                let done = cx
                    .send_request(PromptRequest::new(session, prompt))
                    .block_task()
                    .await
                    .unwrap();
                assert_eq!(done.stop_reason, StopReason::EndTurn);
                assert_eq!(
                    std::fs::read_to_string(work.join("shared.txt")).unwrap(),
                    "hi"
                );
                let seen = watched.lock().unwrap();
                assert_eq!(seen.asked.len(), 1);
                assert_eq!(seen.withdrawn, 1, "the AHP answer withdrew the question");
            },
        );

        // The second lists and loads it, is asked too, and the answer comes over AHP.
        let watched = Arc::clone(&seen_second);
        let other = Arc::clone(&seen_first);
        let work = place.work.clone();
        let second_editor = as_editor(
            second,
            Arc::clone(&seen_second),
            Answers::Never,
            async move |cx| {
                initialize(&cx).await;
                let session = session_rx.await.unwrap();
                let listed = cx
                    .send_request(ListSessionsRequest::new())
                    .block_task()
                    .await
                    .unwrap();
                assert!(
                    listed.sessions.iter().any(|s| s.session_id == session),
                    "{listed:?}"
                );
                cx.send_request(LoadSessionRequest::new(session.clone(), work))
                    .block_task()
                    .await
                    .unwrap();
                until(&watched, "the second editor's question", |seen| {
                    seen.asked.len() == 1
                })
                .await;
                until(&other, "the first editor's question", |seen| {
                    seen.asked.len() == 1
                })
                .await;
                let tool_call_id = watched.lock().unwrap().asked[0]["toolCallId"]
                    .as_str()
                    .unwrap()
                    .to_owned();

                let host = agenthost_client::HostConnection::connect(&url, "ahp-answerer")
                    .await
                    .unwrap();
                let chat = agenthost_protocol::ChatUri::default_for(
                    &agenthost_protocol::SessionUri::parse(&session.0).unwrap(),
                );
                let (view, _subscription) = host.open_chat(&chat).await.unwrap();
                let running = view.state().active_turn.as_ref().unwrap();
                let attachments = serde_json::to_value(&running.message.attachments).unwrap();
                assert_eq!(
                    attachments,
                    json!([{ "type": "embeddedResource", "label": "image", "data": "aGk=",
                             "contentType": "image/png" }])
                );
                let turn = running.id.clone();
                host.confirm_tool(&chat, &turn, &tool_call_id, true)
                    .await
                    .unwrap();

                until(&watched, "the withdrawal", |seen| seen.withdrawn == 1).await;
                until(&watched, "the end of the turn", |seen| {
                    texts(&seen.updates, "agent_message_chunk").ends_with("shared done")
                })
                .await;
                {
                    let seen = watched.lock().unwrap();
                    assert_eq!(
                        texts(&seen.updates, "user_message_chunk"),
                        "write shared",
                        "the turn the other editor started, with its message"
                    );
                    assert_eq!(
                        tool_status(&seen.updates, &tool_call_id).as_deref(),
                        Some("completed")
                    );
                }
                host.close().await;
            },
        );
        tokio::join!(first_editor, second_editor);
    });
}

#[test]
fn an_input_request_is_a_form_for_an_editor_that_takes_forms_and_declined_for_one_that_does_not() {
    let place = Place::new();
    let ask = json!({ "kind": "ask", "message": "Which color?", "questions": [
        { "kind": "single-select", "id": "color", "message": "Pick one", "required": true,
          "options": [{ "id": "red", "label": "Red" }, { "id": "blue", "label": "Blue" }] }] });
    let script = place.script(&json!({ "default": { "steps": [ask] } }));
    runtime().block_on(async {
        for takes_forms in [true, false] {
            let (editor, transport) = Editor::scripted(&place, Some(&script));
            let seen = Arc::new(Mutex::new(Seen::default()));
            let watched = Arc::clone(&seen);
            let work = place.work.clone();
            as_editor(
                transport,
                Arc::clone(&seen),
                Answers::Never,
                async move |cx| {
                    let capabilities = if takes_forms {
                        json!({ "elicitation": { "form": {} } })
                    } else {
                        json!({})
                    };
                    let init: InitializeRequest = serde_json::from_value(
                        json!({ "protocolVersion": 1, "clientCapabilities": capabilities }),
                    )
                    .unwrap();
                    cx.send_request(init).block_task().await.unwrap();
                    let session = new_session(&cx, work).await;
                    let done = cx
                        .send_request(PromptRequest::new(session, text("ask me")))
                        .block_task()
                        .await
                        .unwrap();
                    assert_eq!(done.stop_reason, StopReason::EndTurn);
                    let seen = watched.lock().unwrap();
                    let said = texts(&seen.updates, "agent_message_chunk");
                    if takes_forms {
                        assert_eq!(seen.forms.len(), 1);
                        assert_eq!(seen.forms[0]["message"], "Which color?");
                        assert_eq!(seen.forms[0]["mode"], "form");
                        assert_eq!(said, "Answered: blue");
                    } else {
                        assert!(seen.forms.is_empty());
                        assert!(said.contains("cannot answer questions"), "{said}");
                        assert!(said.ends_with("Declined"), "{said}");
                    }
                },
            )
            .await;
            editor.finish_cleanly().await;
        }
    });
}

#[test]
fn an_editor_runs_real_claude_code_against_the_mock_model() {
    let Some(claude) = support::real_claude() else {
        return;
    };
    let place = Place::new();
    let home = place.base.join("home");
    std::fs::create_dir(&home).unwrap();
    runtime().block_on(async {
        let mock =
            agenthost_testkit::MockModel::start(agenthost_testkit::MockModelConfig::default())
                .await
                .unwrap();
        let mut command = agent_host();
        support::claude_against_the_mock(&mut command, &mock.base_url(), &home);
        let command = tokio::process::Command::from(command);
        let (editor, transport) = Editor::spawn_command(
            command,
            &[
                "--provider",
                "claude",
                "--claude-bin",
                path_arg(&claude),
                "--claude-start-timeout-secs",
                "60",
                "--data-dir",
                path_arg(&place.data),
                "--root",
                path_arg(&place.work),
            ],
        );
        let seen = Arc::new(Mutex::new(Seen::default()));
        let watched = Arc::clone(&seen);
        let work = place.work.clone();
        let answers = Answers::InTurn(Arc::new(Mutex::new(vec!["allow_once"])));
        as_editor(transport, Arc::clone(&seen), answers, async move |cx| {
            initialize(&cx).await;
            let session = new_session(&cx, work.clone()).await;
            assert!(session.0.starts_with("claude:/"), "{session:?}");
            let done = cx
                .send_request(PromptRequest::new(
                    session.clone(),
                    text("Create out.txt containing hi"),
                ))
                .block_task()
                .await
                .unwrap();
            assert_eq!(done.stop_reason, StopReason::EndTurn);
            assert_eq!(
                std::fs::read_to_string(work.join("out.txt")).unwrap(),
                "hi\n"
            );
            let done = serde_json::to_value(&done).unwrap();
            assert!(
                done["usage"]["inputTokens"].as_u64().is_some_and(|n| n > 0),
                "the turn's usage: {done}"
            );
            {
                let seen = watched.lock().unwrap();
                assert_eq!(seen.asked.len(), 1, "one permission question");
                assert!(
                    seen.asked[0]["rawInput"].to_string().contains("out.txt"),
                    "{}",
                    seen.asked[0]
                );
                let id = seen.asked[0]["toolCallId"].as_str().unwrap().to_owned();
                assert_eq!(
                    tool_status(&seen.updates, &id).as_deref(),
                    Some("completed")
                );
                assert!(
                    texts(&seen.updates, "agent_message_chunk").contains("Done"),
                    "the model's answer streams in"
                );
            }
            watched.lock().unwrap().updates.clear();
            cx.send_request(LoadSessionRequest::new(session, work))
                .block_task()
                .await
                .unwrap();
            let seen = watched.lock().unwrap();
            assert_eq!(
                texts(&seen.updates, "user_message_chunk"),
                "Create out.txt containing hi"
            );
            assert!(texts(&seen.updates, "agent_message_chunk").contains("Done"));
        })
        .await;
        editor.finish_cleanly().await;
    });
}

#[test]
fn a_subagents_confirmation_is_asked_and_its_tool_calls_shown() {
    let place = Place::new();
    let script = place.script(&json!({ "default": { "steps": [
        { "kind": "subagent", "agent": "helper", "description": "helps", "prompt": "help",
          "steps": [write("sub.txt"), say("sub done")] },
        say("main done"),
    ] } }));
    runtime().block_on(async {
        let (editor, transport) = Editor::scripted(&place, Some(&script));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let watched = Arc::clone(&seen);
        let work = place.work.clone();
        let answers = Answers::InTurn(Arc::new(Mutex::new(vec!["allow_once"])));
        as_editor(transport, Arc::clone(&seen), answers, async move |cx| {
            initialize(&cx).await;
            let session = new_session(&cx, work.clone()).await;
            let done = cx
                .send_request(PromptRequest::new(session, text("delegate")))
                .block_task()
                .await
                .unwrap();
            assert_eq!(done.stop_reason, StopReason::EndTurn);
            assert_eq!(std::fs::read_to_string(work.join("sub.txt")).unwrap(), "hi");
            let seen = watched.lock().unwrap();
            assert_eq!(seen.asked.len(), 1, "the subagent's confirmation");
            assert_eq!(seen.asked[0]["title"], "Write `sub.txt`");
            let id = seen.asked[0]["toolCallId"].as_str().unwrap();
            assert_eq!(
                tool_status(&seen.updates, id).as_deref(),
                Some("completed"),
                "the subagent's tool call is shown"
            );
            assert_eq!(
                texts(&seen.updates, "agent_message_chunk"),
                "main done",
                "the subagent's text stays in its own chat"
            );
        })
        .await;
        editor.finish_cleanly().await;
    });
}

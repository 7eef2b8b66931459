//! The built-in demo script, played through the public provider API the way the host plays it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agenthost_protocol::state::ResponsePart;
use agenthost_protocol::{AgentSignal, ChatUri, SafeId, SessionUri, StateAction};
use agenthost_provider_api::{
    PermissionDecision, Provider, RoutedSignal, SignalSink, StartSession, TurnRequest,
    signal_channel,
};
use agenthost_provider_scripted::ScriptedProvider;
use tokio::sync::mpsc;

/// A short name per signal, enough to check the demo's shape.
fn name(signal: &AgentSignal) -> String {
    let (scope, what) = match signal {
        AgentSignal::Action(action) => (
            action.parent_tool_call_id.clone(),
            match &action.action {
                StateAction::ChatResponsePart(part) => match &part.part {
                    ResponsePart::Markdown(_) => "markdown".to_owned(),
                    ResponsePart::Reasoning(_) => "reasoning".to_owned(),
                    other => format!("{other:?}"),
                },
                StateAction::ChatToolCallStart(start) => format!("start {}", start.tool_call_id),
                StateAction::ChatToolCallReady(ready) => format!("ready {}", ready.tool_call_id),
                StateAction::ChatToolCallComplete(done) => format!(
                    "complete {} {}",
                    done.tool_call_id,
                    if done.result.success { "ok" } else { "failed" }
                ),
                StateAction::ChatUsage(_) => "usage".to_owned(),
                StateAction::ChatTurnComplete(_) => "turnComplete".to_owned(),
                other => format!("{other:?}"),
            },
        ),
        AgentSignal::PendingConfirmation(pending) => (
            pending.parent_tool_call_id.clone(),
            format!("pending {}", pending.state.tool_call_id),
        ),
        AgentSignal::SubagentStarted(started) => {
            (None, format!("subagent {}", started.tool_call_id))
        }
        AgentSignal::SubagentCompleted(done) => {
            (None, format!("subagentDone {}", done.tool_call_id))
        }
        other => (None, format!("{other:?}")),
    };
    match scope {
        Some(parent) => format!("[{parent}] {what}"),
        None => what,
    }
}

/// Signal names up to `last`, with streamed deltas left out.
async fn names_until(rx: &mut mpsc::Receiver<RoutedSignal>, last: &str) -> Vec<String> {
    let mut names = Vec::new();
    loop {
        let routed = tokio::time::timeout(Duration::from_secs(3600), rx.recv())
            .await
            .expect("the demo keeps going")
            .expect("the channel stays open");
        if let AgentSignal::Action(action) = &routed.signal
            && matches!(
                action.action,
                StateAction::ChatDelta(_) | StateAction::ChatReasoning(_)
            )
        {
            continue;
        }
        let name = name(&routed.signal);
        let done = name == last;
        names.push(name);
        if done {
            return names;
        }
    }
}

fn turn(turn_id: &str, text: &str) -> TurnRequest {
    TurnRequest {
        turn_id: turn_id.into(),
        text: text.into(),
        instructions: Vec::new(),
        attachments: Vec::new(),
        model: None,
        mode: agenthost_provider_api::AgentMode::Interactive,
    }
}

#[tokio::test(start_paused = true)]
async fn the_demo_writes_a_file_on_approval_then_a_subagent_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::builtin();
    let session_uri = SessionUri::canonical(SafeId::new("demo").unwrap());
    let chat = ChatUri::default_for(&session_uri);
    let (tx, mut rx) = signal_channel(16);
    let session = provider
        .start_session(StartSession {
            session: session_uri,
            signals: SignalSink::new(chat.clone(), tx),
            chat,
            working_directory: dir.path().to_owned(),
            model: None,
        })
        .await
        .unwrap();

    session
        .send_turn(turn("t1", "Show me what you can do"))
        .await
        .unwrap();
    assert_eq!(
        names_until(&mut rx, "pending tool-1-1").await,
        [
            "reasoning",
            "markdown",
            "start tool-1-1",
            "pending tool-1-1"
        ]
    );
    assert!(!dir.path().join("hello.txt").exists());
    session
        .respond_to_permission("tool-1-1", PermissionDecision::Approve)
        .await
        .unwrap();
    assert_eq!(
        names_until(&mut rx, "turnComplete").await,
        ["complete tool-1-1 ok", "markdown", "usage", "turnComplete"]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "Hello from the scripted agent!\n"
    );

    session.send_turn(turn("t2", "Go on")).await.unwrap();
    assert_eq!(
        names_until(&mut rx, "turnComplete").await,
        [
            "markdown",
            "start tool-2-1",
            "ready tool-2-1",
            "subagent tool-2-1",
            "[tool-2-1] reasoning",
            "[tool-2-1] start tool-2-2",
            "[tool-2-1] ready tool-2-2",
            "[tool-2-1] complete tool-2-2 ok",
            "[tool-2-1] markdown",
            "[tool-2-1] usage",
            "subagentDone tool-2-1",
            "complete tool-2-1 ok",
            "markdown",
            "usage",
            "turnComplete",
        ]
    );

    session.send_turn(turn("t3", "Thanks!")).await.unwrap();
    assert_eq!(
        names_until(&mut rx, "turnComplete").await,
        ["markdown", "turnComplete"]
    );
    assert_eq!(
        session.resume_handle(),
        Some(serde_json::json!({ "turnsRun": 3 }))
    );
    session.dispose().await;
}

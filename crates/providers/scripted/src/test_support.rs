//! A harness for the unit tests: one scripted session, its signals, and a readable rendering of
//! them so tests can compare whole sequences.

use std::sync::Arc;
use std::time::Duration;

use agenthost_protocol::StringOrMarkdown;
use agenthost_protocol::state::{ResponsePart, ToolCallConfirmationReason, ToolCallContributor};
use agenthost_protocol::{AgentSignal, ChatUri, SafeId, SessionUri, StateAction};
use agenthost_provider_api::{
    Provider, ProviderSession, RestoreSession, RoutedSignal, SignalSink, StartSession, TurnRequest,
    signal_channel,
};
use tempfile::TempDir;
use tokio::sync::mpsc;

use crate::{Script, ScriptedProvider};

/// Longer than any pause a test script uses: waiting this long means "nothing more will come".
const QUIET: Duration = Duration::from_secs(24 * 3600);

pub(crate) struct Harness {
    pub provider: ScriptedProvider,
    pub session: Arc<dyn ProviderSession>,
    pub rx: mpsc::Receiver<RoutedSignal>,
    pub dir: TempDir,
}

pub(crate) fn session_uri() -> SessionUri {
    SessionUri::canonical(SafeId::new("s1").unwrap())
}

pub(crate) fn start_request(dir: &TempDir) -> (StartSession, mpsc::Receiver<RoutedSignal>) {
    let (tx, rx) = signal_channel(64);
    let session = session_uri();
    let chat = ChatUri::default_for(&session);
    let request = StartSession {
        signals: SignalSink::new(chat.clone(), tx),
        session,
        chat,
        working_directory: dir.path().to_owned(),
        model: None,
    };
    (request, rx)
}

pub(crate) fn request(turn_id: &str, text: &str) -> TurnRequest {
    TurnRequest {
        turn_id: turn_id.into(),
        text: text.into(),
        instructions: Vec::new(),
        attachments: Vec::new(),
        model: None,
        mode: agenthost_provider_api::AgentMode::Interactive,
    }
}

impl Harness {
    pub async fn new(script: &str) -> Self {
        Self::with_script(Script::from_json(script).unwrap()).await
    }

    pub async fn with_script(script: Script) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let provider = ScriptedProvider::new(script);
        let (start, rx) = start_request(&dir);
        let session = provider.start_session(start).await.unwrap();
        Self {
            provider,
            session,
            rx,
            dir,
        }
    }

    /// A new session of the same provider and directory, restored from `handle`.
    pub async fn restore(&mut self, handle: serde_json::Value) {
        let (start, rx) = start_request(&self.dir);
        self.session = self
            .provider
            .restore_session(RestoreSession {
                start,
                resume_handle: handle,
                history: Vec::new(),
            })
            .await
            .unwrap();
        self.rx = rx;
    }

    pub async fn send(&self, turn_id: &str, text: &str) {
        self.session
            .send_turn(request(turn_id, text))
            .await
            .unwrap();
    }

    pub async fn next(&mut self) -> AgentSignal {
        let routed = tokio::time::timeout(QUIET, self.rx.recv())
            .await
            .expect("a signal arrives")
            .expect("the provider keeps the channel open");
        routed.signal
    }

    /// Signals up to and including the first one `stop` accepts.
    pub async fn until(&mut self, stop: impl Fn(&AgentSignal) -> bool) -> Vec<AgentSignal> {
        let mut signals = Vec::new();
        loop {
            let signal = self.next().await;
            let done = stop(&signal);
            signals.push(signal);
            if done {
                return signals;
            }
        }
    }

    pub async fn until_terminal(&mut self) -> Vec<AgentSignal> {
        self.until(is_terminal).await
    }

    pub async fn until_pending(&mut self) -> Vec<AgentSignal> {
        self.until(|signal| matches!(signal, AgentSignal::PendingConfirmation(_)))
            .await
    }

    /// Sends a turn and renders everything it emits up to its terminal action.
    pub async fn turn(&mut self, turn_id: &str, text: &str) -> Vec<String> {
        self.send(turn_id, text).await;
        describe_all(&self.until_terminal().await)
    }

    /// Lets every timer run out and checks nothing more was emitted.
    pub async fn assert_quiet(&mut self) {
        tokio::time::sleep(QUIET).await;
        if let Ok(routed) = self.rx.try_recv() {
            panic!("unexpected signal: {}", describe(&routed.signal));
        }
    }

    pub fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join(name)).ok()
    }
}

pub(crate) fn is_terminal(signal: &AgentSignal) -> bool {
    matches!(
        signal,
        AgentSignal::Action(action) if action.parent_tool_call_id.is_none() && matches!(
            action.action,
            StateAction::ChatTurnComplete(_)
                | StateAction::ChatTurnCancelled(_)
                | StateAction::ChatError(_)
        )
    )
}

/// The turn id of every action and pending confirmation.
pub(crate) fn turn_ids(signals: &[AgentSignal]) -> Vec<String> {
    signals
        .iter()
        .filter_map(|signal| match signal {
            AgentSignal::Action(action) => action_turn_id(&action.action),
            AgentSignal::PendingConfirmation(pending) => Some(pending.turn_id.clone()),
            _ => None,
        })
        .collect()
}

fn action_turn_id(action: &StateAction) -> Option<String> {
    Some(
        match action {
            StateAction::ChatResponsePart(a) => &a.turn_id,
            StateAction::ChatDelta(a) => &a.turn_id,
            StateAction::ChatReasoning(a) => &a.turn_id,
            StateAction::ChatToolCallStart(a) => &a.turn_id,
            StateAction::ChatToolCallReady(a) => &a.turn_id,
            StateAction::ChatToolCallComplete(a) => &a.turn_id,
            StateAction::ChatUsage(a) => &a.turn_id,
            StateAction::ChatTurnComplete(a) => &a.turn_id,
            StateAction::ChatTurnCancelled(a) => &a.turn_id,
            StateAction::ChatError(a) => &a.turn_id,
            _ => return None,
        }
        .clone(),
    )
}

pub(crate) fn describe_all(signals: &[AgentSignal]) -> Vec<String> {
    signals.iter().map(describe).collect()
}

fn text(value: &StringOrMarkdown) -> &str {
    value.as_text()
}

/// One line per signal: `[<parent tool call>] <what> <key fields>`.
pub(crate) fn describe(signal: &AgentSignal) -> String {
    match signal {
        AgentSignal::Action(action) => {
            let scope = action
                .parent_tool_call_id
                .as_ref()
                .map(|parent| format!("[{parent}] "))
                .unwrap_or_default();
            format!("{scope}{}", describe_action(&action.action))
        }
        AgentSignal::PendingConfirmation(pending) => {
            let scope = pending
                .parent_tool_call_id
                .as_ref()
                .map(|parent| format!("[{parent}] "))
                .unwrap_or_default();
            format!(
                "{scope}pendingConfirmation {} {} {} {:?}",
                pending.state.tool_call_id,
                pending.permission_kind.as_str(),
                pending.permission_path.as_deref().unwrap_or("-"),
                text(&pending.state.invocation_message),
            )
        }
        AgentSignal::SubagentStarted(started) => {
            let scope = started
                .parent_tool_call_id
                .as_ref()
                .map(|parent| format!("[{parent}] "))
                .unwrap_or_default();
            format!(
                "{scope}subagentStarted {} {}",
                started.tool_call_id, started.agent_name
            )
        }
        AgentSignal::SubagentCompleted(completed) => {
            format!("subagentCompleted {}", completed.tool_call_id)
        }
        other => format!("{other:?}"),
    }
}

fn describe_action(action: &StateAction) -> String {
    match action {
        StateAction::ChatResponsePart(a) => match &a.part {
            ResponsePart::Markdown(part) => format!("markdown {} {:?}", part.id, part.content),
            ResponsePart::Reasoning(part) => format!("reasoning {} {:?}", part.id, part.content),
            other => format!("part {other:?}"),
        },
        StateAction::ChatDelta(a) => format!("delta {} {:?}", a.part_id, a.content),
        StateAction::ChatReasoning(a) => format!("reasoningDelta {} {:?}", a.part_id, a.content),
        StateAction::ChatToolCallStart(a) => format!(
            "toolCallStart {} {} {:?}{}",
            a.tool_call_id,
            a.tool_name,
            a.display_name,
            match &a.contributor {
                Some(ToolCallContributor::Client(client)) =>
                    format!(" client={}", client.client_id),
                Some(other) => format!(" contributor={other:?}"),
                None => String::new(),
            }
        ),
        StateAction::ChatToolCallReady(a) => format!(
            "toolCallReady {} {} {:?}",
            a.tool_call_id,
            match &a.confirmed {
                Some(ToolCallConfirmationReason::NotNeeded) => "not-needed",
                Some(_) => "confirmed",
                None => "unconfirmed",
            },
            text(&a.invocation_message)
        ),
        StateAction::ChatToolCallComplete(a) => {
            let outcome = if a.result.success { "ok" } else { "failed" };
            let code = a
                .result
                .error
                .as_ref()
                .and_then(|error| error.get("code"))
                .and_then(|code| code.as_str())
                .map(|code| format!(" {code}"))
                .unwrap_or_default();
            format!(
                "toolCallComplete {} {outcome}{code} {:?}",
                a.tool_call_id,
                text(&a.result.past_tense_message)
            )
        }
        StateAction::ChatUsage(a) => format!(
            "usage {}/{} {}",
            a.usage.input_tokens.unwrap_or_default(),
            a.usage.output_tokens.unwrap_or_default(),
            a.usage.model.as_deref().unwrap_or("-")
        ),
        StateAction::ChatTurnComplete(a) => format!("turnComplete {}ms", a.duration),
        StateAction::ChatTurnCancelled(a) => format!("turnCancelled {}ms", a.duration),
        StateAction::ChatError(a) => format!(
            "error {} {:?} resumable={} {}ms",
            a.part.error.error_type,
            a.part.error.message,
            a.part.resumable.unwrap_or(false),
            a.duration
        ),
        other => format!("{other:?}"),
    }
}

//! Running one turn: script steps in, signals out.
//!
//! Ids are deterministic so a demo or a test plays out identically every time: markdown parts
//! `md-<turn>-<n>`, reasoning parts `reasoning-<turn>-<n>`, tool calls (subagent spawns
//! included) `tool-<turn>-<n>`, where `<turn>` is the chat's turn number counted from 1 and `<n>`
//! counts from 1 within the turn. Subagent actions carry the parent turn's id, as real agents'
//! do; the host maps them to the subagent chat's turn.

use std::path::PathBuf;
use std::time::Duration;

use agenthost_protocol::ahp_types::actions::{
    ChatDeltaAction, ChatErrorAction, ChatReasoningAction, ChatResponsePartAction,
    ChatToolCallCompleteAction, ChatToolCallStartAction, ChatTurnCompleteAction, ChatUsageAction,
};
use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{
    ErrorInfo, MarkdownResponsePart, ReasoningResponsePart, ResponsePart,
    ToolCallClientContributor, ToolCallContributor, ToolCallPendingConfirmationState,
    ToolCallResult, ToolInput, ToolResultContent, ToolResultSubagentContent, ToolResultTextContent,
    UsageInfo,
};
use agenthost_protocol::error_info::{INTERNAL_ERROR, error_info, error_part};
use agenthost_protocol::{
    ActionSignal, AgentSignal, ChatUri, PendingConfirmation, PermissionKind, SafeId, SessionUri,
    StateAction, SubagentCompleted, SubagentStarted,
};
use agenthost_provider_api::{PermissionDecision, SignalSink, TurnRequest};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::effects::{self, EffectOutput};
use crate::script::{Effect, JoinUntil, SCRIPTED_ERROR, Step, Subagent, Tool, TurnScript};
use crate::session::{Answer, TurnControl};

/// The tool name of a subagent's spawning call, as Claude Code names it.
pub const SUBAGENT_TOOL_NAME: &str = "Task";

/// Milliseconds since `started`, as AHP durations are written.
pub(crate) fn duration_ms(started: Instant) -> i64 {
    i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)
}

/// Splits `text` into pieces of `size` characters (never inside a character).
pub(crate) fn chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let size = size.max(1);
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .char_indices()
            .nth(size)
            .map_or(rest.len(), |(index, _)| index);
        let (head, tail) = rest.split_at(end);
        rest = tail;
        Some(head)
    })
}

/// Why a turn stopped before its last step.
enum Stop {
    /// An `error` step: the turn ends with `chat/error`.
    Failed {
        error: Box<ErrorInfo>,
        resumable: bool,
    },
    /// The host stopped listening, or the turn is being cancelled: send nothing more.
    Gone,
}

/// One turn in progress: its own steps, or one of its background subagents.
pub(crate) struct TurnRun {
    signals: SignalSink,
    session: SessionUri,
    turn: TurnRequest,
    /// What ids are numbered under: the turn number (`1`), or for a background subagent its
    /// `Task` call's (`1-3` for `tool-1-3`).
    label: String,
    working_directory: PathBuf,
    started: Instant,
    control: TurnControl,
    markdown_parts: u32,
    reasoning_parts: u32,
    tool_calls: u32,
    inputs: u32,
    /// The background subagents this run started (their `Task` call ids).
    children: Vec<String>,
}

impl TurnRun {
    pub(crate) fn new(
        signals: SignalSink,
        session: SessionUri,
        turn: TurnRequest,
        number: u64,
        working_directory: PathBuf,
        started: Instant,
        control: TurnControl,
    ) -> Self {
        Self {
            signals,
            session,
            turn,
            label: number.to_string(),
            working_directory,
            started,
            control,
            markdown_parts: 0,
            reasoning_parts: 0,
            tool_calls: 0,
            inputs: 0,
            children: Vec::new(),
        }
    }

    /// Runs every step, waits for the background subagents it started, then sends the turn's
    /// terminal action unless the turn was cancelled. An `error` step does not wait: the
    /// background subagents keep running after the turn ended.
    pub(crate) async fn run(mut self, script: TurnScript) {
        let mut outcome = self.steps(&script.steps, None).await;
        if outcome.is_ok() {
            outcome = self.join(JoinUntil::Done).await;
        }
        let claimed = self.control.begin_ending();
        let terminal = match outcome {
            Ok(()) => StateAction::ChatTurnComplete(ChatTurnCompleteAction {
                turn_id: self.turn.turn_id.clone(),
                duration: duration_ms(self.started),
                meta: None,
            }),
            Err(Stop::Failed { error, resumable }) => StateAction::ChatError(ChatErrorAction {
                turn_id: self.turn.turn_id.clone(),
                duration: duration_ms(self.started),
                part: error_part(*error, resumable),
                meta: None,
            }),
            Err(Stop::Gone) => {
                if claimed {
                    self.control.ended();
                }
                return;
            }
        };
        if claimed {
            // A closed sink means the host is gone; there is nobody left to tell.
            let _ = self.emit(None, terminal).await;
            self.control.ended();
        }
    }

    fn steps<'a>(
        &'a mut self,
        steps: &'a [Step],
        scope: Option<&'a SafeId>,
    ) -> BoxFuture<'a, Result<(), Stop>> {
        Box::pin(async move {
            for step in steps {
                self.step(step, scope).await?;
            }
            Ok(())
        })
    }

    async fn step(&mut self, step: &Step, scope: Option<&SafeId>) -> Result<(), Stop> {
        match step {
            Step::Say(say) => {
                self.stream(Stream::Markdown, &say.text, say.chunk, say.delay_ms, scope)
                    .await
            }
            Step::Think(think) => {
                self.stream(
                    Stream::Reasoning,
                    &think.text,
                    think.chunk,
                    think.delay_ms,
                    scope,
                )
                .await
            }
            Step::Echo(echo) => {
                let mut text = format!("{}{}", echo.prefix, self.turn.text);
                if echo.instructions && !self.turn.instructions.is_empty() {
                    text.push_str("\n\nInstructions:");
                    for instruction in &self.turn.instructions {
                        text.push_str("\n- ");
                        text.push_str(instruction);
                    }
                }
                self.stream(Stream::Markdown, &text, echo.chunk, echo.delay_ms, scope)
                    .await
            }
            Step::Tool(tool) => self.tool(tool, scope).await,
            Step::Usage(usage) => {
                let action = StateAction::ChatUsage(ChatUsageAction {
                    turn_id: self.turn.turn_id.clone(),
                    usage: UsageInfo {
                        input_tokens: Some(usage.input),
                        output_tokens: Some(usage.output),
                        cache_read_tokens: usage.cache_read,
                        model: usage.model.clone(),
                        meta: usage.cache_write.map(|written| {
                            let mut meta = agenthost_protocol::common::JsonObject::new();
                            meta.insert(
                                agenthost_protocol::usage::CACHE_WRITE_TOKENS.into(),
                                written.into(),
                            );
                            meta
                        }),
                    },
                    meta: None,
                });
                self.emit(scope, action).await?;
                match usage.limits {
                    Some(limits) => {
                        self.signal(agenthost_protocol::ModelLimitsReported {
                            session: self.session.clone(),
                            model: crate::MODEL_ID.to_owned(),
                            limits: agenthost_protocol::ModelLimits {
                                max_prompt_tokens: limits.max_prompt_tokens,
                                max_context_window: limits.max_context_window,
                                max_output_tokens: limits.max_output_tokens,
                            },
                        })
                        .await
                    }
                    None => Ok(()),
                }
            }
            Step::Subagent(subagent) => self.subagent(subagent, scope).await,
            Step::Error(fail) => Err(Stop::Failed {
                error: Box::new(error_info(
                    fail.error_type.as_deref().unwrap_or(SCRIPTED_ERROR),
                    fail.message.clone(),
                )),
                resumable: fail.resumable,
            }),
            Step::Pause(pause) => {
                tokio::time::sleep(Duration::from_millis(pause.ms)).await;
                Ok(())
            }
            Step::Join(join) => self.join(join.until).await,
            Step::Ask(ask) => self.ask(ask, scope).await,
        }
    }

    /// Waits until every background subagent this run started is settled (`until`).
    async fn join(&self, until: JoinUntil) -> Result<(), Stop> {
        let mut changes = self.control.changes();
        loop {
            // Marks the current value seen before looking, so no change is missed.
            drop(changes.borrow_and_update());
            if self.control.settled(&self.children, until) {
                return Ok(());
            }
            if changes.changed().await.is_err() {
                return Err(Stop::Gone);
            }
        }
    }

    async fn emit(&self, scope: Option<&SafeId>, action: StateAction) -> Result<(), Stop> {
        self.signal(ActionSignal {
            session: self.session.clone(),
            action,
            parent_tool_call_id: scope.cloned(),
        })
        .await
    }

    async fn signal(&self, signal: impl Into<AgentSignal>) -> Result<(), Stop> {
        self.signals.send(signal).await.map_err(|_| Stop::Gone)
    }

    fn turn_id(&self) -> String {
        self.turn.turn_id.clone()
    }

    /// A part (empty) followed by its text in deltas of `chunk` characters.
    async fn stream(
        &mut self,
        stream: Stream,
        text: &str,
        chunk: usize,
        delay_ms: u64,
        scope: Option<&SafeId>,
    ) -> Result<(), Stop> {
        let (part_id, part) = match stream {
            Stream::Markdown => {
                self.markdown_parts += 1;
                let id = format!("md-{}-{}", self.label, self.markdown_parts);
                let part = ResponsePart::Markdown(MarkdownResponsePart {
                    id: id.clone(),
                    content: String::new(),
                });
                (id, part)
            }
            Stream::Reasoning => {
                self.reasoning_parts += 1;
                let id = format!("reasoning-{}-{}", self.label, self.reasoning_parts);
                let part = ResponsePart::Reasoning(ReasoningResponsePart {
                    id: id.clone(),
                    content: String::new(),
                });
                (id, part)
            }
        };
        let start = StateAction::ChatResponsePart(ChatResponsePartAction {
            turn_id: self.turn_id(),
            part,
            meta: None,
        });
        self.emit(scope, start).await?;
        for (index, piece) in chunks(text, chunk).enumerate() {
            if index > 0 && delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            let (turn_id, part_id, content) = (self.turn_id(), part_id.clone(), piece.to_owned());
            let action = match stream {
                Stream::Markdown => StateAction::ChatDelta(ChatDeltaAction {
                    turn_id,
                    part_id,
                    content,
                    meta: None,
                }),
                Stream::Reasoning => StateAction::ChatReasoning(ChatReasoningAction {
                    turn_id,
                    part_id,
                    content,
                    meta: None,
                }),
            };
            self.emit(scope, action).await?;
        }
        Ok(())
    }

    fn next_tool_call_id(&mut self) -> Result<SafeId, Stop> {
        self.tool_calls += 1;
        let id = format!("tool-{}-{}", self.label, self.tool_calls);
        SafeId::new(id).map_err(|error| Stop::Failed {
            error: Box::new(error_info(
                INTERNAL_ERROR,
                format!("bad tool call id: {error}"),
            )),
            resumable: false,
        })
    }

    async fn tool(&mut self, tool: &Tool, scope: Option<&SafeId>) -> Result<(), Stop> {
        let tool_call_id = self.next_tool_call_id()?.into_string();
        let display_name = tool
            .display_name
            .clone()
            .unwrap_or_else(|| tool.name.clone());
        let contributor = tool.client.as_ref().map(|client_id| {
            ToolCallContributor::Client(ToolCallClientContributor {
                client_id: client_id.clone(),
            })
        });
        let start = StateAction::ChatToolCallStart(ChatToolCallStartAction {
            turn_id: self.turn_id(),
            tool_call_id: tool_call_id.clone(),
            meta: None,
            tool_name: tool.name.clone(),
            display_name: display_name.clone(),
            intention: None,
            contributor: contributor.clone(),
        });
        self.emit(scope, start).await?;
        let texts = ToolTexts::new(tool, &display_name);
        let tool_input = tool_input(tool);
        if tool.confirm {
            let Some(answer) = self.control.await_answer(&tool_call_id) else {
                return Err(Stop::Gone);
            };
            let pending = PendingConfirmation {
                session: self.session.clone(),
                turn_id: self.turn_id(),
                state: ToolCallPendingConfirmationState {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool.name.clone(),
                    display_name: display_name.clone(),
                    intention: None,
                    contributor,
                    meta: None,
                    invocation_message: texts.invocation.clone().into(),
                    tool_input,
                    confirmation_title: Some(texts.confirmation_title.clone().into()),
                    risk_assessment: None,
                    edits: None,
                    editable: None,
                    options: None,
                },
                permission_kind: permission_kind(tool),
                permission_path: tool.effect.path().map(str::to_owned),
                parent_tool_call_id: scope.cloned(),
            };
            self.signal(pending).await?;
            self.control.set_waiting(true);
            let answer = answer.await;
            self.control.set_waiting(false);
            match answer {
                Ok(Answer::Permission(PermissionDecision::Approve)) => {}
                // The client's denial already cancelled the call: nothing more to say about it.
                Ok(Answer::Permission(PermissionDecision::Deny { .. })) => return Ok(()),
                // A client completed its own call from the pending confirmation.
                Ok(Answer::ClientResult(_)) if tool.client.is_some() => return Ok(()),
                Ok(Answer::ClientResult(_) | Answer::Input(_)) => {
                    return Err(Stop::Failed {
                        error: Box::new(error_info(
                            INTERNAL_ERROR,
                            format!(
                                "`{tool_call_id}` is not a client tool but got a client result"
                            ),
                        )),
                        resumable: false,
                    });
                }
                Err(_) => return Err(Stop::Gone),
            }
        } else {
            let ready = agenthost_provider_api::running_without_confirmation(
                self.turn_id(),
                tool_call_id.clone(),
                texts.invocation.clone(),
                tool_input,
                None,
            );
            self.emit(scope, ready).await?;
        }
        if tool.client.is_some() {
            return self.await_client_result(&tool_call_id).await;
        }
        // Plan mode: nothing that changes the working directory runs (reads still do).
        let changes = matches!(tool.effect, Effect::WriteFile(_) | Effect::AppendFile(_));
        let performed = if changes && self.turn.mode == agenthost_provider_api::AgentMode::Plan {
            Err(effects::EffectError {
                code: "planMode",
                message: format!(
                    "Not done in plan mode: `{}` would change `{}`.",
                    tool.name,
                    tool.effect.path().unwrap_or_default()
                ),
            })
        } else {
            effects::perform(&self.working_directory, &tool.effect).await
        };
        let result = match performed {
            Ok(output) => {
                let text = tool.result.clone().or(match output {
                    EffectOutput::Nothing => None,
                    EffectOutput::Wrote { bytes } => Some(format!(
                        "Wrote {bytes} bytes to `{}`",
                        tool.effect.path().unwrap_or_default()
                    )),
                    EffectOutput::Appended { bytes } => Some(format!(
                        "Appended {bytes} bytes to `{}`",
                        tool.effect.path().unwrap_or_default()
                    )),
                    EffectOutput::Read { text } => Some(text),
                });
                ToolCallResult {
                    success: true,
                    past_tense_message: texts.past_tense.into(),
                    content: text.map(|text| vec![text_content(text)]),
                    structured_content: None,
                    error: None,
                }
            }
            Err(error) => ToolCallResult {
                success: false,
                past_tense_message: texts.failed.into(),
                content: Some(vec![text_content(error.message.clone())]),
                structured_content: None,
                error: Some(json!({ "message": error.message, "code": error.code })),
            },
        };
        self.emit(scope, complete(self.turn_id(), tool_call_id, result))
            .await
    }

    /// Waits until the client that owns `tool_call_id` (or the host, for a client gone away)
    /// completed it: the completion is already in the chat, so nothing is emitted.
    async fn await_client_result(&self, tool_call_id: &str) -> Result<(), Stop> {
        let Some(answer) = self.control.await_answer(tool_call_id) else {
            return Err(Stop::Gone);
        };
        self.control.set_waiting(true);
        let answer = answer.await;
        self.control.set_waiting(false);
        match answer {
            Ok(Answer::ClientResult(_)) => Ok(()),
            Ok(Answer::Permission(_) | Answer::Input(_)) => Err(Stop::Failed {
                error: Box::new(error_info(
                    INTERNAL_ERROR,
                    format!(
                        "the client tool call `{tool_call_id}` got a permission answer while running"
                    ),
                )),
                resumable: false,
            }),
            Err(_) => Err(Stop::Gone),
        }
    }

    async fn subagent(&mut self, subagent: &Subagent, scope: Option<&SafeId>) -> Result<(), Stop> {
        let (tool_call_id, display_name) = self.open_subagent(subagent, scope).await?;
        if subagent.background {
            let child = TurnRun {
                signals: self.signals.clone(),
                session: self.session.clone(),
                turn: self.turn.clone(),
                label: tool_call_id
                    .as_str()
                    .strip_prefix("tool-")
                    .unwrap_or(tool_call_id.as_str())
                    .to_owned(),
                working_directory: self.working_directory.clone(),
                started: self.started,
                control: self.control.background(&tool_call_id),
                markdown_parts: 0,
                reasoning_parts: 0,
                tool_calls: 0,
                inputs: 0,
                children: Vec::new(),
            };
            let (subagent, scope, id) = (subagent.clone(), scope.cloned(), tool_call_id.clone());
            let run = async move {
                child
                    .background_subagent(&subagent, scope.as_ref(), id, display_name)
                    .await;
            };
            if !self.control.spawn_background(&tool_call_id, run) {
                return Err(Stop::Gone);
            }
            self.children.push(tool_call_id.into_string());
            return Ok(());
        }
        let failure = match self.steps(&subagent.steps, Some(&tool_call_id)).await {
            Ok(()) => None,
            Err(Stop::Gone) => return Err(Stop::Gone),
            Err(Stop::Failed { error, resumable }) => Some((error, resumable)),
        };
        self.close_subagent(
            subagent,
            scope,
            tool_call_id,
            &display_name,
            failure.as_ref(),
        )
        .await?;
        match failure {
            None => Ok(()),
            // The error ends the whole turn, after the spawning call has been completed.
            Some((error, resumable)) => Err(Stop::Failed { error, resumable }),
        }
    }

    /// The body of a background subagent (this run is its own): its steps, then the background
    /// subagents it started, then its completion. An `error` step fails only this subagent.
    async fn background_subagent(
        mut self,
        subagent: &Subagent,
        scope: Option<&SafeId>,
        tool_call_id: SafeId,
        display_name: String,
    ) {
        let mut outcome = self.steps(&subagent.steps, Some(&tool_call_id)).await;
        if outcome.is_ok() {
            outcome = self.join(JoinUntil::Done).await;
        }
        let failure = match outcome {
            Ok(()) => None,
            Err(Stop::Failed { error, resumable }) => Some((error, resumable)),
            Err(Stop::Gone) => {
                self.control.background_finished();
                return;
            }
        };
        // Nothing to do when the host stopped listening: the record goes either way.
        let _ = self
            .close_subagent(
                subagent,
                scope,
                tool_call_id,
                &display_name,
                failure.as_ref(),
            )
            .await;
        self.control.background_finished();
    }

    /// The `Task` call in `scope` and `SubagentStarted`; returns the call id and display name.
    async fn open_subagent(
        &mut self,
        subagent: &Subagent,
        scope: Option<&SafeId>,
    ) -> Result<(SafeId, String), Stop> {
        let tool_call_id = self.next_tool_call_id()?;
        let display_name = subagent
            .display_name
            .clone()
            .unwrap_or_else(|| subagent.agent.clone());
        let start = StateAction::ChatToolCallStart(ChatToolCallStartAction {
            turn_id: self.turn_id(),
            tool_call_id: tool_call_id.to_string(),
            meta: None,
            tool_name: SUBAGENT_TOOL_NAME.into(),
            display_name: display_name.clone(),
            intention: None,
            contributor: None,
        });
        self.emit(scope, start).await?;
        let input = json!({
            "description": subagent.description,
            "subagent_type": subagent.agent,
            "prompt": subagent.prompt.as_deref().unwrap_or(&subagent.description),
        });
        let mut meta = JsonObject::new();
        meta.insert(
            "subagentDescription".into(),
            subagent.description.clone().into(),
        );
        meta.insert("subagentAgentName".into(), subagent.agent.clone().into());
        let ready = agenthost_provider_api::running_without_confirmation(
            self.turn_id(),
            tool_call_id.to_string(),
            subagent.description.clone(),
            Some(ToolInput::Inline(input.to_string())),
            Some(meta),
        );
        self.emit(scope, ready).await?;
        self.signal(SubagentStarted {
            session: self.session.clone(),
            tool_call_id: tool_call_id.clone(),
            agent_name: subagent.agent.clone(),
            agent_display_name: display_name.clone(),
            agent_description: None,
            task_description: Some(subagent.description.clone()),
            task_prompt: subagent.prompt.clone(),
            parent_tool_call_id: scope.cloned(),
        })
        .await?;
        self.control.subagent_opened(&tool_call_id);
        Ok((tool_call_id, display_name))
    }

    /// `SubagentCompleted`, then the `Task` call's completion in `scope`.
    async fn close_subagent(
        &mut self,
        subagent: &Subagent,
        scope: Option<&SafeId>,
        tool_call_id: SafeId,
        display_name: &str,
        failure: Option<&(Box<ErrorInfo>, bool)>,
    ) -> Result<(), Stop> {
        self.signal(SubagentCompleted {
            session: self.session.clone(),
            tool_call_id: tool_call_id.clone(),
        })
        .await?;
        self.control.subagent_closed(&tool_call_id);
        let reference = ToolResultContent::Subagent(ToolResultSubagentContent {
            resource: ChatUri::subagent(&self.session, &tool_call_id).into_string(),
            title: display_name.to_owned(),
            agent_name: Some(subagent.agent.clone()),
            description: Some(subagent.description.clone()),
        });
        let result = match failure {
            None => ToolCallResult {
                success: true,
                past_tense_message: format!("{display_name} finished").into(),
                content: Some(
                    std::iter::once(reference)
                        .chain(subagent.result.clone().map(text_content))
                        .collect(),
                ),
                structured_content: None,
                error: None,
            },
            Some((error, _)) => ToolCallResult {
                success: false,
                past_tense_message: format!("{display_name} failed").into(),
                content: Some(vec![reference]),
                structured_content: None,
                error: Some(json!({ "message": error.message, "code": error.error_type })),
            },
        };
        self.emit(
            scope,
            complete(self.turn_id(), tool_call_id.into_string(), result),
        )
        .await
    }
}

#[derive(Debug, Clone, Copy)]
enum Stream {
    Markdown,
    Reasoning,
}

/// The texts a tool call shows, from the script or derived from its effect.
struct ToolTexts {
    invocation: String,
    confirmation_title: String,
    past_tense: String,
    failed: String,
}

impl ToolTexts {
    fn new(tool: &Tool, display_name: &str) -> Self {
        let (invocation, confirmation_title, past_tense, failed) = match &tool.effect {
            Effect::None => (
                format!("Run {display_name}"),
                format!("Run {display_name}"),
                format!("Ran {display_name}"),
                format!("Could not run {display_name}"),
            ),
            Effect::WriteFile(write) => (
                format!("Write `{}`", write.path),
                "Write file".to_owned(),
                format!("Wrote `{}`", write.path),
                format!("Could not write `{}`", write.path),
            ),
            Effect::ReadFile(read) => (
                format!("Read `{}`", read.path),
                "Read file".to_owned(),
                format!("Read `{}`", read.path),
                format!("Could not read `{}`", read.path),
            ),
            Effect::AppendFile(append) => (
                format!("Append to `{}`", append.path),
                "Append to file".to_owned(),
                format!("Appended to `{}`", append.path),
                format!("Could not append to `{}`", append.path),
            ),
        };
        Self {
            invocation: tool.invocation.clone().unwrap_or(invocation),
            confirmation_title,
            past_tense: tool.past_tense.clone().unwrap_or(past_tense),
            failed,
        }
    }
}

fn tool_input(tool: &Tool) -> Option<ToolInput> {
    let input = match (&tool.input, &tool.effect) {
        (Some(Value::String(text)), _) => text.clone(),
        (Some(value), _) => effects::canonical(value),
        (None, Effect::None) => return None,
        (None, Effect::WriteFile(write)) => {
            effects::canonical(&json!({ "path": write.path, "content": write.content }))
        }
        (None, Effect::ReadFile(read)) => effects::canonical(&json!({ "path": read.path })),
        (None, Effect::AppendFile(append)) => {
            effects::canonical(&json!({ "path": append.path, "content": append.content }))
        }
    };
    Some(ToolInput::Inline(input))
}

fn permission_kind(tool: &Tool) -> PermissionKind {
    match (&tool.permission, &tool.effect) {
        (Some(name), _) => PermissionKind::from_name(name),
        (None, Effect::WriteFile(_) | Effect::AppendFile(_)) => PermissionKind::Write,
        (None, Effect::ReadFile(_)) => PermissionKind::Read,
        (None, Effect::None) => PermissionKind::Other(tool.name.clone()),
    }
}

fn text_content(text: String) -> ToolResultContent {
    ToolResultContent::Text(ToolResultTextContent { text })
}

fn complete(turn_id: String, tool_call_id: String, result: ToolCallResult) -> StateAction {
    StateAction::ChatToolCallComplete(ChatToolCallCompleteAction {
        turn_id,
        tool_call_id,
        meta: None,
        result,
        requires_result_confirmation: None,
    })
}

#[path = "ask.rs"]
mod ask;

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;

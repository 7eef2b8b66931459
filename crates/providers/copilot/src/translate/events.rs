//! Session events: routing to the turn, scopes, idle, errors and the prompt's result.

use super::*;

impl Translator {
    pub(super) fn event(&mut self, event: Event, out: &mut Vec<Output>) {
        let at = event.timestamp.as_deref().and_then(timestamp_ms);
        // Session-level events, whatever the turn.
        match &event.data {
            EventData::SessionStart(data) | EventData::SessionResume(data) => {
                if let (None, Some(cwd)) = (&self.cwd, &data.context.cwd) {
                    self.cwd = Some(cwd.clone());
                }
                return;
            }
            EventData::TitleChanged(data) => {
                if !data.title.trim().is_empty() {
                    self.emit(
                        NormEvent::Title {
                            title: data.title.clone(),
                        },
                        out,
                    );
                }
                return;
            }
            EventData::ModelTurnStarted(data) => {
                // The main agent's model only (a subagent may run on another one).
                if event.agent_id.is_none()
                    && let Some(limits) = data
                        .model_info
                        .as_ref()
                        .and_then(|info| info.capabilities.as_ref())
                        .and_then(|capabilities| capabilities.limits.as_ref())
                {
                    let value = |key: &str| limits.get(key).and_then(Value::as_u64);
                    let limits = ModelLimits {
                        max_prompt_tokens: value("max_prompt_tokens"),
                        max_context_window: value("max_context_window_tokens"),
                        max_output_tokens: value("max_output_tokens"),
                    };
                    self.emit(NormEvent::ModelLimits { limits }, out);
                }
                return;
            }
            EventData::SessionIdle(data) => {
                if event.agent_id.is_some() {
                    // The session's idle is the main agent's; a subagent's ends nothing.
                    tracing::trace!("ignoring a subagent's idle");
                    return;
                }
                return self.idle(data.aborted, at, out);
            }
            _ => {}
        }
        if !self.belongs_to_turn(&event) {
            tracing::debug!(
                event = event.kind(),
                "dropping an event of a turn that already ended"
            );
            if let EventData::PermissionRequested(data) = &event.data {
                reject(out, &data.request_id, NO_TURN);
            }
            return;
        }
        let Some(turn) = &mut self.turn else {
            tracing::trace!(event = event.kind(), "ignoring an event outside a turn");
            if let EventData::PermissionRequested(data) = &event.data {
                reject(out, &data.request_id, NO_TURN);
            }
            return;
        };
        if turn.started_at.is_none() {
            turn.started_at = at;
        }
        let agent = event.agent_id.as_deref();
        match event.data {
            EventData::UserMessage(data) => {
                // Steering (a message delivered into a running turn) is not implemented: the
                // first user message (the one `session.send` answered with, when known) starts
                // the turn's clock and later ones are ignored.
                let other_message = matches!(
                    (&turn.message_id, &data.message_id),
                    (Some(expected), Some(id)) if expected != id
                );
                if agent.is_none() && !turn.user_message_seen && !other_message {
                    turn.user_message_seen = true;
                    if at.is_some() {
                        turn.started_at = at;
                    }
                    tracing::trace!(delivery = data.delivery, "the turn's user message");
                }
            }
            EventData::MessageDelta(data) => {
                if let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) {
                    self.emit(
                        NormEvent::TextDelta {
                            scope,
                            stream_id: data.message_id,
                            text: data.delta_content,
                        },
                        out,
                    );
                }
            }
            EventData::Message(data) => self.assistant_message(agent, data, out),
            EventData::ReasoningDelta(data) => {
                if let Some(scope) = self.scope(agent, None) {
                    self.emit(
                        NormEvent::ReasoningDelta {
                            scope,
                            stream_id: data.reasoning_id,
                            text: data.delta_content,
                        },
                        out,
                    );
                }
            }
            EventData::Reasoning(data) => {
                if let Some(scope) = self.scope(agent, None) {
                    self.emit(
                        NormEvent::ReasoningFull {
                            scope,
                            stream_id: data.reasoning_id,
                            text: data.content,
                        },
                        out,
                    );
                }
            }
            EventData::ToolCallDelta(data) => self.tool_call_delta(agent, data, out),
            EventData::ToolExecutionStart(data) => self.tool_started(agent, data, out),
            EventData::ToolPartialResult(data) => {
                self.tool_output(&data.tool_call_id, &data.partial_output, None, out);
            }
            EventData::ToolProgress(data) => {
                self.tool_output(&data.tool_call_id, "", Some(&data.progress_message), out);
            }
            EventData::ToolExecutionComplete(data) => self.tool_completed(agent, data, out),
            EventData::PermissionRequested(data) => self.permission(agent, *data, out),
            EventData::PermissionCompleted(data) => self.permission_completed(data),
            EventData::Usage(data) => self.usage(agent, data, out),
            EventData::SubagentStarted(data) => self.subagent_started(agent, data, out),
            EventData::SubagentCompleted(data) | EventData::SubagentFailed(data) => {
                self.emit(
                    NormEvent::SubagentEnded {
                        parent_tool_call_id: data.tool_call_id,
                    },
                    out,
                );
            }
            EventData::SkillInvoked(data) => {
                self.skill_invoked(agent, event.id.as_deref(), data, out);
            }
            EventData::SessionError(data) => self.session_error(agent, &data, at, out),
            EventData::ModelCallFinished(data) => {
                let model_call_id = match (data.interaction_id, data.turn_id) {
                    (Some(interaction), Some(round)) => format!("{interaction}#{round}"),
                    _ => event.id.unwrap_or_default(),
                };
                if !model_call_id.is_empty() {
                    self.emit(NormEvent::ModelCallCompleted { model_call_id }, out);
                }
            }
            // Handled above.
            EventData::SessionStart(_)
            | EventData::SessionResume(_)
            | EventData::TitleChanged(_)
            | EventData::ModelTurnStarted(_)
            | EventData::SessionIdle(_) => {}
            EventData::Other { kind } => tracing::trace!(kind, "ignoring an event"),
        }
    }

    /// Whether `event` may belong to the current turn: not while a turn that ended early still
    /// owes its `session.idle` — until the current turn's own `user.message` shows up.
    pub(super) fn belongs_to_turn(&mut self, event: &Event) -> bool {
        if self.owed_idles == 0 {
            return true;
        }
        let Some(turn) = &self.turn else {
            return false;
        };
        if turn.user_message_seen {
            return true;
        }
        let EventData::UserMessage(data) = &event.data else {
            return false;
        };
        let ours = event.agent_id.is_none()
            && match (&turn.message_id, &data.message_id) {
                (Some(expected), Some(id)) => expected == id,
                _ => true,
            };
        if ours {
            // Whatever the ended turns still owe comes before this message, or never.
            self.owed_idles = 0;
        }
        ours
    }

    /// The scope of an event of `agent` (`None`: the main agent); `None` drops the event (an
    /// unknown subagent).
    pub(super) fn scope(
        &mut self,
        agent: Option<&str>,
        parent_tool_call_id: Option<&str>,
    ) -> Option<Scope> {
        let turn = self.turn.as_mut()?;
        let Some(agent) = agent else {
            return Some(Scope::from_parent(parent_tool_call_id));
        };
        if let Some(parent) = turn.agents.get(agent) {
            return Some(Scope::subagent(parent.clone()));
        }
        if let Some(parent) = parent_tool_call_id {
            turn.agents.insert(agent.to_owned(), parent.to_owned());
            return Some(Scope::subagent(parent));
        }
        tracing::warn!(agent, "dropping an event of an unknown subagent");
        None
    }

    pub(super) fn idle(&mut self, aborted: bool, at: Option<i64>, out: &mut Vec<Output>) {
        let current_started = self.turn.as_ref().is_some_and(|t| t.user_message_seen);
        if self.owed_idles > 0 && !current_started {
            self.owed_idles -= 1;
            tracing::debug!("the idle of a turn that already ended");
            return;
        }
        let Some(turn) = self.turn.take() else {
            tracing::trace!("an idle outside a turn");
            return;
        };
        if turn.activity {
            self.emit(NormEvent::Activity { text: None }, out);
        }
        let duration_ms = turn.duration(at);
        let terminal = if aborted {
            // The CLI stopped on its own: the client did not cancel (that removes the turn).
            NormEvent::Cancelled { duration_ms }
        } else {
            NormEvent::Idle {
                aborted: false,
                duration_ms,
            }
        };
        self.emit(terminal, out);
        out.push(Output::TurnEnded);
    }

    pub(super) fn session_error(
        &mut self,
        agent: Option<&str>,
        data: &SessionErrorData,
        at: Option<i64>,
        out: &mut Vec<Output>,
    ) {
        if agent.is_some() {
            tracing::warn!(
                message = data.message,
                "a subagent reported an error; its end follows"
            );
            return;
        }
        let Some(turn) = self.turn.take() else {
            return;
        };
        // Headless mode may still send the failed turn's idle.
        self.owed_idles += 1;
        let duration_ms = turn.duration(at);
        self.emit(
            NormEvent::Failed {
                error: failure(data),
                duration_ms,
            },
            out,
        );
        out.push(Output::TurnEnded);
    }

    /// The `result` line of prompt mode: the run is over.
    pub(super) fn prompt_result(&mut self, result: &PromptResult, out: &mut Vec<Output>) {
        self.owed_idles = 0;
        let Some(turn) = self.turn.take() else {
            return;
        };
        let at = result.timestamp.as_deref().and_then(timestamp_ms);
        let duration_ms = turn.duration(at);
        if turn.activity {
            self.emit(NormEvent::Activity { text: None }, out);
        }
        let terminal = match result.exit_code {
            Some(code) if code != 0 => NormEvent::Failed {
                error: ErrorInfo {
                    error_type: COPILOT_ERROR.to_owned(),
                    message: format!("Copilot exited with code {code}."),
                    stack: None,
                    meta: None,
                },
                duration_ms,
            },
            _ => NormEvent::Idle {
                aborted: false,
                duration_ms,
            },
        };
        self.emit(terminal, out);
        out.push(Output::TurnEnded);
    }
}

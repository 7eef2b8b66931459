//! The CLI's session, system and stream-event lines, and tool calls as they stream.

use super::*;

impl Translator {
    pub(super) fn session_id_seen(&mut self, id: &str, out: &mut Vec<Output>) {
        if !id.is_empty() && self.session_id.as_deref() != Some(id) {
            self.session_id = Some(id.to_owned());
            out.push(Output::SessionId(id.to_owned()));
        }
    }

    /// The main model's `contextWindow` and `maxOutputTokens` from a `result`'s `modelUsage`
    /// (Claude Code reports no prompt limit of its own: none is derived).
    pub(super) fn report_limits(&mut self, result: &ResultLine, out: &mut Vec<Output>) {
        let (Some(models), Some(model)) = (&result.model_usage, &self.cli_model) else {
            return;
        };
        let Some(usage) = models.get(model) else {
            return;
        };
        let value = |key: &str| usage.get(key).and_then(serde_json::Value::as_u64);
        let limits = agenthost_protocol::ModelLimits {
            max_prompt_tokens: None,
            max_context_window: value("contextWindow"),
            max_output_tokens: value("maxOutputTokens"),
        };
        self.emit(NormEvent::ModelLimits { limits }, out);
    }

    pub(super) fn system(&mut self, system: SystemLine, out: &mut Vec<Output>) {
        match system {
            SystemLine::Init(init) => {
                if init.model.is_some() {
                    self.cli_model.clone_from(&init.model);
                }
                self.session_id_seen(&init.session_id, out);
            }
            SystemLine::PermissionDenied(denied) => {
                // The error tool result follows; remember that it is a denial.
                if let Some(turn) = &mut self.turn {
                    turn.denied.insert(denied.tool_use_id);
                }
            }
            SystemLine::TaskStarted(task) => {
                if let (Some(turn), Some(id)) = (&mut self.turn, task.tool_use_id) {
                    turn.spawns.entry(id).or_default().background = true;
                }
            }
            SystemLine::TaskNotification(task) => {
                let finished = matches!(
                    task.status.as_deref(),
                    Some("completed" | "failed" | "stopped" | "killed")
                );
                if let (true, Some(id), true) = (finished, task.tool_use_id, self.turn.is_some()) {
                    self.emit(
                        NormEvent::SubagentEnded {
                            parent_tool_call_id: id,
                        },
                        out,
                    );
                }
            }
            SystemLine::Status { .. } | SystemLine::Other { .. } => {}
        }
    }

    /// Announces the subagent of `scope` with what its spawning call asked, before its first
    /// event (the mapper would announce it anyway, but without a name or a task).
    pub(super) fn enter_scope(&mut self, scope: &Scope, out: &mut Vec<Output>) {
        let (Some(parent), Some(turn)) = (scope.parent_tool_call_id(), &mut self.turn) else {
            return;
        };
        if !turn.subagents.insert(parent.to_owned()) {
            return;
        }
        let spawn = turn.spawns.get(parent);
        let agent = spawn.and_then(|spawn| spawn.agent.clone());
        let event = NormEvent::SubagentStarted {
            parent_tool_call_id: parent.to_owned(),
            agent_name: agent.clone().unwrap_or_else(|| "subagent".to_owned()),
            display_name: agent.unwrap_or_else(|| "Subagent".to_owned()),
            description: spawn.and_then(|spawn| spawn.description.clone()),
            prompt: spawn.and_then(|spawn| spawn.prompt.clone()),
            grandparent: turn
                .tools
                .get(parent)
                .and_then(|tool| tool.scope.parent_tool_call_id())
                .map(str::to_owned),
        };
        self.emit(event, out);
    }

    pub(super) fn stream_event(&mut self, line: StreamEventLine, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            tracing::debug!("ignoring a stream event outside a turn");
            return;
        };
        let scope = Scope::from_parent(line.parent_tool_use_id.as_deref());
        let message = |turn: &TurnTrack| {
            turn.current_message
                .get(&scope)
                .cloned()
                .or_else(|| line.api_message_id.clone())
        };
        match line.event {
            StreamEvent::MessageStart { message } => {
                turn.streamed.insert(message.id.clone());
                turn.current_message
                    .insert(scope.clone(), message.id.clone());
                if let Some(usage) = &message.usage {
                    self.call_usage(&message.id, &scope, message.model.as_deref(), usage, out);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let Some(message) = message(turn) else {
                    tracing::warn!("a streamed block outside any message");
                    return;
                };
                turn.streamed.insert(message.clone());
                let stream_id = format!("{message}#{index}");
                let (block, event) = match content_block {
                    ContentBlock::Text { text } => (
                        StreamBlock::Text,
                        NormEvent::TextDelta {
                            scope: scope.clone(),
                            stream_id,
                            text,
                        },
                    ),
                    ContentBlock::Thinking { thinking } => (
                        StreamBlock::Thinking,
                        NormEvent::ReasoningDelta {
                            scope: scope.clone(),
                            stream_id,
                            text: thinking,
                        },
                    ),
                    ContentBlock::ToolUse { id, name, .. } => {
                        turn.blocks.insert(
                            (message, index),
                            StreamBlock::Tool {
                                id: id.clone(),
                                buffer: String::new(),
                            },
                        );
                        self.tool_started(&scope, id, name, out);
                        return;
                    }
                    ContentBlock::ToolResult { .. } | ContentBlock::Other => return,
                };
                turn.blocks.insert((message, index), block);
                self.enter_scope(&scope, out);
                self.emit(event, out);
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                let Some(message) = message(turn) else {
                    return;
                };
                let stream_id = format!("{message}#{index}");
                let event = match delta {
                    BlockDelta::TextDelta { text } => NormEvent::TextDelta {
                        scope: scope.clone(),
                        stream_id,
                        text,
                    },
                    BlockDelta::ThinkingDelta { thinking } => NormEvent::ReasoningDelta {
                        scope: scope.clone(),
                        stream_id,
                        text: thinking,
                    },
                    BlockDelta::InputJsonDelta { partial_json } => {
                        let Some(StreamBlock::Tool { id, buffer }) =
                            turn.blocks.get_mut(&(message, index))
                        else {
                            tracing::warn!(index, "input for a block that is not a tool call");
                            return;
                        };
                        buffer.push_str(&partial_json);
                        NormEvent::ToolArgsDelta {
                            scope: scope.clone(),
                            tool_call_id: id.clone(),
                            partial_json,
                        }
                    }
                    BlockDelta::SignatureDelta | BlockDelta::Other => return,
                };
                self.emit(event, out);
            }
            StreamEvent::ContentBlockStop { index } => {
                let Some(message) = message(turn) else {
                    return;
                };
                if let Some(StreamBlock::Tool { id, buffer }) =
                    turn.blocks.remove(&(message, index))
                {
                    // Usually the full `assistant` line made it ready already.
                    let input = match serde_json::from_str::<Value>(&buffer) {
                        Ok(input) => input,
                        Err(_) if buffer.is_empty() => json!({}),
                        Err(_) => Value::String(buffer),
                    };
                    self.tool_ready(&id, input, out);
                }
            }
            StreamEvent::MessageStop => {
                if let Some(message) = turn.current_message.remove(&scope) {
                    self.emit(
                        NormEvent::ModelCallCompleted {
                            model_call_id: message,
                        },
                        out,
                    );
                }
            }
            StreamEvent::MessageDelta { usage } => {
                if let (Some(message), Some(usage)) = (message(turn), usage) {
                    self.call_usage(&message, &scope, None, &usage, out);
                }
            }
            StreamEvent::Other => {}
        }
    }

    pub(super) fn tool_started(
        &mut self,
        scope: &Scope,
        id: String,
        name: String,
        out: &mut Vec<Output>,
    ) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if turn.tools.contains_key(&id) {
            return;
        }
        turn.tools.insert(
            id.clone(),
            ToolInfo {
                name: name.clone(),
                scope: scope.clone(),
                input: None,
                ready: false,
            },
        );
        self.enter_scope(scope, out);
        self.emit(
            NormEvent::ToolStarted {
                scope: scope.clone(),
                tool_call_id: id,
                display_name: tools::display_name(&name),
                tool_name: name,
                contributor: None,
                meta: None,
            },
            out,
        );
    }

    /// The tool's input is final: `ready (not-needed)` — the CLI runs it, or asks first with a
    /// `can_use_tool` that moves it back to pending confirmation.
    pub(super) fn tool_ready(&mut self, id: &str, input: Value, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        let Some(tool) = turn.tools.get_mut(id) else {
            return;
        };
        if tool.ready {
            return;
        }
        tool.ready = true;
        tool.input = Some(input.clone());
        let mut meta = None;
        if tools::is_spawning(&tool.name) {
            let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
            let spawn = turn.spawns.entry(id.to_owned()).or_default();
            spawn.description = text("description");
            spawn.agent = text("subagent_type");
            spawn.prompt = text("prompt");
            let mut object = JsonObject::new();
            if let Some(description) = &spawn.description {
                object.insert("subagentDescription".into(), description.clone().into());
            }
            if let Some(agent) = &spawn.agent {
                object.insert("subagentAgentName".into(), agent.clone().into());
            }
            meta = (!object.is_empty()).then_some(object);
        }
        let event = NormEvent::ToolReady {
            scope: tool.scope.clone(),
            tool_call_id: id.to_owned(),
            invocation_message: tools::invocation_message(&tool.name, &input),
            tool_input: Some(input_text(&input)),
            auto_approved: true,
            meta,
        };
        self.emit(event, out);
    }
}

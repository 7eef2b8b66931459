//! Assistant and user messages, and the tool results the user messages carry.

use super::*;

impl Translator {
    pub(super) fn assistant(&mut self, line: AssistantLine, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            tracing::warn!("dropping assistant output outside a turn");
            return;
        };
        if line.is_api_error_message {
            let text = line.message.content.iter().find_map(|block| match block {
                ContentBlock::Text { text } => Some(text.clone()),
                _ => None,
            });
            turn.api_error = Some(ApiError {
                text,
                status: line.api_error_status,
                error_type: line.api_error_type,
            });
            return;
        }
        let scope = Scope::from_parent(line.parent_tool_use_id.as_deref());
        let message = line.message.id.unwrap_or_else(|| {
            turn.anonymous_messages += 1;
            format!("message-{}", turn.anonymous_messages)
        });
        let streamed = turn.streamed.contains(&message);
        if let Some(usage) = &line.message.usage {
            let model = line.message.model.clone();
            self.call_usage(&message, &scope, model.as_deref(), usage, out);
        }
        for block in line.message.content {
            // Without partial messages each block is its own line: count them to number the
            // blocks as the stream would.
            let stream_id = match &mut self.turn {
                Some(turn) if !streamed => {
                    let index = turn.unstreamed_blocks.entry(message.clone()).or_insert(0);
                    *index += 1;
                    Some(format!("{message}#{}", *index - 1))
                }
                _ => None,
            };
            match block {
                ContentBlock::Text { text } => {
                    if let Some(stream_id) = stream_id {
                        self.enter_scope(&scope, out);
                        let scope = scope.clone();
                        self.emit(
                            NormEvent::TextFull {
                                scope,
                                stream_id,
                                text,
                            },
                            out,
                        );
                    }
                }
                ContentBlock::Thinking { thinking } => {
                    if let Some(stream_id) = stream_id {
                        self.enter_scope(&scope, out);
                        let scope = scope.clone();
                        self.emit(
                            NormEvent::ReasoningFull {
                                scope,
                                stream_id,
                                text: thinking,
                            },
                            out,
                        );
                    }
                }
                ContentBlock::ToolUse { id, name, input } => {
                    self.tool_started(&scope, id.clone(), name, out);
                    self.tool_ready(&id, input, out);
                }
                ContentBlock::ToolResult { .. } | ContentBlock::Other => {}
            }
        }
    }

    pub(super) fn user(&mut self, line: UserLine, out: &mut Vec<Output>) {
        if line.is_replay {
            // The echo of a consumed user message: nothing to show.
            return;
        }
        let UserContent::Blocks(blocks) = line.message.content else {
            // A subagent's prompt, or a text the CLI injected: not part of the transcript.
            return;
        };
        let results: Vec<(String, Value, bool)> = blocks
            .into_iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => Some((tool_use_id, content, is_error.unwrap_or(false))),
                _ => None,
            })
            .collect();
        if results.is_empty() {
            return;
        }
        if self.turn.is_none() {
            tracing::warn!("dropping tool results outside a turn");
            return;
        }
        let single = results.len() == 1;
        for (id, content, is_error) in results {
            let meta = line.tool_result_meta.iter().find(|meta| meta.id == id);
            let rejected = meta.is_some_and(|meta| {
                meta.non_execution_kind.is_some()
                    || meta
                        .permission_decision
                        .as_ref()
                        .is_some_and(|decision| decision.decision.as_deref() == Some("reject"))
            });
            let structured = match (&line.tool_use_result, single) {
                (Some(ToolUseResult::Object(object)), true) => Some(object.clone()),
                _ => None,
            };
            self.tool_result(id, &content, is_error, rejected, structured, out);
        }
    }

    pub(super) fn tool_result(
        &mut self,
        id: String,
        content: &Value,
        is_error: bool,
        rejected: bool,
        structured: Option<JsonObject>,
        out: &mut Vec<Output>,
    ) {
        self.cli_requests
            .retain(|_, tool| tool.as_deref() != Some(id.as_str()));
        let Some(turn) = &mut self.turn else {
            return;
        };
        let denied = rejected || turn.denied.contains(&id);
        let outcome = match (denied, is_error) {
            (true, _) => Outcome::Denied,
            (false, true) => Outcome::Failed,
            (false, false) => Outcome::Succeeded,
        };
        let text = result_text(content);
        let tool = turn.tools.get(&id);
        let scope = tool.map_or(Scope::Root, |tool| tool.scope.clone());
        let past_tense =
            tool.map(|tool| tools::past_tense_message(&tool.name, tool.input.as_ref(), outcome));
        let foreground_spawn = tool.is_some_and(|tool| tools::is_spawning(&tool.name))
            && !turn.spawns.get(&id).is_some_and(|spawn| spawn.background);
        let error = match outcome {
            Outcome::Denied => Some(ToolError::denied(non_empty(&text, "denied"))),
            Outcome::Failed => Some(ToolError::new(non_empty(&text, "the tool failed"))),
            Outcome::Succeeded => None,
        };
        if foreground_spawn {
            self.emit(
                NormEvent::SubagentEnded {
                    parent_tool_call_id: id.clone(),
                },
                out,
            );
        }
        let content = if text.is_empty() {
            Vec::new()
        } else {
            vec![ToolResultContent::Text(ToolResultTextContent { text })]
        };
        self.emit(
            NormEvent::ToolCompleted {
                scope,
                tool_call_id: id,
                success: outcome == Outcome::Succeeded,
                past_tense_message: past_tense,
                content,
                structured_content: structured,
                error,
            },
            out,
        );
    }
}

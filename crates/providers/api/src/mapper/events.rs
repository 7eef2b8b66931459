//! `TurnMap::map`: one normalized event applied to the turn, and the turn's duration.

use super::*;

impl TurnMap {
    pub(super) fn map(&mut self, event: NormEvent, out: &mut Emitter<'_>) {
        match event {
            NormEvent::TextDelta {
                scope,
                stream_id,
                text,
            } => self.delta(PartKind::Markdown, &scope, stream_id, text, out),
            NormEvent::ReasoningDelta {
                scope,
                stream_id,
                text,
            } => self.delta(PartKind::Reasoning, &scope, stream_id, text, out),
            NormEvent::TextFull {
                scope,
                stream_id,
                text,
            } => self.full(PartKind::Markdown, &scope, stream_id, text, out),
            NormEvent::ReasoningFull {
                scope,
                stream_id,
                text,
            } => self.full(PartKind::Reasoning, &scope, stream_id, text, out),
            NormEvent::ToolStarted {
                scope,
                tool_call_id,
                tool_name,
                display_name,
                contributor,
                meta,
            } => {
                self.tool_started(
                    &scope,
                    tool_call_id,
                    tool_name,
                    display_name,
                    contributor,
                    meta,
                    out,
                );
            }
            NormEvent::ToolArgsDelta {
                tool_call_id,
                partial_json,
                ..
            } => self.tool_args(&tool_call_id, Some(partial_json), None, out),
            NormEvent::ToolDelta {
                tool_call_id,
                partial_json,
                invocation_message,
                ..
            } => self.tool_args(&tool_call_id, partial_json, invocation_message, out),
            NormEvent::ToolReady {
                tool_call_id,
                invocation_message,
                tool_input,
                auto_approved,
                meta,
                ..
            } => self.tool_ready(
                &tool_call_id,
                invocation_message,
                tool_input,
                auto_approved,
                meta,
                out,
            ),
            NormEvent::PermissionAsked {
                scope,
                tool_call_id,
                tool_name,
                display_name,
                kind,
                path,
                title,
                invocation_message,
                input,
            } => self.permission(
                &scope,
                tool_call_id,
                tool_name,
                display_name,
                kind,
                path,
                title,
                invocation_message,
                input,
                out,
            ),
            NormEvent::ToolOutput {
                tool_call_id,
                content,
                meta,
                ..
            } => self.tool_output(&tool_call_id, content, meta, out),
            NormEvent::PermissionResolved {
                tool_call_id,
                approved,
                ..
            } => self.permission_resolved(&tool_call_id, approved),
            NormEvent::ToolCompleted {
                tool_call_id,
                success,
                past_tense_message,
                content,
                structured_content,
                error,
                ..
            } => self.tool_completed(
                &tool_call_id,
                success,
                past_tense_message,
                content,
                structured_content,
                error,
                out,
            ),
            NormEvent::SubagentStarted {
                parent_tool_call_id,
                agent_name,
                display_name,
                description,
                prompt,
                grandparent,
            } => self.subagent_started(
                &parent_tool_call_id,
                agent_name,
                display_name,
                description,
                prompt,
                grandparent.as_deref(),
                out,
            ),
            NormEvent::SubagentEnded {
                parent_tool_call_id,
            } => self.subagent_ended(&parent_tool_call_id, out),
            NormEvent::Usage {
                scope,
                kind,
                input,
                output,
                cache_read,
                cache_write,
                model,
                meta,
            } => {
                let Some(parent) = self.enter_scope(&scope, out) else {
                    return;
                };
                let totals = self
                    .usage
                    .entry(parent.as_ref().map(|p| p.as_str().to_owned()))
                    .or_default();
                let report = TokenTotals {
                    input,
                    output,
                    cache_read,
                    cache_write,
                };
                totals.apply(kind, report);
                let totals = *totals;
                let mut meta = meta.unwrap_or_default();
                if let Some(written) = totals.cache_write {
                    meta.insert(CACHE_WRITE_TOKENS.into(), written.into());
                }
                let usage = UsageInfo {
                    input_tokens: Some(tokens(totals.input)),
                    output_tokens: Some(tokens(totals.output)),
                    model,
                    cache_read_tokens: totals.cache_read.map(tokens),
                    meta: usage_meta(meta),
                };
                out.action(
                    parent.as_ref(),
                    StateAction::ChatUsage(ChatUsageAction {
                        turn_id: self.id.clone(),
                        usage,
                        meta: None,
                    }),
                );
            }
            NormEvent::InputAsked { scope, request } => {
                let Some(parent) = self.enter_scope(&scope, out) else {
                    return;
                };
                let parts = self
                    .scopes
                    .entry(parent.as_ref().map(|p| p.as_str().to_owned()))
                    .or_default();
                parts.markdown = None;
                parts.reasoning = None;
                out.action(
                    parent.as_ref(),
                    StateAction::ChatInputRequested(ChatInputRequestedAction { request }),
                );
            }
            NormEvent::ModelCallCompleted { model_call_id } => {
                out.signals
                    .push(AgentSignal::ModelCallCompleted(ModelCallCompleted {
                        session: out.session.clone(),
                        turn_id: self.id.clone(),
                        model_call_id,
                    }));
            }
            NormEvent::Failed { error, duration_ms } => {
                self.close_subagents(out);
                let duration = self.duration(duration_ms);
                out.action(
                    None,
                    StateAction::ChatError(ChatErrorAction {
                        turn_id: self.id.clone(),
                        duration,
                        part: error_part(error, false),
                        meta: None,
                    }),
                );
                self.ended = true;
            }
            NormEvent::Cancelled { duration_ms } => {
                self.close_subagents(out);
                let duration = self.duration(duration_ms);
                out.action(
                    None,
                    StateAction::ChatTurnCancelled(ChatTurnCancelledAction {
                        turn_id: self.id.clone(),
                        duration,
                        meta: None,
                    }),
                );
                self.ended = true;
            }
            NormEvent::Idle {
                aborted: true,
                duration_ms: _,
            } => self.ended = true,
            NormEvent::Idle {
                aborted: false,
                duration_ms,
            } => {
                self.close_subagents(out);
                let duration = self.duration(duration_ms);
                out.action(
                    None,
                    StateAction::ChatTurnComplete(ChatTurnCompleteAction {
                        turn_id: self.id.clone(),
                        duration,
                        meta: None,
                    }),
                );
                self.ended = true;
            }
            // Handled by `Mapper::map` before a turn is needed.
            NormEvent::Activity { .. }
            | NormEvent::Title { .. }
            | NormEvent::SteeringConsumed { .. }
            | NormEvent::ModelLimits { .. } => {}
        }
    }

    pub(super) fn duration(&self, reported: Option<i64>) -> i64 {
        reported
            .unwrap_or_else(|| {
                i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX)
            })
            .max(0)
    }
}

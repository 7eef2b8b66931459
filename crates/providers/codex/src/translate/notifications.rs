//! The app-server's notifications: turns, items, deltas, usage and errors.

use super::*;

impl Translator {
    pub(super) fn notification(&mut self, notification: Notification, out: &mut Vec<Output>) {
        let is_thread_start = matches!(notification, Notification::ThreadStarted(_));
        if !is_thread_start && !self.ours(notification.thread_id()) {
            tracing::debug!("ignoring a notification of another thread");
            return;
        }
        match notification {
            Notification::ThreadStarted(params) => self.thread_seen(params.thread, None, out),
            Notification::TurnStarted(params) => {
                self.route_binding(Some(&params.turn.id), true);
            }
            Notification::TurnCompleted(params) => self.turn_completed(params.turn, out),
            Notification::ItemStarted(params) => {
                if self.route(params.turn_id.as_deref()) {
                    self.item_started(params.item, out);
                }
            }
            Notification::ItemCompleted(params) => {
                if self.route(params.turn_id.as_deref()) {
                    self.item_completed(params.item, out);
                }
            }
            Notification::AgentMessageDelta(params) => {
                if self.route(params.turn_id.as_deref()) {
                    self.message_delta(params, out);
                }
            }
            Notification::ReasoningSummaryPartAdded(_) => {
                // The part is created by its first delta (or the completed item).
            }
            Notification::ReasoningSummaryTextDelta(params) => {
                if self.route(params.turn_id.as_deref()) {
                    let index = params.summary_index.unwrap_or(0);
                    self.reasoning_delta(&params.item_id, "summary", index, params.delta, out);
                }
            }
            Notification::ReasoningTextDelta(params) => {
                if self.route(params.turn_id.as_deref()) {
                    let index = params.content_index.unwrap_or(0);
                    self.reasoning_delta(&params.item_id, "text", index, params.delta, out);
                }
            }
            Notification::CommandOutputDelta(params)
            | Notification::FileChangeOutputDelta(params) => {
                if self.route(params.turn_id.as_deref()) {
                    self.output_delta(params, out);
                }
            }
            Notification::FileChangePatchUpdated(params) => {
                if !self.route(params.turn_id.as_deref()) {
                    return;
                }
                let Some(turn) = &mut self.turn else {
                    return;
                };
                let Some((call, output)) = turn.open_tool(&params.item_id) else {
                    return;
                };
                let ToolCall::FileChange { changes, .. } = call else {
                    return;
                };
                *changes = params.changes.iter().map(Change::from).collect();
                let event = call.live_output(&Scope::Root, &params.item_id, output);
                self.emit(event, out);
            }
            Notification::McpToolCallProgress(params) => {
                if !self.route(params.turn_id.as_deref()) {
                    return;
                }
                let open = self
                    .turn
                    .as_mut()
                    .is_some_and(|turn| turn.open_tool(&params.item_id).is_some());
                if open {
                    let mut meta = JsonObject::new();
                    meta.insert("progressMessage".into(), params.message.clone().into());
                    let event = NormEvent::ToolOutput {
                        scope: Scope::Root,
                        tool_call_id: params.item_id,
                        content: vec![ToolResultContent::Text(ToolResultTextContent {
                            text: params.message,
                        })],
                        meta: Some(meta),
                    };
                    self.emit(event, out);
                }
            }
            Notification::TokenUsageUpdated(params) => {
                if self.route(params.turn_id.as_deref()) {
                    self.usage(params, out);
                }
            }
            Notification::Error(params) => {
                if self.route(params.turn_id.as_deref()) {
                    self.error(params, out);
                }
            }
            Notification::Other { method, .. } => {
                tracing::trace!(method, "ignoring a notification");
            }
        }
    }

    pub(super) fn item_started(&mut self, item: ThreadItem, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        let Some(id) = item.id().map(str::to_owned) else {
            return;
        };
        if turn.items.contains_key(&id) {
            tracing::debug!(item = id, "ignoring a second start of an item");
            return;
        }
        if std::mem::take(&mut turn.activity) {
            self.emit(NormEvent::Activity { text: None }, out);
        }
        // `emit` borrowed the whole translator: take the turn again.
        let Some(turn) = &mut self.turn else {
            return;
        };
        match item {
            ThreadItem::AgentMessage(message) => {
                turn.items.insert(id.clone(), ItemTrack::Message);
                if !message.text.is_empty() {
                    self.emit(
                        NormEvent::TextDelta {
                            scope: Scope::Root,
                            stream_id: id,
                            text: message.text,
                        },
                        out,
                    );
                }
            }
            ThreadItem::Reasoning(_) => {
                turn.items.insert(id, ItemTrack::Reasoning);
            }
            item => {
                let Some(call) = ToolCall::from_item(&item) else {
                    return;
                };
                let events = call.started(&Scope::Root, &id);
                turn.tool_order.push(id.clone());
                turn.items.insert(
                    id,
                    ItemTrack::Tool {
                        call: Box::new(call),
                        output: String::new(),
                        done: false,
                    },
                );
                self.emit_all(events, out);
            }
        }
    }

    pub(super) fn item_completed(&mut self, item: ThreadItem, out: &mut Vec<Output>) {
        let Some(id) = item.id().map(str::to_owned) else {
            return;
        };
        match item {
            ThreadItem::AgentMessage(message) => {
                if let Some(turn) = &mut self.turn {
                    turn.items.remove(&id);
                }
                self.emit(
                    NormEvent::TextFull {
                        scope: Scope::Root,
                        stream_id: id,
                        text: message.text,
                    },
                    out,
                );
            }
            ThreadItem::Reasoning(reasoning) => {
                if let Some(turn) = &mut self.turn {
                    turn.items.remove(&id);
                }
                let (kind, parts) = if reasoning.summary.is_empty() {
                    ("text", reasoning.content)
                } else {
                    ("summary", reasoning.summary)
                };
                for (index, text) in parts.into_iter().enumerate() {
                    self.emit(
                        NormEvent::ReasoningFull {
                            scope: Scope::Root,
                            stream_id: format!("{id}:{kind}:{index}"),
                            text,
                        },
                        out,
                    );
                }
            }
            item => {
                if let Some(call) = ToolCall::from_item(&item) {
                    self.tool_completed(&id, call, out);
                }
            }
        }
    }

    /// Completes tool item `id` from its final data (starting it first if its start was
    /// never seen).
    pub(super) fn tool_completed(&mut self, id: &str, call: ToolCall, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        let streamed = match turn.items.get_mut(id) {
            Some(ItemTrack::Tool { done: true, .. }) => {
                tracing::debug!(item = id, "ignoring a second completion of an item");
                return;
            }
            Some(ItemTrack::Tool { output, done, .. }) => {
                *done = true;
                std::mem::take(output)
            }
            _ => {
                turn.tool_order.push(id.to_owned());
                turn.items.insert(
                    id.to_owned(),
                    ItemTrack::Tool {
                        call: Box::new(call.clone()),
                        output: String::new(),
                        done: true,
                    },
                );
                let events = call.started(&Scope::Root, id);
                self.emit_all(events, out);
                String::new()
            }
        };
        let declined = self
            .turn
            .as_ref()
            .is_some_and(|turn| turn.declined.contains(id));
        let ending = if declined {
            Ending::Declined
        } else {
            Ending::Reported
        };
        let event = call.completed(&Scope::Root, id, &streamed, ending);
        self.emit(event, out);
    }

    pub(super) fn message_delta(&mut self, params: DeltaParams, out: &mut Vec<Output>) {
        let started = self.turn.as_ref().is_some_and(|turn| {
            matches!(turn.items.get(&params.item_id), Some(ItemTrack::Message))
        });
        if !started {
            tracing::debug!(
                item = params.item_id,
                "dropping a delta of an unknown message"
            );
            return;
        }
        self.emit(
            NormEvent::TextDelta {
                scope: Scope::Root,
                stream_id: params.item_id,
                text: params.delta,
            },
            out,
        );
    }

    pub(super) fn reasoning_delta(
        &mut self,
        item_id: &str,
        kind: &str,
        index: i64,
        delta: String,
        out: &mut Vec<Output>,
    ) {
        self.emit(
            NormEvent::ReasoningDelta {
                scope: Scope::Root,
                stream_id: format!("{item_id}:{kind}:{index}"),
                text: delta,
            },
            out,
        );
    }

    pub(super) fn output_delta(&mut self, params: DeltaParams, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        let Some((call, output)) = turn.open_tool(&params.item_id) else {
            tracing::debug!(item = params.item_id, "dropping output of an unknown item");
            return;
        };
        output.push_str(&params.delta);
        let event = call.live_output(&Scope::Root, &params.item_id, output);
        self.emit(event, out);
    }

    pub(super) fn usage(&mut self, params: TokenUsageParams, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        turn.model_calls += 1;
        let call = format!(
            "{}#{}",
            turn.app_turn.as_deref().unwrap_or(&turn.id),
            turn.model_calls
        );
        let last = params.token_usage.last;
        if let Some(window) = params
            .token_usage
            .model_context_window
            .and_then(|window| u64::try_from(window).ok())
        {
            let limits = agenthost_protocol::ModelLimits {
                max_context_window: Some(window),
                ..agenthost_protocol::ModelLimits::default()
            };
            self.emit(NormEvent::ModelLimits { limits }, out);
        }
        self.emit(
            NormEvent::Usage {
                scope: Scope::Root,
                // `last` is this model call's usage (`total` is the whole thread's); OpenAI's
                // input count includes the cached tokens already.
                kind: UsageKind::Call,
                input: last.input_tokens,
                output: last.output_tokens,
                cache_read: Some(last.cached_input_tokens),
                cache_write: None,
                model: self.model.clone(),
                meta: Some(usage_meta(
                    last.reasoning_output_tokens,
                    params.token_usage.model_context_window,
                )),
            },
            out,
        );
        self.emit(
            NormEvent::ModelCallCompleted {
                model_call_id: call,
            },
            out,
        );
    }

    /// An `error` notification: one Codex retries is the chat's activity until the next item
    /// or the turn's end; another is remembered for a failed turn.
    pub(super) fn error(&mut self, params: ErrorParams, out: &mut Vec<Output>) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if !params.will_retry {
            turn.error = Some(params.error);
            return;
        }
        tracing::info!(
            message = params.error.message,
            "Codex retries after an error"
        );
        turn.activity = true;
        let message = params.error.message.trim();
        let text = if message.is_empty() {
            "Codex retries after an error".to_owned()
        } else {
            format!("{message} (retrying)")
        };
        self.emit(NormEvent::Activity { text: Some(text) }, out);
    }

    pub(super) fn turn_completed(&mut self, app_turn: Turn, out: &mut Vec<Output>) {
        if self.stale_turns.remove(&app_turn.id) {
            tracing::debug!(turn = app_turn.id, "the end of a cancelled turn");
            return;
        }
        if !self.route(Some(&app_turn.id)) {
            tracing::debug!(turn = app_turn.id, "the end of an unrelated turn");
            return;
        }
        let Some(mut turn) = self.turn.take() else {
            return;
        };
        if turn.activity {
            self.emit(NormEvent::Activity { text: None }, out);
        }
        let finished: Vec<(String, ToolCall)> = app_turn
            .items
            .iter()
            .filter_map(|item| ThreadItem::from_value(item.clone()).ok())
            .filter_map(|item| {
                let call = ToolCall::from_item(&item)?;
                Some((item.id()?.to_owned(), call))
            })
            .filter(|(_, call)| call.is_finished())
            .collect();
        let reason = match app_turn.status {
            TurnStatus::Interrupted => "The turn was interrupted before the tool call finished.",
            _ => "The turn ended before the tool call finished.",
        };
        for event in orphans(&mut turn, &finished, reason) {
            self.emit(event, out);
        }
        let duration_ms = app_turn.duration_ms.or_else(|| {
            let (started, completed) = (app_turn.started_at?, app_turn.completed_at?);
            completed.checked_sub(started)?.checked_mul(1000)
        });
        let terminal = match app_turn.status {
            TurnStatus::Interrupted => NormEvent::Cancelled { duration_ms },
            TurnStatus::Failed => NormEvent::Failed {
                error: failure(app_turn.error.or(turn.error)),
                duration_ms,
            },
            TurnStatus::Completed | TurnStatus::InProgress | TurnStatus::Other(_) => {
                NormEvent::Idle {
                    aborted: false,
                    duration_ms,
                }
            }
        };
        self.emit(terminal, out);
        out.push(Output::TurnEnded);
    }
}

//! A run's life after its start: answers, remote outcomes, the protocol gate, local decisions,
//! its body and content, and how it finishes.

use super::*;

impl Core {
    /// Dispatches through the funnel; `false` when an answer of this kind already went out.
    pub(super) fn send_tool(
        &mut self,
        key: &ToolCallKey,
        kind: AnswerKind,
        action: StateAction,
        fx: &mut Effects,
    ) -> bool {
        if let Some(call) = self.calls.get_mut(key) {
            if call.funnel & kind.bit() != 0 {
                tracing::debug!(%key, ?kind, "funnel dropped a duplicate answer");
                return false;
            }
            call.funnel |= kind.bit();
        }
        fx.dispatches.push((key.chat.clone(), action));
        true
    }

    /// An answer forwarded by an observer.
    pub(crate) fn answer(
        &mut self,
        chat: &Uri,
        action: StateAction,
        now: Instant,
        fx: &mut Effects,
    ) -> AnswerOutcome {
        if self.disposed {
            return AnswerOutcome::Disposed;
        }
        match answers::answer_target(chat, &action) {
            None => {
                fx.dispatches.push((chat.clone(), action));
                AnswerOutcome::Forwarded
            }
            Some(AnswerTarget::Input(key)) => {
                if let Some(input) = self.inputs.get_mut(&key) {
                    if input.answered {
                        return AnswerOutcome::Duplicate;
                    }
                    input.answered = true;
                    let ids = input.entries.clone();
                    self.mark_answered(&ids, |_| true, fx);
                }
                fx.dispatches.push((chat.clone(), action));
                AnswerOutcome::Dispatched
            }
            Some(AnswerTarget::ToolCall(key, kind)) => {
                let ends = crate::update::ended_call(chat, &action).is_some();
                if !self.send_tool(&key, kind, action, fx) {
                    return AnswerOutcome::Duplicate;
                }
                if ends {
                    // A skip from a view: the local attempt must not run its body.
                    self.remote_outcome(&key, now, fx);
                }
                let ids = self
                    .calls
                    .get(&key)
                    .map(|c| c.entries.clone())
                    .unwrap_or_default();
                self.mark_answered(
                    &ids,
                    |class| match class {
                        Class::Confirmation { gate, .. } => gate_kind(*gate) == kind,
                        Class::Authentication { .. } => kind == AnswerKind::ToolCallComplete,
                        _ => false,
                    },
                    fx,
                );
                AnswerOutcome::Dispatched
            }
        }
    }

    pub(super) fn mark_answered(
        &mut self,
        ids: &[Id],
        applies: impl Fn(&Class) -> bool,
        fx: &mut Effects,
    ) {
        for id in ids {
            if let Some(entry) = self.entries.get_mut(&**id)
                && applies(&entry.class)
            {
                entry.answered = true;
                self.disarm_entry(id, fx);
            }
        }
    }

    /// A chat action seen on a chat channel (from the session's envelopes): a remote skip or
    /// denial, or a cancelled completion, ends a local attempt whose body has not started.
    pub(crate) fn remote_outcome(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let executing = call
            .record
            .as_ref()
            .is_some_and(|r| r.phase == RunPhase::Executing);
        if executing {
            return;
        }
        call.closed = true;
        if call.record.is_some() {
            self.abort_attempt(key, now, fx);
        }
        let ids = self
            .calls
            .get(key)
            .map(|c| c.entries.clone())
            .unwrap_or_default();
        for id in ids {
            self.disarm_entry(&id, fx);
        }
    }

    // ----- runs: re-validation and progress --------------------------------------------------

    pub(super) fn record(&self, key: &ToolCallKey, attempt: u64) -> Option<&Record> {
        self.calls
            .get(key)?
            .record
            .as_ref()
            .filter(|r| r.attempt == attempt)
    }

    /// Re-validation after an await: the attempt is still the call's current one, its
    /// token is not cancelled, and — until the body started — the entry it started from is
    /// still there with the same generation.
    pub(crate) fn is_current(&self, key: &ToolCallKey, attempt: u64) -> bool {
        if self.disposed {
            return false;
        }
        let Some(record) = self.record(key, attempt) else {
            return false;
        };
        if record.token.is_cancelled() {
            return false;
        }
        record.phase == RunPhase::Executing
            || record
                .entry
                .as_deref()
                .and_then(|id| self.entries.get(id))
                .is_some_and(|e| e.generation == record.generation)
    }

    /// Whether the protocol call is still at its parameter gate for this attempt (the
    /// confirmation-phase entry still holds authority).
    pub(super) fn at_protocol_gate(&self, key: &ToolCallKey, attempt: u64) -> bool {
        self.record(key, attempt)
            .and_then(|r| r.entry.as_deref())
            .and_then(|id| self.entries.get(id))
            .is_some_and(|e| {
                matches!(
                    e.class,
                    Class::Execution {
                        phase: Phase::Confirmation,
                        ..
                    }
                )
            })
    }

    /// The run failed before its body ran (`inputReadFailed`, `invalidInput`, …): answered like
    /// a completed body, with the failed result.
    pub(crate) fn fail_run(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        result: ToolCallResult,
        now: Instant,
        fx: &mut Effects,
    ) {
        self.complete_run(key, attempt, result, now, fx);
    }

    /// The local tool needs a confirmation: show it. `None` when the attempt is gone.
    pub(crate) fn enter_confirmation(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        now: Instant,
        fx: &mut Effects,
    ) -> Option<tokio::sync::oneshot::Receiver<LocalDecision>> {
        if !self.is_current(key, attempt) {
            return None;
        }
        let call = self.calls.get_mut(key)?;
        let record = call.record.as_mut()?;
        if record.phase != RunPhase::AwaitingLocalConfirmation {
            self.awaiting += 1;
        }
        record.phase = RunPhase::AwaitingLocalConfirmation;
        let receiver = call.invocation.as_ref()?.await_decision();
        self.evaluate_local_confirmation(key, now, fx);
        Some(receiver)
    }

    /// The local gate passed without asking; reflects the approval while the protocol call
    /// is still pending. `false` when the attempt is gone.
    pub(crate) fn pass_gate(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        pass: GatePass,
        fx: &mut Effects,
    ) -> bool {
        if !self.is_current(key, attempt) {
            return false;
        }
        let reason = match pass {
            GatePass::NotNeeded => ToolCallConfirmationReason::NotNeeded,
            GatePass::Setting => ToolCallConfirmationReason::Setting,
        };
        if self.at_protocol_gate(key, attempt) {
            self.send_tool(
                key,
                AnswerKind::ToolCallConfirmed,
                answers::approve_parameters(key, reason, None),
                fx,
            );
        }
        true
    }

    /// The observer decided at the local confirmation. `true`: go on and run the body.
    pub(crate) fn local_decision(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        decision: LocalDecision,
        now: Instant,
        fx: &mut Effects,
    ) -> bool {
        if !self.is_current(key, attempt) {
            self.unwind(key, attempt, now, fx);
            return false;
        }
        let at_gate = self.at_protocol_gate(key, attempt);
        match decision {
            LocalDecision::Approve {
                reason,
                selected_option_id,
            } => {
                if at_gate {
                    self.send_tool(
                        key,
                        AnswerKind::ToolCallConfirmed,
                        answers::approve_parameters(key, reason, selected_option_id),
                        fx,
                    );
                }
                true
            }
            LocalDecision::Deny { selected_option_id } => {
                self.deny_locally(key, attempt, at_gate, selected_option_id, now, fx);
                false
            }
            LocalDecision::Cancel => {
                self.deny_locally(key, attempt, at_gate, None, now, fx);
                false
            }
        }
    }

    pub(super) fn deny_locally(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        at_gate: bool,
        selected_option_id: Option<String>,
        now: Instant,
        fx: &mut Effects,
    ) {
        if at_gate {
            self.send_tool(
                key,
                AnswerKind::ToolCallConfirmed,
                answers::deny_parameters(key, None, selected_option_id),
                fx,
            );
        } else {
            // The protocol call is already running: the denial can only end it as a failure.
            let result = answers::failed_result(
                "Cancelled tool call",
                "The user denied the tool call",
                answers::CANCELLED,
            );
            self.send_tool(
                key,
                AnswerKind::ToolCallComplete,
                answers::complete(key, result),
                fx,
            );
        }
        self.finish(key, attempt, Some(InvocationStatus::Cancelled), now, fx);
    }

    /// The body is about to run. `false` when the attempt is gone.
    pub(crate) fn begin_body(&mut self, key: &ToolCallKey, attempt: u64, fx: &mut Effects) -> bool {
        if !self.is_current(key, attempt) {
            return false;
        }
        let Some(call) = self.calls.get_mut(key) else {
            return false;
        };
        let Some(record) = call.record.as_mut() else {
            return false;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        record.phase = RunPhase::Executing;
        let local = record.local_deadline.take();
        if let Some(invocation) = &call.invocation {
            invocation.begin_body();
        }
        if let Some(slot) = local {
            self.drop_timer(slot, fx);
        }
        true
    }

    /// Streamed partial content of a running body.
    pub(crate) fn content(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        content: Vec<ToolResultContent>,
        fx: &mut Effects,
    ) {
        if !self.is_current(key, attempt)
            || self.record(key, attempt).map(|r| r.phase) != Some(RunPhase::Executing)
        {
            return;
        }
        if let Some(invocation) = self.calls.get(key).and_then(|c| c.invocation.as_ref()) {
            invocation.set_content(content.clone());
        }
        fx.dispatches
            .push((key.chat.clone(), answers::content_changed(key, content)));
    }

    /// The body returned.
    pub(crate) fn complete_run(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        result: ToolCallResult,
        now: Instant,
        fx: &mut Effects,
    ) {
        if !self.is_current(key, attempt) {
            return self.unwind(key, attempt, now, fx);
        }
        self.send_tool(
            key,
            AnswerKind::ToolCallComplete,
            answers::complete(key, result.clone()),
            fx,
        );
        self.finish(
            key,
            attempt,
            Some(InvocationStatus::Completed(Box::new(result))),
            now,
            fx,
        );
    }

    /// The attempt ends without an answer (cancelled, superseded): nothing is dispatched.
    pub(crate) fn unwind(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        now: Instant,
        fx: &mut Effects,
    ) {
        if self.record(key, attempt).is_none() {
            return;
        }
        self.finish_silently(key, now, fx);
    }

    pub(super) fn finish_silently(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let Some(record) = call.record.take() else {
            return;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        if record.phase != RunPhase::Executing {
            call.started = false;
        }
        if let Some(invocation) = &call.invocation {
            invocation.settle(InvocationStatus::Cancelled);
        }
        self.drop_record_timers(&record, fx);
        self.release_call(key, now, fx);
    }

    /// The attempt ended with an answer: the record goes, the start marker stays.
    pub(super) fn finish(
        &mut self,
        key: &ToolCallKey,
        attempt: u64,
        status: Option<InvocationStatus>,
        now: Instant,
        fx: &mut Effects,
    ) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        if call.record.as_ref().map(|r| r.attempt) != Some(attempt) {
            return;
        }
        let Some(record) = call.record.take() else {
            return;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        if let (Some(invocation), Some(status)) = (&call.invocation, status) {
            invocation.settle(status);
        }
        self.drop_record_timers(&record, fx);
        self.release_call(key, now, fx);
    }

    // ----- observers' access to invocations ---------------------------------------------------
}

//! Deadlines: the grace window of an entry, the local confirmation's, and what fires when they
//! pass (the unattended answer, the expiry).

use super::*;

impl Core {
    pub(super) fn add_timer(&mut self, at: Instant, timer: Timer, fx: &mut Effects) -> TimerSlot {
        let slot = (at, self.next_timer);
        self.next_timer += 1;
        self.timers.insert(slot, timer);
        fx.timers_changed = true;
        slot
    }

    pub(super) fn drop_timer(&mut self, slot: TimerSlot, fx: &mut Effects) {
        if self.timers.remove(&slot).is_some() {
            fx.timers_changed = true;
        }
    }

    pub(super) fn arm_entry(&mut self, id: &str, now: Instant, fx: &mut Effects) {
        let Some((entry_id, entry)) = self.entries.get_key_value(id) else {
            return;
        };
        if entry.deadline.is_some() {
            return; // keeps its original deadline
        }
        let timer = Timer::Grace(Id::clone(entry_id));
        let slot = self.add_timer(now + self.config.grace, timer, fx);
        if let Some(entry) = self.entries.get_mut(id) {
            entry.deadline = Some(slot);
        }
    }

    pub(super) fn disarm_entry(&mut self, id: &str, fx: &mut Effects) {
        if let Some(slot) = self.entries.get_mut(id).and_then(|e| e.deadline.take()) {
            self.drop_timer(slot, fx);
        }
    }

    /// A run showing its local confirmation is covered by the grace rule.
    pub(super) fn evaluate_local_confirmation(
        &mut self,
        key: &ToolCallKey,
        now: Instant,
        fx: &mut Effects,
    ) {
        let claimed = self.call_claimed(key);
        let Some(record) = self.calls.get(key).and_then(|c| c.record.as_ref()) else {
            return;
        };
        if record.phase != RunPhase::AwaitingLocalConfirmation {
            return;
        }
        match (claimed, record.local_deadline) {
            (true, Some(slot)) => {
                self.drop_timer(slot, fx);
                if let Some(record) = self.calls.get_mut(key).and_then(|c| c.record.as_mut()) {
                    record.local_deadline = None;
                }
            }
            (false, None) => {
                let at = now + self.config.grace;
                let slot = self.add_timer(at, Timer::LocalConfirmation(key.clone()), fx);
                if let Some(record) = self.calls.get_mut(key).and_then(|c| c.record.as_mut()) {
                    record.local_deadline = Some(slot);
                }
            }
            _ => {}
        }
    }

    /// Fires every timer due at `now`.
    pub(crate) fn fire_due(&mut self, now: Instant, fx: &mut Effects) {
        while let Some(((at, _), _)) = self.timers.first_key_value() {
            if *at > now {
                break;
            }
            let Some((slot, timer)) = self.timers.pop_first() else {
                break;
            };
            fx.timers_changed = true;
            match timer {
                Timer::Grace(id) => {
                    if let Some(entry) = self.entries.get_mut(&*id)
                        && entry.deadline == Some(slot)
                    {
                        entry.deadline = None;
                        self.auto_answer(&id, fx);
                    }
                }
                Timer::LocalConfirmation(key) => {
                    let owned = self
                        .calls
                        .get_mut(&key)
                        .and_then(|c| c.record.as_mut())
                        .filter(|r| r.local_deadline == Some(slot))
                        .map(|r| r.local_deadline = None)
                        .is_some();
                    if owned {
                        self.local_confirmation_expired(&key, now, fx);
                    }
                }
                Timer::Handover(key) => {
                    if let Some(record) = self.calls.get_mut(&key).and_then(|c| c.record.as_mut())
                        && record.handover_deadline == Some(slot)
                    {
                        record.handover_deadline = None;
                        if record.entry.is_none() {
                            tracing::debug!(%key, "hand-over window elapsed; cancelling run");
                            record.token.cancel();
                        }
                    }
                }
            }
        }
    }

    /// The grace window of an entry ended: answer it if it is still unclaimed, pending, not
    /// answered and not started.
    pub(super) fn auto_answer(&mut self, id: &str, fx: &mut Effects) {
        let Some(entry) = self.entries.get(id) else {
            return;
        };
        if entry.answered
            || self.policy(&entry.class) == AutoAnswer::Wait
            || self.entry_claimant(entry).is_some()
        {
            return;
        }
        let class = entry.class.clone();
        match class {
            Class::Input { key } => {
                if let Some(input) = self.inputs.get_mut(&key)
                    && !input.answered
                {
                    input.answered = true;
                    fx.dispatches
                        .push((key.chat.clone(), answers::cancel_input(&key)));
                }
            }
            Class::Confirmation {
                key,
                gate,
                tool_name,
                display_name,
                ..
            } => {
                let approve = self.config.approve_tools.contains(&tool_name);
                let action = match (gate, approve) {
                    (Gate::Parameters, true) => {
                        answers::approve_parameters(&key, ToolCallConfirmationReason::Setting, None)
                    }
                    (Gate::Parameters, false) => answers::deny_parameters(
                        &key,
                        Some(answers::unattended_denial_message(
                            &display_name,
                            self.config.grace,
                        )),
                        None,
                    ),
                    (Gate::Result, approved) => answers::confirm_result(&key, approved),
                };
                self.send_tool(&key, gate_kind(gate), action, fx);
            }
            Class::Authentication { key, .. } => {
                let action = answers::complete(&key, answers::authentication_cancelled_result());
                self.send_tool(&key, AnswerKind::ToolCallComplete, action, fx);
            }
            Class::Execution {
                key, display_name, ..
            } => {
                let Some(call) = self.calls.get_mut(&key) else {
                    return;
                };
                if call.started {
                    return;
                }
                call.started = true;
                let result = answers::client_unavailable_result(&display_name);
                if let Some(invocation) = call.invocation.take() {
                    invocation.settle(InvocationStatus::Completed(Box::new(result.clone())));
                }
                tracing::info!(%key, "no observer claimed a confirmable client tool; denying");
                self.send_tool(
                    &key,
                    AnswerKind::ToolCallComplete,
                    answers::complete(&key, result),
                    fx,
                );
            }
            Class::Ignored => return,
        }
        if let Some(entry) = self.entries.get_mut(id) {
            entry.answered = true;
        }
    }

    pub(super) fn local_confirmation_expired(
        &mut self,
        key: &ToolCallKey,
        now: Instant,
        fx: &mut Effects,
    ) {
        let claimed = self.call_claimed(key);
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let awaiting = call
            .record
            .as_ref()
            .is_some_and(|r| r.phase == RunPhase::AwaitingLocalConfirmation);
        if !awaiting || claimed {
            return;
        }
        let Some(record) = call.record.take() else {
            return;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        record.token.cancel();
        let display = call
            .invocation
            .as_ref()
            .and_then(|i| i.snapshot().presentation.display_name)
            .unwrap_or_else(|| key.tool_call_id.clone());
        let result = answers::client_unavailable_result(&display);
        if let Some(invocation) = &call.invocation {
            invocation.settle(InvocationStatus::Completed(Box::new(result.clone())));
        }
        self.drop_record_timers(&record, fx);
        self.send_tool(
            key,
            AnswerKind::ToolCallComplete,
            answers::complete(key, result),
            fx,
        );
        self.release_call(key, now, fx);
    }

    // ----- the funnel ------------------------------------------------------------------------
}

//! Deciding an entry: the policy that applies, attaching it to its call, starting or aborting
//! a run, and the invocation a run reports through.

use super::*;

impl Core {
    pub(super) fn evaluate_all(&mut self, ids: &[Id], now: Instant, fx: &mut Effects) {
        for id in ids {
            self.evaluate(id, now, fx);
        }
        // Runs showing a local confirmation follow the same claims.
        if self.awaiting == 0 {
            return;
        }
        let mut awaiting: Vec<ToolCallKey> = Vec::new();
        for id in ids {
            let Some(key) = self.entries.get(&**id).and_then(|e| e.class.tool_call()) else {
                continue;
            };
            let waits = self
                .calls
                .get(key)
                .and_then(|c| c.record.as_ref())
                .is_some_and(|r| r.phase == RunPhase::AwaitingLocalConfirmation);
            if waits && !awaiting.contains(key) {
                awaiting.push(key.clone());
            }
        }
        for key in awaiting {
            self.evaluate_local_confirmation(&key, now, fx);
        }
    }

    pub(super) fn policy(&self, class: &Class) -> AutoAnswer {
        match class {
            Class::Input { .. } => self.config.chat_input,
            Class::Confirmation { .. } => self.config.tool_confirmation,
            Class::Authentication { .. } => self.config.tool_authentication,
            Class::Execution { .. } => AutoAnswer::AfterGrace,
            Class::Ignored => AutoAnswer::Wait,
        }
    }

    /// The decision for one entry, computed without touching state.
    pub(super) fn decide(&self, id: &str) -> Decision {
        let Some(entry) = self.entries.get(id) else {
            return Decision::Nothing;
        };
        let armed = entry.deadline.is_some();
        let wait_or_arm = |claimed: bool| match (claimed, armed) {
            (true, true) => Decision::Disarm,
            (false, false) => Decision::Arm,
            _ => Decision::Nothing,
        };
        let (key, phase, tool_name) = match &entry.class {
            Class::Ignored => return Decision::Nothing,
            Class::Input { .. } | Class::Confirmation { .. } | Class::Authentication { .. } => {
                if self.policy(&entry.class) == AutoAnswer::Wait || entry.answered {
                    return if armed {
                        Decision::Disarm
                    } else {
                        Decision::Nothing
                    };
                }
                return wait_or_arm(self.entry_claimant(entry).is_some());
            }
            Class::Execution {
                key,
                phase,
                tool_name,
                ..
            } => (key, *phase, tool_name),
        };
        let Some(call) = self.calls.get(key) else {
            return Decision::Nothing;
        };
        if call.started {
            return Decision::Attach;
        }
        let superseded = phase == Phase::Confirmation
            && call.entries.iter().any(|other| {
                self.entries.get(&**other).is_some_and(|e| {
                    matches!(
                        e.class,
                        Class::Execution {
                            phase: Phase::Execution,
                            ..
                        }
                    )
                })
            });
        if call.closed || entry.answered || superseded {
            // Ended remotely, already denied, or the execution entry (with its trusted
            // pre-approval) is present and decides instead.
            return if armed {
                Decision::Disarm
            } else {
                Decision::Nothing
            };
        }
        let lookup = self.runner.lookup(tool_name);
        if lookup == ToolLookup::NotReady {
            return if armed {
                Decision::Disarm
            } else {
                Decision::Nothing
            };
        }
        let binding = self.config.client_confirmation == ClientConfirmationMode::HostGateBinding
            && phase == Phase::Confirmation;
        let confirmable =
            binding || matches!(lookup, ToolLookup::Found(d) if d.may_request_confirmation);
        match self.entry_claimant(entry) {
            Some(claimant) => Decision::Start {
                context: Some(claimant.clone()),
                must_ask: binding,
                lookup,
            },
            None if !confirmable => Decision::Start {
                context: None,
                must_ask: false,
                lookup,
            },
            None => wait_or_arm(false),
        }
    }

    /// Applies the decision for one entry; idempotent.
    pub(super) fn evaluate(&mut self, id: &str, now: Instant, fx: &mut Effects) {
        if self.disposed {
            return;
        }
        match self.decide(id) {
            Decision::Nothing => {}
            Decision::Arm => self.arm_entry(id, now, fx),
            Decision::Disarm => self.disarm_entry(id, fx),
            Decision::Attach => {
                self.disarm_entry(id, fx);
                self.attach(id, now, fx);
            }
            Decision::Start {
                context,
                must_ask,
                lookup,
            } => self.start_run(id, context, must_ask, lookup, fx),
        }
    }

    /// An entry of a call that already carries a start marker joins the existing record.
    pub(super) fn attach(&mut self, id: &str, now: Instant, fx: &mut Effects) {
        let Some((key, phase)) = self.entries.get(id).and_then(|e| match &e.class {
            Class::Execution { key, phase, .. } => Some((key.clone(), *phase)),
            _ => None,
        }) else {
            return;
        };
        let Some(record) = self.calls.get_mut(&key).and_then(|c| c.record.as_mut()) else {
            return;
        };
        if record.entry.as_deref() == Some(id) {
            return;
        }
        match record.phase {
            RunPhase::Executing => {
                if record.entry.is_none() || phase == Phase::Execution {
                    record.entry = self.entries.get_key_value(id).map(|(k, _)| Id::clone(k));
                    if let Some(slot) = record.handover_deadline.take() {
                        self.drop_timer(slot, fx);
                    }
                }
            }
            RunPhase::Preparing | RunPhase::AwaitingLocalConfirmation => {
                if phase == Phase::Execution && record.from_confirmation {
                    // Approved elsewhere while the local gate was pending (P7): the local
                    // attempt (its body never ran) gives way to a run with the trusted
                    // pre-approval the execution entry carries.
                    self.abort_attempt(&key, now, fx);
                    self.evaluate(id, now, fx);
                }
            }
        }
    }

    pub(super) fn start_run(
        &mut self,
        id: &str,
        context: Option<Claimant>,
        must_ask: bool,
        lookup: ToolLookup,
        fx: &mut Effects,
    ) {
        let Some((entry_id, entry)) = self.entries.get_key_value(id) else {
            return;
        };
        let entry_id = Id::clone(entry_id);
        let Class::Execution {
            key,
            phase,
            tool_name,
            display_name,
            input,
            pre_approval,
        } = entry.class.clone()
        else {
            return;
        };
        let chat = entry.chat.clone();
        let generation = entry.generation;
        self.disarm_entry(id, fx);
        let attempt = self.next_attempt;
        self.next_attempt += 1;
        let token = CancelToken::new();
        let invocation = self.invocation_for(&key, &chat, Some(&display_name));
        invocation.begin_attempt(context.clone(), token.clone());
        if lookup == ToolLookup::Unknown {
            if let Some(call) = self.calls.get_mut(&key) {
                call.started = true;
            }
            let result = answers::local_failure_result(
                &display_name,
                &format!("The tool `{tool_name}` is not available on this client."),
                answers::TOOL_UNAVAILABLE,
            );
            self.send_tool(
                &key,
                AnswerKind::ToolCallComplete,
                answers::complete(&key, result.clone()),
                fx,
            );
            invocation.settle(InvocationStatus::Completed(Box::new(result)));
            return;
        }
        let Some(call) = self.calls.get_mut(&key) else {
            return;
        };
        call.started = true; // the start marker, before any await
        call.record = Some(Record {
            attempt,
            token: token.clone(),
            phase: RunPhase::Preparing,
            entry: Some(entry_id),
            generation,
            from_confirmation: phase == Phase::Confirmation,
            local_deadline: None,
            handover_deadline: None,
        });
        tracing::debug!(%key, attempt, headless = context.is_none(), "starting local run");
        fx.runs.push(RunTicket {
            key,
            attempt,
            tool_name,
            display_name,
            input,
            pre_approval,
            must_ask,
            context,
            token,
            invocation,
        });
    }

    /// Cancels an attempt whose body has not started: the record goes, the start marker is
    /// cleared (a later entry may run the call once), the invocation settles cancelled.
    pub(super) fn abort_attempt(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let Some(call) = self.calls.get_mut(key) else {
            return;
        };
        let Some(record) = call.record.take() else {
            return;
        };
        if record.phase == RunPhase::AwaitingLocalConfirmation {
            self.awaiting = self.awaiting.saturating_sub(1);
        }
        record.token.cancel();
        if record.phase != RunPhase::Executing {
            call.started = false;
        }
        if let Some(invocation) = &call.invocation {
            invocation.settle(InvocationStatus::Cancelled);
        }
        self.drop_record_timers(&record, fx);
        self.release_call(key, now, fx);
    }

    pub(super) fn drop_record_timers(&mut self, record: &Record, fx: &mut Effects) {
        for slot in [record.local_deadline, record.handover_deadline]
            .into_iter()
            .flatten()
        {
            self.drop_timer(slot, fx);
        }
    }

    /// After a lease hold or a retaining claim went away: forget the call when nothing holds it
    /// any more, else re-decide its entries if its start marker was cleared.
    pub(super) fn release_call(&mut self, key: &ToolCallKey, now: Instant, fx: &mut Effects) {
        let Some(call) = self.calls.get(key) else {
            return;
        };
        let retained = self.claims.by_call.contains_key(key);
        if call.lease() == 0 && !retained {
            if let Some(call) = self.calls.remove(key)
                && let Some(invocation) = call.invocation
            {
                invocation.settle(InvocationStatus::Cancelled);
            }
            return;
        }
        if !call.started && call.record.is_none() {
            let ids = call.entries.clone();
            for id in ids {
                self.evaluate(&id, now, fx);
            }
        }
    }

    pub(super) fn invocation_for(
        &mut self,
        key: &ToolCallKey,
        chat: &Uri,
        display_name: Option<&str>,
    ) -> SharedInvocation {
        let derived = Presentation::derived(chat, self.parents.get(chat), display_name);
        let call = match self.calls.get_mut(key) {
            Some(call) => call,
            None => self.calls.entry(key.clone()).or_default(),
        };
        match &call.invocation {
            Some(invocation) => {
                invocation.fill_presentation(derived);
                invocation.clone()
            }
            None => {
                let invocation = SharedInvocation::new(key.clone(), derived);
                call.invocation = Some(invocation.clone());
                invocation
            }
        }
    }

    // ----- timers ----------------------------------------------------------------------------
}

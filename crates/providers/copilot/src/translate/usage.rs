//! Usage reports, subagents and skills.

use super::*;

impl Translator {
    pub(super) fn usage(&mut self, agent: Option<&str>, data: UsageData, out: &mut Vec<Output>) {
        let Some(scope) = self.scope(agent, data.parent_tool_call_id.as_deref()) else {
            return;
        };
        // A subagent's usage goes to its own chat; the root keeps its context's numbers. Each
        // `assistant.usage` is one model call; Copilot counts input the OpenAI way (cached
        // tokens included), whichever model runs.
        let mut meta = JsonObject::new();
        if let Some(tokens) = data.reasoning_tokens {
            meta.insert("reasoningTokens".into(), tokens.into());
        }
        if let Some(cost) = data.cost.filter(Value::is_number) {
            meta.insert("cost".into(), cost);
        }
        self.emit(
            NormEvent::Usage {
                scope,
                kind: UsageKind::Call,
                input: data.input_tokens,
                output: data.output_tokens,
                cache_read: data.cache_read_tokens,
                cache_write: data.cache_write_tokens,
                model: data.model,
                meta: (!meta.is_empty()).then_some(meta),
            },
            out,
        );
    }

    pub(super) fn subagent_started(
        &mut self,
        agent: Option<&str>,
        data: SubagentStartedData,
        out: &mut Vec<Output>,
    ) {
        let Some(turn) = &mut self.turn else {
            return;
        };
        if let Some(agent) = agent {
            turn.agents
                .insert(agent.to_owned(), data.tool_call_id.clone());
        }
        let spawn = turn.tools.get(&data.tool_call_id);
        let arguments = spawn
            .map(|tool| tool.arguments.clone())
            .filter(|arguments| !arguments.is_null())
            .or_else(|| {
                turn.requests
                    .get(&data.tool_call_id)
                    .and_then(|request| request.arguments.clone())
            })
            .unwrap_or(Value::Null);
        let text = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let grandparent = spawn
            .and_then(|tool| tool.scope.parent_tool_call_id())
            .map(str::to_owned);
        let agent_name = if data.agent_name.is_empty() {
            "subagent".to_owned()
        } else {
            data.agent_name
        };
        let display_name = if data.agent_display_name.is_empty() {
            agent_name.clone()
        } else {
            data.agent_display_name
        };
        let event = NormEvent::SubagentStarted {
            parent_tool_call_id: data.tool_call_id,
            agent_name,
            display_name,
            description: text("description"),
            prompt: text("prompt"),
            grandparent,
        };
        let description = data.agent_description.filter(|text| !text.is_empty());
        for mut signal in self.mapper.map(event) {
            if let AgentSignal::SubagentStarted(started) = &mut signal {
                started.agent_description.clone_from(&description);
            }
            out.push(Output::Signal(signal));
        }
    }

    /// A skill loaded outside a `skill` tool call is shown as a read of its file.
    pub(super) fn skill_invoked(
        &mut self,
        agent: Option<&str>,
        event_id: Option<&str>,
        data: SkillInvokedData,
        out: &mut Vec<Output>,
    ) {
        let Some(scope) = self.scope(agent, None) else {
            return;
        };
        let Some(turn) = &mut self.turn else {
            return;
        };
        let shown = turn
            .tools
            .values()
            .any(|tool| tool.name == tools::SKILL && !tool.completed && tool.scope == scope);
        if shown {
            return;
        }
        turn.skills += 1;
        let id = match event_id {
            Some(id) => format!("skill-{id}"),
            None => format!("skill-{}-{}", turn.id, turn.skills),
        };
        let name = if data.name.is_empty() {
            "skill".to_owned()
        } else {
            data.name
        };
        let message = format!("Read skill {name}");
        let input = data.path.map(|path| json!({ "path": path }).to_string());
        if !self.ensure_started(&scope, &id, tools::SKILL, None, out) {
            return;
        }
        if let Some(tool) = self.turn.as_mut().and_then(|turn| turn.tools.get_mut(&id)) {
            tool.completed = true;
        }
        self.emit(
            NormEvent::ToolReady {
                scope: scope.clone(),
                tool_call_id: id.clone(),
                invocation_message: message.clone(),
                tool_input: input,
                auto_approved: true,
                meta: None,
            },
            out,
        );
        self.emit(
            NormEvent::ToolCompleted {
                scope,
                tool_call_id: id,
                success: true,
                past_tense_message: Some(message),
                content: Vec::new(),
                structured_content: None,
                error: None,
            },
            out,
        );
    }
}

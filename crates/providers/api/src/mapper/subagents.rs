//! Scopes and subagents: entering a scope, opening, starting and ending subagent chats.

use super::*;

impl TurnMap {
    /// Resolves a scope to the parent id its signals carry, announcing a new subagent first.
    /// `None` means "drop the event" (an invalid id or a subagent that already ended).
    pub(super) fn enter_scope(
        &mut self,
        scope: &Scope,
        out: &mut Emitter<'_>,
    ) -> Option<Option<SafeId>> {
        let Some(parent) = scope.parent_tool_call_id() else {
            return Some(None);
        };
        let parent = valid_id(parent, "subagent scope")?;
        match self.subagents.get(parent.as_str()) {
            Some(SubagentStatus::Open) => Some(Some(parent)),
            Some(SubagentStatus::Closed) => {
                tracing::warn!(
                    parent = parent.as_str(),
                    "dropping an event of a subagent that already ended"
                );
                None
            }
            None => {
                let grandparent = self
                    .tools
                    .get(parent.as_str())
                    .and_then(|tool| tool.scope.clone());
                self.open_subagent(
                    parent.clone(),
                    "subagent".to_owned(),
                    "Subagent".to_owned(),
                    None,
                    None,
                    grandparent,
                    out,
                );
                Some(Some(parent))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn open_subagent(
        &mut self,
        parent: SafeId,
        agent_name: String,
        display_name: String,
        description: Option<String>,
        prompt: Option<String>,
        grandparent: Option<SafeId>,
        out: &mut Emitter<'_>,
    ) {
        self.subagents
            .insert(parent.as_str().to_owned(), SubagentStatus::Open);
        self.subagent_order.push(parent.clone());
        out.signals
            .push(AgentSignal::SubagentStarted(SubagentStarted {
                session: out.session.clone(),
                tool_call_id: parent,
                agent_name,
                agent_display_name: display_name,
                agent_description: None,
                task_description: description,
                task_prompt: prompt,
                parent_tool_call_id: grandparent,
            }));
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn subagent_started(
        &mut self,
        parent: &str,
        agent_name: String,
        display_name: String,
        description: Option<String>,
        prompt: Option<String>,
        grandparent: Option<&str>,
        out: &mut Emitter<'_>,
    ) {
        let Some(parent) = valid_id(parent, "subagent") else {
            return;
        };
        let grandparent = match grandparent {
            None => None,
            Some(id) => match valid_id(id, "subagent's parent") {
                Some(id) => Some(id),
                None => return,
            },
        };
        if self.subagents.contains_key(parent.as_str()) {
            tracing::debug!(
                parent = parent.as_str(),
                "ignoring a second start of a subagent"
            );
            return;
        }
        self.open_subagent(
            parent,
            agent_name,
            display_name,
            description,
            prompt,
            grandparent,
            out,
        );
    }

    pub(super) fn subagent_ended(&mut self, parent: &str, out: &mut Emitter<'_>) {
        let Some(parent) = valid_id(parent, "subagent") else {
            return;
        };
        let previous = self
            .subagents
            .insert(parent.as_str().to_owned(), SubagentStatus::Closed);
        if previous == Some(SubagentStatus::Open) {
            out.signals
                .push(AgentSignal::SubagentCompleted(SubagentCompleted {
                    session: out.session.clone(),
                    tool_call_id: parent,
                }));
        }
    }

    /// Completes every subagent still open (their chats' turns end with the parent's).
    pub(super) fn close_subagents(&mut self, out: &mut Emitter<'_>) {
        for parent in std::mem::take(&mut self.subagent_order) {
            if self.subagents.get(parent.as_str()) == Some(&SubagentStatus::Open) {
                tracing::debug!(
                    parent = parent.as_str(),
                    "completing a subagent at turn end"
                );
                self.subagent_ended(parent.as_str(), out);
            }
        }
    }
}

//! Response parts: ids, streamed deltas, whole parts.

use super::*;

impl TurnMap {
    /// A new part id derived from the turn and stream ids, unique within the turn.
    pub(super) fn new_part_id(&mut self, stream_id: &str) -> String {
        let base = format!("{}#{stream_id}", self.id);
        let mut id = base.clone();
        let mut n = 2;
        while self.part_ids.contains(&id) {
            id = format!("{base}#{n}");
            n += 1;
        }
        self.part_ids.insert(id.clone());
        id
    }

    pub(super) fn delta(
        &mut self,
        kind: PartKind,
        scope: &Scope,
        stream_id: String,
        text: String,
        out: &mut Emitter<'_>,
    ) {
        let Some(parent) = self.enter_scope(scope, out) else {
            return;
        };
        let key = parent.as_ref().map(|p| p.as_str().to_owned());
        let open = self.scopes.entry(key.clone()).or_default().open(kind);
        if let Some(part) = open.as_ref().filter(|part| part.stream_id == stream_id) {
            if text.is_empty() {
                return;
            }
            let (turn_id, part_id) = (self.id.clone(), part.part_id.clone());
            let action = match kind {
                PartKind::Markdown => StateAction::ChatDelta(ChatDeltaAction {
                    turn_id,
                    part_id,
                    content: text,
                    meta: None,
                }),
                PartKind::Reasoning => StateAction::ChatReasoning(ChatReasoningAction {
                    turn_id,
                    part_id,
                    content: text,
                    meta: None,
                }),
            };
            out.action(parent.as_ref(), action);
            return;
        }
        self.new_part(kind, parent.as_ref(), key, stream_id, text, out);
    }

    pub(super) fn full(
        &mut self,
        kind: PartKind,
        scope: &Scope,
        stream_id: String,
        text: String,
        out: &mut Emitter<'_>,
    ) {
        let key = scope.parent_tool_call_id().map(str::to_owned);
        if self.streams.contains(&(kind, key, stream_id.clone())) {
            tracing::trace!(stream_id, "a full block of a streamed part: already shown");
            return;
        }
        if text.is_empty() {
            return;
        }
        let Some(parent) = self.enter_scope(scope, out) else {
            return;
        };
        let key = parent.as_ref().map(|p| p.as_str().to_owned());
        self.new_part(kind, parent.as_ref(), key, stream_id, text, out);
    }

    pub(super) fn new_part(
        &mut self,
        kind: PartKind,
        parent: Option<&SafeId>,
        key: Option<String>,
        stream_id: String,
        content: String,
        out: &mut Emitter<'_>,
    ) {
        let part_id = self.new_part_id(&stream_id);
        self.streams.insert((kind, key.clone(), stream_id.clone()));
        let part = match kind {
            PartKind::Markdown => ResponsePart::Markdown(MarkdownResponsePart {
                id: part_id.clone(),
                content,
            }),
            PartKind::Reasoning => ResponsePart::Reasoning(ReasoningResponsePart {
                id: part_id.clone(),
                content,
            }),
        };
        *self.scopes.entry(key).or_default().open(kind) = Some(OpenPart { stream_id, part_id });
        out.action(
            parent,
            StateAction::ChatResponsePart(ChatResponsePartAction {
                turn_id: self.id.clone(),
                part,
                meta: None,
            }),
        );
    }
}

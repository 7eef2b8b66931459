//! Chat ancestry and claims: which connection answers an entry, and what its claim covers.

use super::*;

impl Core {
    /// Records (or clears) the chat that spawned `chat` (a subagent chat's parent).
    pub(crate) fn set_parent(
        &mut self,
        chat: &Uri,
        parent: Option<Uri>,
        now: Instant,
        fx: &mut Effects,
    ) {
        if self.parents.get(chat) == parent.as_ref() {
            return;
        }
        if let Some(old) = self.parents.remove(chat)
            && let Some(siblings) = self.children.get_mut(&old)
        {
            siblings.remove(chat);
            if siblings.is_empty() {
                self.children.remove(&old);
            }
        }
        if let Some(parent) = parent
            && &parent != chat
        {
            self.children
                .entry(parent.clone())
                .or_default()
                .insert(chat.clone());
            self.parents.insert(chat.clone(), parent);
        }
        let affected = self.entries_under_chat(chat);
        self.evaluate_all(&affected, now, fx);
    }

    pub(super) fn ancestors(&self, chat: &Uri) -> impl Iterator<Item = &Uri> {
        let mut current = self.parents.get(chat);
        let mut steps = 0;
        std::iter::from_fn(move || {
            let found = current?;
            steps += 1;
            if steps > MAX_ANCESTRY || found == chat {
                return None;
            }
            current = self.parents.get(found);
            Some(found)
        })
    }

    /// Entries of `chat` and of every chat below it.
    pub(super) fn entries_under_chat(&self, chat: &Uri) -> Vec<Id> {
        let mut out = Vec::new();
        let mut stack = vec![chat];
        let mut visited = 0;
        while let Some(current) = stack.pop() {
            visited += 1;
            if visited > 4096 {
                break;
            }
            if let Some(ids) = self.by_chat.get(current) {
                out.extend(ids.values().cloned());
            }
            if let Some(kids) = self.children.get(current) {
                stack.extend(kids.iter().filter(|k| *k != chat));
            }
        }
        out
    }

    // ----- claims ----------------------------------------------------------------------------

    pub(crate) fn claim(
        &mut self,
        scope: ClaimScope,
        claimant: Claimant,
        now: Instant,
        fx: &mut Effects,
    ) -> ClaimId {
        self.claims.next += 1;
        let id = ClaimId(self.claims.next);
        if self.disposed {
            return id;
        }
        match &scope {
            ClaimScope::Key(ClaimKey::ToolCall(key)) => {
                self.claims
                    .by_call
                    .entry(key.clone())
                    .or_default()
                    .insert(id, claimant);
            }
            ClaimScope::Key(ClaimKey::Input(key)) => {
                self.claims
                    .by_input
                    .entry(key.clone())
                    .or_default()
                    .insert(id, claimant);
            }
            ClaimScope::Chat(chat) => {
                self.claims
                    .by_chat
                    .entry(chat.clone())
                    .or_default()
                    .insert(id, claimant);
            }
        }
        let affected = self.entries_in_scope(&scope);
        self.claims.scopes.insert(id, scope);
        self.evaluate_all(&affected, now, fx);
        id
    }

    pub(crate) fn release(&mut self, id: ClaimId, now: Instant, fx: &mut Effects) {
        let Some(scope) = self.claims.scopes.remove(&id) else {
            return;
        };
        fn remove<K: std::hash::Hash + Eq>(
            map: &mut Map<K, BTreeMap<ClaimId, Claimant>>,
            key: &K,
            id: ClaimId,
        ) {
            if let Some(list) = map.get_mut(key) {
                list.remove(&id);
                if list.is_empty() {
                    map.remove(key);
                }
            }
        }
        match &scope {
            ClaimScope::Key(ClaimKey::ToolCall(key)) => remove(&mut self.claims.by_call, key, id),
            ClaimScope::Key(ClaimKey::Input(key)) => remove(&mut self.claims.by_input, key, id),
            ClaimScope::Chat(chat) => remove(&mut self.claims.by_chat, chat, id),
        }
        let affected = self.entries_in_scope(&scope);
        self.evaluate_all(&affected, now, fx);
        if let ClaimScope::Key(ClaimKey::ToolCall(key)) = &scope {
            self.release_call(key, now, fx);
        }
    }

    pub(super) fn entries_in_scope(&self, scope: &ClaimScope) -> Vec<Id> {
        match scope {
            ClaimScope::Key(ClaimKey::ToolCall(key)) => self
                .calls
                .get(key)
                .map(|c| c.entries.clone())
                .unwrap_or_default(),
            ClaimScope::Key(ClaimKey::Input(key)) => self
                .inputs
                .get(key)
                .map(|i| i.entries.clone())
                .unwrap_or_default(),
            ClaimScope::Chat(chat) => self.entries_under_chat(chat),
        }
    }

    /// The oldest live claimant of an obligation of `chat`, across key claims, chat claims on
    /// its chat and chat claims on its ancestors.
    pub(super) fn oldest_claimant(
        &self,
        chat: &Uri,
        key: KeyRef<'_>,
    ) -> Option<(ClaimId, &Claimant)> {
        let mut best = match key {
            KeyRef::Call(key) => older(None, self.claims.by_call.get(key)),
            KeyRef::Input(key) => older(None, self.claims.by_input.get(key)),
        };
        if self.claims.by_chat.is_empty() {
            return best;
        }
        best = older(best, self.claims.by_chat.get(chat));
        let reach_ancestors = match key {
            KeyRef::Call(_) => true,
            KeyRef::Input(_) => self.config.parent_claims_subagent_inputs,
        };
        if reach_ancestors {
            for ancestor in self.ancestors(chat) {
                best = older(best, self.claims.by_chat.get(ancestor));
            }
        }
        best
    }

    pub(super) fn entry_claimant(&self, entry: &Entry) -> Option<&Claimant> {
        let key = match &entry.class {
            Class::Input { key } => KeyRef::Input(key),
            class => KeyRef::Call(class.tool_call()?),
        };
        self.oldest_claimant(&entry.chat, key).map(|(_, c)| c)
    }

    pub(super) fn call_claimed(&self, key: &ToolCallKey) -> bool {
        self.oldest_claimant(&key.chat, KeyRef::Call(key)).is_some()
    }

    // ----- the decision ----------------------------------------------------------------------
}

//! The session catalog: a live session's summary, a stored one's, the paged `listSessions`, the
//! spellings one session goes by, and which session a chat a client names belongs to.

use super::*;
use agenthost_services::spend::{BadSince, SpendParams, SpendReport};

impl SessionService {
    /// The root catalog entry of a live session (AHP §4.3).
    pub fn summary(&self, session: &SessionUri) -> Option<SessionSummary> {
        let created_at = self
            .store
            .session(session)
            .ok()
            .flatten()
            .map_or_else(now_iso, |record| record.created_at);
        self.state.read(|h| {
            let state = h.session(session)?;
            let chats = h
                .session_chats(session)
                .map(|(uri, chat)| (uri.as_str(), chat));
            let aggregate = aggregate_session_status(state, chats);
            let chats = state
                .chats
                .iter()
                .map(|chat| SessionChatSummary {
                    resource: chat.resource.clone(),
                    title: chat.title.clone(),
                    origin: chat.origin.clone(),
                    interactivity: chat.interactivity,
                    status: Some(chat.status),
                    changes: chat.changes.clone(),
                })
                .collect();
            Some(SessionSummary {
                provider: state.provider.clone(),
                title: state.title.clone(),
                status: aggregate.status,
                activity: state.activity.clone(),
                origin: state.origin.clone(),
                project: state.project.clone(),
                working_directories: state.working_directories.clone(),
                annotations: state.annotations.clone(),
                resource: session.to_string(),
                modified_at: aggregate.modified_at.unwrap_or_else(|| created_at.clone()),
                created_at,
                changes: None,
                meta: agenthost_protocol::usage::cost_keys(state.meta.as_ref()),
                chats: Some(chats),
                default_chat: state.default_chat.clone(),
            })
        })
    }

    pub(super) fn stored_summary(
        &self,
        record: &SessionRecord,
    ) -> Result<SessionSummary, ServiceError> {
        let chats = self.store.chats(&record.uri)?;
        let spend = self.store.session_spend(&record.uri)?;
        let state = restored_session(record, &chats);
        Ok(SessionSummary {
            provider: record.provider.clone(),
            title: record.title.clone(),
            status: state.status,
            activity: None,
            origin: None,
            project: None,
            working_directories: Some(record.working_directories.clone()),
            annotations: None,
            resource: record.uri.to_string(),
            created_at: record.created_at.clone(),
            modified_at: record.modified_at.clone(),
            changes: None,
            meta: spend_meta(&spend),
            chats: Some(
                chats
                    .iter()
                    .map(|chat| {
                        let summary = stored_chat_summary(chat);
                        SessionChatSummary {
                            resource: summary.resource,
                            title: summary.title,
                            origin: summary.origin,
                            interactivity: summary.interactivity,
                            status: Some(summary.status),
                            changes: None,
                        }
                    })
                    .collect(),
            ),
            default_chat: record.default_chat.as_ref().map(ChatUri::to_string),
        })
    }

    /// `x-spend`: what each session and provider cost since `params.since`, from the spend
    /// ledger.
    pub async fn spend(&self, params: &SpendParams) -> Result<SpendReport, ServiceError> {
        let bad = |e: BadSince| ServiceError::InvalidParams(e.to_string());
        let since = params.since().map_err(bad)?;
        Ok(self
            .store
            .blocking(|store| spend_report(store, since))
            .await?)
    }

    /// `listSessions`: every stored session (live ones with their live summary), most recently
    /// modified first.
    pub fn list_sessions(&self) -> Result<ListSessionsResult, ServiceError> {
        self.list_sessions_page(None, None)
    }

    /// `listSessions` with `limit` and `cursor` (AHP §9): newest first; at most `limit` items
    /// (none: every session, as VS Code expects), after the item `cursor` names; `nextCursor`
    /// when more follow. A cursor is the position of the last item of a page, so a page stays
    /// right while sessions are added or removed.
    pub fn list_sessions_page(
        &self,
        limit: Option<i64>,
        cursor: Option<&str>,
    ) -> Result<ListSessionsResult, ServiceError> {
        let bad = |error: PageError| ServiceError::InvalidParams(error.to_string());
        let limit = page_limit(limit).map_err(bad)?;
        let after = cursor.map(CatalogCursor::parse).transpose().map_err(bad)?;
        let Some(limit) = limit else {
            let mut items = self.all_sessions()?;
            sort_catalog(&mut items);
            return Ok(ListSessionsResult {
                next_cursor: None,
                items,
            });
        };
        // Live sessions are in memory (few: idle ones are evicted) and may be newer than their
        // stored row; every other session comes from one indexed page query.
        let live_uris: Vec<SessionUri> = self.state.read(|h| h.session_uris().cloned().collect());
        let live: Vec<SessionSummary> = live_uris.iter().filter_map(|u| self.summary(u)).collect();
        let stored = self.store.sessions_page(
            after
                .as_ref()
                .map(|c| (c.modified_at.as_str(), c.resource.as_str())),
            limit.saturating_add(live.len()).saturating_add(1),
        )?;
        let mut candidates = Vec::with_capacity(stored.len() + live.len());
        for record in stored.iter().filter(|r| !live_uris.contains(&r.uri)) {
            candidates.push(self.stored_summary(record)?);
        }
        candidates.extend(
            live.into_iter()
                .filter(|s| after.as_ref().is_none_or(|c| c.precedes(s))),
        );
        let (items, next_cursor) = cut_page(candidates, limit);
        Ok(ListSessionsResult { next_cursor, items })
    }

    /// Every session, live or stored (unordered).
    pub(super) fn all_sessions(&self) -> Result<Vec<SessionSummary>, ServiceError> {
        let mut items = Vec::new();
        for record in self.store.sessions()? {
            match self.summary(&record.uri) {
                Some(live) => items.push(live),
                None => items.push(self.stored_summary(&record)?),
            }
        }
        Ok(items)
    }

    /// The session a client's URI names. `ahp-session:/<id>` and `<provider>:/<id>` spell one
    /// session (VS Code main names it the first way, VS Code 1.141 the second): `uri` itself when
    /// the host knows it so, else the session under its other spelling when that session's
    /// provider is the one named; `None` for a session the host does not know.
    pub fn session_spelling(&self, uri: &SessionUri) -> Option<SessionUri> {
        if self.session_provider(uri).is_some() {
            return Some(uri.clone());
        }
        self.spellings_of(uri).into_iter().find(|other| {
            other.same_session(uri)
                && self.session_provider(other).is_some_and(|provider| {
                    uri.provider_scheme().or(other.provider_scheme()) == Some(provider.as_str())
                })
        })
    }

    /// The provider of a live or stored session; `None` for an unknown one.
    pub(super) fn session_provider(&self, uri: &SessionUri) -> Option<String> {
        self.state
            .read(|h| h.session(uri.as_str()).map(|s| s.provider.clone()))
            .or_else(|| {
                let record = self.store.session(uri).ok().flatten()?;
                Some(record.provider)
            })
    }

    /// `uri`'s id under every other spelling the host could know it by: `ahp-session:/<id>`
    /// and `<provider>:/<id>` for each advertised provider.
    pub(super) fn spellings_of(&self, uri: &SessionUri) -> Vec<SessionUri> {
        let providers: Vec<String> = self
            .state
            .read(|h| h.root().agents.iter().map(|a| a.provider.clone()).collect());
        std::iter::once(SessionUri::canonical(uri.id().clone()))
            .chain(providers.iter().filter_map(|p| uri.respelled(p).ok()))
            .filter(|other| other != uri)
            .collect()
    }

    /// The session `chat` belongs to: live, or as stored; `None` for an unknown chat.
    pub fn chat_session(&self, chat: &ChatUri) -> Option<SessionUri> {
        if let Some(session) = self.state.read(|h| h.chat_session(chat).cloned()) {
            return Some(session);
        }
        let record = self.store.chat(chat).ok()??;
        Some(record.session)
    }

    /// Resolves a chat URI a client names: VS Code derives `ahp-chat://default/<session>` itself,
    /// so that form is answered with the session's default chat.
    pub fn resolve_chat(&self, uri: &str) -> String {
        match ChatUri::parse(uri) {
            Ok(chat) => self.resolve_chat_uri(&chat).into_string(),
            Err(_) => uri.to_owned(),
        }
    }

    /// [`resolve_chat`](Self::resolve_chat) for a chat URI already parsed.
    pub fn resolve_chat_uri(&self, chat: &ChatUri) -> ChatUri {
        let Ok(Some(session)) = chat.default_chat_session() else {
            return chat.clone();
        };
        self.state
            .read(|h| {
                let default = h.session(session.as_str())?.default_chat.as_deref()?;
                // A default chat not restored yet is only in the session's state (first reading).
                h.chat_uri(default)
                    .cloned()
                    .or_else(|| ChatUri::parse(default).ok())
            })
            .unwrap_or_else(|| chat.clone())
    }
}

//! Client compatibility: every allowance the host makes for a client's dialect, in one place.
//!
//! The host speaks AHP 1.0. VS Code's Agents window speaks a dialect of it (its URI shapes, the
//! quirks below, the 0.9 wire surface); everything the transport or the `agenthost_server::Host`
//! does differently because of that lives here and is called from exactly one site each — all
//! of it in the server. Pure translation: no I/O, no async.
//!
//! **Tolerances, for every connection.** They are harmless for a client that follows the
//! specification, so they are applied without looking at who the client is:
//!
//! | VS Code quirk | Where it is met |
//! |---|---|
//! | `reconnect` (and `initialize`) without `channel` | [`fill_missing_channel`], called by the connection's parameter decoder |
//! | VS Code derives the default chat `ahp-chat://default/<base64url(session)>` itself, padded or not | [`chat_spelling`]: any spelling of a derived chat URI becomes the one the host publishes, before the chat is resolved |
//! | `completions` on the session URI | `agenthost_service::AgentService::completion_chat`: a session URI means its default chat |
//! | a `session/titleChanged` on the chat channel (a rename) | the reducers accept that one pairing (`agenthost-reducers` validation), the `sessionTitle` contribution applies it to the session (`session/titleChanged`, `session/chatUpdated`) and the host's `summaries` observer announces `root/sessionSummaryChanged`; nothing here |
//! | the `root/configChanged` burst, every one with `clientSeq` 0 | nothing to do: the host never deduplicates by `(clientId, clientSeq)` nor requires it to grow; each is echoed (merged into root `config`) or rejected once |
//! | client tools and synced customizations in `createSession.activeClient` | [`create_session_params`]: entries the 1.0 wire types cannot read are left out, the session is created |
//! | `ping` at any time, before `initialize` too | the connection's reader answers it ahead of queued work (`connection` module) |
//! | `disposeSession` of a session it still shows | `disposeSession` frees live state only (`agenthost-service`): history, listing and restore stay; no `root/sessionRemoved` |
//!
//! **URIs: one session, two spellings.** The host publishes VS Code's shapes: a client-named
//! `<provider>:/<id>` session keeps that URI (and `createSession` takes the provider from the
//! scheme when `provider` is absent), and every session's default chat *is*
//! `ahp-chat://default/<base64url(session URI)>` (`ChatUri::default_for`). VS Code main creates
//! `ahp-session:/<id>` sessions, while a 1.141 window turns every listed `ahp-session:/<id>` into
//! `<provider>:/<id>` before subscribing. So the two spellings name one session
//! ([`UriSpellings`]): what a connection sends in the other spelling is read in the host's
//! (`agenthost_server::ProtocolHandler::to_host_spelling`, before any
//! request or notification is handled), and every frame it is sent is written in its own — the
//! session URI and the URIs derived from it. This per-connection URI spelling is part of the wire
//! surface.
//!
//! **Per connection: the dialect and the wire surface.** [`ClientDialect::detect`] recognises
//! VS Code by `clientInfo.name` (`vscode-…`) or a `vscode.*` `_meta` key; it is remembered per
//! `clientId` (a `reconnect` carries neither) and only reported as the client kind to
//! contributions — no behaviour depends on it. The negotiated version does: a `0.9.x`/`0.10.x`
//! peer gets the 0.9 surface, so [`allowed_on`] holds back the actions AHP 1.0 introduced
//! ([`INTRODUCED_IN_1_0`]) from its frames and replays; `x-` actions pass.

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::commands::{CreateSessionParams, InitializeParams};
use crate::state::{ClientPluginCustomization, ToolDefinition};
use crate::{ActionEnvelope, ChatUri, SessionUri};
use serde_json::{Map, Value};

use crate::WireSurface;

/// The client kind reported for VS Code (`ClientContext::client_kind`).
pub const VSCODE_CLIENT_KIND: &str = "vscode";

/// Which dialect of AHP a client speaks, as far as the host can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientDialect {
    /// VS Code's Agents window (or an editor window): `clientInfo.name` `vscode-…`, or a
    /// `vscode.*` key in `initialize._meta`.
    VsCode,
    /// Anything else: the specification.
    Spec,
}

impl ClientDialect {
    /// The dialect an `initialize` announces.
    pub fn detect(params: &InitializeParams) -> Self {
        let named = params
            .client_info
            .as_ref()
            .is_some_and(|info| info.name.starts_with("vscode-"));
        let meta = params
            .meta
            .as_ref()
            .is_some_and(|meta| meta.keys().any(|key| key.starts_with("vscode.")));
        if named || meta {
            Self::VsCode
        } else {
            Self::Spec
        }
    }

    /// The client kind contributions see (`ClientContext::client_kind`).
    pub fn client_kind(self) -> Option<String> {
        match self {
            Self::VsCode => Some(VSCODE_CLIENT_KIND.to_owned()),
            Self::Spec => None,
        }
    }
}

/// Fills a missing `channel` of `initialize`/`reconnect` params with the root URI: VS Code sends
/// `reconnect` as `{clientId, lastSeenServerSeq, subscriptions}` only.
pub fn fill_missing_channel(params: &mut Map<String, Value>) {
    params
        .entry("channel")
        .or_insert_with(|| Value::from(crate::ROOT_RESOURCE_URI));
}

/// The spelling the host publishes for a chat URI a client names: a derived default chat
/// (`ahp-chat://default/<x>`, with or without base64 padding, `=` or `%3D`) becomes
/// `ChatUri::default_for` of the session it encodes; anything else is unchanged. VS Code computes
/// these URIs itself instead of reading the published catalog.
pub fn chat_spelling(uri: &str) -> Cow<'_, str> {
    let Ok(chat) = ChatUri::parse(uri) else {
        return Cow::Borrowed(uri);
    };
    match chat.default_chat_session() {
        Ok(Some(session)) => {
            let published = ChatUri::default_for(&session);
            if published.as_str() == uri {
                Cow::Borrowed(uri)
            } else {
                Cow::Owned(published.into_string())
            }
        }
        _ => Cow::Borrowed(uri),
    }
}

/// `createSession` params that do not decode even without the client entries the host may
/// leave out: serde's explanation of the strict decoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidCreateSession(pub String);

/// Decodes `createSession` params, tolerating what a client sends about itself: an
/// `activeClient.tools` or `activeClient.customizations` entry the 1.0 wire types cannot read (a
/// shape of an older protocol version, a field missing) is dropped instead
/// of failing the whole request, since VS Code sends its tools and synced customizations with
/// every session and no agent of this host depends on them. Anything else malformed is still
/// "invalid params". `Ok` carries how many entries were left out, for the caller to log.
pub fn create_session_params(
    raw: Option<Value>,
) -> Result<(CreateSessionParams, usize), InvalidCreateSession> {
    let raw = raw.unwrap_or(Value::Null);
    let strict = match serde_json::from_value::<CreateSessionParams>(raw.clone()) {
        Ok(params) => return Ok((params, 0)),
        Err(error) => InvalidCreateSession(error.to_string()),
    };
    let mut lenient = raw;
    let Some(client) = lenient
        .get_mut("activeClient")
        .and_then(Value::as_object_mut)
    else {
        return Err(strict);
    };
    let mut dropped = 0;
    if let Some(Value::Array(tools)) = client.get_mut("tools") {
        let before = tools.len();
        tools.retain(|tool| serde_json::from_value::<ToolDefinition>(tool.clone()).is_ok());
        dropped += before - tools.len();
    }
    if let Some(Value::Array(customizations)) = client.get_mut("customizations") {
        let before = customizations.len();
        customizations.retain(|entry| {
            serde_json::from_value::<ClientPluginCustomization>(entry.clone()).is_ok()
        });
        dropped += before - customizations.len();
    }
    if dropped == 0 {
        return Err(strict);
    }
    let params = serde_json::from_value::<CreateSessionParams>(lenient).map_err(|_| strict)?;
    Ok((params, dropped))
}

/// The session URIs one connection spells differently from the host.
///
/// `ahp-session:/<id>` and `<provider>:/<id>` name one session: VS Code main creates and names
/// sessions the first way, VS Code 1.141 turns every listed `ahp-session:/<id>` back into
/// `<provider>:/<id>` before it subscribes. The host knows each session under the spelling it
/// was created with; a connection that names it the other way gets answers and updates in its
/// own spelling — the session URI and every URI derived from it (the default chat
/// `ahp-chat://default/<base64url(session)>`, peer chats `ahp-chat://<id>/<base64url(session)>`,
/// subagent chats, changesets) — and what it sends is read in the host's. The
/// `agenthost_server::Host` finds the pairs (it asks the session service which session a spelling
/// names) and records them here; the connection's writer rewrites each frame it sends.
#[derive(Debug, Default)]
pub struct UriSpellings {
    pairs: std::sync::RwLock<Vec<Spelling>>,
    /// Spellings the host already resolved for this connection (its own, or a pair's).
    resolved: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// One session's two spellings, each with the base64url form derived URIs carry.
#[derive(Debug, Clone)]
struct Spelling {
    host: String,
    client: String,
    host_b64: String,
    client_b64: String,
}

/// At most this many sessions are remembered per connection (a client naming endless sessions
/// makes the host look them up again instead of growing this set).
const MAX_RESOLVED: usize = 4096;

impl UriSpellings {
    /// Whether the host already resolved `uri` for this connection.
    pub fn is_resolved(&self, uri: &str) -> bool {
        self.resolved_set().contains(uri)
    }

    /// `uri` names the session under its own spelling.
    pub fn resolved_as_itself(&self, uri: &str) {
        let mut resolved = self.resolved_set();
        if resolved.len() < MAX_RESOLVED {
            resolved.insert(uri.to_owned());
        }
    }

    /// This connection names the session `host` as `client`. The first spelling a connection
    /// used for a session stays its spelling.
    pub fn add(&self, host: &SessionUri, client: &SessionUri) {
        self.resolved_as_itself(client.as_str());
        let mut pairs = self
            .pairs
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if pairs.iter().any(|pair| pair.host == host.as_str()) || pairs.len() >= MAX_RESOLVED {
            return;
        }
        pairs.push(Spelling {
            host: host.as_str().to_owned(),
            client: client.as_str().to_owned(),
            host_b64: URL_SAFE_NO_PAD.encode(host.as_str()),
            client_b64: URL_SAFE_NO_PAD.encode(client.as_str()),
        });
    }

    /// A frame for this connection, in its spellings (the frame itself when it names none of
    /// the sessions it spells differently).
    pub fn to_client(&self, frame: &Arc<str>) -> Arc<str> {
        let pairs = self.pairs();
        let mut text: Option<String> = None;
        for pair in pairs.iter() {
            let current = text.as_deref().unwrap_or(frame);
            if let Some(next) = respell(
                current,
                &pair.host,
                &pair.client,
                &pair.host_b64,
                &pair.client_b64,
            ) {
                text = Some(next);
            }
        }
        text.map_or_else(|| Arc::clone(frame), Arc::from)
    }

    /// Rewrites every string of a client's params from its spellings into the host's.
    pub fn to_host(&self, params: &mut Value) {
        let pairs = self.pairs();
        if pairs.is_empty() {
            return;
        }
        visit_strings(params, &mut |text| {
            let mut current = chat_spelling(text).into_owned();
            let mut changed = current != *text;
            for pair in pairs.iter() {
                if let Some(next) = respell(
                    &current,
                    &pair.client,
                    &pair.host,
                    &pair.client_b64,
                    &pair.host_b64,
                ) {
                    current = next;
                    changed = true;
                }
            }
            changed.then_some(current)
        });
    }

    fn pairs(&self) -> std::sync::RwLockReadGuard<'_, Vec<Spelling>> {
        self.pairs
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn resolved_set(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.resolved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The sessions a client's params name: every string that is a session URI, or a URI derived
/// from one (a derived default, peer or subagent chat, a changeset), without repeats.
pub fn named_sessions(params: &Value) -> Vec<SessionUri> {
    let mut found: Vec<SessionUri> = Vec::new();
    let mut note = |session: SessionUri| {
        if !found.contains(&session) {
            found.push(session);
        }
    };
    let mut strings = Vec::new();
    collect_strings(params, &mut strings);
    for text in strings {
        if text.len() > crate::uri::MAX_URI_LEN || !text.contains(":/") {
            continue;
        }
        if let Ok(session) = SessionUri::parse(text) {
            note(session);
        } else if let Ok(chat) = ChatUri::parse(text) {
            if let Some(session) = chat.derived_session() {
                note(session);
            }
        } else if let Ok(changeset) = crate::uri::ChangesetUri::parse(text) {
            note(changeset.session_uri().clone());
        }
    }
    found
}

fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}

fn visit_strings(value: &mut Value, rewrite: &mut impl FnMut(&str) -> Option<String>) {
    match value {
        Value::String(text) => {
            if let Some(next) = rewrite(text) {
                *text = next;
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| visit_strings(item, rewrite)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|item| visit_strings(item, rewrite)),
        _ => {}
    }
}

/// `text` with every whole occurrence of the session URI `from` replaced by `to`, and of the
/// base64url form `from_b64` (after a `/`, as derived URIs carry it) by `to_b64`; `None` when
/// there is none. "Whole": the URI is not followed by another id character (so `…/ab` is not
/// found in `…/abc`) nor preceded by a scheme character; the base64 form not followed by another
/// base64url character.
fn respell(text: &str, from: &str, to: &str, from_b64: &str, to_b64: &str) -> Option<String> {
    if !text.contains(from) && !text.contains(from_b64) {
        return None;
    }
    fn id_char(c: char) -> bool {
        c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '%' | '+')
    }
    fn b64_char(c: char) -> bool {
        c.is_ascii_alphanumeric() || matches!(c, '-' | '_')
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let uri = rest.starts_with(from)
            && !text[..at].chars().next_back().is_some_and(id_char)
            && !rest[from.len()..].chars().next().is_some_and(id_char);
        let b64 = !uri
            && rest.starts_with(from_b64)
            && text[..at].ends_with('/')
            && !rest[from_b64.len()..].chars().next().is_some_and(b64_char);
        let (matched, replacement) = match (uri, b64) {
            (true, _) => (from.len(), to),
            (_, true) => (from_b64.len(), to_b64),
            _ => {
                at += rest.chars().next().map_or(1, char::len_utf8);
                continue;
            }
        };
        out.push_str(&text[copied..at]);
        out.push_str(replacement);
        at += matched;
        copied = at;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// VS Code's legacy spelling of autopilot, `autoApprove: "autopilot"`, in a session config
/// (`createSession.config`, `session/configChanged.config`): it becomes `mode: "autopilot"`
/// (unless the same config asks for `mode: "plan"`) and `autoApprove: "default"`, as VS Code's
/// own migration does.
pub fn migrate_legacy_autopilot(config: &mut Value) {
    let Some(config) = config.as_object_mut() else {
        return;
    };
    if config.get("autoApprove").and_then(Value::as_str) != Some("autopilot") {
        return;
    }
    config.insert("autoApprove".into(), "default".into());
    if config.get("mode").and_then(Value::as_str) != Some("plan") {
        config.insert("mode".into(), "autopilot".into());
    }
}

/// Action types AHP 1.0 introduced (AHP §5): a peer served the 0.9 surface (VS Code's `0.9.0`
/// and `0.10.0`) is never sent them. `ahp-types` has no such table; extend this one with every
/// action a later version adds.
pub const INTRODUCED_IN_1_0: [&str; 7] = [
    "session/chatsReordered",
    "session/mcpServerBackgroundRequested",
    "chat/backgroundWorkSet",
    "chat/backgroundWorkRemoved",
    "chat/movableChanged",
    "chat/changesetsChanged",
    "chat/canvasesChanged",
];

/// Whether an action of `action_type` may be sent to a peer served `surface`.
pub fn allowed_on(surface: WireSurface, action_type: &str) -> bool {
    match surface {
        WireSurface::V1_0 => true,
        WireSurface::V0_9 => !INTRODUCED_IN_1_0.contains(&action_type),
    }
}

/// Whether the pre-encoded frame may be sent to a peer served `surface` (`None`: not yet
/// negotiated, so everything passes). Cheap on every frame: one substring search finds the
/// envelope's action type (the envelope's `channel` is a string and its `action` comes next, tag
/// first, so the first match is the envelope's own); the surface is looked up only for a gated
/// type.
pub fn frame_allowed(surface: impl FnOnce() -> Option<WireSurface>, frame: &str) -> bool {
    let Some(action_type) = frame_action_type(frame) else {
        return true;
    };
    if !INTRODUCED_IN_1_0.contains(&action_type) {
        return true;
    }
    surface().is_none_or(|surface| allowed_on(surface, action_type))
}

/// The `action.type` of an `action` notification frame as `notification_frame` encodes it.
fn frame_action_type(frame: &str) -> Option<&str> {
    const ACTION_TYPE: &str = "\"action\":{\"type\":\"";
    let start = frame.find(ACTION_TYPE)? + ACTION_TYPE.len();
    let rest = frame.get(start..)?;
    rest.find('"').and_then(|end| rest.get(..end))
}

/// Whether a replayed envelope may be sent to a peer served `surface` (the `reconnect` answer's
/// `actions`, gated like live frames).
pub fn envelope_allowed(surface: WireSurface, envelope: &ActionEnvelope) -> bool {
    if surface == WireSurface::V1_0 {
        return true;
    }
    let action = serde_json::to_value(&envelope.action).ok();
    match action
        .as_ref()
        .and_then(|a| a.get("type"))
        .and_then(Value::as_str)
    {
        Some(action_type) => allowed_on(surface, action_type),
        None => true,
    }
}

#[cfg(test)]
#[path = "dialect_tests.rs"]
mod tests;

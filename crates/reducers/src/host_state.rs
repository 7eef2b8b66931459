//! [`HostState`]: every channel state of the host, addressed by URI.

use std::collections::HashMap;
use std::fmt;

use agenthost_protocol::ahp_types::ROOT_RESOURCE_URI;
use agenthost_protocol::ahp_types::state::{
    AnnotationsState, AutomationRunState, AutomationState, CanvasState, ChangesetState, ChatState,
    ResourceWatchState, RootState, SessionState, TerminalState,
};
use agenthost_protocol::{ActionEnvelope, ChatUri, SessionUri, StateAction};
use ahp::reducers::{self, ReduceOutcome};

use crate::validation::{self, ChannelRef, Rejection, RejectionReason};

/// The kind of state a channel holds; decides which canonical reducer an action goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// `ahp-root://`.
    Root,
    /// A session (`ahp-session:/<id>` or `<provider>:/<id>`).
    Session,
    /// A chat of a session.
    Chat,
    /// A terminal.
    Terminal,
    /// A changeset view.
    Changeset,
    /// A session's inline annotations.
    Annotations,
    /// A resource watch.
    ResourceWatch,
    /// A canvas.
    Canvas,
    /// An automation definition.
    Automation,
    /// One run of an automation.
    AutomationRun,
}

impl ChannelKind {
    /// Lower-case name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            ChannelKind::Root => "root",
            ChannelKind::Session => "session",
            ChannelKind::Chat => "chat",
            ChannelKind::Terminal => "terminal",
            ChannelKind::Changeset => "changeset",
            ChannelKind::Annotations => "annotations",
            ChannelKind::ResourceWatch => "resource watch",
            ChannelKind::Canvas => "canvas",
            ChannelKind::Automation => "automation",
            ChannelKind::AutomationRun => "automation run",
        }
    }
}

impl fmt::Display for ChannelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The state of one channel other than the root. Chats are inserted with
/// [`HostState::insert_chat`] because they belong to a session.
#[derive(Debug, Clone, PartialEq)]
pub enum ChannelState {
    /// A session.
    Session(Box<SessionState>),
    /// A chat.
    Chat(Box<ChatState>),
    /// A terminal.
    Terminal(Box<TerminalState>),
    /// A changeset view.
    Changeset(Box<ChangesetState>),
    /// Inline annotations of a session.
    Annotations(Box<AnnotationsState>),
    /// A resource watch.
    ResourceWatch(Box<ResourceWatchState>),
    /// A canvas.
    Canvas(Box<CanvasState>),
    /// An automation definition.
    Automation(Box<AutomationState>),
    /// One run of an automation.
    AutomationRun(Box<AutomationRunState>),
}

impl ChannelState {
    /// The kind of this state.
    pub fn kind(&self) -> ChannelKind {
        match self {
            ChannelState::Session(_) => ChannelKind::Session,
            ChannelState::Chat(_) => ChannelKind::Chat,
            ChannelState::Terminal(_) => ChannelKind::Terminal,
            ChannelState::Changeset(_) => ChannelKind::Changeset,
            ChannelState::Annotations(_) => ChannelKind::Annotations,
            ChannelState::ResourceWatch(_) => ChannelKind::ResourceWatch,
            ChannelState::Canvas(_) => ChannelKind::Canvas,
            ChannelState::Automation(_) => ChannelKind::Automation,
            ChannelState::AutomationRun(_) => ChannelKind::AutomationRun,
        }
    }

    fn reduce(&mut self, action: &StateAction) -> ReduceOutcome {
        match self {
            ChannelState::Session(s) => reducers::apply_action_to_session(s, action),
            ChannelState::Chat(s) => reduce_chat(s, action),
            ChannelState::Terminal(s) => reducers::apply_action_to_terminal(s, action),
            ChannelState::Changeset(s) => reducers::apply_action_to_changeset(s, action),
            ChannelState::Annotations(s) => reducers::apply_action_to_annotations(s, action),
            ChannelState::ResourceWatch(s) => reducers::apply_action_to_resource_watch(s, action),
            ChannelState::Canvas(s) => reducers::apply_action_to_canvas(s, action),
            ChannelState::Automation(s) => reducers::apply_action_to_automation(s, action),
            ChannelState::AutomationRun(s) => reducers::apply_action_to_automation_run(s, action),
        }
    }
}

/// The chat reducer plus the one host-defined pairing (AHP §6.3): `session/titleChanged` on a chat
/// channel renames the chat, as VS Code's agent host accepts. The canonical chat reducer reports
/// it out of scope, so the host sets the title itself.
fn reduce_chat(chat: &mut ChatState, action: &StateAction) -> ReduceOutcome {
    if let StateAction::SessionTitleChanged(a) = action {
        if chat.title == a.title {
            return ReduceOutcome::NoOp;
        }
        chat.title.clone_from(&a.title);
        return ReduceOutcome::Applied;
    }
    let ending = match action {
        StateAction::ChatTurnComplete(a) => Some(&a.turn_id),
        StateAction::ChatTurnCancelled(a) => Some(&a.turn_id),
        StateAction::ChatError(a) => Some(&a.turn_id),
        _ => None,
    };
    if let Some(turn_id) = ending {
        repair_start(chat, turn_id);
    }
    reducers::apply_action_to_chat(chat, action)
}

/// A turn can always end: the canonical reducer derives a turn's end from its start and refuses
/// to end one whose start it cannot compute with (a value stored before starts were validated,
/// or a host bug). Such a start becomes the chat's last modification time, or the epoch.
fn repair_start(chat: &mut ChatState, turn_id: &str) {
    let fallback = if validation::usable_start(&chat.modified_at) {
        chat.modified_at.clone()
    } else {
        crate::states::EPOCH.to_owned()
    };
    if let Some(active) = chat.active_turn.as_mut()
        && active.id == turn_id
        && !validation::usable_start(&active.started_at)
    {
        active.started_at = fallback;
    }
}

/// What applying an accepted action did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduced {
    /// The state changed.
    Applied,
    /// The action was recognised but changed nothing (stale turn id, unknown tool call, …).
    NoOp,
}

/// Why an action was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// No such channel. For a client action the specification says: ignore silently, no echo.
    UnknownChannel(String),
    /// The action was refused; the state is unchanged. For a client action, echo it with the
    /// rejection's text as `rejectionReason`.
    Rejected(Rejection),
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::UnknownChannel(channel) => write!(f, "unknown channel {channel:?}"),
            ApplyError::Rejected(rejection) => rejection.fmt(f),
        }
    }
}

impl std::error::Error for ApplyError {}

/// Errors of the structural operations (inserting and removing channels).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// A channel with this URI already exists.
    AlreadyExists(String),
    /// The owning session of a chat does not exist.
    UnknownSession(String),
    /// The URI names the root channel, which always exists and cannot be replaced.
    RootChannel,
    /// Chats belong to a session: insert them with [`HostState::insert_chat`].
    ChatNeedsSession(String),
    /// Sessions are keyed by their typed URI: insert them with [`HostState::insert_session`].
    SessionNeedsUri(String),
    /// A chat's `resource` differs from the URI it is inserted at.
    ResourceMismatch {
        /// The URI the chat was inserted at.
        uri: String,
        /// The chat state's `resource`.
        resource: String,
    },
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::AlreadyExists(uri) => write!(f, "channel {uri:?} already exists"),
            StateError::UnknownSession(uri) => write!(f, "session {uri:?} does not exist"),
            StateError::RootChannel => f.write_str("the root channel cannot be inserted"),
            StateError::ChatNeedsSession(uri) => {
                write!(f, "chat {uri:?} must be inserted with its owning session")
            }
            StateError::SessionNeedsUri(uri) => {
                write!(f, "session {uri:?} must be inserted with its session URI")
            }
            StateError::ResourceMismatch { uri, resource } => {
                write!(f, "chat {uri:?} carries the resource {resource:?}")
            }
        }
    }
}

impl std::error::Error for StateError {}

/// Channel maps hash with foldhash: every action looks its channel up, and SipHash showed up as a
/// measurable share of the routing cost. foldhash is seeded per process, so client-chosen URIs
/// cannot be crafted to collide.
type UriMap<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// Every channel state of the host, addressed by URI, with the chat → session index.
///
/// Applying an action routes it to its channel's canonical reducer. Client actions are first
/// validated ([`crate::validation`]); server actions only have the host invariants checked.
#[derive(Debug, Clone, PartialEq)]
pub struct HostState {
    root: RootState,
    channels: UriMap<ChannelState>,
    /// chat URI → the chat's typed URI and its owning session's.
    chat_session: UriMap<(ChatUri, SessionUri)>,
    /// session URI → the session's typed URI and its chats, in insertion order.
    session_chats: UriMap<(SessionUri, Vec<ChatUri>)>,
}

impl HostState {
    /// A host with the given root state and no other channel.
    pub fn new(root: RootState) -> Self {
        Self {
            root,
            channels: UriMap::default(),
            chat_session: UriMap::default(),
            session_chats: UriMap::default(),
        }
    }

    /// The root state.
    pub fn root(&self) -> &RootState {
        &self.root
    }

    /// The state of any non-root channel.
    pub fn channel(&self, uri: &str) -> Option<&ChannelState> {
        self.channels.get(uri)
    }

    /// The kind of a channel, root included; `None` when it does not exist.
    pub fn channel_kind(&self, uri: &str) -> Option<ChannelKind> {
        if uri == ROOT_RESOURCE_URI {
            return Some(ChannelKind::Root);
        }
        self.channels.get(uri).map(ChannelState::kind)
    }

    /// A session's state.
    pub fn session(&self, uri: &str) -> Option<&SessionState> {
        match self.channels.get(uri) {
            Some(ChannelState::Session(s)) => Some(s),
            _ => None,
        }
    }

    /// A chat's state.
    pub fn chat(&self, uri: &str) -> Option<&ChatState> {
        match self.channels.get(uri) {
            Some(ChannelState::Chat(c)) => Some(c),
            _ => None,
        }
    }

    /// The session that owns a chat.
    pub fn chat_session(&self, chat: &str) -> Option<&SessionUri> {
        self.chat_session.get(chat).map(|(_, session)| session)
    }

    /// The typed URI of an existing chat.
    pub fn chat_uri(&self, chat: &str) -> Option<&ChatUri> {
        self.chat_session.get(chat).map(|(uri, _)| uri)
    }

    /// The typed URI of an existing session.
    pub fn session_uri(&self, session: &str) -> Option<&SessionUri> {
        self.session_chats.get(session).map(|(uri, _)| uri)
    }

    /// The session owning `channel`: the session itself, or a chat's session; `None` for any
    /// other channel.
    pub fn owning_session(&self, channel: &str) -> Option<&SessionUri> {
        self.session_uri(channel)
            .or_else(|| self.chat_session(channel))
    }

    /// The chats of a session with their states, in insertion order.
    pub fn session_chats<'a>(
        &'a self,
        session: &str,
    ) -> impl Iterator<Item = (&'a ChatUri, &'a ChatState)> + 'a {
        self.session_chats
            .get(session)
            .into_iter()
            .flat_map(|(_, chats)| chats)
            .filter_map(|uri| self.chat(uri).map(|chat| (uri, chat)))
    }

    /// URIs of every session, in no particular order.
    pub fn session_uris(&self) -> impl Iterator<Item = &SessionUri> {
        self.session_chats.values().map(|(uri, _)| uri)
    }

    /// Adds a session.
    pub fn insert_session(
        &mut self,
        uri: &SessionUri,
        state: SessionState,
    ) -> Result<(), StateError> {
        self.check_free(uri)?;
        self.channels
            .insert(uri.to_string(), ChannelState::Session(Box::new(state)));
        self.session_chats
            .insert(uri.to_string(), (uri.clone(), Vec::new()));
        Ok(())
    }

    /// Adds the chat `uri` (its `state.resource`) owned by `session`.
    pub fn insert_chat(
        &mut self,
        session: &SessionUri,
        uri: &ChatUri,
        state: ChatState,
    ) -> Result<(), StateError> {
        if state.resource != uri.as_str() {
            return Err(StateError::ResourceMismatch {
                uri: uri.to_string(),
                resource: state.resource,
            });
        }
        self.check_free(uri)?;
        let Some((_, chats)) = self.session_chats.get_mut(session.as_str()) else {
            return Err(StateError::UnknownSession(session.to_string()));
        };
        chats.push(uri.clone());
        self.chat_session
            .insert(uri.to_string(), (uri.clone(), session.clone()));
        self.channels
            .insert(uri.to_string(), ChannelState::Chat(Box::new(state)));
        Ok(())
    }

    /// Adds a channel that is neither the root, a session nor a chat.
    pub fn insert_channel(&mut self, uri: &str, state: ChannelState) -> Result<(), StateError> {
        match state {
            ChannelState::Chat(_) => Err(StateError::ChatNeedsSession(uri.to_owned())),
            ChannelState::Session(_) => Err(StateError::SessionNeedsUri(uri.to_owned())),
            other => {
                self.check_free(uri)?;
                self.channels.insert(uri.to_owned(), other);
                Ok(())
            }
        }
    }

    /// Removes a chat and its index entries; returns its last state.
    pub fn remove_chat(&mut self, uri: &str) -> Option<ChatState> {
        let Some(ChannelState::Chat(_)) = self.channels.get(uri) else {
            return None;
        };
        if let Some((_, session)) = self.chat_session.remove(uri)
            && let Some((_, chats)) = self.session_chats.get_mut(session.as_str())
        {
            chats.retain(|c| c != uri);
        }
        match self.channels.remove(uri) {
            Some(ChannelState::Chat(chat)) => Some(*chat),
            _ => None,
        }
    }

    /// Removes a session, cascading to its chats; returns the session and the removed chats.
    pub fn remove_session(&mut self, uri: &str) -> Option<(SessionState, Vec<ChatState>)> {
        let Some(ChannelState::Session(_)) = self.channels.get(uri) else {
            return None;
        };
        let chat_uris = self
            .session_chats
            .remove(uri)
            .map(|(_, chats)| chats)
            .unwrap_or_default();
        let chats = chat_uris
            .iter()
            .filter_map(|chat| {
                self.chat_session.remove(chat.as_str());
                match self.channels.remove(chat.as_str()) {
                    Some(ChannelState::Chat(state)) => Some(*state),
                    _ => None,
                }
            })
            .collect();
        match self.channels.remove(uri) {
            Some(ChannelState::Session(session)) => Some((*session, chats)),
            _ => None,
        }
    }

    /// Removes any other channel (terminal, changeset, …); sessions and chats have their own
    /// removal so their indexes stay consistent.
    pub fn remove_channel(&mut self, uri: &str) -> Option<ChannelState> {
        match self.channels.get(uri)? {
            ChannelState::Session(_) => self
                .remove_session(uri)
                .map(|(s, _)| ChannelState::Session(Box::new(s))),
            ChannelState::Chat(_) => self
                .remove_chat(uri)
                .map(|c| ChannelState::Chat(Box::new(c))),
            _ => self.channels.remove(uri),
        }
    }

    fn check_free(&self, uri: &str) -> Result<(), StateError> {
        if uri == ROOT_RESOURCE_URI {
            return Err(StateError::RootChannel);
        }
        if self.channels.contains_key(uri) {
            return Err(StateError::AlreadyExists(uri.to_owned()));
        }
        Ok(())
    }

    /// Applies an envelope: with an `origin` it is a client dispatch (validated against the
    /// origin's client id), without one a server action.
    pub fn apply_envelope(&mut self, envelope: &ActionEnvelope) -> Result<Reduced, ApplyError> {
        match &envelope.origin {
            Some(origin) => {
                self.apply_client_action(&envelope.channel, &envelope.action, &origin.client_id)
            }
            None => self.apply_server_action(&envelope.channel, &envelope.action),
        }
    }

    /// Validates and applies an action a client dispatched on `channel` (AHP §6.1, steps 2–6).
    /// `client_id` is the dispatching connection's client id.
    pub fn apply_client_action(
        &mut self,
        channel: &str,
        action: &StateAction,
        client_id: &str,
    ) -> Result<Reduced, ApplyError> {
        let target = self.channel_ref(channel)?;
        validation::validate_client_action(target, action, client_id)
            .map_err(ApplyError::Rejected)?;
        self.reduce(channel, action)
    }

    /// Applies an action the host itself dispatches. Only host invariants are checked (a default
    /// chat must be in the catalog; the action must belong to the channel's kind).
    pub fn apply_server_action(
        &mut self,
        channel: &str,
        action: &StateAction,
    ) -> Result<Reduced, ApplyError> {
        if let StateAction::SessionDefaultChatChanged(a) = action {
            let target = self.channel_ref(channel)?;
            validation::validate_default_chat(target, a).map_err(ApplyError::Rejected)?;
        }
        self.reduce(channel, action)
    }

    fn channel_ref<'a>(&'a self, channel: &str) -> Result<ChannelRef<'a>, ApplyError> {
        if channel == ROOT_RESOURCE_URI {
            return Ok(ChannelRef::Root);
        }
        match self.channels.get(channel) {
            None => Err(ApplyError::UnknownChannel(channel.to_owned())),
            Some(ChannelState::Chat(chat)) => {
                let session = self.chat_session(channel).and_then(|s| self.session(s));
                Ok(ChannelRef::Chat { chat, session })
            }
            Some(ChannelState::Session(session)) => Ok(ChannelRef::Session(session)),
            Some(other) => Ok(ChannelRef::Other(other.kind())),
        }
    }

    fn reduce(&mut self, channel: &str, action: &StateAction) -> Result<Reduced, ApplyError> {
        let (kind, outcome) = if channel == ROOT_RESOURCE_URI {
            (
                ChannelKind::Root,
                reducers::apply_action_to_root(&mut self.root, action),
            )
        } else {
            let Some(state) = self.channels.get_mut(channel) else {
                return Err(ApplyError::UnknownChannel(channel.to_owned()));
            };
            (state.kind(), state.reduce(action))
        };
        match outcome {
            ReduceOutcome::Applied => Ok(Reduced::Applied),
            ReduceOutcome::NoOp => Ok(Reduced::NoOp),
            ReduceOutcome::OutOfScope => Err(ApplyError::Rejected(Rejection::new(
                RejectionReason::WrongChannel {
                    action: validation::action_type(action),
                    channel: kind,
                },
            ))),
            ReduceOutcome::Invalid(error) => Err(ApplyError::Rejected(Rejection::new(
                RejectionReason::Invalid(error.to_string()),
            ))),
        }
    }
}

#[cfg(test)]
#[path = "host_state_tests.rs"]
mod tests;

//! The `sideChat` contribution (order 500, `onOutgoingTurn` + `onTurnEnd` + `onHydrateTurns`):
//! a side chat's first send carries the source chat's context, and a restored side chat shows
//! only its own turns, with the user's plain prompts.
//!
//! The central decision: **the context travels inside the message text, in a length-delimited
//! envelope** ([`build_envelope`] / [`parse_envelope`]), so the provider needs no side channel
//! and a restore can take it off again exactly, whatever the user or the transcript contains:
//!
//! ```text
//! <side-chat-context>
//! length=<n>            n = the body's length in characters
//! <body>                guidance, selected text, source transcript, partial response
//! </side-chat-context>
//!
//! <the user's prompt>
//! ```
//!
//! | Hook | When | Effect |
//! |---|---|---|
//! | OT | side chat (origin `sideChat`), not yet seeded | text replaced by the envelope around the prompt |
//! | OT | not a side chat, or already seeded | nothing |
//! | TE | `success` in a side chat | the chat is marked seeded (chat memento) |
//! | TE | any other reason, or not a side chat | nothing: a failed or cancelled first attempt is retried with the context again |
//! | HT | side chat | inherited turns dropped, envelopes of the seeding attempts removed; a completed kept turn marks the chat seeded |
//! | HT | not a side chat | turns returned untouched |
//!
//! # What the envelope's body holds
//!
//! [`GUIDANCE`] (this is a side conversation; the source chat's context follows), the origin's
//! selected text when it carries one, then the source transcript and the in-progress turn as
//! [`transcript_turns`] selects them. Transcript blocks read `User request:\n…\n\nAgent
//! response:\n…` (the response is the turn's markdown parts concatenated), joined by
//! [`TURN_SEPARATOR`], and middle-truncated to [`MAX_TRANSCRIPT_CHARS`] by [`truncate_middle`]
//! (the partial response is bounded the same way).
//!
//! **Which source turns — every one up to the origin, because no agent of this host forks.**
//! A host whose provider forks the source conversation at the origin turn would include the
//! transcript only if the source chat is tool-origin, the source turn is still active, or the
//! source turn is host-local: the fork already holds the rest. This host's agents
//! cannot fork — a side chat's agent conversation starts empty (`createChat` records the source
//! in the chat's origin, nothing more) — so the envelope is the side chat's only context:
//!
//! - the origin turn completed: every completed source turn up to and including it;
//! - the origin turn active: every completed source turn, plus the active turn's request and
//!   partial response (the race of the source turn completing between `createChat` and the
//!   first send then only moves that turn from the partial into the transcript).
//!
//! The transcript is middle-truncated, so a long source chat keeps its beginning and its end.
//! [`is_host_local_turn`] recognises host-answered turns by the `localCommand` contribution's
//! answer part until a local-turns service exists.
//!
//! # Restore
//!
//! The boundary between inherited and own turns is the inherited turn id when it is among the
//! restored turns — nothing persists a provider-reported one yet, so it is the origin's turn id
//! (the turns up to and including it are inherited) — else the last seed marker (a turn whose
//! text starts with [`OPEN_TAG`]; kept, it is the first own turn), else there is none and the
//! history is kept. The kept turns up to and including the first completed one are the seeding
//! attempts (a failed first attempt is retried with the envelope): each has its envelope
//! removed; a malformed envelope is left as it is. The chat's origin is read from host state,
//! falling back to the session's catalog entry (hydration runs before the chat is registered).
//! Marking the chat seeded there creates a chat memento before registration; it is evicted
//! with the chat like any other.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, ChatKey, Contribution, ContributionContext, Hook, HookFuture, HookResult,
    HookSet, HydrationContext, MissingService, OutgoingTurn, SendContribution, ServiceRegistry,
    TurnEnd, TurnEndReason,
};
use agenthost_protocol::ahp_types::state::{
    ActiveTurn, ChatOrigin, ChatState, ResponsePart, Turn, TurnState,
};
pub use agenthost_provider_api::history::{
    MAX_TRANSCRIPT_CHARS, TURN_SEPARATOR, response_text, transcript, truncate_middle,
};
use agenthost_services::HostState;

/// The envelope's opening line.
pub const OPEN_TAG: &str = "<side-chat-context>";
/// The envelope's closing line.
pub const CLOSE_TAG: &str = "</side-chat-context>";
/// The prefix of the envelope's second line, followed by the body's length in characters.
pub const LENGTH_PREFIX: &str = "length=";
/// The id of the markdown part the `localCommand` contribution answers a host command with;
/// a turn carrying it is host-local.
pub const LOCAL_COMMAND_PART_ID: &str = "localCommand";
/// The opening paragraph of every envelope body.
pub const GUIDANCE: &str = "This is a side conversation branched off another chat. The context \
of that chat follows; use it to answer the user's side question below. Do not continue or \
redo the other chat's task unless the user asks for it.";

fn unseeded() -> bool {
    false
}

/// Whether the side chat's provider already received the context (a first send succeeded).
static SEEDED: ChatKey<bool> = ChatKey::new("seeded", unseeded);

/// An envelope taken apart by [`parse_envelope`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// The context between the length line and the closing tag.
    pub body: &'a str,
    /// The user's prompt after the envelope.
    pub prompt: &'a str,
}

/// `prompt` wrapped in an envelope carrying `body`: the opening tag, `length=<n>` (the body's
/// length in characters), the body, the closing tag, a blank line, the prompt.
pub fn build_envelope(prompt: &str, body: &str) -> String {
    let length = body.chars().count();
    format!("{OPEN_TAG}\n{LENGTH_PREFIX}{length}\n{body}\n{CLOSE_TAG}\n\n{prompt}")
}

/// The body and prompt of an envelope built by [`build_envelope`], or `None` when `text` is not
/// a well-formed envelope (no opening tag, no or a bad length line, a body shorter than its
/// length, no closing tag right after the body). The length, not the closing tag, delimits the
/// body, so tags inside the body or the prompt are harmless.
pub fn parse_envelope(text: &str) -> Option<Envelope<'_>> {
    let rest = text.strip_prefix(OPEN_TAG)?.strip_prefix('\n')?;
    let (length_line, rest) = rest.split_once('\n')?;
    let digits = length_line.strip_prefix(LENGTH_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let length: usize = digits.parse().ok()?;
    // The byte offset of the `length`-th character boundary (the end counts as one).
    let body_end = rest
        .char_indices()
        .map(|(offset, _)| offset)
        .chain(std::iter::once(rest.len()))
        .nth(length)?;
    let (body, after) = (rest.get(..body_end)?, rest.get(body_end..)?);
    let prompt = after
        .strip_prefix('\n')?
        .strip_prefix(CLOSE_TAG)?
        .strip_prefix("\n\n")?;
    Some(Envelope { body, prompt })
}

/// Whether the host answered `turn` itself (a host command): it carries the `localCommand`
/// answer part. The provider never saw such a turn.
pub fn is_host_local_turn(turn: &Turn) -> bool {
    turn.response_parts.iter().any(|part| {
        matches!(part, ResponsePart::Markdown(markdown) if markdown.id == LOCAL_COMMAND_PART_ID)
    })
}

/// What of `source` goes into the envelope for a side chat taken at `turn_id` (see the crate
/// docs): every completed turn up to and including the origin turn for the transcript, and the
/// source's active turn when it is the origin turn (then every completed turn precedes it).
pub fn transcript_turns<'a>(
    source: &'a ChatState,
    turn_id: &str,
) -> (&'a [Turn], Option<&'a ActiveTurn>) {
    let active = source
        .active_turn
        .as_ref()
        .filter(|turn| turn.id == turn_id);
    let origin_index = source.turns.iter().position(|turn| turn.id == turn_id);
    let up_to_origin = match (active, origin_index) {
        (None, Some(index)) => source.turns.get(..=index).unwrap_or_default(),
        _ => source.turns.as_slice(),
    };
    (up_to_origin, active)
}

/// The envelope body for a side chat: [`GUIDANCE`], then the selected text, the transcript of
/// `turns` and the request and partial response of `active`, each when present.
pub fn envelope_body(
    selection: Option<&str>,
    turns: &[Turn],
    active: Option<&ActiveTurn>,
) -> String {
    let mut sections = vec![GUIDANCE.to_owned()];
    if let Some(selection) = selection.filter(|s| !s.is_empty()) {
        sections.push(format!("Selected text:\n{selection}"));
    }
    if !turns.is_empty() {
        sections.push(format!("Source chat transcript:\n{}", transcript(turns)));
    }
    if let Some(active) = active {
        let partial = truncate_middle(&response_text(&active.response_parts), MAX_TRANSCRIPT_CHARS);
        sections.push(format!(
            "The source chat's turn is still in progress.\nUser request:\n{}\n\nPartial agent response:\n{partial}",
            active.message.text
        ));
    }
    sections.join("\n\n")
}

/// Where a side chat came from.
#[derive(Debug, Clone, PartialEq)]
struct SideChatOrigin {
    source: String,
    turn_id: String,
    selection: Option<String>,
}

fn side_chat_origin(origin: Option<ChatOrigin>) -> Option<SideChatOrigin> {
    match origin? {
        ChatOrigin::SideChat {
            chat,
            turn_id,
            selection,
        } => Some(SideChatOrigin {
            source: chat,
            turn_id,
            selection: selection.map(|s| s.text),
        }),
        _ => None,
    }
}

/// `turns` of a side chat taken at `origin_turn_id`, without the inherited turns and with the
/// envelopes of the seeding attempts removed (see the crate docs); also whether a kept turn
/// completed.
pub fn strip_inherited(turns: &[Turn], origin_turn_id: &str) -> (Vec<Turn>, bool) {
    let kept = if let Some(inherited) = turns.iter().position(|t| t.id == origin_turn_id) {
        turns.get(inherited + 1..).unwrap_or_default()
    } else if let Some(marker) = turns
        .iter()
        .rposition(|t| t.message.text.starts_with(OPEN_TAG))
    {
        turns.get(marker..).unwrap_or_default()
    } else {
        turns
    };
    let mut kept = kept.to_vec();
    let first_completed = kept.iter().position(|t| t.state == TurnState::Complete);
    let seeding = first_completed.map_or(kept.len(), |index| index + 1);
    for turn in kept.iter_mut().take(seeding) {
        if let Some(envelope) = parse_envelope(&turn.message.text) {
            turn.message.text = envelope.prompt.to_owned();
        }
    }
    (kept, first_completed.is_some())
}

/// The `sideChat` contribution. Register it with `dispatcher.register::<SideChat>()`; it needs
/// `dyn HostState` in the registry.
pub struct SideChat {
    context: ContributionContext,
    host: Arc<dyn HostState>,
}

impl std::fmt::Debug for SideChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SideChat").finish_non_exhaustive()
    }
}

impl SideChat {
    /// Keeps its seeded marks in `context` and reads chats through `host`.
    pub fn new(context: ContributionContext, host: Arc<dyn HostState>) -> Self {
        Self { context, host }
    }

    /// Resolves `dyn HostState` from `services`.
    pub fn from_services(
        context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Ok(Self::new(context, services.get::<dyn HostState>()?))
    }

    /// The side-chat origin of `chat`: from its state, else from its session's catalog entry.
    fn origin(&self, session: &str, chat: &str) -> Option<SideChatOrigin> {
        if let Some(state) = self.host.chat(chat) {
            return side_chat_origin(state.origin);
        }
        let catalog = self.host.session(session)?.chats;
        let entry = catalog.into_iter().find(|c| c.resource == chat)?;
        side_chat_origin(entry.origin)
    }

    fn seeded(&self, session: &str, chat: &str) -> agenthost_dispatcher::Memento<bool> {
        self.context.chat_memento(&SEEDED, session, chat, &[])
    }

    fn envelope_for(&self, origin: &SideChatOrigin, prompt: &str) -> String {
        let source = self.host.chat(&origin.source);
        let (turns, active) = match &source {
            Some(source) => transcript_turns(source, &origin.turn_id),
            None => {
                tracing::debug!(source = origin.source, "sideChat: the source chat is gone");
                (&[][..], None)
            }
        };
        let body = envelope_body(origin.selection.as_deref(), turns, active);
        build_envelope(prompt, &body)
    }
}

impl Contribution for SideChat {
    const ID: &'static str = "sideChat";
    const ORDER: i32 = 500;
    const HOOKS: HookSet = HookSet::of(&[Hook::OutgoingTurn, Hook::TurnEnd, Hook::HydrateTurns]);

    fn create(
        context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(context, services)
    }
}

impl ChatContribution for SideChat {
    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            let Some(origin) = self.origin(&turn.session, &turn.chat) else {
                return Ok(None);
            };
            if self.seeded(&turn.session, &turn.chat).get() {
                return Ok(None);
            }
            Ok(Some(SendContribution {
                instructions: None,
                text: Some(self.envelope_for(&origin, &turn.message.text)),
            }))
        })
    }

    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        if turn.reason != TurnEndReason::Success {
            return Ok(());
        }
        if self.origin(&turn.session, &turn.chat).is_some() {
            self.seeded(&turn.session, &turn.chat).set(true);
        }
        Ok(())
    }

    fn on_hydrate_turns<'a>(
        &'a self,
        context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> HookFuture<'a, Vec<Turn>> {
        Box::pin(async move {
            let Some(origin) = self.origin(&context.session, &context.chat) else {
                return Ok(turns.to_vec());
            };
            let (kept, completed) = strip_inherited(turns, &origin.turn_id);
            if completed {
                self.seeded(&context.session, &context.chat).set(true);
            }
            Ok(kept)
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

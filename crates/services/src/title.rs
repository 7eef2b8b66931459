//! [`TitleController`]: provisional, generated and user titles of sessions and chats.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;

use crate::bounded::BoundedMap;

/// Who decided a title. A user's title is never replaced by a provisional or generated one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TitleKind {
    /// Seeded by the host (from the first message, or suggested by a local command).
    Provisional,
    /// Produced by a [`TitleGenerator`] after the first successful turn.
    Generated,
    /// Chosen by the user (a client rename, `/rename`).
    User,
}

/// What the controller knows about one chat's title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TitleState {
    /// The current title, if one was seeded or set.
    pub title: Option<String>,
    /// Who decided it.
    pub kind: TitleKind,
    /// Whether refinement after the first successful turn already ran (it runs once).
    pub refined: bool,
}

/// Tunables of [`DefaultTitleController`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TitleConfig {
    /// Longest title, in characters (an ellipsis included). Raised to [`Self::MIN_CHARS`].
    pub max_chars: usize,
    /// How many chats the controller remembers; past it the oldest is forgotten.
    pub capacity: usize,
}

impl TitleConfig {
    /// The smallest `max_chars` honoured.
    pub const MIN_CHARS: usize = 8;
}

impl Default for TitleConfig {
    fn default() -> Self {
        Self {
            max_chars: 60,
            capacity: 10_000,
        }
    }
}

/// Titles of sessions and chats. The controller decides and remembers titles; contributions
/// dispatch them (through [`ServerDispatch`](crate::ServerDispatch)) and persist them (through
/// [`SessionDataStore`](crate::SessionDataStore)). `session` and `chat` are channel URIs.
pub trait TitleController: Send + Sync {
    /// Seeds a provisional title for `chat` from its first message. Returns the title to show,
    /// or `None` when the chat already has a title or the text yields none.
    fn seed_from_message(&self, session: &str, chat: &str, text: &str) -> Option<String>;

    /// Sets `chat`'s title as `kind` decided it (normalised like a seeded title). A provisional
    /// or generated title never replaces a user's. Returns the title applied, or `None` when it
    /// was refused or empty.
    fn set_title(&self, session: &str, chat: &str, title: &str, kind: TitleKind) -> Option<String>;

    /// After a turn of `chat` ended (`successful` = it succeeded): the refined title to apply,
    /// if any. Runs once, at the first successful turn; never touches a user's title.
    fn refine_after_first_turn(
        &self,
        session: &str,
        chat: &str,
        successful: bool,
    ) -> BoxFuture<'static, Option<String>>;

    /// An instruction asking the agent to rename the chat, added to the outgoing turn.
    fn rename_instruction(&self, session: &str, chat: &str) -> Option<String>;

    /// Marks the session (`chat == None`) or a chat as renamed by the user or automatically.
    fn mark_renamed(&self, session: &str, chat: Option<&str>, by: TitleKind);

    /// Whether the user renamed the session (`chat == None`) or the chat.
    fn renamed_by_user(&self, session: &str, chat: Option<&str>) -> bool;

    /// What the controller knows about `chat`'s title.
    fn title_state(&self, chat: &str) -> Option<TitleState>;

    /// Forgets `chat` (it was disposed).
    fn forget_chat(&self, chat: &str);

    /// Forgets `session` and every chat of it.
    fn forget_session(&self, session: &str);
}

/// The refinement hook of [`DefaultTitleController`]: a better title from the first message,
/// e.g. asked of a model. `None` keeps the seeded title.
pub trait TitleGenerator: Send + Sync {
    /// A title for a chat whose first message was `first_message`.
    fn generate(&self, first_message: &str) -> BoxFuture<'static, Option<String>>;
}

/// The default generator: none, the seeded title stays.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTitleGenerator;

impl TitleGenerator for NoTitleGenerator {
    fn generate(&self, _first_message: &str) -> BoxFuture<'static, Option<String>> {
        Box::pin(async { None })
    }
}

/// The longest first message kept for the generator, in characters.
const KEPT_MESSAGE_CHARS: usize = 4_000;

#[derive(Debug)]
struct ChatTitle {
    session: String,
    state: TitleState,
    first_message: Option<String>,
}

#[derive(Debug)]
struct Titles {
    chats: BoundedMap<String, ChatTitle>,
    user_renamed_sessions: HashSet<String>,
}

/// Deterministic titles: the seed is [`seed_title`] of the first message; refinement asks the
/// [`TitleGenerator`] (by default none, so the seed stays); no rename instruction.
pub struct DefaultTitleController {
    config: TitleConfig,
    titles: Arc<Mutex<Titles>>,
    generator: Arc<dyn TitleGenerator>,
}

impl std::fmt::Debug for DefaultTitleController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultTitleController")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Default for DefaultTitleController {
    fn default() -> Self {
        Self::new(TitleConfig::default())
    }
}

impl DefaultTitleController {
    /// A controller without a generator.
    pub fn new(config: TitleConfig) -> Self {
        Self::with_generator(config, Arc::new(NoTitleGenerator))
    }

    /// A controller refining titles with `generator`.
    pub fn with_generator(config: TitleConfig, generator: Arc<dyn TitleGenerator>) -> Self {
        Self {
            config,
            titles: Arc::new(Mutex::new(Titles {
                chats: BoundedMap::new(config.capacity),
                user_renamed_sessions: HashSet::new(),
            })),
            generator,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Titles> {
        lock(&self.titles)
    }
}

fn lock(titles: &Mutex<Titles>) -> MutexGuard<'_, Titles> {
    // Every update is a single insert or field write: a poisoned lock still holds valid state.
    titles.lock().unwrap_or_else(|e| e.into_inner())
}

fn remember(titles: &mut Titles, chat: &str, entry: ChatTitle) {
    if let Some((evicted, _)) = titles.chats.insert(chat.to_owned(), entry) {
        tracing::debug!(chat = %evicted, "title controller full: forgot the oldest chat");
    }
}

impl TitleController for DefaultTitleController {
    fn seed_from_message(&self, session: &str, chat: &str, text: &str) -> Option<String> {
        let mut titles = self.lock();
        if titles
            .chats
            .get(&chat.to_owned())
            .is_some_and(|entry| entry.state.title.is_some())
        {
            return None;
        }
        let title = seed_title(text, self.config.max_chars)?;
        let first_message = text.chars().take(KEPT_MESSAGE_CHARS).collect();
        remember(
            &mut titles,
            chat,
            ChatTitle {
                session: session.to_owned(),
                state: TitleState {
                    title: Some(title.clone()),
                    kind: TitleKind::Provisional,
                    refined: false,
                },
                first_message: Some(first_message),
            },
        );
        tracing::debug!(session, chat, %title, "seeded a provisional title");
        Some(title)
    }

    fn set_title(&self, session: &str, chat: &str, title: &str, kind: TitleKind) -> Option<String> {
        let title = clean_title(title, self.config.max_chars)?;
        let mut titles = self.lock();
        let key = chat.to_owned();
        match titles.chats.get_mut(&key) {
            Some(entry) if entry.state.kind == TitleKind::User && kind != TitleKind::User => {
                return None;
            }
            Some(entry) => {
                entry.state.title = Some(title.clone());
                entry.state.kind = kind;
            }
            None => remember(
                &mut titles,
                chat,
                ChatTitle {
                    session: session.to_owned(),
                    state: TitleState {
                        title: Some(title.clone()),
                        kind,
                        refined: false,
                    },
                    first_message: None,
                },
            ),
        }
        Some(title)
    }

    fn refine_after_first_turn(
        &self,
        session: &str,
        chat: &str,
        successful: bool,
    ) -> BoxFuture<'static, Option<String>> {
        let first_message = {
            let mut titles = self.lock();
            let session_renamed = titles.user_renamed_sessions.contains(session);
            match titles.chats.get_mut(&chat.to_owned()) {
                Some(entry)
                    if successful
                        && !entry.state.refined
                        && entry.state.kind != TitleKind::User
                        && !session_renamed =>
                {
                    entry.state.refined = true;
                    entry.first_message.take()
                }
                _ => None,
            }
        };
        let Some(first_message) = first_message else {
            return Box::pin(async { None });
        };
        let generated = self.generator.generate(&first_message);
        let titles = Arc::clone(&self.titles);
        let (chat, max_chars) = (chat.to_owned(), self.config.max_chars);
        Box::pin(async move {
            let title = clean_title(&generated.await?, max_chars)?;
            let mut titles = lock(&titles);
            // The user may have renamed the chat while the generator ran.
            let entry = titles
                .chats
                .get_mut(&chat)
                .filter(|e| e.state.kind != TitleKind::User)?;
            entry.state.title = Some(title.clone());
            entry.state.kind = TitleKind::Generated;
            tracing::debug!(chat, %title, "refined the title after the first turn");
            Some(title)
        })
    }

    fn rename_instruction(&self, _session: &str, _chat: &str) -> Option<String> {
        None
    }

    fn mark_renamed(&self, session: &str, chat: Option<&str>, by: TitleKind) {
        let mut titles = self.lock();
        let Some(chat) = chat else {
            if by == TitleKind::User {
                titles.user_renamed_sessions.insert(session.to_owned());
            } else {
                titles.user_renamed_sessions.remove(session);
            }
            return;
        };
        match titles.chats.get_mut(&chat.to_owned()) {
            Some(entry) => entry.state.kind = by,
            None => remember(
                &mut titles,
                chat,
                ChatTitle {
                    session: session.to_owned(),
                    state: TitleState {
                        title: None,
                        kind: by,
                        refined: false,
                    },
                    first_message: None,
                },
            ),
        }
    }

    fn renamed_by_user(&self, session: &str, chat: Option<&str>) -> bool {
        let titles = self.lock();
        match chat {
            None => titles.user_renamed_sessions.contains(session),
            Some(chat) => titles
                .chats
                .get(&chat.to_owned())
                .is_some_and(|e| e.state.kind == TitleKind::User),
        }
    }

    fn title_state(&self, chat: &str) -> Option<TitleState> {
        self.lock()
            .chats
            .get(&chat.to_owned())
            .map(|e| e.state.clone())
    }

    fn forget_chat(&self, chat: &str) {
        self.lock().chats.remove(&chat.to_owned());
    }

    fn forget_session(&self, session: &str) {
        let mut titles = self.lock();
        titles.user_renamed_sessions.remove(session);
        titles.chats.retain(|_, entry| entry.session != session);
    }
}

/// A title from a chat's first message, or `None` when the message has no usable text.
///
/// The first non-empty prose line wins: lines inside code fences (```` ``` ```` or `~~~`) are
/// skipped (the first code line is the fallback when there is no prose), a leading slash command
/// (`/explain`) is dropped (a line that is only a command yields to the next line), markdown
/// heading, quote and list markers are dropped, control and invisible formatting characters
/// removed and whitespace collapsed. A title longer than `max_chars` characters (raised to
/// [`TitleConfig::MIN_CHARS`]) is cut at the last word boundary that fits and ends with `…`; a
/// single word longer than that is cut inside the word.
pub fn seed_title(text: &str, max_chars: usize) -> Option<String> {
    let mut in_fence = false;
    let mut first_code_line = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            if first_code_line.is_none() && !trimmed.is_empty() {
                first_code_line = Some(trimmed);
            }
            continue;
        }
        if let Some(title) = clean_title(strip_markers(trimmed), max_chars) {
            return Some(title);
        }
    }
    first_code_line.and_then(|line| clean_title(line, max_chars))
}

/// Drops a leading slash command and markdown block markers.
fn strip_markers(line: &str) -> &str {
    let mut line = line;
    if let Some(rest) = line.strip_prefix('/') {
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(rest.len());
        let after = &rest[name_len..];
        // `/usr/bin` is a path, not a command: a command name ends at whitespace or the line's end.
        if name_len > 0 && after.chars().next().is_none_or(char::is_whitespace) {
            line = after.trim_start();
        }
    }
    let line = line.trim_start_matches('#').trim_start();
    let line = line.trim_start_matches('>').trim_start();
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(bullet) {
            return rest.trim_start();
        }
    }
    line
}

/// Whether `c` should never appear in a title: control characters and invisible formatting
/// (zero-width and bidirectional controls, which could disguise a title).
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// Removes hidden characters, collapses whitespace and cuts to `max_chars`.
fn clean_title(text: &str, max_chars: usize) -> Option<String> {
    let visible: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !is_hidden(*c))
        .collect();
    let collapsed = visible.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return None;
    }
    Some(cut_at_word(
        &collapsed,
        max_chars.max(TitleConfig::MIN_CHARS),
    ))
}

fn cut_at_word(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    // Room for the ellipsis.
    let keep = max_chars - 1;
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    let prefix = &text[..end];
    let at_boundary = text[end..].starts_with(' ');
    let cut = if at_boundary {
        prefix
    } else {
        match prefix.rfind(' ') {
            Some(space) if space > 0 => &prefix[..space],
            _ => prefix,
        }
    };
    let trimmed = cut.trim_end_matches([' ', ',', ';', ':', '-']);
    let cut = if trimmed.is_empty() {
        prefix.trim_end()
    } else {
        trimmed
    };
    format!("{cut}…")
}

#[cfg(test)]
#[path = "title_tests.rs"]
mod tests;

//! `chatSurface` (order 300, `onOutgoingTurn`): guidance for the surface a chat was opened
//! from, and for an editor's inline chat a bounded excerpt of the file around the selection.
//!
//! The central decision: **the surface is host-known metadata, read once per send, and the
//! excerpt is bounded at every step** — at most [`MAX_SOURCE_BYTES`] of the file are read, at
//! most [`MAX_WINDOW_LINES`] lines shown, each cut to [`MAX_LINE_CHARS`] characters, and the
//! whole `<editor_inline_context>` block capped at [`MAX_BLOCK_CHARS`] characters — so a huge
//! file or a hostile selection cannot blow up the prompt.
//!
//! **Where the surface comes from.** AHP 1.0 has no surface field, so the surface travels in an
//! open `_meta` bag under [`SURFACE_META_KEY`] (`surface`): the chat's state `_meta`, read
//! through [`HostState::chat`], when it has that key; otherwise the outgoing message's `_meta`
//! (VS Code-style clients put it there). Only the chosen bag is read: the value `"terminal"` or
//! `"editor-inline"` selects a surface; any other value (another string, a non-string) means no
//! surface-specific behaviour — and a chat whose `surface` says so is not overridden by its
//! message, the host's word wins. The same bag's [`TARGET_URI_META_KEY`] (`targetUri`, a
//! string) names the document an editor-inline chat edits ([`surface_meta`]).
//!
//! | Surface | Attachment | Effect |
//! |---|---|---|
//! | none / unknown | — | nothing (no file read) |
//! | terminal | — | [`TERMINAL_INSTRUCTION`]; the text unchanged; no file read |
//! | editor-inline | a selection attachment is picked and its file read | [`EDITOR_INLINE_INSTRUCTION`]; the text becomes [`editor_inline_context`] `+ "\n\n" +` the original text |
//! | editor-inline | none picked (none, or several and none matches the target) | the instruction; the text unchanged |
//! | editor-inline | picked, but unreadable (missing, not a local `file:` URI) or the selection starts outside the file | the instruction; the text unchanged; a read failure is logged (`warn`) |
//!
//! The instruction does not depend on the attachment: it describes the surface, which is known
//! either way; only the excerpt needs a usable attachment ("an unmatched attachment leaves the
//! message unchanged" — the message, not the instructions).
//!
//! **The selection attachment** is a `resource` attachment carrying a `selection`
//! ([`selection_attachments`]); embedded resources have no URI to read and are ignored. The one
//! whose URI matches the target URI wins ([`pick_selection`]; URIs match when equal, or when
//! both are `file:` URIs of the same path); without a match, the only selection attachment is
//! used; several and no match picks none.
//!
//! **The block** ([`editor_inline_context`]): `File: <label>`, the header `Target L:C-L:C;
//! '>' marks target lines:` (the selection as given, 1-based), then a window of at most 16
//! lines starting 4 lines before the selection's first line, each as `<mark> <n> | <text>`
//! (`n` 1-based, right-aligned). `>` marks the selected lines; a selection ending at column 0
//! of a later line does not mark that line (the end is exclusive). Lines longer than 220
//! characters keep 217 and end in `...`. Lines are split as an editor does (`\n`, `\r\n`,
//! `\r`), so a trailing newline yields a last, empty line. A block longer than 4096
//! characters has its body cut (mid-line if need be); the closing tag is always kept. The
//! file's text is used as [`FileService::read_bounded`] returns it: a file over the cap is seen
//! up to the cap only, invalid UTF-8 arrives replaced (U+FFFD).
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookFuture, HookSet, MissingService,
    OutgoingTurn, SendContribution, ServiceRegistry,
};
use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{
    ChatState, Message, MessageAttachment, MessageResourceAttachment, TextRange,
};
use agenthost_protocol::uri::file_uri_to_path;
use agenthost_services::{FileService, HostState};
use serde_json::Value;

/// The `_meta` key naming the surface a chat was opened from.
pub const SURFACE_META_KEY: &str = "surface";
/// The `_meta` key naming the document an editor-inline chat edits (a URI string).
pub const TARGET_URI_META_KEY: &str = "targetUri";

/// How much of the source file is read, at most (1 MB).
pub const MAX_SOURCE_BYTES: usize = 1024 * 1024;
/// How many lines the excerpt shows, at most.
pub const MAX_WINDOW_LINES: usize = 16;
/// How many lines before the selection the excerpt starts.
pub const LINES_BEFORE_TARGET: usize = 4;
/// How many characters of a line are shown; longer lines keep `MAX_LINE_CHARS - 3` and `...`.
pub const MAX_LINE_CHARS: usize = 220;
/// How many characters the whole `<editor_inline_context>` block has, at most.
pub const MAX_BLOCK_CHARS: usize = 4096;

const BLOCK_OPEN: &str = "<editor_inline_context>\n";
const BLOCK_CLOSE: &str = "\n</editor_inline_context>";

/// The instruction for a chat opened from a terminal.
pub const TERMINAL_INSTRUCTION: &str = "<terminal_chat>
This chat was opened from a terminal: help the user with a command to run.
- Answer with the command rather than carrying out the task yourself.
- Prefer a single-line command; explain only a complex command, and briefly.
- Put every command in its own fenced code block, never inline.
- Write `{placeholder}` for values the user has not given.
- Do not explore or gather context unless the request is ambiguous without it.
</terminal_chat>";

/// The instruction for a chat opened inline in an editor.
pub const EDITOR_INLINE_INSTRUCTION: &str = "<editor_inline_chat>
This chat was opened inline in an editor: make the requested change directly.
- Edit only the file open in the editor; do not create, delete or change other files.
- Keep the edit as small as the request allows and match the surrounding style and indentation.
- When a selection is given, work on the selected lines.
- Do not explore the repository unless the request is ambiguous without it.
- Stop after the edit: no tests, builds, linters or summary of the change.
</editor_inline_chat>";

/// The surface a chat was opened from, when it asks for surface-specific behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// A terminal (`"terminal"`).
    Terminal,
    /// An editor's inline chat (`"editor-inline"`).
    EditorInline,
}

impl Surface {
    /// The surface a `_meta` `surface` value names; `None` for anything else.
    pub fn from_meta(value: &Value) -> Option<Self> {
        match value.as_str()? {
            "terminal" => Some(Self::Terminal),
            "editor-inline" => Some(Self::EditorInline),
            _ => None,
        }
    }
}

/// The surface metadata of a send: what [`surface_meta`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurfaceMeta {
    /// The surface; `None` when the bag names none (or one this host does not know).
    pub surface: Option<Surface>,
    /// The document an editor-inline chat edits.
    pub target_uri: Option<String>,
}

/// The surface metadata of a send: from the chat's `_meta` when it has a
/// [`SURFACE_META_KEY`] entry, else from the message's `_meta`.
pub fn surface_meta(chat: Option<&ChatState>, message: &Message) -> SurfaceMeta {
    let chat_meta = chat
        .and_then(|chat| chat.meta.as_ref())
        .filter(|meta| meta.contains_key(SURFACE_META_KEY));
    let bag: Option<&JsonObject> = chat_meta.or(message.meta.as_ref());
    SurfaceMeta {
        surface: bag
            .and_then(|meta| meta.get(SURFACE_META_KEY))
            .and_then(Surface::from_meta),
        target_uri: bag
            .and_then(|meta| meta.get(TARGET_URI_META_KEY))
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}

/// The selection attachments of `message`: `resource` attachments with a `selection`.
pub fn selection_attachments(message: &Message) -> Vec<&MessageResourceAttachment> {
    message
        .attachments
        .iter()
        .flatten()
        .filter_map(|attachment| match attachment {
            MessageAttachment::Resource(resource) if resource.selection.is_some() => Some(resource),
            _ => None,
        })
        .collect()
}

/// The selection attachment the excerpt is built from: the first whose URI matches `target`,
/// else the only one; `None` when there are several and none matches, or none at all.
pub fn pick_selection<'a>(
    attachments: &[&'a MessageResourceAttachment],
    target: Option<&str>,
) -> Option<&'a MessageResourceAttachment> {
    let matching = target.and_then(|target| {
        attachments
            .iter()
            .find(|attachment| same_uri(&attachment.uri, target))
    });
    match (matching, attachments) {
        (Some(attachment), _) => Some(attachment),
        (None, [only]) => Some(only),
        (None, _) => None,
    }
}

/// Equal URIs, or two `file:` URIs of the same path (spelled differently).
fn same_uri(a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (file_uri_to_path(a), file_uri_to_path(b)),
            (Ok(a), Ok(b)) if a == b
        )
}

/// `source` split into lines as an editor does: `\n`, `\r\n` and `\r` end a line; the text
/// after the last break is a line too (empty after a trailing break).
fn editor_lines(source: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find(['\n', '\r']) {
        lines.push(&rest[..at]);
        let break_len = if rest[at..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[at + break_len..];
    }
    lines.push(rest);
    lines
}

/// `line` cut to [`MAX_LINE_CHARS`] characters (`MAX_LINE_CHARS - 3` and `...`).
fn cut_line(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(MAX_LINE_CHARS - 3).collect();
    cut.push_str("...");
    cut
}

/// The `<editor_inline_context>` block for the selection `range` of `source` (the text of the
/// file labelled `label`), at most [`MAX_BLOCK_CHARS`] characters; `None` when the selection
/// starts outside the file.
pub fn editor_inline_context(source: &str, label: &str, range: &TextRange) -> Option<String> {
    let lines = editor_lines(source);
    let first = usize::try_from(range.start.line)
        .ok()
        .filter(|line| *line < lines.len())?;
    let mut last = usize::try_from(range.end.line).unwrap_or(0);
    if range.end.character == 0 && last > first {
        // The end is exclusive: a selection ending at column 0 does not reach into that line.
        last -= 1;
    }
    let last = last.clamp(first, lines.len() - 1);
    let window_start = first.saturating_sub(LINES_BEFORE_TARGET);
    let window_end = (window_start + MAX_WINDOW_LINES - 1).min(lines.len() - 1);
    let width = (window_end + 1).to_string().len();

    let label = label.replace(['\r', '\n'], " ");
    let mut body = format!(
        "File: {label}\nTarget {}:{}-{}:{}; '>' marks target lines:",
        range.start.line.saturating_add(1),
        range.start.character.saturating_add(1),
        range.end.line.saturating_add(1),
        range.end.character.saturating_add(1),
    );
    for (index, line) in lines
        .iter()
        .enumerate()
        .take(window_end + 1)
        .skip(window_start)
    {
        let mark = if (first..=last).contains(&index) {
            '>'
        } else {
            ' '
        };
        body.push_str(&format!(
            "\n{mark} {:>width$} | {}",
            index + 1,
            cut_line(line)
        ));
    }
    let budget = MAX_BLOCK_CHARS - BLOCK_OPEN.len() - BLOCK_CLOSE.len();
    if let Some((cut_at, _)) = body.char_indices().nth(budget) {
        body.truncate(cut_at);
    }
    Some(format!("{BLOCK_OPEN}{body}{BLOCK_CLOSE}"))
}

/// The `chatSurface` contribution. Register it with `dispatcher.register::<ChatSurface>()`;
/// it needs `dyn HostState` and `dyn FileService` in the registry.
pub struct ChatSurface {
    host: Arc<dyn HostState>,
    files: Arc<dyn FileService>,
}

impl std::fmt::Debug for ChatSurface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatSurface").finish_non_exhaustive()
    }
}

impl ChatSurface {
    /// Reads chat metadata from `host` and source files through `files`.
    pub fn new(host: Arc<dyn HostState>, files: Arc<dyn FileService>) -> Self {
        Self { host, files }
    }

    /// Resolves `dyn HostState` and `dyn FileService` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(
            services.get::<dyn HostState>()?,
            services.get::<dyn FileService>()?,
        ))
    }

    /// The editor-inline replacement text of `turn`, or `None` to leave it unchanged.
    async fn with_editor_inline_context(
        &self,
        turn: &OutgoingTurn,
        target: Option<&str>,
    ) -> Option<String> {
        let attachments = selection_attachments(&turn.message);
        let attachment = pick_selection(&attachments, target)?;
        let selection = attachment.selection.as_ref()?;
        let read = match self
            .files
            .read_bounded(&attachment.uri, MAX_SOURCE_BYTES)
            .await
        {
            Ok(read) => read,
            Err(error) => {
                tracing::warn!(chat = %turn.chat, uri = %attachment.uri, %error, "chatSurface: could not read the editor-inline context");
                return None;
            }
        };
        let block = editor_inline_context(&read.text, &attachment.label, &selection.range)?;
        Some(format!("{block}\n\n{}", turn.message.text))
    }
}

impl Contribution for ChatSurface {
    const ID: &'static str = "chatSurface";
    const ORDER: i32 = 300;
    const HOOKS: HookSet = HookSet::of(&[Hook::OutgoingTurn]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for ChatSurface {
    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            let chat = self.host.chat(&turn.chat);
            let meta = surface_meta(chat.as_ref(), &turn.message);
            let contribution = match meta.surface {
                None => return Ok(None),
                Some(Surface::Terminal) => SendContribution {
                    instructions: Some(vec![TERMINAL_INSTRUCTION.to_owned()]),
                    text: None,
                },
                Some(Surface::EditorInline) => SendContribution {
                    instructions: Some(vec![EDITOR_INLINE_INSTRUCTION.to_owned()]),
                    text: self
                        .with_editor_inline_context(turn, meta.target_uri.as_deref())
                        .await,
                },
            };
            Ok(Some(contribution))
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

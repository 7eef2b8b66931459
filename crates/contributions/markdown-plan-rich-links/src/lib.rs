//! `markdownPlanRichLinks` (order 100, `onOutgoingTurn`): when the host turns it on, every
//! outgoing turn carries one instruction telling the agent how to write plans in markdown with
//! rich links — files, symbols, the current chat — and task lists.
//!
//! The central decision: **an instruction, never a rewrite.** The contribution only adds to the
//! send; the user's text reaches the agent unchanged, so the guidance costs nothing when the
//! agent writes no plan.
//!
//! | Root value of [`MARKDOWN_PLAN_RICH_LINKS_FLAG`] | Effect on the send |
//! |---|---|
//! | absent, or JSON `false` | nothing (`None`) |
//! | any other non-`true` value (`"true"`, `1`, `null`, an object…) | nothing; logged at `debug` once per turn |
//! | JSON `true` | one instruction: [`instruction`] for the turn's chat; text unchanged |
//!
//! - The flag is the host's *root* configuration value (not a session override), read through
//!   [`Configuration::root_value`] on every turn: turning it on or off applies from the next
//!   turn, nothing is cached.
//! - The hook never fails: [`Configuration`] reads are in-memory and infallible, and an
//!   unusable value counts as off. A panicking implementation would be contained by the
//!   dispatcher, which logs it and sends the turn without this instruction.
//! - The instruction names the turn's chat URI ([`OutgoingTurn::chat`]) as the link target for
//!   "this chat", so a plan can point back to the conversation it came from.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookFuture, HookSet, MissingService,
    OutgoingTurn, SendContribution, ServiceRegistry,
};
use agenthost_services::Configuration;

/// The root configuration key of the flag; only the JSON `true` turns the contribution on.
pub const MARKDOWN_PLAN_RICH_LINKS_FLAG: &str = "markdownPlanRichLinks";

/// The `markdownPlanRichLinks` contribution. Register it with
/// `dispatcher.register::<MarkdownPlanRichLinks>()`; it needs `dyn Configuration` in the
/// registry.
pub struct MarkdownPlanRichLinks {
    config: Arc<dyn Configuration>,
}

impl std::fmt::Debug for MarkdownPlanRichLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MarkdownPlanRichLinks")
            .finish_non_exhaustive()
    }
}

impl MarkdownPlanRichLinks {
    /// Reads the flag from `config`.
    pub fn new(config: Arc<dyn Configuration>) -> Self {
        Self { config }
    }

    /// Resolves `dyn Configuration` from `services`.
    pub fn from_services(services: &ServiceRegistry) -> Result<Self, MissingService> {
        Ok(Self::new(services.get::<dyn Configuration>()?))
    }

    /// Whether the flag is on now: the root value is the JSON `true`. Any other value is off; a
    /// value that is not a boolean is logged at `debug`.
    pub fn is_enabled(&self) -> bool {
        self.config.root_flag(MARKDOWN_PLAN_RICH_LINKS_FLAG)
    }
}

/// The instruction added to a turn of `chat` (its URI) when the flag is on.
pub fn instruction(chat: &str) -> String {
    format!(
        "When you write a plan in markdown, use rich links and task lists. \
         Link a file as a markdown link whose target is its workspace-relative path as a `file:` \
         URI, adding `#L<line>` to point at a line: [src/main.rs](file:src/main.rs), \
         [the parser](file:src/parser.rs#L42). \
         Link a symbol with its name in backticks as the link text and the line that defines it \
         as the target: [`Parser::parse`](file:src/parser.rs#L42). \
         Link this chat as [this chat]({chat}). \
         Write each plan step as a task-list item: `- [ ] step` while it is to do, \
         `- [x] step` once it is done."
    )
}

impl Contribution for MarkdownPlanRichLinks {
    const ID: &'static str = "markdownPlanRichLinks";
    const ORDER: i32 = 100;
    const HOOKS: HookSet = HookSet::of(&[Hook::OutgoingTurn]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for MarkdownPlanRichLinks {
    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            if !self.is_enabled() {
                return Ok(None);
            }
            // Additive only: the text is never replaced.
            Ok(Some(SendContribution {
                instructions: Some(vec![instruction(&turn.chat)]),
                text: None,
            }))
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

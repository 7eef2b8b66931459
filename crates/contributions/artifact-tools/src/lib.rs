//! `artifactTools` (order 200, `onOutgoingTurn`): when the host turns it on, every outgoing turn
//! carries one fixed instruction, [`ARTIFACT_TOOLS_INSTRUCTION`], telling the agent what the
//! artifact tools are for — named documents, diagrams and code files the user sees apart from
//! the chat — and to keep its chat replies short when it uses them.
//!
//! The central decision: **one fixed instruction, never a rewrite.** The text does not depend on
//! the turn, and the user's text reaches the agent unchanged.
//!
//! | Root value of [`ARTIFACT_TOOLS_FLAG`] | Effect on the send |
//! |---|---|
//! | absent, or JSON `false` | nothing (`None`) |
//! | any other non-`true` value (`"true"`, `1`, `null`, an object…) | nothing; logged at `debug` once per turn |
//! | JSON `true` | one instruction, [`ARTIFACT_TOOLS_INSTRUCTION`]; text unchanged |
//!
//! - The flag is the host's *root* configuration value (not a session override), read through
//!   [`Configuration::root_value`] on every turn: turning it on or off applies from the next
//!   turn, nothing is cached.
//! - The hook never fails: [`Configuration`] reads are in-memory and infallible, and an
//!   unusable value counts as off. A panicking implementation would be contained by the
//!   dispatcher, which logs it and sends the turn without this instruction.
//! - Not done: VS Code's agent host later sent the instruction on a chat's first turn only and
//!   dropped it when the tools were unavailable; adopting that changes the built-ins'
//!   outgoing-sequence test, so every turn carries it here.
#![deny(missing_docs)]

use std::sync::Arc;

use agenthost_dispatcher::{
    ChatContribution, Contribution, ContributionContext, Hook, HookFuture, HookSet, MissingService,
    OutgoingTurn, SendContribution, ServiceRegistry,
};
use agenthost_services::Configuration;

/// The root configuration key of the flag; only the JSON `true` turns the contribution on.
pub const ARTIFACT_TOOLS_FLAG: &str = "artifactTools";

/// The instruction added to every turn while the flag is on.
pub const ARTIFACT_TOOLS_INSTRUCTION: &str = "You have artifact tools: they create or update a \
    named artifact — a document, a diagram, a code file — that the user sees separately from the \
    chat. Use them for substantial standalone output the user will read or reuse on its own, \
    instead of pasting it into your reply; to revise an artifact, update it under the same name \
    rather than creating a new one. Keep the chat reply short: say what you created or changed \
    and name the artifact.";

/// The `artifactTools` contribution. Register it with
/// `dispatcher.register::<ArtifactTools>()`; it needs `dyn Configuration` in the registry.
pub struct ArtifactTools {
    config: Arc<dyn Configuration>,
}

impl std::fmt::Debug for ArtifactTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactTools").finish_non_exhaustive()
    }
}

impl ArtifactTools {
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
        self.config.root_flag(ARTIFACT_TOOLS_FLAG)
    }
}

impl Contribution for ArtifactTools {
    const ID: &'static str = "artifactTools";
    const ORDER: i32 = 200;
    const HOOKS: HookSet = HookSet::of(&[Hook::OutgoingTurn]);

    fn create(
        _context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService> {
        Self::from_services(services)
    }
}

impl ChatContribution for ArtifactTools {
    fn on_outgoing_turn<'a>(
        &'a self,
        _turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        Box::pin(async move {
            if !self.is_enabled() {
                return Ok(None);
            }
            // Additive only: the text is never replaced.
            Ok(Some(SendContribution {
                instructions: Some(vec![ARTIFACT_TOOLS_INSTRUCTION.to_owned()]),
                text: None,
            }))
        })
    }
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;

//! The contract a contribution implements.

use futures::future::BoxFuture;

use agenthost_protocol::ahp_types::state::Turn;

use crate::context::ContributionContext;
use crate::hooks::HookSet;
use crate::payload::{
    AppliedClientAction, DispatchedAction, Disposition, HydrationContext, IncomingRequest,
    OutgoingTurn, RestoredChat, SendContribution, TurnEnd,
};
use crate::services::{MissingService, ServiceRegistry};

/// What a hook reports when it fails. The dispatcher logs it with the contribution's id and
/// applies the hook's failure policy.
pub type ContributionError = Box<dyn std::error::Error + Send + Sync>;

/// The result of a hook.
pub type HookResult<T = ()> = Result<T, ContributionError>;

/// The future an asynchronous hook returns.
pub type HookFuture<'a, T> = BoxFuture<'a, HookResult<T>>;

/// The seven hooks. Every hook is optional: implement the ones the contribution needs and list
/// them in [`Contribution::HOOKS`] — only listed hooks are dispatched to it. The method set is
/// pinned by `cargo xtask lint`; adding a hook means changing the pin in the same commit.
pub trait ChatContribution: Send + Sync {
    /// The admission gate, before any side effect of a turn. `Ok(None)` accepts. This *is* the
    /// decision: an error or a panic rejects the turn (the gate fails closed), and the first
    /// non-accept disposition stops the chain.
    fn on_incoming_request(&self, request: &IncomingRequest) -> HookResult<Option<Disposition>> {
        let _ = request;
        Ok(None)
    }

    /// A started turn reached a terminal outcome, or a request was refused before it started.
    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        let _ = turn;
        Ok(())
    }

    /// An accepted client action was reduced into host state (never server or rejected ones).
    fn on_did_apply_client_action(&self, action: &AppliedClientAction<'_>) -> HookResult {
        let _ = action;
        Ok(())
    }

    /// Any action was dispatched and its outcome is known — rejected ones included. Fires for
    /// every action: filter tightly.
    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        let _ = action;
        Ok(())
    }

    /// A turn is about to be sent: add instructions, or replace the message text.
    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> HookFuture<'a, Option<SendContribution>> {
        let _ = turn;
        Box::pin(async { Ok(None) })
    }

    /// A chat's restored turn list, possibly already transformed by earlier stages. Must return
    /// the list to pass on.
    fn on_hydrate_turns<'a>(
        &'a self,
        context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> HookFuture<'a, Vec<Turn>> {
        let _ = context;
        Box::pin(async move { Ok(turns.to_vec()) })
    }

    /// A chat is being restored, before it enters the session catalog (no provider yet).
    fn on_hydrate_chat<'a>(
        &'a self,
        context: &'a HydrationContext,
        chat: &'a RestoredChat,
    ) -> HookFuture<'a, RestoredChat> {
        let _ = context;
        Box::pin(async move { Ok(chat.clone()) })
    }
}

/// A contribution type: its static identity and its factory.
pub trait Contribution: ChatContribution + Sized + 'static {
    /// Unique across every registration (`localCommand`, `queueDrain`, …).
    const ID: &'static str;
    /// Lower runs first; ties break by registration order. Always explicit.
    const ORDER: i32;
    /// The hooks this contribution implements.
    const HOOKS: HookSet;

    /// Builds the contribution: the context first, then the services it resolves from the
    /// registry. A missing service fails the registration, naming the service.
    fn create(
        context: ContributionContext,
        services: &ServiceRegistry,
    ) -> Result<Self, MissingService>;
}

/// A contribution's identity as the dispatcher records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// The unique id.
    pub id: &'static str,
    /// The order.
    pub order: i32,
    /// The hooks it implements.
    pub hooks: HookSet,
}

impl Descriptor {
    /// The descriptor of a contribution type.
    pub fn of<C: Contribution>() -> Self {
        Self {
            id: C::ID,
            order: C::ORDER,
            hooks: C::HOOKS,
        }
    }
}

//! The seven hooks as data: for declaring which hooks a contribution implements, for per-hook
//! ordering and for rendering the ordering snapshot.

use std::fmt;

/// One of the seven lifecycle hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hook {
    /// `onIncomingRequest`: the admission gate, before any side effect of a turn.
    IncomingRequest,
    /// `onTurnEnd`: every terminal outcome of a started turn, and refused requests.
    TurnEnd,
    /// `onDidApplyClientAction`: an accepted client action was reduced.
    DidApplyClientAction,
    /// `onDidDispatchAction`: any action was dispatched, accepted or rejected.
    DidDispatchAction,
    /// `onOutgoingTurn`: a turn is about to be sent to its provider.
    OutgoingTurn,
    /// `onHydrateTurns`: a chat's restored turn list.
    HydrateTurns,
    /// `onHydrateChat`: a chat is restored, before it enters the catalog.
    HydrateChat,
}

impl Hook {
    /// Every hook, in the order the ordering snapshot lists them.
    pub const ALL: [Hook; 7] = [
        Hook::IncomingRequest,
        Hook::TurnEnd,
        Hook::DidApplyClientAction,
        Hook::DidDispatchAction,
        Hook::OutgoingTurn,
        Hook::HydrateTurns,
        Hook::HydrateChat,
    ];

    /// The hook's name as the design documents write it (`onTurnEnd`, …).
    pub fn name(self) -> &'static str {
        match self {
            Hook::IncomingRequest => "onIncomingRequest",
            Hook::TurnEnd => "onTurnEnd",
            Hook::DidApplyClientAction => "onDidApplyClientAction",
            Hook::DidDispatchAction => "onDidDispatchAction",
            Hook::OutgoingTurn => "onOutgoingTurn",
            Hook::HydrateTurns => "onHydrateTurns",
            Hook::HydrateChat => "onHydrateChat",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The set of hooks a contribution implements. Only implementers of a hook take part in its
/// dispatch, so ordering is effectively per hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HookSet(u8);

impl HookSet {
    /// No hook.
    pub const NONE: HookSet = HookSet(0);

    /// The set of the given hooks (usable in constants).
    pub const fn of(hooks: &[Hook]) -> HookSet {
        let mut bits = 0;
        let mut i = 0;
        while i < hooks.len() {
            bits |= hooks[i].bit();
            i += 1;
        }
        HookSet(bits)
    }

    /// Whether the set holds `hook`.
    pub const fn contains(self, hook: Hook) -> bool {
        self.0 & hook.bit() != 0
    }

    /// The hooks of the set, in [`Hook::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Hook> {
        Hook::ALL.into_iter().filter(move |h| self.contains(*h))
    }
}

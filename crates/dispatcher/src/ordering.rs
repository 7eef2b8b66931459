//! The per-hook execution order as plain text, for snapshot tests that pin it.

use std::fmt::Write;

use crate::dispatcher::Dispatcher;
use crate::hooks::Hook;

/// Renders the execution order of every hook: one line per implementer, `hook  order  id`, hooks
/// in [`Hook::ALL`] order and implementers in dispatch order. A hook nobody implements is listed
/// with `(none)` so a lost implementer shows as a change.
pub fn render_order(dispatcher: &Dispatcher) -> String {
    let mut out = String::new();
    for hook in Hook::ALL {
        let entries = dispatcher.order_of(hook);
        if entries.is_empty() {
            let _ = writeln!(out, "{:<24}{:>6}  (none)", hook.name(), "-");
        }
        for (order, id) in entries {
            let _ = writeln!(out, "{:<24}{order:>6}  {id}", hook.name());
        }
    }
    out
}

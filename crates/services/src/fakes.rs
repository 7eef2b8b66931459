//! Recording fakes of every service (feature `fakes`), for contribution tests.
//!
//! Each fake records every call, in order, as a value of its `…Call` enum ([`calls`] returns
//! them), and answers from its `…Answers` struct, which a test edits with `script`:
//!
//! ```
//! use agenthost_services::fakes::{FakeLocalCommands, LocalCommandsCall};
//! use agenthost_services::{LocalCommand, LocalCommands};
//!
//! let commands = FakeLocalCommands::default();
//! commands.script(|a| a.handle = Some(LocalCommand::Rename { title: "T".into() }));
//! assert!(commands.try_handle("anything").is_some());
//! assert_eq!(commands.calls(), [LocalCommandsCall::TryHandle("anything".into())]);
//! ```
//!
//! [`CapturedLogs`] captures what `tracing` writes, for a test to assert on.
//!
//! [`calls`]: FakeLocalCommands::calls

pub use crate::changesets::fake::{ChangesetCall, FakeChangesets};
pub use crate::checkpoint_fake::{CheckpointCall, FakeCheckpoints};
pub use crate::files::fake::{FakeFileService, FileAnswers, FileCall};
pub use crate::git_state::fake::{FakeGitState, GitStateCall};
pub use crate::worktrees::fake::{FakeWorktrees, WorktreeCall};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use agenthost_protocol::ahp_types::common::JsonObject;
use agenthost_protocol::ahp_types::state::{ChatState, Message, SessionState, UsageInfo};
use agenthost_protocol::{ChatUri, SessionUri, StateAction, ToolCallKey};
use futures::future::BoxFuture;
use serde_json::Value;

use crate::{
    ClientActionIntake, Configuration, DataError, DataFuture, DataOwner, DispatchError, Flags,
    HostState, ListenerId, LiveSubscriptions, LocalCommand, LocalCommands, ProviderLocator,
    ServerDispatch, SessionDataStore, StoredTitle, SubscriptionListener, SubscriptionTracker,
    TelemetryReporter, TitleController, TitleKind, TitleSource, TitleState, ToolCallBlock,
    ToolCallOutcome, ToolCallSnapshot, ToolCallTracker, TurnBlock, TurnCompletion, TurnSnapshot,
    TurnSpend, TurnStage, TurnTracker, UserMessageSent,
};

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

macro_rules! fake {
    ($(#[$doc:meta])* $name:ident, $call:ty, $answers:ty) => {
        $(#[$doc])*
        #[derive(Debug, Default)]
        pub struct $name {
            calls: Mutex<Vec<$call>>,
            answers: Mutex<$answers>,
        }

        impl $name {
            /// Every call so far, in order.
            pub fn calls(&self) -> Vec<$call> {
                lock(&self.calls).clone()
            }

            /// Edits the scripted answers.
            pub fn script(&self, edit: impl FnOnce(&mut $answers)) {
                edit(&mut lock(&self.answers));
            }

            fn record(&self, call: $call) {
                lock(&self.calls).push(call);
            }

            #[allow(dead_code, reason = "a fake without answers never reads them")]
            fn answers(&self) -> std::sync::MutexGuard<'_, $answers> {
                lock(&self.answers)
            }
        }
    };
}

mod data;
mod host;
mod intake;
mod titles;
mod trackers;

pub use data::*;
pub use host::*;
pub use intake::*;
pub use titles::*;
pub use trackers::*;

#[cfg(test)]
#[path = "fakes_tests.rs"]
mod tests;

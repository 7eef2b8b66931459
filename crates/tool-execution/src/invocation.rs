//! The shared invocation: the one object per tool call that observers render and the engine
//! executes.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agenthost_protocol::Uri;
use agenthost_protocol::ahp_types::state::{
    ToolCallConfirmationReason, ToolCallResult, ToolResultContent,
};
use agenthost_protocol::ids::ToolCallKey;
use agenthost_protocol::uri::ChatUri;
use tokio::sync::{oneshot, watch};

use crate::cancel::CancelToken;
use crate::keys::Claimant;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Where a local invocation stands, as a view renders it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum InvocationStatus {
    /// Created (by an observer or the engine); no run yet.
    #[default]
    Pending,
    /// A run is preparing: reading the input, asking the tool whether it needs a confirmation.
    Preparing,
    /// The local confirmation is showing; answer it with [`SharedInvocation::decide`].
    AwaitingConfirmation,
    /// The tool body is running.
    Executing,
    /// Settled with this result (failures included); boxed, as results are large.
    Completed(Box<ToolCallResult>),
    /// Settled without a result: denied, skipped remotely, removed, disposed.
    Cancelled,
}

impl InvocationStatus {
    /// Whether the invocation is settled.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Completed(_) | Self::Cancelled)
    }
}

/// A subagent chat's place in its parent's view: the parent tool call that spawned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentGroup {
    /// The parent chat, when known.
    pub parent_chat: Option<Uri>,
    /// The parent tool call whose group the call is rendered in.
    pub parent_tool_call_id: String,
}

/// Presentation attributes: late-bindable, never decided by whoever created the invocation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Presentation {
    /// Name shown for the tool.
    pub display_name: Option<String>,
    /// The subagent group the call belongs to, if its chat is a subagent chat.
    pub subagent_group: Option<SubagentGroup>,
    /// An icon identifier, if the observer has one.
    pub icon: Option<String>,
}

impl Presentation {
    /// Presentation derived from the owning chat: a subagent chat URI maps to its parent tool
    /// call id; `parent_chat` is the chat that spawned it, when the session catalog says so.
    pub fn derived(chat: &str, parent_chat: Option<&Uri>, display_name: Option<&str>) -> Self {
        let parent_call = ChatUri::parse(chat)
            .ok()
            .and_then(|uri| uri.subagent_parent().ok().flatten())
            .map(|(_, call)| call.as_str().to_owned());
        Self {
            display_name: display_name.map(str::to_owned),
            subagent_group: parent_call.map(|parent_tool_call_id| SubagentGroup {
                parent_chat: parent_chat.cloned(),
                parent_tool_call_id,
            }),
            icon: None,
        }
    }

    /// Fills every attribute `self` lacks from `other`.
    fn fill_from(&mut self, other: Presentation) {
        if self.display_name.is_none() {
            self.display_name = other.display_name;
        }
        if self.subagent_group.is_none() {
            self.subagent_group = other.subagent_group;
        }
        if self.icon.is_none() {
            self.icon = other.icon;
        }
    }
}

/// What an observer decides at a local confirmation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalDecision {
    /// Run it; `reason` is reflected exactly as `chat/toolCallConfirmed.confirmed`.
    Approve {
        /// `user-action` for a click, `setting` for a local auto-approval.
        reason: ToolCallConfirmationReason,
        /// The confirmation option chosen, if any.
        selected_option_id: Option<String>,
    },
    /// Do not run it: reflected as `chat/toolCallConfirmed { approved: false, reason: denied }`.
    Deny {
        /// The deny option chosen, if any.
        selected_option_id: Option<String>,
    },
    /// The view went away without a choice: treated as a denial.
    Cancel,
}

/// Everything a view renders, as one value (watch it with [`SharedInvocation::watch`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InvocationSnapshot {
    /// Where the invocation stands.
    pub status: InvocationStatus,
    /// The execution context of the current or last run (`None`: headless).
    pub context: Option<Claimant>,
    /// Presentation attributes.
    pub presentation: Presentation,
    /// How many times the local tool body was invoked (at most once per tool call).
    pub body_runs: u32,
    /// The last streamed partial content.
    pub content: Option<Vec<ToolResultContent>>,
}

/// The single per-tool-call object both the view renders and the engine executes. Cloning
/// shares it; identity is [`id`](Self::id) (or [`same`](Self::same)).
#[derive(Clone)]
pub struct SharedInvocation(Arc<Inner>);

struct Inner {
    id: u64,
    key: ToolCallKey,
    state: watch::Sender<InvocationSnapshot>,
    control: Mutex<Control>,
}

#[derive(Default)]
struct Control {
    decision: Option<oneshot::Sender<LocalDecision>>,
    token: Option<CancelToken>,
}

impl fmt::Debug for SharedInvocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInvocation")
            .field("id", &self.0.id)
            .field("key", &self.0.key)
            .field("status", &self.0.state.borrow().status)
            .finish()
    }
}

impl SharedInvocation {
    pub(crate) fn new(key: ToolCallKey, presentation: Presentation) -> Self {
        let (state, _) = watch::channel(InvocationSnapshot {
            presentation,
            ..InvocationSnapshot::default()
        });
        Self(Arc::new(Inner {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            key,
            state,
            control: Mutex::new(Control::default()),
        }))
    }

    /// A process-unique identity.
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Whether both handles are the same invocation.
    pub fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The tool call it belongs to.
    pub fn key(&self) -> &ToolCallKey {
        &self.0.key
    }

    /// The current state.
    pub fn snapshot(&self) -> InvocationSnapshot {
        self.0.state.borrow().clone()
    }

    /// The current status.
    pub fn status(&self) -> InvocationStatus {
        self.0.state.borrow().status.clone()
    }

    /// A receiver that sees every change.
    pub fn watch(&self) -> watch::Receiver<InvocationSnapshot> {
        self.0.state.subscribe()
    }

    /// Binds presentation attributes late: every attribute given in `presentation` replaces the
    /// current one; absent attributes keep their value.
    pub fn bind_presentation(&self, presentation: Presentation) {
        self.0.state.send_modify(|s| {
            let mut bound = presentation;
            bound.fill_from(s.presentation.clone());
            s.presentation = bound;
        });
    }

    /// Answers the local confirmation that is showing. Returns `false` when none is.
    pub fn decide(&self, decision: LocalDecision) -> bool {
        let sender = self.control().decision.take();
        match sender {
            Some(sender) => sender.send(decision).is_ok(),
            None => false,
        }
    }

    /// Cancels from the view: a showing confirmation is answered with
    /// [`LocalDecision::Cancel`] (reflected as a denial); a preparing or executing run has its
    /// token cancelled (no completion is dispatched for it).
    pub fn cancel(&self) {
        if self.decide(LocalDecision::Cancel) {
            return;
        }
        if let Some(token) = self.control().token.clone() {
            token.cancel();
        }
    }

    fn control(&self) -> MutexGuard<'_, Control> {
        self.0
            .control
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn fill_presentation(&self, presentation: Presentation) {
        self.0
            .state
            .send_modify(|s| s.presentation.fill_from(presentation));
    }

    pub(crate) fn begin_attempt(&self, context: Option<Claimant>, token: CancelToken) {
        {
            let mut control = self.control();
            control.decision = None;
            control.token = Some(token);
        }
        self.0.state.send_modify(|s| {
            s.status = InvocationStatus::Preparing;
            s.context = context;
        });
    }

    pub(crate) fn await_decision(&self) -> oneshot::Receiver<LocalDecision> {
        let (sender, receiver) = oneshot::channel();
        self.control().decision = Some(sender);
        self.set_status(InvocationStatus::AwaitingConfirmation);
        receiver
    }

    pub(crate) fn begin_body(&self) {
        self.control().decision = None;
        self.0.state.send_modify(|s| {
            s.status = InvocationStatus::Executing;
            s.body_runs += 1;
        });
    }

    pub(crate) fn set_content(&self, content: Vec<ToolResultContent>) {
        self.0.state.send_modify(|s| s.content = Some(content));
    }

    pub(crate) fn set_status(&self, status: InvocationStatus) {
        self.0.state.send_modify(|s| s.status = status);
    }

    /// Settles unless already settled; drops the decision slot and the token.
    pub(crate) fn settle(&self, status: InvocationStatus) {
        {
            let mut control = self.control();
            control.decision = None;
            control.token = None;
        }
        self.0.state.send_if_modified(|s| {
            if s.status.is_terminal() {
                return false;
            }
            s.status = status;
            true
        });
    }
}

#[cfg(test)]
#[path = "invocation_tests.rs"]
mod tests;

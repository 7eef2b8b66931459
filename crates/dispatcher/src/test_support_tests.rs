//! A configurable probe contribution that records every call, shared by the unit tests.

use std::sync::{Arc, Mutex};

use agenthost_protocol::ahp_types::state::{Message, Turn};
use futures::future::BoxFuture;
use serde_json::json;

use crate::{
    AppliedClientAction, ChatContribution, ClientContext, Descriptor, DispatchedAction, Dispatcher,
    Disposition, Hook, HookResult, HookSet, HydrationContext, IncomingRequest, LaunchKind,
    OutgoingTurn, Registration, RequestSource, RestoredChat, SendContribution, ServiceRegistry,
    TurnEnd, TurnEndReason,
};

pub type Log = Arc<Mutex<Vec<String>>>;

pub fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

pub fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

/// What a probe does when called.
#[derive(Clone, Default)]
pub enum Act {
    /// Succeed without contributing.
    #[default]
    Nothing,
    /// Return an error.
    Fail,
    /// Panic.
    Panic,
    /// Gate: answer with this disposition.
    Dispose(Disposition),
    /// Outgoing: contribute this.
    Send(SendContribution),
    /// Outgoing: replace the text with "<current text>+<suffix>".
    Append(&'static str),
    /// Hydrate turns: append a turn with this id; hydrate chat: set the title to it.
    Stage(&'static str),
    /// Hydrate chat: derive the draft text from the current title.
    DraftFromTitle,
}

pub struct Probe {
    pub name: &'static str,
    pub log: Log,
    pub act: Act,
}

impl Probe {
    fn record(&self, hook: Hook, detail: &str) {
        let line = if detail.is_empty() {
            format!("{} {}", self.name, hook.name())
        } else {
            format!("{} {} {detail}", self.name, hook.name())
        };
        self.log.lock().unwrap().push(line);
    }

    fn observe(&self, hook: Hook, detail: &str) -> HookResult {
        self.record(hook, detail);
        match self.act {
            Act::Fail => Err(format!("{} failed on purpose", self.name).into()),
            Act::Panic => panic!("{} panicked on purpose", self.name),
            _ => Ok(()),
        }
    }
}

impl ChatContribution for Probe {
    fn on_incoming_request(&self, request: &IncomingRequest) -> HookResult<Option<Disposition>> {
        self.observe(Hook::IncomingRequest, &format!("{:?}", request.source))?;
        Ok(match &self.act {
            Act::Dispose(d) => Some(d.clone()),
            _ => None,
        })
    }

    fn on_turn_end(&self, turn: &TurnEnd) -> HookResult {
        self.observe(Hook::TurnEnd, turn.turn_id.as_deref().unwrap_or(""))
    }

    fn on_did_apply_client_action(&self, action: &AppliedClientAction<'_>) -> HookResult {
        self.observe(Hook::DidApplyClientAction, action.channel)
    }

    fn on_did_dispatch_action(&self, action: &DispatchedAction<'_>) -> HookResult {
        self.observe(
            Hook::DidDispatchAction,
            action.rejection_reason.unwrap_or("accepted"),
        )
    }

    fn on_outgoing_turn<'a>(
        &'a self,
        turn: &'a OutgoingTurn,
    ) -> BoxFuture<'a, HookResult<Option<SendContribution>>> {
        Box::pin(async move {
            // Yield once so ordering holds across real suspension points.
            tokio::task::yield_now().await;
            self.observe(Hook::OutgoingTurn, &turn.message.text)?;
            Ok(match &self.act {
                Act::Send(c) => Some(c.clone()),
                Act::Append(suffix) => Some(SendContribution {
                    instructions: None,
                    text: Some(format!("{}+{suffix}", turn.message.text)),
                }),
                _ => None,
            })
        })
    }

    fn on_hydrate_turns<'a>(
        &'a self,
        _context: &'a HydrationContext,
        turns: &'a [Turn],
    ) -> BoxFuture<'a, HookResult<Vec<Turn>>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            let ids: Vec<&str> = turns.iter().map(|t| t.id.as_str()).collect();
            self.observe(Hook::HydrateTurns, &ids.join(","))?;
            let mut turns = turns.to_vec();
            if let Act::Stage(id) = self.act {
                turns.push(turn(id));
            }
            Ok(turns)
        })
    }

    fn on_hydrate_chat<'a>(
        &'a self,
        _context: &'a HydrationContext,
        chat: &'a RestoredChat,
    ) -> BoxFuture<'a, HookResult<RestoredChat>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            self.observe(Hook::HydrateChat, chat.title.as_deref().unwrap_or(""))?;
            let mut chat = chat.clone();
            match self.act {
                Act::Stage(title) => chat.title = Some(title.to_owned()),
                Act::DraftFromTitle => {
                    let title = chat.title.clone().unwrap_or_default();
                    chat.draft = Some(message(&format!("draft for {title}")));
                }
                _ => {}
            }
            Ok(chat)
        })
    }
}

/// Registers a probe implementing `hooks`.
pub fn probe(
    dispatcher: &Dispatcher,
    name: &'static str,
    order: i32,
    hooks: &[Hook],
    log: &Log,
    act: Act,
) -> Registration {
    let descriptor = Descriptor {
        id: name,
        order,
        hooks: HookSet::of(hooks),
    };
    let log = Arc::clone(log);
    dispatcher
        .register_with(descriptor, move |_, _| {
            Ok(Arc::new(Probe { name, log, act }))
        })
        .unwrap()
}

pub fn dispatcher() -> Dispatcher {
    Dispatcher::new(ServiceRegistry::new())
}

pub fn message(text: &str) -> Message {
    serde_json::from_value(json!({
        "text": text,
        "origin": { "kind": "user" },
        "attachments": [{ "type": "simple", "label": "note.txt" }],
        "model": { "id": "model-1" },
        "_meta": { "client": "test" }
    }))
    .unwrap()
}

pub fn turn(id: &str) -> Turn {
    serde_json::from_value(json!({
        "id": id, "message": { "text": id, "origin": { "kind": "user" } },
        "responseParts": [], "state": "complete"
    }))
    .unwrap()
}

pub fn turn_end() -> TurnEnd {
    TurnEnd {
        session: "ahp-session:/s".parse().unwrap(),
        chat: "ahp-chat:/c".parse().unwrap(),
        turn_id: Some("t1".into()),
        reason: TurnEndReason::Success,
        client_context: None,
    }
}

pub fn incoming(source: RequestSource) -> IncomingRequest {
    IncomingRequest {
        session: "ahp-session:/s".parse().unwrap(),
        chat: "ahp-chat:/c".parse().unwrap(),
        message: message("hello"),
        turn_id: "t1".into(),
        source,
        client_id: Some("client-a".into()),
        client_context: ClientContext::unknown(LaunchKind::Serve),
    }
}

pub fn outgoing(text: &str) -> OutgoingTurn {
    OutgoingTurn {
        session: "ahp-session:/s".parse().unwrap(),
        chat: "ahp-chat:/c".parse().unwrap(),
        message: message(text),
        turn_id: "t1".into(),
    }
}

pub fn hydration() -> HydrationContext {
    HydrationContext {
        session: "ahp-session:/s".parse().unwrap(),
        chat: "ahp-chat:/c".parse().unwrap(),
    }
}

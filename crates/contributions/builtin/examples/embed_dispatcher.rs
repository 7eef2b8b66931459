//! Embedding the contribution dispatcher in a host of your own, with two built-in contributions
//! and no agenthost host around them.
//!
//! The dispatcher resolves each contribution's services from a `ServiceRegistry`. Here the
//! services are the recording fakes of `agenthost-services` (feature `fakes`): `FakeHostState`
//! answers what the host's state holds, `FakeServerDispatch` records the actions the
//! contributions dispatch instead of reducing them. One `onTurnEnd` goes through the dispatcher;
//! `sessionTitle` (order 400) titles the chat and cascades the title to the session, then
//! `markUnread` (order 500) marks the chat and the session unread. The example checks both.
//!
//! Run it with `cargo run -p agenthost-contributions --example embed_dispatcher`.

use std::sync::Arc;

use agenthost_contrib_mark_unread::MarkUnread;
use agenthost_contrib_session_title::SessionTitle;
use agenthost_dispatcher::{Dispatcher, ServiceRegistry, TurnEnd, TurnEndReason};
use agenthost_protocol::StateAction;
use agenthost_protocol::ahp_types::state::SessionStatus;
use agenthost_services::fakes::{
    DispatchCall, FakeHostState, FakeServerDispatch, FakeSessionData, FakeTitleController,
};
use agenthost_services::{HostState, ServerDispatch, SessionDataStore, TitleController};
use serde_json::json;

const SESSION: &str = "ahp-session:/embedded";
const CHAT: &str = "ahp-chat:/embedded-main";

type Failure = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Failure> {
    // What the host's state holds: a session whose default chat is idle, and both were read.
    const IDLE_AND_READ: u32 = SessionStatus::Idle.0 | SessionStatus::IsRead.0;
    let host = Arc::new(FakeHostState::default());
    let session = serde_json::from_value(json!({
        "provider": "scripted", "title": "New session", "status": IDLE_AND_READ,
        "lifecycle": "ready", "activeClients": [], "chats": [], "defaultChat": CHAT
    }))?;
    let chat = serde_json::from_value(json!({
        "resource": CHAT, "title": "New chat", "status": IDLE_AND_READ,
        "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
    }))?;
    host.script(|answers| {
        answers.sessions.insert(SESSION.into(), session);
        answers.chats.insert(CHAT.into(), chat);
        answers.chat_sessions.insert(CHAT.into(), SESSION.into());
    });
    // The title the title controller decides after the chat's first turn.
    let titles = Arc::new(FakeTitleController::default());
    titles.script(|answers| answers.refined = Some("Tidy the README".into()));
    let dispatch = Arc::new(FakeServerDispatch::default());

    // The two contributions' services, then the contributions.
    let mut services = ServiceRegistry::new();
    services
        .insert::<dyn HostState>(host)
        .insert::<dyn ServerDispatch>(dispatch.clone())
        .insert::<dyn TitleController>(titles)
        .insert::<dyn SessionDataStore>(Arc::new(FakeSessionData::default()));
    let dispatcher = Dispatcher::new(services);
    let _title = dispatcher.register::<SessionTitle>()?;
    let _unread = dispatcher.register::<MarkUnread>()?;
    println!(
        "onTurnEnd runs: {:?}",
        dispatcher.order_of(agenthost_dispatcher::Hook::TurnEnd)
    );

    // The chat's turn ended.
    dispatcher.turn_end(&TurnEnd {
        session: SESSION.parse()?,
        chat: CHAT.parse()?,
        turn_id: Some("t1".into()),
        reason: TurnEndReason::Success,
        client_context: None,
    });

    // What the contributions did: the actions they dispatched, in order.
    let calls = dispatch.calls();
    for DispatchCall { channel, action } in &calls {
        println!("{channel}: {}", serde_json::to_string(action)?);
    }
    let kinds: Vec<(&str, &str)> = calls
        .iter()
        .map(|call| (call.channel.as_str(), kind(&call.action)))
        .collect();
    let expected = [
        (SESSION, "the chat's catalog title"),
        (SESSION, "the session title"),
        (CHAT, "the chat unread"),
        (SESSION, "the session unread"),
    ];
    if kinds != expected {
        return Err(
            format!("the contributions dispatched {kinds:?}, expected {expected:?}").into(),
        );
    }
    let titled = calls.iter().any(|call| {
        matches!(&call.action, StateAction::SessionTitleChanged(change) if change.title == "Tidy the README")
    });
    if !titled {
        return Err("the session did not get the refined title".into());
    }
    println!("ok: sessionTitle titled the chat and the session, markUnread marked both unread");
    Ok(())
}

/// What an action does, in words.
fn kind(action: &StateAction) -> &'static str {
    match action {
        StateAction::SessionChatUpdated(_) => "the chat's catalog title",
        StateAction::SessionTitleChanged(_) => "the session title",
        StateAction::ChatIsReadChanged(change) if !change.is_read => "the chat unread",
        StateAction::SessionIsReadChanged(change) if !change.is_read => "the session unread",
        _ => "something else",
    }
}

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use agenthost_protocol::SessionUri;
use agenthost_protocol::ahp_types::state::ResponsePart;
use agenthost_services::fakes::{DispatchCall, FakeServerDispatch, FakeWorktrees, WorktreeCall};
use agenthost_services::{ANNOUNCEMENT_PART_ID, IsolatedSession, announcement_part};
use serde_json::json;

use super::*;

const SESSION: &str = "scripted:/s1";

fn session() -> SessionUri {
    SessionUri::parse(SESSION).unwrap()
}

fn default_chat() -> ChatUri {
    ChatUri::default_for(&session())
}

fn turn(id: &str) -> Turn {
    serde_json::from_value(json!({
        "id": id, "message": { "text": "hello", "origin": { "kind": "user" } },
        "responseParts": [{ "kind": "markdown", "id": "p1", "content": "answer" }],
        "state": "complete"
    }))
    .unwrap()
}

fn record() -> IsolatedSession {
    IsolatedSession {
        worktrees: vec![worktree()],
        requested: vec!["file:///x/proj".into()],
        directories: vec!["file:///x/proj.worktrees/session-s1".into()],
        announced: true,
    }
}

fn worktree() -> agenthost_services::Worktree {
    agenthost_services::Worktree {
        repo_root: PathBuf::from("/x/proj"),
        path: PathBuf::from("/x/proj.worktrees/session-s1"),
        branch: "agents/session-s1".into(),
        base: "0123456789abcdef0123456789abcdef01234567".into(),
    }
}

async fn hydrate(contribution: &WorktreeAnnouncement, chat: &ChatUri, turns: &[Turn]) -> Vec<Turn> {
    let context = HydrationContext {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
    };
    contribution
        .on_hydrate_turns(&context, turns)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_restored_default_chat_gets_the_announcement_first_once() {
    let fake = Arc::new(FakeWorktrees::default());
    fake.insert(&session(), record());
    let contribution =
        WorktreeAnnouncement::new(fake.clone(), Arc::new(FakeServerDispatch::default()));
    let turns = vec![turn("t1"), turn("t2")];

    let restored = hydrate(&contribution, &default_chat(), &turns).await;
    assert_eq!(restored.len(), 2);
    assert_eq!(
        restored[0].response_parts[0],
        announcement_part(&record().announcement())
    );
    assert_eq!(restored[0].response_parts[1..], turns[0].response_parts[..]);
    assert_eq!(restored[1], turns[1]);
    let ResponsePart::Markdown(part) = &restored[0].response_parts[0] else {
        panic!("not markdown");
    };
    assert_eq!(part.id, ANNOUNCEMENT_PART_ID);
    assert!(
        part.content.contains("agents/session-s1"),
        "{}",
        part.content
    );

    // Hydrating again does not add a second one.
    assert_eq!(
        hydrate(&contribution, &default_chat(), &restored).await,
        restored
    );
    assert_eq!(
        fake.calls(),
        vec![
            WorktreeCall::RestoreAnnouncement(session(), default_chat(), 2),
            WorktreeCall::RestoreAnnouncement(session(), default_chat(), 2),
        ]
    );
}

#[tokio::test]
async fn other_chats_empty_histories_and_plain_sessions_pass_through() {
    let fake = Arc::new(FakeWorktrees::default());
    let contribution =
        WorktreeAnnouncement::new(fake.clone(), Arc::new(FakeServerDispatch::default()));
    let turns = vec![turn("t1")];
    // Not isolated: the service is asked and nothing changes.
    assert_eq!(hydrate(&contribution, &default_chat(), &turns).await, turns);

    fake.insert(&session(), record());
    let side = ChatUri::parse("ahp-chat:/side").unwrap();
    assert_eq!(hydrate(&contribution, &side, &turns).await, turns);
    assert_eq!(
        hydrate(&contribution, &default_chat(), &[]).await,
        Vec::<Turn>::new()
    );
    // Only the default chat with turns reached the service.
    assert_eq!(
        fake.calls(),
        vec![WorktreeCall::RestoreAnnouncement(
            session(),
            default_chat(),
            1
        )]
    );
}

#[test]
fn it_registers_at_order_180_on_outgoing_turns_and_hydrate_turns() {
    assert_eq!(WorktreeAnnouncement::ID, "worktreeAnnouncement");
    assert_eq!(WorktreeAnnouncement::ORDER, 180);
    assert_eq!(
        WorktreeAnnouncement::HOOKS,
        HookSet::of(&[Hook::OutgoingTurn, Hook::HydrateTurns])
    );
}

fn outgoing(chat: &ChatUri, turn_id: &str) -> OutgoingTurn {
    OutgoingTurn {
        session: SESSION.parse().unwrap(),
        chat: chat.parse().unwrap(),
        message: serde_json::from_value(json!({ "text": "hello", "origin": { "kind": "user" } }))
            .unwrap(),
        turn_id: turn_id.to_owned(),
    }
}

#[tokio::test]
async fn the_default_chats_first_sent_turn_shows_the_announcement_live_once() {
    let fake = Arc::new(FakeWorktrees::default());
    let mut unannounced = record();
    unannounced.announced = false;
    fake.insert(&session(), unannounced.clone());
    let dispatch = Arc::new(FakeServerDispatch::default());
    let contribution = WorktreeAnnouncement::new(fake.clone(), dispatch.clone());

    let side = ChatUri::parse("ahp-chat:/side").unwrap();
    for (chat, turn) in [
        (&side, "s1"),
        (&default_chat(), "t1"),
        (&default_chat(), "t2"),
    ] {
        let sent = contribution.on_outgoing_turn(&outgoing(chat, turn)).await;
        assert_eq!(
            sent.unwrap(),
            None,
            "nothing added to what the agent is sent"
        );
    }
    assert_eq!(
        dispatch.calls(),
        vec![DispatchCall {
            channel: default_chat().to_string(),
            action: StateAction::ChatResponsePart(ChatResponsePartAction {
                turn_id: "t1".into(),
                part: announcement_part(&unannounced.announcement()),
                meta: None,
            }),
        }]
    );
}

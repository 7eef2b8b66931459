use agenthost_protocol::ahp_types::ROOT_RESOURCE_URI;
use serde_json::json;

use crate::fixtures::*;
use crate::{ApplyError, ChannelKind, ChannelState, HostState, Reduced, StateError};

#[test]
fn routes_each_action_to_its_channel_reducer() {
    let mut host = host();
    let title = action(json!({ "type": "session/titleChanged", "title": "New" }));
    assert_eq!(
        host.apply_server_action(SESSION, &title),
        Ok(Reduced::Applied)
    );
    assert_eq!(session(&host).title, "New");

    assert_eq!(
        host.apply_server_action(CHAT, &turn_started("t1")),
        Ok(Reduced::Applied)
    );
    assert_eq!(chat(&host).active_turn.as_ref().unwrap().id, "t1");

    let sessions = action(json!({ "type": "root/activeSessionsChanged", "activeSessions": 3 }));
    assert_eq!(
        host.apply_server_action(ROOT_RESOURCE_URI, &sessions),
        Ok(Reduced::Applied)
    );
    assert_eq!(host.root().active_sessions, Some(3));
}

#[test]
fn reports_no_op_for_stale_turn_actions() {
    let mut host = host_in_turn();
    let stale = action(json!({ "type": "chat/turnComplete", "turnId": "old", "duration": 1 }));
    assert_eq!(host.apply_server_action(CHAT, &stale), Ok(Reduced::NoOp));
}

#[test]
fn server_action_on_wrong_channel_is_rejected_and_changes_nothing() {
    let mut host = host();
    let before = host.clone();
    let result = host.apply_server_action(SESSION, &turn_complete("t1"));
    assert!(matches!(result, Err(ApplyError::Rejected(_))), "{result:?}");
    assert_eq!(host, before);
    assert_eq!(
        host.apply_server_action("ahp-chat:/missing", &turn_complete("t1")),
        Err(ApplyError::UnknownChannel("ahp-chat:/missing".into()))
    );
}

#[test]
fn keeps_the_chat_to_session_index() {
    let mut host = host();
    host.insert_chat(
        &SESSION.parse().unwrap(),
        &chat_state("ahp-chat:/c2").resource.parse().unwrap(),
        chat_state("ahp-chat:/c2"),
    )
    .unwrap();
    assert_eq!(
        host.chat_session("ahp-chat:/c2").map(|s| s.as_str()),
        Some(SESSION)
    );
    // The typed URIs the index keeps: a chat's, its owner's, a session's own.
    assert_eq!(
        host.chat_uri("ahp-chat:/c2").map(|c| c.as_str()),
        Some("ahp-chat:/c2")
    );
    assert_eq!(
        host.owning_session("ahp-chat:/c2").map(|s| s.as_str()),
        Some(SESSION)
    );
    assert_eq!(
        host.owning_session(SESSION).map(|s| s.as_str()),
        Some(SESSION)
    );
    assert_eq!(host.chat_uri(SESSION), None);
    assert_eq!(host.owning_session(ROOT_RESOURCE_URI), None);
    let chats: Vec<&str> = host
        .session_chats(SESSION)
        .map(|(uri, _)| uri.as_str())
        .collect();
    assert_eq!(chats, [CHAT, "ahp-chat:/c2"]);

    assert!(host.remove_chat(CHAT).is_some());
    assert_eq!(host.chat_session(CHAT), None);
    assert_eq!(host.channel_kind(CHAT), None);
    let chats: Vec<&str> = host
        .session_chats(SESSION)
        .map(|(uri, _)| uri.as_str())
        .collect();
    assert_eq!(chats, ["ahp-chat:/c2"]);
}

#[test]
fn removing_a_session_cascades_to_its_chats_only() {
    let mut host = host();
    host.insert_session(&"ahp-session:/s2".parse().unwrap(), session_state())
        .unwrap();
    host.insert_chat(
        &"ahp-session:/s2".parse().unwrap(),
        &chat_state("ahp-chat:/other").resource.parse().unwrap(),
        chat_state("ahp-chat:/other"),
    )
    .unwrap();

    let (_, chats) = host.remove_session(SESSION).unwrap();
    assert_eq!(chats.len(), 1);
    assert_eq!(chats[0].resource, CHAT);
    assert!(host.chat(CHAT).is_none());
    assert!(host.chat("ahp-chat:/other").is_some());
    assert_eq!(
        host.chat_session("ahp-chat:/other").map(|s| s.as_str()),
        Some("ahp-session:/s2")
    );
    assert!(host.remove_session(SESSION).is_none());
}

#[test]
fn structural_errors_are_reported() {
    let mut host = host();
    assert_eq!(
        host.insert_session(&SESSION.parse().unwrap(), session_state()),
        Err(StateError::AlreadyExists(SESSION.into()))
    );
    assert_eq!(
        host.insert_chat(
            &"ahp-session:/none".parse().unwrap(),
            &chat_state("ahp-chat:/c9").resource.parse().unwrap(),
            chat_state("ahp-chat:/c9")
        ),
        Err(StateError::UnknownSession("ahp-session:/none".into()))
    );
    assert_eq!(
        host.insert_chat(
            &SESSION.parse().unwrap(),
            &chat_state(CHAT).resource.parse().unwrap(),
            chat_state(CHAT)
        ),
        Err(StateError::AlreadyExists(CHAT.into()))
    );
    let terminal = serde_json::from_value(json!({
        "title": "bash", "content": [], "lifecycle": { "status": "running" },
        "claim": { "kind": "client", "clientId": CLIENT }
    }))
    .unwrap();
    assert_eq!(
        host.insert_channel(
            ROOT_RESOURCE_URI,
            ChannelState::Terminal(Box::new(terminal))
        ),
        Err(StateError::RootChannel)
    );
    assert_eq!(
        host.insert_channel(
            "ahp-session:/s3",
            ChannelState::Session(Box::new(session_state()))
        ),
        Err(StateError::SessionNeedsUri("ahp-session:/s3".into()))
    );
    assert_eq!(
        host.insert_chat(
            &SESSION.parse().unwrap(),
            &"ahp-chat:/c4".parse().unwrap(),
            chat_state("ahp-chat:/c5")
        ),
        Err(StateError::ResourceMismatch {
            uri: "ahp-chat:/c4".into(),
            resource: "ahp-chat:/c5".into()
        })
    );
    assert_eq!(
        host.insert_channel(
            "ahp-chat:/c3",
            ChannelState::Chat(Box::new(chat_state("ahp-chat:/c3")))
        ),
        Err(StateError::ChatNeedsSession("ahp-chat:/c3".into()))
    );
    // A failed insertion leaves the index untouched.
    assert!(host.chat_session("ahp-chat:/c9").is_none());
}

#[test]
fn other_channels_route_to_their_reducers() {
    let mut host = HostState::new(root());
    let terminal = serde_json::from_value(json!({
        "title": "bash", "content": [], "lifecycle": { "status": "running" },
        "claim": { "kind": "client", "clientId": CLIENT }
    }));
    if let Ok(terminal) = terminal {
        host.insert_channel(
            "ahp-terminal:/t1",
            ChannelState::Terminal(Box::new(terminal)),
        )
        .unwrap();
        assert_eq!(
            host.channel_kind("ahp-terminal:/t1"),
            Some(ChannelKind::Terminal)
        );
        let title = action(json!({ "type": "terminal/titleChanged", "title": "zsh" }));
        assert_eq!(
            host.apply_client_action("ahp-terminal:/t1", &title, CLIENT),
            Ok(Reduced::Applied)
        );
        let data = action(json!({ "type": "terminal/data", "data": "x" }));
        assert!(matches!(
            host.apply_client_action("ahp-terminal:/t1", &data, CLIENT),
            Err(ApplyError::Rejected(_))
        ));
    } else {
        panic!("terminal fixture must decode: {terminal:?}");
    }
}

//! URI parsing of `agenthost_protocol::uri`: `SessionUri`, `ChatUri` (derived default and
//! subagent chats), `ChangesetUri`, `Channel`, `SafeId`, `file_uri_to_path` /
//! `path_to_file_uri`. The input is tried as a URI and, when it is a valid id, as the id inside
//! every URI the host derives. Never panics, and:
//!
//! - what parses keeps its spelling and re-parses to the same value (`parse(to_string(x)) == x`);
//! - a URI has one spelling: rebuilding a parsed session / changeset from its parts gives the
//!   input back, and an id never decodes to anything but a safe id (non-empty, no control
//!   character, not `.` / `..`);
//! - derived chat and changeset URIs decode to the session and id they were built from;
//! - `file_uri_to_path(path_to_file_uri(p)) == p`.
#![no_main]

use std::path::Path;

use agenthost_protocol::uri::{
    ChangesetScope, ChangesetUri, Channel, ChatUri, SafeId, SessionUri, file_uri_to_path,
    path_to_file_uri,
};
use libfuzzer_sys::fuzz_target;

fn assert_safe(id: &SafeId) {
    assert!(!id.is_empty() && id.len() <= SafeId::MAX_LEN, "{id:?}");
    assert!(!id.chars().any(char::is_control), "{id:?}");
    assert!(id.as_str() != "." && id.as_str() != "..", "{id:?}");
}

/// Everything the host derives from `session` decodes back to it.
fn check_session(session: &SessionUri) {
    assert_safe(session.id());
    assert_eq!(SessionUri::parse(session.as_str()).as_ref(), Ok(session));
    // One spelling: the parts rebuild the URI.
    let rebuilt = match session.provider_scheme() {
        Some(provider) => SessionUri::with_provider(provider, session.id().clone()),
        None => Ok(SessionUri::canonical(session.id().clone())),
    };
    assert_eq!(rebuilt.as_ref(), Ok(session));
    assert_eq!(
        Channel::parse(session.as_str()),
        Ok(Channel::Session(session.clone()))
    );
    assert_eq!(
        Channel::parse(&session.annotations_uri()),
        Ok(Channel::Annotations(session.clone()))
    );

    let default_chat = ChatUri::default_for(session);
    assert_eq!(
        ChatUri::parse(default_chat.as_str()).as_ref(),
        Ok(&default_chat)
    );
    assert_eq!(
        default_chat.default_chat_session(),
        Ok(Some(session.clone()))
    );
    assert_eq!(default_chat.subagent_parent(), Ok(None));
    assert_eq!(
        Channel::parse(default_chat.as_str()),
        Ok(Channel::Chat(default_chat.clone()))
    );

    let changeset = ChangesetUri::session(session);
    assert_eq!(ChangesetUri::parse(&changeset.to_string()), Ok(changeset));
}

fn check_id(id: &SafeId, session: &SessionUri) {
    assert_safe(id);
    let subagent = ChatUri::subagent(session, id);
    assert_eq!(
        subagent.subagent_parent(),
        Ok(Some((session.clone(), id.clone())))
    );
    assert_eq!(subagent.default_chat_session(), Ok(None));
    let chat = ChatUri::canonical(id);
    assert_eq!(ChatUri::parse(chat.as_str()).as_ref(), Ok(&chat));
    let turn = ChangesetUri::turn(session, id);
    let parsed = ChangesetUri::parse(&turn.to_string());
    assert_eq!(parsed.as_ref(), Ok(&turn));
    assert_eq!(turn.scope(), &ChangesetScope::Turn(id.clone()));
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };

    if let Ok(session) = SessionUri::parse(input) {
        assert_eq!(session.as_str(), input);
        assert_eq!(session.to_string(), input);
        check_session(&session);
    }

    if let Ok(chat) = ChatUri::parse(input) {
        assert_eq!(chat.as_str(), input);
        assert_eq!(ChatUri::parse(&chat.to_string()).as_ref(), Ok(&chat));
        // Derived chats: the payload may carry base64 padding (`=` or `%3D`), nothing else.
        if let Ok(Some(session)) = chat.default_chat_session() {
            check_session(&session);
            let canonical = ChatUri::default_for(&session);
            let padding = input.strip_prefix(canonical.as_str());
            assert!(
                padding.is_some_and(|p| p.replace("%3D", "=").replace("%3d", "=").len() <= 2
                    && p.replace("%3D", "")
                        .replace("%3d", "")
                        .replace('=', "")
                        .is_empty()),
                "{input} is not a spelling of {canonical}"
            );
        }
        if let Ok(Some((session, tool_call))) = chat.subagent_parent() {
            check_session(&session);
            check_id(&tool_call, &session);
        }
    }

    if let Ok(changeset) = ChangesetUri::parse(input) {
        check_session(changeset.session_uri());
        if let ChangesetScope::Turn(turn) = changeset.scope() {
            check_id(turn, changeset.session_uri());
        }
        assert_eq!(
            changeset.to_string(),
            input,
            "a second spelling of a changeset"
        );
        assert_eq!(ChangesetUri::parse(&changeset.to_string()), Ok(changeset));
    }

    if let Ok(channel) = Channel::parse(input) {
        assert_eq!(channel.to_string(), input);
        assert_eq!(Channel::parse(&channel.to_string()).as_ref(), Ok(&channel));
        match &channel {
            Channel::Session(session) | Channel::Annotations(session) => check_session(session),
            Channel::Chat(chat) => assert_eq!(chat.as_str(), input),
            _ => {}
        }
    }

    if let Ok(id) = SafeId::new(input) {
        let canonical = SessionUri::canonical(id.clone());
        assert_eq!(canonical.id(), &id);
        check_session(&canonical);
        check_id(&id, &canonical);
        let provider = SessionUri::with_provider("copilotcli", id.clone());
        let provider = provider.expect("a valid provider scheme");
        check_session(&provider);
    }

    if let Ok(path) = file_uri_to_path(input) {
        assert!(path.is_absolute(), "{path:?}");
        if let Ok(uri) = path_to_file_uri(&path) {
            assert_eq!(file_uri_to_path(&uri).as_deref(), Ok(path.as_path()));
        }
    }
    // A real path never holds NUL (`path_to_file_uri` encodes it, `file_uri_to_path` refuses it).
    let path = Path::new(input);
    if !input.contains('\0')
        && let Ok(uri) = path_to_file_uri(path)
    {
        assert_eq!(file_uri_to_path(&uri).as_deref(), Ok(path), "{uri}");
    }
});

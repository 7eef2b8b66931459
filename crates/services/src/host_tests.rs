use std::sync::{Arc, Mutex};

use agenthost_protocol::ahp_types::state::RootState;
use agenthost_state::{EnvelopeObserver, ObservedEnvelope, StateConfig};
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "ahp-session:/s1";
const CHAT: &str = "ahp-chat:/c1";
const PEER: &str = "ahp-chat:/c2";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn chat(uri: &str, title: &str) -> ChatState {
    from(json!({
        "resource": uri, "title": title, "status": 1,
        "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []
    }))
}

fn state() -> Arc<StateManager> {
    let state = StateManager::new(
        from::<RootState>(json!({ "agents": [] })),
        StateConfig::default(),
    );
    let session: SessionState = from(json!({
        "provider": "scripted", "title": "S", "status": 1, "lifecycle": "ready",
        "activeClients": [], "chats": []
    }));
    state
        .insert_session(&SESSION.parse().unwrap(), session)
        .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &chat(CHAT, "First").resource.parse().unwrap(),
            chat(CHAT, "First"),
        )
        .unwrap();
    state
        .insert_chat(
            &SESSION.parse().unwrap(),
            &chat(PEER, "Second").resource.parse().unwrap(),
            chat(PEER, "Second"),
        )
        .unwrap();
    Arc::new(state)
}

#[derive(Default)]
struct Seen(Mutex<Vec<(String, u64)>>);
impl EnvelopeObserver for Seen {
    fn on_envelope(&self, observed: &ObservedEnvelope<'_>) {
        self.0.lock().unwrap().push((
            observed.envelope.channel.clone(),
            observed.envelope.server_seq,
        ));
    }
}

#[test]
fn host_state_reads_the_state_manager() {
    let host = StateHostState::new(state());
    assert_eq!(host.chat(CHAT).unwrap().title, "First");
    assert_eq!(host.chat_title(PEER).as_deref(), Some("Second"));
    assert_eq!(host.session(SESSION).unwrap().provider, "scripted");
    assert_eq!(host.chat_session(PEER).as_deref(), Some(SESSION));
    assert_eq!(host.session_chats(SESSION), [CHAT, PEER]);

    assert_eq!(host.chat("ahp-chat:/missing"), None);
    assert_eq!(host.chat(SESSION), None, "a session is not a chat");
    assert_eq!(host.session(CHAT), None, "a chat is not a session");
    assert_eq!(host.chat_session("ahp-chat:/missing"), None);
    assert!(host.session_chats("ahp-session:/missing").is_empty());

    assert_eq!(
        host.chat_input_needed(CHAT),
        Some(Vec::new()),
        "no active turn"
    );
    assert_eq!(host.chat_input_needed("ahp-chat:/missing"), None);
    assert_eq!(host.session_input_needed(SESSION), Some(Vec::new()));
    assert_eq!(host.session_input_needed(CHAT), None);
}

#[test]
fn the_narrow_input_needed_reads_follow_the_projection() {
    let state = state();
    let host = StateHostState::new(state.clone());
    let dispatch = StateServerDispatch::new(state.clone());
    let actions = [
        json!({ "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-01-01T00:00:00.000Z",
                "message": { "text": "hi", "origin": { "kind": "user" } } }),
        json!({ "type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "c1",
                "toolName": "shell", "displayName": "Shell" }),
        json!({ "type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c1",
                "invocationMessage": "run it" }),
    ];
    for action in actions {
        dispatch.dispatch(CHAT, from(action)).unwrap();
    }
    let desired = host.chat_input_needed(CHAT).unwrap();
    let expected =
        agenthost_reducers::projection::desired_input_needed(CHAT, &host.chat(CHAT).unwrap());
    assert_eq!(desired, expected);
    assert_eq!(desired.len(), 1);

    let set = StateAction::SessionInputNeededSet(Box::new(
        agenthost_protocol::ahp_types::actions::SessionInputNeededSetAction {
            request: desired[0].clone(),
        },
    ));
    dispatch.dispatch(SESSION, set).unwrap();
    assert_eq!(host.session_input_needed(SESSION), Some(desired));
}

#[test]
fn server_dispatch_reduces_numbers_and_is_observed() {
    let state = state();
    let seen = Arc::new(Seen::default());
    state.add_observer(seen.clone());
    let dispatch = StateServerDispatch::new(state.clone());
    let host = StateHostState::new(state.clone());

    let action: StateAction = from(json!({ "type": "session/titleChanged", "title": "Renamed" }));
    let seq = dispatch.dispatch(CHAT, action).unwrap();
    assert_eq!(seq, state.server_seq());
    assert_eq!(host.chat_title(CHAT).as_deref(), Some("Renamed"));
    assert_eq!(*seen.0.lock().unwrap(), [(CHAT.to_owned(), seq)]);

    let action: StateAction = from(json!({ "type": "session/titleChanged", "title": "x" }));
    let error = dispatch.dispatch("ahp-chat:/missing", action).unwrap_err();
    assert_eq!(error.channel, "ahp-chat:/missing");
    assert!(error.to_string().contains("ahp-chat:/missing"), "{error}");
    assert_eq!(state.server_seq(), seq, "a refused action takes no number");
    assert_eq!(seen.0.lock().unwrap().len(), 1);
}

#[test]
fn the_state_provider_locator_names_only_providers_the_host_runs() {
    let state = state();
    let runs_scripted = crate::StateProviderLocator::new(Arc::clone(&state), ["scripted".into()]);
    assert_eq!(
        crate::ProviderLocator::provider_of(&runs_scripted, &SESSION.parse().unwrap()).as_deref(),
        Some("scripted")
    );
    assert_eq!(
        crate::ProviderLocator::provider_of(
            &runs_scripted,
            &"ahp-session:/missing".parse().unwrap()
        ),
        None
    );
    let runs_claude = crate::StateProviderLocator::new(state, ["claude".into()]);
    assert_eq!(
        crate::ProviderLocator::provider_of(&runs_claude, &SESSION.parse().unwrap()),
        None,
        "a provider the host was not started with serves nothing"
    );
}

use crate::{ChatUri, SessionUri};
use serde_json::json;

use super::*;

fn initialize(value: serde_json::Value) -> InitializeParams {
    serde_json::from_value(value).unwrap()
}

#[test]
fn vs_code_is_recognised_by_its_client_name_or_its_meta_keys() {
    let by_name = initialize(json!({
        "channel": "ahp-root://", "protocolVersions": ["0.10.0"], "clientId": "c",
        "clientInfo": { "name": "vscode-agents-window", "title": "VS Code Agents Window" }
    }));
    let by_meta = initialize(json!({
        "channel": "ahp-root://", "protocolVersions": ["0.10.0"], "clientId": "c",
        "_meta": { "vscode.clientConnectionKind": "direct_websocket" }
    }));
    let spec = initialize(json!({
        "channel": "ahp-root://", "protocolVersions": ["1.0.0"], "clientId": "c",
        "clientInfo": { "name": "ahp-rust" }, "_meta": { "other": 1 }
    }));
    assert_eq!(ClientDialect::detect(&by_name), ClientDialect::VsCode);
    assert_eq!(ClientDialect::detect(&by_meta), ClientDialect::VsCode);
    assert_eq!(ClientDialect::detect(&spec), ClientDialect::Spec);
    assert_eq!(
        ClientDialect::VsCode.client_kind().as_deref(),
        Some(VSCODE_CLIENT_KIND)
    );
    assert_eq!(ClientDialect::Spec.client_kind(), None);
}

#[test]
fn a_missing_channel_becomes_the_root_and_a_present_one_stays() {
    let mut missing = json!({ "clientId": "c" }).as_object().unwrap().clone();
    fill_missing_channel(&mut missing);
    assert_eq!(missing["channel"], "ahp-root://");
    let mut present = json!({ "channel": "x:/y" }).as_object().unwrap().clone();
    fill_missing_channel(&mut present);
    assert_eq!(present["channel"], "x:/y");
}

#[test]
fn every_spelling_of_a_derived_chat_becomes_the_published_one() {
    // 13 bytes: base64 pads them with two `=`.
    let session = SessionUri::parse("scripted:/abc").unwrap();
    let published = ChatUri::default_for(&session).into_string();
    let payload = published.strip_prefix("ahp-chat://default/").unwrap();
    assert_eq!(payload.len() % 4, 2, "the test needs a padded encoding");
    for spelling in [
        published.clone(),
        format!("ahp-chat://default/{payload}=="),
        format!("ahp-chat://default/{payload}%3D%3D"),
    ] {
        assert_eq!(chat_spelling(&spelling), published.as_str(), "{spelling}");
    }
    // Other chats, and a derived chat that does not decode, are left alone.
    for other in [
        "ahp-chat:/c1",
        "ahp-chat://default/!!notbase64",
        "scripted:/ab",
    ] {
        assert_eq!(chat_spelling(other), other);
    }
}

#[test]
fn a_0_9_peer_is_never_sent_an_action_1_0_introduced() {
    let gated = r#"{"jsonrpc":"2.0","method":"action","params":{"serverSeq":4,"channel":"ahp-chat:/c","action":{"type":"chat/movableChanged","movable":true}}}"#;
    let ordinary = r#"{"jsonrpc":"2.0","method":"action","params":{"serverSeq":5,"channel":"ahp-chat:/c","action":{"type":"chat/delta","turnId":"t","partId":"p","content":"chat/movableChanged"}}}"#;
    let extension = r#"{"jsonrpc":"2.0","method":"action","params":{"serverSeq":6,"channel":"ahp-chat:/c","action":{"type":"x-agenthost/note"}}}"#;
    assert!(!frame_allowed(|| Some(WireSurface::V0_9), gated));
    assert!(frame_allowed(|| Some(WireSurface::V1_0), gated));
    assert!(frame_allowed(|| None, gated), "not negotiated yet");
    // Mentioning a gated name in content is not sending that action.
    assert!(frame_allowed(|| Some(WireSurface::V0_9), ordinary));
    assert!(frame_allowed(|| Some(WireSurface::V0_9), extension));
    for action in INTRODUCED_IN_1_0 {
        assert!(!allowed_on(WireSurface::V0_9, action), "{action}");
        assert!(allowed_on(WireSurface::V1_0, action), "{action}");
    }
    assert!(allowed_on(WireSurface::V0_9, "chat/turnStarted"));
}

#[test]
fn the_surface_check_decodes_only_frames_that_mention_a_gated_action() {
    let mut asked = false;
    assert!(frame_allowed(
        || {
            asked = true;
            Some(WireSurface::V0_9)
        },
        r#"{"jsonrpc":"2.0","method":"action","params":{"action":{"type":"chat/delta"}}}"#,
    ));
    assert!(!asked, "an ordinary frame needs no version lookup");
}

#[test]
fn a_replayed_action_1_0_introduced_is_held_back_from_a_0_9_peer() {
    let envelope = |action: serde_json::Value| -> ActionEnvelope {
        serde_json::from_value(
            json!({ "serverSeq": 3, "channel": "ahp-chat:/c", "action": action }),
        )
        .unwrap()
    };
    let gated = envelope(json!({ "type": "chat/movableChanged", "movable": true }));
    let title = envelope(json!({ "type": "session/titleChanged", "title": "t" }));
    assert!(!envelope_allowed(WireSurface::V0_9, &gated));
    assert!(envelope_allowed(WireSurface::V1_0, &gated));
    assert!(envelope_allowed(WireSurface::V0_9, &title));
}

#[test]
fn create_session_leaves_out_client_entries_it_cannot_read_and_keeps_the_rest() {
    let raw = json!({
        "channel": "scripted:/s",
        "activeClient": {
            "clientId": "c",
            "tools": [
                { "name": "vscode_runTests", "inputSchema": { "type": "object" } },
                { "title": "a tool without a name" }
            ],
            "customizations": [
                { "id": "p1", "name": "Review", "uri": "file:///p", "type": "plugin" },
                { "id": "old", "name": "An older shape", "uri": "file:///o" }
            ]
        }
    });
    let (params, dropped) = create_session_params(Some(raw)).unwrap();
    assert_eq!(dropped, 2);
    let client = params.active_client.unwrap();
    assert_eq!(client.tools.len(), 1);
    assert_eq!(client.tools[0].name, "vscode_runTests");
    let customizations = client.customizations.unwrap();
    assert_eq!(customizations.len(), 1);
    assert_eq!(customizations[0].id, "p1");
}

#[test]
fn create_session_is_still_refused_when_something_else_is_malformed() {
    for raw in [
        json!({ "workingDirectories": [] }),
        json!({ "channel": 7, "activeClient": { "clientId": "c", "tools": [{}] } }),
        json!({ "channel": "scripted:/s", "activeClient": { "tools": [] } }),
    ] {
        assert!(create_session_params(Some(raw.clone())).is_err(), "{raw}");
    }
    assert!(create_session_params(None).is_err());
}

fn session(uri: &str) -> SessionUri {
    SessionUri::parse(uri).unwrap()
}

#[test]
fn a_frame_is_written_in_the_clients_spelling_of_a_session_and_its_derived_uris() {
    let host = session("ahp-session:/abc");
    let client = session("claude:/abc");
    let spellings = UriSpellings::default();
    let frame: Arc<str> = Arc::from(
        serde_json::json!({
            "resource": host.as_str(),
            "defaultChat": ChatUri::default_for(&host).as_str(),
            "subagent": ChatUri::subagent(&host, &crate::SafeId::new("t1").unwrap()).as_str(),
            "text": format!("see [the plan]({}) and {}/annotations", ChatUri::default_for(&host), host),
            "longer": "ahp-session:/abcd",
            "prefixed": "xahp-session:/abc",
        })
        .to_string(),
    );
    assert!(
        Arc::ptr_eq(&spellings.to_client(&frame), &frame),
        "no pair: the frame itself"
    );
    spellings.add(&host, &client);
    let written: Value = serde_json::from_str(&spellings.to_client(&frame)).unwrap();
    assert_eq!(written["resource"], "claude:/abc");
    assert_eq!(
        written["defaultChat"],
        ChatUri::default_for(&client).as_str()
    );
    assert_eq!(
        written["subagent"],
        ChatUri::subagent(&client, &crate::SafeId::new("t1").unwrap()).as_str()
    );
    assert_eq!(
        written["text"],
        format!(
            "see [the plan]({}) and claude:/abc/annotations",
            ChatUri::default_for(&client)
        )
    );
    assert_eq!(
        written["longer"], "ahp-session:/abcd",
        "another session's id is not cut"
    );
    assert_eq!(written["prefixed"], "xahp-session:/abc");
}

#[test]
fn what_a_client_sends_in_its_spelling_is_read_in_the_hosts() {
    let host = session("claude:/abc");
    let client = session("ahp-session:/abc");
    let spellings = UriSpellings::default();
    spellings.add(&host, &client);
    let padded = format!("{}==", ChatUri::default_for(&client));
    let mut params = serde_json::json!({
        "channel": client.as_str(),
        "action": { "type": "chat/turnStarted", "chat": ChatUri::default_for(&client).as_str() },
        "subscriptions": [padded, "ahp-session:/other"],
    });
    spellings.to_host(&mut params);
    assert_eq!(params["channel"], "claude:/abc");
    assert_eq!(
        params["action"]["chat"],
        ChatUri::default_for(&host).as_str()
    );
    assert_eq!(
        params["subscriptions"][0],
        ChatUri::default_for(&host).as_str()
    );
    assert_eq!(params["subscriptions"][1], "ahp-session:/other");
    // The first spelling a connection used stays its spelling.
    spellings.add(&host, &session("ahp-session:/abc"));
    assert!(spellings.is_resolved("ahp-session:/abc"));
}

#[test]
fn the_sessions_a_clients_params_name_are_found_in_every_uri_shape() {
    let a = session("claude:/a");
    let b = session("ahp-session:/b");
    let c = session("codex:/c");
    let d = session("ahp-session:/d");
    let params = serde_json::json!({
        "channel": a.as_str(),
        "chats": [ChatUri::default_for(&b).as_str(), ChatUri::default_for(&b).as_str()],
        "nested": { "subagent": ChatUri::subagent(&c, &crate::SafeId::new("t").unwrap()).as_str() },
        "peer": format!("ahp-chat://side-1/{}", URL_SAFE_NO_PAD.encode(d.as_str())),
        "text": "not a uri",
        "file": "file:///etc/passwd",
    });
    assert_eq!(named_sessions(&params), vec![a, b, c, d]);
}

#[test]
fn the_legacy_autopilot_approval_becomes_the_autopilot_mode() {
    let mut legacy = json!({ "autoApprove": "autopilot", "unattended": "off" });
    migrate_legacy_autopilot(&mut legacy);
    assert_eq!(
        legacy,
        json!({ "autoApprove": "default", "mode": "autopilot", "unattended": "off" })
    );
    let mut planning = json!({ "autoApprove": "autopilot", "mode": "plan" });
    migrate_legacy_autopilot(&mut planning);
    assert_eq!(
        planning,
        json!({ "autoApprove": "default", "mode": "plan" })
    );
    for untouched in [
        json!({ "autoApprove": "autoApprove" }),
        json!("autopilot"),
        json!({}),
    ] {
        let mut value = untouched.clone();
        migrate_legacy_autopilot(&mut value);
        assert_eq!(value, untouched);
    }
}

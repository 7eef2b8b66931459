#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::fixtures::*;
use crate::harness::*;
use crate::{AnswerSink, EngineConfig, NoLocalTools, SessionUpdate};

fn registry(created: Arc<AtomicUsize>) -> EngineRegistry {
    EngineRegistry::new(move |_| {
        created.fetch_add(1, Ordering::SeqCst);
        SessionEngine::new(
            EngineConfig::default(),
            Arc::new(Recorder::default()) as Arc<dyn AnswerSink>,
            Arc::new(NoLocalTools),
        )
    })
}

#[tokio::test(start_paused = true)]
async fn one_engine_per_session_reference_counted_by_attachments() {
    let created = Arc::new(AtomicUsize::new(0));
    let registry = registry(Arc::clone(&created));
    let s1 = "ahp-session:/s1".to_owned();
    let s2 = "ahp-session:/s2".to_owned();
    let a = registry.attach(&s1, "chat-a").unwrap();
    let b = registry.attach(&s1, "chat-b").unwrap();
    let _c = registry.attach(&s2, "client").unwrap();
    assert_eq!(created.load(Ordering::SeqCst), 2, "one engine per session");
    assert_eq!(registry.len(), 2);
    assert_eq!(a.attachment_count(), 2);
    assert_eq!(b.attachment_count(), 2, "the same engine");
    assert!(registry.get(&s1).is_some());
    assert!(!registry.detach(&s1, "chat-a"));
    assert!(!registry.detach(&"ahp-session:/none".to_owned(), "x"));
    assert!(registry.detach(&s1, "chat-b"), "the last detach disposes");
    assert!(a.is_disposed());
    assert!(registry.get(&s1).is_none());
    // A re-created engine starts empty.
    let again = registry.attach(&s1, "chat-a").unwrap();
    assert!(!again.is_disposed());
    assert_eq!(created.load(Ordering::SeqCst), 3);
    assert!(!registry.is_empty());
    assert!(format!("{registry:?}").contains("sessions: 2"));
}

#[tokio::test(start_paused = true)]
async fn subscriptions_are_claims_per_connection_and_chat() {
    let rig = Rig::new(
        crate::UnattendedPolicy::Deny.engine_config(std::time::Duration::from_secs(5)),
        FakeTools::default(),
    );
    let mut claims = SubscriptionClaims::new(rig.engine.clone());
    assert!(claims.is_empty());
    claims.subscribed("c1", &CHAT.to_owned());
    claims.subscribed("c2", &CHAT.to_owned());
    claims.subscribed("c1", &PEER_CHAT.to_owned());
    assert_eq!(claims.len(), 3);
    assert_eq!(rig.engine.stats().claims, 3);
    rig.engine
        .apply(SessionUpdate::set(server_confirmation(CHAT, "x", "shell")));
    claims.disconnected("c1");
    assert_eq!(claims.len(), 1);
    rig.time.at(10_000).await;
    assert_eq!(rig.sent.count(), 0, "c2 still subscribed");
    claims.unsubscribed("c2", &CHAT.to_owned());
    assert_eq!(rig.engine.stats().claims, 0);
    rig.time.at(15_000).await;
    assert_eq!(rig.sent.count(), 1);
}

use std::sync::Mutex;

use super::*;

#[derive(Default)]
struct Recorder(Mutex<Vec<SubscriptionChange>>);

impl SubscriptionListener for Recorder {
    fn changed(&self, change: &SubscriptionChange) {
        self.0.lock().unwrap().push(change.clone());
    }
}

fn subscribed(connection: &str, channel: &str) -> SubscriptionChange {
    SubscriptionChange::Subscribed {
        connection: connection.into(),
        channel: channel.into(),
    }
}

#[test]
fn listeners_see_each_change_once_and_queries_follow_it() {
    let tracker = LiveSubscriptions::new();
    let recorder = Arc::new(Recorder::default());
    let id = tracker.listen(recorder.clone());
    tracker.subscribed("#1", "ahp-chat:/a");
    tracker.subscribed("#1", "ahp-chat:/a");
    tracker.subscribed("#2", "ahp-chat:/a");
    tracker.subscribed("#1", "ahp-chat:/b");
    assert_eq!(tracker.subscribers("ahp-chat:/a"), ["#1", "#2"]);
    tracker.unsubscribed("#2", "ahp-chat:/a");
    tracker.unsubscribed("#2", "ahp-chat:/a");
    tracker.disconnected("#1");
    tracker.disconnected("#1");
    assert!(tracker.subscribers("ahp-chat:/a").is_empty());
    assert!(tracker.subscribers("ahp-chat:/b").is_empty());
    assert_eq!(
        *recorder.0.lock().unwrap(),
        [
            subscribed("#1", "ahp-chat:/a"),
            subscribed("#2", "ahp-chat:/a"),
            subscribed("#1", "ahp-chat:/b"),
            SubscriptionChange::Unsubscribed {
                connection: "#2".into(),
                channel: "ahp-chat:/a".into()
            },
            SubscriptionChange::Disconnected {
                connection: "#1".into(),
                client: None,
                channels: vec!["ahp-chat:/a".into(), "ahp-chat:/b".into()]
            },
        ]
    );
    tracker.unlisten(id);
    tracker.subscribed("#3", "ahp-chat:/a");
    assert_eq!(recorder.0.lock().unwrap().len(), 5, "no longer listening");
}

/// A listener may query the tracker: it is called outside the lock.
#[test]
fn a_listener_may_query_the_tracker() {
    struct Querying(Arc<LiveSubscriptions>, Mutex<Vec<Vec<String>>>);
    impl SubscriptionListener for Querying {
        fn changed(&self, _: &SubscriptionChange) {
            self.1
                .lock()
                .unwrap()
                .push(self.0.subscribers("ahp-chat:/a"));
        }
    }
    let tracker = Arc::new(LiveSubscriptions::new());
    let listener = Arc::new(Querying(tracker.clone(), Mutex::default()));
    tracker.listen(listener.clone());
    tracker.subscribed("#1", "ahp-chat:/a");
    tracker.disconnected("#1");
    assert_eq!(*listener.1.lock().unwrap(), [vec!["#1".to_owned()], vec![]]);
}

/// A connection's client id is known from its identification until it disconnects, and its
/// disconnect names the client.
#[test]
fn a_connection_speaks_for_its_client_until_it_disconnects() {
    let tracker = LiveSubscriptions::new();
    let recorder = Arc::new(Recorder::default());
    tracker.listen(recorder.clone());
    assert_eq!(tracker.client_of("#1"), None);
    tracker.identified("#1", "vscode-1");
    tracker.subscribed("#1", "ahp-session:/s");
    assert_eq!(tracker.client_of("#1").as_deref(), Some("vscode-1"));
    tracker.disconnected("#1");
    assert_eq!(tracker.client_of("#1"), None);
    assert_eq!(
        recorder.0.lock().unwrap().last(),
        Some(&SubscriptionChange::Disconnected {
            connection: "#1".into(),
            client: Some("vscode-1".into()),
            channels: vec!["ahp-session:/s".into()]
        })
    );
    // A connection without subscriptions is forgotten too.
    tracker.identified("#2", "cli");
    tracker.disconnected("#2");
    assert_eq!(tracker.client_of("#2"), None);
}

use super::*;

fn key(chat: &str, turn: &str, call: &str) -> ToolCallKey {
    ToolCallKey::new(chat, turn, call)
}

#[test]
fn a_call_is_tracked_until_it_completes() {
    let tracker = DefaultToolCallTracker::default();
    let call = key("ahp-chat:/c1", "t1", "call-1");
    tracker.started(&call, "shell");
    tracker.blocked(&call, ToolCallBlock::Confirmation);
    let snapshot = tracker.get(&call).unwrap();
    assert_eq!(
        (
            snapshot.tool_name.as_str(),
            snapshot.phase,
            snapshot.blocked
        ),
        (
            "shell",
            ToolCallPhase::Started,
            Some(ToolCallBlock::Confirmation)
        )
    );
    tracker.unblocked(&call);
    tracker.executing(&call);
    let snapshot = tracker.get(&call).unwrap();
    assert_eq!(
        (snapshot.phase, snapshot.blocked),
        (ToolCallPhase::Executing, None)
    );
    tracker.completed(&call, ToolCallOutcome::Success);
    assert_eq!(tracker.get(&call), None);
    assert!(tracker.is_empty());
    // Reports about an untracked call create nothing.
    tracker.executing(&call);
    tracker.blocked(&call, ToolCallBlock::Authentication);
    tracker.completed(&call, ToolCallOutcome::Denied);
    assert!(tracker.is_empty());
}

#[test]
fn clearing_drops_a_turn_or_a_chat_and_nothing_else() {
    let tracker = DefaultToolCallTracker::default();
    let calls = [
        key("ahp-chat:/c1", "t1", "a"),
        key("ahp-chat:/c1", "t1", "b"),
        key("ahp-chat:/c1", "t2", "a"),
        key("ahp-chat:/c2", "t1", "a"),
    ];
    for call in &calls {
        tracker.started(call, "tool");
    }
    tracker.clear("ahp-chat:/c1", Some("t1"));
    assert_eq!(tracker.len(), 2);
    assert!(tracker.get(&calls[2]).is_some());
    tracker.clear("ahp-chat:/c1", None);
    assert_eq!(tracker.len(), 1);
    assert!(tracker.get(&calls[3]).is_some());
}

#[test]
fn the_tracker_is_bounded() {
    let tracker = DefaultToolCallTracker::new(TrackerConfig { capacity: 3 });
    for i in 0..500 {
        tracker.started(&key("ahp-chat:/c", "t", &format!("call-{i}")), "tool");
    }
    assert_eq!(tracker.len(), 3);
    assert!(tracker.get(&key("ahp-chat:/c", "t", "call-499")).is_some());
    tracker.clear("ahp-chat:/c", None);
    assert!(tracker.is_empty());
}

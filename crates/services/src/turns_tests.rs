use super::*;

const C: &str = "ahp-chat:/c1";

fn usage(input: i64) -> UsageInfo {
    UsageInfo {
        input_tokens: Some(input),
        output_tokens: None,
        model: None,
        cache_read_tokens: None,
        meta: None,
    }
}

#[test]
fn a_turn_is_tracked_from_start_to_completion() {
    let tracker = DefaultTurnTracker::default();
    tracker.turn_started(C, "t1");
    tracker.turn_stage(C, "t1", TurnStage::Sending);
    tracker.turn_blocked(C, "t1", TurnBlock::ToolConfirmation);
    let turn = tracker.active_turn(C).unwrap();
    assert_eq!(
        (
            turn.turn_id.as_str(),
            turn.stage,
            turn.blocked,
            turn.times_blocked
        ),
        (
            "t1",
            TurnStage::Sending,
            Some(TurnBlock::ToolConfirmation),
            1
        )
    );
    // A second blocker while blocked is the same blocked period.
    tracker.turn_blocked(C, "t1", TurnBlock::UserInput);
    tracker.turn_unblocked(C, "t1");
    tracker.turn_blocked(C, "t1", TurnBlock::ClientExecution);
    tracker.turn_unblocked(C, "t1");
    tracker.steering_received(C, "t1");
    tracker.usage(C, "t1", &usage(10));
    tracker.usage(C, "t1", &usage(25));
    let turn = tracker.active_turn(C).unwrap();
    assert_eq!(turn.blocked, None);
    assert_eq!(turn.times_blocked, 2);
    assert!(turn.steered);
    assert_eq!(turn.usage, Some(usage(25)));

    tracker.turn_completed(C, "t1", TurnCompletion::Success);
    assert_eq!(tracker.active_turn(C), None);
    assert!(tracker.is_empty());
}

#[test]
fn reports_about_another_turn_are_ignored() {
    let tracker = DefaultTurnTracker::default();
    tracker.turn_stage(C, "t0", TurnStage::Responding);
    assert!(tracker.is_empty(), "nothing is created by a stray report");
    tracker.turn_started(C, "t1");
    tracker.turn_stage(C, "stale", TurnStage::Responding);
    tracker.turn_completed(C, "stale", TurnCompletion::Cancelled);
    assert_eq!(tracker.active_turn(C).unwrap().stage, TurnStage::Preparing);
    // A new turn replaces the old one.
    tracker.turn_started(C, "t2");
    assert_eq!(tracker.active_turn(C).unwrap().turn_id, "t2");
    assert_eq!(tracker.len(), 1);
    tracker.clear_chat(C);
    assert!(tracker.is_empty());
}

#[test]
fn the_tracker_is_bounded() {
    let tracker = DefaultTurnTracker::new(TrackerConfig { capacity: 5 });
    for i in 0..1_000 {
        tracker.turn_started(&format!("ahp-chat:/c{i}"), "t");
    }
    assert_eq!(tracker.len(), 5);
    assert!(tracker.active_turn("ahp-chat:/c999").is_some());
    assert!(tracker.active_turn("ahp-chat:/c0").is_none());
    for i in 995..1_000 {
        tracker.turn_completed(
            &format!("ahp-chat:/c{i}"),
            "t",
            TurnCompletion::Error { resumable: false },
        );
    }
    assert!(tracker.is_empty());
}

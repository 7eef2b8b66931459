use super::*;

#[test]
fn claim_key_reports_its_chat() {
    let call = ClaimKey::from(ToolCallKey::new("ahp-chat:/a", "t1", "c1"));
    let input = ClaimKey::from(InputKey::new("ahp-chat:/b", "r1"));
    assert_eq!(call.chat(), "ahp-chat:/a");
    assert_eq!(input.chat(), "ahp-chat:/b");
    assert_eq!(call.to_string(), "tool call ahp-chat:/a#t1/c1");
    assert_eq!(input.to_string(), "input ahp-chat:/b#r1");
}

#[test]
fn claimants_compare_by_id() {
    let a = Claimant::new("view-a");
    assert_eq!(a, Claimant::new(String::from("view-a")));
    assert_ne!(a, Claimant::new("view-b"));
    assert_eq!(a.id(), "view-a");
    assert_eq!(format!("{a:?}"), "Claimant(\"view-a\")");
}

#[test]
fn claim_ids_order_by_age() {
    assert!(ClaimId(1) < ClaimId(2));
    assert_eq!(ClaimId(7).get(), 7);
}

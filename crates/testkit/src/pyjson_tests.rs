use serde_json::json;

use super::*;

#[test]
fn objects_keep_insertion_order_and_python_separators() {
    let value = obj! { "z": 1i64, "a": vec![Json::Null, true.into()], "m": obj! {} };
    assert_eq!(value.dumps(), r#"{"z": 1, "a": [null, true], "m": {}}"#);
}

#[test]
fn strings_are_escaped_like_ensure_ascii() {
    let value = Json::from("é\u{7f}\u{1}\u{1F600}\"\\\n\t");
    assert_eq!(value.dumps(), r#""\u00e9\u007f\u0001\ud83d\ude00\"\\\n\t""#);
}

#[test]
fn floats_are_written_like_python_repr() {
    let value = json!([1, 2.5, 1e16, 1e-5, 0.0001, -0.0, 1.0, 1.2345678901234568e29]);
    assert_eq!(
        Json::from(&value).dumps(),
        "[1, 2.5, 1e+16, 1e-05, 0.0001, -0.0, 1.0, 1.2345678901234568e+29]"
    );
}

#[test]
fn with_replaces_in_place_and_appends_new_keys() {
    let item = obj! { "type": "message", "status": "completed", "content": vec![Json::Null] };
    let added = item
        .with("status", "in_progress")
        .with("content", Vec::new())
        .with("x", 1i64);
    assert_eq!(
        added.dumps(),
        r#"{"type": "message", "status": "in_progress", "content": [], "x": 1}"#
    );
}

#[test]
fn parsing_keeps_key_order_and_python_duplicate_keys() {
    let parsed = parse(br#"{"z": {"b": 1, "a": [2.5, -3, 18446744073709551615]}, "y": 1, "z": 0}"#);
    assert_eq!(parsed.unwrap().dumps(), r#"{"z": 0, "y": 1}"#);
    let parsed =
        parse(br#"{"b": 1, "a": [2.5, -3, 18446744073709551615, null, "\u00e9"]}"#).unwrap();
    assert_eq!(
        parsed.dumps(),
        r#"{"b": 1, "a": [2.5, -3, 18446744073709551615, null, "\u00e9"]}"#
    );
    assert!(parse(b"{").is_err());
}

//! The mock answers byte for byte like the reference `mockllm.py` (ids and clocks aside), and
//! logs the same kind, decision and summary.
//!
//! The goldens in `tests/fixtures/golden/` were captured from the reference with
//! `python3 crates/testkit/tests/fixtures/golden/regenerate.py PATH/TO/mockllm.py`, one per
//! case of `cases.json`; rerun it when the reference changes.
// Test code: a panic is a failure with a backtrace, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use agenthost_testkit::{MockModel, MockModelConfig};
use serde_json::Value;

use support::{Client, fixtures, normalize, request_fixture};

fn config_of(case: &Value) -> MockModelConfig {
    let options = &case["config"];
    let mut config = MockModelConfig::default();
    if let Some(command) = options["command"].as_str() {
        config.command = command.to_owned();
    }
    config.thinking = options["thinking"].as_bool().unwrap_or(false);
    config.escalate = options["escalate"].as_bool().unwrap_or(false);
    config.fail_status = options["fail_status"]
        .as_u64()
        .map(|s| u16::try_from(s).unwrap());
    if let Some(message) = options["fail_message"].as_str() {
        config.fail_message = message.to_owned();
    }
    config.workdir = options["workdir"].as_str().map(str::to_owned);
    config
}

#[tokio::test]
async fn every_answer_matches_the_reference() {
    let golden_dir = fixtures().join("golden");
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(golden_dir.join("cases.json")).unwrap())
            .unwrap();
    assert!(cases.len() > 20);
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let golden: Value = serde_json::from_str(
            &std::fs::read_to_string(golden_dir.join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();

        let mock = MockModel::start(config_of(case)).await.unwrap();
        // The exact bytes the reference got: key order shows in dumped tool results.
        let body = golden["request_body"]
            .as_str()
            .map(|body| body.as_bytes().to_vec());
        if let Some(file) = case["request"].as_str() {
            let mut fixture = request_fixture(file);
            if let Some(set) = case["set"].as_object() {
                for (key, value) in set {
                    fixture[key] = value.clone();
                }
            }
            let sent: Value = serde_json::from_slice(body.as_deref().unwrap()).unwrap();
            assert_eq!(
                sent, fixture,
                "{name}: the golden was made from the request fixture"
            );
        }
        let method = case["method"].as_str().unwrap();
        let path = case["path"].as_str().unwrap();
        let response = Client::connect(mock.addr())
            .await
            .send(method, path, body)
            .await;

        assert_eq!(
            u64::from(response.status),
            golden["status"],
            "{name}: status"
        );
        assert_eq!(
            response.header("content-type"),
            golden["content_type"],
            "{name}: content type"
        );
        assert_eq!(
            normalize(&response.body),
            normalize(golden["body"].as_str().unwrap()),
            "{name}: body"
        );

        let log = &golden["log"];
        let records = mock.requests();
        assert_eq!(records.len(), 1, "{name}: one record");
        let record = serde_json::to_value(&records[0]).unwrap();
        for field in [
            "method",
            "path",
            "query",
            "kind",
            "decision",
            "summary",
            "sse_events",
        ] {
            if let Some(expected) = log.get(field) {
                assert_eq!(&record[field], expected, "{name}: record {field}");
            }
        }
        if let Some(keys) = log.get("body_keys") {
            assert_eq!(&record["summary"]["body_keys"], keys, "{name}: body keys");
        }
        mock.shutdown().await;
    }
}

use super::{
    BenchLine, BenchTarget, Comparison, Measure, Outcome, discover, parse_line, select, summary,
};
use crate::metadata::Metadata;

fn measure(number: f64, unit: &str) -> Measure {
    Measure {
        number,
        unit: unit.to_owned(),
    }
}

fn target(package: &str, name: &str) -> BenchTarget {
    BenchTarget {
        package: package.to_owned(),
        name: name.to_owned(),
    }
}

#[test]
fn a_full_line_parses_into_value_anchor_ratio_and_goal() {
    assert_eq!(
        parse_line("bench reducers_apply_vs_ahp: value=1.25µs anchor=5ms ratio=4000x goal=2.5x")
            .unwrap(),
        BenchLine {
            name: "reducers_apply_vs_ahp".to_owned(),
            value: measure(1.25, "µs"),
            comparison: Some(Comparison {
                anchor: measure(5.0, "ms"),
                ratio: 4000.0,
                goal: 2.5,
            }),
        }
    );
}

#[test]
fn a_pure_count_needs_only_a_value() {
    assert_eq!(
        parse_line("bench checkpoint_objects_written: value=42").unwrap(),
        BenchLine {
            name: "checkpoint_objects_written".to_owned(),
            value: measure(42.0, ""),
            comparison: None,
        }
    );
}

#[test]
fn units_may_be_compound_and_trailing_whitespace_is_ignored() {
    let line =
        parse_line("bench store/append: value=310.5MiB/s anchor=120MiB/s ratio=2.6x goal=2x \r")
            .unwrap();
    assert_eq!(line.value, measure(310.5, "MiB/s"));
    assert!(!line.below_goal());
}

#[test]
fn a_ratio_below_its_goal_is_detected() {
    let line = parse_line("bench x: value=10ms anchor=30ms ratio=3x goal=5x").unwrap();
    assert!(line.below_goal());
    let count = parse_line("bench x: value=3").unwrap();
    assert!(!count.below_goal());
}

#[test]
fn malformed_lines_are_rejected_with_the_reason() {
    let cases = [
        ("bench x value=1", "no `: ` after the name"),
        (
            "bench : value=1",
            "the name `` is empty or contains whitespace",
        ),
        (
            "bench x: value=1ms",
            "a value without anchor must be a pure count, found unit `ms`",
        ),
        ("bench x: value=abc", "`abc` does not start with a number"),
        (
            "bench x: value=1..2ms anchor=1ms ratio=1x goal=1x",
            "`1..2ms`: `1..2` is not a number",
        ),
        (
            "bench x: value=.5ms anchor=1ms ratio=1x goal=1x",
            "`.5ms`: `.5` is not a number",
        ),
        (
            "bench x: value=1ms anchor=2ms ratio=2 goal=1x",
            "`2` must end with `x`",
        ),
        (
            "bench x: value=1ms anchor=2ms goal=1x ratio=2x",
            "expected `ratio=…`, found `goal=1x`",
        ),
        (
            "bench x: value=1ms anchor=2ms ratio=2x",
            "expected 1 or 4 space-separated fields",
        ),
        (
            "bench x: value=1ms  anchor=2ms ratio=2x goal=1x",
            "expected 1 or 4 space-separated fields",
        ),
        (
            "bench x: value=1ms anchor=2m2s ratio=2x goal=1x",
            "the unit `m2s` must not contain",
        ),
        ("bench x: speed=1", "expected `value=…`, found `speed=1`"),
    ];
    for (line, reason) in cases {
        let error = parse_line(line).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("malformed bench line `{line}`: "))
                && error.contains(reason),
            "{line:?} gave {error:?}, expected it to mention {reason:?}"
        );
        assert!(
            error.ends_with("or `bench <name>: value=<number>`"),
            "{error}"
        );
    }
}

#[test]
fn bench_targets_are_discovered_from_the_workspace_metadata() {
    let metadata = Metadata::parse(include_str!("../tests/fixtures/passing.json")).unwrap();
    assert_eq!(
        discover(&metadata).unwrap(),
        vec![
            target("agenthost-reducers", "reducers_apply_vs_ahp"),
            target("agenthost-store", "store_append"),
        ]
    );
}

#[test]
fn selecting_an_unknown_benchmark_lists_the_known_ones() {
    let targets = vec![
        target("agenthost-reducers", "reducers_apply_vs_ahp"),
        target("agenthost-store", "store_append"),
    ];
    assert_eq!(select(&targets, &[]).unwrap(), targets);
    assert_eq!(
        select(&targets, &["store_append".to_owned()]).unwrap(),
        vec![target("agenthost-store", "store_append")]
    );
    assert_eq!(
        select(&targets, &["nope".to_owned()])
            .unwrap_err()
            .to_string(),
        "unknown benchmark `nope`; known benchmarks: reducers_apply_vs_ahp, store_append"
    );
}

#[test]
fn the_summary_marks_lines_below_goal_and_lists_errors() {
    let results = vec![
        (
            target("agenthost-reducers", "reducers_apply_vs_ahp"),
            Outcome {
                lines: vec![
                    parse_line(
                        "bench reducers_apply_vs_ahp: value=2µs anchor=9µs ratio=4.5x goal=3x",
                    )
                    .unwrap(),
                    parse_line(
                        "bench reducers_apply_large: value=8µs anchor=9µs ratio=1.1x goal=3x",
                    )
                    .unwrap(),
                ],
                errors: vec![],
            },
        ),
        (
            target("agenthost-store", "store_append"),
            Outcome {
                lines: vec![parse_line("bench store_rows: value=12").unwrap()],
                errors: vec!["benchmark `store_append` printed no `bench ` line".to_owned()],
            },
        ),
    ];
    assert_eq!(
        summary(&results),
        "\nbench summary:\n\
         \x20 reducers_apply_vs_ahp (agenthost-reducers): ok\n\
         \x20   reducers_apply_vs_ahp: value=2µs anchor=9µs ratio=4.5x goal=3x\n\
         \x20   reducers_apply_large: value=8µs anchor=9µs ratio=1.1x goal=3x  <- below goal (1.1x < 3x)\n\
         \x20 store_append (agenthost-store): FAILED\n\
         \x20   store_rows: value=12\n\
         \x20   error: benchmark `store_append` printed no `bench ` line\n\
         \x20 1 measurement(s) below goal (speed is reported, not gated)\n"
    );
}

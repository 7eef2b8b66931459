//! Claude Code stdout lines (`--output-format stream-json`) through `parse_line` and the
//! `Translator` (its wire types, then the shared `Mapper`), with driver actions between lines
//! (see `common`). Never panics; a turn ends at most once and is not active after its end.
#![no_main]

mod common;

use agenthost_provider_claude::{Output, Translator};
use common::{Step, Turns, failure, session, steps};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut turns = Turns::default();
    let mut translator = Translator::new(session());
    translator.begin_turn(&turns.begin());
    for step in steps(&text) {
        match step {
            Step::Action("begin", _) => translator.begin_turn(&turns.begin()),
            Step::Action("abort", _) => translator.abort_turn(),
            Step::Action("fail", _) => {
                translator.fail_turn(failure());
                assert!(!translator.turn_active());
            }
            Step::Action("replaced", _) => translator.process_replaced(),
            Step::Action(..) => {}
            Step::Line(line) => {
                // `on_line` is `parse_line` (serde over the wire types), then the translation.
                let Ok(outputs) = translator.on_line(line) else {
                    continue;
                };
                for output in outputs {
                    if output == Output::TurnEnded {
                        turns.ended();
                        assert!(!translator.turn_active());
                    }
                }
            }
        }
    }
});

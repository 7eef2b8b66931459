//! Codex stdout lines through `parse_line` and the app-server `Translator` (or, after `!exec`,
//! the `codex exec --json` `ExecTranslator`), with driver actions between lines (see `common`);
//! approval requests are answered approve / deny / … through `record_decision`. Never panics;
//! a turn ends at most once.
#![no_main]

mod common;

use agenthost_provider_codex::{ExecTranslator, Output, Translator};
use common::{Step, Turns, failure, session, steps};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn check(outputs: Vec<Output>, turns: &mut Turns, translator: Option<&mut Translator>) {
    let mut decisions = Vec::new();
    for output in outputs {
        match output {
            Output::TurnEnded => turns.ended(),
            Output::ApprovalRequest { tool_call_id, .. } => decisions.push(tool_call_id),
            _ => {}
        }
    }
    if let Some(translator) = translator {
        for tool_call_id in decisions {
            let approved = turns.decide();
            translator.record_decision(&tool_call_id, approved);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut turns = Turns::default();
    if text.trim_start().starts_with("!exec") {
        let mut translator = ExecTranslator::new(session());
        translator.begin_turn(&turns.begin());
        for step in steps(&text) {
            match step {
                Step::Action("begin", _) => translator.begin_turn(&turns.begin()),
                Step::Action(..) => {}
                Step::Line(line) => {
                    if let Ok(outputs) = translator.on_line(line) {
                        check(outputs, &mut turns, None);
                    }
                }
            }
        }
        return;
    }
    let mut translator = Translator::new(session());
    translator.begin_turn(&turns.begin());
    for step in steps(&text) {
        match step {
            Step::Action("begin", _) => translator.begin_turn(&turns.begin()),
            Step::Action("abort", _) => {
                translator.abort_turn();
            }
            Step::Action("fail", _) => {
                translator.fail_turn(failure());
            }
            Step::Action("thread", id) => translator.set_thread(id),
            Step::Action("sent", id) => {
                let id = serde_json::from_str(id).unwrap_or(Value::Null);
                translator.turn_start_sent(&id);
            }
            Step::Action(answer @ ("approve" | "deny"), id) => {
                translator.record_decision(id, answer == "approve");
            }
            Step::Action(..) => {}
            Step::Line(line) => {
                // `on_line` is `parse_line` (serde over the wire types), then the translation.
                let Ok(outputs) = translator.on_line(line) else {
                    continue;
                };
                check(outputs, &mut turns, Some(&mut translator));
            }
        }
    }
});

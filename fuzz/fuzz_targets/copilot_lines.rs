//! Copilot messages (headless JSON-RPC frame bodies and `copilot -p --output-format json`
//! lines, one per line) through `parse_message` and the `Translator`, with driver actions
//! between lines (see `common`); permission requests are answered approve / deny / … through
//! `record_decision`. Never panics; a turn ends at most once.
#![no_main]

mod common;

use agenthost_provider_copilot::{Output, Translator};
use common::{Step, Turns, failure, session, steps};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut turns = Turns::default();
    let mut translator = Translator::new(session());
    translator.set_working_directory("/w");
    translator.set_session_state_dir("/home/u/.copilot/session-state/cop-1");
    translator.set_temp_dir("/tmp");
    translator.begin_turn(&turns.begin());
    for step in steps(&text) {
        match step {
            Step::Action("begin", _) => translator.begin_turn(&turns.begin()),
            Step::Action("abort", _) => translator.abort_turn(),
            Step::Action("fail", _) => {
                translator.fail_turn(failure());
            }
            Step::Action("session", id) => translator.set_copilot_session(id),
            Step::Action("sent", id) => {
                let id = serde_json::from_str(id).unwrap_or(Value::Null);
                translator.send_sent(&id);
            }
            Step::Action(answer @ ("approve" | "deny"), id) => {
                translator.record_decision(id, answer == "approve");
            }
            Step::Action(..) => {}
            Step::Line(line) => {
                // `on_message` is `parse_message` (serde over the wire types), then the
                // translation.
                let Ok(outputs) = translator.on_message(line) else {
                    continue;
                };
                let mut decisions = Vec::new();
                for output in outputs {
                    match output {
                        Output::TurnEnded => turns.ended(),
                        Output::PermissionRequest { tool_call_id, .. } => {
                            decisions.push(tool_call_id);
                        }
                        _ => {}
                    }
                }
                for tool_call_id in decisions {
                    let approved = turns.decide();
                    translator.record_decision(&tool_call_id, approved);
                }
            }
        }
    }
});

//! The `ask` step: an input request the turn waits on.

use agenthost_protocol::ahp_types::actions::ChatInputRequestedAction;
use agenthost_protocol::ahp_types::state::{ChatInputRequest, ChatInputResponseKind};
use agenthost_protocol::error_info::{INTERNAL_ERROR, error_info};
use agenthost_protocol::{SafeId, StateAction};

use super::{Stop, Stream, TurnRun};
use crate::script::Ask;
use crate::session::Answer;

impl TurnRun {
    /// Emits `chat/inputRequested` (id `input-<turn>-<n>`), waits for `respond_to_input`, then
    /// says what came back.
    pub(super) async fn ask(&mut self, ask: &Ask, scope: Option<&SafeId>) -> Result<(), Stop> {
        self.inputs += 1;
        let request_id = format!("input-{}-{}", self.label, self.inputs);
        let Some(answer) = self.control.await_answer(&request_id) else {
            return Err(Stop::Gone);
        };
        let request = ChatInputRequest {
            id: request_id.clone(),
            message: Some(ask.message.clone()),
            url: None,
            questions: (!ask.questions.is_empty()).then(|| ask.questions.clone()),
            answers: None,
        };
        self.emit(
            scope,
            StateAction::ChatInputRequested(ChatInputRequestedAction { request }),
        )
        .await?;
        self.control.set_waiting(true);
        let answer = answer.await;
        self.control.set_waiting(false);
        let said = match answer {
            Ok(Answer::Input(response)) => match response.response {
                ChatInputResponseKind::Accept => {
                    let texts: Vec<String> = ask
                        .questions
                        .iter()
                        .flat_map(|question| response.answer_texts(question_id(question)))
                        .collect();
                    format!("Answered: {}", texts.join(", "))
                }
                ChatInputResponseKind::Decline => "Declined".to_owned(),
                ChatInputResponseKind::Cancel => "Cancelled".to_owned(),
            },
            Ok(_) => {
                return Err(Stop::Failed {
                    error: Box::new(error_info(
                        INTERNAL_ERROR,
                        format!("`{request_id}` is an input request but got another answer"),
                    )),
                    resumable: false,
                });
            }
            Err(_) => return Err(Stop::Gone),
        };
        self.stream(Stream::Markdown, &said, 16, 0, scope).await
    }
}

/// A question's id, whatever its kind.
fn question_id(question: &agenthost_protocol::ahp_types::state::ChatInputQuestion) -> &str {
    use agenthost_protocol::ahp_types::state::ChatInputQuestion as Q;
    match question {
        Q::Text(q) => &q.id,
        Q::Number(q) | Q::Integer(q) => &q.id,
        Q::Boolean(q) => &q.id,
        Q::SingleSelect(q) => &q.id,
        Q::MultiSelect(q) => &q.id,
        Q::Unknown(value) => value.get("id").and_then(|id| id.as_str()).unwrap_or(""),
    }
}

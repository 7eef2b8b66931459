//! What a route answers, before it becomes an HTTP response: one JSON body, or the frames of a
//! server-sent-event stream (each frame is sent as its own HTTP chunk, like the reference).

use hyper::body::Bytes;

use crate::pyjson::{Json, obj};

/// An answer of the mock.
#[derive(Debug)]
pub(crate) enum Reply {
    /// One JSON body with this status.
    Json { status: u16, body: Json },
    /// `text/event-stream` frames, in order.
    Sse(Vec<Bytes>),
}

impl Reply {
    /// A `200` JSON answer.
    pub(crate) fn ok(body: Json) -> Reply {
        Reply::Json { status: 200, body }
    }

    /// The Anthropic error shape: `{"type": "error", "error": {"type", "message"}}`.
    pub(crate) fn anthropic_error(status: u16, kind: &str, message: &str) -> Reply {
        let body = obj! {
            "type": "error",
            "error": obj! { "type": kind, "message": message },
        };
        Reply::Json { status, body }
    }

    /// The OpenAI error shape: `{"error": {"type", "code", "message", "param"}}`.
    pub(crate) fn openai_error(status: u16, kind: &str, code: &str, message: &str) -> Reply {
        let body = obj! {
            "error": obj! { "type": kind, "code": code, "message": message, "param": Json::Null },
        };
        Reply::Json { status, body }
    }

    /// How many SSE events the answer holds (zero for JSON).
    pub(crate) fn sse_events(&self) -> usize {
        match self {
            Reply::Json { .. } => 0,
            Reply::Sse(frames) => frames.len(),
        }
    }
}

/// Collects SSE frames: `event: NAME` (when named) and `data: JSON`, then a blank line.
#[derive(Debug, Default)]
pub(crate) struct Sse {
    frames: Vec<Bytes>,
}

impl Sse {
    /// A named event.
    pub(crate) fn event(&mut self, name: &str, data: &Json) {
        self.frames.push(Bytes::from(format!(
            "event: {name}\ndata: {}\n\n",
            data.dumps()
        )));
    }

    /// An unnamed event (Chat Completions names none).
    pub(crate) fn data(&mut self, data: &Json) {
        self.raw_data(&data.dumps());
    }

    /// An unnamed event whose data is not JSON (the final `[DONE]`).
    pub(crate) fn raw_data(&mut self, data: &str) {
        self.frames.push(Bytes::from(format!("data: {data}\n\n")));
    }

    /// The stream as an answer.
    pub(crate) fn into_reply(self) -> Reply {
        Reply::Sse(self.frames)
    }
}

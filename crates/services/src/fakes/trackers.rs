//! Recording fakes: `TurnTracker`, `ToolCallTracker`.

use super::*;

/// A call to [`FakeTurnTracker`].
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum TurnCall {
    Started {
        chat: String,
        turn_id: String,
    },
    Stage {
        chat: String,
        turn_id: String,
        stage: TurnStage,
    },
    Blocked {
        chat: String,
        turn_id: String,
        block: TurnBlock,
    },
    Unblocked {
        chat: String,
        turn_id: String,
    },
    SteeringReceived {
        chat: String,
        turn_id: String,
    },
    Usage {
        chat: String,
        turn_id: String,
        usage: UsageInfo,
    },
    Completed {
        chat: String,
        turn_id: String,
        completion: TurnCompletion,
    },
    ClearChat {
        chat: String,
    },
    ActiveTurn {
        chat: String,
    },
}

/// What [`FakeTurnTracker`] answers.
#[derive(Debug, Clone, Default)]
pub struct TurnAnswers {
    /// Answer of `active_turn`, by chat.
    pub active: HashMap<String, TurnSnapshot>,
}

fake!(
    /// Recording [`TurnTracker`].
    FakeTurnTracker, TurnCall, TurnAnswers
);

impl TurnTracker for FakeTurnTracker {
    fn turn_started(&self, chat: &str, turn_id: &str) {
        self.record(TurnCall::Started {
            chat: chat.into(),
            turn_id: turn_id.into(),
        });
    }
    fn turn_stage(&self, chat: &str, turn_id: &str, stage: TurnStage) {
        self.record(TurnCall::Stage {
            chat: chat.into(),
            turn_id: turn_id.into(),
            stage,
        });
    }
    fn turn_blocked(&self, chat: &str, turn_id: &str, block: TurnBlock) {
        self.record(TurnCall::Blocked {
            chat: chat.into(),
            turn_id: turn_id.into(),
            block,
        });
    }
    fn turn_unblocked(&self, chat: &str, turn_id: &str) {
        self.record(TurnCall::Unblocked {
            chat: chat.into(),
            turn_id: turn_id.into(),
        });
    }
    fn steering_received(&self, chat: &str, turn_id: &str) {
        self.record(TurnCall::SteeringReceived {
            chat: chat.into(),
            turn_id: turn_id.into(),
        });
    }
    fn usage(&self, chat: &str, turn_id: &str, usage: &UsageInfo) {
        self.record(TurnCall::Usage {
            chat: chat.into(),
            turn_id: turn_id.into(),
            usage: usage.clone(),
        });
    }
    fn turn_completed(&self, chat: &str, turn_id: &str, completion: TurnCompletion) {
        self.record(TurnCall::Completed {
            chat: chat.into(),
            turn_id: turn_id.into(),
            completion,
        });
    }
    fn clear_chat(&self, chat: &str) {
        self.record(TurnCall::ClearChat { chat: chat.into() });
    }
    fn active_turn(&self, chat: &str) -> Option<TurnSnapshot> {
        self.record(TurnCall::ActiveTurn { chat: chat.into() });
        self.answers().active.get(chat).cloned()
    }
}

/// A call to [`FakeToolCallTracker`].
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum ToolCallCall {
    Started {
        call: ToolCallKey,
        tool_name: String,
    },
    Executing {
        call: ToolCallKey,
    },
    Blocked {
        call: ToolCallKey,
        block: ToolCallBlock,
    },
    Unblocked {
        call: ToolCallKey,
    },
    Completed {
        call: ToolCallKey,
        outcome: ToolCallOutcome,
    },
    Clear {
        chat: String,
        turn_id: Option<String>,
    },
    Get {
        call: ToolCallKey,
    },
}

/// What [`FakeToolCallTracker`] answers.
#[derive(Debug, Clone, Default)]
pub struct ToolCallAnswers {
    /// Answer of `get`, by call.
    pub calls: HashMap<ToolCallKey, ToolCallSnapshot>,
}

fake!(
    /// Recording [`ToolCallTracker`].
    FakeToolCallTracker, ToolCallCall, ToolCallAnswers
);

impl ToolCallTracker for FakeToolCallTracker {
    fn started(&self, call: &ToolCallKey, tool_name: &str) {
        self.record(ToolCallCall::Started {
            call: call.clone(),
            tool_name: tool_name.into(),
        });
    }
    fn executing(&self, call: &ToolCallKey) {
        self.record(ToolCallCall::Executing { call: call.clone() });
    }
    fn blocked(&self, call: &ToolCallKey, block: ToolCallBlock) {
        self.record(ToolCallCall::Blocked {
            call: call.clone(),
            block,
        });
    }
    fn unblocked(&self, call: &ToolCallKey) {
        self.record(ToolCallCall::Unblocked { call: call.clone() });
    }
    fn completed(&self, call: &ToolCallKey, outcome: ToolCallOutcome) {
        self.record(ToolCallCall::Completed {
            call: call.clone(),
            outcome,
        });
    }
    fn clear(&self, chat: &str, turn_id: Option<&str>) {
        self.record(ToolCallCall::Clear {
            chat: chat.into(),
            turn_id: turn_id.map(Into::into),
        });
    }
    fn get(&self, call: &ToolCallKey) -> Option<ToolCallSnapshot> {
        self.record(ToolCallCall::Get { call: call.clone() });
        self.answers().calls.get(call).cloned()
    }
}

//! Recording fakes: `TitleController`, `LocalCommands`.

use super::*;

/// A call to [`FakeTitleController`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum TitleCall {
    SeedFromMessage {
        session: String,
        chat: String,
        text: String,
    },
    SetTitle {
        session: String,
        chat: String,
        title: String,
        kind: TitleKind,
    },
    RefineAfterFirstTurn {
        session: String,
        chat: String,
        successful: bool,
    },
    RenameInstruction {
        session: String,
        chat: String,
    },
    MarkRenamed {
        session: String,
        chat: Option<String>,
        by: TitleKind,
    },
    RenamedByUser {
        session: String,
        chat: Option<String>,
    },
    TitleState {
        chat: String,
    },
    ForgetChat {
        chat: String,
    },
    ForgetSession {
        session: String,
    },
}

/// What [`FakeTitleController`] answers. `set_title` echoes the title unless `refuse_set`.
#[derive(Debug, Clone, Default)]
pub struct TitleAnswers {
    /// Answer of `seed_from_message`.
    pub seed: Option<String>,
    /// `set_title` answers `None`.
    pub refuse_set: bool,
    /// Answer of `refine_after_first_turn`.
    pub refined: Option<String>,
    /// Answer of `rename_instruction`.
    pub rename_instruction: Option<String>,
    /// Answer of `renamed_by_user`.
    pub renamed_by_user: bool,
    /// Answer of `title_state`.
    pub state: Option<TitleState>,
}

fake!(
    /// Recording [`TitleController`].
    FakeTitleController, TitleCall, TitleAnswers
);

impl TitleController for FakeTitleController {
    fn seed_from_message(&self, session: &str, chat: &str, text: &str) -> Option<String> {
        self.record(TitleCall::SeedFromMessage {
            session: session.into(),
            chat: chat.into(),
            text: text.into(),
        });
        self.answers().seed.clone()
    }

    fn set_title(&self, session: &str, chat: &str, title: &str, kind: TitleKind) -> Option<String> {
        self.record(TitleCall::SetTitle {
            session: session.into(),
            chat: chat.into(),
            title: title.into(),
            kind,
        });
        (!self.answers().refuse_set).then(|| title.to_owned())
    }

    fn refine_after_first_turn(
        &self,
        session: &str,
        chat: &str,
        successful: bool,
    ) -> BoxFuture<'static, Option<String>> {
        self.record(TitleCall::RefineAfterFirstTurn {
            session: session.into(),
            chat: chat.into(),
            successful,
        });
        let refined = self.answers().refined.clone();
        Box::pin(async move { refined })
    }

    fn rename_instruction(&self, session: &str, chat: &str) -> Option<String> {
        self.record(TitleCall::RenameInstruction {
            session: session.into(),
            chat: chat.into(),
        });
        self.answers().rename_instruction.clone()
    }

    fn mark_renamed(&self, session: &str, chat: Option<&str>, by: TitleKind) {
        self.record(TitleCall::MarkRenamed {
            session: session.into(),
            chat: chat.map(Into::into),
            by,
        });
    }

    fn renamed_by_user(&self, session: &str, chat: Option<&str>) -> bool {
        self.record(TitleCall::RenamedByUser {
            session: session.into(),
            chat: chat.map(Into::into),
        });
        self.answers().renamed_by_user
    }

    fn title_state(&self, chat: &str) -> Option<TitleState> {
        self.record(TitleCall::TitleState { chat: chat.into() });
        self.answers().state.clone()
    }

    fn forget_chat(&self, chat: &str) {
        self.record(TitleCall::ForgetChat { chat: chat.into() });
    }

    fn forget_session(&self, session: &str) {
        self.record(TitleCall::ForgetSession {
            session: session.into(),
        });
    }
}

/// A call to [`FakeLocalCommands`]: the text offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalCommandsCall {
    /// `try_handle(text)`.
    TryHandle(String),
}

/// What [`FakeLocalCommands`] answers.
#[derive(Debug, Clone, Default)]
pub struct LocalCommandsAnswers {
    /// Answer of every `try_handle`.
    pub handle: Option<LocalCommand>,
}

fake!(
    /// Recording [`LocalCommands`].
    FakeLocalCommands, LocalCommandsCall, LocalCommandsAnswers
);

impl LocalCommands for FakeLocalCommands {
    fn try_handle(&self, text: &str) -> Option<LocalCommand> {
        self.record(LocalCommandsCall::TryHandle(text.into()));
        self.answers().handle.clone()
    }
}

use std::sync::Arc;

use futures::future::BoxFuture;

use super::*;

const S: &str = "ahp-session:/s1";
const C: &str = "ahp-chat:/c1";

#[test]
fn the_first_prose_line_becomes_the_title() {
    assert_eq!(
        seed_title("Fix the login bug", 60).as_deref(),
        Some("Fix the login bug")
    );
    assert_eq!(
        seed_title("\n\n   \n  Fix   the\tlogin  bug  \nmore detail", 60).as_deref(),
        Some("Fix the login bug")
    );
    assert_eq!(
        seed_title("# Heading\nbody", 60).as_deref(),
        Some("Heading")
    );
    assert_eq!(
        seed_title("> quoted ask", 60).as_deref(),
        Some("quoted ask")
    );
    assert_eq!(seed_title("- a bullet", 60).as_deref(), Some("a bullet"));
}

#[test]
fn empty_and_invisible_messages_yield_no_title() {
    assert_eq!(seed_title("", 60), None);
    assert_eq!(seed_title(" \n\t\n ", 60), None);
    assert_eq!(seed_title("\u{200B}\u{202E}\u{0007}", 60), None);
    assert_eq!(seed_title("```\n```", 60), None);
}

#[test]
fn long_titles_are_cut_at_a_word_boundary_with_an_ellipsis() {
    let text = "Refactor the authentication middleware so that tokens are refreshed lazily";
    let title = seed_title(text, 30).unwrap();
    assert_eq!(title, "Refactor the authentication…");
    assert!(title.chars().count() <= 30);
    // A cut that lands exactly on a space keeps the whole prefix.
    assert_eq!(
        seed_title("abcdefg hijklmn", 8).as_deref(),
        Some("abcdefg…")
    );
    // One word longer than the limit is cut inside it.
    let word = "a".repeat(100);
    assert_eq!(
        seed_title(&word, 10).unwrap(),
        format!("{}…", "a".repeat(9))
    );
    // Trailing punctuation before the cut is dropped.
    assert_eq!(
        seed_title("first, second third fourth", 16).as_deref(),
        Some("first, second…")
    );
}

#[test]
fn limits_count_characters_not_bytes_and_tiny_limits_are_raised() {
    let text = "日本語のタイトルはとても長いのでここで切られるはずです";
    let title = seed_title(text, 10).unwrap();
    assert_eq!(title.chars().count(), 10);
    assert!(title.ends_with('…'));
    let emoji = "🦀".repeat(50);
    assert_eq!(seed_title(&emoji, 12).unwrap().chars().count(), 12);
    assert_eq!(
        seed_title("one two three four five", 0).as_deref(),
        Some("one two…")
    );
}

#[test]
fn slash_commands_and_code_fences_are_handled() {
    assert_eq!(
        seed_title("/explain how the parser works", 60).as_deref(),
        Some("how the parser works")
    );
    assert_eq!(
        seed_title("/compact\nsummarise the plan", 60).as_deref(),
        Some("summarise the plan")
    );
    assert_eq!(seed_title("/help", 60), None);
    // A path is not a command.
    assert_eq!(
        seed_title("/usr/bin/env is missing", 60).as_deref(),
        Some("/usr/bin/env is missing")
    );
    // Prose after a fence wins over the code.
    assert_eq!(
        seed_title("```rust\nfn main() {}\n```\nWhy does this not compile?", 60).as_deref(),
        Some("Why does this not compile?")
    );
    // Only code: its first line is the fallback.
    assert_eq!(
        seed_title("```\n\nlet x = 1;\n```", 60).as_deref(),
        Some("let x = 1;")
    );
    // An unclosed fence swallows the rest.
    assert_eq!(
        seed_title("~~~\nsecret\nmore", 60).as_deref(),
        Some("secret")
    );
}

#[test]
fn a_chat_is_seeded_once_and_user_titles_win() {
    let titles = DefaultTitleController::default();
    assert_eq!(
        titles.seed_from_message(S, C, "Hello there").as_deref(),
        Some("Hello there")
    );
    assert_eq!(titles.seed_from_message(S, C, "Second message"), None);
    let state = titles.title_state(C).unwrap();
    assert_eq!(state.title.as_deref(), Some("Hello there"));
    assert_eq!(state.kind, TitleKind::Provisional);

    assert_eq!(
        titles
            .set_title(S, C, "  Mine\n", TitleKind::User)
            .as_deref(),
        Some("Mine")
    );
    assert!(titles.renamed_by_user(S, Some(C)));
    assert_eq!(titles.set_title(S, C, "Auto", TitleKind::Generated), None);
    assert_eq!(
        titles.set_title(S, C, "Provisional", TitleKind::Provisional),
        None
    );
    assert_eq!(
        titles.set_title(S, C, "Again", TitleKind::User).as_deref(),
        Some("Again")
    );
    assert_eq!(titles.set_title(S, C, " \u{200B} ", TitleKind::User), None);
    assert_eq!(
        titles.title_state(C).unwrap().title.as_deref(),
        Some("Again")
    );
}

#[test]
fn renamed_marks_for_sessions_and_chats() {
    let titles = DefaultTitleController::default();
    assert!(!titles.renamed_by_user(S, None));
    titles.mark_renamed(S, None, TitleKind::User);
    assert!(titles.renamed_by_user(S, None));
    titles.mark_renamed(S, Some(C), TitleKind::User);
    assert!(titles.renamed_by_user(S, Some(C)));
    titles.mark_renamed(S, Some(C), TitleKind::Generated);
    assert!(!titles.renamed_by_user(S, Some(C)));
    titles.mark_renamed(S, None, TitleKind::Provisional);
    assert!(!titles.renamed_by_user(S, None));
}

struct Fixed(&'static str);
impl TitleGenerator for Fixed {
    fn generate(&self, first_message: &str) -> BoxFuture<'static, Option<String>> {
        let title = format!("{} ({})", self.0, first_message.len());
        Box::pin(async move { Some(title) })
    }
}

#[tokio::test]
async fn refinement_keeps_the_seed_by_default_and_runs_once_with_a_generator() {
    let titles = DefaultTitleController::default();
    titles.seed_from_message(S, C, "Hello");
    assert_eq!(titles.refine_after_first_turn(S, C, true).await, None);
    assert_eq!(
        titles.title_state(C).unwrap().title.as_deref(),
        Some("Hello")
    );
    assert!(titles.title_state(C).unwrap().refined);

    let titles =
        DefaultTitleController::with_generator(TitleConfig::default(), Arc::new(Fixed("Greeting")));
    titles.seed_from_message(S, C, "Hello");
    assert_eq!(
        titles.refine_after_first_turn(S, C, false).await,
        None,
        "not after a failure"
    );
    assert_eq!(
        titles.refine_after_first_turn(S, C, true).await.as_deref(),
        Some("Greeting (5)")
    );
    let state = titles.title_state(C).unwrap();
    assert_eq!(
        (state.title.as_deref(), state.kind),
        (Some("Greeting (5)"), TitleKind::Generated)
    );
    assert_eq!(
        titles.refine_after_first_turn(S, C, true).await,
        None,
        "only once"
    );
    assert_eq!(
        titles
            .refine_after_first_turn(S, "ahp-chat:/unknown", true)
            .await,
        None
    );
}

#[tokio::test]
async fn refinement_never_touches_a_user_title() {
    let titles =
        DefaultTitleController::with_generator(TitleConfig::default(), Arc::new(Fixed("Gen")));
    titles.seed_from_message(S, C, "Hello");
    titles.mark_renamed(S, Some(C), TitleKind::User);
    assert_eq!(titles.refine_after_first_turn(S, C, true).await, None);

    // Renamed while the generator runs: the generated title is dropped.
    titles.forget_chat(C);
    titles.seed_from_message(S, C, "Hello");
    let refining = titles.refine_after_first_turn(S, C, true);
    titles.set_title(S, C, "Mine", TitleKind::User);
    assert_eq!(refining.await, None);
    assert_eq!(
        titles.title_state(C).unwrap().title.as_deref(),
        Some("Mine")
    );

    // A session the user renamed keeps its default chat's title too.
    let other = "ahp-chat:/c2";
    titles.seed_from_message(S, other, "Hi");
    titles.mark_renamed(S, None, TitleKind::User);
    assert_eq!(titles.refine_after_first_turn(S, other, true).await, None);
}

#[test]
fn the_default_has_no_rename_instruction_and_memory_is_bounded() {
    let titles = DefaultTitleController::new(TitleConfig {
        max_chars: 60,
        capacity: 3,
    });
    assert_eq!(titles.rename_instruction(S, C), None);
    for i in 0..10 {
        titles.seed_from_message(S, &format!("ahp-chat:/c{i}"), "Hello");
    }
    assert_eq!(titles.lock().chats.len(), 3);
    assert!(titles.title_state("ahp-chat:/c9").is_some());
    assert!(titles.title_state("ahp-chat:/c0").is_none());

    titles.seed_from_message("ahp-session:/other", "ahp-chat:/x", "Hello");
    titles.mark_renamed(S, None, TitleKind::User);
    titles.forget_session(S);
    assert!(!titles.renamed_by_user(S, None));
    assert_eq!(titles.lock().chats.len(), 1);
    assert!(titles.title_state("ahp-chat:/x").is_some());
    titles.forget_chat("ahp-chat:/x");
    assert_eq!(titles.title_state("ahp-chat:/x"), None);
}

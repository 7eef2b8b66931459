//! A chat's earlier turns as text, for an agent that starts without them: a side chat's first
//! message, or the first prompt of a conversation the agent could not resume after a host
//! restart. One `User request / Agent response` block per turn (the response is the turn's
//! markdown parts concatenated), joined by [`TURN_SEPARATOR`] and middle-truncated to
//! [`MAX_TRANSCRIPT_CHARS`] by [`truncate_middle`].

use agenthost_protocol::ahp_types::state::{ResponsePart, Turn};

/// The bound of a transcript (and of a side chat's partial response), in characters.
pub const MAX_TRANSCRIPT_CHARS: usize = 20_000;

/// Between two transcript blocks.
pub const TURN_SEPARATOR: &str = "\n---\n";

/// `text` cut to at most `max_chars` characters by removing its middle: the head and the tail
/// are kept around a line saying how many characters were omitted. Text within the bound is
/// returned as it is.
pub fn truncate_middle(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_owned();
    }
    // Sized for the largest possible number, so the real marker never exceeds it.
    let marker_bound = omitted_marker(count).chars().count();
    if max_chars <= marker_bound {
        return text.chars().take(max_chars).collect();
    }
    let keep = max_chars - marker_bound;
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let omitted = count - keep;
    let mut cut: String = text.chars().take(head).collect();
    cut.push_str(&omitted_marker(omitted));
    cut.extend(text.chars().skip(count - tail));
    cut
}

fn omitted_marker(omitted: usize) -> String {
    format!("\n[… {omitted} characters omitted …]\n")
}

/// A turn's agent response: its markdown parts, concatenated in stream order.
pub fn response_text(parts: &[ResponsePart]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            ResponsePart::Markdown(markdown) => Some(markdown.content.as_str()),
            _ => None,
        })
        .collect()
}

/// The transcript of `turns`: one `User request / Agent response` block per turn, joined by
/// [`TURN_SEPARATOR`], middle-truncated to [`MAX_TRANSCRIPT_CHARS`].
pub fn transcript(turns: &[Turn]) -> String {
    let blocks: Vec<String> = turns
        .iter()
        .map(|turn| {
            format!(
                "User request:\n{}\n\nAgent response:\n{}",
                turn.message.text,
                response_text(&turn.response_parts)
            )
        })
        .collect();
    truncate_middle(&blocks.join(TURN_SEPARATOR), MAX_TRANSCRIPT_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_middle_of_a_long_text_goes_and_says_how_much() {
        let text = "a".repeat(50) + &"b".repeat(50);
        let cut = truncate_middle(&text, 60);
        assert!(cut.chars().count() <= 60, "{cut}");
        assert!(cut.starts_with("aaaa") && cut.ends_with("bbbb"), "{cut}");
        assert!(cut.contains("characters omitted"), "{cut}");
        assert_eq!(truncate_middle("short", 60), "short");
    }
}

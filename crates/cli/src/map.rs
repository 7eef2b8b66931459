//! `agent-host map --provider NAME FILE`: the AHP actions an agent transcript maps to.
//!
//! The transcript is what the agent CLI printed on stdout: JSON lines, or — for `copilot
//! --headless --stdio` — `Content-Length` framed JSON-RPC as it came off the pipe (told apart
//! by [`is_framed`], decoded by [`unframe`] into one body per line). It is mapped as one
//! protocol turn (`turn-1`) of a session `ahp-session:/map`; each resulting signal is printed as
//! one JSON object per line (actions as their wire JSON, see
//! `agenthost_provider_api::signal_json`). A transcript that maps to no signal at all is an
//! error: it is empty, or in another provider's format.

use std::io::{Read, Write};
use std::path::Path;

use agenthost_protocol::{SafeId, SessionUri};
use agenthost_provider_api::signal_json;
use agenthost_provider_copilot::FrameDecoder;

use crate::CliError;

/// The providers whose transcripts can be mapped.
pub const MAPPABLE: &[&str] = &["claude", "codex", "copilot", "acp"];

/// The turn id the transcript is mapped as.
pub const TURN_ID: &str = "turn-1";

/// The longest frame header section [`unframe`] accepts (what the Copilot driver accepts).
const MAX_HEADER_BYTES: usize = 8 * 1024;

/// What a provider's transcripts look like, for the message suggesting the right provider.
fn format_of(provider: &str) -> &'static str {
    match provider {
        "claude" => "`claude -p --output-format stream-json --verbose` output",
        "codex" => "`codex app-server` or `codex exec --json` output",
        "copilot" => {
            "`copilot --headless --stdio` output (Content-Length frames, or their bodies one per \
             line) or `copilot -p --output-format json` output"
        }
        "acp" => "an ACP agent's stdout (JSON-RPC 2.0, one message per line)",
        _ => "an unknown format",
    }
}

/// Maps `text` (a `provider` transcript, JSON lines) to one JSON line per signal; may be empty.
pub fn map_text(provider: &str, text: &str) -> Result<Vec<String>, CliError> {
    let session = SessionUri::canonical(
        SafeId::new("map").map_err(|e| CliError::Usage(format!("internal session id: {e}")))?,
    );
    let signals = match provider {
        "claude" => agenthost_provider_claude::map_transcript(session, TURN_ID, text)
            .map_err(|e| CliError::Agent(e.to_string()))?,
        // `codex app-server` output and `codex exec --json` output are told apart by their lines.
        "codex" => agenthost_provider_codex::map_transcript(session, TURN_ID, text)
            .map_err(|e| CliError::Agent(e.to_string()))?,
        // Decoded headless frames and `copilot -p --output-format json` lines alike.
        "copilot" => agenthost_provider_copilot::map_transcript(session, TURN_ID, text)
            .map_err(|e| CliError::Agent(e.to_string()))?,
        // Any ACP agent's stdout: `session/update`s and the prompt's answer.
        "acp" => agenthost_provider_acp::map_transcript(session, TURN_ID, text)
            .map_err(|e| CliError::Agent(e.to_string()))?,
        other => {
            return Err(CliError::Usage(format!(
                "cannot map transcripts of provider {other:?} (mappable: {})",
                MAPPABLE.join(", ")
            )));
        }
    };
    signals
        .iter()
        .map(|signal| {
            serde_json::to_string(&signal_json(signal))
                .map_err(|e| CliError::Agent(format!("cannot write a signal as JSON: {e}")))
        })
        .collect()
}

/// `provider` with its article: "a claude", "an acp".
fn a(provider: &str) -> String {
    let article = if provider.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {provider}")
}

/// Whether `text` is a `Content-Length` framed capture rather than JSON lines: its first
/// non-blank line is a header (`Name: value`), not a JSON object.
pub fn is_framed(text: &str) -> bool {
    let first = text.trim_start().lines().next().unwrap_or_default();
    first.split_once(':').is_some_and(|(name, _)| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

/// The bodies of a `Content-Length` framed capture (`Content-Length: N\r\n\r\n{…}` back to
/// back, as `copilot --headless --stdio` writes them), one per line in order: line `n` of the
/// result is frame `n`. Blank space before the first frame and after the last is ignored.
///
/// Errors name the frame and the byte it starts at: a header that is not `Name: value` lines
/// with a byte count as `Content-Length`, a body that is not UTF-8, or a capture that ends
/// inside a frame (truncated).
pub fn unframe(text: &str) -> Result<String, CliError> {
    let trimmed = text.trim_start();
    let skipped = text.len() - trimmed.len();
    let bytes = trimmed.as_bytes();
    // The whole capture is in memory already: no body limit beyond its own size.
    let mut decoder = FrameDecoder::new(MAX_HEADER_BYTES, usize::MAX);
    let mut bodies: Vec<String> = Vec::new();
    // Where the last whole frame ended. The decoder is fed one byte at a time so that a frame's
    // end is known exactly, and what is left at the end (a truncated frame) with it.
    let mut end = 0;
    let frame_at = |number: usize, end: usize| format!("frame {number} (byte {})", skipped + end);
    'feed: for (index, byte) in bytes.iter().enumerate() {
        decoder.push(std::slice::from_ref(byte));
        loop {
            match decoder.next_frame() {
                Ok(Some(body)) => {
                    let body = String::from_utf8(body).map_err(|_| {
                        CliError::Usage(format!(
                            "{}: the body is not UTF-8",
                            frame_at(bodies.len() + 1, end)
                        ))
                    })?;
                    // Raw line breaks in a JSON body can only be insignificant white space.
                    bodies.push(body.replace(['\r', '\n'], " "));
                    end = index + 1;
                }
                Ok(None) => break,
                // Trailing blank space after the last frame is no frame.
                Err(_) if bytes[end..].iter().all(u8::is_ascii_whitespace) => break 'feed,
                Err(error) => {
                    return Err(CliError::Usage(format!(
                        "{}: {error}",
                        frame_at(bodies.len() + 1, end)
                    )));
                }
            }
        }
    }
    let rest = &bytes[end..];
    if !rest.iter().all(u8::is_ascii_whitespace) {
        return Err(CliError::Usage(format!(
            "{} is truncated: the capture ends {} bytes into it, before the end of its {}",
            frame_at(bodies.len() + 1, end),
            rest.len(),
            if rest.windows(4).any(|w| w == b"\r\n\r\n") {
                "body (shorter than its Content-Length)"
            } else {
                "header"
            }
        )));
    }
    Ok(bodies.join("\n"))
}

/// Maps a capture read from `source` (a file name, for messages) as a `provider` transcript:
/// framed captures are unframed first. No signal at all is an error naming `source` and
/// `provider`, suggesting the provider whose format the capture is in when one maps it.
pub fn map_capture(provider: &str, source: &str, text: &str) -> Result<Vec<String>, CliError> {
    if !MAPPABLE.contains(&provider) {
        return map_text(provider, text);
    }
    let framed = is_framed(text);
    let lines = if framed {
        unframe(text).map_err(|e| {
            CliError::Usage(format!("{source}: not a valid Content-Length capture: {e}"))
        })?
    } else {
        text.to_owned()
    };
    let mapped = map_text(provider, &lines).map_err(|e| {
        let numbering = if framed { " (line n is frame n)" } else { "" };
        CliError::Agent(format!(
            "cannot map {source} as {} transcript: {e}{numbering}{}",
            a(provider),
            suggestion(provider, &lines)
        ))
    })?;
    if !mapped.is_empty() {
        return Ok(mapped);
    }
    if lines.trim().is_empty() {
        return Err(CliError::Usage(format!(
            "{source} is empty: no {provider} transcript to map (expected {})",
            format_of(provider)
        )));
    }
    Err(CliError::Usage(format!(
        "{source} maps to no AHP actions as {} transcript (expected {}){}",
        a(provider),
        format_of(provider),
        suggestion(provider, &lines)
    )))
}

/// `; it maps as a … transcript: try --provider …` naming the other provider `lines` map to the
/// most signals with, or nothing when none maps them.
fn suggestion(provider: &str, lines: &str) -> String {
    MAPPABLE
        .iter()
        .filter(|other| **other != provider)
        .filter_map(|other| {
            let count = map_text(other, lines).map_or(0, |mapped| mapped.len());
            (count > 0).then_some((count, *other))
        })
        // The first of the best: `max_by_key` keeps the last of equals.
        .fold(
            None,
            |best: Option<(usize, &str)>, (count, other)| match best {
                Some((most, _)) if most >= count => best,
                _ => Some((count, other)),
            },
        )
        .map(|(_, other)| {
            format!(
                "; it maps as {} transcript: try --provider {other}",
                a(other)
            )
        })
        .unwrap_or_default()
}

/// Reads `file` (`-`: stdin) and prints its mapping to stdout.
pub fn run(provider: &str, file: &Path) -> Result<(), CliError> {
    let (source, text) = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::Usage(format!("cannot read stdin: {e}")))?;
        ("stdin".to_owned(), text)
    } else {
        let text = std::fs::read_to_string(file)
            .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", file.display())))?;
        (file.display().to_string(), text)
    };
    let lines = map_capture(provider, &source, &text)?;
    let mut stdout = std::io::stdout().lock();
    for line in lines {
        writeln!(stdout, "{line}")
            .map_err(|e| CliError::Usage(format!("cannot write to stdout: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(bodies: &[&str]) -> String {
        bodies
            .iter()
            .map(|body| {
                String::from_utf8(agenthost_provider_copilot::encode(body.as_bytes())).unwrap()
            })
            .collect()
    }

    #[test]
    fn framing_is_told_from_json_lines() {
        assert!(is_framed("Content-Length: 2\r\n\r\n{}"));
        assert!(is_framed(
            "\n content-type: x\r\nContent-Length: 2\r\n\r\n{}"
        ));
        assert!(!is_framed("{\"a\":\"b: c\"}\n"));
        assert!(!is_framed(""));
        assert!(!is_framed("not json at all\n"));
    }

    #[test]
    fn unframe_yields_one_body_per_line() {
        let text = frames(&["{\"a\":1}", "{\n \"b\": 2\n}", "{}"]);
        assert_eq!(
            unframe(&format!("{text}\n")).unwrap(),
            "{\"a\":1}\n{  \"b\": 2 }\n{}"
        );
        assert_eq!(unframe("").unwrap(), "");
    }

    #[test]
    fn unframe_names_a_truncated_frame_and_a_bad_header() {
        let whole = frames(&["{\"a\":1}", "{\"b\":2}"]);
        let error = unframe(&whole[..whole.len() - 3]).unwrap_err();
        assert!(
            error.to_string().contains("frame 2 (byte 28) is truncated"),
            "{error}"
        );
        assert!(error.to_string().contains("Content-Length"), "{error}");
        let error = unframe(&whole[..whole.len() - 10]).unwrap_err();
        assert!(error.to_string().contains("frame 2"), "{error}");
        assert!(error.to_string().contains("header"), "{error}");
        let error = unframe("Content-Length: 2\r\n\r\n{}Content-Length: x\r\n\r\n{}").unwrap_err();
        assert!(error.to_string().contains("frame 2 (byte 23)"), "{error}");
        assert!(error.to_string().contains("not a byte count"), "{error}");
    }
}

//! Unified diff text (`git diff` style) of a changeset: [`unified_diff`] for one file's two
//! sides, [`Checkpointer::unified_diff`](crate::Checkpointer::unified_diff) for a whole
//! changeset read from its repository.
//!
//! The hunks come from gix's histogram diff (the same one the line counts use) with three lines
//! of context; the headers are git's (`diff --git`, `new file mode`, `deleted file mode`,
//! `rename from`/`rename to`, `---`/`+++` with `/dev/null` for a missing side), so the text
//! applies with `git apply` / `patch -p1`. Binary content gets git's one-line
//! `Binary files … differ`; a last line without a newline gets `\ No newline at end of file`.

use std::fmt::Write as _;

use gix::diff::blob::unified_diff::{ConsumeHunk, ContextSize, DiffLineKind, HunkHeader};
use gix::diff::blob::{Algorithm, Diff, InternedInput, UnifiedDiff, sources};

use crate::changeset::{ChangeKind, FileChange, is_binary};

/// Collects hunks as text.
struct Hunks(String);

impl ConsumeHunk for Hunks {
    type Out = String;

    fn consume_hunk(
        &mut self,
        header: HunkHeader,
        lines: &[(DiffLineKind, &[u8])],
    ) -> std::io::Result<()> {
        // An empty side starts at the line before it, as git and GNU diff write it (`-0,0`).
        let start = |start: u32, len: u32| {
            if len == 0 {
                start.saturating_sub(1)
            } else {
                start
            }
        };
        let _ = writeln!(
            self.0,
            "@@ -{},{} +{},{} @@",
            start(header.before_hunk_start, header.before_hunk_len),
            header.before_hunk_len,
            start(header.after_hunk_start, header.after_hunk_len),
            header.after_hunk_len
        );
        for (kind, content) in lines {
            self.0.push(match kind {
                DiffLineKind::Context => ' ',
                DiffLineKind::Add => '+',
                DiffLineKind::Remove => '-',
            });
            let text = String::from_utf8_lossy(content);
            match text.strip_suffix('\n') {
                Some(line) => {
                    self.0.push_str(line);
                    self.0.push('\n');
                }
                None => {
                    self.0.push_str(&text);
                    self.0.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> String {
        self.0
    }
}

/// The unified diff of one file: `before` / `after` are its two sides (`None` where the file does
/// not exist). Empty when both sides are equal and the path did not change.
pub fn unified_diff(change: &FileChange, before: Option<&[u8]>, after: Option<&[u8]>) -> String {
    let new_path = change.path.as_str();
    let old_path = change.old_path.as_deref().unwrap_or(new_path);
    let mut out = format!("diff --git a/{old_path} b/{new_path}\n");
    match change.kind {
        ChangeKind::Added => out.push_str("new file mode 100644\n"),
        ChangeKind::Deleted => out.push_str("deleted file mode 100644\n"),
        ChangeKind::Renamed => {
            let _ = write!(out, "rename from {old_path}\nrename to {new_path}\n");
        }
        ChangeKind::Modified => {}
    }
    let (before, after) = (before.unwrap_or_default(), after.unwrap_or_default());
    if before == after {
        return if change.kind == ChangeKind::Modified {
            String::new()
        } else {
            out
        };
    }
    let minus = match change.kind {
        ChangeKind::Added => "/dev/null".to_owned(),
        _ => format!("a/{old_path}"),
    };
    let plus = match change.kind {
        ChangeKind::Deleted => "/dev/null".to_owned(),
        _ => format!("b/{new_path}"),
    };
    if change.binary || is_binary(before) || is_binary(after) {
        let _ = writeln!(out, "Binary files {minus} and {plus} differ");
        return out;
    }
    let _ = write!(out, "--- {minus}\n+++ {plus}\n");
    let input = InternedInput::new(sources::byte_lines(before), sources::byte_lines(after));
    let diff = Diff::compute(Algorithm::Histogram, &input);
    match UnifiedDiff::new(
        &diff,
        &input,
        Hunks(String::new()),
        ContextSize::symmetrical(3),
    )
    .consume()
    {
        Ok(hunks) => out.push_str(&hunks),
        Err(error) => {
            let _ = writeln!(out, "(the diff could not be rendered: {error})");
        }
    }
    out
}

#[cfg(test)]
#[path = "unified_tests.rs"]
mod tests;

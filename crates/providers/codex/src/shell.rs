//! Shell wrappers: Codex runs every command as `/bin/bash -lc '<cmd>'` (or `zsh -lc`, `sh -c`,
//! `pwsh -Command`, …); people want to see `<cmd>`.

/// Shells whose `-c` script is what the user cares about.
const POSIX_SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "fish"];
const POWERSHELLS: &[&str] = &["powershell", "powershell.exe", "pwsh", "pwsh.exe"];

/// The script a shell wrapper runs (`/bin/bash -lc 'echo hi'` → `echo hi`); any other command
/// line is returned unchanged.
pub fn unwrap_command(command: &str) -> String {
    split_words(command)
        .and_then(|words| wrapped_script(&words))
        .unwrap_or_else(|| command.to_owned())
}

/// The command an argv runs: the script of a shell wrapper, else the words joined with the
/// quoting a shell needs to read them back.
pub fn unwrap_argv(argv: &[String]) -> String {
    wrapped_script(argv).unwrap_or_else(|| {
        argv.iter()
            .map(|word| quote(word))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// `words` as `<shell> [options] -c <script>` (also behind `env`), or `None`.
fn wrapped_script(words: &[String]) -> Option<String> {
    let mut words = words;
    if words.first().is_some_and(|word| program(word) == "env") {
        words = &words[1..];
    }
    let (shell, rest) = words.split_first()?;
    let name = program(shell).to_ascii_lowercase();
    let (script, options) = rest.split_last()?;
    if POSIX_SHELLS.contains(&name.as_str()) {
        let runs_script = options.iter().all(|option| option.starts_with('-'))
            && options.last().is_some_and(|option| {
                !option.starts_with("--") && option.trim_start_matches('-').contains('c')
            });
        return runs_script.then(|| script.clone());
    }
    if POWERSHELLS.contains(&name.as_str()) {
        let runs_script = options.iter().all(|option| option.starts_with('-'))
            && options.last().is_some_and(|option| {
                matches!(
                    option.to_ascii_lowercase().as_str(),
                    "-c" | "-command" | "/c" | "/command"
                )
            });
        return runs_script.then(|| script.clone());
    }
    None
}

/// The file name of a program path (`/bin/bash` → `bash`).
fn program(word: &str) -> &str {
    word.rsplit(['/', '\\']).next().unwrap_or(word)
}

/// Splits a command line into words as a POSIX shell would: single quotes are literal, double
/// quotes honour `\` before `$`, `` ` ``, `"`, `\` and newline, a bare `\` escapes the next
/// character. `None` when a quote is not closed.
fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('$' | '`' | '"' | '\\') => word.push(c),
                            '\n' => {}
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(c) => word.push(c),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// `word` quoted for a POSIX shell when it needs it.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;

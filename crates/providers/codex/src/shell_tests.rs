use super::*;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_owned()).collect()
}

#[test]
fn shell_wrappers_are_unwrapped_to_their_script() {
    for (wrapped, script) in [
        ("/bin/bash -lc 'echo hi > out.txt'", "echo hi > out.txt"),
        ("bash -c 'ls /nonexistent-dir'", "ls /nonexistent-dir"),
        (
            "/bin/zsh -lc \"echo \\\"quoted\\\" \\$HOME\"",
            "echo \"quoted\" $HOME",
        ),
        ("sh -c 'it'\\''s'", "it's"),
        ("/usr/bin/env bash --noprofile -lc 'make test'", "make test"),
        ("pwsh -NoProfile -Command 'Get-ChildItem'", "Get-ChildItem"),
        ("bash -lc 'multi\nline'", "multi\nline"),
    ] {
        assert_eq!(unwrap_command(wrapped), script, "{wrapped}");
    }
}

#[test]
fn other_command_lines_stay_as_they_are() {
    for line in [
        "echo hi",
        "bash script.sh",
        "bash -lc 'echo' extra-arg",
        "bash --login 'x'",
        "python -c 'print(1)'",
        "bash -lc 'unterminated",
        "",
    ] {
        assert_eq!(unwrap_command(line), line, "{line}");
    }
}

#[test]
fn argv_wrappers_are_unwrapped_and_other_argv_is_quoted() {
    assert_eq!(
        unwrap_argv(&argv(&["/bin/bash", "-lc", "echo hi > out.txt"])),
        "echo hi > out.txt"
    );
    assert_eq!(
        unwrap_argv(&argv(&["git", "commit", "-m", "it's done", ""])),
        r"git commit -m 'it'\''s done' ''"
    );
    assert_eq!(unwrap_argv(&[]), "");
}

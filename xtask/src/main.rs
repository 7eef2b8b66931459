//! `cargo xtask <command>`: see `cargo xtask help`.

use std::process::ExitCode;

use xtask::error::{Error, Result};
use xtask::{bench, cargo, ci, lint, project_root};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  lint           static checks + snapshot verification:
                 1. the seven static checks of ARCHITECTURE.md's rules (layering and the server's
                    pinned dependencies, thin orchestration, contribution shape, pending snapshots,
                    contract pins, file length, typed errors) — the #[test] in
                    xtask/tests/tidy.rs runs these only;
                 2. `cargo test -p <pkg> --quiet` with INSTA_UPDATE=no INSTA_FORCE_PASS=0 CI=true
                    for every package with insta snapshots, so a changed snapshot fails
  ci             fmt --check, clippy -D warnings, lint static checks, cargo deny (bans licenses
                 sources); tests and snapshots are `cargo test --workspace`'s, run before it
  bench [NAME…]  run the [[bench]] targets (all without NAME) and summarise their bench lines
  lines DIR…     production lines of crates (the thin-orchestration line counter: non-blank,
                 non-comment, tests excluded), one line per crate directory, and their total
  help           print this message";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    let root = project_root();
    let cargo = cargo();
    let Some((command, rest)) = args.split_first() else {
        return Err(Error::new(format!("missing command\n\n{USAGE}")));
    };
    match (command.as_str(), rest) {
        ("lint", []) => {
            lint::lint_command(&cargo, &root)?;
            eprintln!(
                "lint: all {} static checks and the snapshot verification passed",
                lint::CHECKS.len()
            );
            Ok(())
        }
        ("ci", []) => ci::ci(&cargo, &root),
        ("bench", names) => bench::bench(&cargo, &root, names),
        ("lines", dirs) if !dirs.is_empty() => {
            let mut total = 0;
            for dir in dirs {
                let lines = xtask::thin_orchestration::crate_lines(&root.join(dir))?;
                println!("{lines:>6}  {dir}");
                total += lines;
            }
            println!("{total:>6}  total");
            Ok(())
        }
        ("help" | "--help" | "-h", _) => {
            println!("{USAGE}");
            Ok(())
        }
        ("lint" | "ci", extra) => Err(Error::new(format!(
            "`{command}` takes no arguments, got `{}`\n\n{USAGE}",
            extra.join(" ")
        ))),
        _ => Err(Error::new(format!(
            "unknown command `{command}`\n\n{USAGE}"
        ))),
    }
}

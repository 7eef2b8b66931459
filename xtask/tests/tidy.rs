//! The architecture lint over the real workspace, so `cargo test --workspace` enforces it
//! (rust-analyzer's tidy pattern). `cargo xtask lint` prints the same report.

use std::path::Path;

#[test]
fn the_workspace_follows_the_architecture_rules() {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = xtask_dir.parent().unwrap();
    if let Err(error) = xtask::lint::lint_workspace(Path::new(env!("CARGO")), root) {
        panic!("{error}\n\n(`cargo xtask lint` prints the same report)");
    }
}

#!/usr/bin/env bash
# Runs every fuzz target in turn, each from its committed seed corpus (fuzz/corpus/<target>).
# New inputs go to a scratch directory, so the seeds stay as committed; a crash leaves its input
# in fuzz/artifacts/<target>/ and fails the script.
#
#   fuzz/run.sh                          # CI: every target for 20 s
#   fuzz/run.sh -runs=10000000           # any libFuzzer flags instead of the default
#   FUZZ_WORK_DIR=/tmp/fz fuzz/run.sh    # keep the grown corpora
#
# Stable toolchain: `--sanitizer none` (AddressSanitizer needs nightly; the code has no unsafe).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

args=("$@")
if [ "${#args[@]}" -eq 0 ]; then
    args=(-max_total_time=20)
fi
work="${FUZZ_WORK_DIR:-$(mktemp -d)}"

cargo fuzz build --sanitizer none
for target in $(cargo fuzz list); do
    # Ref names: the rules are per character, long ids add nothing but time.
    extra=()
    if [ "$target" = refname ]; then
        extra=(-max_len=256)
    fi
    mkdir -p "$work/$target"
    echo "==> fuzz/run.sh: $target ${extra[*]} ${args[*]}"
    cargo fuzz run --sanitizer none "$target" "$work/$target" "corpus/$target" -- \
        -print_final_stats=1 "${extra[@]}" "${args[@]}"
done

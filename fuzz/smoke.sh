#!/bin/sh
# A short run of every fuzz target (FUZZ_SECONDS each, 60 by default), one after another: what
# .ci/run does. Needs the nightly toolchain and cargo-fuzz on PATH (see docs/fuzzing.md).
set -eu
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
sh fuzz/seed.sh
for target in jsonl_record resolve_markers merge3; do
  echo "== fuzz $target for ${seconds}s"
  # cargo fuzz builds in fuzz/target, whatever CARGO_TARGET_DIR says.
  env -u CARGO_TARGET_DIR cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
done

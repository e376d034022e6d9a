#!/usr/bin/env bash
# Type-checks the library and the binaries (the tests drive unix tools) for macOS (aarch64) and
# Windows (x86_64, MSVC), so a change that breaks either fails here (notify's FSEvents
# backend and a unix-only constant once broke them unseen). The targets' standard libraries come
# from rustup; their C parts are "compiled" by .ci/stub-cc, since `cargo check` links nothing.
# The target dir lives outside the clone (~/.cache/beads-git-cross) and is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
stub="$PWD/.ci/stub-cc"
bin_dir="${BEADS_GIT_TOOLS:-$HOME/.cache/beads-git-tools}/stub-cc"
mkdir -p "$bin_dir"
ln -sf "$stub" "$bin_dir/cc"
ln -sf "$stub" "$bin_dir/ar"
for target in aarch64-apple-darwin x86_64-pc-windows-msvc; do
  if ! rustup target list --installed | grep -qx "$target" && ! rustup target add "$target"; then
    # The one step here that needs rustup's download server: a machine that cannot reach it
    # says so loudly and checks the next target, rather than failing every other check.
    echo "WARNING: could not install the $target standard library (rustup target add $target); $target not checked" >&2
    continue
  fi
  var="$(echo "$target" | tr '-' '_')"
  echo "== cargo check --target $target"
  env "CC_$var=$bin_dir/cc" "AR_$var=$bin_dir/ar" "CFLAGS_$var=" RUSTFLAGS="-D warnings" \
    CARGO_TARGET_DIR="$HOME/.cache/beads-git-cross" \
    cargo check --locked --target "$target" --lib --bins
done

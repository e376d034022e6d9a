#!/usr/bin/env bash
# A second `cargo build` of an unchanged checkout compiles nothing (issue 34 item 7), whether the
# branch's ref is packed or loose, and a new commit does rebuild (the version string names the
# commit). Runs `cargo check` (build scripts run as in a build) in two fresh checkouts of this
# repository's HEAD that share one target directory. Run by .ci/run.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export CARGO_TARGET_DIR="$tmp/target"
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=ci GIT_AUTHOR_EMAIL=ci@example.com GIT_COMMITTER_NAME=ci GIT_COMMITTER_EMAIL=ci@example.com

compiled() { # prints how many crates of ours a `cargo check` compiled
  (cd "$1" && cargo check --locked --bins 2>&1) | grep -c 'Compiling beads-git' || true
}

# packed: a clone whose refs were all packed (no loose ref file for the branch)
git clone -q --no-local "$src" "$tmp/packed"
git -C "$tmp/packed" pack-refs --all
test ! -e "$tmp/packed/.git/refs/heads/$(git -C "$tmp/packed" symbolic-ref --short HEAD)"
# loose: a checkout that never packed (no packed-refs file)
git init -q "$tmp/loose"
git -C "$tmp/loose" fetch -q "$src" HEAD
git -C "$tmp/loose" checkout -q -B main FETCH_HEAD
test ! -e "$tmp/loose/.git/packed-refs"

for c in packed loose; do
  compiled "$tmp/$c" >/dev/null
  n="$(compiled "$tmp/$c")"
  if [ "$n" != 0 ]; then
    echo "noop-build: a second cargo check in the $c checkout compiled beads-git again" >&2
    exit 1
  fi
  git -C "$tmp/$c" commit -q --allow-empty -m "a new commit"
  n="$(compiled "$tmp/$c")"
  if [ "$n" = 0 ]; then
    echo "noop-build: a new commit in the $c checkout did not rebuild (the version would be stale)" >&2
    exit 1
  fi
  echo "noop-build: $c checkout: second build compiled nothing; a new commit rebuilt"
done

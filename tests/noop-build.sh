#!/usr/bin/env bash
# A second `cargo build` of an unchanged checkout compiles nothing, whether the
# branch's ref is packed or loose, and a new commit does rebuild (the version string names the
# commit). Runs `cargo check` (build scripts run as in a build) in a fresh checkout of this repository's
# HEAD, first with loose refs, then with packed ones. Run by .ci/run.
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

# One checkout that never packed its refs (no packed-refs file: the branch's ref is a loose file),
# then the same checkout with every ref packed (no loose ref file). One checkout, so the build
# script's recorded paths are always this checkout's.
repo="$tmp/checkout"
git init -q "$repo"
git -C "$repo" fetch -q "$src" HEAD
git -C "$repo" checkout -q -B main FETCH_HEAD
test ! -e "$repo/.git/packed-refs"

for state in loose packed; do
  if [ "$state" = packed ]; then
    git -C "$repo" pack-refs --all
    test ! -e "$repo/.git/refs/heads/main"
  fi
  compiled "$repo" >/dev/null
  n="$(compiled "$repo")"
  if [ "$n" != 0 ]; then
    echo "noop-build: a second cargo check with $state refs compiled beads-git again" >&2
    exit 1
  fi
  git -C "$repo" commit -q --allow-empty -m "a new commit"
  n="$(compiled "$repo")"
  if [ "$n" = 0 ]; then
    echo "noop-build: a new commit with $state refs did not rebuild (the version would be stale)" >&2
    exit 1
  fi
  echo "noop-build: $state refs: the second build compiled nothing; a new commit rebuilt"
done

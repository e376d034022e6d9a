#!/usr/bin/env bash
# The integration tests of what the system-specific calls serve, run again the way Windows runs
# them (src/platform.rs; docs/install.md, "What differs where"). Left out: the tests that assert
# the unix way itself (process groups stopping a background process, spawn counts with the
# ownership answered from a stat, a crashed writer's files swept at once).
set -euo pipefail
cd "$(dirname "$0")/.."
BEADS_GIT_PORTABLE=1 cargo test --locked --test integration -- portable:: merge_git:: merge_corners:: install:: sync:: \
  import_targeted:: stale_export:: concurrency:: commit_forms:: hook:: bridge_hooks:: managers:: queries::

# >>> beads-git >>>
# beads-git: name the issue this commit is for in a `Beads-Issue:` trailer (your one issue in
# progress, or BEADS_ISSUE); never on merges, squashes or replays, never twice, never when the
# message names it already. Fail-open: the commit goes through unchanged on any error. Skipped
# when BD_HOOKS=0, without .beads/, or without bd-sync; off with `git config beads.bridge false`.
# A merge, squash, cherry-pick, revert or rebase pick (git's state files beside the message say
# so) starts nothing. Managed block: `bd-sync install` / `bd-sync uninstall`.
beads_git_state="${1%/*}"
if [ "$beads_git_state" != "${1-}" ] && { [ -e "$beads_git_state/MERGE_HEAD" ] || [ -e "$beads_git_state/MERGE_MSG" ] ||
  [ -e "$beads_git_state/SQUASH_MSG" ] || [ -e "$beads_git_state/CHERRY_PICK_HEAD" ] ||
  [ -e "$beads_git_state/REVERT_HEAD" ] || [ -e "$beads_git_state/rebase-apply" ]; }; then
  :
elif [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
@FIND_BINARIES@
  if [ -x "$beads_git_bin/bd-sync" ]; then
    "$beads_git_bin/bd-sync" link prepare-commit-msg "${1-}" "${2-}" "${3-}" </dev/null || :
  fi
  unset beads_git_bin
fi
unset beads_git_state
# <<< beads-git <<<

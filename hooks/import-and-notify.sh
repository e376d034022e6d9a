# >>> beads-git >>>
# beads-git (post-merge, post-rewrite): refresh the issue cache from the new issues file,
# notify the ids that changed, and say in one line when the merge overrode values. Fail-open and
# time-bounded (--timeout); skipped when BD_HOOKS=0, without .beads/, or without our binaries. Managed block: `bd-sync install` / `bd-sync uninstall`.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ] && [ -e .beads/MIGRATION-FREEZE ]; then
  echo "beads-git: .beads/MIGRATION-FREEZE: bd is migrating its database; the issue cache is not refreshed" >&2
elif [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
@FIND_BINARIES@
  if [ -x "$beads_git_bin/bd-sync" ] && [ -x "$beads_git_bin/bd-hook" ]; then
    # post-rewrite after a rebase: records the replay left older than before are stamped first.
    beads_git_after=; [ "${1-}" = rebase ] && beads_git_after=--after-rebase
    "$beads_git_bin/bd-sync" import --print-changed -z --timeout 60 $beads_git_after </dev/null | "$beads_git_bin/bd-hook" stdin -z --timeout 2 || :
    unset beads_git_after
  fi
  if [ -x "$beads_git_bin/bd-merge" ]; then
    "$beads_git_bin/bd-merge" review --announce "${1-}" </dev/null || :
  fi
  unset beads_git_bin
fi
# <<< beads-git <<<

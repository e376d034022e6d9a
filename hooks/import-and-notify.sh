# >>> beads-git >>>
# beads-git (post-merge, post-rewrite): refresh the issue cache from the new issues file,
# notify the ids that changed, and say in one line when the merge overrode values. Fail-open and
# time-bounded (--timeout); skipped when BD_HOOKS=0, without .beads/, or without our binaries. Managed block: `bd-sync install` / `bd-sync uninstall`.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
@FIND_BINARIES@
  if [ -x "$beads_git_bin/bd-sync" ] && [ -x "$beads_git_bin/bd-hook" ]; then
    "$beads_git_bin/bd-sync" import --print-changed -z --timeout 60 </dev/null | "$beads_git_bin/bd-hook" --stdin -z --timeout 2 || :
  fi
  if [ -x "$beads_git_bin/bd-merge" ]; then
    "$beads_git_bin/bd-merge" review --announce "${1-}" </dev/null || :
  fi
  unset beads_git_bin
fi
# <<< beads-git <<<

# >>> beads-git >>>
# beads-git: on a branch switch ($3 = 1), refresh the issue cache and notify the ids that changed;
# nothing starts when file times show the switch left the issues file and the cache as they were
# (the cache's in-step marker is newer than both). Fail-open and time-bounded (--timeout); skipped
# when BD_HOOKS=0, without .beads/, or without our binaries. Managed block: `bd-sync install` /
# `bd-sync uninstall`.
if [ "${BD_HOOKS:-1}" != 0 ] && [ "${3:-0}" = 1 ] && [ -d .beads ] && [ -e .beads/MIGRATION-FREEZE ]; then
  echo "beads-git: .beads/MIGRATION-FREEZE: bd is migrating its database; the issue cache is not refreshed" >&2
elif [ "${BD_HOOKS:-1}" != 0 ] && [ "${3:-0}" = 1 ] && [ -d .beads ]; then
@IN_STEP@
  if [ -n "$beads_git_todo" ]; then
@FIND_BINARIES@
    if [ -x "$beads_git_bin/bd-sync" ] && [ -x "$beads_git_bin/bd-hook" ]; then
      "$beads_git_bin/bd-sync" import --print-changed -z --timeout 60 </dev/null | "$beads_git_bin/bd-hook" stdin -z --timeout 2 || :
    fi
    unset beads_git_bin
  fi
  unset beads_git_todo
fi
# <<< beads-git <<<

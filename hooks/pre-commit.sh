# >>> beads-git >>>
# beads-git: write issue edits made in the cache to .beads/issues.jsonl and, only if that changed
# the file, stage it (into the index git is using). Never fails the commit; skipped when
# BD_HOOKS=0, without .beads/, or without bd-sync. Managed block: `bd-sync install` / `uninstall`.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
@FIND_BINARIES@
  if [ -x "$beads_git_bin/bd-sync" ]; then
    "$beads_git_bin/bd-sync" export --stage --timeout 60 </dev/null || :
  fi
  unset beads_git_bin
fi
# <<< beads-git <<<

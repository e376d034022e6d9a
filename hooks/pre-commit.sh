# >>> beads-git >>>
# beads-git: resolve an issues file left with conflict markers (bd-merge resolve); when a
# tracker's database (br, bd) holds edits the file lacks, run its flush (git config
# beads.flushOnCommit true) or name it; then write issue edits made in the cache to
# .beads/issues.jsonl and, only if that changed the file, stage it. A commit that names its
# paths (git commit -- <paths>, --only) gets none of this: the file waits for the next commit.
# One process, which returns at once when there is nothing to do. Never fails the commit;
# skipped when BD_HOOKS=0, without .beads/, or without bd-sync. Managed block: `bd-sync install` / `uninstall`.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
@FIND_BINARIES@
  if [ -x "$beads_git_bin/bd-sync" ]; then
    "$beads_git_bin/bd-sync" export --stage --resolve-markers --flush-tracker --timeout 60 </dev/null || :
  fi
  unset beads_git_bin
fi
# <<< beads-git <<<

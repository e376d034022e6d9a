# >>> beads-git >>>
# beads-git: resolve an issues file left with conflict markers (bd-merge resolve); when a
# tracker's database (br, bd) holds edits the file lacks, run its flush (git config
# beads.flushOnCommit true) or name it; then write issue edits made in the cache to
# .beads/issues.jsonl and, only if that changed the file, stage it. A commit that names its
# paths (git commit -- <paths>, --only) gets none of this: the file waits for the next commit.
# Nothing starts when file times show nothing to do: the cache's in-step marker (written by
# bd-sync when the cache held no edit and matched the file, and no tracker database was ahead)
# is newer than the cache, its journal, .beads/ and what is in it, and older than a probe file
# written now (a clock stepped back starts the check). Never fails the commit; skipped when
# BD_HOOKS=0, without .beads/, or without bd-sync. Managed block: `bd-sync install` / `uninstall`.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ] && [ -e .beads/MIGRATION-FREEZE ]; then
  echo "beads-git: .beads/MIGRATION-FREEZE: bd is migrating its database; the issues file is not exported, flushed or staged" >&2
elif [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
@IN_STEP@
  if [ -n "$beads_git_todo" ]; then
@FIND_BINARIES@
    if [ -x "$beads_git_bin/bd-sync" ]; then
      "$beads_git_bin/bd-sync" export --stage --resolve-markers --flush-tracker --timeout 60 </dev/null || :
    fi
    unset beads_git_bin
  fi
  unset beads_git_todo
fi
# <<< beads-git <<<

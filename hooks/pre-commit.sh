# >>> beads-git >>>
# beads-git: resolve an issues file left with conflict markers (bd-merge resolve); when a
# tracker's database (br, bd) holds edits the file lacks, run its flush (git config
# beads.flushOnCommit true) or name it; then write issue edits made in the cache to
# .beads/issues.jsonl and, only if that changed the file, stage it (into the index git is
# using). Never fails the commit; skipped when
# BD_HOOKS=0, without .beads/, or without bd-sync. Managed block: `bd-sync install` / `uninstall`.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
@FIND_BINARIES@
  # A file someone merged without the driver still has conflict markers: resolve it first.
  for beads_git_file in .beads/issues.jsonl .beads/beads.jsonl; do
    if [ -x "$beads_git_bin/bd-merge" ] && grep -q '^<<<<<<<' "$beads_git_file" 2>/dev/null; then
      "$beads_git_bin/bd-merge" resolve --stage "$beads_git_file" </dev/null || :
    fi
  done
  unset beads_git_file
  if [ -x "$beads_git_bin/bd-sync" ]; then
    "$beads_git_bin/bd-sync" export --stage --flush-tracker --timeout 60 </dev/null || :
  fi
  unset beads_git_bin
fi
# <<< beads-git <<<

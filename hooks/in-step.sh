# beads-git's check "is there anything to do?", pasted where a block says @IN_STEP@ (it is not a
# hook block itself): beads_git_todo is set empty only when the cache's in-step marker (written by
# bd-sync when the cache held no edit and matched the issues file, and no tracker database was
# ahead) is newer than the cache, its journal, .beads/ and what is in it, and older than a probe
# file written now (a clock stepped back starts the work). Otherwise beads_git_todo=1.
  beads_git_db="${GIT_DIR:-.git}/beads/cache.db"
  beads_git_mark="${GIT_DIR:-.git}/beads/cache.in-step"
  beads_git_todo=1
  if [ -f "$beads_git_mark" ] && [ ! -L "${GIT_DIR:-.git}/beads" ] && [ "$beads_git_mark" -nt "$beads_git_db" ] && [ ! -e .beads/dolt ] &&
    { [ ! -e "$beads_git_db-wal" ] || [ "$beads_git_mark" -nt "$beads_git_db-wal" ]; } &&
    { echo >"${GIT_DIR:-.git}/beads/cache.now"; } 2>/dev/null && [ "${GIT_DIR:-.git}/beads/cache.now" -nt "$beads_git_mark" ]; then
    beads_git_todo=
    for beads_git_file in .beads .beads/issues.jsonl .beads/beads.jsonl .beads/*.db .beads/*.db-wal; do
      if [ -e "$beads_git_file" ] && ! [ "$beads_git_mark" -nt "$beads_git_file" ]; then beads_git_todo=1; fi
    done
    unset beads_git_file
  fi
  unset beads_git_db beads_git_mark

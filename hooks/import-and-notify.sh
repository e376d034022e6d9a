# >>> beads-git >>>
# beads-git (post-merge, post-rewrite): refresh the issue cache from the new issues file,
# notify the ids that changed, and say in one line when the merge overrode values. Nothing
# starts when file times show there is nothing to do: the cache's in-step marker is newer than
# the issues file and the cache (the merge or amend left them as they were; a rebase always
# runs the import), and the merge log is older than the mark of what the hook last announced (or
# there is no log). Fail-open and
# time-bounded (--timeout); skipped when BD_HOOKS=0, without .beads/, or without our binaries.
# Managed block: `bd-sync install` / `bd-sync uninstall`.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ] && [ -e .beads/MIGRATION-FREEZE ]; then
  echo "beads-git: .beads/MIGRATION-FREEZE: bd is migrating its database; the issue cache is not refreshed" >&2
elif [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
@IN_STEP@
  # After a rebase the file is compared with the pre-rebase tip's whatever its time says: the
  # rebase's own checkout already brought the cache in step with the file it left.
  [ "${1-}" = rebase ] && beads_git_todo=1
  beads_git_log="${GIT_DIR:-.git}/beads"
  beads_git_review=
  # The log lives in the common git directory: from a linked worktree (.git is a file, or GIT_DIR
  # names the worktree's own directory, which holds a commondir file) ask bd-merge; and when the
  # log is newer than the announced mark, or the mark is not older than a probe written now (a
  # clock stepped back).
  if [ ! -d "${GIT_DIR:-.git}" ] || [ -f "${GIT_DIR:-.git}/commondir" ] || [ -L "$beads_git_log" ] ||
    { [ -e "$beads_git_log/merge-log.jsonl" ] && { ! [ "$beads_git_log/merge-log.announced" -nt "$beads_git_log/merge-log.jsonl" ] ||
      ! { echo >"$beads_git_log/cache.now"; } 2>/dev/null || ! [ "$beads_git_log/cache.now" -nt "$beads_git_log/merge-log.announced" ]; }; }; then
    beads_git_review=1
  fi
  if [ -n "$beads_git_todo$beads_git_review" ]; then
@FIND_BINARIES@
    if [ -n "$beads_git_todo" ] && [ -x "$beads_git_bin/bd-sync" ] && [ -x "$beads_git_bin/bd-hook" ]; then
      # post-rewrite after a rebase: records the replay left older than before are stamped first.
      beads_git_after=; [ "${1-}" = rebase ] && beads_git_after=--after-rebase
      "$beads_git_bin/bd-sync" import --print-changed -z --timeout 60 $beads_git_after </dev/null | "$beads_git_bin/bd-hook" stdin -z --timeout 2 || :
      unset beads_git_after
    fi
    if [ -n "$beads_git_review" ] && [ -x "$beads_git_bin/bd-merge" ]; then
      "$beads_git_bin/bd-merge" review --announce "${1-}" </dev/null || :
    fi
    unset beads_git_bin
  fi
  unset beads_git_todo beads_git_review beads_git_log
fi
# <<< beads-git <<<

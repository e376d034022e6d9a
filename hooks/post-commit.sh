# >>> beads-git >>>
# beads-git: tell the notify server which issues this commit changed, and (only with
# `git config beads.commitComments true`) ask the tracker to note the commit on its issue.
# One process, which reads git config once and exits when neither is set up. Fail-open and
# time-bounded (notify: --timeout 2; the tracker: 5 s in all); skipped when BD_HOOKS=0, without
# .beads/, or without our binaries. Managed block: edit with `bd-sync install` /
# `bd-hook install-hook`, remove with their uninstall.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
@FIND_BINARIES@
  if [ -x "$beads_git_bin/bd-hook" ]; then
    "$beads_git_bin/bd-hook" post-commit --timeout 2 </dev/null || :
  fi
  unset beads_git_bin
fi
# <<< beads-git <<<

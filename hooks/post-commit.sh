# >>> beads-git >>>
# beads-git: tell the notify server which issues this commit changed. Fail-open, bounded by
# --timeout; skipped when BD_HOOKS=0, without .beads/, or without bd-hook. Managed block: edit
# with `bd-sync install` / `bd-hook --install-git-hook`, remove with their uninstall.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ]; then
  beads_git_bin=@BIN_DIR@/bd-hook
  [ -x "$beads_git_bin" ] || beads_git_bin=$(command -v bd-hook 2>/dev/null) || beads_git_bin=
  if [ -n "$beads_git_bin" ]; then
    "$beads_git_bin" --from-diff HEAD~1 --timeout 2 </dev/null || :
  fi
  unset beads_git_bin
fi
# <<< beads-git <<<

# >>> beads-git >>>
# beads-git: add the `Beads-Issue:` trailer after the editor closed, when prepare-commit-msg left
# that decision for later (its marker file beside the message); otherwise nothing runs. Fail-open:
# the commit goes through unchanged on any error. Skipped when BD_HOOKS=0, without .beads/, or
# without bd-sync. Managed block: `bd-sync install` / `bd-sync uninstall`.
if [ "${BD_HOOKS:-1}" != 0 ] && [ -d .beads ] && [ -e "${1%/*}/BEADS_LINK_PENDING" ]; then
@FIND_BINARIES@
  if [ -x "$beads_git_bin/bd-sync" ]; then
    "$beads_git_bin/bd-sync" link commit-msg "${1-}" </dev/null || :
  fi
  unset beads_git_bin
fi
# <<< beads-git <<<

//! The git hooks beads-git installs (pre-commit, prepare-commit-msg, commit-msg, post-commit,
//! post-merge, post-rewrite, post-checkout) and the block each one gets, from the templates in `hooks/`. Apart from
//! writing them (`install::hooks`) and from the hook managers (`install::managers`), which both
//! name them.

use super::types::Binaries;

/// The hooks we install, with their templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Notify the ids changed by the commit just made.
    PostCommit,
    /// Import after a merge (pull), then notify.
    PostMerge,
    /// Import after a rebase or amend, then notify.
    PostRewrite,
    /// Import after a branch switch, then notify.
    PostCheckout,
    /// Export cache edits and stage the issues file if that changed it.
    PreCommit,
    /// Add the `Beads-Issue:` trailer to a message that already has its text (docs/agents.md, "How commits are linked").
    PrepareCommitMsg,
    /// Add the `Beads-Issue:` trailer after the editor, when `prepare-commit-msg` left it.
    CommitMsg,
}

impl Hook {
    /// Every hook `bd-sync install` sets up.
    pub const ALL: [Hook; 7] = [
        Hook::PreCommit,
        Hook::PrepareCommitMsg,
        Hook::CommitMsg,
        Hook::PostCommit,
        Hook::PostMerge,
        Hook::PostRewrite,
        Hook::PostCheckout,
    ];

    /// Hook files a manager may have generated, looked at to detect it.
    pub const MANAGED_BY_MANAGERS: [&'static str; 8] =
        ["pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-merge", "post-rewrite", "post-checkout", "pre-push"];

    /// Git's name for the hook file.
    pub fn file_name(self) -> &'static str {
        match self {
            Hook::PostCommit => "post-commit",
            Hook::PostMerge => "post-merge",
            Hook::PostRewrite => "post-rewrite",
            Hook::PostCheckout => "post-checkout",
            Hook::PreCommit => "pre-commit",
            Hook::PrepareCommitMsg => "prepare-commit-msg",
            Hook::CommitMsg => "commit-msg",
        }
    }

    /// The hook named `name`.
    pub fn from_name(name: &str) -> Option<Hook> {
        Hook::ALL.into_iter().find(|h| h.file_name() == name)
    }

    fn template(self) -> &'static str {
        match self {
            Hook::PostCommit => include_str!("../../hooks/post-commit.sh"),
            Hook::PostMerge | Hook::PostRewrite => include_str!("../../hooks/import-and-notify.sh"),
            Hook::PostCheckout => include_str!("../../hooks/post-checkout.sh"),
            Hook::PreCommit => include_str!("../../hooks/pre-commit.sh"),
            Hook::PrepareCommitMsg => include_str!("../../hooks/prepare-commit-msg.sh"),
            Hook::CommitMsg => include_str!("../../hooks/commit-msg.sh"),
        }
    }

    /// The block for this hook.
    pub fn block(self, binaries: &Binaries) -> String {
        let probe = if self == Hook::PostCommit { "bd-hook" } else { "bd-sync" };
        let from_path = format!("beads_git_bin=$(dirname \"$(command -v {probe} 2>/dev/null || echo /nonexistent/x)\")");
        let find = match binaries {
            Binaries::Dir(dir) => {
                format!("  beads_git_bin={}\n  [ -x \"$beads_git_bin/{probe}\" ] || {from_path}", shell_quote(&dir.display().to_string()))
            }
            Binaries::Path => format!("  {from_path}"),
        };
        // The shared check's own header comment stays in hooks/in-step.sh.
        let in_step: String = IN_STEP.lines().skip_while(|l| l.starts_with('#')).map(|l| format!("{l}\n")).collect();
        self.template().replace("@IN_STEP@\n", &in_step).replace("@FIND_BINARIES@", &find)
    }
}

/// The check "is there anything to do?" the pre-commit, post-checkout, post-merge and
/// post-rewrite blocks start with (it sets `beads_git_todo`).
const IN_STEP: &str = include_str!("../../hooks/in-step.sh");

pub(super) fn shell_quote(s: &str) -> String {
    if s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

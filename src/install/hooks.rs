//! Our blocks in git's hook files: where a hook's content
//! lives (through a link that stays inside the repository), a hook in another language left alone
//! with what to add, blocks git no longer runs, and `bd-sync hook` for hook managers.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::block::{self, install_block, uninstall_block, ModePolicy};
use super::git_hooks::Hook;
use super::managers::Manager;
use super::state::{common_dir, hooks_dir, inside, is_refusal, manager, read_optional, toplevel};
use super::types::{refused, Action, Binaries, Change};
use super::warning::Warning;
use crate::fix::Fix;
use crate::git::run as git;

/// Why [`install_one`] or [`uninstall_one`] left the hook file as it was.
#[derive(Debug, thiserror::Error)]
pub enum OneHookError {
    /// The file is not ours to edit (a link out of the repository, a hook in another language);
    /// the warning says why and what to do.
    #[error("{} was left as it is", .path.display())]
    Refused {
        /// The hook file.
        path: PathBuf,
        /// Why, and what to do.
        warning: Box<Warning>,
    },
    /// A hook manager runs this repository's hooks: our jobs belong in its config, which the
    /// whole install writes.
    #[error("{manager} runs this repository's hooks")]
    Managed {
        /// The manager's name.
        manager: &'static str,
    },
    /// Anything else.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// Installs the block of one hook where `install` would put it (`bd-hook install-hook`).
pub fn install_one(repo: &Path, hook: Hook, bin_dir: &Path) -> Result<(PathBuf, Change), OneHookError> {
    let (path, binaries, mode) = match manager(repo)? {
        Manager::Plain => (hooks_dir(repo)?.join(hook.file_name()), Binaries::Dir(bin_dir.to_path_buf()), ModePolicy::Executable),
        Manager::Husky { dir } => (dir.join(hook.file_name()), Binaries::Path, ModePolicy::Any),
        other => return Err(OneHookError::Managed { manager: other.name() }),
    };
    let action = install_hook_file(repo, &path, hook, &binaries, mode, false)?;
    match (action.change, action.warning) {
        (Change::Refused, Some(warning)) => Err(OneHookError::Refused { path, warning: Box::new(warning) }),
        (change, _) => Ok((path, change)),
    }
}

/// Removes the block of one hook from where `install_one` puts it.
pub fn uninstall_one(repo: &Path, hook: Hook) -> Result<(PathBuf, Change), OneHookError> {
    let path = match manager(repo)? {
        Manager::Husky { dir } => dir.join(hook.file_name()),
        _ => hooks_dir(repo)?.join(hook.file_name()),
    };
    let change = match hook_target(&path, repo)? {
        HookTarget::File(target) => uninstall_block(&target, false)?,
        HookTarget::Refused(why) => {
            let warning = Box::new(why.warning(&path));
            return Err(OneHookError::Refused { path, warning });
        }
    };
    Ok((path, change))
}

/// Where a hook's content lives. A hook file that is a symbolic link (a team's
/// `.git/hooks/pre-commit -> ../../scripts/pre-commit`) is edited through its target when that
/// is a regular file inside the repository (the work tree or the git dir), so the link stays a
/// link; a link out of the repository, or to anything else, is not ours to edit.
pub(crate) fn hook_target(path: &Path, repo: &Path) -> Result<HookTarget> {
    let Ok(meta) = fs::symlink_metadata(path) else { return Ok(HookTarget::File(path.to_path_buf())) };
    if !meta.file_type().is_symlink() {
        if meta.is_file() {
            return Ok(HookTarget::File(path.to_path_buf()));
        }
        return Ok(HookTarget::Refused(HookRefusal::NotAFile));
    }
    let link = fs::read_link(path).unwrap_or_default();
    let bounds = [toplevel(repo)?, common_dir(repo)?, PathBuf::from(git(repo, &["rev-parse", "--absolute-git-dir"])?)];
    match fs::canonicalize(path) {
        Ok(target) if target.is_file() && bounds.iter().any(|b| inside(&target, b)) => Ok(HookTarget::File(target)),
        _ => Ok(HookTarget::Refused(HookRefusal::ForeignLink(link))),
    }
}

/// Where a hook file's content lives ([`hook_target`]), or why install leaves it alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HookTarget {
    /// The file to edit: the hook itself (present or not), or the regular file inside the
    /// repository that its link points to.
    File(PathBuf),
    /// Not ours to edit.
    Refused(HookRefusal),
}

impl HookTarget {
    /// The file to edit, if there is one.
    pub(crate) fn file(self) -> Option<PathBuf> {
        match self {
            HookTarget::File(p) => Some(p),
            HookTarget::Refused(_) => None,
        }
    }
}

/// Why install leaves a hook file alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HookRefusal {
    /// Something other than a regular file (a directory, a FIFO).
    NotAFile,
    /// A symbolic link out of the repository, or to something other than a regular file; holds
    /// the link as written.
    ForeignLink(PathBuf),
}

impl HookRefusal {
    /// What is the matter with the hook file at `path` (what to do is [`HookRefusal::fix`]).
    pub(crate) fn message(&self, path: &Path) -> String {
        match self {
            HookRefusal::NotAFile => format!("{} is not a regular file, so install does not edit it", path.display()),
            HookRefusal::ForeignLink(link) => format!(
                "{} is a symbolic link to {}, which is not a regular file inside this repository; install does not follow it",
                path.display(),
                crate::record::printable(&link.display().to_string(), 400)
            ),
        }
    }

    /// What the user can do: add our block to the link's target by hand.
    pub(crate) fn fix(&self) -> Option<Fix> {
        match self {
            HookRefusal::NotAFile => None,
            HookRefusal::ForeignLink(_) => Some(Fix::AddBlockByHand),
        }
    }

    /// The refusal as install's warning about the hook file at `path`.
    pub(crate) fn warning(&self, path: &Path) -> Warning {
        match self.fix() {
            Some(fix) => Warning::WithFix { text: self.message(path), fix },
            None => Warning::Text(self.message(path)),
        }
    }
}

/// Every place an earlier install (or a manager renaming our files) may have left a block that
/// git no longer runs: the default and current hooks dirs, their `*.old` / `*.legacy` renames.
/// Callers leave out the files where blocks belong now.
pub(super) fn stray_block_files(repo: &Path, hooks: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = vec![hooks.to_path_buf(), common_dir(repo)?.join("hooks")];
    dirs.dedup();
    let mut out = Vec::new();
    for dir in dirs {
        for hook in Hook::ALL {
            for suffix in ["", ".old", ".legacy"] {
                let path = dir.join(format!("{}{suffix}", hook.file_name()));
                let Some(target) = hook_target(&path, repo)?.file() else { continue };
                let holds_block = read_optional(&target).ok().flatten().is_some_and(|c| block::find_block(&c).is_some());
                if holds_block && !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    Ok(out)
}

/// Puts our block into one hook file, through a symlink that stays inside the repository; a hook
/// in another language is left byte-identical and refused with the line its owner can add.
pub(super) fn install_hook_file(
    repo: &Path,
    path: &Path,
    hook: Hook,
    binaries: &Binaries,
    mode: ModePolicy,
    dry_run: bool,
) -> Result<Action> {
    let target = match hook_target(path, repo)? {
        HookTarget::File(t) => t,
        HookTarget::Refused(why) => return Ok(refused(hook.file_name(), path, why.warning(path))),
    };
    let content = match read_optional(&target) {
        Ok(c) => c,
        Err(e) if is_refusal(&e) => return Ok(refused(hook.file_name(), path, Warning::Text(format!("{e:#}")))),
        Err(e) => return Err(e.into()),
    };
    if let Some(content) = content.as_deref().filter(|c| !block::runs_posix_shell(c)) {
        if block::calls_our_entry_point(content, hook.file_name()) {
            return Ok(Action::new(hook.file_name(), path, Change::Unchanged));
        }
        let interpreter = block::interpreter(content).unwrap_or_default();
        return Ok(refused(hook.file_name(), path, Warning::ForeignHook { path: path.to_path_buf(), interpreter, hook: hook.file_name() }));
    }
    Ok(Action::new(hook.file_name(), path, install_block(&target, &hook.block(binaries), mode, dry_run)?))
}

/// `bd-sync hook NAME [ARGS]`: runs our block for `hook` (the entry point hook managers call).
/// Fail-open: whatever happens, the caller exits 0.
pub fn run_hook(hook: Hook, args: &[String], bin_dir: &Path) -> Result<()> {
    let mut args = args.to_vec();
    // pre-commit passes git's checkout arguments in the environment, not as arguments.
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    if hook == Hook::PostCheckout && args.len() < 3 {
        args = vec![env("PRE_COMMIT_FROM_REF"), env("PRE_COMMIT_TO_REF"), env("PRE_COMMIT_CHECKOUT_TYPE")];
    }
    // ... and the message hooks' source; the message is git's own file for the commit.
    if matches!(hook, Hook::PrepareCommitMsg | Hook::CommitMsg) && args.is_empty() {
        let message = git(Path::new("."), &["rev-parse", "--git-path", "COMMIT_EDITMSG"])?;
        args = vec![message, env("PRE_COMMIT_COMMIT_MSG_SOURCE"), env("PRE_COMMIT_COMMIT_OBJECT_NAME")];
    }
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(hook.block(&Binaries::Dir(bin_dir.to_path_buf())))
        .arg(hook.file_name())
        .args(&args)
        .stdin(std::process::Stdio::null())
        .status()
        .context("running sh")?;
    if !status.success() {
        bail!("the {} block exited with {status}", hook.file_name());
    }
    Ok(())
}

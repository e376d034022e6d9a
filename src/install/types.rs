//! Install's public types: its options, its outcome, the refusal that stops it, and what it did
//! to each file. Kept apart from the steps so a caller reads what it passes and gets back in one
//! place.

use std::path::{Path, PathBuf};

use super::warning::Warning;
use crate::fix::Fix;

/// Where a block finds our binaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binaries {
    /// This directory first (a clone's own hooks), then PATH.
    Dir(PathBuf),
    /// PATH only: for files committed and shared with a team (husky), which must not name one
    /// machine's directories.
    Path,
}

/// What an install or uninstall did to one file. Shown (and serialised) as its lowercase name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// A new file holding only what we added.
    Created,
    /// Our block or lines were added to an existing file.
    Added,
    /// Our block was replaced by the current one.
    Updated,
    /// Already as it should be.
    Unchanged,
    /// Our block was removed.
    Removed,
    /// The file held only our block and is gone.
    Deleted,
    /// There was nothing of ours.
    Absent,
    /// Not edited, for the reason in the action's warning (a symbolic link we did not create, a
    /// hook in another language): install exits 1 and says what to do by hand.
    Refused,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Change::Created => "created",
            Change::Added => "added",
            Change::Updated => "updated",
            Change::Unchanged => "unchanged",
            Change::Removed => "removed",
            Change::Deleted => "deleted",
            Change::Absent => "absent",
            Change::Refused => "refused",
        })
    }
}

/// Install settings.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// The repository (any directory inside its work tree).
    pub repo: PathBuf,
    /// Put the attribute lines in `.git/info/attributes` (this clone only), not `.gitattributes`.
    pub local: bool,
    /// Report what would change, change nothing.
    pub dry_run: bool,
    /// Where our binaries are.
    pub bin_dir: PathBuf,
    /// With lefthook: put our jobs in the team's `lefthook.yml` instead of `lefthook-local.yml`.
    pub team: bool,
    /// Write into a hooks directory outside the repository (a global `core.hooksPath`), which
    /// every repository on the machine shares.
    pub shared_hooks_dir: bool,
}

/// One thing install or uninstall looked at.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Action {
    /// What: `merge.beads.driver`, `attributes`, a hook name, or a manager's config.
    pub what: String,
    /// The file or config key.
    pub path: String,
    /// What happened.
    pub change: Change,
    /// Something the user should act on, worded by the binary (which also serialises it as
    /// the text it shows).
    #[serde(skip)]
    pub warning: Option<Warning>,
}

impl Action {
    pub(super) fn new(what: &str, path: &Path, change: Change) -> Action {
        Action { what: what.to_owned(), path: path.display().to_string(), change, warning: None }
    }
}

/// Install could not finish safely; nothing after the point named was changed. Shown as what
/// happened; what to do about it ([`InstallRefusal::fix`], the snippet) is the binary's to word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallRefusal {
    /// A manager's config must be edited by hand; the snippet says what to add.
    #[error("{} was not edited: {}", .0.file.display(), .0.reason)]
    ManualEdit(ManualEdit),
    /// The hooks directory is shared by every repository on the machine.
    #[error(
        "git runs this repository's hooks from {}, outside the repository (a global core.hooksPath): \
         every repository on this machine shares it, so install does not write there",
        .0.display()
    )]
    SharedHooksDir(PathBuf),
}

impl InstallRefusal {
    /// What a user can do: add the snippet, then install again to check; or install into the
    /// shared directory on purpose, or give this repository a hooks directory of its own.
    pub fn fix(&self) -> Fix {
        match self {
            InstallRefusal::ManualEdit(_) => Fix::Install,
            InstallRefusal::SharedHooksDir(_) => Fix::InstallSharedHooksDir,
        }
    }
}

/// What [`install`] came to: done (each file's [`Action`]), or refused before it could finish
/// safely (the caller reports the refusal and exits 1; nothing after the point named changed).
#[derive(Debug)]
pub enum InstallOutcome {
    /// Installed; an action may still be [`Change::Refused`] (a file left for the user).
    Installed(Vec<Action>),
    /// Stopped where a file must be edited by hand or the hooks directory is shared.
    Refused(InstallRefusal),
}

/// A refused action: the file is named, with why and what to do.
pub(super) fn refused(what: &str, path: &Path, why: Warning) -> Action {
    Action { what: what.to_owned(), path: path.display().to_string(), change: Change::Refused, warning: Some(why) }
}

/// Why [`install`](super::install) failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// It failed after changing something: what it changed so far is recorded, so uninstall
    /// undoes it (or install finishes once the cause is fixed).
    #[error("install stopped part way; what it changed so far is recorded")]
    PartWay(#[source] anyhow::Error),
    /// It failed before changing anything (or in a dry run).
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// Why install's steps stopped: a refusal (an outcome, not an error), or a failure.
#[derive(Debug, thiserror::Error)]
pub(super) enum Stop {
    /// A file must be edited by hand, or the hooks directory is shared.
    #[error(transparent)]
    Refused(#[from] InstallRefusal),
    /// Anything else.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
    /// Anything else, after install changed something (and recorded it).
    #[error("install stopped part way")]
    PartWay(#[source] anyhow::Error),
}

/// Why a config file cannot take our block safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManualEdit {
    /// The file to edit.
    pub file: PathBuf,
    /// Why we did not edit it.
    pub reason: String,
    /// What to add.
    pub snippet: String,
}

/// The lines of a list install extended in place (`default_install_hook_types`), as they were and
/// as install left them: uninstall puts `before` back where it finds `after`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ListEdit {
    /// The lines before install.
    pub before: String,
    /// The same lines after install.
    pub after: String,
    /// The items install added.
    pub added: Vec<String>,
}

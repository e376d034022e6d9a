//! What install and uninstall tell a user about one file ([`super::Action::warning`]), as a value.
//!
//! Most of these sentences are built around something to run (our install, a hook manager's own
//! install, `git add`): the library says which case it is and with what files, and the binaries
//! word the whole sentence (`src/bin/common/fix.rs`), so a renamed command or flag never edits
//! the installer. A warning that names nothing to run is [`Warning::Text`].

use std::path::PathBuf;

use super::attr_source::AttrSource;
use crate::fix::Fix;

/// Something the user should act on about one file install or uninstall looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A sentence that names nothing to run, shown as it is.
    Text(String),
    /// A sentence and what to do about it, worded as a check finding's end (the same case is a
    /// finding of `bd-sync check`, with the same words).
    WithFix {
        /// What is the matter, without the fix.
        text: String,
        /// What to do.
        fix: Fix,
    },
    /// The repository has no `.beads/` directory: the driver and hooks do nothing until a
    /// tracker is set up there (or this was the wrong repository).
    NoTracker {
        /// The top of the work tree.
        top: PathBuf,
    },
    /// A hook file our block was added to is not executable, so git skips it.
    NotExecutable {
        /// The hook file.
        path: PathBuf,
    },
    /// husky's hook files are committed and shared: commit the ones install changed.
    CommitHuskyFiles {
        /// The files, relative to the top of the work tree.
        files: Vec<String>,
    },
    /// `.gitattributes` changed: commit it so teammates' clones use the driver too.
    CommitAttributes {
        /// The attributes file.
        path: PathBuf,
    },
    /// A hook written for another interpreter, which our sh block would break: it was left
    /// byte-identical, and its owner can add a call to our entry point.
    ForeignHook {
        /// The hook file.
        path: PathBuf,
        /// Its interpreter, as its `#!` line names it.
        interpreter: String,
        /// Which hook (git's name for it, `post-merge`).
        hook: &'static str,
    },
    /// Another attributes line decides the issues file's `merge` attribute, above ours.
    AttributeOutranked {
        /// The line that decides it.
        source: AttrSource,
        /// The issues file, relative to the top of the work tree.
        rel: String,
        /// Our attributes file.
        ours: PathBuf,
    },
    /// git does not route the issues file to our driver, and no attributes line says why.
    AttributeNotRouted {
        /// The issues file, relative to the top of the work tree.
        rel: String,
        /// Our attributes file.
        ours: PathBuf,
    },
    /// Install could not let the hook manager (re)generate its hook files.
    ManagerInstall {
        /// The manager's name (`lefthook`).
        manager: String,
        /// The command install runs (`lefthook install`).
        command: String,
        /// What went wrong.
        problem: ManagerRun,
    },
    /// Uninstall could not have the manager remove the hook types it installed for our jobs.
    ManagerUninstall {
        /// The manager's name.
        manager: String,
        /// The command uninstall runs.
        command: String,
        /// What went wrong.
        problem: ManagerRun,
        /// The hook types to remove by hand.
        types: Vec<String>,
        /// The hooks directory they are in.
        hooks: PathBuf,
    },
    /// Uninstall changed (or deleted) a committed attributes file: commit that.
    CommitRemoval {
        /// The file, relative to the top of the work tree.
        rel: String,
        /// Whether the file goes (install created it and nothing else is left).
        deleted: bool,
        /// Whether this is a dry run (it would go).
        dry_run: bool,
    },
    /// A committed file the team relies on, kept by uninstall without `--team`.
    KeptForTeam {
        /// The file, relative to the top of the work tree.
        rel: String,
        /// What the team relies on it for.
        why: String,
    },
}

/// Why a hook manager's own command did not do its part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManagerRun {
    /// The manager is on no usable `PATH` entry.
    NotOnPath,
    /// It ran and failed; its stderr.
    Failed(String),
    /// It could not be started; why.
    NotStarted(String),
}

//! Typed advice: what a user can do about a finding, an error or an outcome, as a value.
//!
//! The library knows what the fix *is* (resolve the markers in this file, install the driver,
//! run the tracker's flush); it does not know how the command line spells it. Every binary words
//! a [`Fix`] through one function (`src/bin/common/fix.rs`), so renaming a flag never edits the
//! engine, and `--json` outputs carry the same wording as the text.

use std::path::PathBuf;

/// One thing a user can do. Variants are grouped by the part of the library that gives them;
/// add a variant next to its neighbours and its wording in `src/bin/common/fix.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fix {
    // ---- files and repairs (merge, merge_log, update_branch, repairs) ----
    /// Resolve the git conflict markers committed or left in `file`, then stage and commit it.
    ResolveMarkers {
        /// The issues file, as the user would type it.
        file: PathBuf,
    },
    /// List the values merges dropped: the clone's merge log and update-branch's trailers.
    ReviewMergeLog,
    /// Put one dropped value back, as a new edit to commit.
    RestoreEntry {
        /// The entry: `N` in the clone's log, `HASH:N` for a merge commit's trailer.
        address: String,
    },
    /// Merge the copies of every id that stands on several lines into one record.
    DedupeFile,
    /// Merge a conflicted issues file as the driver would have.
    ResolveFile,
    /// Read a file as one parent of a merge commit holds it.
    ShowAtParent {
        /// The merge commit, abbreviated.
        commit: String,
        /// 1 for the first parent, 2 for the second.
        parent: u8,
        /// The file, relative to the work tree.
        path: String,
    },
    /// Name the branch a checkout with a detached HEAD is for.
    NameBranch,
    /// Run the CI merge of a base branch again (once what stopped it is fixed).
    UpdateBranch,

    // ---- cache, install, check, notifier ----
    /// Install (or repair) the merge driver, attributes and hook blocks in this clone.
    Install,
    /// Correct or remove the lines listed (the file check lists every problem in the file).
    CorrectLines,
    /// Reinstall beads-git's binaries (the driver's program is gone), then install in this clone.
    ReinstallBinaries,
    /// `core.hooksPath` points where none of our blocks is: install puts them there, or unset the
    /// setting if nothing needs it.
    InstallOrUnsetHooksPath,
    /// A block in a hook file git never runs: install moves it where git runs hooks now.
    MoveStrayBlock,
    /// A line in another attributes file outranks ours: remove it, then install.
    RemoveAttributeLine,
    /// The hooks directory is shared by every repository on the machine: install into it on
    /// purpose, or give this repository a hooks directory of its own.
    InstallSharedHooksDir,
    /// br's plain import refuses a moved issue that has comments: import with br's merging sync,
    /// and commit its re-serialised file only if nothing else changed.
    BrImportMerge,
}

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
    /// Read the command's help: the command line asked for something the command does not do.
    ReadHelp,
    /// Name the branch a checkout with a detached HEAD is for.
    NameBranch,
    /// Run the CI merge of a base branch again (once what stopped it is fixed).
    UpdateBranch,

    // ---- cache, install, check, notifier ----
    /// List the ids of the issues in the cache (ready ones; blocked ones the same way).
    ListIds,
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
    /// br's database holds unexported edits and its base snapshot is the file from before the
    /// merge: `br sync --merge` takes the merged file and keeps the edits.
    BrImportMerge,
    /// br's database holds no unexported edit, and its plain import refuses the moved issue (it
    /// has comments, br's #549): `br sync --import-only --force` takes the file as it is.
    BrImportForce,
    /// Resolve the leftover conflict markers in `file` (`None`: the file the finding is about,
    /// unnamed), then `git add` it and commit.
    ResolveThenAdd {
        /// The issues file, as the user would type it.
        file: Option<PathBuf>,
    },
    /// git still records a conflict in `file` although it holds no markers: merge the three
    /// sides from git's index, then `git add` it and commit.
    ResolveFromIndex {
        /// The issues file, as the user would type it.
        file: PathBuf,
    },
    /// Recompute a derived count or `parent` from the file now (the tracker also does on its
    /// next flush).
    RecomputeDerived,
    /// Run the tracker's own flush (`command`, as the library runs it), then stage `file`; or let
    /// the pre-commit hook do it from now on.
    FlushTracker {
        /// The flush command line.
        command: String,
        /// The issues file relative to the top of the work tree.
        file: String,
    },
    /// A hook file in another language does not call our entry point for `hook`: add the call
    /// (install prints the line to add). Worded as the end of the sentence naming the file.
    CallHookEntryPoint {
        /// The hook's name (`post-merge`).
        hook: String,
    },
    /// Let the hook manager install its hook files (`command`, as install runs it).
    RunManager {
        /// The manager's command line (`lefthook install`).
        command: String,
    },
    /// Make the hook file executable.
    MakeExecutable,
    /// A hook file is a link install does not follow: add our block to its target by hand, or
    /// replace the link with a file.
    AddBlockByHand,
}

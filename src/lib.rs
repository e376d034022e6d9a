//! beads-git keeps a beads issue tracker (`.beads/issues.jsonl`) safe in git.
//!
//! The library holds everything; the three binaries only parse arguments and map outcomes to
//! exit codes.
//!
//! - [`index`]: one index of an issues file by record key, shared by the merge, the import, the
//!   diff and the checks.
//! - [`record`] and [`jsonl`]: an issue record is its id plus the exact bytes of its line, split
//!   into raw key/value spans only when a merge or an export must change it. Files keep their
//!   BOM, line endings and final-newline presence, and are written atomically through
//!   [`safe_fs::write_atomic`].
//! - [`merge`]: the field-level three-way merge behind `bd-merge`. Records equal on two sides are
//!   matched by id and copied without parsing; records changed on both sides go through
//!   per-kind rules (timestamps, sets, objects, text, the status group) and then the conflict
//!   policy. [`merge::driver`] is the git-facing wrapper with the `git merge-file` fallback.
//! - [`replay`]: after a rebase, the records the replay left older than what the tracker already
//!   imported. [`merge_trailers`]: `update-branch`'s decisions as trailers of its merge commit.
//! - [`timestamp`]: RFC 3339 instants, so "later" means later across UTC offsets.
//! - [`cache`]: the SQLite cache behind `bd-sync`: incremental import, export by patching stored
//!   lines, dirty tracking by triggers, ready/blocked views.
//! - [`check`]: problems in an issues file (duplicates, cycles, markers, ...); [`doctor`] runs
//!   them with the installation's health for `bd-sync check`.
//! - [`conventions`]: what br and bd expect of a record they rewrite (key order, array sorts).
//! - [`git`]: the git subprocesses the driver, the cache and the history need.
//! - [`issue_diff`]: what changed in issues, field by field (`bd-merge diff`, `bd-sync diff` and
//!   `log`, git's text conversion); [`history`] reads those changes out of git's history.
//! - [`bridge`]: the git–issue bridge: what links commits to issues, for agents.
//! - [`fix`]: typed advice, what a user can do about a finding, an error or an outcome.
//! - [`diff`] and [`notify`]: which ids changed, and telling a server about them (collecting ids,
//!   watching the file, the `--since-last` state, delivery).
//! - [`install`]: the driver, the attribute lines and our marked blocks in git hook files.
//! - [`paths`]: finding the issues file, and showing a path as the user would type it.
//! - [`update_branch`]: merging a base branch into a pull request's branch in CI, where no driver
//!   is installed.
//! - [`color`]: whether output is coloured (`--color`, `NO_COLOR`, a terminal), decided once.
//! - [`schema`]: JSON Schemas of every `--json` output (`bd-sync schema`).
//! - [`safe_fs`]: opening the files we manage as if the repository were hostile.
//! - [`merge_log`]: the values merges dropped.
//! - [`command`]: running a command on the user's behalf within a time bound that holds.
//! - [`platform`]: what only some systems have, and the portable way taken elsewhere (and on
//!   Linux under a test switch).
//! - [`tracker`]: whether a tracker's own database (br, bd) holds edits the issues file lacks,
//!   and running its flush before a commit.
//!
//! The layers these form, and where new code goes, are in `docs/architecture.md`.
#![deny(missing_docs)]

pub mod bridge;
pub mod cache;
pub mod check;
pub mod color;
pub mod command;
pub mod conventions;
pub mod diff;
pub mod doctor;
pub mod fix;
pub mod git;
pub mod history;
pub mod index;
pub mod install;
pub mod issue_diff;
pub mod jsonl;
pub mod merge;
pub mod merge_log;
pub mod merge_trailers;
pub mod notify;
pub mod paths;
pub mod platform;
pub mod record;
pub mod replay;
pub mod safe_fs;
pub mod schema;
pub mod timestamp;
pub mod tracker;
pub mod update_branch;

/// The version every binary prints: the package version, and the commit when built from a git
/// checkout of beads-git (`0.1.0 (abc1234)`); set by the build script.
pub const VERSION: &str = env!("BEADS_GIT_VERSION");

/// Restores the default SIGPIPE action so `bd-sync ready | head` ends quietly, as command-line
/// tools do, instead of failing on a closed pipe. Call first thing in `main`.
pub fn reset_sigpipe() {
    // Elsewhere (and under the portable switch) a write to a closed pipe is an error the
    // printing code ends on quietly (`std::io::ErrorKind::BrokenPipe`).
    #[cfg(unix)]
    if platform::unix_calls() {
        // SAFETY: setting a signal's disposition to its default is always sound.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
}

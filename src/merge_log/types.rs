//! The merge log's public types: an [`Entry`] (one line of the log) and its parts, where a merge
//! ran ([`Context`]), which entries `review` lists ([`Filter`]), the hook's [`HookEvent`], and how
//! a restore ends ([`RestoreOutcome`]). What reads, writes and uses them is in the sibling
//! modules: [`super::format`] (the file on disk), [`super::record`], [`super::marks`],
//! [`super::review`] and [`super::restore`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::fix::Fix;
use crate::merge::Labels;

/// The longest value (its JSON text) an `update-branch` trailer holds whole (`merge_trailers`
/// writes them; review names the bound when it cannot restore a cut one).
pub const TRAILER_VALUE_BYTES: usize = 200;

/// Why a value was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// `--conflict newest`: the other side's record had the later `updated_at`.
    Newest,
    /// `--conflict ours`.
    Ours,
    /// `--conflict theirs`.
    Theirs,
    /// One side deleted the record, the other changed it: the change was kept.
    DeleteVsModify,
    /// `bd-merge dedupe` merged copies of one id.
    Dedupe,
    /// Two issues were created under one id; one moved to a new id.
    Rename,
    /// Not one decision: the merge dropped more than the log has room for, and this entry counts
    /// those it could not log ([`Entry::omitted`]).
    Omitted,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reason::Newest => "newest",
            Reason::Ours => "ours",
            Reason::Theirs => "theirs",
            Reason::DeleteVsModify => "delete-vs-modify",
            Reason::Dedupe => "dedupe",
            Reason::Rename => "rename",
            Reason::Omitted => "omitted",
        })
    }
}

/// One dropped value, dropped record or renamed issue: one line of the log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Its number in this clone's log (what `review --restore` takes).
    pub seq: u64,
    /// When (RFC 3339, UTC; the merge's own time, so `BD_MERGE_NOW` fixes it).
    pub time: String,
    /// The command that merged: `bd-merge` (the driver), `bd-merge resolve`, `bd-merge dedupe`,
    /// `bd-merge update-branch`, `bd-sync import`.
    pub command: String,
    /// The issues file, relative to the work tree when known.
    pub path: String,
    /// `HEAD` when the merge ran (none on an unborn branch).
    #[serde(default)]
    pub head: Option<String>,
    /// The two sides' labels.
    pub labels: Labels,
    /// The merge was a step of a rebase (ours is upstream, theirs your commit).
    #[serde(default)]
    pub rebase: bool,
    /// The issue.
    pub id: String,
    /// The field (dotted for nested objects); `(record)` for a whole record; `id` for a rename;
    /// `status` stands for its group (then `kept` and `dropped` are objects of the group's keys).
    pub field: String,
    /// The value kept, as JSON; missing when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<Box<RawValue>>,
    /// `ours` or `theirs`.
    pub kept_from: String,
    /// The value dropped, as JSON; missing when absent (a removed key, a deletion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<Box<RawValue>>,
    /// `ours` or `theirs`.
    pub dropped_from: String,
    /// Why.
    pub reason: Reason,
    /// The merge's own words for why (`newer updated_at`, ...).
    #[serde(default)]
    pub detail: String,
    /// The parts that were too large for the log and are logged cut; such an entry cannot be
    /// restored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut: Vec<Cut>,
    /// For a [`Reason::Omitted`] entry, how many decisions of the merge it stands for.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
    /// Set when the entry was read from a trailer of this merge commit (`update-branch`'s, see
    /// `merge_trailers`), not from this clone's log; `seq` is then the trailer's
    /// number within the commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Read from a trailer its own merge commit does not bear out (the commit's issues file does
    /// not hold the kept value where the trailer says, or its parents not the values it names):
    /// listed as unverified and never restored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unverified: bool,
}

// serde's `skip_serializing_if` hands a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A part of an entry too large for the log, logged cut to its beginning. For `kept` and
/// `dropped` the logged value is then a JSON string holding the beginning of the value's JSON
/// text (whatever its type); other parts hold the beginning of their text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// Which part: `kept`, `dropped`, `id`, `field`, `path`, `command`, `head`, `labels.ours`,
    /// `labels.theirs` or `detail`.
    pub part: String,
    /// Its full size in bytes (of its JSON text, for `kept` and `dropped`).
    pub bytes: u64,
}

/// Where and for what a merge runs: everything an entry has besides the decision itself.
#[derive(Debug, Clone)]
pub struct Context {
    /// `<git common dir>/beads`.
    pub dir: PathBuf,
    /// See [`Entry::command`].
    pub command: String,
    /// See [`Entry::path`].
    pub path: String,
    /// See [`Entry::head`].
    pub head: Option<String>,
    /// See [`Entry::labels`].
    pub labels: Labels,
    /// See [`Entry::rebase`].
    pub rebase: bool,
}

/// What git told the post-merge / post-rewrite hook in its first argument, when our block could
/// pass it on (a hook manager's wrapper may not): which operation just ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// post-merge `0`: a merge or a fast-forward moved HEAD.
    Merge,
    /// post-merge `1`: `git merge --squash`, no commit made.
    Squash,
    /// post-rewrite `rebase`.
    Rebase,
    /// post-rewrite `amend`: nothing was merged.
    Amend,
    /// No argument, or one we do not know: the repository's state decides.
    Unknown,
}

impl HookEvent {
    /// The event for the hook's first argument.
    pub fn from_arg(arg: Option<&str>) -> HookEvent {
        match arg {
            Some("0") => HookEvent::Merge,
            Some("1") => HookEvent::Squash,
            Some("rebase") => HookEvent::Rebase,
            Some("amend") => HookEvent::Amend,
            _ => HookEvent::Unknown,
        }
    }
}

/// Which entries `review` shows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only the newest N.
    pub last: Option<usize>,
    /// Only those logged at or after this instant.
    pub since: Option<crate::timestamp::Instant>,
    /// Only this issue.
    pub id: Option<String>,
}

/// How `restore` ended: a refusal is an outcome (the file is untouched), not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// The value is back in the file.
    Restored(Restored),
    /// Nothing was written, for this reason (the field changed again since, the entry is not a
    /// value, the issue is gone, ...).
    Refused(Refusal),
}

/// What `restore` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restored {
    /// The issue.
    pub id: String,
    /// The field.
    pub field: String,
    /// The file written.
    pub path: String,
    /// The record's new `updated_at`, when it has one.
    pub updated_at: Option<String>,
}

/// How the library's texts name a fix: the binaries pass their one wording function
/// (`src/bin/common/fix.rs`), so no command or flag name is spelled in the library.
pub type Word<'w> = &'w dyn Fn(&Fix) -> String;

/// Why an entry holds nothing `restore` can put back. Said to a person by
/// [`NotRestorable::text`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRestorable {
    /// A rename: both issues are in the file.
    Rename {
        /// The entry, as `review` shows it (`#N`, `#HASH:N`).
        address: String,
    },
    /// The entry counting decisions the log had no room for.
    Omitted {
        /// The entry, as `review` shows it.
        address: String,
        /// How many decisions it counts.
        count: u64,
    },
    /// A whole record (a deletion against a change).
    WholeRecord {
        /// The entry, as `review` shows it.
        address: String,
        /// The merge's words for why, escaped.
        detail: String,
    },
    /// A trailer its merge commit does not bear out (forged, or rewritten since).
    Unverified {
        /// The entry, as `review` shows it.
        address: String,
    },
    /// A merge commit's trailer holds the value cut; the whole value is in the merge's parent.
    CutInTrailer {
        /// The entry, as `review` shows it.
        address: String,
        /// Which part was cut (`dropped`, `kept`, `id`, `field`).
        part: String,
        /// Its full size in bytes.
        bytes: u64,
        /// Where the whole value is.
        fix: Fix,
    },
    /// The log holds the value (or its id or field) cut.
    Cut {
        /// The entry, as `review` shows it.
        address: String,
        /// The part, as a person says it (`dropped value`, `id`).
        part: String,
        /// Its full size in bytes.
        bytes: u64,
        /// The side the dropped value came from, escaped.
        side: String,
    },
}

/// Why `restore` wrote nothing. Said to a person by [`Refusal::text`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `#N` names several entries (merges that ran at once before entries were numbered under a
    /// lock).
    Ambiguous {
        /// The number asked for.
        seq: u64,
        /// How many entries hold it.
        count: usize,
    },
    /// No entry has that number.
    NoEntry {
        /// The number asked for.
        seq: u64,
        /// The log file, for the message.
        log: PathBuf,
    },
    /// The entry holds no value to restore.
    NotRestorable(NotRestorable),
    /// The issue stands on several lines of the file.
    SeveralLines {
        /// The issues file, as shown.
        file: String,
        /// The issue, escaped.
        label: String,
    },
    /// The issue is not in the file any more.
    Gone {
        /// The issues file, as shown.
        file: String,
        /// The issue, escaped.
        label: String,
    },
    /// The field already holds the dropped value.
    AlreadyThere {
        /// The issues file, as shown.
        file: String,
        /// The issue, escaped.
        label: String,
        /// The field, escaped.
        field: String,
    },
    /// The field changed again since the merge.
    ChangedSince {
        /// The issues file, as shown.
        file: String,
        /// The issue, escaped.
        label: String,
        /// The field, escaped.
        field: String,
        /// What the field holds now, the value the merge kept and the dropped one (JSON, escaped
        /// and shortened; `(absent)` when absent).
        values: Box<[String; 3]>,
    },
    /// A trailer address (`HASH:N`) that is not one.
    NotAnAddress {
        /// The address, escaped.
        address: String,
    },
    /// A trailer address whose `N` is not a number.
    NotANumber {
        /// The address, escaped.
        address: String,
        /// Its `N`, escaped.
        n: String,
    },
    /// A trailer address whose `HASH` is not a commit hash.
    NotAHash {
        /// The address, escaped.
        address: String,
        /// Its `HASH`, escaped.
        hash: String,
    },
    /// No merge commit of the searched history carries that trailer.
    NoTrailer {
        /// The address, escaped.
        address: String,
        /// How many merge commits were searched.
        searched: usize,
    },
    /// The hash is the start of several commits that carry that trailer.
    SeveralTrailers {
        /// The address, escaped.
        address: String,
        /// How many entries it names.
        count: usize,
    },
}

/// What the post-merge / post-rewrite hook says about the operation that just ended (see
/// [`super::announce`]); [`Announcement::text`] words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Announcement {
    /// Values the merge overrode (an omitted entry counts the decisions it stands for).
    pub values: u64,
    /// Issues it moved to a new id.
    pub renamed: usize,
}

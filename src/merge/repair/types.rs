//! The repairs' public types: what `resolve` is given ([`ResolveOptions`]) and what it found
//! ([`ResolveOutcome`], [`Sides`]), what `dedupe` did ([`Deduped`], [`DedupeRun`]), and whether
//! either used the history that produced the file ([`History`]).

use std::path::PathBuf;

use super::super::driver::DriverReport;
use super::super::producing::{MergeHistory, NoHistory};
use super::super::{ConflictPolicy, DecisionLog, Labels, MergeOptions, Rename, Report, Warning};

/// Where the three sides came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    /// git's index stages of a conflicted path.
    IndexStages,
    /// The conflict markers in the file.
    ConflictMarkers,
    /// The parents of the merge commit that committed the markers, and their merge base.
    MergeCommit,
}

/// Whether a repair found the history that produced the file, and what came of it.
#[derive(Debug, Clone)]
pub enum History {
    /// Not looked for: git's index stages are the real sides, `--check` only reports, or there was
    /// nothing to repair.
    NotNeeded,
    /// The producing merge was redone from its parents and their merge base.
    Used {
        /// The merge commit, abbreviated.
        commit: String,
        /// The parents' merge base, abbreviated.
        merge_base: String,
        /// The parents' names.
        labels: Labels,
    },
    /// No usable history: the repair merged against an empty base, for this reason.
    Missing(NoHistory),
}

impl History {
    pub(super) fn used(found: &MergeHistory) -> History {
        History::Used { commit: found.commit.clone(), merge_base: found.merge_base.clone(), labels: found.labels.clone() }
    }
}

/// What `resolve` found (and, unless checking, did).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one value per `resolve` run, returned once
pub enum ResolveOutcome {
    /// No index stages and no conflict markers: nothing to resolve.
    NothingToDo,
    /// The file was (or, with `check`, would be) merged from these sides.
    Merged {
        /// Where the sides came from.
        sides: Sides,
        /// The merge's report (`None` under `check`).
        report: Option<DriverReport>,
        /// For sides from conflict markers: whether the merge that committed them was redone.
        history: History,
    },
}

/// `bd-merge resolve` settings.
#[derive(Debug, Clone)]
pub struct ResolveOptions {
    /// The issues file.
    pub path: PathBuf,
    /// Policy and markers, as for the driver.
    pub merge: MergeOptions,
    /// `git add` the result when it has no conflicts left.
    pub stage: bool,
    /// Only say what would be done.
    pub check: bool,
    /// Where to keep what the merge dropped (the merge log), and under which command name; `None`
    /// keeps nothing.
    pub log: Option<DecisionLog>,
}

/// What `dedupe` did to one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deduped {
    /// The id.
    pub id: String,
    /// Its line numbers in the file.
    pub lines: Vec<usize>,
    /// How many distinct copies were merged into one.
    pub copies: usize,
    /// Values one copy had that the merged record does not (ours: the copies before, theirs:
    /// the copy on the line named in `labels`), for the merge log.
    pub overridden: Vec<(Report, Labels)>,
    /// Copies that were another issue created under the id, moved to a new id (ours: the
    /// earliest creation, which keeps the id; theirs: the moved copy), for the merge log.
    pub renamed: Vec<(Rename, Labels)>,
}

/// What `bd-merge dedupe` did to a file, with or without the history that produced it.
#[derive(Debug)]
pub struct DedupeRun {
    /// The repaired file.
    pub content: Vec<u8>,
    /// Each id that stood on several lines (for the report lines).
    pub done: Vec<Deduped>,
    /// Warnings that did not stop the repair.
    pub warnings: Vec<Warning>,
    /// Whether the producing merge was redone.
    pub history: History,
    /// What the redone merge settled by policy (empty without history).
    pub history_reports: Vec<Report>,
    /// Issues the redone merge moved to a new id (empty without history).
    pub history_renames: Vec<Rename>,
    /// What merging copies against an empty base dropped: every copy's without history, and with
    /// history only ids the parents themselves had on several lines.
    pub copies_merged: Vec<Deduped>,
    /// The policy that settled what the copies disagreed on.
    pub policy: ConflictPolicy,
}

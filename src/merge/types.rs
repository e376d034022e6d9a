//! The merge's public types: its options ([`MergeOptions`], [`ConflictPolicy`], [`Markers`]), its
//! outcome ([`Merged`] with its [`Report`]s and [`Rename`]s), its error ([`Unmergeable`]) and the
//! words every part of it shares ([`Side`], [`Input`], [`Labels`]). The algorithm that fills them
//! is in the sibling modules: [`super::inputs`], [`super::join`], [`super::decide`] and
//! [`super::finish`].

use std::borrow::Cow;
use std::fmt;

use crate::fix::Fix;
use crate::jsonl::{self, Layout};
use crate::record::{key_label, LineProblem};
use crate::timestamp;

/// How to settle a field both sides changed when no per-kind rule can.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConflictPolicy {
    /// The side whose record has the later `updated_at`; ties go to the greater record.
    #[default]
    Newest,
    /// Always ours (the branch being merged into).
    Ours,
    /// Always theirs (the branch being merged in).
    Theirs,
    /// Write git conflict markers around the record and exit 1.
    Markers,
}

/// One of the two sides of a merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The current branch (`%A`).
    Ours,
    /// The other branch (`%B`).
    Theirs,
}

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Ours => Side::Theirs,
            Side::Theirs => Side::Ours,
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Ours => "ours",
            Side::Theirs => "theirs",
        })
    }
}

/// Which input a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// The common ancestor (`%O`).
    Base,
    /// `%A`.
    Ours,
    /// `%B`.
    Theirs,
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Input::Base => "base",
            Input::Ours => "ours",
            Input::Theirs => "theirs",
        })
    }
}

/// git's `%X` / `%Y` labels of the two sides.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Labels {
    /// The side written over (`%A`): in a merge the checked-out branch, in a rebase upstream.
    pub ours: String,
    /// The side merged in (`%B`): in a merge the other branch, in a rebase your commit.
    pub theirs: String,
}

/// How a person knows the two sides of one merge: git's labels, with a rebase's upstream named
/// (see [`super::sides`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SideNames {
    /// The sides' labels.
    pub labels: Labels,
    /// The merge was a step of a rebase (ours is upstream, theirs your commit).
    pub rebase: bool,
}

/// A decision the conflict policy (or a delete/modify rule) made for one field of one record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Resolution {
    /// The field, dotted for nested objects (`metadata.owner`); `status` stands for its group.
    pub field: String,
    /// The side whose value was kept.
    pub kept: Side,
    /// A short excerpt of the kept value's JSON text.
    pub kept_value: String,
    /// A short excerpt of the discarded value's JSON text.
    pub other_value: String,
    /// Why that side won.
    pub reason: String,
    /// The kept value's whole JSON text (`None`: absent), for the merge log.
    #[serde(skip)]
    pub kept_json: Option<String>,
    /// The discarded value's whole JSON text (`None`: absent, or the record was deleted), for the
    /// merge log and `bd-merge review --restore`.
    #[serde(skip)]
    pub dropped_json: Option<String>,
}

/// An auto-resolved conflict of one record, for the one-line-per-conflict stderr report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// The record's id.
    pub id: String,
    /// What was decided.
    #[serde(flatten)]
    pub resolution: Resolution,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.resolution;
        write!(f, "{}: {}: kept {} {} over {} ({})", key_label(&self.id), r.field, r.kept, r.kept_value, r.other_value, r.reason)
    }
}

/// Conflict marker labels and size, as git passes them (`%L %S %X %Y`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Markers {
    /// Length of each marker (`%L`, at least 7).
    pub size: usize,
    /// Label after `<<<<<<<`.
    pub ours: String,
    /// Label after `|||||||` (diff3 style only).
    pub base: String,
    /// Label after `>>>>>>>`.
    pub theirs: String,
    /// Include the base record between `|||||||` and `=======` (git's diff3/zdiff3 styles).
    pub diff3: bool,
}

impl Default for Markers {
    fn default() -> Self {
        Markers { size: 7, ours: "ours".into(), base: "base".into(), theirs: "theirs".into(), diff3: false }
    }
}

/// What shapes a merge besides its three inputs.
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    /// How to settle what the field rules leave open.
    pub policy: ConflictPolicy,
    /// Marker style for `--conflict markers`.
    pub markers: Markers,
    /// The merge's own time: a record stamped by the merge is never older than it (README
    /// "Timestamps of merged records"). `None` leaves the clock out (the merge is then a function
    /// of its inputs alone); the driver, `resolve`, `dedupe` and import fill it in from
    /// [`timestamp::merge_now`].
    pub now: Option<timestamp::Instant>,
    /// The inputs are one record of a larger file (import's and dedupe's merges): leave what needs
    /// the whole file (derived counts, renaming an id created on both sides) to the caller.
    pub partial: bool,
}

/// An issue created on both sides under one id that the merge moved to a new id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rename {
    /// The id both sides created.
    pub from: String,
    /// The id the later creation now has.
    pub to: String,
    /// The side whose issue was renamed.
    pub side: Side,
}

impl Rename {
    /// The warning a merge gives about this rename, naming the renamed side `moved` and the side
    /// that kept the id `kept`: the engine says `theirs` / `ours`, the driver the names git gave
    /// the sides (in a rebase, upstream and your commit), as its other report lines do.
    pub fn warning(&self, moved: &str, kept: &str) -> Warning {
        Warning::Rename { rename: self.clone(), moved: moved.to_owned(), kept: kept.to_owned() }
    }
}

/// Something a human should know that did not stop a merge, a repair or its logging. The library
/// says what happened; where the text advises a command, the advice is a [`Fix`] that the binary
/// words ([`Warning::text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A finding with no advice in it, already worded.
    Note(String),
    /// An id stands on several lines of an input; its lines were merged as a set of exact lines.
    RepeatedId {
        /// The id.
        id: String,
        /// Where it stands, per input (`ours lines 2, 5`), joined with `; `.
        places: String,
    },
    /// An issue created on both sides under one id moved to a new id.
    Rename {
        /// The rename.
        rename: Rename,
        /// The renamed side, as the report names it.
        moved: String,
        /// The side that kept the id, as the report names it.
        kept: String,
    },
    /// The merge log could not be written; what was merged or repaired stands.
    LogUnwritten {
        /// Why, worded with its causes.
        error: String,
        /// Whether a dedupe run's decisions were lost (else a merge's).
        dedupe: bool,
    },
}

impl Warning {
    /// The warning's text, with its advice worded by `word` (the binaries' one wording function).
    pub fn text(&self, word: &dyn Fn(&Fix) -> String) -> String {
        // The command, in backquotes as every message quotes a command.
        let command = |fix: &Fix| format!("`{}`", word(fix));
        match self {
            Warning::Note(text) => text.clone(),
            Warning::RepeatedId { id, places } => format!(
                "id {} appears on several lines ({places}); merged its lines as a set of exact lines (run {})",
                key_label(id),
                command(&Fix::CorrectLines)
            ),
            Warning::Rename { rename, moved, kept } => format!(
                "{}: two different issues were created under this id; the one from {moved} is now {} (the id br gives it), with the \
                    references {moved} wrote to it, and {} stays the one from {kept} (created first); after the merge, the clone that \
                    held the moved issue is told the br command for its state",
                key_label(&rename.from),
                key_label(&rename.to),
                key_label(&rename.from),
            ),
            Warning::LogUnwritten { error, dedupe: false } => format!(
                "could not write the merge log ({error}); the merge itself is done, but {} will not show it",
                command(&Fix::ReviewMergeLog)
            ),
            Warning::LogUnwritten { error, dedupe: true } => {
                format!("could not write the merge log ({error}); {} will not show this dedupe", command(&Fix::ReviewMergeLog))
            }
        }
    }
}

/// A finished structural merge: the merged lines (borrowing the inputs where unchanged), ready to
/// be written.
#[derive(Debug, Clone)]
pub struct Merged<'a> {
    pub(super) layout: Layout,
    /// What to write, record by record (conflicts rendered only when written: an item per record
    /// of a million-record file is all the merge holds besides the inputs).
    pub(super) lines: Vec<Out<'a>>,
    /// The conflict markers' style.
    pub(super) markers: Markers,
    /// Set when the result is ours, byte for byte.
    pub(super) verbatim: Option<&'a [u8]>,
    /// Ours as read: the lines that are runs of it are written as slices of it.
    pub(super) source: &'a [u8],
    /// Records written with conflict markers (only under [`ConflictPolicy::Markers`]).
    pub conflicts: usize,
    /// Under [`ConflictPolicy::Markers`]: a side deleted most of the file, which a human should
    /// confirm (see the warnings), though no record has markers.
    pub needs_review: bool,
    /// Auto-resolved conflicts, in output order.
    pub reports: Vec<Report>,
    /// Things a human should know that did not stop the merge (duplicate ids, odd lines, renames).
    pub warnings: Vec<Warning>,
    /// Issues created on both sides under one id, the later one moved to a new id.
    pub renames: Vec<Rename>,
    /// Ids the result holds on more than one line though no input did: the result must not be
    /// written (README "Renames"). Empty for every sound merge.
    pub written_twice: Vec<String>,
    /// Ids ours and theirs hold for two issues, still between markers (settled by the join).
    pub(super) collided: Vec<String>,
}

impl Merged<'_> {
    /// Writes the merged file.
    pub fn write_to(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        match self.verbatim {
            Some(bytes) => w.write_all(bytes),
            None => {
                let mk = &self.markers;
                let marker = |c: char, label: &str| -> Vec<u8> {
                    let mut s: String = std::iter::repeat_n(c, mk.size.max(7)).collect();
                    if !label.is_empty() {
                        s.push(' ');
                        s.push_str(label);
                    }
                    s.into_bytes()
                };
                let marks = [marker('<', &mk.ours), marker('|', &mk.base), marker('=', ""), marker('>', &mk.theirs)];
                let diff3 = mk.diff3;
                let pieces = self.lines.iter().flat_map(|out| pieces(out, &marks, diff3).into_iter().flatten());
                jsonl::write_lines_from(w, self.layout, self.source, pieces)
            }
        }
    }

    /// The merged file as bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        let len = |out: &Out<'_>| match out {
            Out::Line(l) => l.len() + 2,
            Out::Conflict(_) => 0,
        };
        let mut out = Vec::with_capacity(self.lines.iter().map(len).sum::<usize>() + 3);
        self.write_to(&mut out).expect("writing to a Vec cannot fail");
        out
    }

    /// The same result, holding its own bytes (a merge of re-keyed inputs outlives them).
    pub(super) fn into_owned(self) -> Merged<'static> {
        let owned = |c: Cow<'_, [u8]>| Cow::Owned(c.into_owned());
        let (layout, lines) = match self.verbatim {
            Some(bytes) => {
                let file = jsonl::Jsonl::split(bytes);
                (file.layout, file.lines.iter().map(|l| Out::Line(Cow::Owned(l.bytes.to_vec()))).collect())
            }
            None => (
                self.layout,
                self.lines
                    .into_iter()
                    .map(|out| match out {
                        Out::Line(l) => Out::Line(owned(l)),
                        Out::Conflict(c) => Out::Conflict(Box::new(Conflict {
                            ours: c.ours.map(owned),
                            base: c.base.map(owned),
                            theirs: c.theirs.map(owned),
                        })),
                    })
                    .collect(),
            ),
        };
        Merged {
            layout,
            lines,
            markers: self.markers,
            verbatim: None,
            source: &[],
            conflicts: self.conflicts,
            needs_review: self.needs_review,
            reports: self.reports,
            warnings: self.warnings,
            renames: self.renames,
            written_twice: self.written_twice,
            collided: self.collided,
        }
    }

    /// True when the result is exactly the ours input (nothing to write over it).
    pub fn is_ours_unchanged(&self) -> bool {
        self.verbatim.is_some()
    }
}

/// Input the merge will not guess about; the caller falls back to a line merge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input} line {line}: {problem}")]
pub struct Unmergeable {
    /// Which input holds the line.
    pub input: Input,
    /// Its 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub problem: LineProblem,
}

/// The lines one item is written as: a record, or a record between conflict markers (`marks`:
/// the `<`, `|`, `=` and `>` lines).
pub(super) fn pieces<'s>(out: &'s Out<'_>, marks: &'s [Vec<u8>; 4], diff3: bool) -> [Option<&'s [u8]>; 7] {
    match out {
        Out::Line(l) => [Some(l.as_ref()), None, None, None, None, None, None],
        Out::Conflict(c) => [
            Some(&marks[0][..]),
            c.ours.as_deref(),
            diff3.then_some(&marks[1][..]),
            c.base.as_deref().filter(|_| diff3),
            Some(&marks[2][..]),
            c.theirs.as_deref(),
            Some(&marks[3][..]),
        ],
    }
}

/// What the merge writes for one id.
#[derive(Debug, Clone)]
pub(super) enum Out<'a> {
    Line(Cow<'a, [u8]>),
    /// Boxed: rare, and an item per record of a million-record file is then a third the size.
    Conflict(Box<Conflict<'a>>),
}

/// A record written between conflict markers.
#[derive(Debug, Clone)]
pub(super) struct Conflict<'a> {
    pub(super) ours: Option<Cow<'a, [u8]>>,
    pub(super) base: Option<Cow<'a, [u8]>>,
    pub(super) theirs: Option<Cow<'a, [u8]>>,
}

/// What one run of the driver (or `resolve`) decided that a person may want back: handed to a
/// [`DecisionLog`].
#[derive(Debug, Clone, Copy)]
pub struct Decisions<'a> {
    /// The directory the run worked in (the work tree root for the driver).
    pub dir: &'a std::path::Path,
    /// The command name the decisions are kept under.
    pub command: &'a str,
    /// The issues file, as the run names it in messages.
    pub path: &'a str,
    /// The sides, as the person knows them.
    pub sides: &'a SideNames,
    /// The values the policy (or a delete/modify rule) dropped.
    pub reports: &'a [Report],
    /// The issues moved to a new id.
    pub renames: &'a [Rename],
    /// The policy in force (`None`: no policy decided, as in `dedupe`).
    pub policy: Option<ConflictPolicy>,
}

/// Where a run keeps what it dropped: the merge log in every real run (`merge_log::decision_log`
/// builds one). The merge itself never writes the log, so the log may build on the merge's types
/// without the merge depending on the log.
#[derive(Debug, Clone)]
pub struct DecisionLog {
    /// The command name the decisions are kept under.
    pub command: String,
    /// Keeps them; `Some(warning)` when it could not (the merge stands).
    pub keep: fn(&Decisions<'_>) -> Option<Warning>,
}

//! The three-way merge of JSONL issue files, record by record.
//!
//! Records are matched by `id`. A record whose bytes are the same on two sides is decided without
//! being parsed, so merging two branches that each touched a few percent of a 100k-issue file
//! parses only those few percent. Records changed on both sides go to the field rules in
//! [`field`]; what those rules leave open is settled by the [`ConflictPolicy`]. The function here
//! is pure: the same three inputs and options always give the same bytes, reports and outcome.
//! Reading files, falling back to `git merge-file` and writing the result live in [`driver`].

pub mod derived;
pub mod driver;
pub mod field;
pub mod producing;
pub mod rename;
pub mod repair;
mod sorted;
pub mod text;
pub(crate) mod writer;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::fmt;

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

use crate::index::{IdIndex, Slot};
use crate::jsonl::{self, Jsonl, Layout, Line};
use crate::record::{key_label, key_order, render_entries, LineProblem, RawObject, HEADER_KEY};
use crate::timestamp;
use field::{merge_entries, FieldCtx};
use sorted::SortedIndex;

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

    /// 0 for ours, 1 for theirs.
    fn index(self) -> usize {
        match self {
            Side::Ours => 0,
            Side::Theirs => 1,
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
    pub fn warning(&self, moved: &str, kept: &str) -> String {
        format!(
            "{}: two different issues were created under this id; the one from {moved} (created later) is now {}, with the references {moved} wrote to it, and {} stays the one from {kept} (in a clone that held the other one, br needs `br sync --merge`)",
            key_label(&self.from),
            key_label(&self.to),
            key_label(&self.from),
        )
    }
}

/// A finished structural merge: the merged lines (borrowing the inputs where unchanged), ready to
/// be written.
#[derive(Debug, Clone)]
pub struct Merged<'a> {
    layout: Layout,
    /// What to write, record by record (conflicts rendered only when written: an item per record
    /// of a million-record file is all the merge holds besides the inputs).
    lines: Vec<Out<'a>>,
    /// The conflict markers' style.
    markers: Markers,
    /// Set when the result is ours, byte for byte.
    verbatim: Option<&'a [u8]>,
    /// Records written with conflict markers (only under [`ConflictPolicy::Markers`]).
    pub conflicts: usize,
    /// Under [`ConflictPolicy::Markers`]: a side deleted most of the file, which a human should
    /// confirm (see the warnings), though no record has markers.
    pub needs_review: bool,
    /// Auto-resolved conflicts, in output order.
    pub reports: Vec<Report>,
    /// Things a human should know that did not stop the merge (duplicate ids, odd lines, renames).
    pub warnings: Vec<String>,
    /// Issues created on both sides under one id, the later one moved to a new id.
    pub renames: Vec<Rename>,
    /// Ids the result holds on more than one line though no input did: the result must not be
    /// written (README "Renames"). Empty for every sound merge.
    pub written_twice: Vec<String>,
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
                jsonl::write_lines(w, self.layout, self.lines.iter().flat_map(|out| pieces(out, &marks, diff3).into_iter().flatten()))
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

    /// True when the result is exactly the ours input (nothing to write over it).
    pub fn is_ours_unchanged(&self) -> bool {
        self.verbatim.is_some()
    }
}

/// Input the merge will not guess about; the caller falls back to a line merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmergeable {
    /// Which input holds the line.
    pub input: Input,
    /// Its 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub problem: LineProblem,
}

impl std::error::Error for Unmergeable {}

impl fmt::Display for Unmergeable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} line {}: {}", self.input, self.line, self.problem)
    }
}

/// One input, indexed by key: hashed (any file, the index shared with import, diff and check) or,
/// when the file is sorted by key, by its sorted key column ([`sorted`]).
struct Indexed<'a> {
    input: Input,
    index: Index<'a>,
}

enum Index<'a> {
    Hashed(IdIndex<'a>),
    Sorted(SortedIndex<'a>),
}

/// Where a key's lines are in one input.
#[derive(Clone, Copy)]
enum At<'s> {
    One(u32),
    Many(&'s [u32]),
}

impl<'a> Indexed<'a> {
    fn new(input: Input, content: &'a [u8]) -> Self {
        Indexed { input, index: Index::Hashed(IdIndex::new(content)) }
    }

    fn layout(&self) -> Layout {
        match &self.index {
            Index::Hashed(i) => i.file.layout,
            Index::Sorted(s) => s.layout,
        }
    }

    /// Every line, in file order.
    fn lines(&self) -> Box<dyn Iterator<Item = &'a [u8]> + '_> {
        match &self.index {
            Index::Hashed(i) => Box::new(i.file.lines.iter().map(|l| l.bytes)),
            Index::Sorted(s) => Box::new(s.lines()),
        }
    }

    fn is_empty(&self) -> bool {
        match &self.index {
            Index::Hashed(i) => i.file.lines.is_empty(),
            Index::Sorted(s) => s.len() == 0,
        }
    }

    fn line(&self, idx: u32) -> Line<'a> {
        match &self.index {
            Index::Hashed(i) => i.file.lines[idx as usize],
            Index::Sorted(s) => s.line(idx),
        }
    }

    fn at(&self, id: &str) -> Option<At<'_>> {
        match &self.index {
            Index::Hashed(i) => i.ids.get(id).map(|slot| match slot {
                Slot::One(n) => At::One(*n),
                Slot::Many(v) => At::Many(v),
            }),
            Index::Sorted(s) => s.find(id).map(At::One),
        }
    }

    /// The key's line when it is on exactly one.
    fn single(&self, id: &str) -> Option<Line<'a>> {
        match self.at(id)? {
            At::One(n) => Some(self.line(n)),
            At::Many(_) => None,
        }
    }

    /// Every line of a key, in file order (empty when absent).
    fn lines_of(&self, id: &str) -> Vec<Line<'a>> {
        match self.at(id) {
            None => Vec::new(),
            Some(At::One(n)) => vec![self.line(n)],
            Some(At::Many(v)) => v.iter().map(|n| self.line(*n)).collect(),
        }
    }

    /// The distinct keys, in no particular order.
    fn keys(&self) -> Box<dyn Iterator<Item = Cow<'_, str>> + '_> {
        match &self.index {
            Index::Hashed(i) => Box::new(i.ids.keys().map(|k| Cow::Borrowed(k.as_ref()))),
            Index::Sorted(s) => Box::new(s.keys()),
        }
    }
}

/// A record line, parsed.
struct Parsed<'a> {
    bytes: &'a [u8],
    obj: RawObject<'a>,
    value: Value,
}

fn parse(input: Input, line: Line<'_>) -> Result<Parsed<'_>, Unmergeable> {
    let unmergeable = |problem| Unmergeable { input, line: line.number, problem };
    let obj = RawObject::parse(line.bytes).map_err(unmergeable)?;
    let value = serde_json::from_slice(line.bytes).map_err(|e| unmergeable(LineProblem::InvalidJson(e.to_string())))?;
    Ok(Parsed { bytes: line.bytes, obj, value })
}

/// Checks that a line is a valid record, without building its value (a record only one side
/// changed is kept as it is).
fn validate(input: Input, line: Line<'_>) -> Result<(), Unmergeable> {
    RawObject::parse(line.bytes).map(|_| ()).map_err(|problem| Unmergeable { input, line: line.number, problem })
}

/// The lines one item is written as: a record, or a record between conflict markers (`marks`:
/// the `<`, `|`, `=` and `>` lines).
fn pieces<'s>(out: &'s Out<'_>, marks: &'s [Vec<u8>; 4], diff3: bool) -> [Option<&'s [u8]>; 7] {
    match out {
        Out::Line(l) => [Some(l.as_ref()), None, None, None, None, None, None],
        Out::Conflict(c) => [
            Some(&marks[0][..]),
            c.ours.as_deref(),
            diff3.then_some(&marks[1][..]),
            c.base.filter(|_| diff3),
            Some(&marks[2][..]),
            c.theirs.as_deref(),
            Some(&marks[3][..]),
        ],
    }
}

/// What the merge writes for one id.
#[derive(Debug, Clone)]
enum Out<'a> {
    Line(Cow<'a, [u8]>),
    /// Boxed: rare, and an item per record of a million-record file is then a third the size.
    Conflict(Box<Conflict<'a>>),
}

/// A record written between conflict markers.
#[derive(Debug, Clone)]
struct Conflict<'a> {
    ours: Option<Cow<'a, [u8]>>,
    base: Option<&'a [u8]>,
    theirs: Option<Cow<'a, [u8]>>,
}

/// Merges three versions of an issues file.
///
/// Returns the merged bytes with the reports, or [`Unmergeable`] for input it will not guess
/// about (the caller then merges line by line). Inputs sorted by key (how bd and br write them)
/// are merged by walking them side by side ([`merge_sorted`]); any other input through a hash
/// index of each file ([`merge_indexed`]). Both give the same result.
pub fn merge<'a>(base: &'a [u8], ours: &'a [u8], theirs: &'a [u8], options: &MergeOptions) -> Result<Merged<'a>, Unmergeable> {
    match merge_sorted(base, ours, theirs, options) {
        Some(result) => result,
        None => merge_indexed(base, ours, theirs, options),
    }
}

/// The result when it is ours (theirs changed nothing, or both sides agree).
fn ours_as_it_is<'a>(base: &[u8], ours: &'a [u8], theirs: &[u8]) -> Option<Merged<'a>> {
    if theirs != base && ours != theirs {
        return None;
    }
    // The result is ours, but an identical repeat of a record line still collapses to one.
    let file = Jsonl::split(ours);
    let (layout, lines, verbatim) = match collapse_repeats(&file) {
        Some(lines) => (file.layout, lines.into_iter().map(Out::Line).collect(), None),
        None => (Layout::default(), Vec::new(), Some(ours)),
    };
    Some(Merged {
        layout,
        lines,
        markers: Markers::default(),
        verbatim,
        conflicts: 0,
        needs_review: false,
        reports: Vec::new(),
        warnings: Vec::new(),
        renames: Vec::new(),
        written_twice: Vec::new(),
    })
}

/// [`merge`] through a hash index of each input, whatever their order. Public for the tests that
/// hold the two paths to the same result.
#[doc(hidden)]
pub fn merge_indexed<'a>(base: &'a [u8], ours: &'a [u8], theirs: &'a [u8], options: &MergeOptions) -> Result<Merged<'a>, Unmergeable> {
    if let Some(merged) = ours_as_it_is(base, ours, theirs) {
        return Ok(merged);
    }
    // Indexing is most of the work on big files: spread the three inputs over two threads.
    let (b, o, t) = std::thread::scope(|s| {
        let other = s.spawn(|| (Indexed::new(Input::Base, base), Indexed::new(Input::Theirs, theirs)));
        let o = Indexed::new(Input::Ours, ours);
        let (b, t) = other.join().expect("indexing does not panic");
        (b, o, t)
    });
    let (Index::Hashed(bi), Index::Hashed(oi), Index::Hashed(ti)) = (&b.index, &o.index, &t.index) else {
        unreachable!("Indexed::new hashes")
    };
    let mut warnings = Vec::new();
    check_bad_lines([(&b, bi), (&o, oi), (&t, ti)], &mut warnings)?;

    let mut m = Merger::new([&b, &o, &t], options, ours, warnings);
    let mut items: Vec<(Cow<'_, str>, Out<'_>)> = Vec::with_capacity(oi.file.lines.len() + ti.file.lines.len() / 16);
    let mut last_key: Cow<'_, str> = Cow::Borrowed("");
    let mut done: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    for (i, id) in oi.line_ids.iter().enumerate() {
        match id {
            None => items.push((last_key.clone(), Out::Line(Cow::Borrowed(oi.file.lines[i].bytes)))),
            Some(id) => {
                last_key = id.clone();
                if oi.is_duplicated(id) && !done.insert(id.as_ref()) {
                    continue;
                }
                for out in m.merge_id(id)? {
                    items.push((id.clone(), out));
                }
                m.note_renamed_item(items.len());
            }
        }
    }
    for id in ti.line_ids.iter().flatten() {
        if oi.ids.contains_key(id) || (ti.is_duplicated(id) && !done.insert(id.as_ref())) {
            continue;
        }
        for out in m.merge_id(id)? {
            items.push((id.clone(), out));
        }
        m.note_renamed_item(items.len());
    }
    let gone = |side: &IdIndex<'_>| bi.ids.keys().filter(|id| !side.ids.contains_key(*id)).count();
    let gone = [gone(oi), gone(ti)];
    // Ours only moved lines (bd does not sort its export, SPEC §12): it is unchanged, so the
    // result keeps the order of theirs, the side that changed content.
    let order = if ours != base && only_moved(bi, oi) && !only_moved(bi, ti) {
        Order::Theirs
    } else if oi.sorted_by_id() {
        Order::Sorted
    } else {
        Order::Ours
    };
    Ok(m.finish(items, bi.ids.len(), gone, order, (ours, theirs)))
}

/// [`merge`] by walking the three inputs side by side, when each is sorted by key with every line
/// a record and no key repeated ([`sorted`]); `None` when one is not (the caller then takes
/// [`merge_indexed`]). Public for the tests that hold the two paths to the same result.
#[doc(hidden)]
pub fn merge_sorted<'a>(
    base: &'a [u8],
    ours: &'a [u8],
    theirs: &'a [u8],
    options: &MergeOptions,
) -> Option<Result<Merged<'a>, Unmergeable>> {
    if let Some(merged) = ours_as_it_is(base, ours, theirs) {
        return Some(Ok(merged));
    }
    let (b, o, t) = std::thread::scope(|s| {
        let other = s.spawn(|| (SortedIndex::new(base), SortedIndex::new(theirs)));
        let o = SortedIndex::new(ours);
        let (b, t) = other.join().expect("indexing does not panic");
        (b, o, t)
    });
    let (b, o, t) = (b?, o?, t?);
    let (b, o, t) = (
        Indexed { input: Input::Base, index: Index::Sorted(b) },
        Indexed { input: Input::Ours, index: Index::Sorted(o) },
        Indexed { input: Input::Theirs, index: Index::Sorted(t) },
    );
    let (Index::Sorted(bi), Index::Sorted(oi), Index::Sorted(ti)) = (&b.index, &o.index, &t.index) else {
        unreachable!("built sorted just above")
    };
    let mut m = Merger::new([&b, &o, &t], options, ours, Vec::new());
    let mut items: Vec<(Cow<'_, str>, Out<'_>)> = Vec::with_capacity(oi.len() + ti.len() / 16);
    // The hashed path merges ours' keys first, then theirs' own: what the merge of a key only
    // theirs has reports, warns or fails on is held back to come after, in the same order.
    let (mut later_reports, mut later_warnings, mut later_error) = (Vec::new(), Vec::new(), None);
    let mut gone = [0usize; 2];
    let walked = sorted::join([bi, oi, ti], |key, step| {
        let [in_base, in_ours, in_theirs] = step;
        if in_base.is_some() {
            gone[0] += usize::from(in_ours.is_none());
            gone[1] += usize::from(in_theirs.is_none());
        }
        if in_ours.is_none() && in_theirs.is_none() {
            return Ok(());
        }
        let (reports, warnings) = (m.reports.len(), m.warnings.len());
        let outs = match m.merge_at(&key, step.map(|n| n.map(At::One))) {
            Ok(outs) => outs,
            Err(e) if in_ours.is_none() => {
                later_error.get_or_insert(e);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        for out in outs {
            items.push((key.clone(), out));
        }
        m.note_renamed_item(items.len());
        if in_ours.is_none() {
            later_reports.extend(m.reports.drain(reports..));
            later_warnings.extend(m.warnings.drain(warnings..));
        }
        Ok(())
    });
    if let Err(e) = walked {
        return Some(Err(e));
    }
    if let Some(e) = later_error {
        return Some(Err(e));
    }
    m.reports.append(&mut later_reports);
    m.warnings.append(&mut later_warnings);
    Some(Ok(m.finish(items, bi.len(), gone, Order::Sorted, (ours, theirs))))
}

/// The order of the merged lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// bd's order (ours is sorted that way).
    Sorted,
    /// Ours' order, then theirs' additions.
    Ours,
    /// Theirs' order: ours only moved lines.
    Theirs,
}

/// Whether `side` holds exactly the lines of `base` (as many times each), in any order: a side
/// that only reordered its lines. Blank lines do not count. One pass over each.
fn only_moved(base: &IdIndex<'_>, side: &IdIndex<'_>) -> bool {
    let lines = |f: &IdIndex<'_>| f.file.lines.iter().filter(|l| !l.bytes.iter().all(u8::is_ascii_whitespace)).count();
    if lines(base) != lines(side) {
        return false;
    }
    let mut count: FxHashMap<&[u8], i64> = FxHashMap::default();
    count.reserve(base.file.lines.len());
    for l in &base.file.lines {
        *count.entry(l.bytes).or_default() += 1;
    }
    for l in &side.file.lines {
        *count.entry(l.bytes).or_default() -= 1;
    }
    count.into_iter().all(|(bytes, n)| n == 0 || bytes.iter().all(u8::is_ascii_whitespace))
}

/// The lines of `file` with byte-identical repeats of a record line dropped (the first copy
/// stays); `None` when there are none.
fn collapse_repeats<'a>(file: &Jsonl<'a>) -> Option<Vec<Cow<'a, [u8]>>> {
    let mut seen: rustc_hash::FxHashSet<&[u8]> = rustc_hash::FxHashSet::default();
    seen.reserve(file.lines.len());
    let is_record = |bytes: &[u8]| crate::record::record_key(bytes).is_ok();
    let repeated = |l: &Line<'a>, seen: &mut rustc_hash::FxHashSet<&'a [u8]>| !seen.insert(l.bytes) && is_record(l.bytes);
    if !file.lines.iter().any(|l| repeated(l, &mut seen)) {
        return None;
    }
    seen.clear();
    Some(file.lines.iter().filter(|l| !repeated(l, &mut seen)).map(|l| Cow::Borrowed(l.bytes)).collect())
}

/// Merges an append-only log (bd's `interactions.jsonl`, the legacy `deletions.jsonl`): records
/// are written once and never changed, so the result is the set of lines of both sides. Ours'
/// lines in their order, then theirs' additions in theirs' order; an identical repeat collapses to
/// one; a line present in base and removed by one side (a compaction) stays removed. Never a
/// conflict, and nothing is parsed, so it cannot fail on any input. Layout follows ours.
pub fn merge_append_only(base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    use std::collections::HashSet;
    fn set<'a>(f: &Jsonl<'a>) -> HashSet<&'a [u8]> {
        f.lines.iter().map(|l| l.bytes).collect()
    }
    let (b, o, t) = (Jsonl::split(base), Jsonl::split(ours), Jsonl::split(theirs));
    let (bs, os, ts) = (set(&b), set(&o), set(&t));
    let mut seen: HashSet<&[u8]> = HashSet::with_capacity(o.lines.len() + t.lines.len());
    let mut kept: Vec<&[u8]> = Vec::with_capacity(o.lines.len() + t.lines.len() / 8);
    for l in &o.lines {
        if (ts.contains(l.bytes) || !bs.contains(l.bytes)) && seen.insert(l.bytes) {
            kept.push(l.bytes);
        }
    }
    for l in &t.lines {
        if !os.contains(l.bytes) && !bs.contains(l.bytes) && seen.insert(l.bytes) {
            kept.push(l.bytes);
        }
    }
    let layout = if ours.is_empty() { t.layout } else { o.layout };
    let mut out = Vec::with_capacity(ours.len() + theirs.len() / 8);
    jsonl::write_lines(&mut out, layout, kept).expect("writing to a Vec cannot fail");
    out
}

/// Lines without an id are fine only when the same bytes stand in all three inputs.
fn check_bad_lines(inputs: [(&Indexed<'_>, &IdIndex<'_>); 3], warnings: &mut Vec<String>) -> Result<(), Unmergeable> {
    for (side, index) in inputs {
        for (i, problem) in &index.bad {
            let line = index.file.lines[*i];
            if inputs.iter().all(|(_, s)| s.has_bad_line(line.bytes)) && *problem != LineProblem::ConflictMarker {
                if side.input == Input::Ours {
                    warnings.push(format!(
                        "ours line {}: {problem}; the line is the same in all three versions and was kept as it is",
                        line.number
                    ));
                }
                continue;
            }
            return Err(Unmergeable { input: side.input, line: line.number, problem: problem.clone() });
        }
    }
    Ok(())
}

struct Merger<'m, 'a> {
    b: &'m Indexed<'a>,
    o: &'m Indexed<'a>,
    t: &'m Indexed<'a>,
    options: &'m MergeOptions,
    go_style: OnceCell<bool>,
    ours_bytes: &'a [u8],
    reports: Vec<Report>,
    warnings: Vec<String>,
    conflicts: usize,
    /// Ids (on one line in every input) whose ours or theirs line differs from base: the only
    /// records that can carry comments a side added; with their base, ours and theirs lines.
    touched: Vec<(String, [Option<&'a [u8]>; 3])>,
    /// A side deleted more than half of the base's records.
    mass_deletion: bool,
    /// Ids added on both sides as two different issues, waiting for their new ids.
    collisions: Vec<Collision>,
    /// The renames done.
    renames: Vec<Rename>,
}

/// An id both sides created for two different issues (README "Two issues created under one id").
struct Collision {
    id: String,
    /// The side whose issue was created later and moves to a new id.
    later: Side,
    /// Index in the merge's items of the later issue's line, once pushed.
    item: Option<usize>,
}

impl<'m, 'a> Merger<'m, 'a> {
    fn new(inputs: [&'m Indexed<'a>; 3], options: &'m MergeOptions, ours_bytes: &'a [u8], warnings: Vec<String>) -> Self {
        let [b, o, t] = inputs;
        Merger {
            b,
            o,
            t,
            options,
            go_style: OnceCell::new(),
            ours_bytes,
            reports: Vec::new(),
            warnings,
            conflicts: 0,
            touched: Vec::new(),
            mass_deletion: false,
            collisions: Vec::new(),
            renames: Vec::new(),
        }
    }

    /// What both paths do once every key is merged: the mass-deletion warnings (`gone`: how many
    /// of the base's `base_records` keys ours and theirs lack), the whole-file rules (comment
    /// ids, renames, derived counts), bd's order when ours has it, and the rendered lines.
    fn finish(
        mut self,
        mut items: Vec<(Cow<'a, str>, Out<'a>)>,
        base_records: usize,
        gone: [usize; 2],
        order: Order,
        (ours, theirs): (&'a [u8], &'a [u8]),
    ) -> Merged<'a> {
        let options = self.options;
        for ((side, file), gone) in [(Side::Ours, self.o), (Side::Theirs, self.t)].into_iter().zip(gone) {
            if base_records >= 2 && gone * 2 > base_records {
                self.warnings.push(format!(
                    "{side} deletes {gone} of the {base_records} records of the base ({}%){}; if that was not meant (a truncated or emptied file), redo the merge",
                    gone * 100 / base_records,
                    if file.is_empty() { ": its file is empty" } else { "" }
                ));
                self.mass_deletion = true;
            }
        }
        if writer::mentions_comments(ours) && writer::mentions_comments(theirs) {
            self.renumber_comments(&mut items);
        }
        self.apply_renames(&mut items);
        if writer::mentions_comments(ours) || writer::mentions_comments(theirs) {
            self.renumber_shared_comments(&mut items);
        }
        if !options.partial && (derived::mentions_counts(ours) || derived::mentions_counts(theirs)) {
            self.fix_derived(&mut items);
        }
        match order {
            // bd's order: the header, issues by id, memories by key, other kinds.
            Order::Sorted => items.sort_by(|x, y| key_order(&x.0, &y.0)),
            Order::Ours => {}
            Order::Theirs => {
                // Each key where theirs has it (a key it lacks last); a line without a key stays
                // after the key it was filed under. A stable sort: O(n log n).
                let at: Vec<u32> = items
                    .iter()
                    .map(|(key, _)| match self.t.at(key) {
                        Some(At::One(n)) => n,
                        Some(At::Many(ns)) => ns.first().copied().unwrap_or(u32::MAX),
                        None => u32::MAX,
                    })
                    .collect();
                let mut indexed: Vec<(u32, (Cow<'a, str>, Out<'a>))> = at.into_iter().zip(items.drain(..)).collect();
                indexed.sort_by_key(|(n, _)| *n);
                items.extend(indexed.into_iter().map(|(_, item)| item));
            }
        }
        let written_twice = self.ids_written_twice(&items);
        let layout = if ours.is_empty() && !theirs.is_empty() { self.t.layout() } else { self.o.layout() };
        let lines = Self::render(items);
        let needs_review = self.mass_deletion && options.policy == ConflictPolicy::Markers;
        Merged {
            layout,
            lines,
            markers: options.markers.clone(),
            verbatim: None,
            conflicts: self.conflicts,
            needs_review,
            reports: self.reports,
            warnings: self.warnings,
            renames: self.renames,
            written_twice,
        }
    }

    /// The ids the merge would write on more than one line though no input has them on several
    /// (README "Renames": the writer refuses such a result). Empty for every sound merge; the
    /// check is one pass over the keys, and a second over the lines of repeated keys only.
    fn ids_written_twice(&self, items: &[(Cow<'a, str>, Out<'a>)]) -> Vec<String> {
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        seen.reserve(items.len());
        let mut repeated: FxHashSet<&str> = FxHashSet::default();
        for (key, out) in items {
            if matches!(out, Out::Line(_)) && !seen.insert(key.as_ref()) {
                repeated.insert(key.as_ref());
            }
        }
        repeated.retain(|key| ![self.b, self.o, self.t].iter().any(|f| matches!(f.at(key), Some(At::Many(_)))));
        if repeated.is_empty() {
            return Vec::new();
        }
        // A line without an id is filed under the key before it: count record lines only.
        let mut lines: FxHashMap<&str, usize> = FxHashMap::default();
        for (key, out) in items {
            let Out::Line(line) = out else { continue };
            if repeated.contains(key.as_ref())
                && crate::record::record_key(line).is_ok_and(|k| crate::record::Key::into_string_key(k) == key.as_ref())
            {
                *lines.entry(key.as_ref()).or_default() += 1;
            }
        }
        let mut twice: Vec<String> = lines.into_iter().filter(|(_, n)| *n > 1).map(|(k, _)| k.to_owned()).collect();
        twice.sort();
        twice
    }

    fn merge_id(&mut self, id: &str) -> Result<Vec<Out<'a>>, Unmergeable> {
        // One lookup per input: is the id there, on one line or on several.
        let (b, o, t) = (self.b, self.o, self.t);
        self.merge_at(id, [b.at(id), o.at(id), t.at(id)])
    }

    /// Merges one key, given where its lines are in base, ours and theirs.
    fn merge_at(&mut self, id: &str, slots: [Option<At<'_>>; 3]) -> Result<Vec<Out<'a>>, Unmergeable> {
        if slots.iter().any(|s| matches!(s, Some(At::Many(_)))) {
            return self.merge_duplicates(id);
        }
        let line = |file: &Indexed<'a>, slot: Option<At<'_>>| match slot {
            Some(At::One(n)) => Some(file.line(n)),
            _ => None,
        };
        let (b, o, t) = (line(self.b, slots[0]), line(self.o, slots[1]), line(self.t, slots[2]));
        let bytes = |l: Option<Line<'a>>| l.map(|l| l.bytes);
        // Each comparison of whole lines once: most records are the same in all three.
        let (ours_is_base, theirs_is_base) = (bytes(o) == bytes(b), bytes(t) == bytes(b));
        if !ours_is_base || !theirs_is_base {
            self.touched.push((id.to_owned(), [bytes(b), bytes(o), bytes(t)]));
        }
        let keep = |line: Line<'a>| Ok(vec![Out::Line(Cow::Borrowed(line.bytes))]);
        match (b, o, t) {
            (Some(_), Some(x), Some(_)) if ours_is_base && theirs_is_base => keep(x),
            (_, Some(x), Some(y)) if x.bytes == y.bytes => {
                if b.is_none_or(|b| b.bytes != x.bytes) {
                    validate(Input::Ours, x)?;
                }
                keep(x)
            }
            (None, Some(x), None) => {
                validate(Input::Ours, x)?;
                keep(x)
            }
            (None, None, Some(y)) => {
                validate(Input::Theirs, y)?;
                keep(y)
            }
            (None, Some(x), Some(y)) => {
                let (px, py) = (parse(Input::Ours, x)?, parse(Input::Theirs, y)?);
                if px.value == py.value {
                    return keep(x);
                }
                if !self.options.partial {
                    if let Some(order) = rename::concurrent_creation(&px.value, &py.value) {
                        return Ok(self.two_issues(id, &px, &py, order));
                    }
                }
                Ok(vec![self.merge_fields(id, None, &px, &py)])
            }
            (Some(_) | None, None, None) => Ok(Vec::new()),
            (Some(b), Some(x), None) => self.deleted_on_one_side(id, b, x, Side::Ours),
            (Some(b), None, Some(y)) => self.deleted_on_one_side(id, b, y, Side::Theirs),
            (Some(b), Some(x), Some(y)) => {
                if theirs_is_base {
                    validate(Input::Ours, x)?;
                    return keep(x);
                }
                if ours_is_base {
                    // Theirs may only have re-formatted it (another writer): then the record is
                    // unchanged, and an unchanged record keeps ours' bytes.
                    let (pb, py) = (parse(Input::Base, b)?, parse(Input::Theirs, y)?);
                    return if py.value == pb.value { keep(x) } else { keep(y) };
                }
                let (pb, px, py) = (parse(Input::Base, b)?, parse(Input::Ours, x)?, parse(Input::Theirs, y)?);
                if py.value == pb.value || px.value == py.value {
                    return keep(x);
                }
                if px.value == pb.value {
                    return keep(y);
                }
                Ok(vec![self.merge_fields(id, Some(&pb), &px, &py)])
            }
        }
    }

    /// `kept_side` still has the record (`line`); the other side deleted it.
    fn deleted_on_one_side(&mut self, id: &str, base: Line<'a>, line: Line<'a>, kept_side: Side) -> Result<Vec<Out<'a>>, Unmergeable> {
        let input = if kept_side == Side::Ours { Input::Ours } else { Input::Theirs };
        if line.bytes == base.bytes {
            return Ok(Vec::new());
        }
        let (pb, pl) = (parse(Input::Base, base)?, parse(input, line)?);
        if pb.value == pl.value {
            return Ok(Vec::new());
        }
        if self.options.policy == ConflictPolicy::Markers {
            self.conflicts += 1;
            let kept = Some(Cow::Borrowed(line.bytes));
            let (ours, theirs) = if kept_side == Side::Ours { (kept, None) } else { (None, kept) };
            return Ok(vec![Out::Conflict(Box::new(Conflict { ours, base: Some(base.bytes), theirs }))]);
        }
        let deleter = if kept_side == Side::Ours { Side::Theirs } else { Side::Ours };
        self.reports.push(Report {
            id: id.to_owned(),
            resolution: Resolution {
                field: "(record)".into(),
                kept: kept_side,
                kept_value: "its modified record".into(),
                other_value: "the deletion".into(),
                reason: format!("{deleter} deleted it, {kept_side} changed it; a change is never lost"),
                kept_json: std::str::from_utf8(line.bytes).ok().map(str::to_owned),
                dropped_json: None,
            },
        });
        Ok(vec![Out::Line(Cow::Borrowed(line.bytes))])
    }

    fn go_style(&self) -> bool {
        *self.go_style.get_or_init(|| crate::record::uses_go_escapes(self.ours_bytes))
    }

    fn merge_fields(&mut self, id: &str, base: Option<&Parsed<'a>>, ours: &Parsed<'a>, theirs: &Parsed<'a>) -> Out<'a> {
        // The header (bd's `_dolt_commit` and friends) is bookkeeping: never a conflict for a human.
        let policy =
            if id == HEADER_KEY && self.options.policy == ConflictPolicy::Markers { ConflictPolicy::Newest } else { self.options.policy };
        let (winner, reason) = match policy {
            ConflictPolicy::Newest | ConflictPolicy::Markers => newest(ours, theirs),
            ConflictPolicy::Ours => (Side::Ours, "--conflict ours"),
            ConflictPolicy::Theirs => (Side::Theirs, "--conflict theirs"),
        };
        let base_entries = base.map(|b| b.obj.entries.as_slice()).unwrap_or(&[]);
        let go_style = self.go_style();
        let now = self.options.now;
        let run = |winner: Side| {
            let mut ctx = FieldCtx { winner, winner_reason: reason, go_style, comma: ours.obj.comma, open: 0, resolutions: Vec::new() };
            let mut entries = merge_entries(base_entries, &ours.obj.entries, &theirs.obj.entries, &mut ctx, "", true);
            let line = render_entries(&entries, ours.obj.colon, ours.obj.comma);
            // A record that equals neither side is newer than both (README, "The merge rules, in plain words").
            if line.as_bytes() != ours.bytes && line.as_bytes() != theirs.bytes {
                let value: Value = serde_json::from_str(&line).expect("rendered from validated values");
                // Volatile keys (heartbeats) alone never make a record newer than both sides.
                let (value, o, t) =
                    (field::without_volatile(&value), field::without_volatile(&ours.value), field::without_volatile(&theirs.value));
                if !writer::same_record(&value, &o)
                    && !writer::same_record(&value, &t)
                    && writer::bump_updated_at(&mut entries, &[stamp_of(&ours.value), stamp_of(&theirs.value)], now)
                {
                    return (render_entries(&entries, ours.obj.colon, ours.obj.comma), ctx);
                }
            }
            (line, ctx)
        };
        let (line, ctx) = run(winner);
        if policy == ConflictPolicy::Markers && ctx.open > 0 {
            self.conflicts += 1;
            let (other_line, _) = run(if winner == Side::Ours { Side::Theirs } else { Side::Ours });
            let (ours_line, theirs_line) = if winner == Side::Ours { (line, other_line) } else { (other_line, line) };
            return Out::Conflict(Box::new(Conflict {
                ours: Some(Cow::Owned(ours_line.into_bytes())),
                base: base.map(|b| b.bytes),
                theirs: Some(Cow::Owned(theirs_line.into_bytes())),
            }));
        }
        self.reports.extend(ctx.resolutions.into_iter().map(|resolution| Report { id: id.to_owned(), resolution }));
        if line.as_bytes() == ours.bytes {
            Out::Line(Cow::Borrowed(ours.bytes))
        } else {
            Out::Line(Cow::Owned(line.into_bytes()))
        }
    }

    /// An id on several lines: merge its lines as a set of exact lines. A line is matched
    /// across the inputs by its value (a copy another writer only re-formatted is the same line,
    /// README "Equal"), and what is kept is written in ours' bytes when ours has it, byte-identical
    /// repeats once. A line that is not UTF-8 is not guessed about (the line fallback) unless all
    /// three inputs hold it as it is. Hash sets throughout: thousands of copies cost thousands of
    /// steps, not millions.
    fn merge_duplicates(&mut self, id: &str) -> Result<Vec<Out<'a>>, Unmergeable> {
        let (b, o, t) = (self.b.lines_of(id), self.o.lines_of(id), self.t.lines_of(id));
        let bytes_of = |ls: &[Line<'a>]| -> FxHashSet<&'a [u8]> { ls.iter().map(|l| l.bytes).collect() };
        let (bb, ob, tb) = (bytes_of(&b), bytes_of(&o), bytes_of(&t));
        for (input, lines) in [(Input::Base, &b), (Input::Ours, &o), (Input::Theirs, &t)] {
            for l in lines {
                if std::str::from_utf8(l.bytes).is_err() && !(bb.contains(l.bytes) && ob.contains(l.bytes) && tb.contains(l.bytes)) {
                    return Err(Unmergeable { input, line: l.number, problem: LineProblem::InvalidUtf8 });
                }
            }
        }
        // A line's value as compact JSON with sorted keys (the raw bytes when it does not parse).
        let value_of = |l: &Line<'a>| -> Cow<'a, [u8]> {
            match serde_json::from_slice::<Value>(l.bytes) {
                Ok(v) => Cow::Owned(v.to_string().into_bytes()),
                Err(_) => Cow::Borrowed(l.bytes),
            }
        };
        let values = |ls: &[Line<'a>]| -> Vec<Cow<'a, [u8]>> { ls.iter().map(value_of).collect() };
        let (bv, ov, tv) = (values(&b), values(&o), values(&t));
        fn set<'v>(vs: &'v [Cow<'_, [u8]>]) -> FxHashSet<&'v [u8]> {
            vs.iter().map(AsRef::as_ref).collect()
        }
        let (bs, os, ts) = (set(&bv), set(&ov), set(&tv));
        let mut seen: FxHashSet<&'a [u8]> = FxHashSet::default();
        let mut kept: Vec<&'a [u8]> = Vec::new();
        for (l, v) in o.iter().zip(&ov) {
            if (ts.contains(v.as_ref()) || !bs.contains(v.as_ref())) && seen.insert(l.bytes) {
                kept.push(l.bytes);
            }
        }
        for (l, v) in t.iter().zip(&tv) {
            if !os.contains(v.as_ref()) && !bs.contains(v.as_ref()) && seen.insert(l.bytes) {
                kept.push(l.bytes);
            }
        }
        let numbers = |name: &str, ls: &[Line<'a>]| -> Option<String> {
            (ls.len() > 1).then(|| format!("{name} lines {}", ls.iter().map(|l| l.number.to_string()).collect::<Vec<_>>().join(", ")))
        };
        let places: Vec<String> = [numbers("base", &b), numbers("ours", &o), numbers("theirs", &t)].into_iter().flatten().collect();
        self.warnings.push(format!(
            "id {} appears on several lines ({}); merged its lines as a set of exact lines (run `bd-sync check`)",
            key_label(id),
            places.join("; ")
        ));
        Ok(kept.into_iter().map(|l| Out::Line(Cow::Borrowed(l))).collect())
    }

    /// The two sides' `updated_at` values of a record on one line (absent sides left out).
    fn side_stamps(&self, id: &str) -> Vec<Option<String>> {
        let stamp = |bytes: &[u8]| {
            RawObject::parse(bytes).ok().and_then(|o| o.get("updated_at").and_then(crate::record::parse_json_str).map(Cow::into_owned))
        };
        [self.o.single(id), self.t.single(id)].into_iter().flatten().map(|l| stamp(l.bytes)).collect()
    }

    /// After the outs of one id were pushed (`len` items now): the later issue of a collision is
    /// the last of them.
    fn note_renamed_item(&mut self, len: usize) {
        if let Some(c) = self.collisions.last_mut().filter(|c| c.item.is_none()) {
            c.item = Some(len - 1);
        }
    }

    /// An id both sides added for two different issues (README "Two issues created under one id"). A child id `P.N`: the
    /// earlier creation keeps it, stamped past both sides so the clone that held the other issue
    /// under it takes the replacement, and the later one is written too, to be moved to a free
    /// child number once every id is known ([`Self::apply_renames`]). Any other id cannot be
    /// renamed: a conflict under `--conflict markers`, else the policy's winner whole, stamped past
    /// both, and the other issue named in a warning.
    fn two_issues(&mut self, id: &str, ours: &Parsed<'a>, theirs: &Parsed<'a>, order: std::cmp::Ordering) -> Vec<Out<'a>> {
        let stamps = [stamp_of(&ours.value), stamp_of(&theirs.value)];
        let created = |p: &Parsed<'_>| p.value.get("created_at").map(Value::to_string).unwrap_or_default();
        let title = |p: &Parsed<'_>| crate::record::printable(p.value.get("title").and_then(Value::as_str).unwrap_or(""), 60);
        let stamped = |p: &Parsed<'a>| -> Cow<'a, [u8]> {
            let mut entries = p.obj.entries.clone();
            if writer::bump_updated_at(&mut entries, &stamps, self.options.now) {
                Cow::Owned(render_entries(&entries, p.obj.colon, p.obj.comma).into_bytes())
            } else {
                Cow::Borrowed(p.bytes)
            }
        };
        if rename::child_number(id).is_some() {
            let (earlier, later, later_side) = if order.is_lt() { (ours, theirs, Side::Theirs) } else { (theirs, ours, Side::Ours) };
            self.collisions.push(Collision { id: id.to_owned(), later: later_side, item: None });
            return vec![Out::Line(stamped(earlier)), Out::Line(Cow::Borrowed(later.bytes))];
        }
        if self.options.policy == ConflictPolicy::Markers {
            self.conflicts += 1;
            return vec![Out::Conflict(Box::new(Conflict {
                ours: Some(Cow::Borrowed(ours.bytes)),
                base: None,
                theirs: Some(Cow::Borrowed(theirs.bytes)),
            }))];
        }
        let (winner, reason) = match self.options.policy {
            ConflictPolicy::Ours => (Side::Ours, "--conflict ours"),
            ConflictPolicy::Theirs => (Side::Theirs, "--conflict theirs"),
            _ => newest(ours, theirs),
        };
        let (kept, dropped) = if winner == Side::Ours { (ours, theirs) } else { (theirs, ours) };
        let loser = if winner == Side::Ours { Side::Theirs } else { Side::Ours };
        self.warnings.push(format!(
            "{}: two different issues were created under this id (ours created {}, theirs {}); it has no child number to move one to, so the one from {winner} \"{}\" was kept ({reason}) and the one from {loser} was dropped: {}",
            key_label(id),
            created(ours),
            created(theirs),
            title(kept),
            crate::record::printable(&String::from_utf8_lossy(dropped.bytes), 2000)
        ));
        vec![Out::Line(stamped(kept))]
    }

    /// Gives each later issue of a collision a free child number under its parent (1 + the
    /// highest in any input, handed out in id order so the answer does not depend on the sides'
    /// order; checked, never wrapped: [`rename::ChildNumbers`]), rewrites its own id fields, makes
    /// the references its side wrote to it follow it, and reports each rename. One pass over the
    /// inputs' ids and one over what is written, however many collisions there are.
    fn apply_renames(&mut self, items: &mut [(Cow<'a, str>, Out<'a>)]) {
        if self.collisions.is_empty() {
            return;
        }
        let mut collisions = std::mem::take(&mut self.collisions);
        collisions.sort_by(|a, b| a.id.cmp(&b.id));
        let go_style = self.go_style();
        let mut numbers = rename::ChildNumbers::new(collisions.iter().filter_map(|c| rename::child_number(&c.id).map(|(p, _)| p)));
        for file in [self.b, self.o, self.t] {
            for key in file.keys() {
                numbers.note(&key);
            }
        }
        // The two issues of each collision are written whole from one side each: item -> side.
        let mut whole_from: FxHashMap<usize, Side> = FxHashMap::default();
        // Per side (ours, theirs): the ids that moved on that side, and where to.
        let mut moved: [FxHashMap<String, String>; 2] = [FxHashMap::default(), FxHashMap::default()];
        for c in &collisions {
            let Some((parent, _)) = rename::child_number(&c.id) else { continue };
            let Some(index) = c.item else { continue };
            let Some(n) = numbers.next_free(parent) else {
                self.warnings.push(format!(
                    "{}: two different issues were created under this id and no child number under {} is free to move one to",
                    key_label(&c.id),
                    key_label(parent)
                ));
                continue;
            };
            let to = format!("{parent}.{n}");
            let (key, Out::Line(line)) = &mut items[index] else { continue };
            let Some(renamed) = rename::rename_record(line, &c.id, &to, go_style) else { continue };
            *line = Cow::Owned(renamed.into_bytes());
            *key = Cow::Owned(to.clone());
            whole_from.insert(index, c.later);
            if let Some(kept) = index.checked_sub(1) {
                whole_from.insert(kept, c.later.other());
            }
            moved[c.later.index()].insert(c.id.clone(), to.clone());
            let rename = Rename { from: c.id.clone(), to, side: c.later };
            self.warnings.push(rename.warning(&c.later.to_string(), &c.later.other().to_string()));
            self.renames.push(rename);
        }
        if moved.iter().all(FxHashMap::is_empty) {
            return;
        }
        for (i, (id, out)) in items.iter_mut().enumerate() {
            let Out::Line(line) = out else { continue };
            let mut deps: FxHashMap<rename::Reference, String> = FxHashMap::default();
            let mut parent: Option<(String, String)> = None;
            let mut follow = |side: Side, refs: Vec<rename::Reference>, own_parent: Option<String>, other: Option<&[u8]>| {
                let moves = &moved[side.index()];
                // A reference the other side's version of this record holds too points at the
                // issue that kept the id (the other line is the same issue, never a moving one).
                let (other_refs, other_parent) = other.map(rename::references).unwrap_or_default();
                let other_refs: FxHashSet<&rename::Reference> = other_refs.iter().collect();
                for r in refs {
                    if let Some(to) = moves.get(&r.0) {
                        if !other_refs.contains(&r) {
                            deps.insert(r, to.clone());
                        }
                    }
                }
                if let Some(p) = own_parent {
                    if let Some(to) = moves.get(&p).filter(|_| other_parent.as_deref() != Some(p.as_str())) {
                        parent = Some((p, to.clone()));
                    }
                }
            };
            match whole_from.get(&i) {
                // One of a collision's two issues: everything in it is what its side wrote.
                Some(&side) => {
                    if moved[side.index()].is_empty() || !rename::mentions_references(line) {
                        continue;
                    }
                    let (refs, own_parent) = rename::references(line);
                    follow(side, refs, own_parent, None);
                }
                // Any other record: the references a side added or changed.
                None => {
                    for side in [Side::Ours, Side::Theirs] {
                        if moved[side.index()].is_empty() {
                            continue;
                        }
                        let (file, other) = if side == Side::Ours { (self.o, self.t) } else { (self.t, self.o) };
                        let Some(side_line) = file.single(id).map(|l| l.bytes) else { continue };
                        if !rename::mentions_references(side_line) || self.b.single(id).is_some_and(|l| l.bytes == side_line) {
                            continue;
                        }
                        let (refs, own_parent) = rename::references(side_line);
                        follow(side, refs, own_parent, other.single(id).map(|l| l.bytes));
                    }
                }
            }
            if deps.is_empty() && parent.is_none() {
                continue;
            }
            let stamps = self.stamps_for(id, line);
            let parent = parent.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
            if let Some(text) = rename::follow_references(line, &deps, parent, go_style, &stamps, self.options.now) {
                *line = Cow::Owned(text.into_bytes());
            }
        }
    }

    /// The stamps a change to the written record `id` is ticked past: both sides' `updated_at`,
    /// or, for a record this merge renamed (no side has its id), its own.
    fn stamps_for(&self, id: &str, line: &[u8]) -> Vec<Option<String>> {
        let stamps = self.side_stamps(id);
        if !stamps.is_empty() {
            return stamps;
        }
        vec![RawObject::parse(line).ok().and_then(|o| o.get("updated_at").and_then(crate::record::parse_json_str).map(Cow::into_owned))]
    }

    /// Makes the derived counts of the records the merge wrote true (README "Derived fields"): those of every
    /// record whose line is not ours' as it was, and the `dependent_count` of every record a
    /// `blocks` dependency now points at more or fewer times than in ours.
    fn fix_derived(&mut self, items: &mut [(Cow<'a, str>, Out<'a>)]) {
        let written = derived::dependents(items.iter().filter_map(|(_, out)| match out {
            Out::Line(l) => Some(l.as_ref()),
            Out::Conflict(_) => None,
        }));
        let before = derived::dependents(self.o.lines());
        let go_style = self.go_style();
        for (id, out) in items.iter_mut() {
            let Out::Line(line) = out else { continue };
            let unchanged = self.o.single(id).is_some_and(|l| l.bytes == line.as_ref());
            if unchanged && written.get(id.as_ref()) == before.get(id.as_ref()) {
                continue;
            }
            if let Some(text) = derived::fix_line(line, &written, go_style) {
                *line = Cow::Owned(text.into_bytes());
            }
        }
    }

    /// No two comments in the written file share an id, whoever wrote them (a clone's comment
    /// ids are its own database's): what the collision rule for added comments leaves is
    /// renumbered file-wide, and each record so changed is stamped like any merged record.
    fn renumber_shared_comments(&self, items: &mut [(Cow<'a, str>, Out<'a>)]) {
        let at: Vec<usize> = (0..items.len()).filter(|&i| matches!(items[i].1, Out::Line(_))).collect();
        let lines: Vec<&[u8]> = at
            .iter()
            .map(|&i| match &items[i].1 {
                Out::Line(l) => l.as_ref(),
                Out::Conflict(_) => &[][..],
            })
            .collect();
        let changes = writer::shared_comment_ids(&lines);
        if changes.is_empty() {
            return;
        }
        let mut by_line: HashMap<usize, Vec<&writer::Renumbering>> = HashMap::new();
        for (line, change) in &changes {
            by_line.entry(at[*line]).or_default().push(change);
        }
        for (index, mine) in by_line {
            let (id, Out::Line(line)) = &mut items[index] else { continue };
            let side_stamps = self.stamps_for(id, line);
            if let Some(text) = writer::apply_renumbering(line, &mine, &side_stamps, self.options.now) {
                *line = Cow::Owned(text.into_bytes());
            }
        }
    }

    /// Comments added on both sides with the same id get distinct ids.
    fn renumber_comments(&self, items: &mut [(Cow<'a, str>, Out<'a>)]) {
        let finder = memchr::memmem::Finder::new(writer::COMMENTS_KEY);
        let touched = &self.touched;
        // `side`: 1 ours, 2 theirs (the lines were kept when the records were merged).
        let added = |side: usize| -> Vec<writer::AddedComment> {
            let mut out = Vec::new();
            for (id, lines) in touched {
                let (Some(line), base) = (lines[side], lines[0]) else {
                    continue;
                };
                if base != Some(line) && finder.find(line).is_some() {
                    out.extend(writer::added_comments(id, base, line));
                }
            }
            out
        };
        let (ours, theirs) = (added(1), added(2));
        if ours.is_empty() || theirs.is_empty() {
            return;
        }
        // Only now is the highest comment id of each side needed: a pass over every line. The
        // two sides are independent: read them on two threads.
        let highest_of = |side: &Indexed<'a>| writer::highest_comment_id(side.lines());
        let (ours_highest, theirs_highest) = std::thread::scope(|s| {
            let theirs_file = self.t;
            let other = s.spawn(|| highest_of(theirs_file));
            let mine = highest_of(self.o);
            (mine, other.join().expect("reading comments does not panic"))
        });
        let highest = ours_highest.max(theirs_highest);
        let changes = writer::renumber_collisions(&ours, &theirs, highest);
        if changes.is_empty() {
            return;
        }
        let mut by_record: rustc_hash::FxHashMap<&str, Vec<&writer::Renumbering>> = rustc_hash::FxHashMap::default();
        for change in &changes {
            by_record.entry(change.record.as_str()).or_default().push(change);
        }
        for (id, out) in items.iter_mut() {
            let Some(mine) = by_record.get(id.as_ref()) else { continue };
            let Out::Line(line) = out else { continue };
            let side_stamps = self.side_stamps(id);
            if let Some(text) = writer::apply_renumbering(line, mine, &side_stamps, self.options.now) {
                *line = Cow::Owned(text.into_bytes());
            }
        }
    }

    /// The items without their keys (collected in place: no second list of a million entries).
    fn render(items: Vec<(Cow<'a, str>, Out<'a>)>) -> Vec<Out<'a>> {
        items.into_iter().map(|(_, out)| out).collect()
    }
}

/// A record's `updated_at`, when it is a string.
pub(crate) fn stamp_of(value: &Value) -> Option<String> {
    value.get("updated_at").and_then(Value::as_str).map(str::to_owned)
}

/// The side whose record has the later `updated_at`; a tie goes to the record that sorts greater
/// as compact JSON with sorted keys, so swapping the sides never changes the answer.
fn newest(ours: &Parsed<'_>, theirs: &Parsed<'_>) -> (Side, &'static str) {
    let stamp = |p: &Parsed<'_>| p.value.get("updated_at").and_then(Value::as_str).map(str::to_owned);
    let order = match (stamp(ours), stamp(theirs)) {
        (Some(a), Some(b)) => timestamp::compare(&a, &b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    };
    match order {
        std::cmp::Ordering::Greater => (Side::Ours, "ours has the newer updated_at"),
        std::cmp::Ordering::Less => (Side::Theirs, "theirs has the newer updated_at"),
        std::cmp::Ordering::Equal => {
            // Compact JSON with sorted keys (serde_json's map is ordered by key here).
            let (ours_text, theirs_text) = (ours.value.to_string(), theirs.value.to_string());
            if ours_text >= theirs_text {
                (Side::Ours, "same updated_at; tie broken by record content")
            } else {
                (Side::Theirs, "same updated_at; tie broken by record content")
            }
        }
    }
}

//! The join: every key of the three inputs visited once, either by walking inputs sorted by key
//! side by side ([`merge_sorted`]) or through a hash index of each ([`merge_indexed`]), each key
//! handed to the per-id decisions ([`super::decide`]) and the result to the finishing passes
//! ([`super::finish`]). Both paths give the same bytes.

use std::borrow::Cow;

use super::collisions::{self, Planned};
use super::decide::Merger;
use super::finish::{Mentions, Order};
use super::inputs::{check_bad_lines, collapse_repeats, only_moved, worth_threads, At, Index, Indexed};
use super::sorted::{self, SortedIndex};
use super::types::{Input, Markers, MergeOptions, Merged, Out, Rename, Unmergeable, Warning};
use crate::index::IdIndex;
use crate::jsonl::{self, Jsonl, Layout};
use crate::record::key_label;

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
pub(super) fn ours_as_it_is<'a>(base: &[u8], ours: &'a [u8], theirs: &[u8]) -> Option<Merged<'a>> {
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
        source: ours,
        conflicts: 0,
        needs_review: false,
        reports: Vec::new(),
        warnings: Vec::new(),
        renames: Vec::new(),
        written_twice: Vec::new(),
        collided: Vec::new(),
    })
}

/// What the whole-file passes (comment ids, derived counts) need to know of the sides; nothing
/// when ours is base, byte for byte: the result is then theirs' records as theirs wrote them, the
/// mirror of [`ours_as_it_is`], so the result does not depend on which side is which.
fn whole_file_mentions(base: &[u8], ours: &[u8], theirs: &[u8]) -> Mentions {
    if ours == base {
        Mentions::NONE
    } else {
        Mentions::of(ours, theirs)
    }
}

/// [`merge`] through a hash index of each input, whatever their order. Public for the tests that
/// hold the two paths to the same result.
#[doc(hidden)]
pub fn merge_indexed<'a>(base: &'a [u8], ours: &'a [u8], theirs: &'a [u8], options: &MergeOptions) -> Result<Merged<'a>, Unmergeable> {
    let first = indexed_once(base, ours, theirs, options)?;
    settle_collisions(first, [base, ours, theirs], options)
}

/// The merge of re-keyed inputs: sorted when they still are, else through the index.
fn merge_once<'b>(base: &'b [u8], ours: &'b [u8], theirs: &'b [u8], options: &MergeOptions) -> Result<Merged<'b>, Unmergeable> {
    match sorted_once(base, ours, theirs, options) {
        Some(result) => result,
        None => indexed_once(base, ours, theirs, options),
    }
}

/// Settles the ids ours and theirs hold for two issues, as br 0.7.6 settles them
/// ([`collisions`]): when the first pass found any, the inputs are re-keyed by the plan and
/// merged again, and each move is reported. When no free id can be minted the first pass stands:
/// both issues between conflict markers, nothing dropped.
fn settle_collisions<'a>(mut first: Merged<'a>, inputs: [&'a [u8]; 3], options: &MergeOptions) -> Result<Merged<'a>, Unmergeable> {
    if first.collided.is_empty() {
        return Ok(first);
    }
    let [base, ours, theirs] = inputs;
    let plan = match collisions::plan(base, ours, theirs) {
        Planned::Plan(plan) => plan,
        Planned::Nothing => return Ok(first),
        Planned::Unresolved(ids) => {
            first.warnings.push(Warning::Note(format!(
                "{}: two different issues under one id, and no free id can be minted for the later one (an id the tracker cannot parse, \
                    or every candidate taken); both are left between conflict markers",
                ids.iter().map(|id| key_label(id).into_owned()).collect::<Vec<_>>().join(", ")
            )));
            return Ok(first);
        }
    };
    let go_style = crate::record::uses_go_escapes(ours);
    let none = rustc_hash::FxHashSet::default();
    let rekeyed = [
        collisions::rekey(base, &plan.renames[0], &plan.base_drops, go_style),
        collisions::rekey(ours, &plan.renames[1], &none, go_style),
        collisions::rekey(theirs, &plan.renames[2], &none, go_style),
    ];
    let mut second = merge_once(&rekeyed[0], &rekeyed[1], &rekeyed[2], options)?.into_owned();
    if !second.collided.is_empty() {
        // Cannot happen (the plan gives each issue an id of its own); the first pass loses nothing.
        return Ok(first);
    }
    for c in plan.collisions {
        let moved = c.kept.other();
        let rename = Rename { from: c.id, to: c.moved_to, side: moved };
        second.warnings.push(rename.warning(&moved.to_string(), &c.kept.to_string()));
        second.renames.push(rename);
    }
    Ok(second)
}

/// One pass of [`merge_indexed`].
fn indexed_once<'a>(base: &'a [u8], ours: &'a [u8], theirs: &'a [u8], options: &MergeOptions) -> Result<Merged<'a>, Unmergeable> {
    if let Some(merged) = ours_as_it_is(base, ours, theirs) {
        return Ok(merged);
    }
    // Indexing is most of the work on big files: spread the three inputs over two threads.
    let index = || (Indexed::new(Input::Base, base), Indexed::new(Input::Theirs, theirs));
    let (b, o, t, mentions) = if worth_threads(base.len() + ours.len() + theirs.len()) {
        std::thread::scope(|s| {
            let other = s.spawn(index);
            let o = Indexed::new(Input::Ours, ours);
            let mentions = whole_file_mentions(base, ours, theirs);
            let (b, t) = other.join().expect("indexing does not panic");
            (b, o, t, mentions)
        })
    } else {
        let (b, t) = index();
        (b, Indexed::new(Input::Ours, ours), t, whole_file_mentions(base, ours, theirs))
    };
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
    }
    let gone = |side: &IdIndex<'_>| bi.ids.keys().filter(|id| !side.ids.contains_key(*id)).count();
    let gone = [gone(oi), gone(ti)];
    // Ours only moved lines (bd does not sort its export, docs/trackers.md), or none: it is
    // unchanged, so the result keeps the order of theirs, the side that changed content (as git
    // takes theirs whole when ours is base).
    let order = if only_moved(bi, oi) && !only_moved(bi, ti) {
        Order::Theirs
    } else if oi.sorted_by_id() {
        Order::Sorted
    } else {
        Order::Ours
    };
    Ok(m.finish(items, bi.ids.len(), gone, order, (ours, theirs), mentions))
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
    Some(sorted_once(base, ours, theirs, options)?.and_then(|first| settle_collisions(first, [base, ours, theirs], options)))
}

/// One pass of [`merge_sorted`].
fn sorted_once<'a>(base: &'a [u8], ours: &'a [u8], theirs: &'a [u8], options: &MergeOptions) -> Option<Result<Merged<'a>, Unmergeable>> {
    if let Some(merged) = ours_as_it_is(base, ours, theirs) {
        return Some(Ok(merged));
    }
    // A thread per file, the scans for `Mentions` beside: the work is shared out evenly over
    // the cores there are.
    let (b, o, t, mentions) = if worth_threads(base.len() + ours.len() + theirs.len()) {
        std::thread::scope(|s| {
            let b = s.spawn(|| SortedIndex::new(base));
            let t = s.spawn(|| SortedIndex::new(theirs));
            let mentions = s.spawn(|| whole_file_mentions(base, ours, theirs));
            let o = SortedIndex::new(ours);
            let join = |h| std::thread::ScopedJoinHandle::join(h).expect("indexing does not panic");
            (join(b), o, join(t), mentions.join().expect("scanning does not panic"))
        })
    } else {
        (SortedIndex::new(base), SortedIndex::new(ours), SortedIndex::new(theirs), whole_file_mentions(base, ours, theirs))
    };
    let (b, o, t) = (b?, o?, t?);
    let (b, o, t) = (
        Indexed { input: Input::Base, index: Index::Sorted(b) },
        Indexed { input: Input::Ours, index: Index::Sorted(o) },
        Indexed { input: Input::Theirs, index: Index::Sorted(t) },
    );
    let (Index::Sorted(bi), Index::Sorted(oi), Index::Sorted(ti)) = (&b.index, &o.index, &t.index) else {
        unreachable!("built sorted just above")
    };
    // The walk is split in two at a key, and the halves walked on two threads: each key's
    // decision depends on that key's lines alone, and the halves' results are put together in
    // key order, so the result is the one walk's.
    let split = sorted::split_point([bi, oi, ti]);
    let inputs = [&b, &o, &t];
    // An error at a key ours has ends the one walk there, so it ends the second half too (whose
    // results would be thrown away); an error in the second half cannot stop the first, which
    // may hold an earlier one.
    let failed = std::sync::atomic::AtomicBool::new(false);
    let (first, second) = match split {
        None => (walk(inputs, options, ours, ([0; 3], None), Halt::Signal(&failed)), None),
        Some((key, at)) => std::thread::scope(|s| {
            let second = s.spawn(|| walk(inputs, options, ours, (at, None), Halt::Watch(&failed)));
            let first = walk(inputs, options, ours, ([0; 3], Some(&key)), Halt::Signal(&failed));
            (first, Some(second.join().expect("merging does not panic")))
        }),
    };
    let mut m = Merger::new([&b, &o, &t], options, ours, Vec::new());
    let mut items = first.items;
    let mut gone = first.gone;
    let mut later = (first.later_reports, first.later_warnings);
    let mut errors = (first.error, first.later_error);
    m.absorb(first.merger);
    if let Some(second) = second {
        items.extend(second.items);
        gone = [gone[0] + second.gone[0], gone[1] + second.gone[1]];
        later.0.extend(second.later_reports);
        later.1.extend(second.later_warnings);
        errors = (errors.0.or(second.error), errors.1.or(second.later_error));
        m.absorb(second.merger);
    }
    // An error at a key ours has ends the walk at once; one at a key only theirs has, after it.
    if let Some(e) = errors.0.or(errors.1) {
        return Some(Err(e));
    }
    m.reports.extend(later.0);
    m.warnings.extend(later.1);
    Some(Ok(m.finish(items, bi.len(), gone, Order::Sorted, (ours, theirs), mentions)))
}

/// What one part of the walk of [`merge_sorted`] gathered, in key order.
struct Walked<'m, 'a> {
    merger: Merger<'m, 'a>,
    items: Vec<(Cow<'a, str>, Out<'a>)>,
    gone: [usize; 2],
    /// What the merge of keys only theirs has reported and warned (the hashed path merges those
    /// after ours' keys, so they come last).
    later_reports: Vec<super::types::Report>,
    later_warnings: Vec<super::types::Warning>,
    /// The first error at a key ours has, and the first at a key only theirs has.
    error: Option<Unmergeable>,
    later_error: Option<Unmergeable>,
}

/// How a part of a split walk takes an error at a key ours has in the part before it.
#[derive(Clone, Copy)]
enum Halt<'f> {
    /// This part raises the flag when it meets one.
    Signal(&'f std::sync::atomic::AtomicBool),
    /// This part stops as soon as the flag is raised.
    Watch(&'f std::sync::atomic::AtomicBool),
}

/// Walks the sorted inputs from the line indexes `from` up to (not including) the key `until`
/// (to the end when `None`), deciding each key.
fn walk<'m, 'a>(
    inputs: [&'m Indexed<'a>; 3],
    options: &'m MergeOptions,
    ours: &'a [u8],
    (from, until): ([u32; 3], Option<&str>),
    halt: Halt<'_>,
) -> Walked<'m, 'a> {
    use std::sync::atomic::Ordering;
    let [b, o, t] = inputs;
    let (Index::Sorted(bi), Index::Sorted(oi), Index::Sorted(ti)) = (&b.index, &o.index, &t.index) else {
        unreachable!("merge_sorted walks sorted inputs")
    };
    let mut w = Walked {
        merger: Merger::new(inputs, options, ours, Vec::new()),
        items: Vec::with_capacity(usize::midpoint(oi.len(), ti.len() / 16)),
        gone: [0; 2],
        later_reports: Vec::new(),
        later_warnings: Vec::new(),
        error: None,
        later_error: None,
    };
    let m = &mut w.merger;
    let walked = sorted::join([bi, oi, ti], from, until, |key, step| {
        if let Halt::Watch(flag) = halt {
            if flag.load(Ordering::Relaxed) {
                return Err(None);
            }
        }
        let [in_base, in_ours, in_theirs] = step;
        if in_base.is_some() {
            w.gone[0] += usize::from(in_ours.is_none());
            w.gone[1] += usize::from(in_theirs.is_none());
        }
        if in_ours.is_none() && in_theirs.is_none() {
            return Ok(());
        }
        let (reports, warnings) = (m.reports.len(), m.warnings.len());
        let outs = match m.merge_at(&key, step.map(|n| n.map(At::One))) {
            Ok(outs) => outs,
            Err(e) if in_ours.is_none() => {
                w.later_error.get_or_insert(e);
                return Ok(());
            }
            Err(e) => {
                if let Halt::Signal(flag) = halt {
                    flag.store(true, Ordering::Relaxed);
                }
                return Err(Some(e));
            }
        };
        for out in outs {
            w.items.push((key.clone(), out));
        }
        if in_ours.is_none() {
            w.later_reports.extend(m.reports.drain(reports..));
            w.later_warnings.extend(m.warnings.drain(warnings..));
        }
        Ok(())
    });
    // `None`: stopped because the part before failed (its error is the one returned).
    if let Err(Some(e)) = walked {
        w.error = Some(e);
    }
    w
}

/// Merges an append-only log (bd's `interactions.jsonl`, the legacy `deletions.jsonl`): records
/// are written once and never changed, so the result is the set of lines of both sides. Ours'
/// lines in their order, then theirs' additions in theirs' order; an identical repeat collapses to
/// one; a line present in base and removed by one side (a compaction) stays removed. Never a
/// conflict, and nothing is parsed, so it cannot fail on any input. Layout follows ours.
pub fn merge_append_only(base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    use std::collections::HashSet;
    pub(super) fn set<'a>(f: &Jsonl<'a>) -> HashSet<&'a [u8]> {
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

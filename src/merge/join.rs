//! The join: every key of the three inputs visited once, either by walking inputs sorted by key
//! side by side ([`merge_sorted`]) or through a hash index of each ([`merge_indexed`]), each key
//! handed to the per-id decisions ([`super::decide`]) and the result to the finishing passes
//! ([`super::finish`]). Both paths give the same bytes.

use std::borrow::Cow;

use super::decide::Merger;
use super::finish::Order;
use super::inputs::{check_bad_lines, collapse_repeats, only_moved, At, Index, Indexed};
use super::sorted::{self, SortedIndex};
use super::types::{Input, Markers, MergeOptions, Merged, Out, Unmergeable};
use crate::index::IdIndex;
use crate::jsonl::{self, Jsonl, Layout};

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

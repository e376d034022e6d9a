//! The finishing passes, run once every key is merged: the mass-deletion warnings, comment ids
//! made distinct ([`super::comments`]), issues created under one id moved to free child numbers
//! and the references to them followed ([`super::rename`]), derived counts made true
//! ([`super::derived`]), the lines put in order, and the check that no id is written twice.

use std::borrow::Cow;
use std::collections::HashMap;

use rustc_hash::{FxHashMap, FxHashSet};

use super::decide::Merger;
use super::inputs::{At, Indexed};
use super::types::{ConflictPolicy, Merged, Out, Side, Warning};
use super::{comments, derived};
use crate::record::{key_order, RawObject};

/// The order of the merged lines.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// bd's order (ours is sorted that way).
    Sorted,
    /// Ours' order, then theirs' additions.
    Ours,
    /// Theirs' order: ours only moved lines.
    Theirs,
}

/// What the whole-file passes need to know of ours and theirs (each `[ours, theirs]`): whether
/// a line mentions comments, and whether one may carry a derived count. Each is a scan of a
/// whole file, so the join finds them while the inputs are indexed, on the thread that waits.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mentions {
    comments: [bool; 2],
    counts: [bool; 2],
}

impl Mentions {
    /// Nothing for the whole-file passes to do: none of them runs.
    pub(super) const NONE: Mentions = Mentions { comments: [false; 2], counts: [false; 2] };

    /// Scans ours and theirs.
    pub(super) fn of(ours: &[u8], theirs: &[u8]) -> Mentions {
        Mentions {
            comments: [comments::mentions_comments(ours), comments::mentions_comments(theirs)],
            counts: [derived::mentions_counts(ours), derived::mentions_counts(theirs)],
        }
    }
}

impl<'a> Merger<'_, 'a> {
    /// What both paths do once every key is merged: the mass-deletion warnings (`gone`: how many
    /// of the base's `base_records` keys ours and theirs lack), the whole-file rules (comment
    /// ids, renames, derived counts), bd's order when ours has it, and the rendered lines.
    pub(super) fn finish(
        mut self,
        mut items: Vec<(Cow<'a, str>, Out<'a>)>,
        base_records: usize,
        gone: [usize; 2],
        order: Order,
        (ours, theirs): (&'a [u8], &'a [u8]),
        mentions: Mentions,
    ) -> Merged<'a> {
        let options = self.options;
        for ((side, file), gone) in [(Side::Ours, self.o), (Side::Theirs, self.t)].into_iter().zip(gone) {
            if base_records >= 2 && gone * 2 > base_records {
                self.warnings.push(Warning::Note(format!(
                    "{side} deletes {gone} of the {base_records} records of the base ({}%){}; if that was not meant (a truncated or \
                        emptied file), redo the merge",
                    gone * 100 / base_records,
                    if file.is_empty() { ": its file is empty" } else { "" }
                )));
                self.mass_deletion = true;
            }
        }
        if mentions.comments == [true, true] {
            self.renumber_comments(&mut items);
        }
        if mentions.comments.contains(&true) {
            self.renumber_shared_comments(&mut items);
        }
        if !options.partial && mentions.counts.contains(&true) {
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
            source: ours,
            conflicts: self.conflicts,
            needs_review,
            reports: self.reports,
            warnings: self.warnings,
            renames: Vec::new(),
            written_twice,
            collided: self.collided,
        }
    }

    /// The ids the merge would write on more than one line though no input has them on several
    /// (README "Renames": the writer refuses such a result). Empty for every sound merge; the
    /// check is one pass over the keys, and a second over the lines of repeated keys only.
    pub(super) fn ids_written_twice(&self, items: &[(Cow<'a, str>, Out<'a>)]) -> Vec<String> {
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

    /// The `updated_at` values a change to the written record `id` is stamped past: both sides' `updated_at`,
    /// or, for a record this merge renamed (no side has its id), its own.
    pub(super) fn updated_at_before(&self, id: &str, line: &[u8]) -> Vec<Option<String>> {
        let sides = self.sides_updated_at(id);
        if !sides.is_empty() {
            return sides;
        }
        vec![RawObject::parse(line).ok().and_then(|o| o.get("updated_at").and_then(crate::record::parse_json_str).map(Cow::into_owned))]
    }

    /// Makes the derived counts of the records the merge wrote true (README "Derived fields"): those of every
    /// record whose line is not ours' as it was, and the `dependent_count` of every record a
    /// `blocks` dependency now points at more or fewer times than in ours.
    pub(super) fn fix_derived(&mut self, items: &mut [(Cow<'a, str>, Out<'a>)]) {
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
    pub(super) fn renumber_shared_comments(&self, items: &mut [(Cow<'a, str>, Out<'a>)]) {
        let at: Vec<usize> = (0..items.len()).filter(|&i| matches!(items[i].1, Out::Line(_))).collect();
        let lines: Vec<&[u8]> = at
            .iter()
            .map(|&i| match &items[i].1 {
                Out::Line(l) => l.as_ref(),
                Out::Conflict(_) => &[][..],
            })
            .collect();
        let sides_highest = || comments::highest_comment_id(self.o.lines()).max(comments::highest_comment_id(self.t.lines()));
        let changes = comments::shared_comment_ids(&lines, sides_highest);
        if changes.is_empty() {
            return;
        }
        let mut by_line: HashMap<usize, Vec<&comments::Renumbering>> = HashMap::new();
        for (line, change) in &changes {
            by_line.entry(at[*line]).or_default().push(change);
        }
        for (index, mine) in by_line {
            let (id, Out::Line(line)) = &mut items[index] else { continue };
            let sides_updated_at = self.updated_at_before(id, line);
            if let Some(text) = comments::apply_renumbering(line, &mine, &sides_updated_at, self.options.now) {
                *line = Cow::Owned(text.into_bytes());
            }
        }
    }

    /// Comments added on both sides with the same id get distinct ids.
    pub(super) fn renumber_comments(&self, items: &mut [(Cow<'a, str>, Out<'a>)]) {
        let finder = memchr::memmem::Finder::new(comments::COMMENTS_KEY);
        let touched = &self.touched;
        // `side`: 1 ours, 2 theirs (the lines were kept when the records were merged).
        let added = |side: usize| -> Vec<comments::AddedComment> {
            let mut out = Vec::new();
            for (id, lines) in touched {
                let (Some(line), base) = (lines[side], lines[0]) else {
                    continue;
                };
                if base != Some(line) && finder.find(line).is_some() {
                    out.extend(comments::added_comments(id, base, line));
                }
            }
            out
        };
        // Each side on its own thread: the comments it added and, when it added any, its highest
        // comment id (a pass over every line, needed only when both sides added some; a side
        // that added none costs nothing).
        let side = |n: usize, file: &Indexed<'a>| {
            let added = added(n);
            let highest = if added.is_empty() { 0 } else { comments::highest_comment_id(file.lines()) };
            (added, highest)
        };
        let ((ours, ours_highest), (theirs, theirs_highest)) = if super::inputs::worth_threads(2 * self.ours_bytes.len()) {
            std::thread::scope(|s| {
                let theirs_file = self.t;
                let other = s.spawn(|| side(2, theirs_file));
                let mine = side(1, self.o);
                (mine, other.join().expect("reading comments does not panic"))
            })
        } else {
            (side(1, self.o), side(2, self.t))
        };
        if ours.is_empty() || theirs.is_empty() {
            return;
        }
        let highest = ours_highest.max(theirs_highest);
        let changes = comments::renumber_collisions(&ours, &theirs, highest);
        if changes.is_empty() {
            return;
        }
        let mut by_record: rustc_hash::FxHashMap<&str, Vec<&comments::Renumbering>> = rustc_hash::FxHashMap::default();
        for change in &changes {
            by_record.entry(change.record.as_str()).or_default().push(change);
        }
        // Each record is rewritten on its own: many are shared out over two threads.
        let (o, t, now) = (self.o, self.t, self.options.now);
        let apply = |items: &mut [(Cow<'a, str>, Out<'a>)]| {
            for (id, out) in items.iter_mut() {
                let Some(mine) = by_record.get(id.as_ref()) else { continue };
                let Out::Line(line) = out else { continue };
                let sides_updated_at = super::decide::sides_updated_at(o, t, id);
                if let Some(text) = comments::apply_renumbering(line, mine, &sides_updated_at, now) {
                    *line = Cow::Owned(text.into_bytes());
                }
            }
        };
        if changes.len() < 256 {
            apply(items);
        } else {
            let (first, second) = items.split_at_mut(items.len() / 2);
            std::thread::scope(|s| {
                s.spawn(|| apply(second));
                apply(first);
            });
        }
    }

    /// The items without their keys (collected in place: no second list of a million entries).
    pub(super) fn render(items: Vec<(Cow<'a, str>, Out<'a>)>) -> Vec<Out<'a>> {
        items.into_iter().map(|(_, out)| out).collect()
    }
}

//! Line-level three-way merge of multi-line strings (descriptions, notes, design...).
//!
//! Two agents appending to different parts of a description should both keep their edits; only
//! edits that touch the same or adjacent lines are a real conflict. This is a small diff3 built on
//! the `similar` crate: diff base->ours and base->theirs, group hunks that overlap or touch, and
//! take a group's text when only one side changed it or both changed it identically.
//!
//! A line diff costs O((N+M)·D) for N and M lines and D edits, and a stranger's file can make D
//! as large as N (README "Linear work"): each diff is first measured against a bound on its steps
//! ([`line_diff_fits`]), and past it the value is not merged by lines at all
//! ([`TextMerge::TooLarge`]): the caller decides it whole and says so.

use rustc_hash::FxHashMap;
use similar::{capture_diff_slices, Algorithm, DiffOp};

/// The most steps one line diff may take (a step: one diagonal of the search, or one line of a
/// common run followed along it). A few edits in a long text stay far below it; a value edited on
/// every line (a 16,000-line description rewritten on both sides) would otherwise cost seconds,
/// and an 8 MB one an hour. A count, not a clock: the answer is the same on every machine.
pub const LINE_DIFF_BUDGET: u64 = 4_000_000;

/// Whether a line diff of `a` against `b` fits in [`LINE_DIFF_BUDGET`]: the forward pass of
/// Myers' algorithm over the lines between the common prefix and suffix, counting its steps and
/// stopping past the budget. Linear in the input, plus at most the budget.
pub fn line_diff_fits<T: PartialEq>(a: &[T], b: &[T]) -> bool {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return true;
    }
    if n.max(m) as u64 > LINE_DIFF_BUDGET {
        return false;
    }
    // Each round d costs at least d + 1 steps, so d stays below the square root of twice the
    // budget: that many diagonals either way are all the search can reach.
    let reach = (n + m).min(2 * LINE_DIFF_BUDGET.isqrt() as usize + 2);
    let offset = reach as isize + 1;
    // The furthest x reached on each diagonal k = x - y.
    let mut v = vec![0usize; 2 * reach + 3];
    let mut steps: u64 = 0;
    for d in 0..=reach as isize {
        let mut k = -d;
        while k <= d {
            let at = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[at - 1] < v[at + 1]) { v[at + 1] } else { v[at - 1] + 1 };
            let mut y = (x as isize - k).max(0) as usize;
            while x < n && y < m && a[x] == b[y] {
                x += 1;
                y += 1;
                steps += 1;
            }
            v[at] = x;
            steps += 1;
            if x >= n && y >= m {
                return true;
            }
            if steps > LINE_DIFF_BUDGET {
                return false;
            }
            k += 2;
        }
    }
    false
}

/// Lines as small numbers (equal lines, equal numbers), so the diffs compare numbers, not text.
fn numbered<'a>(texts: [&[&'a str]; 3]) -> [Vec<u32>; 3] {
    let mut ids: FxHashMap<&'a str, u32> = FxHashMap::default();
    texts.map(|lines| {
        lines
            .iter()
            .map(|l| {
                let next = ids.len() as u32;
                *ids.entry(l).or_insert(next)
            })
            .collect()
    })
}

/// A change of one side: base lines `base_start..base_end` become `new` lines of that side.
#[derive(Debug, Clone, Copy)]
struct Hunk {
    base_start: usize,
    base_end: usize,
    new_start: usize,
    new_end: usize,
    theirs: bool,
}

fn hunks(base: &[u32], side: &[u32], theirs: bool) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, base, side) {
        let (old, new) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete { old_index, old_len, new_index } => (old_index..old_index + old_len, new_index..new_index),
            DiffOp::Insert { old_index, new_index, new_len } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace { old_index, old_len, new_index, new_len } => (old_index..old_index + old_len, new_index..new_index + new_len),
        };
        match out.last_mut() {
            Some(last) if last.base_end == old.start && last.new_end == new.start => {
                last.base_end = old.end;
                last.new_end = new.end;
            }
            _ => out.push(Hunk { base_start: old.start, base_end: old.end, new_start: new.start, new_end: new.end, theirs }),
        }
    }
    out
}

/// The text one side has for base lines `start..end`, given that side's hunks inside the range.
fn side_text<'a>(base: &[&'a str], side: &[&'a str], hunks: &[&Hunk], start: usize, end: usize) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut pos = start;
    for h in hunks {
        out.extend_from_slice(&base[pos..h.base_start]);
        out.extend_from_slice(&side[h.new_start..h.new_end]);
        pos = h.base_end;
    }
    out.extend_from_slice(&base[pos..end]);
    out
}

/// What a line merge of one value came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextMerge {
    /// The edits do not overlap: the merged text.
    Merged(String),
    /// Edits overlap or touch: the policy decides.
    Conflict,
    /// A diff would pass [`LINE_DIFF_BUDGET`]: the value is decided whole, and the caller says so.
    TooLarge {
        /// Lines in base, ours and theirs.
        lines: [usize; 3],
    },
}

/// Merges `ours` and `theirs` against `base` line by line. `None` when edits overlap or the
/// diffs would pass the bound (see [`merge_text_bounded`] to tell the two apart).
pub fn merge_text(base: &str, ours: &str, theirs: &str) -> Option<String> {
    match merge_text_bounded(base, ours, theirs) {
        TextMerge::Merged(text) => Some(text),
        TextMerge::Conflict | TextMerge::TooLarge { .. } => None,
    }
}

/// Merges `ours` and `theirs` against `base` line by line, within [`LINE_DIFF_BUDGET`].
pub fn merge_text_bounded(base: &str, ours: &str, theirs: &str) -> TextMerge {
    if ours == theirs || theirs == base {
        return TextMerge::Merged(ours.to_owned());
    }
    if ours == base {
        return TextMerge::Merged(theirs.to_owned());
    }
    let b: Vec<&str> = base.split_inclusive('\n').collect();
    let o: Vec<&str> = ours.split_inclusive('\n').collect();
    let t: Vec<&str> = theirs.split_inclusive('\n').collect();
    let [bn, on, tn] = numbered([&b, &o, &t]);
    if !line_diff_fits(&bn, &on) || !line_diff_fits(&bn, &tn) {
        return TextMerge::TooLarge { lines: [b.len(), o.len(), t.len()] };
    }
    let mut all: Vec<Hunk> = hunks(&bn, &on, false);
    all.extend(hunks(&bn, &tn, true));
    all.sort_by_key(|h| (h.base_start, h.base_end, h.theirs));

    let mut out = String::with_capacity(ours.len().max(theirs.len()));
    let mut pos = 0;
    let mut i = 0;
    while i < all.len() {
        let (start, mut end) = (all[i].base_start, all[i].base_end);
        let mut j = i + 1;
        // Hunks that overlap or touch the group belong to it: adjacent edits are a conflict.
        while j < all.len() && all[j].base_start <= end {
            end = end.max(all[j].base_end);
            j += 1;
        }
        let group = &all[i..j];
        let ours_hunks: Vec<&Hunk> = group.iter().filter(|h| !h.theirs).collect();
        let theirs_hunks: Vec<&Hunk> = group.iter().filter(|h| h.theirs).collect();
        b[pos..start].iter().for_each(|l| out.push_str(l));
        let chosen = match (ours_hunks.is_empty(), theirs_hunks.is_empty()) {
            (false, true) => side_text(&b, &o, &ours_hunks, start, end),
            (true, false) => side_text(&b, &t, &theirs_hunks, start, end),
            _ => {
                let x = side_text(&b, &o, &ours_hunks, start, end);
                let y = side_text(&b, &t, &theirs_hunks, start, end);
                if x != y {
                    return TextMerge::Conflict;
                }
                x
            }
        };
        for l in chosen {
            out.push_str(l);
        }
        pos = end;
        i = j;
    }
    b[pos..].iter().for_each(|l| out.push_str(l));
    TextMerge::Merged(out)
}

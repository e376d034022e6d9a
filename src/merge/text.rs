//! Line-level three-way merge of multi-line strings (descriptions, notes, design...).
//!
//! Two agents appending to different parts of a description should both keep their edits; only
//! edits that touch the same or adjacent lines are a real conflict. This is a small diff3 built on
//! the `similar` crate: diff base->ours and base->theirs, group hunks that overlap or touch, and
//! take a group's text when only one side changed it or both changed it identically.

use similar::{capture_diff_slices, Algorithm, DiffOp};

/// A change of one side: base lines `base_start..base_end` become `new` lines of that side.
#[derive(Debug, Clone, Copy)]
struct Hunk {
    base_start: usize,
    base_end: usize,
    new_start: usize,
    new_end: usize,
    theirs: bool,
}

fn hunks(base: &[&str], side: &[&str], theirs: bool) -> Vec<Hunk> {
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

/// Merges `ours` and `theirs` against `base` line by line. `None` when edits overlap.
pub fn merge_text(base: &str, ours: &str, theirs: &str) -> Option<String> {
    if ours == theirs || theirs == base {
        return Some(ours.to_owned());
    }
    if ours == base {
        return Some(theirs.to_owned());
    }
    let b: Vec<&str> = base.split_inclusive('\n').collect();
    let o: Vec<&str> = ours.split_inclusive('\n').collect();
    let t: Vec<&str> = theirs.split_inclusive('\n').collect();
    let mut all: Vec<Hunk> = hunks(&b, &o, false);
    all.extend(hunks(&b, &t, true));
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
                    return None;
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
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::merge_text;

    #[test]
    fn separate_edits_both_survive() {
        let base = "a\nb\nc\nd\ne\n";
        let ours = "A\nb\nc\nd\ne\n";
        let theirs = "a\nb\nc\nd\nE\nf\n";
        assert_eq!(merge_text(base, ours, theirs).expect("test input is valid"), "A\nb\nc\nd\nE\nf\n");
        assert_eq!(merge_text(base, theirs, ours).expect("test input is valid"), "A\nb\nc\nd\nE\nf\n");
    }

    #[test]
    fn overlapping_or_adjacent_edits_conflict() {
        assert_eq!(merge_text("a\nb\n", "x\nb\n", "y\nb\n"), None);
        assert_eq!(merge_text("a\nb\n", "x\nb\n", "a\ny\n"), None);
        assert_eq!(merge_text("a", "a\nours", "a\ntheirs"), None);
    }

    #[test]
    fn identical_edits_merge() {
        assert_eq!(merge_text("a\nb\nc\n", "a\nX\nc\n", "a\nX\nc\nd\n").expect("test input is valid"), "a\nX\nc\nd\n");
        assert_eq!(merge_text("a\nb\nc\nd\ne\n", "a\nX\nc\nd\ne\n", "a\nX\nc\nd\nE\n").expect("test input is valid"), "a\nX\nc\nd\nE\n");
    }
}

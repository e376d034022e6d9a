//! The index of an input that is already sorted by record key, for the merge-join fast path.
//!
//! bd and br write their files with the header first, then issues by id, then memories and other
//! kinds by key (see [`crate::record::kind_rank`]). When all three inputs of a merge are in that
//! order, with every line keyed and no key repeated, the merge can walk the three files side by
//! side like a merge-join instead of hashing every key of every file: the keys are kept in one
//! column per file (their order doubles as the index, searched by bisection for the rare lookups
//! after the walk). Whether a file qualifies is found while its keys are read, so a file that does
//! not is given up at its first line out of order and the merge takes the hashed path
//! ([`crate::index::IdIndex`]), which accepts any input. Both paths give the same bytes, reports and
//! outcome (tests/integration/merge_equivalence.rs).

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::jsonl::Jsonl;
use crate::record::{kind_rank, record_key};

/// A file whose lines are all records, in strictly increasing key order.
pub(crate) struct SortedIndex<'a> {
    /// The file's lines and layout.
    pub file: Jsonl<'a>,
    /// The key of each line (`keys[i]` is line `i`'s), strictly increasing by [`key_order`].
    pub keys: Vec<Cow<'a, str>>,
}

/// The order bd writes keys in: the header, issues, memories, other kinds; by key within a kind.
pub(crate) fn key_order(a: &str, b: &str) -> Ordering {
    kind_rank(a).cmp(&kind_rank(b)).then_with(|| a.cmp(b))
}

impl<'a> SortedIndex<'a> {
    /// Indexes `content` when every line has a key and the keys strictly increase; `None` as soon
    /// as a line has no key or is out of order (a repeated key included).
    pub fn new(content: &'a [u8]) -> Option<Self> {
        let file = Jsonl::split(content);
        // Lines of the files bd writes need no unescaping: every key borrows the input.
        let mut keys: Vec<Cow<'a, str>> = Vec::with_capacity(file.lines.len());
        for line in &file.lines {
            let key = record_key(line.bytes).ok()?.into_string_key();
            if keys.last().is_some_and(|prev| key_order(prev, &key) != Ordering::Less) {
                return None;
            }
            keys.push(key);
        }
        Some(SortedIndex { file, keys })
    }

    /// The line index of a key.
    pub fn find(&self, key: &str) -> Option<u32> {
        let at = self.keys.binary_search_by(|k| key_order(k, key)).ok()?;
        u32::try_from(at).ok()
    }
}

/// Where a key stands in each of the three inputs of a merge-join step.
pub(crate) type Step = [Option<u32>; 3];

/// Walks three sorted files in step: calls `each(key, [base, ours, theirs])` once per key present
/// in any of them, in key order, with that key's line index in each file that has it.
pub(crate) fn join<'s, 'a, E>(
    files: [&'s SortedIndex<'a>; 3],
    mut each: impl FnMut(&'s Cow<'a, str>, Step) -> Result<(), E>,
) -> Result<(), E> {
    let mut at = [0usize; 3];
    loop {
        let mut least: Option<&'s Cow<'a, str>> = None;
        for (f, &i) in files.iter().zip(&at) {
            if let Some(key) = f.keys.get(i) {
                if least.is_none_or(|l| key_order(key, l) == Ordering::Less) {
                    least = Some(key);
                }
            }
        }
        let Some(key) = least else { return Ok(()) };
        let mut step: Step = [None; 3];
        for (n, f) in files.iter().enumerate() {
            if f.keys.get(at[n]).is_some_and(|k| k == key) {
                // A file fits in u32 lines: the hashed index makes the same assumption.
                step[n] = u32::try_from(at[n]).ok();
                at[n] += 1;
            }
        }
        each(key, step)?;
    }
}

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

use crate::jsonl::{Jsonl, Layout, Line};
use crate::record::{key_order, record_key, Key};

/// A file whose lines are all records, in strictly increasing key order.
///
/// Kept compact (20 bytes a line besides the file itself): a million-record file of short
/// records is a few tens of megabytes, and the lines' own slices and keys would be three times
/// its size.
pub(crate) struct SortedIndex<'a> {
    content: &'a [u8],
    /// How the file is laid out.
    pub layout: Layout,
    spans: Vec<Span>,
    /// The keys that are not a piece of their line (bd 1.0's header and memories, escaped ids),
    /// by line index, in line order.
    other_keys: Vec<(u32, String)>,
}

/// One line: where it and its key are in the file, and its number.
#[derive(Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
    number: u32,
    /// Where the key starts in the file; `len` [`OTHER`] for a key kept in `other_keys`.
    key_start: u32,
    key_len: u32,
}

/// `key_len` of a key that is not a piece of its line.
const OTHER: u32 = u32::MAX;

impl<'a> SortedIndex<'a> {
    /// Indexes `content` when every line has a key and the keys strictly increase; `None` when a
    /// line has no key or is out of order (a repeated key included), or the file is over 4 GiB.
    pub fn new(content: &'a [u8]) -> Option<Self> {
        // A piece's offset in `content`; `None` for one that is not inside it.
        let offset = |piece: &[u8]| {
            let at = (piece.as_ptr() as usize).checked_sub(content.as_ptr() as usize)?;
            (at + piece.len() <= content.len()).then(|| u32::try_from(at).ok()).flatten()
        };
        u32::try_from(content.len()).ok()?;
        let mut index = SortedIndex { content, layout: Layout::default(), spans: Vec::new(), other_keys: Vec::new() };
        let mut ok = true;
        let mut previous: Option<Cow<'a, str>> = None;
        index.layout = Jsonl::for_each_line(content, |line| {
            if !ok {
                return;
            }
            let (Ok(key), Some(start), Ok(len), Ok(number)) =
                (record_key(line.bytes), offset(line.bytes), u32::try_from(line.bytes.len()), u32::try_from(line.number))
            else {
                ok = false;
                return;
            };
            // Only an issue's id can borrow from the line; every other kind's key is built.
            let key: Cow<'a, str> = match key {
                Key::Issue(id) => id,
                other => Cow::Owned(other.into_string_key().into_owned()),
            };
            if previous.as_ref().is_some_and(|p| key_order(p, &key) != Ordering::Less) {
                ok = false;
                return;
            }
            let piece = match &key {
                Cow::Borrowed(k) => offset(k.as_bytes()).zip(u32::try_from(k.len()).ok().filter(|&l| l != OTHER)),
                Cow::Owned(_) => None,
            };
            let (key_start, key_len) = piece.unwrap_or((0, OTHER));
            if key_len == OTHER {
                index.other_keys.push((u32::try_from(index.spans.len()).unwrap_or(u32::MAX), key.to_string()));
            }
            index.spans.push(Span { start, len, number, key_start, key_len });
            previous = Some(key);
        });
        (ok && u32::try_from(index.spans.len()).is_ok()).then_some(index)
    }

    /// How many lines (and keys) the file has.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// The line at a line index.
    pub fn line(&self, at: u32) -> Line<'a> {
        let span = self.spans[at as usize];
        Line { number: span.number as usize, bytes: &self.content[span.start as usize..][..span.len as usize] }
    }

    /// Every line, in file order.
    pub fn lines(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.spans.len()).map(|i| self.line(i as u32).bytes)
    }

    /// The key of a line: borrowed from the file when it is a piece of its line.
    pub fn key(&self, at: u32) -> Cow<'a, str> {
        let span = self.spans[at as usize];
        if span.key_len != OTHER {
            let bytes = &self.content[span.key_start as usize..][..span.key_len as usize];
            // It was a `&str` when the file was indexed.
            if let Ok(key) = std::str::from_utf8(bytes) {
                return Cow::Borrowed(key);
            }
        }
        let found = self.other_keys.binary_search_by_key(&at, |(i, _)| *i).ok();
        Cow::Owned(found.map(|i| self.other_keys[i].1.clone()).unwrap_or_default())
    }

    /// The line index of a key.
    pub fn find(&self, key: &str) -> Option<u32> {
        let (mut low, mut high) = (0u32, u32::try_from(self.spans.len()).ok()?);
        while low < high {
            let mid = low + (high - low) / 2;
            match key_order(&self.key(mid), key) {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The index of the first key that is not before `key` (the length when every key is).
    pub fn lower_bound(&self, key: &str) -> u32 {
        let (mut low, mut high) = (0u32, u32::try_from(self.spans.len()).unwrap_or(u32::MAX));
        while low < high {
            let mid = low + (high - low) / 2;
            if key_order(&self.key(mid), key) == Ordering::Less {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }
}

/// Below this many lines in all, a merge walks its inputs on one thread.
const SPLIT_FROM: usize = 4096;

/// Where to cut the walk of three sorted files in two halves of about equal work: the middle
/// key of the largest file, and in each file the index of its first key not before it. `None`
/// for files too small to be worth a second thread.
pub(crate) fn split_point<'a>(files: [&SortedIndex<'a>; 3]) -> Option<(Cow<'a, str>, [u32; 3])> {
    if files.iter().map(|f| f.len()).sum::<usize>() < SPLIT_FROM {
        return None;
    }
    let largest = files.iter().max_by_key(|f| f.len())?;
    let key = largest.key(u32::try_from(largest.len() / 2).ok()?);
    Some((key.clone(), files.map(|f| f.lower_bound(&key))))
}

/// Where a key stands in each of the three inputs of a merge-join step.
pub(crate) type Step = [Option<u32>; 3];

/// Walks three sorted files in step: calls `each(key, [base, ours, theirs])` once per key present
/// in any of them, in key order, with that key's line index in each file that has it. The walk
/// starts at the line indexes `from` and stops before the key `until` (at the end when `None`).
pub(crate) fn join<'a, E>(
    files: [&SortedIndex<'a>; 3],
    from: [u32; 3],
    until: Option<&str>,
    mut each: impl FnMut(Cow<'a, str>, Step) -> Result<(), E>,
) -> Result<(), E> {
    let mut at = from;
    let mut heads: [Option<Cow<'a, str>>; 3] = [0, 1, 2].map(|n| ((at[n] as usize) < files[n].len()).then(|| files[n].key(at[n])));
    loop {
        let mut least: Option<&Cow<'a, str>> = None;
        for key in heads.iter().flatten() {
            if least.is_none_or(|l| key_order(key, l) == Ordering::Less) {
                least = Some(key);
            }
        }
        let Some(key) = least.cloned() else { return Ok(()) };
        if until.is_some_and(|u| key_order(&key, u) != Ordering::Less) {
            return Ok(());
        }
        let mut step: Step = [None; 3];
        for n in 0..3 {
            if heads[n].as_ref().is_some_and(|k| *k == key) {
                step[n] = Some(at[n]);
                at[n] += 1;
                heads[n] = ((at[n] as usize) < files[n].len()).then(|| files[n].key(at[n]));
            }
        }
        each(key, step)?;
    }
}

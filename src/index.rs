//! One index of an issues file by record key, shared by the merge, import, diff and check.
//!
//! Every tool asks the same questions of a file: which lines hold which id, which ids repeat, which
//! lines have no usable id and why. Answering them in one place keeps the tools agreeing (an id is
//! found the same way everywhere: issues by `id`, bd 1.0's header and memory lines by their kind's
//! key) and lets each borrow the lines without copying them.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use crate::jsonl::{Jsonl, Line};
use crate::record::{is_issue_key, kind_rank, record_key, LineProblem};

/// Where a key's lines are.
#[derive(Debug, Clone)]
pub enum Slot {
    /// On one line (its index).
    One(u32),
    /// On several lines, in file order.
    Many(Vec<u32>),
}

impl Slot {
    /// The line indexes.
    pub fn indexes(&self) -> &[u32] {
        match self {
            Slot::One(i) => std::slice::from_ref(i),
            Slot::Many(v) => v,
        }
    }
}

/// A file indexed by record key.
pub struct IdIndex<'a> {
    /// The file's lines and layout.
    pub file: Jsonl<'a>,
    /// Key -> its lines. Issues are keyed by id; other record kinds by a NUL-prefixed key.
    pub ids: FxHashMap<Cow<'a, str>, Slot>,
    /// Lines without a usable key: (line index, problem).
    pub bad: Vec<(usize, LineProblem)>,
    /// Line index -> key, for lines with one.
    pub line_ids: Vec<Option<Cow<'a, str>>>,
}

impl<'a> IdIndex<'a> {
    /// Splits `content` into lines and indexes every record by its key.
    pub fn new(content: &'a [u8]) -> Self {
        let file = Jsonl::split(content);
        // FxHash: ids are short and the file is the user's own, so a DoS-resistant hash buys
        // nothing (A/B in docs/performance.md).
        let mut ids: FxHashMap<Cow<'a, str>, Slot> = FxHashMap::with_capacity_and_hasher(file.lines.len(), rustc_hash::FxBuildHasher);
        let mut bad = Vec::new();
        let mut line_ids = Vec::with_capacity(file.lines.len());
        for (i, line) in file.lines.iter().enumerate() {
            match record_key(line.bytes).map(crate::record::Key::into_string_key) {
                Ok(id) => {
                    let idx = u32::try_from(i).expect("fewer than 4 billion lines");
                    match ids.entry(id.clone()) {
                        std::collections::hash_map::Entry::Vacant(v) => {
                            v.insert(Slot::One(idx));
                        }
                        std::collections::hash_map::Entry::Occupied(mut o) => {
                            let slot = o.get_mut();
                            match slot {
                                Slot::One(first) => *slot = Slot::Many(vec![*first, idx]),
                                Slot::Many(v) => v.push(idx),
                            }
                        }
                    }
                    line_ids.push(Some(id));
                }
                Err(problem) => {
                    bad.push((i, problem));
                    line_ids.push(None);
                }
            }
        }
        IdIndex { file, ids, bad, line_ids }
    }

    /// The line at a line index.
    pub fn line(&self, idx: u32) -> Line<'a> {
        self.file.lines[idx as usize]
    }

    /// Every line of a key, in file order (empty when absent).
    pub fn lines_of(&self, id: &str) -> Vec<Line<'a>> {
        match self.ids.get(id) {
            None => Vec::new(),
            Some(Slot::One(i)) => vec![self.line(*i)],
            Some(Slot::Many(v)) => v.iter().map(|i| self.line(*i)).collect(),
        }
    }

    /// Whether the key is on more than one line.
    pub fn is_duplicated(&self, id: &str) -> bool {
        matches!(self.ids.get(id), Some(Slot::Many(_)))
    }

    /// The key's line when it is on exactly one.
    pub fn single(&self, id: &str) -> Option<Line<'a>> {
        match self.ids.get(id) {
            Some(Slot::One(i)) => Some(self.line(*i)),
            _ => None,
        }
    }

    /// Whether the records are in the order bd writes them (by kind, then key).
    pub fn sorted_by_id(&self) -> bool {
        let mut prev: Option<(u8, &str)> = None;
        for id in self.line_ids.iter().flatten() {
            let here = (kind_rank(id), id.as_ref());
            if prev.is_some_and(|p| p > here) {
                return false;
            }
            prev = Some(here);
        }
        true
    }

    /// Whether one of the lines without a key has exactly these bytes.
    pub fn has_bad_line(&self, bytes: &[u8]) -> bool {
        self.bad.iter().any(|(i, _)| self.file.lines[*i].bytes == bytes)
    }

    /// Issue ids (not header or memory keys) in file order of their first line, with the indexes
    /// of all their lines.
    pub fn issues_in_order(&self) -> impl Iterator<Item = (&Cow<'a, str>, &Slot)> {
        self.line_ids.iter().enumerate().filter_map(move |(i, id)| {
            let id = id.as_ref().filter(|id| is_issue_key(id))?;
            let slot = self.ids.get(id)?;
            (slot.indexes()[0] as usize == i).then_some((id, slot))
        })
    }

    /// Lines that are records of another kind than issues (bd 1.0's header, memories).
    pub fn other_records(&self) -> usize {
        self.line_ids.iter().flatten().filter(|id| !is_issue_key(id)).count()
    }
}

/// Ids in the order they were first added, stored end to end in one string and found by a hash
/// table of their positions: about 20 bytes an id beyond the id itself, where a map of owned
/// strings costs three allocations' worth. The streaming readers (import, `--from-diff`) keep one
/// entry per id of a file they never hold, so this is what sets their memory at a million ids.
#[derive(Default)]
pub struct IdTable {
    text: String,
    /// `text[ends[k - 1]..ends[k]]` is the id at position `k`.
    ends: Vec<usize>,
    table: hashbrown::HashTable<u32>,
}

/// The id at position `k` of an [`IdTable`]'s parts (a free function, so the table's closures
/// can borrow the parts while the hash table is borrowed mutably).
fn id_at<'t>(text: &'t str, ends: &[usize], k: u32) -> &'t str {
    let k = k as usize;
    &text[if k == 0 { 0 } else { ends[k - 1] }..ends[k]]
}

fn id_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(id)
}

impl IdTable {
    /// The number of ids.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The id at `position` (which must be below [`IdTable::len`]).
    pub fn get(&self, position: u32) -> &str {
        id_at(&self.text, &self.ends, position)
    }

    /// Where `id` is, if present.
    pub fn position(&self, id: &str) -> Option<u32> {
        self.table.find(id_hash(id), |&k| self.get(k) == id).copied()
    }

    /// Where `id` is, adding it at the end when absent: `(position, added)`.
    pub fn insert(&mut self, id: &str) -> (u32, bool) {
        let hash = id_hash(id);
        let (text, ends) = (&self.text, &self.ends);
        if let Some(&k) = self.table.find(hash, |&k| id_at(text, ends, k) == id) {
            return (k, false);
        }
        let k = u32::try_from(self.ends.len()).expect("fewer than 4 billion ids");
        self.text.push_str(id);
        self.ends.push(self.text.len());
        let (text, ends) = (&self.text, &self.ends);
        self.table.insert_unique(hash, k, |&j| id_hash(id_at(text, ends, j)));
        (k, true)
    }

    /// The ids in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.ends.len()).map(|k| id_at(&self.text, &self.ends, k as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::IdTable;

    #[test]
    fn an_id_table_finds_every_id_and_keeps_their_order() {
        let mut table = IdTable::default();
        let ids = ["b", "a", "", "a\nb", "b", "c", "a"];
        let positions: Vec<(u32, bool)> = ids.iter().map(|id| table.insert(id)).collect();
        assert_eq!(positions, [(0, true), (1, true), (2, true), (3, true), (0, false), (4, true), (1, false)]);
        assert_eq!(table.iter().collect::<Vec<_>>(), ["b", "a", "", "a\nb", "c"]);
        assert_eq!(table.position("c"), Some(4));
        assert_eq!(table.position("d"), None);
        assert_eq!(table.len(), 5);
        for n in 0..20_000 {
            table.insert(&format!("bd-{n}"));
        }
        assert_eq!(table.position("bd-19999"), Some(20_004));
        assert_eq!(table.get(5), "bd-0");
        assert_eq!(table.len(), 20_005);
    }
}

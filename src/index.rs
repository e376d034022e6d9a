//! One index of an issues file by record key, shared by the merge, import, diff and check.
//!
//! Every tool asks the same questions of a file: which lines hold which id, which ids repeat, which
//! lines have no usable id and why. Answering them in one place keeps the tools agreeing (an id is
//! found the same way everywhere: issues by `id`, bd 1.0's header and memory lines by their kind's
//! key) and lets each borrow the lines without copying them.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use crate::jsonl::{Jsonl, Line};
use crate::record::{is_issue_key, key_order, record_key, LineProblem};

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
        let mut prev: Option<&str> = None;
        for id in self.line_ids.iter().flatten() {
            if prev.is_some_and(|p| key_order(p, id).is_gt()) {
                return false;
            }
            prev = Some(id);
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
///
/// While the ids arrive in increasing order (bd and br write files sorted by id), none can repeat
/// and the hash table is not built: lookups bisect instead, and [`IdTable::is_sorted`] lets a
/// caller walk two tables side by side. The first id out of order builds the table.
#[derive(Default)]
pub struct IdTable {
    text: String,
    /// `text[ends[k - 1]..ends[k]]` is the id at position `k`.
    ends: Vec<usize>,
    table: hashbrown::HashTable<u32>,
    /// An id arrived out of order, and `table` holds every position.
    indexed: bool,
}

/// The id at position `k` of an [`IdTable`]'s parts (a free function, so the table's closures
/// can borrow the parts while the hash table is borrowed mutably).
fn id_at<'t>(text: &'t str, ends: &[usize], k: u32) -> &'t str {
    let k = k as usize;
    &text[if k == 0 { 0 } else { ends[k - 1] }..ends[k]]
}

/// xxh3, whose bits are all well mixed: the table tells entries apart by the top seven.
fn id_hash(id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id.as_bytes())
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

    /// Whether the ids are known to be in increasing order (each position's id greater than the
    /// one before): true until an id arrives out of order or [`IdTable::build_index`] is called.
    pub fn is_sorted(&self) -> bool {
        !self.indexed
    }

    /// Where `id` is, if present.
    pub fn position(&self, id: &str) -> Option<u32> {
        if !self.indexed {
            let (mut low, mut high) = (0u32, u32::try_from(self.ends.len()).ok()?);
            while low < high {
                let mid = low + (high - low) / 2;
                match self.get(mid).cmp(id) {
                    std::cmp::Ordering::Less => low = mid + 1,
                    std::cmp::Ordering::Greater => high = mid,
                    std::cmp::Ordering::Equal => return Some(mid),
                }
            }
            return None;
        }
        self.table.find(id_hash(id), |&k| self.get(k) == id).copied()
    }

    /// Where `id` is, adding it at the end when absent: `(position, added)`.
    pub fn insert(&mut self, id: &str) -> (u32, bool) {
        if !self.indexed {
            if self.ends.is_empty() || self.get(self.last()) < id {
                return (self.push(id), true);
            }
            self.index();
        }
        let hash = id_hash(id);
        let (text, ends) = (&self.text, &self.ends);
        if let Some(&k) = self.table.find(hash, |&k| id_at(text, ends, k) == id) {
            return (k, false);
        }
        let k = self.push(id);
        let (text, ends) = (&self.text, &self.ends);
        self.table.insert_unique(hash, k, |&j| id_hash(id_at(text, ends, j)));
        (k, true)
    }

    fn last(&self) -> u32 {
        u32::try_from(self.ends.len().saturating_sub(1)).expect("fewer than 4 billion ids")
    }

    fn push(&mut self, id: &str) -> u32 {
        let k = u32::try_from(self.ends.len()).expect("fewer than 4 billion ids");
        self.text.push_str(id);
        self.ends.push(self.text.len());
        k
    }

    /// Builds the hash table now, for a caller about to look up many ids (bisection is slower
    /// than hashing for a lookup per id). Nothing to do when it is built.
    pub fn build_index(&mut self) {
        if !self.indexed {
            self.index();
        }
    }

    /// Builds the hash table of every position so far (the first id out of order).
    fn index(&mut self) {
        self.indexed = true;
        let (text, ends) = (&self.text, &self.ends);
        self.table.reserve(ends.len(), |&j| id_hash(id_at(text, ends, j)));
        for k in 0..u32::try_from(ends.len()).expect("fewer than 4 billion ids") {
            self.table.insert_unique(id_hash(id_at(text, ends, k)), k, |&j| id_hash(id_at(text, ends, j)));
        }
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
        assert!(!table.is_sorted());
    }

    /// Sorted ids are found by bisection until one arrives out of order; then by the table, with
    /// the same answers.
    #[test]
    fn an_id_table_of_sorted_ids_builds_its_index_at_the_first_id_out_of_order() {
        let mut table = IdTable::default();
        let ids: Vec<String> = (0..5000).map(|n| format!("bd-{n:05}")).collect();
        for (k, id) in ids.iter().enumerate() {
            assert_eq!(table.insert(id), (k as u32, true));
        }
        assert!(table.is_sorted());
        assert_eq!(table.position("bd-04999"), Some(4999));
        assert_eq!(table.position("bd-00000"), Some(0));
        assert_eq!(table.position("bd-1"), None);
        assert_eq!(table.position(""), None);
        assert_eq!(table.insert("bd-02500"), (2500, false), "a repeat is found while sorted");
        assert!(!table.is_sorted(), "a repeat is out of order");
        assert_eq!(table.insert("a"), (5000, true));
        for (k, id) in ids.iter().enumerate() {
            assert_eq!(table.position(id), Some(k as u32));
        }
        assert_eq!(table.position("a"), Some(5000));
        let mut empty = IdTable::default();
        assert_eq!(empty.position("x"), None);
        assert_eq!(empty.insert(""), (0, true));
        assert_eq!(empty.insert(""), (0, false));
    }
}

//! Which ids changed between two snapshots of an issues file.
//!
//! The notifier must be exact: an id is reported when its record's bytes were added, changed or
//! deleted, and never otherwise (a file rewritten with the same records reports nothing, an edit
//! that did not bump `updated_at` is still reported). Records are compared by their line bytes,
//! keyed by id; an id on several lines is compared as the set of its lines.

use std::ops::Range;

use rustc_hash::FxHashMap;

use crate::index::IdIndex;
use crate::record::LineProblem;

/// A snapshot: the file's bytes, and each id with where its line(s) are in them. The bytes are
/// held once (no copy per line), so snapshots of 100k-issue files stay cheap to take and keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    content: Vec<u8>,
    records: FxHashMap<String, Vec<Range<usize>>>,
    order: Vec<String>,
}

/// A line that kept a snapshot from being taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub problem: LineProblem,
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

impl Snapshot {
    /// Takes file content. With `validate`, every line must be a JSON object with a string id
    /// (lines byte-identical to `previous` are trusted); otherwise only the id is read.
    pub fn parse(content: Vec<u8>, validate: bool, previous: Option<&Snapshot>) -> Result<Snapshot, SnapshotError> {
        let (records, order) = {
            let index = IdIndex::new(&content);
            // The first problem in line order: a line without an id, or (validating) an invalid record.
            let mut first: Option<SnapshotError> =
                index.bad.first().map(|(i, problem)| SnapshotError { line: index.file.lines[*i].number, problem: problem.clone() });
            let mut records: FxHashMap<String, Vec<Range<usize>>> = FxHashMap::default();
            records.reserve(index.ids.len());
            let mut order = Vec::with_capacity(index.ids.len());
            // Header and memory lines are not work items: nobody is notified about them.
            for (id, slot) in index.issues_in_order() {
                let mut ranges = Vec::with_capacity(slot.indexes().len());
                for &i in slot.indexes() {
                    let line = index.line(i);
                    if validate
                        && first.as_ref().is_none_or(|f| f.line > line.number)
                        && !previous.is_some_and(|p| p.lines(id.as_ref()).any(|l| l == line.bytes))
                    {
                        if let Err(problem) = crate::record::RawObject::parse(line.bytes) {
                            first = Some(SnapshotError { line: line.number, problem });
                        }
                    }
                    let start = line.bytes.as_ptr() as usize - content.as_ptr() as usize;
                    ranges.push(start..start + line.bytes.len());
                }
                order.push(id.to_string());
                records.insert(id.to_string(), ranges);
            }
            if let Some(e) = first {
                return Err(e);
            }
            (records, order)
        };
        Ok(Snapshot { content, records, order })
    }

    /// The bytes of an id's line(s), in file order (none for an unknown id).
    pub fn lines<'s>(&'s self, id: &str) -> impl Iterator<Item = &'s [u8]> + 's {
        self.records.get(id).into_iter().flatten().map(|r| &self.content[r.clone()])
    }

    /// True when there are no records.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// Ids that differ between two snapshots.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Changes {
    /// In `new` only.
    pub added: Vec<String>,
    /// In both, with different bytes.
    pub modified: Vec<String>,
    /// In `old` only.
    pub deleted: Vec<String>,
}

impl Changes {
    /// All changed ids: the new snapshot's order for added and modified, then deleted ones in
    /// the old snapshot's order.
    pub fn ids(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.added.len() + self.modified.len() + self.deleted.len());
        out.extend(self.added.iter().cloned());
        out.extend(self.modified.iter().cloned());
        out.extend(self.deleted.iter().cloned());
        out
    }

    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.deleted.is_empty()
    }
}

/// Compares two snapshots.
pub fn changes(old: &Snapshot, new: &Snapshot) -> Changes {
    let mut c = Changes::default();
    for id in &new.order {
        match old.records.get(id) {
            None => c.added.push(id.clone()),
            Some(_) if !old.lines(id).eq(new.lines(id)) => c.modified.push(id.clone()),
            Some(_) => {}
        }
    }
    for id in &old.order {
        if !new.records.contains_key(id) {
            c.deleted.push(id.clone());
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_modified_deleted_by_bytes() {
        let old =
            Snapshot::parse(b"{\"id\":\"a\",\"x\":1}\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n".to_vec(), true, None).expect("test input is valid");
        let new = Snapshot::parse(b"{\"id\":\"a\",\"x\":2}\n{\"id\":\"c\"}\n{\"id\":\"d\"}\n".to_vec(), true, Some(&old))
            .expect("test input is valid");
        let c = changes(&old, &new);
        assert_eq!((c.added, c.modified, c.deleted), (vec!["d".into()], vec!["a".into()], vec!["b".into()]));
        assert!(Snapshot::parse(b"{\"id\":\"a\",\"x\":".to_vec(), true, None).is_err());
        assert!(changes(&old, &old).is_empty());
    }
}

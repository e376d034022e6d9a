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
    /// Every issue line's byte range, grouped by id, ids in the order of their first line.
    ranges: Vec<Range<usize>>,
    /// Id -> its lines: `ranges[start..start + count]`.
    records: FxHashMap<Box<str>, (u32, u32)>,
    /// The ids' spans in `ranges`, in the order of their first line (the id is read back from
    /// the line: one string per id, not two).
    order: Vec<(u32, u32)>,
}

/// A line that kept a snapshot from being taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct SnapshotError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub problem: LineProblem,
}

impl Snapshot {
    /// Takes file content. With `validate`, every line must be a JSON object with a string id
    /// (lines byte-identical to `previous` are trusted); otherwise only the id is read.
    pub fn parse(content: Vec<u8>, validate: bool, previous: Option<&Snapshot>) -> Result<Snapshot, SnapshotError> {
        let (ranges, records, order) = {
            let index = IdIndex::new(&content);
            // The first problem in line order: a line without an id, or (validating) an invalid record.
            let mut first: Option<SnapshotError> =
                index.bad.first().map(|(i, problem)| SnapshotError { line: index.file.lines[*i].number, problem: problem.clone() });
            let mut ranges = Vec::with_capacity(index.file.lines.len());
            let mut records: FxHashMap<Box<str>, (u32, u32)> = FxHashMap::default();
            records.reserve(index.ids.len());
            let mut order = Vec::with_capacity(index.ids.len());
            // Header and memory lines are not work items: nobody is notified about them.
            for (id, slot) in index.issues_in_order() {
                let start = u32::try_from(ranges.len()).expect("fewer than 4 billion lines");
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
                    let at = line.bytes.as_ptr() as usize - content.as_ptr() as usize;
                    ranges.push(at..at + line.bytes.len());
                }
                let span = (start, slot.indexes().len() as u32);
                records.insert(id.as_ref().into(), span);
                order.push(span);
            }
            if let Some(e) = first {
                return Err(e);
            }
            (ranges, records, order)
        };
        Ok(Snapshot { content, ranges, records, order })
    }

    /// The bytes of an id's line(s), in file order (none for an unknown id).
    pub fn lines<'s>(&'s self, id: &str) -> impl Iterator<Item = &'s [u8]> + 's {
        let span = self.records.get(id).map(|&(start, count)| start as usize..(start + count) as usize).unwrap_or(0..0);
        self.ranges[span].iter().map(|r| &self.content[r.clone()])
    }

    /// The id of the record whose lines are `span`.
    fn id_of(&self, span: (u32, u32)) -> std::borrow::Cow<'_, str> {
        let line = &self.content[self.ranges[span.0 as usize].clone()];
        crate::record::record_id(line).expect("a snapshot holds issue lines only")
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
    for &span in &new.order {
        let id = new.id_of(span);
        match old.records.get(id.as_ref()) {
            None => c.added.push(id.into_owned()),
            Some(_) if !old.lines(&id).eq(new.lines(&id)) => c.modified.push(id.into_owned()),
            Some(_) => {}
        }
    }
    for &span in &old.order {
        let id = old.id_of(span);
        if !new.records.contains_key(id.as_ref()) {
            c.deleted.push(id.into_owned());
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

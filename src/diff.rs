//! Which ids changed between two snapshots of an issues file.
//!
//! The notifier must be exact: an id is reported when its record's bytes were added, changed or
//! deleted, and never otherwise (a file rewritten with the same records reports nothing, an edit
//! that did not bump `updated_at` is still reported). Records are compared by their line bytes,
//! keyed by id; an id on several lines is compared as the set of its lines. A [`Digest`] (what
//! `--from-diff` keeps of a revision it streams) compares a 128-bit hash of the lines instead,
//! seeded at random for each run, so lines crafted to collide in one run cannot be prepared.

use std::ops::Range;

use rustc_hash::FxHashMap;

use xxhash_rust::xxh3::xxh3_128_with_seed;

use crate::index::{IdIndex, IdTable};
use crate::jsonl::LineBlocks;
use crate::record::{is_issue_key, record_key, Key, LineProblem};

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

/// Why a [`Digest`] could not be taken: a line of the file (the file's problem), or the read.
#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    /// A line that has no key.
    #[error(transparent)]
    BadLine(#[from] SnapshotError),
    /// Reading the content failed.
    #[error(transparent)]
    Read(#[from] anyhow::Error),
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

/// One revision of an issues file as `--from-diff` keeps it, read as a stream and never held:
/// each issue id, in the order of its first line, with a 128-bit hash of its line(s) (an id on
/// several lines hashes them in order). Two digests tell the same ids apart as two snapshots do
/// (by the bytes of each id's lines), at about 40 bytes an id whatever the records' size.
#[derive(Default)]
pub struct Digest {
    ids: IdTable,
    hashes: Vec<u128>,
}

impl Digest {
    /// A seed for [`Digest::read`], different in every process: two digests compared with each
    /// other must be read with the same seed.
    pub fn random_seed() -> u64 {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0u8)
    }

    /// Reads a file in blocks, hashing lines with `seed`. The first line without a usable key is
    /// the error, as for [`Snapshot::parse`] without validation.
    pub fn read(mut blocks: LineBlocks, seed: u64) -> Result<Digest, DigestError> {
        let mut digest = Digest::default();
        while let Some(block) = blocks.next_block()? {
            for line in &block.lines {
                let key = record_key(line.bytes).map_err(|problem| SnapshotError { line: line.number, problem })?;
                // Header and memory lines are not work items: nobody is notified about them (nor
                // about an id starting with NUL, which a snapshot cannot tell from their keys).
                let Key::Issue(id) = key else { continue };
                if !is_issue_key(&id) {
                    continue;
                }
                match digest.ids.insert(&id) {
                    (_, true) => digest.hashes.push(xxh3_128_with_seed(line.bytes, seed)),
                    (at, false) => {
                        let mut chained = xxhash_rust::xxh3::Xxh3::with_seed(seed);
                        chained.update(&digest.hashes[at as usize].to_le_bytes());
                        chained.update(line.bytes);
                        digest.hashes[at as usize] = chained.digest128();
                    }
                }
            }
        }
        Ok(digest)
    }
}

/// Compares two digests: the same lists, in the same order, as [`changes`] of the snapshots.
pub fn digest_changes(old: &Digest, new: &Digest) -> Changes {
    if old.ids.is_sorted() && new.ids.is_sorted() {
        return sorted_digest_changes(old, new);
    }
    let mut c = Changes::default();
    for (at, id) in new.ids.iter().enumerate() {
        match old.ids.position(id) {
            None => c.added.push(id.to_owned()),
            Some(o) if old.hashes[o as usize] != new.hashes[at] => c.modified.push(id.to_owned()),
            Some(_) => {}
        }
    }
    for id in old.ids.iter() {
        if new.ids.position(id).is_none() {
            c.deleted.push(id.to_owned());
        }
    }
    c
}

/// [`digest_changes`] of two files sorted by id (as bd and br write them), by walking both side by
/// side: no lookups at all.
fn sorted_digest_changes(old: &Digest, new: &Digest) -> Changes {
    let mut c = Changes::default();
    let mut o = 0u32;
    let old_len = u32::try_from(old.ids.len()).expect("fewer than 4 billion ids");
    for (n, id) in new.ids.iter().enumerate() {
        while o < old_len && old.ids.get(o) < id {
            c.deleted.push(old.ids.get(o).to_owned());
            o += 1;
        }
        if o < old_len && old.ids.get(o) == id {
            if old.hashes[o as usize] != new.hashes[n] {
                c.modified.push(id.to_owned());
            }
            o += 1;
        } else {
            c.added.push(id.to_owned());
        }
    }
    c.deleted.extend((o..old_len).map(|k| old.ids.get(k).to_owned()));
    c
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

    fn digest(content: &[u8], block_size: usize) -> anyhow::Result<Digest> {
        let reader: Box<dyn std::io::Read + Send> = Box::new(std::io::Cursor::new(content.to_vec()));
        Ok(Digest::read(LineBlocks::from_reader(reader, std::path::Path::new("test"), block_size), 7)?)
    }

    /// The streamed digests report exactly what the snapshots report, in the same order: ids on
    /// several lines, lines moved, a header and memories, CRLF, a BOM, blocks of any size.
    #[test]
    fn digests_report_what_snapshots_report() {
        let versions: [&[u8]; 8] = [
            b"{\"id\":\"a\"}\n{\"id\":\"b\",\"x\":1}\n{\"id\":\"d\"}\n",
            b"{\"_schema\":1}\n{\"id\":\"b\",\"x\":2}\n{\"id\":\"c\"}\n{\"id\":\"e\"}\n",
            b"{\"id\":\"a\",\"x\":1}\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n",
            b"{\"id\":\"a\",\"x\":2}\n{\"id\":\"c\"}\n{\"id\":\"d\"}\n{\"id\":\"a\",\"x\":2}\n",
            b"{\"_schema\":1}\n{\"id\":\"c\"}\n{\"id\":\"a\",\"x\":2}\n{\"_type\":\"memory\",\"key\":\"k\"}\n{\"id\":\"a\",\"x\":2}\n",
            b"\xef\xbb\xbf{\"id\":\"c\"}\r\n{\"id\":\"b\"}\r\n",
            b"{\"id\":\"c\"}\n{\"id\":\"b\"}\n{\"id\":\"\\u0000x\"}\n{\"id\":\"\\u0000\"}",
            b"",
        ];
        for old in versions {
            for new in versions {
                let expected = changes(
                    &Snapshot::parse(old.to_vec(), false, None).expect("old"),
                    &Snapshot::parse(new.to_vec(), false, None).expect("new"),
                );
                for block in [1, 7, 64, 1 << 20] {
                    let got = digest_changes(&digest(old, block).expect("old"), &digest(new, block).expect("new"));
                    assert_eq!(
                        got,
                        expected,
                        "{:?} -> {:?} in blocks of {block}",
                        String::from_utf8_lossy(old),
                        String::from_utf8_lossy(new)
                    );
                }
            }
        }
        let err = digest(b"{\"id\":\"a\"}\n{\"x\":1}\n{\"id\":\"b\"}\n", 64).err().expect("a line without an id");
        let snapshot_err = Snapshot::parse(b"{\"id\":\"a\"}\n{\"x\":1}\n{\"id\":\"b\"}\n".to_vec(), false, None).expect_err("no id");
        assert_eq!(err.to_string(), snapshot_err.to_string());
    }
}

//! The merge's inputs: each of base, ours and theirs indexed by key (hashed, or by its sorted
//! key column when the file is sorted), a record line parsed or validated on demand, and the
//! checks a whole input must pass before any record is merged.

use std::borrow::Cow;

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::sorted::SortedIndex;
use super::types::{Input, Unmergeable, Warning};
use crate::index::{IdIndex, Slot};
use crate::jsonl::{Jsonl, Layout, Line};
use crate::record::{LineProblem, RawObject};

/// One input, indexed by key: hashed (any file, the index shared with import, diff and check) or,
/// when the file is sorted by key, by its sorted key column ([`sorted`]).
pub(super) struct Indexed<'a> {
    pub(super) input: Input,
    pub(super) index: Index<'a>,
}

pub(super) enum Index<'a> {
    Hashed(IdIndex<'a>),
    Sorted(SortedIndex<'a>),
}

/// Where a key's lines are in one input.
#[derive(Clone, Copy)]
pub(super) enum At<'s> {
    One(u32),
    Many(&'s [u32]),
}

impl<'a> Indexed<'a> {
    pub(super) fn new(input: Input, content: &'a [u8]) -> Self {
        Indexed { input, index: Index::Hashed(IdIndex::new(content)) }
    }

    pub(super) fn layout(&self) -> Layout {
        match &self.index {
            Index::Hashed(i) => i.file.layout,
            Index::Sorted(s) => s.layout,
        }
    }

    /// Every line, in file order.
    pub(super) fn lines(&self) -> Box<dyn Iterator<Item = &'a [u8]> + '_> {
        match &self.index {
            Index::Hashed(i) => Box::new(i.file.lines.iter().map(|l| l.bytes)),
            Index::Sorted(s) => Box::new(s.lines()),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match &self.index {
            Index::Hashed(i) => i.file.lines.is_empty(),
            Index::Sorted(s) => s.len() == 0,
        }
    }

    pub(super) fn line(&self, idx: u32) -> Line<'a> {
        match &self.index {
            Index::Hashed(i) => i.file.lines[idx as usize],
            Index::Sorted(s) => s.line(idx),
        }
    }

    pub(super) fn at(&self, id: &str) -> Option<At<'_>> {
        match &self.index {
            Index::Hashed(i) => i.ids.get(id).map(|slot| match slot {
                Slot::One(n) => At::One(*n),
                Slot::Many(v) => At::Many(v),
            }),
            Index::Sorted(s) => s.find(id).map(At::One),
        }
    }

    /// The key's line when it is on exactly one.
    pub(super) fn single(&self, id: &str) -> Option<Line<'a>> {
        match self.at(id)? {
            At::One(n) => Some(self.line(n)),
            At::Many(_) => None,
        }
    }

    /// Every line of a key, in file order (empty when absent).
    pub(super) fn lines_of(&self, id: &str) -> Vec<Line<'a>> {
        match self.at(id) {
            None => Vec::new(),
            Some(At::One(n)) => vec![self.line(n)],
            Some(At::Many(v)) => v.iter().map(|n| self.line(*n)).collect(),
        }
    }
}

/// A record line, parsed.
pub(super) struct Parsed<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) obj: RawObject<'a>,
    pub(super) value: Value,
}

pub(super) fn parse(input: Input, line: Line<'_>) -> Result<Parsed<'_>, Unmergeable> {
    let unmergeable = |problem| Unmergeable { input, line: line.number, problem };
    let obj = RawObject::parse(line.bytes).map_err(unmergeable)?;
    let value = serde_json::from_slice(line.bytes).map_err(|e| unmergeable(LineProblem::InvalidJson(e.to_string())))?;
    Ok(Parsed { bytes: line.bytes, obj, value })
}

/// Inputs smaller than this in all are merged on one thread: starting a thread costs tens of
/// microseconds, and `dedupe` merges the copies of an id pairwise, thousands of tiny merges.
const PARALLEL_FROM: usize = 1 << 20;

/// Whether work over this many bytes of input is worth spreading over threads.
pub(super) fn worth_threads(bytes: usize) -> bool {
    bytes >= PARALLEL_FROM
}

/// Whether two record lines hold the same JSON value, as comparing their parsed values says,
/// checking both as [`parse`] does (the first, then the second) but without building whole
/// values: when the two write the same keys in the same order, the entries are compared text to
/// text and only an entry whose text differs is parsed, so a record one side edited costs two
/// scans, not two trees. Keys in another order, or a repeated key among the differing entries,
/// compare the whole values.
pub(super) fn same_value<'l>(first: (Input, Line<'l>), second: (Input, Line<'l>)) -> Result<bool, Unmergeable> {
    // Each line checked as `parse` checks it, in its order: the layout, then the whole value
    // (numbers in range, no lone surrogate escape, serde_json's depth), then the other line.
    fn raw((input, line): (Input, Line<'_>)) -> Result<RawObject<'_>, Unmergeable> {
        let obj = RawObject::parse(line.bytes).map_err(|problem| Unmergeable { input, line: line.number, problem })?;
        serde_json::from_slice::<Checked>(line.bytes).map_err(|e| Unmergeable {
            input,
            line: line.number,
            problem: LineProblem::InvalidJson(e.to_string()),
        })?;
        Ok(obj)
    }
    let a = raw(first)?;
    let b = raw(second)?;
    if a.entries.len() == b.entries.len() && a.entries.iter().zip(&b.entries).all(|(x, y)| x.key == y.key) {
        let mut decided = true;
        for (x, y) in a.entries.iter().zip(&b.entries) {
            if x.raw_value == y.raw_value {
                continue;
            }
            let repeated = a.entries.iter().filter(|e| e.key == x.key).count() > 1;
            let values = (serde_json::from_str::<Value>(&x.raw_value), serde_json::from_str::<Value>(&y.raw_value));
            match values {
                (Ok(vx), Ok(vy)) if !repeated => {
                    if vx != vy {
                        return Ok(false);
                    }
                }
                _ => {
                    decided = false;
                    break;
                }
            }
        }
        if decided {
            return Ok(true);
        }
    }
    let value = |(input, line): (Input, Line<'_>)| {
        serde_json::from_slice::<Value>(line.bytes).map_err(|e| Unmergeable {
            input,
            line: line.number,
            problem: LineProblem::InvalidJson(e.to_string()),
        })
    };
    Ok(value(first)? == value(second)?)
}

/// A JSON text checked the way building a [`Value`] checks it (every number in range, no lone
/// surrogate escape, at most serde_json's nesting depth), without building it: the same parser,
/// so the same errors at the same places.
struct Checked;

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Checked, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> serde::de::Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

/// Checks that a line is a valid record, without building its value (a record only one side
/// changed is kept as it is).
pub(super) fn validate(input: Input, line: Line<'_>) -> Result<(), Unmergeable> {
    RawObject::parse(line.bytes).map(|_| ()).map_err(|problem| Unmergeable { input, line: line.number, problem })
}

/// Lines without an id are fine only when the same bytes stand in all three inputs.
pub(super) fn check_bad_lines(inputs: [(&Indexed<'_>, &IdIndex<'_>); 3], warnings: &mut Vec<Warning>) -> Result<(), Unmergeable> {
    for (side, index) in inputs {
        for (i, problem) in &index.bad {
            let line = index.file.lines[*i];
            if inputs.iter().all(|(_, s)| s.has_bad_line(line.bytes)) && *problem != LineProblem::ConflictMarker {
                if side.input == Input::Ours {
                    warnings.push(Warning::Note(format!(
                        "ours line {}: {problem}; the line is the same in all three versions and was kept as it is",
                        line.number
                    )));
                }
                continue;
            }
            return Err(Unmergeable { input: side.input, line: line.number, problem: problem.clone() });
        }
    }
    Ok(())
}

/// Whether `side` holds exactly the lines of `base` (as many times each), in any order: a side
/// that only reordered its lines. Blank lines do not count. One pass over each.
pub(super) fn only_moved(base: &IdIndex<'_>, side: &IdIndex<'_>) -> bool {
    let lines = |f: &IdIndex<'_>| f.file.lines.iter().filter(|l| !l.bytes.iter().all(u8::is_ascii_whitespace)).count();
    if lines(base) != lines(side) {
        return false;
    }
    let mut count: FxHashMap<&[u8], i64> = FxHashMap::default();
    count.reserve(base.file.lines.len());
    for l in &base.file.lines {
        *count.entry(l.bytes).or_default() += 1;
    }
    for l in &side.file.lines {
        *count.entry(l.bytes).or_default() -= 1;
    }
    count.into_iter().all(|(bytes, n)| n == 0 || bytes.iter().all(u8::is_ascii_whitespace))
}

/// The lines of `file` with byte-identical repeats of a record line dropped (the first copy
/// stays); `None` when there are none.
pub(super) fn collapse_repeats<'a>(file: &Jsonl<'a>) -> Option<Vec<Cow<'a, [u8]>>> {
    let mut seen: rustc_hash::FxHashSet<&[u8]> = rustc_hash::FxHashSet::default();
    seen.reserve(file.lines.len());
    let is_record = |bytes: &[u8]| crate::record::record_key(bytes).is_ok();
    let repeated = |l: &Line<'a>, seen: &mut rustc_hash::FxHashSet<&'a [u8]>| !seen.insert(l.bytes) && is_record(l.bytes);
    if !file.lines.iter().any(|l| repeated(l, &mut seen)) {
        return None;
    }
    seen.clear();
    Some(file.lines.iter().filter(|l| !repeated(l, &mut seen)).map(|l| Cow::Borrowed(l.bytes)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(bytes: &[u8]) -> Line<'_> {
        Line { number: 1, bytes }
    }

    /// What comparing two whole parsed values says, errors included (the old comparison).
    fn whole(a: &[u8], b: &[u8]) -> Result<bool, Unmergeable> {
        let (pa, pb) = (parse(Input::Base, line(a))?, parse(Input::Theirs, line(b))?);
        Ok(pa.value == pb.value)
    }

    #[test]
    fn same_value_says_what_comparing_whole_values_says() {
        let cases: [(&str, &str); 12] = [
            (r#"{"id":"a","s":"open"}"#, r#"{"id":"a","s":"closed"}"#),
            (r#"{"id":"a","s":"open"}"#, r#"{"id": "a", "s": "open"}"#),
            (r#"{"id":"a","s":"open"}"#, r#"{"s":"open","id":"a"}"#),
            (r#"{"id":"a","n":1}"#, r#"{"id":"a","n":1.0}"#),
            (r#"{"id":"a","t":"\u003c"}"#, r#"{"id":"a","t":"<"}"#),
            (r#"{"id":"a","s":"x","s":"open"}"#, r#"{"id":"a","s":"y","s":"open"}"#),
            // What a full parse refuses and a skim lets through: out-of-range numbers, a lone
            // surrogate escape, nesting past serde_json's limit; in base or in theirs.
            (r#"{"id":"a","n":1e400,"s":"open"}"#, r#"{"id":"a","n":1e400,"s":"closed"}"#),
            (r#"{"id":"a","t":"\ud800","s":"open"}"#, r#"{"id":"a","t":"\ud800","s":"closed"}"#),
            (r#"{"id":"a","s":"open"}"#, r#"{"id":"a","s":"closed","n":-1e999}"#),
            // Which line's error: base's, when both are bad.
            (r#"{"id":"a","n":1e400}"#, r#"{"id":"a","n":2"#),
            (r#"{"id":"a","s":"open"}"#, r#"{"id":"a","s":"open"} x"#),
            (r#"{"id":"a","s":"open"}"#, r#"{"id":"a","s":"open","d":{"e":"\udfff"}}"#),
        ];
        for (a, b) in cases {
            let (new, old) =
                (same_value((Input::Base, line(a.as_bytes())), (Input::Theirs, line(b.as_bytes()))), whole(a.as_bytes(), b.as_bytes()));
            assert_eq!(format!("{new:?}"), format!("{old:?}"), "{a} / {b}");
        }
        let deep = |n: usize| format!(r#"{{"id":"a","d":{}1{},"s":"open"}}"#, "[".repeat(n), "]".repeat(n));
        let (a, b) = (deep(127), deep(127).replace("open", "closed"));
        let (new, old) =
            (same_value((Input::Base, line(a.as_bytes())), (Input::Theirs, line(b.as_bytes()))), whole(a.as_bytes(), b.as_bytes()));
        assert_eq!(format!("{new:?}"), format!("{old:?}"), "nested 127 deep");
    }
}

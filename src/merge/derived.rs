//! Derived fields: values a tracker computes from the file, which a merge must keep true.
//!
//! Go `bd` 1.0.5 and later writes, after an issue's own keys, `dependency_count` (its
//! dependencies of type `blocks`), `dependent_count` (`blocks` dependencies elsewhere in the file
//! that point at it), `comment_count` (its comments) and may write a computed `parent` (the target
//! of its `parent-child` dependency). Nobody edits them, so a merge never takes them from a side:
//! wherever the merge, `resolve`, `dedupe` or an export writes a record that carries them, they are
//! recomputed from what is written, including the `dependent_count` of records a changed
//! dependency points at or stopped pointing at. A record that does not carry them never gains
//! them, and `parent` is only set when the record carries a count (so a dialect that edits a
//! `parent` field by hand is left alone) and has a `parent-child` dependency.

use std::borrow::Cow;

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::record::{json_string, parse_json_str, render_entries, RawObject};

/// The count keys; a record that carries one of them is a record with derived fields.
pub const COUNT_KEYS: [&str; 3] = ["dependency_count", "dependent_count", "comment_count"];

const DEPENDENCIES_KEY: &[u8] = b"\"dependencies\":";

/// Whether any line of `bytes` may carry a count (a fast textual pre-check).
pub fn mentions_counts(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, b"_count\"").is_some()
}

/// How many `blocks` dependencies point at each id, over the given record lines. Only the
/// `dependencies` array of each line is read (its `depends_on_id` and `type`).
pub fn dependents<'l>(lines: impl Iterator<Item = &'l [u8]>) -> FxHashMap<String, i64> {
    #[derive(serde::Deserialize)]
    struct Dep {
        #[serde(default)]
        depends_on_id: Option<String>,
        #[serde(default, rename = "type")]
        kind: Option<String>,
    }
    let finder = memchr::memmem::FinderRev::new(DEPENDENCIES_KEY);
    let mut out: FxHashMap<String, i64> = FxHashMap::default();
    for line in lines {
        // The last `"dependencies":` of a line is the record's own (a nested object comes before
        // it in every writer's order, and a string cannot hold an unescaped quote).
        let Some(at) = finder.rfind(line) else { continue };
        let array = &line[at + DEPENDENCIES_KEY.len()..];
        if let Some(Ok(deps)) = serde_json::Deserializer::from_slice(array).into_iter::<Vec<Dep>>().next() {
            for dep in deps {
                if let (Some(target), Some("blocks")) = (dep.depends_on_id, dep.kind.as_deref()) {
                    *out.entry(target).or_default() += 1;
                }
            }
        }
    }
    out
}

/// The derived values of one record, computed from its line and the file's `dependents`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    /// Its `blocks` dependencies.
    pub dependency_count: i64,
    /// `blocks` dependencies elsewhere that point at it.
    pub dependent_count: i64,
    /// Its comments.
    pub comment_count: i64,
    /// The target of its `parent-child` dependency.
    pub parent: Option<String>,
}

fn array(obj: &RawObject<'_>, key: &str) -> Vec<Value> {
    obj.get(key).and_then(|raw| serde_json::from_str::<Vec<Value>>(raw).ok()).unwrap_or_default()
}

/// The values `obj` should carry.
pub fn compute(obj: &RawObject<'_>, dependents: &FxHashMap<String, i64>) -> Derived {
    let deps = array(obj, "dependencies");
    let kind = |d: &Value| d.get("type").and_then(Value::as_str).map(str::to_owned);
    let id = obj.get("id").and_then(parse_json_str).map(Cow::into_owned).unwrap_or_default();
    Derived {
        dependency_count: deps.iter().filter(|d| kind(d).as_deref() == Some("blocks")).count() as i64,
        dependent_count: dependents.get(&id).copied().unwrap_or(0),
        comment_count: array(obj, "comments").len() as i64,
        parent: deps
            .iter()
            .find(|d| kind(d).as_deref() == Some("parent-child"))
            .and_then(|d| d.get("depends_on_id").and_then(Value::as_str).map(str::to_owned)),
    }
}

/// One derived value a line holds that disagrees with the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// The key.
    pub field: &'static str,
    /// The value as written (JSON text).
    pub written: String,
    /// The value the file implies (JSON text).
    pub computed: String,
}

/// The derived values `line` carries that disagree with what the file implies; empty when the
/// line carries none or all are right (or it is not a record).
pub fn stale(line: &[u8], dependents: &FxHashMap<String, i64>) -> Vec<Stale> {
    let Ok(obj) = RawObject::parse(line) else { return Vec::new() };
    stale_in(&obj, dependents)
}

fn stale_in(obj: &RawObject<'_>, dependents: &FxHashMap<String, i64>) -> Vec<Stale> {
    if !COUNT_KEYS.iter().any(|k| obj.get(k).is_some()) {
        return Vec::new();
    }
    let d = compute(obj, dependents);
    let mut out = Vec::new();
    for (field, value) in
        [("dependency_count", d.dependency_count), ("dependent_count", d.dependent_count), ("comment_count", d.comment_count)]
    {
        if let Some(raw) = obj.get(field) {
            if raw.trim().parse::<i64>().ok() != Some(value) {
                out.push(Stale { field, written: raw.to_owned(), computed: value.to_string() });
            }
        }
    }
    if let (Some(raw), Some(parent)) = (obj.get("parent"), &d.parent) {
        if parse_json_str(raw).as_deref() != Some(parent.as_str()) {
            out.push(Stale { field: "parent", written: raw.to_owned(), computed: json_string(parent, false) });
        }
    }
    out
}

/// `line` with its derived values made true, or `None` when they already are (or it carries
/// none). Only those values' text changes; every other byte stays.
pub fn fix_line(line: &[u8], dependents: &FxHashMap<String, i64>, go_style: bool) -> Option<String> {
    let mut obj = RawObject::parse(line).ok()?;
    let stale = stale_in(&obj, dependents);
    if stale.is_empty() {
        return None;
    }
    for s in stale {
        let value = if s.field == "parent" {
            json_string(parse_json_str(&s.computed).as_deref().unwrap_or_default(), go_style)
        } else {
            s.computed
        };
        if let Some(entry) = obj.entries.iter_mut().rfind(|e| e.key == s.field) {
            entry.raw_value = Cow::Owned(value);
        }
    }
    Some(render_entries(&obj.entries, obj.colon, obj.comma))
}

/// A whole file with every carried derived value recomputed (for `dedupe` and exports); `None`
/// when nothing changes. Lines that are not records are left as they are.
pub fn recompute_file(content: &[u8]) -> Option<Vec<u8>> {
    if !mentions_counts(content) {
        return None;
    }
    let file = crate::jsonl::Jsonl::split(content);
    let deps = dependents(file.lines.iter().map(|l| l.bytes));
    let go_style = crate::record::uses_go_escapes(content);
    let mut changed = false;
    let lines: Vec<Cow<'_, [u8]>> = file
        .lines
        .iter()
        .map(|l| match fix_line(l.bytes, &deps, go_style) {
            Some(text) => {
                changed = true;
                Cow::Owned(text.into_bytes())
            }
            None => Cow::Borrowed(l.bytes),
        })
        .collect();
    if !changed {
        return None;
    }
    let mut out = Vec::with_capacity(content.len());
    crate::jsonl::write_lines(&mut out, file.layout, lines.iter().map(std::convert::AsRef::as_ref)).expect("writing to a Vec cannot fail");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_recomputed_and_never_added() {
        let file = concat!(
            concat!(
                r#"{"id":"a","dependencies":[{"issue_id":"a","depends_on_id":"b","type":"blocks"},"#,
                r#"{"issue_id":"a","depends_on_id":"p","type":"parent-child"}],"#,
                r#""comments":[{"id":1},{"id":2}],"parent":"q","dependency_count":0,"#,
                r#""dependent_count":0,"comment_count":1}"#
            ),
            "\n",
            r#"{"id":"b","dependency_count":0,"dependent_count":0,"comment_count":0}"#,
            "\n",
            r#"{"id":"c","title":"no counts"}"#,
            "\n"
        );
        let out = String::from_utf8(recompute_file(file.as_bytes()).expect("stale counts")).expect("utf8");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].ends_with(r#""parent":"p","dependency_count":1,"dependent_count":0,"comment_count":2}"#), "{}", lines[0]);
        assert_eq!(lines[1], r#"{"id":"b","dependency_count":0,"dependent_count":1,"comment_count":0}"#);
        assert_eq!(lines[2], r#"{"id":"c","title":"no counts"}"#);
        assert!(recompute_file(out.as_bytes()).is_none(), "recomputing twice changes nothing");
    }
}

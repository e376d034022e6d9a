//! Comment ids in a merged file (README, "The merge rules, in plain words"): two comments added
//! on the two sides never share an id, and no two comments anywhere in the written file do.
//!
//! A comment's id is its clone's own database's counter, so two clones that each add a comment to
//! one issue both write the next number. The later comment (by `created_at`, then content) takes
//! the next id above the highest one in the file, and the record it is in gets the merge stamp
//! ([`super::stamp`]), like any record merged from both sides. Everything here is deterministic
//! and symmetric in the two sides.

use std::borrow::Cow;

use serde_json::Value;

use crate::conventions::identity;
use crate::record::{render_entries, split_array, Entry, RawObject};
use crate::timestamp;

/// A comment one side added to a record (its identity is not in the base record).
#[derive(Debug, Clone)]
pub(crate) struct AddedComment {
    /// The record's id.
    pub record: String,
    /// The comment's numeric id.
    pub number: i64,
    /// Its identity: the whole comment but its id.
    pub identity: String,
    /// Its `created_at`, for "the later comment".
    pub created_at: String,
}

/// The quoted key every comment search looks for.
pub(crate) const COMMENTS_KEY: &[u8] = b"\"comments\"";

/// Whether the text holds a `"comments"` key anywhere (a fast pre-check).
pub(crate) fn mentions_comments(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, COMMENTS_KEY).is_some()
}

/// The parsed `comments` array of a record line (empty when it has none or is not a record).
fn comments_of(line: &[u8]) -> Vec<Value> {
    let Ok(obj) = RawObject::parse(line) else {
        return Vec::new();
    };
    obj.get("comments").and_then(|raw| serde_json::from_str::<Vec<Value>>(raw).ok()).unwrap_or_default()
}

/// The comments `side` has in this record that `base` does not (by identity), with a numeric id.
pub(crate) fn added_comments(record: &str, base: Option<&[u8]>, side: &[u8]) -> Vec<AddedComment> {
    let before: rustc_hash::FxHashSet<String> = base.map(comments_of).unwrap_or_default().iter().map(|c| identity("comments", c)).collect();
    comments_of(side)
        .iter()
        .filter_map(|c| {
            let number = c.get("id").and_then(Value::as_i64)?;
            let identity = identity("comments", c);
            (!before.contains(&identity)).then(|| AddedComment {
                record: record.to_owned(),
                number,
                identity,
                created_at: c.get("created_at").and_then(Value::as_str).unwrap_or("").to_owned(),
            })
        })
        .collect()
}

/// The highest numeric comment id in a file (0 when it has none).
///
/// This reads every line that has comments, so it only deserialises the `comments` array, and of
/// each comment only its `id` (the rest is skipped unparsed): a few milliseconds on 100k issues.
pub(crate) fn highest_comment_id<'l>(lines: impl Iterator<Item = &'l [u8]>) -> i64 {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        #[serde(default)]
        id: Option<Value>,
    }
    let finder = memchr::memmem::Finder::new(COMMENTS_KEY);
    let mut highest = 0;
    for line in lines {
        for at in finder.find_iter(line) {
            let Some(array) = line[at + COMMENTS_KEY.len()..].strip_prefix(b":") else { continue };
            let parsed = serde_json::Deserializer::from_slice(array).into_iter::<Vec<IdOnly>>().next();
            if let Some(Ok(comments)) = parsed {
                for id in comments.iter().filter_map(|c| c.id.as_ref()?.as_i64()) {
                    highest = highest.max(id);
                }
            }
        }
    }
    highest
}

/// A comment to give a new id: in `record`, the comment with `identity` and id `from` gets `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Renumbering {
    /// The record's id.
    pub record: String,
    /// The comment's identity.
    pub identity: String,
    /// Its id on the side it came from.
    pub from: i64,
    /// Its id in the merged file.
    pub to: i64,
}

/// Comments added on the two sides that share an id: for each shared id, in
/// ascending order, the earliest comment (by `created_at`, then content) keeps it and each later
/// one takes the next id above `highest`. Neither the order of the sides nor of the lists
/// matters.
pub(crate) fn renumber_collisions(ours: &[AddedComment], theirs: &[AddedComment], highest: i64) -> Vec<Renumbering> {
    let theirs_numbers: rustc_hash::FxHashSet<i64> = theirs.iter().map(|c| c.number).collect();
    let shared: rustc_hash::FxHashSet<i64> = ours.iter().map(|c| c.number).filter(|n| theirs_numbers.contains(n)).collect();
    // Every comment under a shared id, grouped by id: one sort, not a scan per id.
    let mut sharing: Vec<&AddedComment> = ours.iter().chain(theirs).filter(|c| shared.contains(&c.number)).collect();
    let created: rustc_hash::FxHashMap<&str, Option<timestamp::Instant>> =
        sharing.iter().map(|c| (c.created_at.as_str(), timestamp::parse(&c.created_at))).collect();
    sharing.sort_by(|a, b| {
        a.number
            .cmp(&b.number)
            .then_with(|| compare_created(&a.created_at, &b.created_at, &created))
            .then_with(|| a.identity.cmp(&b.identity))
            .then_with(|| a.record.cmp(&b.record))
    });
    sharing.dedup_by(|a, b| a.number == b.number && a.identity == b.identity && a.record == b.record);
    let mut next = highest;
    let mut out = Vec::new();
    for (k, c) in sharing.iter().enumerate() {
        if k > 0 && sharing[k - 1].number == c.number {
            next += 1;
            out.push(Renumbering { record: c.record.clone(), identity: c.identity.clone(), from: c.number, to: next });
        }
    }
    out
}

/// [`timestamp::compare`] with the parsed instants looked up, not parsed again per comparison.
fn compare_created(a: &str, b: &str, parsed: &rustc_hash::FxHashMap<&str, Option<timestamp::Instant>>) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (parsed.get(a).copied().flatten(), parsed.get(b).copied().flatten()) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => a.cmp(b),
    }
}

/// The comment ids that occur more than once in `lines`, the lines that hold them (sorted) and
/// the highest comment id; `None` when no id repeats. Reads only the comments' ids.
fn repeated_comment_ids(lines: &[&[u8]]) -> Option<(rustc_hash::FxHashSet<i64>, Vec<usize>, i64)> {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        #[serde(default)]
        id: Option<Value>,
    }
    let finder = memchr::memmem::Finder::new(COMMENTS_KEY);
    let mut seen: rustc_hash::FxHashMap<i64, usize> = rustc_hash::FxHashMap::default();
    let mut repeated: Vec<i64> = Vec::new();
    let mut highest = 0;
    let mut involved: Vec<usize> = Vec::new();
    let mut first_line: rustc_hash::FxHashMap<i64, usize> = rustc_hash::FxHashMap::default();
    for (i, line) in lines.iter().enumerate() {
        for at in finder.find_iter(line) {
            let Some(array) = line[at + COMMENTS_KEY.len()..].strip_prefix(b":") else { continue };
            let parsed = serde_json::Deserializer::from_slice(array).into_iter::<Vec<IdOnly>>().next();
            let Some(Ok(comments)) = parsed else { continue };
            for number in comments.iter().filter_map(|c| c.id.as_ref()?.as_i64()) {
                highest = highest.max(number);
                let count = seen.entry(number).or_default();
                *count += 1;
                match *count {
                    1 => {
                        first_line.insert(number, i);
                    }
                    2 => {
                        repeated.push(number);
                        involved.extend(first_line.get(&number).copied());
                        involved.push(i);
                    }
                    _ => involved.push(i),
                }
            }
        }
    }
    if repeated.is_empty() {
        return None;
    }
    involved.sort_unstable();
    involved.dedup();
    Some((repeated.into_iter().collect(), involved, highest))
}

/// Comments that share a numeric id anywhere in a file (README "The merge rules, in plain words",
/// for every comment, not only those the two sides added): for each shared id, in ascending
/// order, the earliest comment (by `created_at`, then content, then record) keeps it and each
/// later one takes the next id above the highest in the file and in either side's
/// (`sides_highest`, asked only when an id repeats: an id a comment the merge deleted held is
/// never given again). The copies of an id that stands on
/// several lines are one record: an id they repeat between them is left alone, so those lines
/// stay exact (README "Duplicate ids"). The choice depends on content only, never on which line
/// or side a comment came from. Returns, per line index, the renumberings to apply; empty when
/// every id is unique (the common case costs one pass that reads only the comments' ids). One
/// sort of the comments involved, however many ids repeat.
pub(crate) fn shared_comment_ids(lines: &[&[u8]], sides_highest: impl FnOnce() -> i64) -> Vec<(usize, Renumbering)> {
    let Some((repeated, involved, highest)) = repeated_comment_ids(lines) else { return Vec::new() };
    let highest = highest.max(sides_highest());
    // Every comment holding a repeated id: (line, record, number, identity, created_at).
    let mut sites: Vec<(usize, String, i64, String, String)> = Vec::new();
    for &i in &involved {
        let Ok(obj) = RawObject::parse(lines[i]) else { continue };
        let record = obj.get("id").and_then(crate::record::parse_json_str).map(Cow::into_owned).unwrap_or_default();
        for c in comments_of(lines[i]) {
            let Some(number) = c.get("id").and_then(Value::as_i64) else { continue };
            if repeated.contains(&number) {
                let created = c.get("created_at").and_then(Value::as_str).unwrap_or("").to_owned();
                sites.push((i, record.clone(), number, identity("comments", &c), created));
            }
        }
    }
    let created: rustc_hash::FxHashMap<&str, Option<timestamp::Instant>> =
        sites.iter().map(|s| (s.4.as_str(), timestamp::parse(&s.4))).collect();
    let mut order: Vec<usize> = (0..sites.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&sites[a], &sites[b]);
        a.2.cmp(&b.2)
            .then_with(|| compare_created(&a.4, &b.4, &created))
            .then_with(|| a.3.cmp(&b.3))
            .then_with(|| a.1.cmp(&b.1))
            .then(a.0.cmp(&b.0))
    });
    let mut next = highest;
    let mut out = Vec::new();
    for group in order.chunk_by(|&a, &b| sites[a].2 == sites[b].2) {
        // The copies of one id (an id on several lines) may each hold the id: that is the same
        // record written twice, not two comments a tracker sees under one id. A collision is two
        // records holding it, or one line holding it for two different comments.
        let records: rustc_hash::FxHashSet<&str> = group.iter().map(|&k| sites[k].1.as_str()).collect();
        let mut on_line: rustc_hash::FxHashMap<usize, &str> = rustc_hash::FxHashMap::default();
        let twice_on_a_line = group.iter().any(|&k| *on_line.entry(sites[k].0).or_insert(sites[k].3.as_str()) != sites[k].3);
        if records.len() < 2 && !twice_on_a_line {
            continue;
        }
        // The earliest comment keeps the id; each later one (a record and a comment: the same on
        // every copy of that record) takes the next free id, on every line that holds it.
        let mut holder: Option<(&str, &str)> = None;
        let mut to = None;
        for &k in group {
            let (line, record, number, identity, _) = &sites[k];
            let this = (record.as_str(), identity.as_str());
            if holder != Some(this) {
                to = holder.map(|_| {
                    next += 1;
                    next
                });
                holder = Some(this);
            }
            if let Some(to) = to {
                out.push((*line, Renumbering { record: record.clone(), identity: identity.clone(), from: *number, to }));
            }
        }
    }
    out
}

/// Applies the renumberings of one record to its line; `None` when none of them matched. The
/// record then equals neither side, so it gets the merge stamp of `sides_updated_at` (the sides'
/// `updated_at` values), the same one the field merge gives, so stamping twice changes nothing.
pub(crate) fn apply_renumbering(
    line: &[u8],
    changes: &[&Renumbering],
    sides_updated_at: &[Option<String>],
    now: Option<timestamp::Instant>,
) -> Option<String> {
    let obj = RawObject::parse(line).ok()?;
    let (colon, comma) = (obj.colon.to_owned(), obj.comma.to_owned());
    let mut entries: Vec<Entry<'static>> = obj.entries.into_iter().map(Entry::into_owned).collect();
    let comments = entries.iter_mut().find(|e| e.key == "comments")?;
    let elements = split_array(&comments.raw_value)?;
    let by_comment: rustc_hash::FxHashMap<(i64, &str), &&Renumbering> =
        changes.iter().map(|c| ((c.from, c.identity.as_str()), c)).collect();
    let mut changed = false;
    let mut rendered = Vec::with_capacity(elements.len());
    for raw in elements {
        let value: Value = serde_json::from_str(raw).ok()?;
        let number = value.get("id").and_then(Value::as_i64);
        let identity = identity("comments", &value);
        match number.and_then(|n| by_comment.get(&(n, identity.as_str()))) {
            Some(change) => {
                let mut element = RawObject::parse_str(raw).ok()?;
                let id = element.entries.iter_mut().find(|e| e.key == "id")?;
                id.raw_value = Cow::Owned(change.to.to_string());
                rendered.push(element.render());
                changed = true;
            }
            None => rendered.push(raw.to_owned()),
        }
    }
    if !changed {
        return None;
    }
    comments.raw_value = Cow::Owned(format!("[{}]", rendered.join(&comma)));
    super::stamp::bump_updated_at(&mut entries, sides_updated_at, now);
    Some(render_entries(&entries, &colon, &comma))
}

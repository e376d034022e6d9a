//! `update-branch`'s decisions as trailers of its merge commit, and reading them back.
//!
//! `bd-merge update-branch` runs in a CI job's throwaway clone, so the merge log its driver runs
//! append to (see [`crate::merge_log`]) is gone with the job: the pull request's author would have
//! nothing to review or restore. So the merge commit carries each decision as a git trailer,
//! which `git interpret-trailers --parse` reads and every clone that fetches the commit has:
//!
//! ```text
//! Beads-Overridden: bd-5 title kept=theirs dropped="Five on topic"
//! Beads-Overridden: bd-9 description kept=ours dropped-cut=5120 "The first 200 bytes..."
//! Beads-Renamed: bd-10.1 to=bd-10.2 moved=theirs
//! ```
//!
//! `ours` is the branch being updated (the commit's first parent), `theirs` the base (its second
//! parent). An id, field or path holding a space, a quote or a control character is written as a
//! JSON string, and a value as compact JSON, so no newline ever enters a trailer; a value longer
//! than [`VALUE_BYTES`] is written cut, with its full size, and cannot be restored from the
//! trailer. `bd-merge review` reads the trailers of the last [`HISTORY_COMMITS`] merge commits
//! in HEAD's history and lists them beside the local log's entries; `--restore
//! HASH:N` re-applies one.

use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::value::RawValue;

use crate::merge::Labels;
use crate::merge_log::{Cut, Entry, Reason, Refusal};

/// The trailer of an overridden value (or record).
pub const OVERRIDDEN_KEY: &str = "Beads-Overridden";
/// The trailer of an issue moved to a new id.
pub const RENAMED_KEY: &str = "Beads-Renamed";
/// The trailer counting the decisions past [`MAX_TRAILERS`].
pub const OMITTED_KEY: &str = "Beads-Omitted";
/// The longest value (its JSON text) a trailer holds whole.
pub const VALUE_BYTES: usize = crate::merge_log::TRAILER_VALUE_BYTES;
/// The most decisions one merge commit carries as trailers; the rest are counted.
pub const MAX_TRAILERS: usize = 1000;
/// How many of HEAD's merge commits (newest first) `review` reads the trailers of.
pub const HISTORY_COMMITS: usize = 200;
/// The command the entries read back from trailers name.
pub const COMMAND: &str = "bd-merge update-branch";
const DEFAULT_PATH: &str = ".beads/issues.jsonl";

/// `text` as one trailer token: itself when plain, else a JSON string (control and
/// bidirectional-override characters as `\uXXXX`, so a commit message never carries them raw).
fn token(text: &str) -> String {
    let plain = !text.is_empty() && !text.starts_with('"') && !text.chars().any(|c| c.is_whitespace() || crate::record::is_unprintable(c));
    if plain {
        text.to_owned()
    } else {
        escape_unprintable(&crate::record::json_string(text, false))
    }
}

/// JSON text with every control or bidirectional-override character written `\uXXXX` (in JSON
/// such characters can only stand inside strings, where the escape means the same character).
fn escape_unprintable(json: &str) -> String {
    if !json.chars().any(crate::record::is_unprintable) {
        return json.to_owned();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if crate::record::is_unprintable(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A JSON value's text on one line, with no raw control or bidirectional-override character: as
/// written when it has none, else re-serialised compactly with those characters escaped.
fn one_line(json: &str) -> String {
    if !json.chars().any(crate::record::is_unprintable) {
        return json.to_owned();
    }
    let compact = serde_json::from_str::<serde_json::Value>(json).ok().and_then(|v| serde_json::to_string(&v).ok()).unwrap_or_else(|| {
        // Not JSON (it came from a log entry, which is): keep it a string, escaped.
        crate::record::json_string(json, false)
    });
    escape_unprintable(&compact)
}

/// The trailer lines (`Key: value`) for the decisions of one `update-branch` merge, at most
/// [`MAX_TRAILERS`] of them and one more counting the rest.
pub fn trailers(entries: &[Entry]) -> Vec<String> {
    let mut out = Vec::new();
    let decisions: Vec<&Entry> = entries.iter().filter(|e| e.reason != Reason::Omitted).collect();
    let omitted: u64 = entries.iter().filter(|e| e.reason == Reason::Omitted).map(|e| e.omitted).sum();
    for e in decisions.iter().take(MAX_TRAILERS) {
        let path = if e.path == DEFAULT_PATH { String::new() } else { format!(" path={}", token(&e.path)) };
        if e.reason == Reason::Rename {
            let to = e.kept.as_deref().and_then(|v| serde_json::from_str::<String>(v.get()).ok()).unwrap_or_default();
            out.push(format!("{RENAMED_KEY}: {} to={} moved={}{path}", token(&e.id), token(&to), token(&e.kept_from)));
            continue;
        }
        let logged_cut = e.cut.iter().find(|c| c.part == "dropped");
        let dropped = match (e.dropped.as_deref().map(RawValue::get), logged_cut) {
            (None, _) => "dropped=(absent)".to_owned(),
            // Cut in the log already: its beginning is a JSON string of the value's text.
            (Some(v), Some(cut)) => {
                let begins = serde_json::from_str::<String>(v).unwrap_or_default();
                format!("dropped-cut={} {}", cut.bytes, crate::record::json_string(crate::merge_log::prefix(&begins, VALUE_BYTES), false))
            }
            (Some(v), None) => {
                let v = one_line(v);
                if v.len() <= VALUE_BYTES {
                    format!("dropped={v}")
                } else {
                    format!("dropped-cut={} {}", v.len(), crate::record::json_string(crate::merge_log::prefix(&v, VALUE_BYTES), false))
                }
            }
        };
        out.push(format!("{OVERRIDDEN_KEY}: {} {} kept={}{path} {dropped}", token(&e.id), token(&e.field), token(&e.kept_from)));
    }
    let rest = decisions.len().saturating_sub(MAX_TRAILERS) as u64 + omitted;
    if rest > 0 {
        out.push(format!("{OMITTED_KEY}: {rest} more decision(s) of this merge; see the update-branch job's log"));
    }
    out
}

/// Reads one token off the front of `s`: a JSON string, or text up to the next space.
fn take_token(s: &str) -> Option<(String, &str)> {
    let s = s.trim_start_matches(' ');
    if s.starts_with('"') {
        let mut stream = serde_json::Deserializer::from_str(s).into_iter::<String>();
        let value = stream.next()?.ok()?;
        let rest = &s[stream.byte_offset()..];
        return Some((value, rest));
    }
    let end = s.find(' ').unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    Some((s[..end].to_owned(), &s[end..]))
}

/// Reads `name=TOKEN` off the front of `s`.
fn take_named<'a>(s: &'a str, name: &str) -> Option<(String, &'a str)> {
    let s = s.trim_start_matches(' ');
    take_token(s.strip_prefix(name)?.strip_prefix('=')?)
}

/// What a merge commit tells about the decisions it carries.
struct Commit<'a> {
    hash: &'a str,
    first_parent: &'a str,
    second_parent: &'a str,
    time: String,
}

impl Commit<'_> {
    fn entry(&self, seq: u64, id: String, field: String, path: String) -> Entry {
        let short = |h: &str| h.chars().take(12).collect::<String>();
        Entry {
            seq,
            time: self.time.clone(),
            command: COMMAND.to_owned(),
            path,
            head: Some(self.first_parent.to_owned()),
            labels: Labels {
                ours: format!("the branch at {}", short(self.first_parent)),
                theirs: format!("the base at {}", short(self.second_parent)),
            },
            rebase: false,
            id,
            field,
            kept: None,
            kept_from: String::new(),
            dropped: None,
            dropped_from: String::new(),
            reason: Reason::Newest,
            detail: format!("merged by update-branch in commit {}", short(self.hash)),
            cut: Vec::new(),
            omitted: 0,
            commit: Some(self.hash.to_owned()),
            unverified: false,
        }
    }
}

fn other_side(side: &str) -> &'static str {
    if side == "ours" {
        "theirs"
    } else {
        "ours"
    }
}

/// The entry of one trailer (`key`, `value`) of `commit`; `None` for anything else.
fn parse(commit: &Commit<'_>, seq: u64, key: &str, value: &str) -> Option<Entry> {
    let raw = |json: &str| RawValue::from_string(json.to_owned()).ok();
    if key.eq_ignore_ascii_case(RENAMED_KEY) {
        let (from, rest) = take_token(value)?;
        let (to, rest) = take_named(rest, "to")?;
        let (side, rest) = take_named(rest, "moved")?;
        let path = take_named(rest, "path").map_or_else(|| DEFAULT_PATH.to_owned(), |(p, _)| p);
        let mut e = commit.entry(seq, from.clone(), "id".to_owned(), path);
        e.reason = Reason::Rename;
        e.kept = raw(&crate::record::json_string(&to, false));
        e.dropped = raw(&crate::record::json_string(&from, false));
        e.kept_from.clone_from(&side);
        e.dropped_from = side;
        return Some(e);
    }
    if !key.eq_ignore_ascii_case(OVERRIDDEN_KEY) {
        return None;
    }
    let (id, rest) = take_token(value)?;
    let (field, rest) = take_token(rest)?;
    let (kept_from, mut rest) = take_named(rest, "kept")?;
    let mut path = DEFAULT_PATH.to_owned();
    if let Some((p, r)) = take_named(rest, "path") {
        path = p;
        rest = r;
    }
    let rest = rest.trim_start_matches(' ');
    let mut e = commit.entry(seq, id, field, path);
    e.dropped_from = other_side(&kept_from).to_owned();
    e.kept_from = kept_from;
    if e.field == "(record)" {
        e.reason = Reason::DeleteVsModify;
    }
    if let Some(json) = rest.strip_prefix("dropped=") {
        if json != "(absent)" {
            // A value that is not JSON is no value to restore.
            e.dropped = Some(raw(json)?);
        }
    } else if let Some(cut) = rest.strip_prefix("dropped-cut=") {
        let (bytes, begins) = cut.split_once(' ')?;
        e.cut.push(Cut { part: "dropped".to_owned(), bytes: bytes.parse().ok()? });
        e.dropped = Some(raw(begins)?);
    } else {
        return None;
    }
    Some(e)
}

/// The decisions carried by trailers of the last [`HISTORY_COMMITS`] merge commits in HEAD's
/// history of the repository at `repo`, oldest first; none outside a
/// repository or on an unborn branch.
pub fn from_history(repo: &Path) -> Result<Vec<Entry>> {
    if crate::git::run(repo, &["rev-parse", "--verify", "--quiet", "HEAD"]).is_err() {
        return Ok(Vec::new());
    }
    let limit = format!("--max-count={HISTORY_COMMITS}");
    let log =
        crate::git::run(repo, &["log", &limit, "--min-parents=2", "--format=%H%x00%P%x00%cI%x00%(trailers:only,unfold)%x1e", "HEAD", "--"])
            .context("reading the trailers of HEAD's merge commits")?;
    let mut per_commit: Vec<Vec<Entry>> = Vec::new();
    for record in log.split('\u{1e}') {
        let mut parts = record.trim_start_matches('\n').splitn(4, '\0');
        let (Some(hash), Some(parents), Some(time), Some(trailers)) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let mut parents = parents.split(' ');
        let (Some(first_parent), Some(second_parent)) = (parents.next(), parents.next()) else { continue };
        let time = crate::timestamp::parse(time)
            .and_then(|t| crate::timestamp::write_like(t, "2000-01-01T00:00:00Z"))
            .unwrap_or_else(|| time.to_owned());
        let commit = Commit { hash, first_parent, second_parent, time };
        let mut seq = 0;
        let mut entries = Vec::new();
        for line in trailers.lines() {
            let Some((key, value)) = line.split_once(':') else { continue };
            let Some(e) = parse(&commit, seq + 1, key.trim(), value.trim()) else { continue };
            seq += 1;
            entries.push(e);
        }
        if !entries.is_empty() {
            verify(repo, [hash, first_parent, second_parent], &mut entries)?;
        }
        per_commit.push(entries);
    }
    // git log lists newest first; the list is oldest first (one pass, not an insert at the
    // front per commit).
    Ok(per_commit.into_iter().rev().flatten().collect())
}

/// Holds each of one merge commit's trailer entries against the commit's own files (`commits`:
/// the merge, its first parent `ours`, its second parent `theirs`): an entry is believed only
/// when the merge's issues file holds, for its field, the value of the side the trailer says was
/// kept, and the other side's parent the value it says was dropped (a rename: the merge holds
/// the new id, the moved side's parent the old one and not the new). A believed entry gets its
/// kept value from the merge's file (so a value that existed on both sides is shown as it was);
/// any other is marked [`Entry::unverified`]. A hand-written merge commit that never touched the
/// file, or whose trailer names a value of the author's choosing, is never restored.
fn verify(repo: &Path, commits: [&str; 3], entries: &mut [Entry]) -> Result<()> {
    let mut paths: Vec<String> = entries.iter().map(|e| e.path.clone()).collect();
    paths.sort();
    paths.dedup();
    // Per path: the merge's, ours' and theirs' file, as the lines of the entries' ids.
    let ids: std::collections::HashSet<String> = entries
        .iter()
        .flat_map(|e| [e.id.clone(), e.kept.as_deref().and_then(|k| serde_json::from_str::<String>(k.get()).ok()).unwrap_or_default()])
        .collect();
    let specs: Vec<String> = paths.iter().flat_map(|p| commits.iter().map(move |c| format!("{c}:{p}"))).collect();
    let mut lines: Vec<Option<std::collections::HashMap<String, String>>> = Vec::with_capacity(specs.len());
    crate::git::for_each_blob(repo, &specs, |_, blob| {
        lines.push(blob.map(|content| {
            ids.iter()
                .filter(|id| !id.is_empty())
                .filter_map(|id| Some((id.clone(), String::from_utf8_lossy(crate::record::line_of(content, id)?).into_owned())))
                .collect()
        }));
        Ok(())
    })?;
    for e in entries.iter_mut() {
        let Some(at) = paths.iter().position(|p| *p == e.path) else { continue };
        let file = |k: usize| lines.get(at * 3 + k).and_then(Option::as_ref);
        let line = |k: usize, id: &str| file(k).and_then(|f| f.get(id)).map(String::as_str);
        let (kept_k, dropped_k) = if e.kept_from == "ours" { (1, 2) } else { (2, 1) };
        let believed = if e.reason == Reason::Rename {
            let to = e.kept.as_deref().and_then(|k| serde_json::from_str::<String>(k.get()).ok()).unwrap_or_default();
            let moved_k = if e.kept_from == "ours" { 1 } else { 2 };
            line(0, &to).is_some() && line(moved_k, &e.id).is_some() && line(moved_k, &to).is_none()
        } else if e.field == "(record)" {
            line(0, &e.id).is_some() && line(0, &e.id) == line(kept_k, &e.id) && line(dropped_k, &e.id).is_none()
        } else {
            let dropped = e.dropped.as_deref().map(RawValue::get);
            let value = |k: usize| line(k, &e.id).map(|l| crate::merge_log::value_in_record(l, &e.field, dropped));
            let same = |a: &Option<String>, b: Option<&str>| match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => {
                    serde_json::from_str::<serde_json::Value>(a).ok() == serde_json::from_str::<serde_json::Value>(b).ok()
                }
                _ => false,
            };
            match (value(0), value(kept_k), value(dropped_k)) {
                (Some(merged), Some(kept), Some(other)) => {
                    // A value logged cut is checked by its kept side alone.
                    let dropped_ok = !e.cut.is_empty() || same(&other, dropped);
                    let ok = merged == kept && dropped_ok && !same(&merged, other.as_deref());
                    if ok {
                        e.kept = merged.and_then(|m| RawValue::from_string(m).ok());
                    }
                    ok
                }
                _ => false,
            }
        };
        e.unverified = !believed;
    }
    Ok(())
}

/// The entry `address` (`HASH:N`, the N-th trailer of a merge commit whose hash starts with
/// HASH) names among `entries`; `Err` says why none or several do.
pub fn find<'a>(entries: &'a [Entry], address: &str) -> std::result::Result<&'a Entry, Refusal> {
    let shown = crate::record::printable(address, 80);
    let Some((hash, n)) = address.split_once(':') else { return Err(Refusal::NotAnAddress { address: shown }) };
    let Ok(n) = n.parse::<u64>() else {
        return Err(Refusal::NotANumber { address: shown, n: crate::record::printable(n, 40) });
    };
    let hash = hash.to_ascii_lowercase();
    if hash.len() < 4 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Refusal::NotAHash { address: shown, hash: crate::record::printable(&hash, 60) });
    }
    let found: Vec<&Entry> = entries.iter().filter(|e| e.seq == n && e.commit.as_deref().is_some_and(|c| c.starts_with(&hash))).collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(Refusal::NoTrailer { address: shown, searched: HISTORY_COMMITS }),
        _ => Err(Refusal::SeveralTrailers { address: shown, count: found.len() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit() -> Commit<'static> {
        Commit { hash: "aaaa1111", first_parent: "bbbb2222", second_parent: "cccc3333", time: "t".to_owned() }
    }

    #[test]
    fn a_trailer_reads_back_as_the_decision_it_was_written_from() {
        let c = commit();
        let mut e = c.entry(1, "bd 1\nx".to_owned(), "title".to_owned(), DEFAULT_PATH.to_owned());
        e.kept_from = "theirs".to_owned();
        e.dropped_from = "ours".to_owned();
        e.dropped = RawValue::from_string("\"a \\\"quoted\\\"\\nvalue\"".to_owned()).ok();
        let lines = trailers(std::slice::from_ref(&e));
        assert_eq!(lines.len(), 1);
        assert!(!lines[0].contains('\n'), "{}", lines[0]);
        let (key, value) = lines[0].split_once(": ").expect("a trailer");
        let back = parse(&c, 1, key, value).expect("parsed");
        assert_eq!((back.id.as_str(), back.field.as_str(), back.kept_from.as_str()), ("bd 1\nx", "title", "theirs"));
        assert_eq!(back.dropped.as_deref().map(RawValue::get), e.dropped.as_deref().map(RawValue::get));
    }

    #[test]
    fn control_and_bidi_characters_never_reach_the_message_raw() {
        let c = commit();
        let mut e = c.entry(1, "bd-\u{202e}1".to_owned(), "title".to_owned(), DEFAULT_PATH.to_owned());
        e.kept_from = "theirs".to_owned();
        e.dropped_from = "ours".to_owned();
        e.dropped = RawValue::from_string("\"evil \u{2066}\u{1b}[31m title\"".to_owned()).ok();
        let lines = trailers(std::slice::from_ref(&e));
        assert!(!lines[0].chars().any(crate::record::is_unprintable), "{:?}", lines[0]);
        let (key, value) = lines[0].split_once(": ").expect("a trailer");
        let back = parse(&c, 1, key, value).expect("parsed");
        assert_eq!(back.id, e.id);
        let as_value = |r: Option<&RawValue>| r.and_then(|r| serde_json::from_str::<serde_json::Value>(r.get()).ok());
        assert_eq!(as_value(back.dropped.as_deref()), as_value(e.dropped.as_deref()));
    }

    #[test]
    fn a_long_value_is_cut_and_named_unrestorable() {
        let c = commit();
        let mut e = c.entry(1, "bd-1".to_owned(), "description".to_owned(), DEFAULT_PATH.to_owned());
        e.kept_from = "ours".to_owned();
        e.dropped = RawValue::from_string(crate::record::json_string(&"é".repeat(300), false)).ok();
        let lines = trailers(&[e]);
        let (key, value) = lines[0].split_once(": ").expect("a trailer");
        assert!(value.contains("dropped-cut=602 "), "{value}");
        let back = parse(&c, 1, key, value).expect("parsed");
        assert_eq!(back.cut.first().map(|c| c.bytes), Some(602));
    }
}

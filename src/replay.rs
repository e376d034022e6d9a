//! After a rebase: records the replay left older than what the tracker already imported.
//!
//! br imports by last-write-wins on `updated_at`. `git pull` can merge a teammate's change into
//! your edit (a merge commit whose records br imports at once), and a later `git pull --rebase`
//! drops that merge commit and replays your own commit, with its own older `updated_at`, onto an
//! upstream where the teammate's change was undone. When git replays without our driver (upstream
//! left the issues file as your commit's parent had it) the replayed record is your commit's,
//! byte for byte, older than what br holds: br skips it, and its next flush writes the dropped
//! merge's state back over the upstream's, in every clone. So after a rebase, every record whose
//! content differs from the one the pre-rebase tip (`ORIG_HEAD`) held, with an `updated_at` no
//! later than that one's, gets the merge stamp (docs/merge-rules.md, "Timestamps of merged
//! records"), whether git replayed it alone or through the driver.

use std::borrow::Cow;
use std::path::Path;

use anyhow::{Context, Result};
use rustc_hash::FxHashMap;

use crate::jsonl::{self, Jsonl};
use crate::record::{parse_json_str, record_key, render_entries, Key, RawObject};
use crate::timestamp::{self, Instant};

/// A record's `updated_at` (as an instant and as written) and its `created_at` instant.
fn stamps(obj: &RawObject<'_>) -> Option<(Instant, String, Option<Instant>)> {
    let text = parse_json_str(obj.get("updated_at")?)?.into_owned();
    let created = obj.get("created_at").and_then(parse_json_str).and_then(|c| timestamp::parse(&c));
    Some((timestamp::parse(&text)?, text, created))
}

/// The lines of `new` whose record differs from `old`'s record of the same id and whose
/// `updated_at` is not later than `old`'s, given the merge stamp (past both, never before `now`).
/// Returns the new content and the ids stamped (empty, and `new` untouched, when none).
pub fn restamp(old: &[u8], new: &[u8], now: Option<Instant>) -> (Vec<u8>, Vec<String>) {
    let old_file = Jsonl::split(old);
    let mut before: FxHashMap<Cow<'_, str>, &[u8]> = FxHashMap::default();
    for line in &old_file.lines {
        if let Ok(Key::Issue(id)) = record_key(line.bytes) {
            before.entry(id).or_insert(line.bytes);
        }
    }
    let new_file = Jsonl::split(new);
    let mut ids = Vec::new();
    let mut lines: Vec<Cow<'_, [u8]>> = Vec::with_capacity(new_file.lines.len());
    for line in &new_file.lines {
        let stamped = (|| {
            let Ok(Key::Issue(id)) = record_key(line.bytes) else { return None };
            let old_line = *before.get(id.as_ref())?;
            if old_line == line.bytes {
                return None;
            }
            // Each line parsed once: the new one is also the one rewritten.
            let obj = RawObject::parse(line.bytes).ok()?;
            let ((was, was_text, was_created), (is, is_text, is_created)) = (stamps(&RawObject::parse(old_line).ok()?)?, stamps(&obj)?);
            // Not older, or another issue under the id (two issues created under one id, one
            // moved): not a replay of this one.
            if is > was || was_created != is_created {
                return None;
            }
            let mut entries = obj.entries.clone();
            if !crate::merge::stamp::bump_updated_at(&mut entries, &[Some(was_text), Some(is_text)], now) {
                return None;
            }
            ids.push(id.into_owned());
            Some(render_entries(&entries, obj.colon, obj.comma).into_bytes())
        })();
        lines.push(stamped.map_or(Cow::Borrowed(line.bytes), Cow::Owned));
    }
    if ids.is_empty() {
        return (new.to_vec(), ids);
    }
    let mut out = Vec::with_capacity(new.len() + 64 * ids.len());
    // Writing to a Vec cannot fail.
    let _ = jsonl::write_lines(&mut out, new_file.layout, lines.iter().map(AsRef::as_ref));
    (out, ids)
}

/// After a rebase in the repository holding `file`: [`restamp`] the file against the one the
/// pre-rebase tip (`ORIG_HEAD`) held, and write it back (atomically) when a record changed.
/// Returns the ids stamped; none when there is no `ORIG_HEAD` or it held no such file, and none
/// (without reading either version) when `HEAD` holds the file as `ORIG_HEAD` did: the
/// post-rewrite hook runs before a rebase's autostash is applied, so the file is `HEAD`'s then.
pub fn restamp_after_rebase(file: &Path, now: Option<Instant>) -> Result<Vec<String>> {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = file.file_name().context("the issues file has no name")?.to_string_lossy().into_owned();
    if crate::git::same_file_at(dir, "ORIG_HEAD", "HEAD", &name) {
        return Ok(Vec::new());
    }
    let Some(old) = crate::git::file_at(dir, "ORIG_HEAD", &name)? else { return Ok(Vec::new()) };
    restamp_file(file, &old, now, || {})
}

/// [`restamp`] of the file at `file` against `old`, written back only if no other writer
/// replaced or changed the file since it was read (`before_write` runs in between: a seam for
/// the test of that race). A second writer's file is never overwritten: that is an error.
fn restamp_file(file: &Path, old: &[u8], now: Option<Instant>, before_write: impl FnOnce()) -> Result<Vec<String>> {
    let read = crate::safe_fs::Identity::of(&std::fs::metadata(file).with_context(|| format!("reading {}", file.display()))?);
    let new = jsonl::read(file)?;
    let (content, ids) = restamp(old, &new, now);
    if ids.is_empty() {
        return Ok(ids);
    }
    before_write();
    let written = crate::safe_fs::write_atomic_if_unchanged(file, Some(read), |w| w.write_all(&content))?;
    anyhow::ensure!(
        written.is_some(),
        "{} changed while its rebased records were being stamped; it was left as the other writer made it",
        file.display()
    );
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_records_that_changed_backward_in_time_are_stamped() {
        let old = concat!(
            r#"{"id":"a","status":"closed","updated_at":"2026-01-01T10:00:05Z"}"#,
            "\n",
            r#"{"id":"b","status":"open","updated_at":"2026-01-01T10:00:00Z"}"#,
            "\n",
            r#"{"id":"c","status":"open","updated_at":"2026-01-01T10:00:00Z"}"#,
            "\n"
        );
        let new = concat!(
            r#"{"id":"a","status":"open","assignee":"me","updated_at":"2026-01-01T10:00:03Z"}"#,
            "\n",
            r#"{"id":"b","status":"closed","updated_at":"2026-01-01T10:00:09Z"}"#,
            "\n",
            r#"{"id":"c","status":"open","updated_at":"2026-01-01T10:00:00Z"}"#,
            "\n",
            r#"{"id":"d","status":"open","updated_at":"2026-01-01T09:00:00Z"}"#,
            "\n"
        );
        let (out, ids) = restamp(old.as_bytes(), new.as_bytes(), timestamp::parse("2026-01-01T11:00:00Z"));
        assert_eq!(ids, ["a"]);
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.starts_with(r#"{"id":"a","status":"open","assignee":"me","updated_at":"2026-01-01T11:00:00Z"}"#), "{text}");
        assert!(text.ends_with(&new[new.find(r#"{"id":"b""#).unwrap_or(0)..]), "the others untouched:\n{text}");
        let (same, none) = restamp(new.as_bytes(), new.as_bytes(), None);
        assert!(none.is_empty() && same == new.as_bytes());
    }

    #[test]
    fn a_second_writer_during_the_stamp_is_never_overwritten() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("issues.jsonl");
        let old = b"{\"id\":\"a\",\"updated_at\":\"2026-01-01T10:00:05Z\"}\n";
        std::fs::write(&file, b"{\"id\":\"a\",\"updated_at\":\"2026-01-01T10:00:01Z\"}\n").expect("write");
        let theirs = b"{\"id\":\"a\",\"title\":\"the other writer's\",\"updated_at\":\"2026-01-01T12:00:00Z\"}\n";
        let raced = restamp_file(&file, old, None, || std::fs::write(&file, theirs).expect("the other writer"));
        assert!(raced.is_err(), "{raced:?}");
        assert_eq!(std::fs::read(&file).expect("read"), theirs);
        // Without a second writer the stamp is written.
        std::fs::write(&file, b"{\"id\":\"a\",\"updated_at\":\"2026-01-01T10:00:01Z\"}\n").expect("write");
        assert_eq!(restamp_file(&file, old, None, || {}).expect("stamped"), ["a"]);
    }

    #[test]
    fn hostile_lines_pass_through_byte_for_byte() {
        let old = b"{\"id\":\"a\",\"updated_at\":\"2026-01-01T10:00:05Z\"}\n\xff\xfe not json\n<<<<<<< HEAD\n";
        let new = b"\xef\xbb\xbf{\"id\":\"a\",\"title\":\"\\u001b[31m\",\"updated_at\":\"2026-01-01T10:00:01Z\"}\r\n\xff\xfe not \
            json\r\n<<<<<<< HEAD\r\n{\"id\":\"b\",\"updated_at\":\"not a time\"}\r\n";
        let (out, ids) = restamp(old, new, timestamp::parse("2026-01-01T11:00:00Z"));
        assert_eq!(ids, ["a"]);
        let expected = b"\xef\xbb\xbf{\"id\":\"a\",\"title\":\"\\u001b[31m\",\"updated_at\":\"2026-01-01T11:00:00Z\"}\r\n\xff\xfe not \
            json\r\n<<<<<<< HEAD\r\n{\"id\":\"b\",\"updated_at\":\"not a time\"}\r\n";
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(expected));
    }
}

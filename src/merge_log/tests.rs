use super::format::{for_each_line, lines_within_bound, raw, seq_of, Tail, APPEND_BYTES, LINE_BYTES, TEXT_BYTES};
use super::restore::{set_at, value_at};
use super::review::not_restorable;
use super::*;
use crate::fix::Fix;
use crate::merge::Labels;

/// The tests' wording of a fix: its name, so a test never depends on a binary's spelling.
fn word(fix: &Fix) -> String {
    format!("{fix:?}")
}

#[test]
fn since_reads_instants_dates_and_ages() {
    let now = crate::timestamp::parse("2026-01-05T10:00:00Z").expect("instant");
    assert_eq!(parse_since("2d", now).expect("age").seconds, now.seconds - 2 * 86_400);
    assert_eq!(parse_since("2026-01-04", now).expect("date").seconds, now.seconds - 86_400 - 36_000);
    assert!(parse_since("yesterday", now).is_err());
}

#[test]
fn a_hostile_log_line_is_rendered_escaped_and_never_panics() {
    let line = concat!(
        r#"{"seq":3,"time":"2026-01-05T10:00:00Z","command":"bd-merge\u001b[2J","#,
        r#""path":".beads/issues.jsonl","head":"aééééééééééééééé","labels":{"ours":"HEAD","#,
        r#""theirs":"x\ny"},"id":"bd-1\u0007","field":"title","kept":"a\u001b[31mred","#,
        r#""kept_from":"ours","dropped":"b","dropped_from":"theirs","reason":"newest"}"#
    );
    let entry: Entry = serde_json::from_str(line).expect("an entry");
    let out = render(&[entry], &word);
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out}");
    assert!(out.contains(&format!("HEAD a{}\n", "é".repeat(11))), "{out}");
}

fn decision(id: &str, value_len: usize) -> Entry {
    let value = |side: &str| raw(Some(&crate::record::json_string(&format!("{side} {}", "x".repeat(value_len)), false)));
    Entry {
        kept: value("ours"),
        kept_from: "ours".into(),
        dropped: value("theirs"),
        dropped_from: "theirs".into(),
        id: id.into(),
        field: "description".into(),
        reason: Reason::Newest,
        command: "bd-merge".into(),
        path: ".beads/issues.jsonl".into(),
        ..blank()
    }
}

fn blank() -> Entry {
    Entry {
        seq: 0,
        time: String::new(),
        command: String::new(),
        path: String::new(),
        head: None,
        labels: Labels::default(),
        rebase: false,
        id: String::new(),
        field: String::new(),
        kept: None,
        kept_from: String::new(),
        dropped: None,
        dropped_from: String::new(),
        reason: Reason::Newest,
        detail: String::new(),
        cut: Vec::new(),
        omitted: 0,
        commit: None,
        unverified: false,
    }
}

#[test]
fn a_merge_dropping_more_than_a_generation_holds_logs_what_fits_and_counts_the_rest() {
    let entries: Vec<Entry> = (0..20_000).map(|i| decision(&format!("bd-{i}"), 1000)).collect();
    let bytes = lines_within_bound(entries, 7, "2026-01-05T10:00:00Z").expect("serialized");
    assert!(bytes.len() <= APPEND_BYTES, "{} bytes", bytes.len());
    let lines: Vec<Entry> =
        bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("entry")).collect();
    let last = lines.last().expect("entries");
    assert_eq!(last.reason, Reason::Omitted);
    assert_eq!(last.omitted as usize + lines.len() - 1, 20_000, "every decision logged or counted");
    assert!(lines.iter().enumerate().all(|(i, e)| e.seq == 7 + i as u64), "numbered in order");
    assert!(lines[0].cut.iter().any(|c| c.part == "dropped" && c.bytes == 1009), "{:?}", lines[0].cut);
    assert!(matches!(not_restorable(&lines[0]), Some(NotRestorable::Cut { .. })));
    assert!(render(&lines[lines.len() - 1..], &word).contains("more decision(s) of this merge were not logged"));
}

#[test]
fn a_few_decisions_are_logged_whole_and_long_texts_cut() {
    let mut long_id = decision(&"i".repeat(10_000), 10);
    long_id.detail = "d".repeat(5000);
    let bytes = lines_within_bound(vec![decision("bd-1", 10), long_id], 1, "t").expect("serialized");
    let lines: Vec<Entry> =
        bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("entry")).collect();
    assert!(lines[0].cut.is_empty() && not_restorable(&lines[0]).is_none());
    let parts: Vec<&str> = lines[1].cut.iter().map(|c| c.part.as_str()).collect();
    assert_eq!(parts, ["id", "detail"]);
    assert_eq!(lines[1].id.len(), TEXT_BYTES);
}

#[test]
fn lines_are_read_whole_or_by_their_head_and_a_cut_last_line_still_comes() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("log");
    let long = format!("{{\"seq\":41,\"x\":\"{}\"}}", "y".repeat(LINE_BYTES + 10));
    std::fs::write(&path, format!("a\n{long}\n\nb\n{{\"seq\":42,\"ti")).expect("write");
    let mut seen = Vec::new();
    for_each_line(std::fs::File::open(&path).expect("open"), |line, whole| seen.push((line.len().min(80), whole))).expect("read");
    assert_eq!(seen, [(1, true), (64, false), (0, true), (1, true), (13, true)]);
    let tail = Tail::of(&path).expect("tail");
    assert_eq!((tail.max_seq, tail.ends_in_newline), (Some(42), false), "a cut line's number still counts");
    assert_eq!(seq_of(b"{\"seq\":12,\"time\"", false), Some(12));
    assert_eq!(seq_of(b"{\"seq\":12", false), None, "digits cut short are no number");
}

#[test]
fn restore_refuses_a_number_that_older_concurrent_merges_gave_twice() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut one = serde_json::to_string(&Entry { seq: 1, ..decision("bd-1", 3) }).expect("json");
    one.push('\n');
    std::fs::write(dir.path().join(LOG_NAME), one.repeat(2)).expect("write");
    let file = dir.path().join("issues.jsonl");
    std::fs::write(&file, "{\"id\":\"bd-1\",\"description\":\"ours xxx\"}\n").expect("write");
    match restore(dir.path(), 1, &file).expect("an outcome") {
        RestoreOutcome::Refused(why) => assert_eq!(why, Refusal::Ambiguous { seq: 1, count: 2 }),
        other @ RestoreOutcome::Restored(_) => panic!("{other:?}"),
    }
}

#[test]
fn set_and_read_nested_values() {
    let rec = r#"{"id":"a","metadata":{"owner":"x"},"title":"t"}"#;
    assert_eq!(value_at(rec, &["metadata", "owner"]).as_deref(), Some("\"x\""));
    let set = set_at(rec, &["metadata", "owner"], Some("\"y\""), false).expect("object");
    assert_eq!(set, r#"{"id":"a","metadata":{"owner":"y"},"title":"t"}"#);
    let removed = set_at(rec, &["title"], None, false).expect("object");
    assert_eq!(removed, r#"{"id":"a","metadata":{"owner":"x"}}"#);
}

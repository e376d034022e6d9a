//! Fuzz target: one issues file (or one line) through every parser that meets its bytes: the
//! line splitter, the record key and id readers, the raw key/value scanner (re-rendered), the
//! id index and snapshot, `check`'s file checks, the text conversion and the diff report, and
//! the printable escapes. Any panic, abort or hang is a bug: the input is untrusted.
#![no_main]

use beads_git::{check, diff, issue_diff, jsonl, record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let file = jsonl::Jsonl::split(data);
    for line in &file.lines {
        let _ = record::record_key(line.bytes);
        let _ = record::record_id(line.bytes);
        if let Ok(obj) = record::RawObject::parse(line.bytes) {
            let _ = record::render_entries(&obj.entries, ":", ",");
        }
        let _ = record::printable(&String::from_utf8_lossy(line.bytes), 80);
    }
    let _ = check::check_file(data);
    if let Ok(snapshot) = diff::Snapshot::parse(data.to_vec(), true, None) {
        let _ = diff::changes(&snapshot, &diff::Snapshot::default());
    }
    let text = issue_diff::textconv(data);
    assert!(!text.chars().any(|c| c != '\n' && record::is_unprintable(c)), "textconv printed a raw control character");
    if let Ok(changes) = issue_diff::diff_files(Vec::new(), data.to_vec()) {
        let _ = issue_diff::render(&changes, issue_diff::Style { color: false });
    }
});

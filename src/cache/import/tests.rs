//! The import's unit tests: block sizes, and a file rewritten between the two passes.

/// The br command after a rename is named only where br's state could be read (its database
/// beside the file, br answering `sync --status`): never a guess. The states themselves are
/// tried with the real br in `br_roundtrip::the_advice_after_a_merge_moved_an_issue_fits_the_clones_state`.
#[test]
fn the_br_advice_after_a_rename_is_never_a_guess() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("issues.jsonl");
    let report = ImportReport { renamed: vec![RenamedIssue { from: "p.1".into(), to: "p.2".into() }], ..ImportReport::default() };
    std::fs::write(&file, "{\"id\":\"p.1\"}\n{\"id\":\"p.2\",\"comments\":[{\"id\":1,\"text\":\"x\"}]}\n").expect("write");
    let said = rename_notice(&report, &file).expect("a notice");
    assert!(said.to_string().contains("p.1 is now p.2") && said.fix.is_none() && !said.unsettled, "no br database: {said:?}");
    // A database br cannot be asked about (not a br workspace): still no command.
    std::fs::write(dir.path().join("beads.db"), b"not a database").expect("write");
    let said = rename_notice(&report, &file).expect("a notice");
    assert!(said.fix.is_none() && said.ran.is_none(), "{said:?}");
}

use super::scan::{plan, CacheState, Scan};
use super::write::Write;
use super::*;
use crate::cache::{OpenMode, Paths};
use std::time::Duration;

fn open(dir: &std::path::Path, name: &str) -> Cache {
    let paths = Paths { file: dir.join("issues.jsonl"), db: dir.join(name) };
    Cache::open(&paths, OpenMode { write: true, timeout: Duration::from_secs(5), notice: |_| {} }).expect("open the cache")
}

/// Every row the cache holds, as text, in a fixed order.
fn dump(cache: &Cache) -> Vec<String> {
    let mut out = Vec::new();
    for sql in [
        "SELECT id, title, status, priority, issue_type, assignee, updated_at, raw, line_hash, ready_exclusion FROM issues ORDER BY id",
        "SELECT issue_id, label, position FROM labels ORDER BY issue_id, label",
        "SELECT issue_id, depends_on_id, type, created_at, position, raw FROM dependencies ORDER BY issue_id, depends_on_id, type",
        "SELECT issue_id, comment_id, text, position, raw FROM comments ORDER BY issue_id, position",
        "SELECT issue_id, line, raw FROM duplicate_lines ORDER BY line",
        "SELECT key, value FROM meta WHERE key IN ('go_escapes', 'timestamp_fraction', 'file_hash') ORDER BY key",
    ] {
        let mut st = cache.conn.prepare(sql).expect("valid SQL");
        let n = st.column_count();
        let rows = st
            .query_map([], |r| {
                (0..n).map(|i| r.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}"))).collect::<rusqlite::Result<Vec<_>>>()
            })
            .expect("query");
        out.extend(rows.map(|r| r.expect("row").join("|")));
    }
    out
}

/// Lines that cross every block boundary a small block makes: a BOM, CRLF, blank lines, an
/// id on two distant lines (the later copy is newer), bd 1.0's header, a bad line, a repeated
/// key, labels, dependencies and comments.
fn awkward_file() -> Vec<u8> {
    let mut f = b"\xEF\xBB\xBF{\"_schema\":1,\"kind\":\"header\"}\r\n".to_vec();
    for i in 0..40 {
        let line = format!(
            concat!(
                r#"{{"id":"bd-{i:02}","title":"T{i} <&>","status":"open","priority":{},"#,
                r#""updated_at":"2025-01-0{}T00:00:00.{}Z","labels":["b","a{i}"],"#,
                r#""dependencies":[{{"issue_id":"bd-{i:02}","depends_on_id":"bd-{:02}","#,
                r#""type":"blocks"}}],"comments":[{{"id":{i},"text":"c{i}"}}]}}"#
            ),
            i % 5,
            1 + i % 8,
            100 + i,
            (i + 1) % 40,
            i = i
        );
        f.extend_from_slice(line.as_bytes());
        f.extend_from_slice(b"\r\n");
        if i % 9 == 0 {
            f.extend_from_slice(b"   \r\n");
        }
    }
    f.extend_from_slice(br#"{"id":"bd-03","title":"newer copy","updated_at":"2026-01-01T00:00:00Z"}"#);
    f.extend_from_slice(b"\r\n{\"id\": broken\r\n");
    f.extend_from_slice(br#"{"id":"bd-99","title":"one","title":"two"}"#);
    f
}

#[test]
fn blocks_of_any_size_import_the_same_rows_and_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("issues.jsonl"), awkward_file()).expect("write");
    let options = ImportOptions { skip_invalid: true, ..ImportOptions::default() };
    let mut seen = None;
    for (k, block) in [BLOCK_SIZE, 1, 64, 333].into_iter().enumerate() {
        let mut cache = open(dir.path(), &format!("c{k}.db"));
        let report = import_once(&mut cache, &options, block).expect("import");
        assert_eq!(report.added.len(), 41, "block size {block}");
        assert_eq!(report.duplicate_ids, ["bd-03"]);
        assert_eq!(report.skipped.iter().map(|b| b.line).collect::<Vec<_>>(), [48]);
        assert_eq!(report.repeated_keys, [49]);
        assert_eq!(report.other_records, 1);
        let rows = dump(&cache);
        assert!(rows.iter().any(|r| r.contains("newer copy")), "the newer copy is the issue");
        let summary = (format!("{:?}", (&report.added, &report.skipped, &report.repeated_keys)), rows);
        match &seen {
            None => seen = Some(summary),
            Some(first) => assert_eq!(&summary, first, "block size {block}"),
        }
    }
}

#[test]
fn a_file_rewritten_between_the_two_reads_is_caught() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("issues.jsonl");
    std::fs::write(&file, awkward_file()).expect("write");
    let mut cache = open(dir.path(), "c.db");
    let options = ImportOptions { skip_invalid: true, ..ImportOptions::default() };
    let display = file.display().to_string();
    let state = CacheState::read(&cache).expect("state");
    let opened_file = std::fs::File::open(&file).expect("open");
    let opened_meta = opened_file.metadata().expect("stat");
    let (opened, opened_ctime) = (Identity::of(&opened_meta), super::write::change_time(&opened_meta));
    let scan = Scan::read(opened_file.try_clone().expect("dup"), &file, &display, 64).expect("scan");
    let mut report = ImportReport::default();
    let plans = plan(&scan, &state, false, &mut report);
    std::fs::write(&file, String::from_utf8_lossy(&awkward_file()).replace("T7 ", "T7 edited ")).expect("rewrite");
    let write = Write {
        path: &file,
        file: &opened_file,
        opened,
        opened_ctime,
        display: &display,
        scan: &scan,
        state: &state,
        plans,
        options: &options,
        block_size: 64,
        progress: None,
    };
    let err = write.apply(&mut cache, &mut report, &mut Vec::new()).expect_err("the second read sees other bytes");
    assert!(matches!(err, Stop::FileChanged), "{err:#}");
    assert_eq!(cache.conn.query_row("SELECT count(*) FROM issues", [], |r| r.get::<_, i64>(0)).expect("count"), 0, "nothing written");
    // The public entry point starts over and imports what the file now says.
    let report = import(&mut cache, &options).expect("import");
    assert_eq!(report.added.len(), 41);
    let title: String = cache.conn.query_row("SELECT title FROM issues WHERE id = 'bd-07'", [], |r| r.get(0)).expect("row");
    assert_eq!(title, "T7 edited <&>");
}

/// The targeted second pass (a few changed lines, read by offset) does not hash the whole file
/// again: an in-place rewrite of another line, of the same size and with its modification time
/// put back, is caught by the inode change time, which no writer can set back.
#[test]
fn an_in_place_rewrite_with_its_time_put_back_is_caught_by_the_targeted_pass() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("issues.jsonl");
    let line = |n: usize, title: &str| format!("{{\"id\":\"bd-{n:04}\",\"title\":\"{title}\",\"status\":\"open\"}}\n");
    let text: String = (0..200).map(|n| line(n, "aaaa")).collect();
    std::fs::write(&file, &text).expect("write");
    let mut cache = open(dir.path(), "c.db");
    import(&mut cache, &ImportOptions::default()).expect("first import");
    // One line changed (the plan), then the file opened as the import opens it.
    let changed = text.replacen(&line(100, "aaaa"), &line(100, "bbbb"), 1);
    std::fs::write(&file, &changed).expect("write");
    let options = ImportOptions::default();
    let display = file.display().to_string();
    let state = CacheState::read(&cache).expect("state");
    let opened_file = std::fs::File::open(&file).expect("open");
    let opened_meta = opened_file.metadata().expect("stat");
    let (opened, opened_ctime) = (Identity::of(&opened_meta), super::write::change_time(&opened_meta));
    let scan = Scan::read(opened_file.try_clone().expect("dup"), &file, &display, 1 << 20).expect("scan");
    let mut report = ImportReport::default();
    let plans = plan(&scan, &state, false, &mut report);
    assert_eq!(plans.len(), 1, "one line to read: the targeted pass");
    // Another line rewritten in place, same size, its time put back.
    std::thread::sleep(Duration::from_millis(20));
    let mtime = opened_meta.modified().expect("mtime");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, changed.replacen(&line(5, "aaaa"), &line(5, "cccc"), 1).as_bytes()).map(|()| f))
        .and_then(|f| f.set_modified(mtime))
        .expect("rewrite in place");
    let write = Write {
        path: &file,
        file: &opened_file,
        opened,
        opened_ctime,
        display: &display,
        scan: &scan,
        state: &state,
        plans,
        options: &options,
        block_size: 1 << 20,
        progress: None,
    };
    let err = write.apply(&mut cache, &mut report, &mut Vec::new()).expect_err("the rewrite is seen");
    assert!(matches!(err, Stop::FileChanged), "{err:#}");
}

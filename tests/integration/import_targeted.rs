//! The import's second pass reads a few changed lines where the first pass found them, instead
//! of the whole file again (a pull that edits one issue of 100k). What it stores must
//! be exactly what a cold import of the same file stores, whatever the file's shape: a byte-order
//! mark, CRLF line ends, ids on several lines, a last line without a newline, changes at the
//! first and last line. Each case compares every table of an incrementally imported cache with
//! a cache imported cold from the same bytes.

use std::path::Path;

use crate::support::{bin, hermetic, issue, run};

const FILE: &str = ".beads/issues.jsonl";

fn import(dir: &Path, db: &Path) {
    let out = run(hermetic(bin("bd-sync")).current_dir(dir).arg("--db").arg(db).arg("import"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Every row of every table the import writes, as text, in a fixed order.
fn tables(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).expect("db");
    let mut out = Vec::new();
    for sql in [
        "SELECT id, title, status, priority, issue_type, assignee, updated_at, raw, line_hash FROM issues ORDER BY id",
        "SELECT issue_id, label, position FROM labels ORDER BY issue_id, label, position",
        "SELECT issue_id, depends_on_id, type, position, raw FROM dependencies ORDER BY issue_id, depends_on_id, type",
        "SELECT issue_id, comment_id, text, position, raw FROM comments ORDER BY issue_id, position",
        "SELECT issue_id, line, raw FROM duplicate_lines ORDER BY line",
        "SELECT count(*) FROM dirty",
    ] {
        let mut st = conn.prepare(sql).expect(sql);
        let n = st.column_count();
        let rows = st
            .query_map([], |r| {
                let cells: Vec<String> = (0..n).map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).expect("cell"))).collect();
                Ok(cells.join("|"))
            })
            .expect("query");
        out.extend(rows.map(|r| r.expect("row")));
    }
    out
}

/// `n` records; with `dup`, every 50th id appears on a second line further down.
fn records(n: usize, dup: bool, tag: &str) -> Vec<String> {
    let mut lines: Vec<String> = (0..n)
        .map(|i| {
            issue(&format!("bd-{i:04}"))
                .title(&format!("Issue {i}{tag}"))
                .extra(&format!(
                    r#""labels":["l{}"],"dependencies":[{{"issue_id":"bd-{i:04}","depends_on_id":"bd-0000","type":"blocks"}}]"#,
                    i % 3
                ))
                .line()
        })
        .collect();
    if dup {
        for i in (0..n).step_by(50) {
            lines.push(issue(&format!("bd-{i:04}")).title(&format!("Copy {i}{tag}")).line());
        }
    }
    lines
}

fn write(dir: &Path, lines: &[String], bom: bool, crlf: bool, final_newline: bool) {
    let end = if crlf { "\r\n" } else { "\n" };
    let mut text = if bom { "\u{feff}".to_owned() } else { String::new() };
    text.push_str(&lines.join(end));
    if final_newline {
        text.push_str(end);
    }
    std::fs::write(dir.join(FILE), text).expect("write");
}

#[test]
fn a_few_changed_lines_are_stored_as_a_cold_import_stores_them() {
    for (bom, crlf, final_newline, dup) in [
        (false, false, true, false),
        (true, false, true, false),
        (false, true, true, true),
        (true, true, false, true),
        (false, false, false, true),
    ] {
        let shape = format!("bom {bom}, crlf {crlf}, final newline {final_newline}, duplicates {dup}");
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join(".beads")).expect("mkdir");
        let db = dir.path().join("incremental.db");
        let mut lines = records(400, dup, "");
        write(dir.path(), &lines, bom, crlf, final_newline);
        import(dir.path(), &db);
        // Changes at the first line, the middle, a duplicated id's later line, and the last line.
        let last = lines.len() - 1;
        for at in [0, 200, last] {
            lines[at] = lines[at].replacen("\"title\":\"", "\"title\":\"changed ", 1);
        }
        if dup {
            lines[403] = lines[403].replacen("\"title\":\"", "\"title\":\"changed copy ", 1);
        }
        write(dir.path(), &lines, bom, crlf, final_newline);
        import(dir.path(), &db);
        let cold = dir.path().join("cold.db");
        import(dir.path(), &cold);
        assert_eq!(tables(&db), tables(&cold), "{shape}: the incremental import stores what a cold one does");
        assert!(tables(&db).iter().any(|r| r.contains("changed Issue 200")), "{shape}: the change is there");
    }
}

/// Hostile lines through the targeted pass: an id holding an escape and a newline (JSON-escaped,
/// so one line), a 10 MB value, and one id repeated on 300 lines, some changed. The result is a
/// cold import's.
#[test]
fn hostile_lines_read_by_offset_are_stored_as_a_cold_import_stores_them() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join(".beads")).expect("mkdir");
    let db = dir.path().join("incremental.db");
    let hostile_id = r"bd-\u001b[31m\nx";
    let big = "y".repeat(10 << 20);
    let mut lines = records(2000, false, "");
    lines.push(format!(r#"{{"id":"{hostile_id}","title":"escape","status":"open"}}"#));
    lines.push(issue("bd-big").description(&big).line());
    for n in 0..300 {
        lines.push(issue("bd-many").title(&format!("copy {n}")).line());
    }
    write(dir.path(), &lines, false, false, true);
    import(dir.path(), &db);
    let hostile_at = 2000;
    let big_at = 2001;
    lines[hostile_at] = lines[hostile_at].replace("\"escape\"", "\"escape, changed\"");
    lines[big_at] = lines[big_at].replacen("\"title\":\"", "\"title\":\"changed ", 1);
    for n in [2005, 2150, 2301] {
        lines[n] = lines[n].replacen("\"title\":\"", "\"title\":\"changed ", 1);
    }
    write(dir.path(), &lines, false, false, true);
    import(dir.path(), &db);
    let cold = dir.path().join("cold.db");
    import(dir.path(), &cold);
    let got = tables(&db);
    assert!(got == tables(&cold), "the incremental import stores what a cold one does");
    assert!(got.iter().any(|r| r.contains("escape, changed")), "the hostile id's change is there");
}

/// One id on many lines, a few of them changed: the targeted pass walks each id's lines once.
/// 4x the copies cost well under 16x the time (a lookup per line was quadratic).
#[test]
fn an_id_on_many_lines_costs_linear_time_in_the_targeted_pass() {
    let time = |copies: usize| {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join(".beads")).expect("mkdir");
        let db = dir.path().join("c.db");
        // Enough other records that the changed id stays a small share (the targeted pass).
        let mut lines = records(copies * 80, false, "");
        lines.extend((0..copies).map(|n| issue("bd-many").title(&format!("copy {n}")).line()));
        write(dir.path(), &lines, false, false, true);
        import(dir.path(), &db);
        let last = lines.len() - 1;
        lines[last] = lines[last].replacen("\"title\":\"", "\"title\":\"changed ", 1);
        write(dir.path(), &lines, false, false, true);
        let start = std::time::Instant::now();
        import(dir.path(), &db);
        let took = start.elapsed();
        // A cold import of the same file, measured the same way: the import's linear floor.
        let cold = dir.path().join("cold.db");
        let start = std::time::Instant::now();
        import(dir.path(), &cold);
        (took, start.elapsed())
    };
    let (small, small_cold) = time(250);
    let (large, large_cold) = time(1000);
    assert!(
        large < small * 8 + std::time::Duration::from_millis(100) || large < large_cold,
        "250 copies: {small:?} (cold {small_cold:?}); 1000 copies: {large:?} (cold {large_cold:?})"
    );
}

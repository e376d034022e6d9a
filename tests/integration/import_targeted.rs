//! The import's second pass reads a few changed lines where the first pass found them, instead
//! of the whole file again (issue 44: a pull that edits one issue of 100k). What it stores must
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

//! Edits through SQL while bd-sync runs, from a second process's point of view: real `bd-sync`
//! processes and a second writer on the same SQLite file, many rounds with randomised delays.
//! An edit made during an export or import is either in the written file or still dirty
//! afterwards, and a later export always writes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rusqlite::Connection;

use crate::support::{bin, hermetic, issue};

/// Issue `n` of a numbered file, padded to a few hundred bytes.
fn numbered(n: usize) -> String {
    issue(&format!("bd-{n:05}"))
        .title(&format!("Issue {n}"))
        .description(&"lorem ipsum ".repeat(20))
        .priority((n % 5) as u8)
        .extra(r#""labels":["a","b"]"#)
        .line()
}

struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    fn new(issues: usize) -> Ws {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join(".beads")).expect("mkdir");
        let content: String = (0..issues).map(|n| numbered(n) + "\n").collect();
        std::fs::write(dir.path().join(".beads/issues.jsonl"), content).expect("write");
        Ws { dir }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("cache.db")
    }

    fn file(&self) -> PathBuf {
        self.dir.path().join(".beads/issues.jsonl")
    }

    fn sync(&self, args: &[&str]) -> Command {
        let mut c = hermetic(bin("bd-sync"));
        c.current_dir(self.dir.path()).arg("--db").arg(self.db()).args(args).stdout(Stdio::null()).stderr(Stdio::piped());
        c
    }

    fn conn(&self) -> Connection {
        let c = Connection::open(self.db()).expect("open cache");
        c.busy_timeout(Duration::from_secs(30)).expect("busy timeout");
        c
    }
}

/// A small deterministic generator for the delays (seeded, so a failure can be replayed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

fn is_dirty(conn: &Connection, id: &str) -> bool {
    conn.query_row("SELECT COUNT(*) FROM dirty WHERE issue_id = ?1", [id], |r| r.get::<_, i64>(0)).expect("query") > 0
}

fn file_has(path: &Path, text: &str) -> bool {
    String::from_utf8_lossy(&std::fs::read(path).expect("read")).contains(text)
}

#[test]
fn regression_an_sql_edit_made_while_export_runs_is_never_lost() {
    let ws = Ws::new(20_000);
    assert!(ws.sync(&["import"]).status().expect("import").success());
    let mut rng = Lcg(0x5eed_0001);
    for round in 0..12 {
        // Every row dirty, so the export has real work (and a window) to race with.
        ws.conn().execute_batch("UPDATE issues SET priority = priority").expect("dirty all");
        let export = ws.sync(&["export"]).spawn().expect("spawn export");
        std::thread::sleep(Duration::from_millis(rng.next(400)));
        let id = format!("bd-{:05}", rng.next(20_000));
        let title = format!("EDIT-{round}-during-export");
        let conn = ws.conn();
        let changed = conn.execute("UPDATE issues SET title = ?1 WHERE id = ?2", [&title, &id]).expect("second writer");
        assert_eq!(changed, 1);
        let out = export.wait_with_output().expect("export");
        assert!(out.status.success(), "round {round}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(
            file_has(&ws.file(), &title) || is_dirty(&conn, &id),
            "round {round}: the edit of {id} is neither in the file nor dirty: lost"
        );
        assert!(ws.sync(&["export"]).status().expect("export").success());
        assert!(file_has(&ws.file(), &title), "round {round}: the next export wrote the edit of {id}");
    }
}

#[test]
fn regression_an_sql_edit_made_while_import_runs_is_never_lost() {
    let ws = Ws::new(20_000);
    assert!(ws.sync(&["import"]).status().expect("import").success());
    let mut rng = Lcg(0x5eed_0002);
    for round in 0..12 {
        // The file changes everywhere (as after a pull), so the import rewrites every row.
        let content = std::fs::read_to_string(ws.file()).expect("read");
        std::fs::write(
            ws.file(),
            content.replace(
                &format!("lorem ipsum{}", if round % 2 == 0 { " " } else { "  " }),
                &format!("lorem ipsum{}", if round % 2 == 0 { "  " } else { " " }),
            ),
        )
        .expect("write");
        let import = ws.sync(&["import"]).spawn().expect("spawn import");
        std::thread::sleep(Duration::from_millis(rng.next(400)));
        let id = format!("bd-{:05}", rng.next(20_000));
        let title = format!("EDIT-{round}-during-import");
        let conn = ws.conn();
        assert_eq!(conn.execute("UPDATE issues SET title = ?1 WHERE id = ?2", [&title, &id]).expect("second writer"), 1);
        let out = import.wait_with_output().expect("import");
        assert!(out.status.success(), "round {round}: {}", String::from_utf8_lossy(&out.stderr));
        let title_now: String = conn.query_row("SELECT title FROM issues WHERE id = ?1", [&id], |r| r.get(0)).expect("row");
        assert_eq!(title_now, title, "round {round}: the import overwrote the edit of {id}");
        assert!(is_dirty(&conn, &id), "round {round}: the edit of {id} is still to be exported");
        assert!(ws.sync(&["export"]).status().expect("export").success());
        assert!(file_has(&ws.file(), &title), "round {round}: exported");
    }
}

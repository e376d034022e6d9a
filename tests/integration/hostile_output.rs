//! What a hostile issues file, commit or argument can do to the programs that read it: print
//! terminal control sequences or forge rows (every human-readable output escapes them), slip an
//! option to git, crash on a number, or kill bd-merge through its input files.

use std::path::Path;
use std::process::Output;

use crate::support::{bin, hermetic, run, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

/// The id that, printed raw, forges a second row in `ready`.
const FORGING_ID: &str = "bd-2\nP0   bd-forged  open  FORGED ROW";

/// A file of hostile values: ESC sequences (clear screen, window title, erase line), CR, a
/// newline inside an id, BEL, C1 controls (CSI U+009B, NEL U+0085), U+2028 and U+2029, in ids,
/// titles, statuses, labels, assignees, comments, descriptions, dependency targets and key names.
fn hostile_v1() -> String {
    [
        r#"{"id":"bd-1","title":"clear\u001b[2J\u001b[Hscreen","status":"open","priority":1,"issue_type":"task","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z","labels":["bell\u0007","csi\u009b31m"],"assignee":"ann\r\u001b[Kmallory","description":"line one\u001b]0;PWNED\u0007\nline two\u2028three","comments":[{"id":1,"issue_id":"bd-1","author":"eve\u001b[31m","text":"hi\u001b[5m\nmore","created_at":"2025-01-01T00:00:00Z"}]}"#,
        r#"{"id":"bd-2\nP0   bd-forged  open  FORGED ROW","title":"an id holding a newline","status":"open","priority":2,"issue_type":"task","created_at":"2025-01-02T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#,
        r#"{"id":"bd-3\u001b[2K","title":"esc in the id\u2029","status":"open","priority":2,"issue_type":"task","created_at":"2025-01-03T00:00:00Z","updated_at":"2025-01-03T00:00:00Z","dependencies":[{"issue_id":"bd-3\u001b[2K","depends_on_id":"bd-4\u0007","type":"blocks","created_at":"2025-01-03T00:00:00Z"}]}"#,
        r#"{"id":"bd-4\u0007","title":"blocker \u0085 nel","status":"open","priority":0,"issue_type":"bug\u001b[8m","created_at":"2025-01-04T00:00:00Z","updated_at":"2025-01-04T00:00:00Z","close_reason":"x\u001b[1m"}"#,
        r#"{"id":"bd-5","title":"odd status","status":"wip\u001b[8m","priority":"high\u001b[5m","issue_type":"task","created_at":"2025-01-05T00:00:00Z","updated_at":"2025-01-05T00:00:00Z","owner":"o\u001b[3m"}"#,
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect()
}

/// The same issues with every hostile field changed (scalars, sets, text, a new key).
fn hostile_v2() -> String {
    hostile_v1()
        .replace("clear\\u001b[2J", "clear\\u001b[3J again")
        .replace(r#""bell\u0007""#, r#""bell\u0007\u0007""#)
        .replace("line two\\u2028three", "line 2\\u001b[1A\\rthree")
        .replace("esc in the id\\u2029", "esc\\r in the id")
        .replace(r#""close_reason":"x\u001b[1m""#, r#""close_reason":"y\u001b[1m","x\u001b[7mkey":"v\u009b1m""#)
        .replace(
            r#""priority":2,"issue_type":"task","created_at":"2025-01-02"#,
            r#""priority":3,"issue_type":"task","created_at":"2025-01-02"#,
        )
}

/// Every character a terminal acts on: C0 (all but the newline that ends our own lines), DEL,
/// C1, the Unicode line and paragraph separators.
fn raw_control(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{2028}' | '\u{2029}')
}

fn assert_no_raw_controls(what: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        if let Some(c) = text.chars().find(|&c| raw_control(c)) {
            panic!("{what}: a raw {c:?} from the data reached {stream}:\n{}", text.escape_debug());
        }
    }
}

fn sync(repo: &Path, args: &[&str]) -> Output {
    run(hermetic(bin("bd-sync")).current_dir(repo).args(args))
}

fn merge(dir: &Path, args: &[&str]) -> Output {
    run(hermetic(bin("bd-merge")).current_dir(dir).args(args))
}

/// Every printing command, run over the hostile file: nothing from the data reaches a terminal
/// raw, and an id holding a newline stays one row.
#[test]
fn regression_an_id_holding_a_newline_forged_a_row_in_ready() {
    let repo = TestRepo::new();
    let dir = repo.path();
    repo.commit_file(FILE, hostile_v1().as_bytes(), "hostile v1");
    let mut outputs: Vec<(String, Output)> = Vec::new();
    let mut record = |what: String, out: Output| outputs.push((what, out));

    record("import --print-changed".into(), sync(dir, &["import", "--print-changed"]));
    // The agents' view: one row per ready issue, whatever the ids hold.
    let ready = sync(dir, &["ready"]);
    let ready_json: serde_json::Value = serde_json::from_slice(&sync(dir, &["ready", "--json"]).stdout).expect("ready --json");
    let rows = ready_json.as_array().expect("an array").len();
    assert!(rows >= 3, "the hostile issues are ready: {ready_json}");
    let text = String::from_utf8_lossy(&ready.stdout);
    assert_eq!(text.lines().count(), rows, "one row per ready issue:\n{}", text.escape_debug());
    assert!(!text.lines().any(|l| l.starts_with("P0   bd-forged")), "a forged row:\n{text}");
    record("ready".into(), ready);
    record("blocked".into(), sync(dir, &["blocked"]));
    for id in ["bd-1", FORGING_ID, "bd-3\u{1b}[2K", "bd-4\u{7}", "bd-5"] {
        let shown = sync(dir, &["show", id]);
        assert!(shown.status.success(), "show {id:?}: {}", String::from_utf8_lossy(&shown.stderr));
        record(format!("show {id:?}"), shown);
    }
    record("show (missing)".into(), sync(dir, &["show", "nope\u{1b}[2J"]));
    record("status".into(), sync(dir, &["status"]));
    record("check".into(), sync(dir, &["check"]));

    // History: a change of every hostile field, by a hostile author with a hostile subject.
    repo.write(FILE, hostile_v2().as_bytes());
    record("diff (working file)".into(), sync(dir, &["diff"]));
    repo.git(&["add", FILE]);
    repo.git(&["commit", "-q", "--author", "Ev\u{1b}[2Jil <e\u{7}@example.com>", "-m", "subject \u{1b}]0;PWNED\u{7} \u{9b}31m"]);
    record("diff HEAD~1..HEAD".into(), sync(dir, &["diff", "HEAD~1..HEAD"]));
    for id in ["bd-1", FORGING_ID, "bd-3\u{1b}[2K", "bd-4\u{7}"] {
        let log = sync(dir, &["log", id]);
        assert!(log.status.success(), "log {id:?}: {}", String::from_utf8_lossy(&log.stderr));
        assert!(!log.stdout.is_empty(), "log {id:?} shows the commit");
        record(format!("log {id:?}"), log);
    }
    record("import after the commit".into(), sync(dir, &["import"]));

    // bd-merge: diff, textconv, the driver's reports, resolve and dedupe.
    let files = tempfile::tempdir().expect("temp dir");
    let f = |name: &str, content: &str| {
        let p = files.path().join(name);
        std::fs::write(&p, content).expect("write");
        p.to_string_lossy().into_owned()
    };
    let (v1, v2) = (f("v1.jsonl", &hostile_v1()), f("v2.jsonl", &hostile_v2()));
    record("bd-merge diff".into(), merge(dir, &["diff", &v1, &v2]));
    record("bd-merge diff (git's 7 arguments)".into(), merge(dir, &["diff", "a\u{1b}[2Jb", &v1, "0", "100644", &v2, "0", "100644"]));
    record("bd-merge textconv".into(), merge(dir, &["textconv", &v2]));
    // Both sides change the hostile fields differently: the driver reports what it settled.
    let theirs = hostile_v1()
        .replace("clear\\u001b[2J", "theirs\\u001b[4J")
        .replace("2025-01-01T00:00:00Z\",\"labels", "2025-01-09T00:00:00Z\",\"labels")
        .replace(r#""assignee":"ann\r\u001b[Kmallory""#, r#""assignee":"bob\u001b[6n""#);
    let theirs = f("theirs.jsonl", &theirs);
    let ours = f("ours.jsonl", &hostile_v2());
    // (The merged file itself goes to a file: its bytes are data, not a report.)
    let merged = f("merged.jsonl", "");
    let out = merge(dir, &[&v1, &ours, &theirs, "-p", "x\u{1b}[2J.jsonl", "-o", &merged]);
    assert!(!out.stderr.is_empty(), "the driver reports the settled conflicts");
    record("bd-merge driver".into(), out);
    let conflicted = f("conflicted.jsonl", "");
    let out = merge(dir, &[&v1, &ours, &theirs, "--conflict", "markers", "-o", &conflicted]);
    record("bd-merge driver (markers)".into(), out);
    let marked = std::fs::read(&conflicted).expect("merged");
    repo.write(".beads/marked.jsonl", &marked);
    record("bd-merge resolve".into(), merge(dir, &["resolve", ".beads/marked.jsonl"]));
    let dups = format!("{}{}", hostile_v1(), hostile_v2());
    repo.write(".beads/dups.jsonl", dups.as_bytes());
    record("bd-merge dedupe --check".into(), merge(dir, &["dedupe", "--check", ".beads/dups.jsonl"]));
    record("bd-merge dedupe".into(), merge(dir, &["dedupe", ".beads/dups.jsonl"]));
    let bad = f("bad.jsonl", "{\"id\":\"bad\\u001b[2J\",\"title\":\"\u{1b}[2J\n");
    record("bd-merge driver (bad line)".into(), merge(dir, &[&bad, &bad, &bad, "-o", &merged]));
    record("bd-sync check (bad line)".into(), sync(dir, &["check", &bad]));
    record("bd-sync import --skip-invalid (bad line)".into(), sync(dir, &["import", "--skip-invalid", "--rebind", &bad]));

    // bd-hook: ids printed by --dry-run, ids it could not deliver.
    let hook = |args: &[&str]| run(hermetic(bin("bd-hook")).current_dir(dir).args(args));
    record("bd-hook --dry-run".into(), hook(&["--dry-run", "--id", "x\u{1b}[2Jy", "--from-diff", "HEAD~1"]));
    record(
        "bd-hook (undeliverable)".into(),
        hook(&["--url", "http://127.0.0.1:1", "--timeout", "1", "--id", "x\u{1b}]0;PWNED\u{7}", "--from-diff", "HEAD~1"]),
    );

    for (what, out) in &outputs {
        assert_no_raw_controls(what, out);
    }
}

//! What a hostile issues file, commit or argument can do to the programs that read it: print
//! terminal control sequences or forge rows (every human-readable output escapes them), slip an
//! option to git, crash on a number, or kill bd-merge through its input files.

use std::path::Path;
use std::process::Output;

use crate::support::{bd_merge, bd_sync, bin, hermetic, run, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

/// The id that, printed raw, forges a second row in `ready`.
const FORGING_ID: &str = "bd-2\nP0   bd-forged  open  FORGED ROW";

/// A file of hostile values: ESC sequences (clear screen, window title, erase line), CR, a
/// newline inside an id, BEL, C1 controls (CSI U+009B, NEL U+0085), U+2028 and U+2029, in ids,
/// titles, statuses, labels, assignees, comments, descriptions, dependency targets and key names.
fn hostile_v1() -> String {
    [
        concat!(
            r#"{"id":"bd-1","title":"clear\u001b[2J\u001b[Hscreen","status":"open","#,
            r#""priority":1,"issue_type":"task","created_at":"2025-01-01T00:00:00Z","#,
            r#""updated_at":"2025-01-01T00:00:00Z","labels":["bell\u0007","csi\u009b31m"],"#,
            r#""assignee":"ann\r\u001b[Kmallory","#,
            r#""description":"line one\u001b]0;PWNED\u0007\nline two\u2028three","#,
            r#""comments":[{"id":1,"issue_id":"bd-1","author":"eve\u001b[31m","#,
            r#""text":"hi\u001b[5m\nmore","created_at":"2025-01-01T00:00:00Z"}]}"#
        ),
        concat!(
            r#"{"id":"bd-2\nP0   bd-forged  open  FORGED ROW","#,
            r#""title":"an id holding a newline","status":"open","priority":2,"#,
            r#""issue_type":"task","created_at":"2025-01-02T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
        ),
        concat!(
            r#"{"id":"bd-3\u001b[2K","title":"esc in the id\u2029","status":"open","#,
            r#""priority":2,"issue_type":"task","created_at":"2025-01-03T00:00:00Z","#,
            r#""updated_at":"2025-01-03T00:00:00Z","dependencies":[{"issue_id":"bd-3\u001b[2K","#,
            r#""depends_on_id":"bd-4\u0007","type":"blocks","created_at":"2025-01-03T00:00:00Z"}]}"#
        ),
        concat!(
            r#"{"id":"bd-4\u0007","title":"blocker \u0085 nel","status":"open","priority":0,"#,
            r#""issue_type":"bug\u001b[8m","created_at":"2025-01-04T00:00:00Z","#,
            r#""updated_at":"2025-01-04T00:00:00Z","close_reason":"x\u001b[1m"}"#
        ),
        concat!(
            r#"{"id":"bd-5","title":"odd status","status":"wip\u001b[8m","#,
            r#""priority":"high\u001b[5m","issue_type":"task","#,
            r#""created_at":"2025-01-05T00:00:00Z","updated_at":"2025-01-05T00:00:00Z","owner":"o\u001b[3m"}"#
        ),
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

/// Every printing command, run over the hostile file: nothing from the data reaches a terminal
/// raw, and an id holding a newline stays one row.
#[test]
fn regression_an_id_holding_a_newline_forged_a_row_in_ready() {
    let repo = TestRepo::new();
    let dir = repo.path();
    repo.commit_file(FILE, hostile_v1().as_bytes(), "hostile v1");
    let mut outputs: Vec<(String, Output)> = Vec::new();
    let mut record = |what: String, out: Output| outputs.push((what, out));

    record("import --print-changed".into(), bd_sync(dir, &["import", "--print-changed"]));
    // The agents' view: one row per ready issue, whatever the ids hold.
    let ready = bd_sync(dir, &["ready"]);
    let ready_json: serde_json::Value = serde_json::from_slice(&bd_sync(dir, &["ready", "--json"]).stdout).expect("ready --json");
    let rows = ready_json.as_array().expect("an array").len();
    assert!(rows >= 3, "the hostile issues are ready: {ready_json}");
    let text = String::from_utf8_lossy(&ready.stdout);
    assert_eq!(text.lines().count(), rows, "one row per ready issue:\n{}", text.escape_debug());
    assert!(!text.lines().any(|l| l.starts_with("P0   bd-forged")), "a forged row:\n{text}");
    record("ready".into(), ready);
    record("blocked".into(), bd_sync(dir, &["blocked"]));
    for id in ["bd-1", FORGING_ID, "bd-3\u{1b}[2K", "bd-4\u{7}", "bd-5"] {
        let shown = bd_sync(dir, &["show", id]);
        assert!(shown.status.success(), "show {id:?}: {}", String::from_utf8_lossy(&shown.stderr));
        record(format!("show {id:?}"), shown);
    }
    record("show (missing)".into(), bd_sync(dir, &["show", "nope\u{1b}[2J"]));
    record("status".into(), bd_sync(dir, &["status"]));
    record("check".into(), bd_sync(dir, &["check"]));

    // History: a change of every hostile field, by a hostile author with a hostile subject.
    repo.write(FILE, hostile_v2().as_bytes());
    record("diff (working file)".into(), bd_sync(dir, &["diff"]));
    repo.git(&["add", FILE]);
    repo.git(&["commit", "-q", "--author", "Ev\u{1b}[2Jil <e\u{7}@example.com>", "-m", "subject \u{1b}]0;PWNED\u{7} \u{9b}31m"]);
    record("diff HEAD~1..HEAD".into(), bd_sync(dir, &["diff", "HEAD~1..HEAD"]));
    for id in ["bd-1", FORGING_ID, "bd-3\u{1b}[2K", "bd-4\u{7}"] {
        let log = bd_sync(dir, &["log", id]);
        assert!(log.status.success(), "log {id:?}: {}", String::from_utf8_lossy(&log.stderr));
        assert!(!log.stdout.is_empty(), "log {id:?} shows the commit");
        record(format!("log {id:?}"), log);
    }
    record("import after the commit".into(), bd_sync(dir, &["import"]));

    // bd-merge: diff, textconv, the driver's reports, resolve and dedupe.
    let files = tempfile::tempdir().expect("temp dir");
    let f = |name: &str, content: &str| {
        let p = files.path().join(name);
        std::fs::write(&p, content).expect("write");
        p.to_string_lossy().into_owned()
    };
    let (v1, v2) = (f("v1.jsonl", &hostile_v1()), f("v2.jsonl", &hostile_v2()));
    record("bd-merge diff".into(), bd_merge(dir, &["diff", &v1, &v2]));
    record("bd-merge diff (git's 7 arguments)".into(), bd_merge(dir, &["diff", "a\u{1b}[2Jb", &v1, "0", "100644", &v2, "0", "100644"]));
    record("bd-merge textconv".into(), bd_merge(dir, &["textconv", &v2]));
    // Both sides change the hostile fields differently: the driver reports what it settled.
    let theirs = hostile_v1()
        .replace("clear\\u001b[2J", "theirs\\u001b[4J")
        .replace("2025-01-01T00:00:00Z\",\"labels", "2025-01-09T00:00:00Z\",\"labels")
        .replace(r#""assignee":"ann\r\u001b[Kmallory""#, r#""assignee":"bob\u001b[6n""#);
    let theirs = f("theirs.jsonl", &theirs);
    let ours = f("ours.jsonl", &hostile_v2());
    // (The merged file itself goes to a file: its bytes are data, not a report.)
    let merged = f("merged.jsonl", "");
    let out = bd_merge(dir, &[&v1, &ours, &theirs, "-p", "x\u{1b}[2J.jsonl", "-o", &merged]);
    assert!(!out.stderr.is_empty(), "the driver reports the settled conflicts");
    record("bd-merge driver".into(), out);
    let conflicted = f("conflicted.jsonl", "");
    let out = bd_merge(dir, &[&v1, &ours, &theirs, "--conflict", "markers", "-o", &conflicted]);
    record("bd-merge driver (markers)".into(), out);
    let marked = std::fs::read(&conflicted).expect("merged");
    repo.write(".beads/marked.jsonl", &marked);
    record("bd-merge resolve".into(), bd_merge(dir, &["resolve", ".beads/marked.jsonl"]));
    let dups = format!("{}{}", hostile_v1(), hostile_v2());
    repo.write(".beads/dups.jsonl", dups.as_bytes());
    record("bd-merge dedupe --check".into(), bd_merge(dir, &["dedupe", "--check", ".beads/dups.jsonl"]));
    record("bd-merge dedupe".into(), bd_merge(dir, &["dedupe", ".beads/dups.jsonl"]));
    let bad = f("bad.jsonl", "{\"id\":\"bad\\u001b[2J\",\"title\":\"\u{1b}[2J\n");
    record("bd-merge driver (bad line)".into(), bd_merge(dir, &[&bad, &bad, &bad, "-o", &merged]));
    record("bd-sync check (bad line)".into(), bd_sync(dir, &["check", &bad]));
    record("bd-sync import --skip-invalid (bad line)".into(), bd_sync(dir, &["import", "--skip-invalid", "--rebind", &bad]));

    // bd-hook: ids printed by --dry-run, ids it could not deliver.
    let hook = |args: &[&str]| run(crate::support::ours("bd-hook").current_dir(dir).args(args));
    record("bd-hook --dry-run".into(), hook(&["--dry-run", "--id", "x\u{1b}[2Jy", "--from-diff", "HEAD~1"]));
    record(
        "bd-hook (undeliverable)".into(),
        hook(&["--url", "http://127.0.0.1:1", "--timeout", "1", "--id", "x\u{1b}]0;PWNED\u{7}", "--from-diff", "HEAD~1"]),
    );

    for (what, out) in &outputs {
        assert_no_raw_controls(what, out);
    }
}

/// `bd-sync log ID RANGE` handed RANGE to `git log` as it was: `--output=FILE` made git write
/// (and truncate) any file. A RANGE starting with `-` is now a usage error, except `-N` (the
/// documented "last N commits"), and RANGE goes to git after `--end-of-options`.
#[test]
fn regression_log_range_starting_with_a_dash_reached_git_as_an_option() {
    let repo = TestRepo::new();
    let dir = repo.path();
    repo.commit_file(FILE, br#"{"id":"bd-1","title":"One","status":"open"}"#, "one");
    repo.commit_file(FILE, br#"{"id":"bd-1","title":"One, retitled","status":"open"}"#, "two");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "precious\n").expect("write");
    for range in [format!("--output={}", victim.display()), "--exec-path=/tmp".into(), "-p".into(), "--all".into()] {
        let out = bd_sync(dir, &["log", "bd-1", &range]);
        assert_eq!(out.status.code(), Some(2), "log bd-1 {range}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("RANGE"), "the message says what RANGE takes");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious\n", "git never saw {range}");
    }
    // What RANGE is for still works: `-N`, a revision, a range.
    for (range, commits) in [("-1", 1), ("HEAD", 2), ("HEAD~1..HEAD", 1)] {
        let out = bd_sync(dir, &["log", "bd-1", range]);
        assert!(out.status.success(), "log bd-1 {range}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.matches("commit ").count(), commits, "log bd-1 {range}:\n{text}");
    }
}

/// git passes `%L` from a `conflict-marker-size` attribute a committed `.gitattributes` can set:
/// 18446744073709551615 made bd-merge build markers that long and die. Numbers out of range are
/// now usage errors (exit 2, naming the flag) in all three binaries, never a panic.
#[test]
fn regression_marker_size_from_attributes_overflowed() {
    let files = tempfile::tempdir().expect("temp dir");
    let f = |name: &str, content: &str| {
        let p = files.path().join(name);
        std::fs::write(&p, content).expect("write");
        p.to_string_lossy().into_owned()
    };
    let line = |title: &str, at: &str| format!("{{\"id\":\"bd-1\",\"title\":\"{title}\",\"updated_at\":\"{at}\"}}\n");
    let base = f("base", &line("B", "2025-01-01T00:00:00Z"));
    let ours = f("ours", &line("O", "2025-01-02T00:00:00Z"));
    let theirs = f("theirs", &line("T", "2025-01-03T00:00:00Z"));
    let out = f("out", "");
    for size in ["18446744073709551615", "4294967296", "1000000000", "257", "-1", "1e3"] {
        let r = bd_merge(files.path(), &[&base, &ours, &theirs, "--conflict", "markers", "-l", size, "-o", &out]);
        assert_eq!(r.status.code(), Some(2), "-l {size}: {:?} {}", r.status, String::from_utf8_lossy(&r.stderr));
        assert!(String::from_utf8_lossy(&r.stderr).contains("marker size"), "-l {size}: {}", String::from_utf8_lossy(&r.stderr));
    }
    // Sizes git really uses still work (a size below 7 is raised to 7, as before).
    for (size, marker) in [("32", "<".repeat(32)), ("256", "<".repeat(256)), ("3", "<".repeat(7))] {
        let r = bd_merge(files.path(), &[&base, &ours, &theirs, "--conflict", "markers", "-l", size, "-o", &out]);
        assert_eq!(r.status.code(), Some(1), "-l {size}: {}", String::from_utf8_lossy(&r.stderr));
        let merged = std::fs::read_to_string(&out).expect("merged");
        assert!(merged.lines().any(|l| l.split(' ').next() == Some(marker.as_str())), "-l {size}:\n{merged}");
    }
    // The other numeric flags: usage errors (clap's exit 2), never a panic.
    let repo = TestRepo::new();
    repo.commit_file(FILE, br#"{"id":"bd-1","title":"One","status":"open"}"#, "one");
    for args in [
        &["import", "--timeout", "9999999"][..],
        &["export", "--timeout", "18446744073709551615"],
        &["ready", "--limit", "18446744073709551615"],
        &["blocked", "--limit=-1"],
        &["ready", "--priority", "P99999999999999999999"],
    ] {
        let r = bd_sync(repo.path(), args);
        assert_eq!(r.status.code(), Some(2), "bd-sync {args:?}: {:?} {}", r.status, String::from_utf8_lossy(&r.stderr));
        assert!(String::from_utf8_lossy(&r.stderr).contains("invalid value"), "bd-sync {args:?}: {}", String::from_utf8_lossy(&r.stderr));
    }
    assert!(bd_sync(repo.path(), &["import", "--timeout", "86400"]).status.success(), "a day is a valid timeout");
    assert!(bd_sync(repo.path(), &["ready", "--limit", "1000000"]).status.success(), "a large limit is valid");
}

/// Runs `bin args` with its address space capped (so an input read without bound fails fast
/// instead of taking the machine's memory) and a deadline; returns the output, or panics
/// naming a run that hung.
fn bounded(program: &Path, dir: &Path, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = hermetic(program);
    cmd.current_dir(dir).args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 2 << 30, rlim_max: 2 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &raw const limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn");
    let start = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("{} {args:?} still ran after 20 s: {}", program.display(), String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// `/dev/zero` (or a symlink to it, a FIFO, a huge sparse file) given as an input file was read
/// until memory ran out (or, a FIFO, waited for ever). Inputs must now be regular files no
/// larger than memory can hold: anything else is exit 2 with a message naming the file.
#[test]
fn regression_dev_zero_as_input_read_until_memory_ran_out() {
    let repo = TestRepo::new();
    let dir = repo.path();
    repo.commit_file(FILE, br#"{"id":"bd-1","title":"One","status":"open"}"#, "one");
    let ok = dir.join(FILE).to_string_lossy().into_owned();
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.jsonl")).expect("symlink");
    let fifo = dir.join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    // A regular file bigger than the address space the run may use.
    let sparse = std::fs::File::create(dir.join("sparse.jsonl")).expect("create");
    sparse.set_len(3 << 30).expect("a sparse file");
    let merge_bin = bin("bd-merge");
    let out_file = dir.join("out.jsonl").to_string_lossy().into_owned();
    for bad in ["/dev/zero", "zero.jsonl", "fifo.jsonl", "sparse.jsonl"] {
        let runs: Vec<(String, Output)> = vec![
            ("driver (base)".into(), bounded(&merge_bin, dir, &[bad, &ok, &ok, "-o", &out_file])),
            ("driver (theirs)".into(), bounded(&merge_bin, dir, &[&ok, &ok, bad, "-o", &out_file])),
            ("diff".into(), bounded(&merge_bin, dir, &["diff", &ok, bad])),
            ("textconv".into(), bounded(&merge_bin, dir, &["textconv", bad])),
            ("dedupe".into(), bounded(&merge_bin, dir, &["dedupe", "--check", bad])),
            ("resolve".into(), bounded(&merge_bin, dir, &["resolve", "--check", bad])),
            ("bd-sync check".into(), bounded(&bin("bd-sync"), dir, &["check", bad])),
        ];
        for (what, out) in runs {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{what} {bad}: {:?}: {stderr}", out.status);
            assert!(stderr.contains(bad.trim_start_matches("/dev/")), "{what} {bad}: the message names the file: {stderr}");
            let reason = if bad == "sparse.jsonl" { "do not fit in memory" } else { "not a regular file" };
            assert!(stderr.contains(reason) || what == "resolve" && bad == "/dev/zero", "{what} {bad}: says why: {stderr}");
        }
    }
}

/// A FIFO (or a directory, or a link to a device) standing where `.beads/issues.jsonl` belongs was
/// skipped by the search for the issues file, so every command said "no .beads/issues.jsonl
/// found" while one was plainly there. The search now stops at it: exit 2, naming the file and
/// saying it is not a regular file.
#[test]
fn regression_a_fifo_as_the_issues_file_was_reported_as_no_issues_file() {
    let repo = TestRepo::new();
    let dir = repo.path();
    repo.commit_file(FILE, br#"{"id":"bd-1","title":"One","status":"open"}"#, "one");
    std::fs::remove_file(dir.join(FILE)).expect("remove");
    let fifo = dir.join(FILE);
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let runs: Vec<(&str, Output)> = vec![
        ("bd-sync status", bounded(&bin("bd-sync"), dir, &["status"])),
        ("bd-sync ready", bounded(&bin("bd-sync"), dir, &["ready"])),
        ("bd-sync import", bounded(&bin("bd-sync"), dir, &["import"])),
        ("bd-sync check", bounded(&bin("bd-sync"), dir, &["check"])),
        ("bd-merge dedupe", bounded(&bin("bd-merge"), dir, &["dedupe", "--check"])),
        ("bd-merge resolve", bounded(&bin("bd-merge"), dir, &["resolve", "--check"])),
    ];
    for (what, out) in runs {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {:?}: {stderr}", out.status);
        assert!(stderr.contains("issues.jsonl") && stderr.contains("not a regular file"), "{what}: names the file and why: {stderr}");
        assert!(!stderr.contains("found"), "{what}: the file is there, not missing: {stderr}");
    }
}

/// `bd-merge dedupe` given a symbolic link to the issues file replaced the link with a deduped
/// copy and left the file it points to as it was. Writing through a link is now refused (exit 2,
/// naming it) and neither the link nor its target changes.
#[test]
fn regression_dedupe_replaced_a_symlinked_issues_file_with_a_copy() {
    let repo = TestRepo::new();
    let dir = repo.path();
    let content = "{\"id\":\"a\",\"title\":\"x\"}\n{\"id\":\"a\",\"title\":\"y\"}\n";
    std::fs::write(dir.join("real.jsonl"), content).expect("write");
    std::os::unix::fs::symlink("real.jsonl", dir.join("link.jsonl")).expect("symlink");
    let out = bounded(&bin("bd-merge"), dir, &["dedupe", "link.jsonl"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("link.jsonl is a symbolic link"), "{stderr}");
    assert!(std::fs::symlink_metadata(dir.join("link.jsonl")).expect("link").file_type().is_symlink(), "the link stays a link");
    assert_eq!(std::fs::read_to_string(dir.join("real.jsonl")).expect("read"), content);
}

/// bd-merge mapped inputs of 1 MiB and more: a file truncated while mapped killed it with
/// SIGBUS. Inputs are now read, so a shrinking input is read as it is (or is an error), and the
/// run always ends with an exit code.
#[test]
fn regression_a_truncated_input_killed_bd_merge_with_sigbus() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let record = |i: usize, title: &str| {
        format!("{{\"id\":\"bd-{i}\",\"title\":\"{title} {i}\",\"description\":\"{}\",\"status\":\"open\"}}\n", "x".repeat(400))
    };
    let content = |title: &str| (0..40_000).map(|i| record(i, title)).collect::<String>();
    let (base, ours, theirs) = (dir.path().join("base"), dir.path().join("ours"), dir.path().join("theirs"));
    let out = dir.path().join("out").to_string_lossy().into_owned();
    let mut signals = Vec::new();
    for round in 0..12u64 {
        std::fs::write(&base, content("base")).expect("write");
        std::fs::write(&ours, content("ours")).expect("write");
        std::fs::write(&theirs, content("theirs")).expect("write");
        let mut child = hermetic(bin("bd-merge"))
            .args([base.as_os_str(), ours.as_os_str(), theirs.as_os_str()])
            .args(["-o", &out])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        // Truncate theirs at a different moment each round, while bd-merge reads and merges it.
        std::thread::sleep(std::time::Duration::from_millis(2 + round * 7));
        std::fs::OpenOptions::new().write(true).open(&theirs).expect("open").set_len(100).expect("truncate");
        let status = child.wait().expect("wait");
        if let Some(signal) = status.signal() {
            signals.push((round, signal));
        }
    }
    assert!(signals.is_empty(), "bd-merge died by a signal (round, signal): {signals:?}");
}

/// Under `--json` every failure prints `{"error": {"kind", "message", "fix"}}` on stdout, usage
/// errors included (clap's own, and a command that has no JSON output): before, these exited 2
/// with nothing on stdout for a program to read.
#[test]
fn regression_usage_errors_under_json_printed_nothing_on_stdout() {
    let repo = TestRepo::new();
    let cases: [(&str, &[&str]); 6] = [
        ("bd-merge", &["dedupe", "--json", "missing.jsonl"]),
        ("bd-merge", &["resolve", "--json", "missing.jsonl"]),
        ("bd-sync", &["context", "--budget", "abc", "--json"]),
        ("bd-sync", &["ready", "--limit=-1", "--json"]),
        ("bd-sync", &["--json", "no-such-command"]),
        ("bd-merge", &["review", "--json", "--no-such-flag"]),
    ];
    for (program, args) in cases {
        let out = run(hermetic(bin(program)).current_dir(repo.path()).args(args));
        assert_eq!(out.status.code(), Some(2), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{program} {args:?}: stdout is not JSON ({e}): {:?}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(v["error"]["kind"], "usage", "{program} {args:?}: {v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        assert!(!String::from_utf8_lossy(&out.stderr).is_empty(), "clap still says it on stderr");
    }
    // Help is not an error: nothing on stdout but the help.
    let help = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["ready", "--json", "--help"]));
    assert_eq!(help.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&help.stdout).contains("\"error\""));
}

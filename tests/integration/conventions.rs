//! The command-line conventions users of git, ripgrep and bd expect: `--version` naming the
//! binary, global flags after the subcommand, named positionals, `doctor`, `--exit-code`,
//! `--color`, partial ids and several ids at once.

use std::process::Output;

use crate::support::{ours, run, TestRepo};

const ISSUES: &str = concat!(
    concat!(
        r#"{"id":"bd-a1b2","title":"First","status":"open","priority":1,"#,
        r#""issue_type":"task","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
    ),
    "\n",
    concat!(
        r#"{"id":"bd-a1c3","title":"Second","status":"open","priority":2,"#,
        r#""issue_type":"task","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
    ),
    "\n",
);

fn tool(dir: &std::path::Path, program: &str, args: &[&str]) -> Output {
    run(ours(program).current_dir(dir).args(args).env_remove("NO_COLOR").env("HOME", dir))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", ISSUES.as_bytes(), "issues");
    repo
}

#[test]
fn version_says_beads_git_for_every_binary() {
    let dir = tempfile::tempdir().expect("tmp");
    for program in ["bd-sync", "bd-merge", "bd-hook"] {
        let out = tool(dir.path(), program, &["--version"]);
        let v = text(&out.stdout);
        assert!(v.starts_with(&format!("{program} {}", env!("CARGO_PKG_VERSION"))), "{program}: {v}");
    }
    let out = tool(dir.path(), "bd-merge", &["resolve", "--version"]);
    assert!(text(&out.stdout).starts_with("bd-merge"), "{}", text(&out.stderr));
}

#[test]
fn global_flag_after_the_subcommand_is_refused() {
    let repo = repo();
    let elsewhere = tempfile::tempdir().expect("tmp");
    let path = repo.path().to_str().expect("utf8");
    for args in [&["install", "-C", path, "--dry-run"][..], &["uninstall", "--dry-run", "-C", path], &["status", "-C", path]] {
        let out = tool(elsewhere.path(), "bd-sync", args);
        assert_eq!(out.status.code(), Some(0), "bd-sync {args:?}: {}", text(&out.stderr));
    }
}

/// The driver's form is plumbing, out of `--help`; where clap names it (a usage error), it reads
/// BASE OURS THEIRS, never FILES FILES FILES.
#[test]
fn usage_line_reads_files_files_files() {
    let dir = tempfile::tempdir().expect("tmp");
    let help = text(&tool(dir.path(), "bd-merge", &["--help"]).stdout);
    assert!(!help.contains("<FILES> <FILES>") && !help.contains("<BASE>"), "{help}");
    assert!(help.starts_with("Field-level three-way merge"), "the binary's own description, not the crate's: {help}");
    let error = text(&tool(dir.path(), "bd-merge", &["base.jsonl", "ours.jsonl"]).stderr);
    assert!(error.contains("<BASE> <OURS> <THEIRS>") && !error.contains("<FILES> <FILES>"), "{error}");
}

#[test]
fn doctor_is_not_an_alias_of_check() {
    let repo = repo();
    let out = tool(repo.path(), "bd-sync", &["doctor"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("0 errors"), "{}", text(&out.stderr));
}

#[test]
fn diff_has_no_exit_code_flag() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    std::fs::write(d.join("old.jsonl"), ISSUES).expect("write");
    std::fs::write(d.join("same.jsonl"), ISSUES).expect("write");
    std::fs::write(d.join("new.jsonl"), ISSUES.replace("First", "Renamed")).expect("write");
    let differ = tool(d, "bd-merge", &["diff", "--exit-code", "old.jsonl", "new.jsonl"]);
    assert_eq!(differ.status.code(), Some(1), "{}", text(&differ.stderr));
    assert!(text(&differ.stdout).contains("Renamed"));
    let same = tool(d, "bd-merge", &["diff", "--exit-code", "old.jsonl", "same.jsonl"]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stderr));
    let plain = tool(d, "bd-merge", &["diff", "old.jsonl", "new.jsonl"]);
    assert_eq!(plain.status.code(), Some(0), "without --exit-code a difference is not an error");

    let repo = repo();
    let clean = tool(repo.path(), "bd-sync", &["diff", "--exit-code"]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stderr));
    repo.write(".beads/issues.jsonl", ISSUES.replace("Second", "Changed").as_bytes());
    let changed = tool(repo.path(), "bd-sync", &["diff", "--exit-code"]);
    assert_eq!(changed.status.code(), Some(1), "{}", text(&changed.stderr));
}

#[test]
fn no_color_flag_and_no_color_wins_over_always() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    std::fs::write(d.join("old.jsonl"), ISSUES).expect("write");
    std::fs::write(d.join("new.jsonl"), ISSUES.replace("First", "Renamed")).expect("write");
    let always = tool(d, "bd-merge", &["diff", "--color", "always", "old.jsonl", "new.jsonl"]);
    assert!(always.stdout.contains(&0x1b), "--color always colours a pipe: {}", text(&always.stdout));
    let flag_over_env =
        run(ours("bd-merge").current_dir(d).args(["diff", "--color=always", "old.jsonl", "new.jsonl"]).env("NO_COLOR", "1"));
    assert!(flag_over_env.stdout.contains(&0x1b), "the explicit flag beats NO_COLOR");
    let never = tool(d, "bd-merge", &["diff", "--color", "never", "old.jsonl", "new.jsonl"]);
    assert!(!never.stdout.contains(&0x1b));
    let auto = tool(d, "bd-merge", &["diff", "old.jsonl", "new.jsonl"]);
    assert!(!auto.stdout.contains(&0x1b), "auto: a pipe is not a terminal");

    let repo = repo();
    repo.write(".beads/issues.jsonl", ISSUES.replace("Second", "Changed").as_bytes());
    let out = tool(repo.path(), "bd-sync", &["diff", "--color", "always"]);
    assert!(out.stdout.contains(&0x1b), "{}", text(&out.stderr));
}

#[test]
fn show_and_log_need_the_full_id() {
    let repo = repo();
    let prefix = tool(repo.path(), "bd-sync", &["show", "bd-a1b"]);
    assert_eq!(prefix.status.code(), Some(0), "{}", text(&prefix.stderr));
    assert!(text(&prefix.stdout).starts_with("bd-a1b2: First"), "{}", text(&prefix.stdout));
    let suffix = tool(repo.path(), "bd-sync", &["show", "c3"]);
    assert!(text(&suffix.stdout).starts_with("bd-a1c3: Second"), "{}", text(&suffix.stderr));
    let both = tool(repo.path(), "bd-sync", &["show", "bd-a1"]);
    assert_eq!(both.status.code(), Some(1));
    let err = text(&both.stderr);
    assert!(err.contains("bd-a1b2") && err.contains("bd-a1c3"), "candidates listed: {err}");

    repo.write(".beads/issues.jsonl", ISSUES.replace("First", "Retitled").as_bytes());
    repo.git(&["commit", "-qam", "retitle"]);
    let log = tool(repo.path(), "bd-sync", &["log", "a1b2"]);
    assert_eq!(log.status.code(), Some(0), "{}", text(&log.stderr));
    assert!(text(&log.stdout).contains("retitle"), "{}", text(&log.stdout));
}

#[test]
fn show_takes_one_id_only() {
    let repo = repo();
    let out = tool(repo.path(), "bd-sync", &["show", "bd-a1b2", "bd-a1c3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("bd-a1b2: First") && shown.contains("bd-a1c3: Second"), "{shown}");
}

const FULL: &str = concat!(
    concat!(
        r#"{"id":"bd-epic","title":"Epic","status":"open","priority":1,"issue_type":"epic","#,
        r#""created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
    ),
    "\n",
    concat!(
        r#"{"id":"bd-dep","title":"Blocker","status":"open","priority":1,"#,
        r#""issue_type":"task","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
    ),
    "\n",
    concat!(
        r#"{"id":"bd-full","title":"Everything","status":"open","priority":2,"#,
        r#""issue_type":"task","created_at":"2025-01-01T00:00:00Z","#,
        r#""updated_at":"2025-01-02T00:00:00Z","description":"The why.","#,
        r#""design":"Use a trie.","acceptance_criteria":"All green.","notes":"Asked Ann.","#,
        r#""comments":[{"id":1,"issue_id":"bd-full","author":"ann","#,
        r#""text":"Looks good\nship it","created_at":"2025-01-03T00:00:00Z"}],"#,
        r#""dependencies":[{"issue_id":"bd-full","depends_on_id":"bd-epic","#,
        r#""type":"parent-child"},{"issue_id":"bd-full","depends_on_id":"bd-dep","#,
        r#""type":"blocks"},{"issue_id":"bd-full","depends_on_id":"bd-epic","#,
        r#""type":"related"},{"issue_id":"bd-full","depends_on_id":"bd-dep","type":"discovered-from"}]}"#
    ),
    "\n",
);

#[test]
fn show_leaves_out_notes_design_acceptance_comments_and_parent() {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", FULL.as_bytes(), "issues");
    let out = tool(repo.path(), "bd-sync", &["show", "bd-full"]);
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for want in [
        "Use a trie.",
        "All green.",
        "Asked Ann.",
        "The why.",
        "ann",
        "2025-01-03T00:00:00Z",
        "Looks good",
        "ship it",
        "parent       bd-epic",
        "related      bd-epic",
        "discovered-from bd-dep",
        "depends on   bd-dep",
    ] {
        assert!(shown.contains(want), "show lacks {want:?}:\n{shown}");
    }
}

#[test]
fn ready_json_returns_seven_fields_and_show_json_an_object() {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", FULL.as_bytes(), "issues");
    let ready: serde_json::Value = serde_json::from_slice(&tool(repo.path(), "bd-sync", &["ready", "--json"]).stdout).expect("json");
    let epic = ready.as_array().and_then(|a| a.iter().find(|i| i["id"] == "bd-epic")).expect("bd-epic is ready");
    assert_eq!(epic["updated_at"], "2025-01-02T00:00:00Z", "full issue objects: {epic}");
    let blocked: serde_json::Value = serde_json::from_slice(&tool(repo.path(), "bd-sync", &["blocked", "--json"]).stdout).expect("json");
    let full = blocked.as_array().and_then(|a| a.iter().find(|i| i["id"] == "bd-full")).expect("bd-full is blocked");
    assert_eq!(full["design"], "Use a trie.", "{full}");
    assert_eq!(full["blocked_by"], serde_json::json!(["bd-dep"]), "{full}");
    let show: serde_json::Value =
        serde_json::from_slice(&tool(repo.path(), "bd-sync", &["show", "bd-full", "--json"]).stdout).expect("json");
    let arr = show.as_array().unwrap_or_else(|| panic!("show --json is an array, as bd's: {show}"));
    assert_eq!(arr.len(), 1);
    assert_eq!(arr[0]["notes"], "Asked Ann.");
    assert_eq!(arr[0]["blocked_by"], serde_json::json!(["bd-dep"]));
    assert_eq!(arr[0]["comments"][0]["author"], "ann");
}

/// The errors of `value` against the subset of JSON Schema `bd-sync schema` uses (type,
/// required, properties, items, enum, anyOf, additionalProperties).
fn violations(schema: &serde_json::Value, value: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    use serde_json::Value;
    let type_ok = |t: &str| match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    };
    match schema.get("type") {
        Some(Value::String(t)) if !type_ok(t) => out.push(format!("{at}: not a {t}: {value}")),
        Some(Value::Array(ts)) if !ts.iter().any(|t| type_ok(t.as_str().unwrap_or(""))) => out.push(format!("{at}: not {ts:?}: {value}")),
        _ => {}
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(value) {
            out.push(format!("{at}: {value} not in {options:?}"));
        }
    }
    if let Some(Value::Array(any)) = schema.get("anyOf") {
        if !any.iter().any(|s| {
            let mut v = Vec::new();
            violations(s, value, at, &mut v);
            v.is_empty()
        }) {
            out.push(format!("{at}: matches no anyOf: {value}"));
        }
    }
    if let Value::Object(map) = value {
        for key in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            if !map.contains_key(key.as_str().unwrap_or("")) {
                out.push(format!("{at}: lacks required {key}"));
            }
        }
        for (k, v) in map {
            if let Some(s) = schema.get("properties").and_then(|p| p.get(k)) {
                violations(s, v, &format!("{at}.{k}"), out);
            } else if let Some(s) = schema.get("additionalProperties").filter(|s| s.is_object()) {
                violations(s, v, &format!("{at}.{k}"), out);
            }
        }
    }
    if let (Value::Array(items), Some(s)) = (value, schema.get("items")) {
        for (i, v) in items.iter().enumerate() {
            violations(s, v, &format!("{at}[{i}]"), out);
        }
    }
}

#[test]
fn schema_describes_every_json_output() {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", FULL.as_bytes(), "issues");
    repo.git(&["commit", "-q", "--allow-empty", "-m", "Work on bd-full"]);
    repo.write(".beads/issues.jsonl", FULL.replace("Epic", "The epic").as_bytes());
    let all: serde_json::Value = serde_json::from_slice(&tool(repo.path(), "bd-sync", &["schema"]).stdout).expect("schema json");
    for (command, args) in [
        ("install", &["install", "--json", "--dry-run"][..]),
        ("ready", &["ready", "--json"]),
        ("blocked", &["blocked", "--json"]),
        ("show", &["show", "bd-full", "bd-epic", "--json"]),
        ("status", &["status", "--json"]),
        ("check", &["check", "--json"]),
        ("import", &["import", "--json"]),
        ("export", &["export", "--json"]),
        ("diff", &["diff", "--json"]),
        ("log", &["log", "bd-full", "--json"]),
        ("log-commits", &["log", "--commits", "bd-full", "--json"]),
        ("context", &["context", "bd-full", "--json"]),
        ("uninstall", &["uninstall", "--json", "--dry-run"]),
    ] {
        let out = tool(repo.path(), "bd-sync", args);
        let value: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&out.stderr)));
        let one: serde_json::Value = serde_json::from_slice(&tool(repo.path(), "bd-sync", &["schema", command]).stdout).expect("json");
        assert_eq!(one, all[command], "schema {command} alone and in the whole");
        assert_eq!(one["x-beads-git-json-version"], 2);
        let mut errors = Vec::new();
        violations(&one, &value, command, &mut errors);
        assert!(errors.is_empty(), "{args:?} against its schema:\n{}", errors.join("\n"));
    }
    // A failing --json command writes the error object on stdout, exit code unchanged.
    let error: serde_json::Value = serde_json::from_slice(&tool(repo.path(), "bd-sync", &["schema", "error"]).stdout).expect("json");
    for (args, code, kind) in [
        (&["show", "bd-nope", "--json"][..], 1, "not-found"),
        (&["show", "bd-", "--json"], 1, "ambiguous"),
        (&["--db", ".beads/issues.jsonl/cache.db", "ready", "--json"], 2, "error"),
    ] {
        let out = tool(repo.path(), "bd-sync", args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", text(&out.stderr));
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: stdout is not JSON: {e}"));
        assert_eq!(value["error"]["kind"], kind, "{args:?}: {value}");
        let mut errors = Vec::new();
        violations(&error, &value, "error", &mut errors);
        assert!(errors.is_empty(), "{args:?} against the error schema:\n{}", errors.join("\n"));
    }
    let not_found = tool(repo.path(), "bd-sync", &["show", "bd-nope", "--json"]);
    let value: serde_json::Value = serde_json::from_slice(&not_found.stdout).expect("json");
    assert_eq!(value["error"]["fix"], "bd-sync ready", "the fix is a command to run: {value}");
    let unknown = tool(repo.path(), "bd-sync", &["schema", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
}

/// A `--json` error's `fix` is the one the error's type names, worded by the binary: never a
/// command read back out of the message, where data (an id, a path) can put any text. Before the
/// binaries shared one error type, the fix was the first `` `...` `` after "run" in the message,
/// so an id holding "run `x`" made `x` the fix.
#[test]
fn a_json_errors_fix_comes_from_its_type_never_from_its_text() {
    let repo = repo();
    let json = |program: &str, args: &[&str]| -> (Option<i32>, serde_json::Value) {
        let out = tool(repo.path(), program, args);
        let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&out.stdout)));
        (out.status.code(), value)
    };
    // Data that reads like advice is only data.
    let (code, value) = json("bd-sync", &["show", "run `rm -rf ~`", "--json"]);
    assert_eq!(code, Some(1));
    assert_eq!(value["error"]["kind"], "not-found", "{value}");
    assert_eq!(value["error"]["fix"], "bd-sync ready", "{value}");
    // A refused file: the fix names the file, from the type.
    repo.write(".beads/issues.jsonl", b"<<<<<<< ours\n{\"id\":\"bd-1\"}\n=======\n{\"id\":\"bd-1\",\"title\":\"x\"}\n>>>>>>> theirs\n");
    let (code, value) = json("bd-sync", &["ready", "--json"]);
    assert_eq!(code, Some(2));
    assert_eq!(value["error"]["kind"], "error", "{value}");
    assert_eq!(value["error"]["fix"], "bd-merge resolve --stage .beads/issues.jsonl", "{value}");
    // A usage error the command found (not clap): the fix is the help.
    let (code, value) = json("bd-merge", &["--json", "review", "--restore", "1"]);
    assert_eq!(code, Some(2));
    assert_eq!(value["error"]["kind"], "usage", "{value}");
    assert_eq!(value["error"]["fix"], "--help", "{value}");
    // An error whose type knows no fix says none, whatever its text.
    let (code, value) = json("bd-sync", &["--db", ".beads/issues.jsonl/cache.db", "ready", "--json"]);
    assert_eq!(code, Some(2));
    assert!(value["error"]["fix"].is_null(), "{value}");
}

/// An id holding a newline and an escape sequence, not found: stderr says so on one line with
/// both escaped, and `--json` prints one parseable error object whose message holds no raw
/// control character.
#[test]
fn a_not_found_id_with_control_characters_is_escaped_on_stderr_and_in_json() {
    let repo = repo();
    let id = "bd-x\n\u{1b}[31mred";
    assert!(tool(repo.path(), "bd-sync", &["import"]).status.success(), "the cache is in step first");
    let out = tool(repo.path(), "bd-sync", &["show", id, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let message = value["error"]["message"].as_str().expect("a message");
    assert!(!message.chars().any(char::is_control), "{message:?}");
    assert_eq!(value["error"]["fix"], "bd-sync ready", "{value}");
}

//! What agents ask the cache on every step: `ready`, `blocked`, `show`, `status`, and the SQL edits
//! they make between them. Real files, a real SQLite cache, the real binary.

use crate::support::{issue, jsonl, shared_file, Issue};
use crate::sync::Workspace;

/// The query tests' issue: no type and no `updated_at`, created 2025-01-01.
fn bead(id: &str) -> Issue {
    issue(id).title(&format!("Title of {id}")).no_type().created("2025-01-01T00:00:00Z").no_updated()
}

fn ids(ws: &Workspace, args: &[&str]) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(&ws.ok(args)).expect("json");
    v.as_array().expect("array").iter().map(|i| i["id"].as_str().expect("id").to_owned()).collect()
}

fn blocks(on: &str) -> String {
    format!(r#""dependencies":[{{"depends_on_id":"{on}","type":"blocks"}}]"#)
}

fn child_of(parent: &str) -> String {
    format!(r#""dependencies":[{{"depends_on_id":"{parent}","type":"parent-child"}}]"#)
}

#[test]
fn cycles_of_blocks_and_of_parents_end_and_block_each_member() {
    let ws = Workspace::new(&jsonl(&[
        bead("A").extra(&blocks("B")).line(),
        bead("B").extra(&blocks("A")).line(),
        bead("P").extra(&child_of("Q")).line(),
        bead("Q").extra(r#""dependencies":[{"depends_on_id":"P","type":"parent-child"},{"depends_on_id":"A","type":"blocks"}]"#).line(),
        bead("R").line(),
    ]));
    assert_eq!(ids(&ws, &["ready", "--json"]), ["R"]);
    assert_eq!(ids(&ws, &["blocked", "--json"]), ["A", "B", "P", "Q"]);
    let v: serde_json::Value = serde_json::from_str(&ws.ok(&["blocked", "--json"])).expect("json");
    assert_eq!(v[2]["blocked_by"], serde_json::json!(["Q"]), "P is held up by its blocked parent");
    assert_eq!(v[3]["blocked_by"], serde_json::json!(["A", "P"]), "Q by its blocker and its (cyclic) parent");
}

#[test]
fn ready_leaves_out_what_bd_leaves_out_unless_asked() {
    let ws = Workspace::new(&jsonl(&[
        bead("agent-1").extra(r#""issue_type":"agent""#).line(),
        bead("convoy-1").extra(r#""issue_type":"convoy""#).line(),
        bead("mol-1").extra(r#""issue_type":"molecule""#).line(),
        bead("pin-1").extra(r#""pinned":true"#).line(),
        bead("eph-1").extra(r#""ephemeral":true"#).line(),
        bead("later-1").extra(r#""defer_until":"2999-01-01T00:00:00Z""#).line(),
        bead("past-1").extra(r#""defer_until":"2001-01-01T00:00:00Z""#).line(),
        bead("task-1").extra(r#""issue_type":"task""#).line(),
        bead("wip-1").extra(r#""issue_type":"task","status":"in_progress""#).line().replace(r#""status":"open","#, ""),
    ]));
    assert_eq!(ids(&ws, &["ready", "--json"]), ["past-1", "task-1"]);
    assert_eq!(
        ids(&ws, &["ready", "--json", "--all-types"]),
        ["agent-1", "convoy-1", "eph-1", "later-1", "mol-1", "past-1", "pin-1", "task-1"]
    );
    assert_eq!(ids(&ws, &["ready", "--json", "--type", "agent"]), ["agent-1"], "--type shows a type left out by default");
    // It says what it left out, and how to see it (an agent comparing with another tracker's
    // count otherwise cannot tell why they differ).
    let out = ws.sync(&["ready"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("leaves out 6 issue(s)")
            && said.contains("pinned, ephemeral or deferred 3")
            && said.contains("agent 1")
            && said.contains("molecule 1")
            && said.contains("--all-types"),
        "{said}"
    );
    let all = ws.sync(&["ready", "--all-types"]);
    assert!(!String::from_utf8_lossy(&all.stderr).contains("leaves out"), "nothing left out to name");
}

#[test]
fn filters_and_limit_narrow_both_lists() {
    let ws = Workspace::new(&jsonl(&[
        bead("a").extra(r#""priority":1,"assignee":"ann","labels":["ui"]"#).line().replace(r#""priority":2,"#, ""),
        bead("b").extra(r#""assignee":"bob","labels":["ui","db"]"#).line(),
        bead("c").extra(r#""assignee":"ann""#).line(),
        bead("d").extra(&format!(r#""assignee":"ann","labels":["ui"],{}"#, blocks("c"))).line(),
    ]));
    assert_eq!(ids(&ws, &["ready", "--json"]), ["a", "b", "c"]);
    assert_eq!(ids(&ws, &["ready", "--json", "--assignee", "ann"]), ["a", "c"]);
    assert_eq!(ids(&ws, &["ready", "--json", "--label", "ui"]), ["a", "b"]);
    assert_eq!(ids(&ws, &["ready", "--json", "--priority", "P2"]), ["b", "c"]);
    assert_eq!(ids(&ws, &["ready", "--json", "--limit", "1"]), ["a"]);
    assert_eq!(ids(&ws, &["blocked", "--json", "--label", "ui", "--assignee", "ann"]), ["d"]);
    assert_eq!(ids(&ws, &["blocked", "--json", "--label", "db"]), Vec::<String>::new());
    let bad = ws.sync(&["ready", "--priority", "high"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a priority"));
}

#[test]
fn regression_ready_answered_from_a_stale_cache() {
    let ws = Workspace::new(&jsonl(&[bead("one").line()]));
    ws.ok(&["import"]);
    std::fs::write(ws.file(), jsonl(&[bead("one").line(), bead("two").line()])).expect("write");
    let out = ws.sync(&["ready", "--json"]);
    assert!(out.status.success());
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(listed.as_array().expect("array").len(), 2, "the new issue is listed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("imported"), "and the import is said on stderr");
    // Never imported at all: the first query builds the cache.
    let fresh = Workspace::new(&jsonl(&[bead("x").line()]));
    assert_eq!(ids(&fresh, &["blocked", "--json"]), Vec::<String>::new());
    assert_eq!(ids(&fresh, &["ready", "--json"]), ["x"]);
}

#[test]
fn regression_ready_on_a_broken_file_printed_the_stale_list() {
    let ws = Workspace::new(&jsonl(&[bead("one").line()]));
    ws.ok(&["import"]);
    std::fs::write(ws.file(), b"{\"id\":\"one\",\n").expect("write");
    let out = ws.sync(&["ready"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "no stale answer");
    assert!(String::from_utf8_lossy(&out.stderr).contains("issues.jsonl:1:"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn regression_status_on_a_fresh_clone_created_the_database() {
    let ws = Workspace::new(&jsonl(&[bead("one").line()]));
    let out = ws.ok(&["status", "--json"]);
    assert!(!ws.db().exists(), "status only looks");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["cache_exists"], false);
    assert!(ws.ok(&["status"]).contains("none yet"));
}

#[test]
fn show_gives_the_issue_as_the_file_would_hold_it_with_its_neighbours() {
    let ws = Workspace::new(&jsonl(&[
        bead("epic").line(),
        bead("blocker").line(),
        bead("task")
            .extra(concat!(
                r#""labels":["x"],"dependencies":[{"depends_on_id":"blocker","type":"blocks"},"#,
                r#"{"depends_on_id":"epic","type":"parent-child"}]"#
            ))
            .line(),
    ]));
    // An array of full issue objects, as `bd show --json` prints (docs/json.md).
    let v: serde_json::Value = serde_json::from_str(&ws.ok(&["show", "task", "--json"])).expect("json");
    assert_eq!(v[0]["labels"], serde_json::json!(["x"]));
    assert_eq!(v[0]["blocked_by"], serde_json::json!(["blocker"]));
    assert_eq!(v[0]["dirty"], false);
    let v: serde_json::Value = serde_json::from_str(&ws.ok(&["show", "epic", "--json"])).expect("json");
    assert_eq!(v[0]["children"], serde_json::json!(["task"]));
    ws.sql("UPDATE issues SET title = 'Renamed in SQL' WHERE id = 'epic'");
    let v: serde_json::Value = serde_json::from_str(&ws.ok(&["show", "epic", "--json"])).expect("json");
    assert_eq!((v[0]["title"].as_str(), v[0]["dirty"].as_bool()), (Some("Renamed in SQL"), Some(true)), "the edit, rendered");
    let missing = ws.sync(&["show", "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no issue \"nope\""));
}

#[test]
fn regression_an_sql_edit_lost_to_an_older_file_edit_under_newest() {
    let ws = Workspace::new(&jsonl(&[bead("one").extra(r#""updated_at":"2025-01-01T00:00:00Z""#).line()]));
    ws.ok(&["import"]);
    // The agent edits the title through SQL now; a teammate's older edit of the same field
    // (an hour after the base) arrives in the file.
    ws.sql("UPDATE issues SET title = 'from the cache' WHERE id = 'one'");
    let stamp: String = rusqlite::Connection::open(ws.db())
        .expect("db")
        .query_row("SELECT updated_at FROM issues WHERE id = 'one'", [], |r| r.get(0))
        .expect("row");
    assert!(stamp.as_str() > "2026-" && stamp.ends_with('Z') && stamp.len() == 20, "stamped now, in the file's style: {stamp}");
    std::fs::write(
        ws.file(),
        jsonl(&[bead("one").extra(r#""updated_at":"2025-01-01T01:00:00Z""#).line().replace("Title of one", "from the file")]),
    )
    .expect("write");
    let report: serde_json::Value = serde_json::from_str(&ws.ok(&["import", "--json"])).expect("json");
    let conflict = &report["conflicts"][0];
    assert_eq!((conflict["field"].as_str(), conflict["kept"].as_str()), (Some("title"), Some("ours")), "{report}");
    ws.ok(&["export"]);
    assert!(String::from_utf8(ws.read()).expect("utf8").contains("from the cache"));
}

#[test]
fn an_update_that_sets_updated_at_keeps_it() {
    // Two fraction widths: a writer that trims trailing zeros (one width alone would read as a
    // fixed one-digit style, whose stamp ends in 0 one time in ten).
    let ws = Workspace::new(&jsonl(&[
        bead("one").extra(r#""updated_at":"2025-01-01T00:00:00.5Z""#).line(),
        bead("two").extra(r#""updated_at":"2025-01-01T00:00:00.25Z""#).line(),
    ]));
    ws.ok(&["import"]);
    ws.sql("UPDATE issues SET title = 't', updated_at = '2025-06-01T00:00:00.25Z' WHERE id = 'one'");
    ws.sql("INSERT INTO labels (issue_id, label) VALUES ('one', 'l')");
    let stamp: String = rusqlite::Connection::open(ws.db())
        .expect("db")
        .query_row("SELECT updated_at FROM issues WHERE id = 'one'", [], |r| r.get(0))
        .expect("row");
    assert!(stamp.as_str() > "2026-", "the label insert stamps the issue: {stamp}");
    let fraction = stamp.trim_end_matches('Z').split_once('.').map(|(_, f)| f).unwrap_or("");
    assert!(!fraction.ends_with('0'), "a trimmed-fraction file gets a trimmed stamp: {stamp}");
}

#[test]
fn a_version_1_cache_with_unexported_edits_is_migrated_in_place() {
    let ws = Workspace::new(&jsonl(&[bead("one").line(), bead("two").extra(r#""pinned":true"#).line()]));
    ws.ok(&["import"]);
    ws.sql("UPDATE issues SET title = 'kept' WHERE id = 'one'");
    // Turn the cache back into what version 1 wrote.
    let conn = rusqlite::Connection::open(ws.db()).expect("db");
    let v2: Vec<(String, String)> = conn
        .prepare(
            "SELECT type, name FROM sqlite_master WHERE (name LIKE '%bumps_updated_at' OR name LIKE '%stamps_updated_at' OR name IN \
            ('issues_ready', 'issues_status', 'sql_edit_stamp', 'dependencies_by_type'))",
        )
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    assert_eq!(v2.len(), 14, "{v2:?}");
    for (kind, name) in v2 {
        conn.execute_batch(&format!("DROP {kind} {name}")).expect("drop");
    }
    conn.execute_batch("ALTER TABLE issues DROP COLUMN ready_exclusion; PRAGMA user_version = 1").expect("v1");
    drop(conn);
    assert!(ws.ok(&["status"]).contains("dirty   1"), "the edit survived the migration");
    assert_eq!(ids(&ws, &["ready", "--json"]), ["one"], "the pinned issue's exclusion is derived from its line");
    ws.ok(&["export"]);
    assert!(String::from_utf8(ws.read()).expect("utf8").contains("\"kept\""));
}

#[test]
fn a_version_2_cache_gains_the_dependency_index_and_keeps_its_edits() {
    let ws = Workspace::new(&jsonl(&[
        bead("one").line(),
        bead("two").extra(r#""dependencies":[{"issue_id":"two","depends_on_id":"one","type":"blocks"}]"#).line(),
    ]));
    ws.ok(&["import"]);
    ws.sql("UPDATE issues SET title = 'kept' WHERE id = 'one'; DROP INDEX dependencies_by_type; PRAGMA user_version = 2;");
    assert_eq!(ids(&ws, &["blocked", "--json"]), ["two"]);
    let conn = rusqlite::Connection::open(ws.db()).expect("db");
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).expect("version");
    let index: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'dependencies_by_type'", [], |r| r.get(0)).expect("index");
    assert_eq!((version, index), (4, 1));
    assert!(ws.ok(&["status"]).contains("dirty   1"), "the edit survived the migration");
}

#[test]
fn a_version_3_cache_gains_the_line_hash_index_and_keeps_its_edits() {
    let ws = Workspace::new(&jsonl(&[bead("one").line(), bead("two").line()]));
    ws.ok(&["import"]);
    ws.sql("UPDATE issues SET title = 'kept' WHERE id = 'one'; DROP INDEX issues_line_hash; PRAGMA user_version = 3;");
    assert_eq!(ids(&ws, &["ready", "--json"]).len(), 2);
    let conn = rusqlite::Connection::open(ws.db()).expect("db");
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).expect("version");
    let index: i64 = conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'issues_line_hash'", [], |r| r.get(0)).expect("index");
    assert_eq!((version, index), (4, 1));
    assert!(ws.ok(&["status"]).contains("dirty   1"), "the edit survived the migration");
}

#[test]
fn regression_check_failed_the_healthy_real_beads_file() {
    let Some(real) = shared_file("data/beads-real.jsonl") else { return };
    let ws = Workspace::new(b"");
    let out = ws.sync(&["check", real.to_str().expect("utf8"), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["errors"], 0);
    assert!(v["external_references"].as_u64().expect("count") >= 40, "bd's external: links are counted, not dangling");
    let dangling = v["findings"].as_array().expect("findings").iter().filter(|f| f["kind"] == "dangling-dependency").count();
    assert_eq!(v["by_kind"]["dangling-dependency"], dangling);
    assert!(v["findings"].as_array().expect("findings").iter().all(|f| !f["message"].as_str().expect("message").contains("external:")));
    assert_eq!(ws.sync(&["check", real.to_str().expect("utf8"), "--strict"]).status.code(), Some(1), "--strict counts warnings");
}

/// The fast path (blocked set in Rust, covering indexes) lists exactly what the plain recursive
/// SQL views list, on a generated graph with gen.py's dependency mix (blocks, parent-child chains,
/// related, discovered-from).
#[test]
fn the_fast_ready_and_blocked_lists_equal_the_sql_views() {
    let Some(gen) = shared_file("bench/gen.py") else { return };
    let ws = Workspace::new(b"");
    let out = crate::support::run(
        std::process::Command::new("python3").arg(gen).args(["base", "--n", "3000", "--seed", "7", "--out"]).arg(ws.file()),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fast_ready = ids(&ws, &["ready", "--json", "--all-types"]);
    let fast_blocked = ids(&ws, &["blocked", "--json"]);
    let conn = rusqlite::Connection::open(ws.db()).expect("db");
    let view = |sql: &str| -> Vec<String> {
        conn.prepare(sql).expect("prepare").query_map([], |r| r.get(0)).expect("query").collect::<rusqlite::Result<_>>().expect("rows")
    };
    let slow_ready = view("SELECT id FROM ready_issues ORDER BY priority, created_at, id");
    let slow_blocked = view("SELECT id FROM blocked_issues ORDER BY priority, created_at, id");
    assert!(fast_ready.len() > 100 && fast_blocked.len() > 100, "{} ready, {} blocked", fast_ready.len(), fast_blocked.len());
    assert_eq!(fast_ready, slow_ready);
    assert_eq!(fast_blocked, slow_blocked);
}

/// `bd-sync ready --all-types` lists what the real br 0.7.6 lists on the real beads file (issue
/// 37 item 7), with one documented difference: br holds back a parent while it has open children
/// (its "rollup"), where bd and we list it (blocking flows from parent to child, not back). The
/// default list is the same minus the orchestrator types its note names.
///
/// br refuses two kinds of lines of the real file (673 records closed before they were created, in
/// bd's clock skew, and labels with characters br does not allow), so both tools read one copy in
/// which those are mended; neither mend changes what is ready.
#[test]
fn ready_matches_the_real_br_on_the_real_file() {
    let Some(real) = shared_file("data/beads-real.jsonl") else { return };
    let Some(br) = crate::support::real_br() else { return };
    let text = std::fs::read_to_string(real).expect("read the real file");
    let mut records: Vec<serde_json::Value> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut r: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if let (Some(closed), Some(created)) = (r["closed_at"].as_str(), r["created_at"].as_str()) {
            if closed < created {
                r["closed_at"] = serde_json::Value::String(created.to_owned());
            }
        }
        if let Some(labels) = r.get_mut("labels").and_then(|l| l.as_array_mut()) {
            labels.retain(|l| l.as_str().is_some_and(|s| s.chars().all(|c| c.is_ascii_alphanumeric() || "-_:".contains(c))));
        }
        records.push(r);
    }
    let copy: String = records.iter().map(|r| format!("{r}\n")).collect();
    let ws = Workspace::new(copy.as_bytes());
    let dir = ws.file().parent().and_then(|p| p.parent()).expect("workspace").to_path_buf();
    let home = tempfile::tempdir().expect("home");
    let tool = |program: &std::path::Path, args: &[&str]| {
        let mut cmd = crate::support::hermetic(program);
        cmd.current_dir(&dir).env("HOME", home.path()).env("NO_COLOR", "1").env_remove("BEADS_DB").args(args);
        let out = crate::support::run(&mut cmd);
        assert!(out.status.success(), "{} {args:?}: {}", program.display(), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    tool(std::path::Path::new("git"), &["init", "-q"]);
    tool(&br, &["init"]);
    tool(&br, &["sync", "--import-only"]);
    let listed = |json: &str| -> std::collections::BTreeSet<String> {
        let v: serde_json::Value = serde_json::from_str(json).expect("ready --json");
        v.as_array().expect("a list").iter().map(|i| i["id"].as_str().expect("id").to_owned()).collect()
    };
    let theirs = listed(&tool(&br, &["ready", "--json"]));
    let all_types = listed(&ws.ok(&["ready", "--all-types", "--json"]));
    let default = listed(&ws.ok(&["ready", "--json"]));

    // Parents with an open child, computed from the file itself.
    let status: std::collections::HashMap<&str, &str> =
        records.iter().map(|r| (r["id"].as_str().unwrap_or_default(), r["status"].as_str().unwrap_or_default())).collect();
    let mut parents_with_open_children = std::collections::BTreeSet::new();
    for r in &records {
        let open = !matches!(r["status"].as_str(), Some("closed" | "tombstone"));
        for d in r["dependencies"].as_array().into_iter().flatten() {
            if open && d["type"] == "parent-child" {
                if let Some(parent) = d["depends_on_id"].as_str() {
                    parents_with_open_children.insert(parent.to_owned());
                }
            }
        }
    }
    assert!(theirs.len() > 50, "br listed only {} ready issues", theirs.len());
    let only_ours: Vec<&String> = all_types.difference(&theirs).collect();
    let only_theirs: Vec<&String> = theirs.difference(&all_types).collect();
    assert!(only_theirs.is_empty(), "br lists what we do not: {only_theirs:?}");
    assert!(
        only_ours.iter().all(|id| parents_with_open_children.contains(*id) && status.get(id.as_str()) == Some(&"open")),
        "we list what br does not, beyond parents with open children: {only_ours:?}"
    );
    assert!(only_ours.len() <= 5, "the rollup difference grew: {only_ours:?}");

    // The default list leaves out only the types its note names.
    let types: std::collections::HashMap<&str, &str> =
        records.iter().map(|r| (r["id"].as_str().unwrap_or_default(), r["issue_type"].as_str().unwrap_or("task"))).collect();
    let left_out: Vec<&String> = all_types.difference(&default).collect();
    assert!(!left_out.is_empty(), "the real file has agents and molecules that ready leaves out by default");
    assert!(
        left_out.iter().all(|id| ["merge-request", "gate", "molecule", "message", "agent", "role", "rig", "convoy", "slot"]
            .contains(types.get(id.as_str()).unwrap_or(&""))),
        "ready left out work items: {left_out:?}"
    );
    assert!(default.is_subset(&all_types));
}

/// A dependency on `on` of type `kind`.
fn dep(kind: &str, on: &str) -> String {
    format!(r#"{{"depends_on_id":"{on}","type":"{kind}"}}"#)
}

fn deps(list: &[String]) -> String {
    format!(r#""dependencies":[{}]"#, list.join(","))
}

/// `ready` gives each issue its parent, what it blocks and what it unblocks (docs/agents.md): the issues whose only open blocker it is, and
/// their children held up only by them.
#[test]
fn ready_work_knows_its_parent_what_it_blocks_and_what_it_unblocks() {
    let ws = Workspace::new(&jsonl(&[
        bead("E").title("The epic \\u001b]0;x\\u0007").line(),
        bead("A").extra(&deps(&[dep("parent-child", "E")])).line(),
        bead("B").line(),
        bead("C").extra(&deps(&[dep("blocks", "A")])).line(),
        bead("D").extra(&deps(&[dep("blocks", "A"), dep("blocks", "B")])).line(),
        bead("F").extra(&deps(&[dep("parent-child", "C")])).line(),
        bead("G").status("closed").extra(&deps(&[dep("blocks", "A")])).line(),
        bead("H").status("in_progress").extra(&deps(&[dep("blocks", "A")])).line(),
        bead("X").extra(&deps(&[dep("blocks", "Y"), dep("blocks", "A")])).line(),
        bead("Y").extra(&deps(&[dep("blocks", "X")])).line(),
    ]));
    let v: serde_json::Value = serde_json::from_str(&ws.ok(&["ready", "--json"])).expect("json");
    let by_id =
        |id: &str| v.as_array().expect("list").iter().find(|i| i["id"] == id).cloned().unwrap_or_else(|| panic!("{id} not ready: {v}"));
    let a = by_id("A");
    assert_eq!(a["parent"]["id"], "E");
    assert_eq!(a["blocks"], serde_json::json!(["C", "D", "H", "X"]), "closed G is not held up");
    assert_eq!(a["unblocks"], serde_json::json!(["C", "F"]), "D waits for B too, H is not open, X waits for Y");
    let b = by_id("B");
    assert_eq!(b["parent"], serde_json::Value::Null);
    assert_eq!(b["unblocks"], serde_json::json!([]), "D still waits for A");
    let text = ws.ok(&["ready"]);
    let line = text.lines().find(|l| l.contains(" A ")).expect("A's row");
    assert!(
        line.contains("in E \"The epic \\u{1b}]0;x\\u{7}\"") && line.contains("blocks C, D, H, X") && line.contains("unblocks C, F"),
        "{line}"
    );
    assert!(!text.contains('\u{1b}'), "a title's escape is shown, not sent");
    assert_eq!(ids(&ws, &["ready", "--limit", "1", "--json"]).len(), 1, "the next issue");
}

/// The neighbourhood walk stays linear: a chain where each issue holds up the next (each
/// `ready` issue's walk visits only what it frees), at N and 4N.
#[test]
fn the_neighbourhood_costs_linear_time() {
    let time = |n: usize| {
        let mut lines = Vec::with_capacity(2 * n);
        for i in 0..n {
            // n ready roots under n epics, each holding up a chain of one child and a
            // shared-blocker issue. (Before, the parent look-up scanned every parent-child
            // link per issue, 6.4 s for `ready` at 100k issues; the epics make that show.)
            lines.push(bead(&format!("e{i}")).line());
            lines.push(bead(&format!("r{i}")).extra(&deps(&[dep("parent-child", &format!("e{i}"))])).line());
            lines.push(bead(&format!("c{i}")).extra(&deps(&[dep("blocks", &format!("r{i}")), dep("blocks", "r0")])).line());
        }
        let ws = Workspace::new(&jsonl(&lines));
        ws.ok(&["import"]);
        let start = std::time::Instant::now();
        let out = ws.ok(&["ready", "--json"]);
        let took = start.elapsed();
        assert!(out.contains("\"unblocks\""));
        took
    };
    let small = time(2_000);
    let large = time(8_000);
    assert!(large < small * 8, "2k: {small:?}, 8k: {large:?}");
}

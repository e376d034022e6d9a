//! `bd-sync import`'s three-way merge meets two issues created under one id: one created through
//! SQL in this cache and never exported, the other brought by the file (a pull). Both must survive
//! import and export, under two ids.

use crate::sync::Workspace;

const EPIC: &str = concat!(
    r#"{"id":"bd-ep","title":"Epic","status":"open","priority":1,"issue_type":"epic","#,
    r#""created_at":"2025-11-01T10:00:00Z","updated_at":"2025-11-01T10:00:00Z"}"#
);

fn child(title: &str, created: &str) -> String {
    format!(
        concat!(
            r#"{{"id":"bd-ep.1","title":"{title}","status":"open","priority":2,"#,
            r#""issue_type":"task","created_at":"{created}","updated_at":"{created}"}}"#
        ),
        title = title,
        created = created
    )
}

/// The titles of the exported file's records, by id.
fn exported(ws: &Workspace) -> Vec<(String, String)> {
    String::from_utf8(ws.read())
        .expect("utf8")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("parses");
            (v["id"].as_str().unwrap_or("").to_owned(), v["title"].as_str().unwrap_or("").to_owned())
        })
        .collect()
}

fn scenario(cache_created: &str, file_created: &str) -> (Vec<(String, String)>, String) {
    let ws = Workspace::new(format!("{EPIC}\n").as_bytes());
    ws.ok(&["import"]);
    ws.sql(&format!(
        "INSERT INTO issues (id, title, status, priority, created_at, updated_at) VALUES ('bd-ep.1', 'Made in this cache', 'open', 2, \
            '{cache_created}', '{cache_created}');"
    ));
    // A pull brings another clone's subtask under the same id.
    std::fs::write(ws.file(), format!("{EPIC}\n{}\n", child("Made in another clone", file_created))).expect("write");
    let out = ws.sync(&["import"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    ws.ok(&["export"]);
    (exported(&ws), said)
}

#[test]
fn regression_import_merged_a_subtask_made_in_the_cache_with_another_clones_under_one_id() {
    // The cache's subtask is the later one: it moves to bd-ep.2 and the user is told.
    let (records, said) = scenario("2025-11-02T12:00:00Z", "2025-11-02T11:00:00Z");
    let want = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    assert_eq!(records, want(&[("bd-ep", "Epic"), ("bd-ep.1", "Made in another clone"), ("bd-ep.2", "Made in this cache")]), "{said}");
    assert!(said.contains("bd-ep.1 is now bd-ep.2"), "{said}");
    // The file's subtask is the later one: it moves, the cache's keeps the id.
    let (records, said) = scenario("2025-11-02T11:00:00Z", "2025-11-02T12:00:00Z");
    assert_eq!(records, want(&[("bd-ep", "Epic"), ("bd-ep.1", "Made in this cache"), ("bd-ep.2", "Made in another clone")]), "{said}");
}

/// A root id (no child number) made in this cache and by another clone: before, import kept the
/// newer of the two and reported the other; now both stay, the later under the id br 0.7.6 gives
/// it (a fresh hash id of the same prefix).
#[test]
fn regression_import_kept_one_of_two_issues_under_one_root_id() {
    let record = |title: &str, created: &str| {
        format!(
            concat!(
                r#"{{"id":"bd-zz1","title":"{title}","status":"open","priority":2,"#,
                r#""issue_type":"task","created_at":"{created}","updated_at":"{created}"}}"#
            ),
            title = title,
            created = created
        )
    };
    for (cache_created, file_created) in
        [("2025-11-02T12:00:00Z", "2025-11-02T11:00:00Z"), ("2025-11-02T11:00:00Z", "2025-11-02T12:00:00Z")]
    {
        let ws = Workspace::new(format!("{EPIC}\n").as_bytes());
        ws.ok(&["import"]);
        ws.sql(&format!(
            "INSERT INTO issues (id, title, status, priority, created_at, updated_at) VALUES ('bd-zz1', 'Made in this cache', 'open', 2, \
                '{cache_created}', '{cache_created}');"
        ));
        std::fs::write(ws.file(), format!("{EPIC}\n{}\n", record("Made in another clone", file_created))).expect("write");
        let out = ws.sync(&["import"]);
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{said}");
        ws.ok(&["export"]);
        let records = exported(&ws);
        let (earlier, later) = if cache_created < file_created {
            ("Made in this cache", "Made in another clone")
        } else {
            ("Made in another clone", "Made in this cache")
        };
        let later_created = cache_created.max(file_created);
        let facts = beads_git::merge::collisions::Facts::of(record(later, later_created).as_bytes()).expect("facts");
        let taken = beads_git::merge::collisions::Taken::new(["bd-ep".to_owned(), "bd-zz1".to_owned()]);
        let minted = beads_git::merge::collisions::mint("bd-zz1", &facts, &taken).expect("an id");
        let mut want = vec![("bd-ep".to_owned(), "Epic".to_owned()), ("bd-zz1".to_owned(), earlier.to_owned()), (minted, later.to_owned())];
        want.sort();
        let mut got = records.clone();
        got.sort();
        assert_eq!(got, want, "{said}");
    }
}

/// Many issues made in this cache meet as many other issues the file brings under the same ids:
/// the ids in use are read once per import, not once per move (a read of every id per moved
/// issue was quadratic). Timed at N and 4N; linear work takes about 4x, the test fails at 8x.
#[test]
fn many_issues_moved_by_one_import_cost_linear_time() {
    let run = |n: usize| -> std::time::Duration {
        let ws = Workspace::new(format!("{EPIC}\n").as_bytes());
        ws.ok(&["import"]);
        let values: Vec<String> = (0..n)
            .map(|k| format!("('bd-m{k}', 'Made in this cache {k}', 'open', 2, '2025-11-02T12:00:00Z', '2025-11-02T12:00:00Z')"))
            .collect();
        ws.sql(&format!("INSERT INTO issues (id, title, status, priority, created_at, updated_at) VALUES {};", values.join(",")));
        let mut file = format!("{EPIC}\n");
        for k in 0..n {
            file.push_str(&format!(
                "{{\"id\":\"bd-m{k}\",\"title\":\"Made in another clone \
                    {k}\",\"status\":\"open\",\"priority\":2,\"issue_type\":\"task\",\"created_at\":\"2025-11-02T11:00:00Z\",\"updated_at\
                        \":\"2025-11-02T11:00:00Z\"}}\n"
            ));
        }
        std::fs::write(ws.file(), file).expect("write");
        let start = std::time::Instant::now();
        let out = ws.sync(&["import"]);
        let took = start.elapsed();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        ws.ok(&["export"]);
        let ids: std::collections::BTreeSet<String> = exported(&ws).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids.len(), 2 * n + 1, "every issue kept under its own id");
        took
    };
    let best = |n: usize| run(n).min(run(n));
    let (small, large) = (best(150), best(600));
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    eprintln!("import moving N=150: {small:?}, 4N: {large:?} ({ratio:.1}x)");
    assert!(ratio < 8.0, "N took {small:?}, 4N took {large:?}: {ratio:.1}x");
}

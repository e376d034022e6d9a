//! The merge's two paths give the same result: the merge-join over inputs sorted by key
//! (`merge_sorted`) and the hash index that takes any input (`merge_indexed`). Each case runs both
//! and compares the merged bytes, the reports, warnings, renames, conflict count and errors, over
//! the fixture corpus (as it is and with each file sorted by key, under every conflict policy and
//! marker style), the property tests' random triples (sorted), and gen.py's 100k triple.

use std::fs;
use std::path::Path;

use beads_git::index::IdIndex;
use beads_git::merge::{merge, merge_indexed, merge_sorted, ConflictPolicy, Markers, MergeOptions, Merged, Unmergeable};
use beads_git::record::kind_rank;
use proptest::prelude::*;

use crate::merge_properties::{concurrent_children, counted_triple, triple};
use crate::support::shared_file;

/// Everything a merge result says, in a form two results can be compared by.
fn outcome(result: Result<Merged<'_>, Unmergeable>) -> Result<(Vec<u8>, String), Unmergeable> {
    result.map(|m| {
        let facts = format!(
            "conflicts {} review {} unchanged {}\nreports {:#?}\nwarnings {:#?}\nrenames {:#?}",
            m.conflicts,
            m.needs_review,
            m.is_ours_unchanged(),
            m.reports,
            m.warnings,
            m.renames
        );
        (m.to_vec(), facts)
    })
}

/// Runs both paths; `Ok(false)` when the inputs are not all sorted (only the indexed path ran).
fn same_on_both_paths(base: &[u8], ours: &[u8], theirs: &[u8], options: &MergeOptions) -> Result<bool, String> {
    let indexed = outcome(merge_indexed(base, ours, theirs, options));
    let Some(sorted) = merge_sorted(base, ours, theirs, options) else {
        return Ok(false);
    };
    let sorted = outcome(sorted);
    if sorted != indexed {
        let show = |o: &Result<(Vec<u8>, String), Unmergeable>| match o {
            Ok((bytes, facts)) => format!("{}\n{facts}", String::from_utf8_lossy(bytes)),
            Err(e) => format!("unmergeable: {e}"),
        };
        return Err(format!("indexed path:\n{}\nsorted path:\n{}", show(&indexed), show(&sorted)));
    }
    // `merge` itself must agree too (it picks one of the two).
    if outcome(merge(base, ours, theirs, options)) != indexed {
        return Err("merge() differs from both paths".into());
    }
    Ok(true)
}

/// The file with its lines in bd's order (by kind, then key); as it is when a line has no key.
fn sorted_by_key(content: &[u8]) -> Vec<u8> {
    let index = IdIndex::new(content);
    if !index.bad.is_empty() {
        return content.to_vec();
    }
    let mut lines: Vec<(u8, String, &[u8])> = index
        .file
        .lines
        .iter()
        .zip(&index.line_ids)
        .filter_map(|(line, id)| id.as_ref().map(|id| (kind_rank(id), id.to_string(), line.bytes)))
        .collect();
    lines.sort();
    lines.iter().flat_map(|(_, _, bytes)| bytes.iter().copied().chain([b'\n'])).collect()
}

fn every_option() -> Vec<MergeOptions> {
    let now = beads_git::timestamp::parse("2000-01-01T00:00:00Z");
    let mut all = Vec::new();
    for policy in [ConflictPolicy::Newest, ConflictPolicy::Ours, ConflictPolicy::Theirs, ConflictPolicy::Markers] {
        for partial in [false, true] {
            all.push(MergeOptions { policy, now, partial, ..MergeOptions::default() });
        }
    }
    all.push(MergeOptions {
        policy: ConflictPolicy::Markers,
        markers: Markers { diff3: true, size: 9, ..Markers::default() },
        now,
        ..MergeOptions::default()
    });
    all
}

#[test]
fn both_merge_paths_agree_on_every_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/merge");
    let mut names: Vec<_> = fs::read_dir(&root).expect("fixtures/merge exists").map(|e| e.expect("dir entry").path()).collect();
    names.sort();
    let (mut compared, mut failures) = (0, Vec::new());
    for dir in &names {
        let read = |f: &str| fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{}/{f}: {e}", dir.display()));
        let (base, ours, theirs) = (read("base.jsonl"), read("ours.jsonl"), read("theirs.jsonl"));
        let sorted = (sorted_by_key(&base), sorted_by_key(&ours), sorted_by_key(&theirs));
        for (what, (b, o, t)) in [("as it is", (&base, &ours, &theirs)), ("sorted", (&sorted.0, &sorted.1, &sorted.2))] {
            for options in every_option() {
                match same_on_both_paths(b, o, t, &options) {
                    Ok(ran) => compared += usize::from(ran),
                    Err(e) => failures.push(format!("--- {} ({what}, {options:?}) ---\n{e}", dir.display())),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
    // Most fixtures are sorted by key (or become so): the fast path must really have run.
    assert!(compared >= names.len() * 9, "only {compared} comparisons ran both paths over {} fixtures", names.len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn both_merge_paths_agree_on_random_triples((base, ours, theirs) in triple(), p in 0usize..9) {
        let (b, o, t) = (sorted_by_key(&base), sorted_by_key(&ours), sorted_by_key(&theirs));
        let options = &every_option()[p];
        prop_assert_eq!(same_on_both_paths(&b, &o, &t, options), Ok(true));
        // As generated (a base of ten or more records is not in key order).
        prop_assert!(same_on_both_paths(&base, &ours, &theirs, options).is_ok());
    }

    #[test]
    fn both_merge_paths_agree_on_counted_triples((base, ours, theirs) in counted_triple(), p in 0usize..9) {
        let options = &every_option()[p];
        prop_assert_eq!(same_on_both_paths(&base, &ours, &theirs, options), Ok(true));
    }

    #[test]
    fn both_merge_paths_agree_on_concurrent_children((base, ours, theirs, _n, _m) in concurrent_children(), p in 0usize..9) {
        let options = &every_option()[p];
        prop_assert_eq!(same_on_both_paths(&base, &ours, &theirs, options), Ok(true));
    }
}

/// `content` (sorted by key) with `per_gap` unchanged filler records after each of the ids
/// `bd-00` .. `bd-39`: enough lines for the sorted path to split its walk over two threads
/// (`merge::sorted::split_point`), with the generated records on both sides of the cut.
fn padded(content: &[u8], per_gap: usize) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = content.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec).collect();
    for n in 0..40 {
        for k in 0..per_gap {
            lines.push(format!(r#"{{"id":"bd-{n:02}-f{k:04}","title":"filler","status":"open","priority":2}}"#).into_bytes());
        }
    }
    sorted_by_key(&lines.join(&b"\n"[..]).into_iter().chain([b'\n']).collect::<Vec<u8>>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    /// The sorted path walks a large file in two halves on two threads; the halves' results,
    /// put together, are the one walk's: the hashed path (one walk, always) agrees on the bytes,
    /// reports, warnings, renames, conflicts and errors.
    #[test]
    fn both_merge_paths_agree_when_the_walk_is_split((base, ours, theirs) in triple(), p in 0usize..9) {
        let (b, o, t) = (padded(&sorted_by_key(&base), 40), padded(&sorted_by_key(&ours), 40), padded(&sorted_by_key(&theirs), 40));
        let options = &every_option()[p];
        prop_assert_eq!(same_on_both_paths(&b, &o, &t, options), Ok(true));
    }

    #[test]
    fn both_merge_paths_agree_on_split_concurrent_children((base, ours, theirs, _n, _m) in concurrent_children(), p in 0usize..9) {
        let (b, o, t) = (padded(&base, 40), padded(&ours, 40), padded(&theirs, 40));
        let options = &every_option()[p];
        prop_assert!(same_on_both_paths(&b, &o, &t, options).is_ok(), "{:?}", same_on_both_paths(&b, &o, &t, options));
    }
}

/// Errors on both sides of the cut: a bad record at a key only theirs has in the first half and
/// one at a key ours has in the second; the one walk reports the second (it ends the walk), and
/// so must the split walk. Collisions and deletions on both sides of the cut move and report as
/// in one walk.
#[test]
fn a_split_walk_reports_what_one_walk_reports() {
    let record = |id: &str, title: &str| {
        format!(
            concat!(
                r#"{{"id":"{id}","title":"{title}","status":"open","priority":2,"#,
                r#""created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z"}}"#
            ),
            id = id,
            title = title
        )
    };
    let file = |extra: &[String], skip: &[&str]| -> Vec<u8> {
        let mut lines: Vec<String> =
            (0..40).filter(|n| !skip.contains(&format!("bd-{n:02}").as_str())).map(|n| record(&format!("bd-{n:02}"), "base")).collect();
        lines.extend(extra.iter().cloned());
        padded(lines.join("\n").as_bytes(), 40)
    };
    let (early, late) = ("bd-03", "bd-36");
    let base = file(&[], &[]);
    // Each side: a new child under the same number in both halves (two issues, one id), a
    // record deleted by one side and changed by the other in both halves.
    let child = |id: &str, title: &str, at: &str| {
        format!(r#"{{"id":"{id}.1","title":"{title}","status":"open","created_at":"{at}","updated_at":"{at}"}}"#)
    };
    // A side: its two children, created at `at`, and its edits of the records `edited` (the
    // other side deletes them).
    let side = |name: &str, at: &str, edited: [&str; 2]| {
        let mut extra = vec![child(early, &format!("{name} early"), at), child(late, &format!("{name} late"), at)];
        extra.extend(edited.map(|id| record(id, &format!("{name} edit"))));
        file(&extra, &["bd-05", "bd-35", "bd-07", "bd-37"])
    };
    let ours = side("ours", "2025-02-01T00:00:00Z", ["bd-05", "bd-35"]);
    let theirs = side("theirs", "2025-03-01T00:00:00Z", ["bd-07", "bd-37"]);
    for options in every_option() {
        assert_eq!(same_on_both_paths(&base, &ours, &theirs, &options), Ok(true), "{options:?}");
    }
    let merged = merge_sorted(&base, &ours, &theirs, &every_option()[0]).expect("sorted").expect("merged");
    assert_eq!(merged.renames.len(), 2, "{:?}", merged.renames);
    // A bad line at a key only theirs has (early) and at a key ours has too (late).
    let bad = |id: &str| format!(r#"{{"id":"{id}","title":"bad","priority":}}"#);
    let theirs_bad = file(&[bad("bd-02.9"), bad(late)], &[late]);
    let base_with_late = file(&[], &[]);
    let sorted = outcome(merge_sorted(&base_with_late, &ours, &theirs_bad, &every_option()[0]).expect("sorted inputs"));
    let indexed = outcome(merge_indexed(&base_with_late, &ours, &theirs_bad, &every_option()[0]));
    assert_eq!(format!("{sorted:?}"), format!("{indexed:?}"));
}

/// gen.py's 100k triple (sorted by id, as bd writes it): both paths give the same bytes. Fails
/// under `CI` when the generator is missing.
#[test]
fn both_merge_paths_agree_on_the_generated_100k_triple() {
    let Some(gen) = shared_file("bench/gen.py") else {
        assert!(std::env::var_os("CI").is_none(), "../shared/bench/gen.py is missing: CI needs it for this test");
        eprintln!("skipped: ../shared/bench/gen.py is absent");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let status = std::process::Command::new("python3")
        .arg(&gen)
        .args(["all", "--outdir"])
        .arg(dir.path())
        .args(["--sizes", "100000"])
        .status()
        .expect("python3 runs gen.py");
    assert!(status.success(), "gen.py failed");
    let triple = dir.path().join("100k");
    let read = |f: &str| fs::read(triple.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let (base, ours, theirs) = (read("base.jsonl"), read("ours.jsonl"), read("theirs.jsonl"));
    let options = MergeOptions { now: beads_git::timestamp::parse("2026-01-01T00:00:00Z"), ..MergeOptions::default() };
    let indexed = merge_indexed(&base, &ours, &theirs, &options).expect("indexed merge");
    let sorted = merge_sorted(&base, &ours, &theirs, &options).expect("the generated files are sorted by id").expect("sorted merge");
    let (a, b) = (indexed.to_vec(), sorted.to_vec());
    let first_difference = a.iter().zip(&b).position(|(x, y)| x != y);
    assert!(a == b, "the two paths differ at byte {first_difference:?} (lengths {} and {})", a.len(), b.len());
    assert_eq!(format!("{:?}", indexed.reports), format!("{:?}", sorted.reports));
    assert_eq!(indexed.warnings, sorted.warnings);
}

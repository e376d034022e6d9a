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

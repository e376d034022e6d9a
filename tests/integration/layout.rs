//! The test binary's own layout: a file in `tests/integration/` that `main.rs` does not declare
//! is never compiled, so its tests would pass by never running.

use std::collections::BTreeSet;
use std::path::Path;

/// The modules `main.rs` declares (`mod name;`, with or without a visibility).
fn declared_modules(main: &str) -> BTreeSet<String> {
    main.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("pub ").or_else(|| l.strip_prefix("pub(crate) ")).or(Some(l)))
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';').map(str::to_owned))
        .collect()
}

#[test]
fn every_file_in_tests_integration_is_a_module_of_main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    let main = std::fs::read_to_string(dir.join("main.rs")).expect("read tests/integration/main.rs");
    let declared = declared_modules(&main);
    let mut files = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("read tests/integration") {
        let path = entry.expect("directory entry").path();
        if path.extension().is_some_and(|e| e == "rs") && path.file_stem().is_some_and(|s| s != "main") {
            files.insert(path.file_stem().expect("stem").to_string_lossy().into_owned());
        }
    }
    assert!(files.contains("layout"), "the scan found this file: {files:?}");
    let undeclared: Vec<String> = files.difference(&declared).map(|m| format!("tests/integration/{m}.rs")).collect();
    assert!(undeclared.is_empty(), "not declared with `mod` in tests/integration/main.rs, so never compiled: {}", undeclared.join(", "));
}

//! The project's own checks see what they are for: each script under `scripts/` is run on a tree
//! with a planted case and must fail on it (and pass once it is gone), so a check that silently
//! stopped reading a file, or a directory, is caught here rather than trusted.

use std::path::Path;
use std::process::Output;

/// Runs `scripts/NAME` with `args` on the tree at `root`.
fn script(root: &Path, name: &str, args: &[&str]) -> Output {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(name);
    std::process::Command::new("python3")
        .arg(path)
        .args(args)
        .env("BEADS_GIT_SCRIPT_ROOT", root)
        .output()
        .expect("python3 runs (CI installs it)")
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A function of `n` lines (its `fn` line and closing brace included) at `indent`.
fn function(name: &str, n: usize, indent: &str) -> String {
    let body: String = (0..n - 2).map(|i| format!("{indent}    let _x{i} = {i};\n")).collect();
    format!("{indent}fn {name}() {{\n{body}{indent}}}\n")
}

#[test]
fn long_functions_reads_the_binaries_and_the_code_after_a_test_module() {
    let tree = tempfile::tempdir().expect("tmp");
    let root = tree.path();
    write(root, "src/lib.rs", &function("short", 10, ""));
    let ok = script(root, "long-functions.py", &["--check", "50"]);
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    // Planted: a long function in a binary, and one after a test module in a library file.
    write(root, "src/bin/tool/main.rs", &function("long_in_a_binary", 60, ""));
    let after_tests =
        format!("#[cfg(test)]\nmod tests {{\n{}}}\n\n{}", function("a_long_test", 80, "    "), function("long_after_tests", 70, ""));
    write(root, "src/lib.rs", &after_tests);
    let out = script(root, "long-functions.py", &["--check", "50"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{listed}");
    assert!(listed.contains("long_in_a_binary") && listed.contains("long_after_tests"), "{listed}");
    assert!(!listed.contains("a_long_test"), "a test module is left out: {listed}");
}

#[test]
fn module_graph_catches_a_planted_cycle_and_an_upward_arrow() {
    let tree = tempfile::tempdir().expect("tmp");
    let root = tree.path();
    write(root, "src/lib.rs", "//! x\npub mod git;\npub mod merge;\n");
    write(root, "src/merge.rs", "//! x\npub fn run() { crate::git::call(); }\n");
    write(root, "src/git.rs", "//! x\npub fn call() {}\n");
    let ok = script(root, "module-graph.py", &["--check"]);
    assert_eq!(ok.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&ok.stdout), String::from_utf8_lossy(&ok.stderr));
    // Planted: plumbing (`git`) calling an engine (`merge`): an upward arrow and a cycle.
    write(root, "src/git.rs", "//! x\npub fn call() { crate::merge::run(); }\n");
    let out = script(root, "module-graph.py", &["--check"]);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("git") && said.contains("merge"), "{said}");
}

#[test]
fn line_width_catches_a_planted_line_over_rustfmts_width_in_a_test_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path();
    write(root, "rustfmt.toml", "max_width = 40\n");
    write(root, "src/lib.rs", "//! x\npub fn f() {}\n");
    write(root, "tests/t.rs", "fn t() {}\n");
    let ok = script(root, "line-width.py", &["--check"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    write(root, "tests/t.rs", &format!("fn t() {{ let _s = \"{}\"; }}\n", "x".repeat(40)));
    let out = script(root, "line-width.py", &["--check"]);
    assert_eq!(out.status.code(), Some(1), "a line past max_width fails the check");
    assert!(String::from_utf8_lossy(&out.stdout).contains("tests/t.rs:1:"), "{}", String::from_utf8_lossy(&out.stdout));
}

//! The portable way of every system-specific call (`src/platform.rs`), taken on Linux with
//! `BEADS_GIT_PORTABLE=1`: what Windows (and, for some calls, macOS) runs. `.ci/run` also runs
//! the merge, install, hook and cache tests a second time with the switch set; these tests cover
//! what those do not: a merge's result the same both ways, a driver installed under a path with
//! spaces, backslashes and quotes, and a closed pipe with SIGPIPE left ignored.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{bin, binaries_in, hermetic, issue, jsonl, run, TestRepo};

const FILE: &str = ".beads/issues.jsonl";
const PORTABLE: &str = "BEADS_GIT_PORTABLE";

/// Asks `cmd` for the portable way, or for the unix way (`.ci/portable.sh` sets the switch for
/// the whole run, so the unix way is asked for explicitly).
fn the_way(cmd: &mut Command, portable: bool) {
    if portable {
        cmd.env(PORTABLE, "1");
    } else {
        cmd.env_remove(PORTABLE);
    }
}

/// A repository where main and feature both edit bd-1 (different fields) and each adds an issue,
/// with the driver registered as `driver`.
fn diverged(driver: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.git(&["config", "merge.beads.driver", driver]);
    repo.write(".gitattributes", b".beads/issues.jsonl merge=beads\n");
    repo.git(&["add", ".gitattributes"]);
    repo.commit_file(FILE, &jsonl(&[issue("bd-1").line(), issue("bd-2").line()]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let feature = [issue("bd-1").priority(0).updated("2025-11-01T12:00:00Z").line(), issue("bd-2").line(), issue("bd-3").line()];
    repo.commit_file(FILE, &jsonl(&feature), "feature");
    repo.git(&["checkout", "-q", "main"]);
    let main = [issue("bd-0").line(), issue("bd-1").title("Renamed").updated("2025-11-01T11:00:00Z").line(), issue("bd-2").line()];
    repo.commit_file(FILE, &jsonl(&main), "main");
    repo
}

fn merge(repo: &TestRepo, portable: bool) -> Vec<u8> {
    let mut git = hermetic("git");
    git.current_dir(repo.path()).args(["merge", "-q", "--no-edit", "feature"]);
    the_way(&mut git, portable);
    let out = run(&mut git);
    assert!(out.status.success(), "merge (portable: {portable}): {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(repo.git(&["ls-files", "--unmerged"]), "", "portable: {portable}");
    repo.read(FILE)
}

#[test]
fn a_merge_through_the_driver_gives_the_same_bytes_the_portable_way() {
    let driver = format!("'{}' %O %A %B -l %L -p %P -s %S -x %X -y %Y", bin("bd-merge").display());
    let linux = merge(&diverged(&driver), false);
    let portable = merge(&diverged(&driver), true);
    assert_eq!(String::from_utf8_lossy(&portable), String::from_utf8_lossy(&linux));
    let text = String::from_utf8_lossy(&portable);
    assert!(text.contains(r#""title":"Renamed""#) && text.contains(r#""priority":0"#) && text.contains("bd-3"), "{text}");
}

#[test]
fn a_driver_installed_under_a_path_with_spaces_backslashes_and_quotes_runs_and_checks_clean() {
    let outside = tempfile::tempdir().expect("tmp");
    for (n, name) in ["Program Files", r"C:\beads-git\bin", "it's here", "tab\there"].into_iter().enumerate() {
        let dir = outside.path().join(format!("{n}")).join(name);
        binaries_in(&dir);
        // A directory holding `:` cannot be on PATH: the hooks then find the binaries as a
        // teammate's would, elsewhere on it.
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        let path = std::env::join_paths(std::iter::once(dir.clone()).chain(std::env::split_paths(&inherited))).unwrap_or(inherited);
        for portable in [false, true] {
            let repo = diverged("false");
            repo.git(&["config", "--unset", "merge.beads.driver"]);
            let mut install = hermetic(dir.join("bd-sync"));
            install.current_dir(repo.path()).args(["install"]).env("PATH", &path);
            the_way(&mut install, portable);
            let out = run(&mut install);
            assert!(out.status.success(), "{name:?}: install: {}", String::from_utf8_lossy(&out.stderr));
            let driver = repo.git(&["config", "merge.beads.driver"]);
            assert!(driver.contains("bd-merge"), "{driver}");
            let merged = String::from_utf8_lossy(&merge(&repo, portable)).into_owned();
            assert!(merged.contains(r#""title":"Renamed""#) && merged.contains(r#""priority":0"#), "{name:?}: {merged}");
            let mut check = hermetic(dir.join("bd-sync"));
            check.current_dir(repo.path()).args(["check", "--json"]).env("PATH", &path);
            let out = run(&mut check);
            let report = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{name:?} (portable: {portable}): check: {report}");
            assert!(!report.contains("does not exist"), "{name:?} (portable: {portable}): the driver's path was misread: {report}");
        }
    }
}

/// A command whose reader goes away after the first bytes: it must end quietly, never with a
/// panic's message, whether SIGPIPE ends it (unix) or the write fails (the portable way).
#[test]
fn a_reader_that_goes_away_ends_every_printing_command_quietly_both_ways() {
    let repo = TestRepo::new();
    let lines: Vec<String> = (0..3000).map(|i| issue(&format!("bd-{i}")).title(&"t".repeat(200)).line()).collect();
    repo.commit_file(FILE, &jsonl(&lines), "issues");
    for portable in [false, true] {
        let shown: Vec<String> = (0..300).map(|i| format!("bd-{i}")).collect();
        let show: Vec<&str> = std::iter::once("show").chain(shown.iter().map(String::as_str)).collect();
        for args in [&["ready"][..], &["ready", "--json"], &["ready", "--all-types"], &show] {
            let mut cmd: Command = hermetic(bin("bd-sync"));
            cmd.current_dir(repo.path()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
            the_way(&mut cmd, portable);
            let mut child = cmd.spawn().expect("spawn bd-sync");
            let mut first = [0u8; 16];
            let mut stdout = child.stdout.take().expect("stdout");
            let _ = stdout.read(&mut first);
            drop(stdout);
            let out = child.wait_with_output().expect("wait");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !stderr.contains("panicked") && !stderr.contains("failed printing") && !stderr.contains("writing to stdout"),
                "{args:?} (portable: {portable}): {stderr}"
            );
            // SIGPIPE ends it on unix (no exit code); the portable way ends with exit 0.
            let expected = if portable { Some(0) } else { None };
            assert_eq!(out.status.code(), expected, "{args:?} (portable: {portable}): {stderr}");
        }
    }
}

/// The hooks as Git for Windows' `sh` (and dash, and any POSIX shell) reads them: no bash-only
/// syntax, and a hook an editor saved with CRLF line ends is found outdated and mended by one
/// `install`, never given a second block.
#[test]
fn hook_files_are_posix_sh_and_a_crlf_copy_is_mended_by_one_install() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &jsonl(&[issue("bd-1").line()]), "issues");
    crate::support::bd_sync_ok(repo.path(), &["install"]);
    let hooks = repo.path().join(".git/hooks");
    let ours: Vec<std::path::PathBuf> = std::fs::read_dir(&hooks)
        .expect("hooks")
        .map(|e| e.expect("entry").path())
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("beads-git >>>")))
        .collect();
    assert!(ours.len() >= 5, "{ours:?}");
    let parses = |path: &Path| {
        let out = run(Command::new("dash").arg("-n").arg(path));
        assert!(out.status.success(), "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(path).expect("read");
        let text: String = text.lines().filter(|l| !l.trim_start().starts_with('#')).map(|l| format!("{l}\n")).collect();
        for bashism in ["[[", "function ", "$'", "<<<", "&>", "${!", "pushd", "source "] {
            assert!(!text.contains(bashism), "{} holds {bashism:?}:\n{text}", path.display());
        }
    };
    for path in &ours {
        parses(path);
    }
    for path in &ours {
        let crlf = std::fs::read_to_string(path).expect("read").replace('\n', "\r\n");
        std::fs::write(path, crlf).expect("write");
    }
    let check = crate::support::bd_sync(repo.path(), &["check"]);
    let said = String::from_utf8_lossy(&check.stdout).into_owned() + &String::from_utf8_lossy(&check.stderr);
    assert!(said.contains("hook-outdated") && said.contains("bd-sync install"), "{said}");
    crate::support::bd_sync_ok(repo.path(), &["install"]);
    for path in &ours {
        let text = std::fs::read_to_string(path).expect("read");
        assert_eq!(text.matches("beads-git >>>").count(), 1, "{}:\n{text}", path.display());
        let block_start = text.find("# >>> beads-git").expect("block");
        let block_end = text.find("# <<< beads-git <<<").expect("block end");
        assert!(!text[block_start..block_end].contains('\r'), "{}: the block is written with LF", path.display());
    }
    let check = crate::support::bd_sync(repo.path(), &["check"]);
    let said = String::from_utf8_lossy(&check.stdout).into_owned() + &String::from_utf8_lossy(&check.stderr);
    assert!(!said.contains("hook-outdated"), "{said}");
}

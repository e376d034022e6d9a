//! Dynamic completion: `bd-sync show` and `log` complete the issue ids of the issues file the
//! shell is in (with their titles), through clap's completion protocol that
//! `source <(BD_SYNC_COMPLETE=bash bd-sync)` registers.

use std::process::Output;

use crate::support::{bin, hermetic, run};

fn issues_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(dir.path().join(".beads")).expect("mkdir");
    let line = |id: &str, title: &str| format!(r#"{{"id":"{id}","title":"{title}","status":"open","priority":2,"issue_type":"task"}}"#);
    let file = [line("bd-2", "Two"), line("bd-10", "Ten"), line("bd-11", "Eleven\\tand a tab"), line("other-1", "Elsewhere")].join("\n");
    std::fs::write(dir.path().join(".beads/issues.jsonl"), file + "\n").expect("write");
    dir
}

fn complete(dir: &std::path::Path, shell: &str, words: &[&str]) -> Output {
    run(hermetic(bin("bd-sync")).current_dir(dir).env("BD_SYNC_COMPLETE", shell).arg("--").args(words))
}

#[test]
fn show_and_log_complete_issue_ids_with_their_titles() {
    let dir = issues_dir();
    for sub in ["show", "log"] {
        let out = complete(dir.path(), "fish", &["bd-sync", sub, "bd-1"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "bd-10\tTen\nbd-11\tEleven\\u{9}and a tab\n", "{sub}");
    }
    let all = complete(dir.path(), "fish", &["bd-sync", "show", "bd-2", ""]);
    assert_eq!(
        String::from_utf8_lossy(&all.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default())
            .filter(|w| !w.starts_with('-'))
            .collect::<Vec<_>>(),
        ["bd-10", "bd-11", "bd-2", "other-1"]
    );
    let nowhere = tempfile::tempdir().expect("tmp");
    let none = complete(nowhere.path(), "fish", &["bd-sync", "show", "bd"]);
    assert!(none.status.success() && none.stdout.is_empty(), "no issues file, no candidates");
}

#[test]
fn the_dynamic_registration_script_parses_in_bash() {
    let out = run(hermetic(bin("bd-sync")).env("BD_SYNC_COMPLETE", "bash"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("bd-sync.bash");
    std::fs::write(&file, &out.stdout).expect("write");
    let parsed = run(std::process::Command::new("bash").arg("-n").arg(&file));
    assert!(parsed.status.success(), "{}", String::from_utf8_lossy(&parsed.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("bd-sync"));
}

#[test]
fn a_complete_variable_meant_for_another_program_does_not_stop_bd_sync() {
    let out = run(hermetic(bin("bd-sync")).env("COMPLETE", "yes").arg("--version"));
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with("bd-sync "), "{out:?}");
}

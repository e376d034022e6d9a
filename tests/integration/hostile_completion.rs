//! Shell completion against a stranger's issues file (docs/install.md, shell completions): ids that hold
//! command substitutions, glob characters, terminal escapes and the protocol's separator bytes.
//! The protocol is checked directly for each shell, then the real bash, zsh and fish are driven in
//! a pseudo-terminal (tests/integration/pty_shell.py): TAB pressed, Enter pressed, and nothing
//! runs, nothing raw reaches the screen.

use std::path::{Path, PathBuf};

use crate::support::{bin, hermetic, required, run};

/// A command substitution that leaves a file behind when it runs.
const RUNS: &str = "bd-x$(touch${IFS}PWNED)";
/// An OSC sequence that sets the terminal's title (OSC 52 would write the clipboard).
const TITLE_ESCAPE: &str = "\u{1b}]0;HIJACKED\u{7}";

fn hostile_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(dir.path().join(".beads")).expect("mkdir");
    let ids = [
        RUNS.to_owned(),
        "bd-g*".to_owned(),
        "bd-g[ab]".to_owned(),
        format!("bd-e{TITLE_ESCAPE}"),
        "bd-v\u{b}bd-forged1".to_owned(),
        "bd-n\nbd-forged2".to_owned(),
        "bd-q'\"; touch PWNED2 #".to_owned(),
        "bd-ok1".to_owned(),
        "bd-ok2".to_owned(),
        "bd-e2".to_owned(),
    ];
    let mut file = String::new();
    for (i, id) in ids.iter().enumerate() {
        let title = if i == 7 { format!("title {TITLE_ESCAPE} with an escape") } else { format!("Issue {i}") };
        let line = serde_json::json!({"id": id, "title": title, "status": "open", "priority": 2, "issue_type": "task"});
        file.push_str(&format!("{line}\n"));
    }
    std::fs::write(dir.path().join(".beads/issues.jsonl"), file).expect("write");
    // Files a glob in a candidate would match.
    std::fs::write(dir.path().join("bd-gX"), "").expect("write");
    dir
}

fn protocol(dir: &Path, shell: &str, words: &[&str], extra: &[(&str, &str)]) -> Vec<u8> {
    let mut cmd = hermetic(bin("bd-sync"));
    cmd.current_dir(dir).env("BD_SYNC_COMPLETE", shell).envs(extra.iter().copied()).arg("--").args(words);
    let out = run(&mut cmd);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn regression_completion_offered_ids_that_run_code_glob_or_forge_candidates() {
    let dir = hostile_dir();
    let expected = ["bd-e2", "bd-ok1", "bd-ok2"];
    // bash: values joined by vertical tab.
    let bash = protocol(dir.path(), "bash", &["bd-sync", "show", "bd-"], &[("_CLAP_COMPLETE_INDEX", "2"), ("_CLAP_IFS", "\u{b}")]);
    let bash = String::from_utf8(bash).expect("utf-8");
    assert_eq!(bash.split('\u{b}').collect::<Vec<_>>(), expected, "bash candidates");
    // zsh: value:help, newline-separated.
    let zsh = protocol(dir.path(), "zsh", &["bd-sync", "show", "bd-"], &[("_CLAP_COMPLETE_INDEX", "2"), ("_CLAP_IFS", "\n")]);
    let zsh = String::from_utf8(zsh).expect("utf-8");
    let values: Vec<&str> = zsh.split('\n').map(|l| l.split(':').next().unwrap_or_default()).collect();
    assert_eq!(values, expected, "zsh candidates: {zsh:?}");
    // fish: value<TAB>help, a line each.
    let fish = String::from_utf8(protocol(dir.path(), "fish", &["bd-sync", "show", "bd-"], &[])).expect("utf-8");
    let values: Vec<&str> = fish.lines().map(|l| l.split('\t').next().unwrap_or_default()).collect();
    assert_eq!(values, expected, "fish candidates: {fish:?}");
    for (shell, out) in [("bash", &bash), ("zsh", &zsh), ("fish", &fish)] {
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{shell}: a raw escape in {out:?}");
        assert!(!out.contains("forged"), "{shell}: a forged candidate in {out:?}");
    }
    assert!(fish.contains("bd-ok1\ttitle \\u{1b}]0;HIJACKED\\u{7} with an escape"), "the title is escaped, not dropped: {fish:?}");
}

#[test]
fn regression_completion_offered_work_tree_file_names_that_run_code() {
    let dir = hostile_dir();
    std::fs::write(dir.path().join("x$(touch PWNED).jsonl"), "").expect("write");
    std::fs::write(dir.path().join("xsafe.jsonl"), "").expect("write");
    // `bd-sync export [FILE]` completes paths.
    let out = protocol(dir.path(), "bash", &["bd-sync", "export", "x"], &[("_CLAP_COMPLETE_INDEX", "2"), ("_CLAP_IFS", "\u{b}")]);
    let out = String::from_utf8(out).expect("utf-8");
    assert_eq!(out, "xsafe.jsonl", "only the safe file name is offered");
}

// ---------------------------------------------------------------------------------------------
// The real shells in a pseudo-terminal.

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).map(|d| d.join(name)).find(|p| p.is_file())
}

fn shell(name: &str) -> Option<PathBuf> {
    required(on_path(name), name, "apt-get install bash zsh fish; .ci/run installs them")
}

/// Types `steps` into `argv` in a pty in `dir`; every byte the shell wrote to the terminal.
fn in_pty(dir: &Path, argv: &[&str], steps: &[(&str, &str)]) -> Vec<u8> {
    let home = tempfile::tempdir().expect("home");
    let path = crate::support::path_with_our_binaries(&[]);
    let spec = serde_json::json!({
        "argv": argv,
        "cwd": dir,
        "env": {"PATH": path.to_string_lossy(), "HOME": home.path(), "TERM": "xterm-256color", "LANG": "C.UTF-8",
                "PS1": "$ ", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                "XDG_CONFIG_HOME": home.path(), "XDG_DATA_HOME": home.path(), "fish_greeting": ""},
        "steps": steps.iter().map(|(k, v)| [k, v]).collect::<Vec<_>>(),
    });
    let spec_file = home.path().join("spec.json");
    std::fs::write(&spec_file, spec.to_string()).expect("write spec");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/pty_shell.py");
    let out = run(std::process::Command::new("python3").arg(script).arg(&spec_file));
    assert!(out.status.success(), "pty driver: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn assert_nothing_ran(dir: &Path, screen: &[u8], shell: &str) {
    let shown = String::from_utf8_lossy(screen);
    assert!(!dir.join("PWNED").exists() && !dir.join("PWNED2").exists(), "{shell}: an id's command ran; screen:\n{shown}");
    assert!(!shown.contains("\u{1b}]0;HIJACKED"), "{shell}: an id's escape sequence reached the terminal raw; screen:\n{shown:?}");
    assert!(!shown.contains("forged"), "{shell}: a forged candidate was listed; screen:\n{shown:?}");
}

#[test]
fn regression_bash_completion_ran_an_ids_command_substitution() {
    let Some(bash) = shell("bash") else { return };
    let dir = hostile_dir();
    let bash = bash.to_string_lossy().into_owned();
    let screen = in_pty(
        dir.path(),
        &[&bash, "--norc", "--noprofile", "-i"],
        &[
            ("send", "source <(BD_SYNC_COMPLETE=bash bd-sync)\n"),
            ("sleep", "0.5"),
            // The one id starting `bd-x`: an old completion inserted it whole.
            ("send", "bd-sync show bd-x\t"),
            ("sleep", "1"),
            ("send", "\n"),
            ("sleep", "1"),
            ("send", "bd-sync show bd-\t\t"),
            ("sleep", "1"),
            ("send", "\u{3}"),
            ("send", "bd-sync show bd-ok\t\t"),
            ("sleep", "1"),
        ],
    );
    assert_nothing_ran(dir.path(), &screen, "bash");
    let shown = String::from_utf8_lossy(&screen);
    assert!(shown.contains("bd-ok1") && shown.contains("bd-ok2"), "control: bash completed the safe ids; screen:\n{shown}");
}

#[test]
fn regression_zsh_completion_printed_an_ids_escape_sequence_raw() {
    let Some(zsh) = shell("zsh") else { return };
    let dir = hostile_dir();
    let zsh = zsh.to_string_lossy().into_owned();
    let screen = in_pty(
        dir.path(),
        &[&zsh, "-f", "-i"],
        &[
            ("send", "autoload -Uz compinit && compinit -u && source <(BD_SYNC_COMPLETE=zsh bd-sync)\n"),
            ("sleep", "1"),
            ("send", "bd-sync show bd-e\t\t"),
            ("sleep", "1"),
            ("send", "\u{3}"),
            ("send", "bd-sync show bd-x\t"),
            ("sleep", "1"),
            ("send", "\n"),
            ("sleep", "1"),
            ("send", "bd-sync show bd-o\t\t"),
            ("sleep", "1"),
        ],
    );
    assert_nothing_ran(dir.path(), &screen, "zsh");
    let shown = String::from_utf8_lossy(&screen);
    assert!(shown.contains("bd-ok1") && shown.contains("bd-ok2"), "control: zsh listed the safe ids; screen:\n{shown:?}");
}

#[test]
fn regression_fish_completion_listed_forged_or_raw_candidates() {
    let Some(fish) = shell("fish") else { return };
    let dir = hostile_dir();
    let fish = fish.to_string_lossy().into_owned();
    let screen = in_pty(
        dir.path(),
        &[&fish, "--no-config", "-i"],
        &[
            ("send", "BD_SYNC_COMPLETE=fish bd-sync | source\n"),
            ("sleep", "1"),
            ("send", "bd-sync show bd-\t"),
            ("sleep", "1.5"),
            ("send", "\u{3}"),
            ("send", "bd-sync show bd-x\t"),
            ("sleep", "1"),
            ("send", "\n"),
            ("sleep", "1"),
            ("send", "bd-sync show bd-o\t"),
            ("sleep", "1"),
        ],
    );
    assert_nothing_ran(dir.path(), &screen, "fish");
    let shown = String::from_utf8_lossy(&screen);
    assert!(shown.contains("bd-ok1") && shown.contains("bd-ok2"), "control: fish listed the safe ids; screen:\n{shown:?}");
}

// ---------------------------------------------------------------------------------------------
// What completion reads: the issues file as every other command reads it.

/// An issues file that is a symbolic link (to a file outside the repository) is not read: no
/// candidate comes from its target.
#[test]
fn regression_completion_read_an_issues_file_through_a_symbolic_link() {
    let dir = tempfile::tempdir().expect("tmp");
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(dir.path().join(".beads")).expect("mkdir");
    let target = outside.path().join("elsewhere.jsonl");
    std::fs::write(&target, "{\"id\":\"secret-1\",\"title\":\"from outside\"}\n").expect("write");
    std::os::unix::fs::symlink(&target, dir.path().join(".beads/issues.jsonl")).expect("symlink");
    let out = String::from_utf8(protocol(dir.path(), "fish", &["bd-sync", "show", "s"], &[])).expect("utf-8");
    assert!(!out.contains("secret-1"), "completion read through the link: {out:?}");
}

/// Completion reads every record once: 4x the records costs about 4x, never 16x.
#[test]
fn completion_of_many_ids_is_linear() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(dir.path().join(".beads")).expect("mkdir");
    let timed = |n: usize| {
        let file: String = (0..n).map(|k| format!("{{\"id\":\"bd-{k}\",\"title\":\"{}\"}}\n", "t".repeat(200))).collect();
        std::fs::write(dir.path().join(".beads/issues.jsonl"), file).expect("write");
        let best = (0..2)
            .map(|_| {
                let start = std::time::Instant::now();
                let out = protocol(dir.path(), "fish", &["bd-sync", "show", "bd-1"], &[]);
                assert!(!out.is_empty());
                start.elapsed()
            })
            .min()
            .expect("two runs");
        best
    };
    let (small, large) = (timed(20_000), timed(80_000));
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    assert!(ratio < 8.0, "20k ids: {small:?}, 80k: {large:?} ({ratio:.1}x)");
}

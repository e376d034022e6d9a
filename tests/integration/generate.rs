//! `--generate`: every binary's completions and man page are non-empty and parse in the shell
//! (or formatter) that reads them. bash is always checked (`bash -n`); zsh, fish and groff only
//! where installed, as `.ci/tools.sh` does not install them.

use std::path::Path;

use crate::support::{ours, run};

fn installed(program: &str) -> bool {
    std::process::Command::new("sh").arg("-c").arg(format!("command -v {program}")).output().is_ok_and(|o| o.status.success())
}

fn parses(program: &str, args: &[&str], file: &Path) {
    let out = run(std::process::Command::new(program).args(args).arg(file));
    assert!(out.status.success(), "{program} {args:?} {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn generate_writes_completions_and_a_man_page_that_parse() {
    let dir = tempfile::tempdir().expect("tmp");
    for program in ["bd-sync", "bd-merge", "bd-hook"] {
        for kind in ["complete-bash", "complete-zsh", "complete-fish", "man"] {
            let out = run(ours(program).args(["--generate", kind]));
            assert_eq!(out.status.code(), Some(0), "{program} --generate {kind}: {}", String::from_utf8_lossy(&out.stderr));
            assert!(out.stdout.len() > 500, "{program} --generate {kind}: {} bytes", out.stdout.len());
            let text = String::from_utf8_lossy(&out.stdout);
            let file = dir.path().join(format!("{program}.{kind}"));
            std::fs::write(&file, &out.stdout).expect("write");
            match kind {
                "complete-bash" => {
                    assert!(text.contains(&format!("complete -F _{}", program.replace('-', "__"))), "{text}");
                    parses("bash", &["-n"], &file);
                }
                "complete-zsh" => {
                    assert!(text.starts_with(&format!("#compdef {program}")), "{text}");
                    if installed("zsh") {
                        parses("zsh", &["-n"], &file);
                    }
                }
                "complete-fish" => {
                    assert!(text.contains(&format!("complete -c {program}")), "{text}");
                    if installed("fish") {
                        parses("fish", &["-n"], &file);
                    }
                }
                _ => {
                    assert!(text.contains(&format!(".TH {program}")), "{text}");
                    if installed("groff") {
                        let out = run(std::process::Command::new("groff").args(["-man", "-Tutf8", "-z", "-ww"]).arg(&file));
                        assert!(out.status.success() && out.stderr.is_empty(), "groff: {}", String::from_utf8_lossy(&out.stderr));
                    }
                }
            }
        }
    }
    // Every subcommand is completed, bd-merge's repair commands included.
    let bash = std::fs::read_to_string(dir.path().join("bd-merge.complete-bash")).expect("read");
    for sub in ["resolve", "dedupe", "diff", "textconv", "update-branch"] {
        assert!(bash.contains(sub), "bd-merge completion lacks {sub}");
    }
    let bash = std::fs::read_to_string(dir.path().join("bd-sync.complete-bash")).expect("read");
    assert!(bash.contains("doctor") || bash.contains("check"), "{bash}");
}

#[test]
fn generate_refuses_an_unknown_kind() {
    let out = run(ours("bd-sync").args(["--generate", "complete-tcsh"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("complete-bash, complete-zsh, complete-fish or man"));
    assert!(out.stdout.is_empty());
}

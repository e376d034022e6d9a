//! Build script: the version string the binaries print (`bd-sync 0.1.0 (abc1234)`). The commit
//! is added only when the crate is built from a git checkout of itself (a crate unpacked inside
//! another repository keeps the plain version); without git it falls back silently.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()).filter(|s| !s.is_empty())
}

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ours = git(&["rev-parse", "--show-toplevel"])
        .and_then(|top| std::fs::canonicalize(top).ok())
        .is_some_and(|top| std::fs::canonicalize(manifest).is_ok_and(|m| m == top));
    let commit = if ours { git(&["rev-parse", "--short", "HEAD"]) } else { None };
    match commit {
        Some(c) => println!("cargo:rustc-env=BEADS_GIT_VERSION={version} ({c})"),
        None => println!("cargo:rustc-env=BEADS_GIT_VERSION={version}"),
    }
    // A new commit changes HEAD, the branch's ref or the reflog. Cargo treats a declared file
    // that does not exist as changed on every build, so only files that exist are declared: a
    // checkout whose refs are packed has no loose ref, one that never packed has no packed-refs,
    // and `logs/HEAD` (present unless reflogs are off) moves with every commit either way.
    if ours {
        let branch = git(&["symbolic-ref", "-q", "HEAD"]);
        let mut paths = vec!["HEAD".to_owned(), "logs/HEAD".to_owned(), "packed-refs".to_owned()];
        paths.extend(branch);
        for path in paths {
            let Some(p) = git(&["rev-parse", "--git-path", &path]) else { continue };
            let p = manifest.join(p);
            if p.is_file() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

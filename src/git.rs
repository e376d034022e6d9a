//! Talking to git: the `git merge-file` fallback, config look-ups, and reading the repository.
//!
//! The merge driver only needs git for two things (the line-merge fallback and the conflict
//! style), both run as `git` subprocesses because git is by definition present when it calls a
//! merge driver. Everything here reports failures as errors naming the command.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::merge::Markers;

/// Runs `git merge-file -p` (ours, base, theirs) and returns the merged bytes and whether
/// conflict markers were left.
pub fn merge_file(ours: &Path, base: &Path, theirs: &Path, markers: &Markers) -> Result<(Vec<u8>, bool)> {
    let mut cmd = Command::new("git");
    cmd.arg("merge-file").arg("-p").arg(format!("--marker-size={}", markers.size.max(7)));
    if markers.diff3 {
        cmd.arg("--diff3");
    }
    cmd.args(["-L", &markers.ours, "-L", &markers.base, "-L", &markers.theirs]);
    cmd.arg(ours).arg(base).arg(theirs).stdin(Stdio::null());
    let output = cmd.output().context("running `git merge-file` (is git installed?)")?;
    match output.status.code() {
        Some(0) => Ok((output.stdout, false)),
        Some(n) if (1..=127).contains(&n) => Ok((output.stdout, true)),
        _ => bail!("`git merge-file` failed: {}", String::from_utf8_lossy(&output.stderr).trim()),
    }
}

/// Reads one git config value as git would in the current directory; `None` when unset or when
/// git is not available.
pub fn config_value(key: &str) -> Option<String> {
    let out = Command::new("git").args(["config", "--get", key]).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether `merge.conflictStyle` asks for the base in conflict markers (`diff3` or `zdiff3`).
pub fn conflict_style_shows_base() -> bool {
    matches!(config_value("merge.conflictStyle").as_deref(), Some("diff3" | "zdiff3"))
}

/// The git directory of the repository containing `dir` (as `git rev-parse --git-dir`, honouring
/// `GIT_DIR`), absolute; `None` outside a repository.
pub fn git_dir(dir: &Path) -> Option<std::path::PathBuf> {
    let out = Command::new("git").args(["rev-parse", "--absolute-git-dir"]).current_dir(dir).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

//! jj (Jujutsu) reads and writes the repository's git objects but runs no merge driver and no git
//! hook; it runs a merge tool when asked, `jj resolve --tool NAME`. In a repository jj manages
//! (`.jj/` at the top, colocated with `.git/`), install registers ours as `merge-tools.beads` in
//! the repository's jj config, through jj itself (`jj config set --repo`, wherever that jj keeps
//! the file), and uninstall removes exactly the keys it set. docs/jj.md says how to use it.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use anyhow::{bail, Context, Result};

use super::types::{Action, Change};

/// The config table of the tool (`jj resolve --tool beads`).
const TABLE: &str = "merge-tools.beads";

/// Whether jj manages the repository whose top is `top`.
pub fn is_jj_repo(top: &Path) -> bool {
    top.join(".jj").is_dir()
}

/// A TOML basic string (jj parses a `config set` value as TOML).
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The keys and TOML values of our tool: bd-merge's merge form over jj's files, the result in
/// `$output`, and exit 1 meaning conflict markers were left.
fn settings(program: &str) -> [(String, String); 3] {
    [
        (format!("{TABLE}.program"), toml_string(program)),
        (
            format!("{TABLE}.merge-args"),
            r#"["merge", "$base", "$left", "$right", "-o", "$output", "-l", "$marker_length", "-p", "$path"]"#.to_owned(),
        ),
        (format!("{TABLE}.merge-conflict-exit-codes"), "[1]".to_owned()),
    ]
}

fn jj(top: &Path, args: &[&str]) -> Result<Output> {
    Command::new("jj")
        .arg("-R")
        .arg(top)
        .args(["--no-pager", "--color", "never", "--ignore-working-copy"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running jj (is it installed?)")
}

/// The program our tool runs now, if it is registered; an error when jj cannot run.
fn registered(top: &Path) -> Result<Option<String>> {
    let out = jj(top, &["config", "get", &format!("{TABLE}.program")])?;
    Ok(out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_owned()))
}

/// Registers the tool in a jj repository; `None` where jj does not manage the repository.
pub(super) fn install_jj(top: &Path, bin_dir: &Path, dry_run: bool) -> Result<Option<Action>> {
    if !is_jj_repo(top) {
        return Ok(None);
    }
    let path = top.join(".jj").join(TABLE);
    let Ok(registered) = registered(top) else {
        // A repository jj manages, on a machine without jj: nothing to register it with.
        let mut action = Action::new("jj merge tool", &path, Change::Absent);
        action.warning = Some(super::Warning::Text(
            "jj manages this repository, but jj is not on PATH, so its merge tool `beads` is not registered: \
             run `bd-sync install` again where jj runs"
                .into(),
        ));
        return Ok(Some(action));
    };
    let program = bin_dir.join("bd-merge").display().to_string();
    let change = match registered {
        None => Change::Added,
        Some(p) if p == program => Change::Unchanged,
        Some(_) => Change::Updated,
    };
    if !dry_run {
        for (key, value) in settings(&program) {
            let out = jj(top, &["config", "set", "--repo", &key, &value])?;
            if !out.status.success() {
                bail!("jj config set --repo {key}: {}", crate::record::printable(String::from_utf8_lossy(&out.stderr).trim(), 2000));
            }
        }
    }
    Ok(Some(Action::new("jj merge tool", &path, change)))
}

/// Removes the tool from a jj repository's config; `None` where jj does not manage it.
pub(super) fn uninstall_jj(top: &Path, dry_run: bool) -> Result<Option<Action>> {
    if !is_jj_repo(top) {
        return Ok(None);
    }
    let path = top.join(".jj").join(TABLE);
    if registered(top).ok().flatten().is_none() {
        return Ok(Some(Action::new("jj merge tool", &path, Change::Absent)));
    }
    if !dry_run {
        // jj unsets keys, never a whole table: ours one by one (a key someone added stays).
        for (key, _) in settings("") {
            let out = jj(top, &["config", "unset", "--repo", &key])?;
            let said = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() && !said.contains("not found") {
                bail!("jj config unset --repo {key}: {}", crate::record::printable(said.trim(), 2000));
            }
        }
    }
    Ok(Some(Action::new("jj merge tool", &path, Change::Removed)))
}

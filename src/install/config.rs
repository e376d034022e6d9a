//! The merge driver, the append-only driver and the diff text conversion in git config: set by
//! install (recording the values they replace) and put back by uninstall.

use std::path::Path;

use anyhow::Result;

use super::git_hooks::shell_quote;
use super::state::{config_get, InstallState, Recorder};
use super::types::{Action, Change, InstallOptions};
use crate::git::run as git;

/// The text conversion git runs to diff the issues files field by field (`diff.beads.textconv`).
pub fn textconv_command(bin_dir: &Path) -> String {
    format!("{} textconv", shell_quote(&bin_dir.join("bd-merge").display().to_string()))
}

/// The merge driver command for git config.
pub fn driver_command(bin_dir: &Path) -> String {
    driver_command_of(&bin_dir.join("bd-merge").display().to_string())
}

/// The merge driver command running the bd-merge at `program`.
fn driver_command_of(program: &str) -> String {
    format!("{} %O %A %B -l %L -p %P -s %S -x %X -y %Y", shell_quote(program))
}

/// The append-only merge driver command (`merge.beads-append.driver`).
pub fn append_driver_command(bin_dir: &Path) -> String {
    append_driver_command_of(&bin_dir.join("bd-merge").display().to_string())
}

fn append_driver_command_of(program: &str) -> String {
    format!("{} --append %O %A %B -p %P", shell_quote(program))
}

/// `merge.beads.name`.
const DRIVER_NAME: &str = "beads JSONL merge (bd-merge)";
/// `merge.beads-append.name`.
const APPEND_DRIVER_NAME: &str = "beads append-only log merge (bd-merge --append)";

/// The git config keys and values that register both drivers, as install sets them.
fn driver_keys(program: &str) -> [(&'static str, String); 4] {
    [
        ("merge.beads.driver", driver_command_of(program)),
        ("merge.beads.name", DRIVER_NAME.to_owned()),
        ("merge.beads-append.driver", append_driver_command_of(program)),
        ("merge.beads-append.name", APPEND_DRIVER_NAME.to_owned()),
    ]
}

/// Why [`gitaly_lines`] printed nothing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GitalyError {
    /// The path is not absolute: Gitaly runs the driver from the repository's directory.
    #[error("{0:?} is not an absolute path: give where bd-merge is on the Gitaly node, such as /usr/local/bin/bd-merge")]
    NotAbsolute(String),
    /// The path holds a control character (a newline would end the configuration's line).
    #[error("{0:?} holds a control character: give a plain path")]
    ControlCharacter(String),
}

/// The configuration that registers our drivers with the git of a GitLab Self-Managed or
/// Dedicated server (Gitaly), for bd-merge at `program` on the Gitaly node: the lines for
/// `/etc/gitlab/gitlab.rb` (the Linux package) and for `gitaly.toml` (a self-compiled GitLab).
/// GitLab.com runs no custom merge driver.
pub fn gitaly_lines(program: &str) -> Result<String, GitalyError> {
    if program.chars().any(char::is_control) {
        return Err(GitalyError::ControlCharacter(program.to_owned()));
    }
    if !program.starts_with('/') {
        return Err(GitalyError::NotAbsolute(program.to_owned()));
    }
    // A TOML basic string escapes a backslash and a quote; a Ruby double-quoted one also every
    // `#` (`#{`, `#@` and `#$` interpolate).
    let toml = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let ruby = |s: &str| toml(s).replace('#', "\\#");
    let keys = driver_keys(program);
    let mut out = String::from(
        "# /etc/gitlab/gitlab.rb (the Linux package): add these entries to gitaly['configuration'],\n\
         # then run `gitlab-ctl reconfigure`.\n\
         gitaly['configuration'] = {\n  # ...\n  git: {\n    # ...\n    config: [\n      # ...\n",
    );
    for (key, value) in &keys {
        out.push_str(&format!("      {{ key: {}, value: {} }},\n", ruby(key), ruby(value)));
    }
    out.push_str("    ],\n  },\n}\n\n# gitaly.toml (a self-compiled GitLab): add these tables, then restart Gitaly.\n");
    for (key, value) in &keys {
        out.push_str(&format!("[[git.config]]\nkey = {}\nvalue = {}\n\n", toml(key), toml(value)));
    }
    out.pop();
    Ok(out)
}

pub(super) fn install_driver(
    options: &InstallOptions,
    first_install: bool,
    state: &mut InstallState,
    recorder: &mut Recorder<'_>,
    actions: &mut Vec<Action>,
) -> Result<()> {
    let repo = &options.repo;
    let want_driver = driver_command(&options.bin_dir);
    let want_append = append_driver_command(&options.bin_dir);
    let want_textconv = textconv_command(&options.bin_dir);
    let first_append = !state.append_driver_installed;
    state.append_driver_installed = true;
    let first_textconv = !state.textconv_installed;
    state.textconv_installed = true;
    let mut wanted = Vec::new();
    for (key, want, previous, first) in [
        ("merge.beads.driver", want_driver.as_str(), &mut state.previous_driver, first_install),
        ("merge.beads.name", DRIVER_NAME, &mut state.previous_name, first_install),
        ("merge.beads-append.driver", want_append.as_str(), &mut state.previous_append_driver, first_append),
        ("merge.beads-append.name", APPEND_DRIVER_NAME, &mut state.previous_append_name, first_append),
        ("diff.beads.textconv", want_textconv.as_str(), &mut state.previous_textconv, first_textconv),
    ] {
        let current = config_get(repo, key);
        if first {
            *previous = current.clone();
        }
        wanted.push((key, want.to_owned(), current));
    }
    // Every value about to be replaced is on record before the first is replaced.
    recorder.save(state)?;
    for (key, want, current) in wanted {
        let change = if current.as_deref() == Some(want.as_str()) {
            Change::Unchanged
        } else {
            if !options.dry_run {
                git(repo, &["config", "--local", "--end-of-options", key, &want])?;
            }
            if current.is_some() {
                Change::Updated
            } else {
                Change::Added
            }
        };
        actions.push(Action { what: key.into(), path: key.into(), change, warning: None });
    }
    Ok(())
}

/// Puts back (or unsets) the git config values install set, and drops sections left empty.
pub(super) fn uninstall_git_config(repo: &Path, state: &InstallState, dry_run: bool, actions: &mut Vec<Action>) -> Result<()> {
    let mut keys = vec![("merge.beads.driver", &state.previous_driver), ("merge.beads.name", &state.previous_name)];
    if state.append_driver_installed {
        keys.extend([
            ("merge.beads-append.driver", &state.previous_append_driver),
            ("merge.beads-append.name", &state.previous_append_name),
        ]);
    }
    if state.textconv_installed {
        keys.push(("diff.beads.textconv", &state.previous_textconv));
    }
    for (key, previous) in keys {
        let change = match previous {
            Some(v) => {
                if !dry_run {
                    git(repo, &["config", "--local", "--end-of-options", key, v])?;
                }
                Change::Updated
            }
            None => {
                if !dry_run {
                    let _ = git(repo, &["config", "--local", "--unset", key]);
                }
                Change::Removed
            }
        };
        actions.push(Action { what: key.into(), path: key.into(), change, warning: None });
    }
    // A section left with no key (every previous value was absent, so none was put back) goes too.
    for section in ["merge.beads", "merge.beads-append", "diff.beads"] {
        let keys = format!("^{}\\.", section.replace('.', "\\."));
        if !dry_run && git(repo, &["config", "--local", "--get-regexp", &keys]).is_err() {
            let _ = git(repo, &["config", "--local", "--remove-section", section]);
        }
    }
    Ok(())
}

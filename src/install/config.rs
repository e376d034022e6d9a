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
    format!("{} %O %A %B -l %L -p %P -s %S -x %X -y %Y", shell_quote(&bin_dir.join("bd-merge").display().to_string()))
}

/// The append-only merge driver command (`merge.beads-append.driver`).
pub fn append_driver_command(bin_dir: &Path) -> String {
    format!("{} --append %O %A %B -p %P", shell_quote(&bin_dir.join("bd-merge").display().to_string()))
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
        ("merge.beads.name", "beads JSONL merge (bd-merge)", &mut state.previous_name, first_install),
        ("merge.beads-append.driver", want_append.as_str(), &mut state.previous_append_driver, first_append),
        ("merge.beads-append.name", "beads append-only log merge (bd-merge --append)", &mut state.previous_append_name, first_append),
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

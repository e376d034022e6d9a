//! `bd-sync install` / `uninstall`: the merge driver, the attribute lines, and our hooks, placed
//! where whoever runs this repository's hooks will run them.
//!
//! git config and attributes are simple. Hooks are not: a team may run them through husky,
//! lefthook or pre-commit, which own and regenerate the files git executes. [`managers`] finds
//! which one is in charge and integrates the way it documents; [`block`] places our marked block
//! in a hook file so that it always runs and never changes the hook's outcome. Everything install
//! does is recorded (with paths relative to the repository, so a copied clone never reaches back
//! into the original) and undone exactly by uninstall. [`health`] is the same knowledge run
//! backwards for `bd-sync check`.

//!
//! The operation's public types are in [`types`] (options, outcome, refusal, each file's action);
//! its steps are by what they touch: [`state`] (what install recorded, and where things are),
//! [`config`] (the driver in git config), [`attributes`], [`hooks`] (our blocks in git's hook
//! files), [`managed`] (our jobs in a hook manager's config) and [`uninstall`].

mod attr_source;
mod attributes;
pub mod block;
mod config;
mod git_hooks;
mod health;
mod hooks;
mod jj;
mod managed;
pub mod managers;
mod state;
mod types;
mod uninstall;
mod warning;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use attr_source::AttrSource;
pub use attributes::ATTRIBUTE_LINES;
pub use block::{install_block, uninstall_block, ModePolicy, BEGIN, END};
pub use config::{append_driver_command, driver_command, gitaly_lines, textconv_command, GitalyError};
pub use git_hooks::Hook;
pub use health::health;
pub use hooks::{install_one, run_hook, uninstall_one, OneHookError};
pub use jj::is_jj_repo;
pub use state::{hooks_dir, manager, InstallState};
pub use types::{Action, Binaries, Change, InstallError, InstallOptions, InstallOutcome, InstallRefusal};
pub use uninstall::uninstall;
pub use warning::{ManagerRun, Warning};

use attributes::install_attributes;
use config::install_driver;
use hooks::{hook_target, install_hook_file, stray_block_files, HookTarget};
use managed::{install_config, record_manager_hooks, run_manager_install};
use managers::Manager;
use state::{outside_repository, read_state, toplevel, Recorder};
use types::{refused, Stop};

/// The directory holding the running executable (where its sibling binaries are installed).
pub fn own_bin_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the running executable")?;
    let exe = fs::canonicalize(&exe).unwrap_or(exe);
    Ok(exe.parent().context("the executable has a directory")?.to_path_buf())
}

/// Our sibling binary `name` (`bd-merge`, `bd-sync`, `bd-hook`): beside the running one, else
/// the one `PATH` finds.
pub fn sibling(name: &str) -> PathBuf {
    own_bin_dir().map(|d| d.join(name)).ok().filter(|p| p.is_file()).unwrap_or_else(|| name.into())
}

/// Sets up the merge driver, the attribute lines and our hooks. A refusal is an outcome
/// ([`InstallOutcome::Refused`]), never an error.
///
/// A file install must not edit (a symbolic link it did not create, a hook in another language)
/// is an action with [`Change::Refused`] and a warning saying what to do; everything else is
/// still installed, and the caller exits 1. A failure part way leaves `install.json` recording
/// what was changed so far, for `bd-sync uninstall` ([`InstallError::PartWay`]).
pub fn install(options: &InstallOptions) -> Result<InstallOutcome, InstallError> {
    match install_steps(options) {
        Ok(actions) => Ok(InstallOutcome::Installed(actions)),
        Err(Stop::Refused(refusal)) => Ok(InstallOutcome::Refused(refusal)),
        Err(Stop::Failed(e)) => Err(InstallError::Failed(e)),
        Err(Stop::PartWay(e)) => Err(InstallError::PartWay(e)),
    }
}

fn install_steps(options: &InstallOptions) -> Result<Vec<Action>, Stop> {
    let repo = &options.repo;
    let top = toplevel(repo)?;
    let hooks = hooks_dir(repo)?;
    let manager = managers::detect(&top, &hooks);
    if matches!(manager, Manager::Plain | Manager::Husky { .. }) && !options.shared_hooks_dir && outside_repository(repo, &hooks)? {
        return Err(InstallRefusal::SharedHooksDir(hooks).into());
    }
    let prior = read_state(repo)?;
    let mut state = prior.clone().unwrap_or_default();
    // Installing again after an uninstall that kept the team's files: installed once more.
    state.uninstalled = false;
    let mut recorder = Recorder { repo, dry_run: options.dry_run, saved: prior.clone() };
    let mut actions = Vec::new();
    let steps = (|| -> Result<(), Stop> {
        install_driver(options, prior.is_none(), &mut state, &mut recorder, &mut actions)?;
        install_attributes(options, &mut state, &mut recorder, &mut actions)?;
        install_hooks(options, &top, &hooks, &manager, &mut state, &mut recorder, &mut actions)?;
        actions.extend(jj::install_jj(&top, &options.bin_dir, options.dry_run)?);
        if !options.dry_run {
            record_system_config(repo);
        }
        Ok(recorder.save(&state)?)
    })();
    match steps {
        Err(Stop::Failed(e)) if recorder.saved.is_some() && !options.dry_run => Err(Stop::PartWay(e)),
        other => other.map(|()| {
            if !top.join(".beads").is_dir() {
                // Run where a newcomer naturally runs it (the beads-git clone, a repository
                // without a tracker), install would otherwise set that repository up in silence.
                let mut action = Action::new(".beads", &top.join(".beads"), Change::Absent);
                action.warning = Some(Warning::NoTracker { top: top.clone() });
                actions.insert(0, action);
            }
            actions
        }),
    }
}

/// Records where git's system-wide configuration file is ([`crate::git::SYSTEM_CONFIG_RECORD`]),
/// so a hook can tell without running git that git's configuration sets none of its keys. Never
/// fails the install: without the record the hooks ask git, as before.
fn record_system_config(repo: &Path) {
    let Ok(common) = state::common_dir(repo) else { return };
    let record = common.join(crate::git::SYSTEM_CONFIG_RECORD);
    match crate::git::default_system_config(repo) {
        Some(path) => {
            let _ = record.parent().map(std::fs::create_dir_all);
            let _ = crate::safe_fs::write_atomic(&record, format!("{path}\n").as_bytes());
        }
        None => {
            let _ = std::fs::remove_file(&record);
        }
    }
}

/// Our blocks where git runs hooks now (plain hooks or husky's files), or our jobs in the
/// manager's config; blocks left where git no longer runs them are taken out first.
fn install_hooks(
    options: &InstallOptions,
    top: &Path,
    hooks: &Path,
    manager: &Manager,
    state: &mut InstallState,
    recorder: &mut Recorder<'_>,
    actions: &mut Vec<Action>,
) -> Result<(), Stop> {
    let repo = &options.repo;
    // Blocks git no longer runs (a manager arrived after us, or renamed our files) move to where
    // hooks run now: take them out first.
    let targets: Vec<PathBuf> = match manager {
        Manager::Plain => Hook::ALL.iter().map(|h| hooks.join(h.file_name())).collect(),
        Manager::Husky { dir } => Hook::ALL.iter().map(|h| dir.join(h.file_name())).collect(),
        _ => Vec::new(),
    };
    for stray in stray_block_files(repo, hooks)?.into_iter().filter(|p| !targets.contains(p)) {
        let name = stray.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match hook_target(&stray, repo)? {
            HookTarget::File(target) => actions.push(Action::new(&name, &stray, uninstall_block(&target, options.dry_run)?)),
            HookTarget::Refused(why) => actions.push(refused(&name, &stray, why.warning(&stray))),
        }
    }
    match manager {
        Manager::Plain => {
            for hook in Hook::ALL {
                let path = hooks.join(hook.file_name());
                let binaries = Binaries::Dir(options.bin_dir.clone());
                let mut action = install_hook_file(repo, &path, hook, &binaries, ModePolicy::Executable, options.dry_run)?;
                if !options.dry_run && action.change == Change::Added && !block::is_executable(&path) {
                    action.warning = Some(Warning::NotExecutable { path: path.clone() });
                }
                actions.push(action);
            }
        }
        Manager::Husky { dir } => {
            let mut changed = Vec::new();
            for hook in Hook::ALL {
                let path = dir.join(hook.file_name());
                let action = install_hook_file(repo, &path, hook, &Binaries::Path, ModePolicy::Any, options.dry_run)?;
                if !matches!(action.change, Change::Unchanged | Change::Refused) {
                    changed.push(path.strip_prefix(top).unwrap_or(&path).display().to_string());
                }
                actions.push(action);
            }
            if let (false, Some(last)) = (changed.is_empty(), actions.last_mut()) {
                last.warning = Some(Warning::CommitHuskyFiles { files: changed });
            }
        }
        Manager::Lefthook { main } => {
            let path = if options.team {
                main.clone().unwrap_or_else(|| top.join("lefthook.yml"))
            } else {
                managers::lefthook_local_path(top, main.as_deref())
            };
            install_config(options, top, &path, state, recorder, actions, |p, c| {
                managers::lefthook_with_block(p, c).map(|content| managers::Edited { content, list: None })
            })?;
            record_manager_hooks(hooks, "lefthook", state, recorder)?;
            run_manager_install(options, top, hooks, "lefthook", &["install"], actions);
        }
        Manager::PreCommit { config } => {
            install_config(options, top, config, state, recorder, actions, managers::pre_commit_with_block)?;
            record_manager_hooks(hooks, "pre-commit", state, recorder)?;
            run_manager_install(options, top, hooks, "pre-commit", &["install"], actions);
        }
    }
    Ok(())
}

//! Hooks run by a manager (lefthook, pre-commit): our jobs in its config, the hook types it
//! installs for them (recorded, so uninstall removes only those), and running the manager itself,
//! never from inside the repository.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::block;
use super::git_hooks::Hook;
use super::managers::{self, Manager};
use super::state::{common_dir, inside, is_refusal, read_optional, InstallState, Recorder};
use super::types::{refused, Action, Change, InstallOptions, InstallRefusal, Stop};
use super::warning::{ManagerRun, Warning};

pub(super) type ConfigEdit = fn(&Path, &str) -> Result<managers::Edited, managers::ManualEdit>;

pub(super) fn install_config(
    options: &InstallOptions,
    top: &Path,
    path: &Path,
    state: &mut InstallState,
    recorder: &mut Recorder<'_>,
    actions: &mut Vec<Action>,
    edit: ConfigEdit,
) -> Result<(), Stop> {
    let existing = match read_optional(path) {
        Ok(e) => e,
        Err(e) if is_refusal(&e) => {
            actions.push(refused("hook manager config", path, Warning::Text(format!("{e:#}; our jobs were not added"))));
            return Ok(());
        }
        Err(e) => return Err(anyhow::Error::from(e).into()),
    };
    let text = String::from_utf8(existing.clone().unwrap_or_default()).with_context(|| format!("{} is not UTF-8", path.display()))?;
    let edited = edit(path, &text).map_err(InstallRefusal::ManualEdit)?;
    let new = edited.content;
    let change = match &existing {
        None => Change::Created,
        Some(old) if *old == new.as_bytes() => Change::Unchanged,
        Some(old) if block::find_block(old).is_some() => Change::Updated,
        Some(_) => Change::Added,
    };
    let relative = camino::Utf8PathBuf::try_from(path.strip_prefix(top).unwrap_or(path).to_path_buf())
        .map_err(|e| anyhow::anyhow!("{} is not UTF-8, and install.json records paths as UTF-8 text", e.into_path_buf().display()))?;
    if state.manager_config.as_ref() != Some(&relative) {
        state.manager_config = Some(relative);
        state.manager_config_created = existing.is_none();
    }
    let list_action = edited.list.map(|edit| {
        let mut action = Action::new("default_install_hook_types", path, Change::Added);
        action.warning = Some(Warning::Text(format!(
            "added {} to default_install_hook_types in {} (pre-commit installs those hook types for our jobs; uninstall takes them out)",
            edit.added.join(", "),
            path.display()
        )));
        // A list extended twice (an item removed by hand, install run again) is undone in one go.
        state.manager_list_edit = Some(match state.manager_list_edit.take() {
            Some(old) if old.after == edit.before => {
                managers::ListEdit { before: old.before, after: edit.after, added: [old.added, edit.added].concat() }
            }
            _ => edit,
        });
        action
    });
    recorder.save(state)?;
    if change != Change::Unchanged && !options.dry_run {
        crate::safe_fs::write_atomic(path, new.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    actions.push(Action::new("hook manager config", path, change));
    actions.extend(list_action);
    Ok(())
}

/// The files of our hooks in `hooks` that `manager` generated, and the `.old` / `.legacy` copies
/// there: what [`InstallState::manager_hooks_before`] records.
pub(super) fn manager_hook_files(hooks: &Path, manager: &str) -> Vec<String> {
    let mut out = Vec::new();
    for hook in Hook::ALL {
        let name = hook.file_name();
        if read_optional(&hooks.join(name)).ok().flatten().and_then(|c| managers::generated_by(&c)) == Some(manager) {
            out.push(name.to_owned());
        }
        for copy in [format!("{name}.old"), format!("{name}.legacy")] {
            if fs::symlink_metadata(hooks.join(&copy)).is_ok() {
                out.push(copy);
            }
        }
    }
    out
}

/// Records what the hooks directory held before the manager first installs hook types for us.
pub(super) fn record_manager_hooks(hooks: &Path, manager: &str, state: &mut InstallState, recorder: &mut Recorder<'_>) -> Result<()> {
    if state.manager_hooks_before.is_none() {
        state.manager_hooks_before = Some(manager_hook_files(hooks, manager));
        recorder.save(state)?;
    }
    Ok(())
}

/// Uninstall's half of [`record_manager_hooks`]: the hook types the manager installed only for
/// our jobs go, the way the manager itself removes them, so the hooks directory is as it was.
pub(super) fn uninstall_manager_hooks(
    top: &Path,
    hooks: &Path,
    manager: &Manager,
    before: &[String],
    dry_run: bool,
    actions: &mut Vec<Action>,
) {
    let name = manager.name();
    let ours: Vec<&str> = Hook::ALL
        .iter()
        .map(|h| h.file_name())
        .filter(|h| !before.iter().any(|b| b == h))
        .filter(|h| read_optional(&hooks.join(h)).ok().flatten().and_then(|c| managers::generated_by(&c)) == Some(name))
        .collect();
    if ours.is_empty() {
        return;
    }
    let (program_args, removed_here): (Vec<String>, bool) = match manager {
        // pre-commit removes its hook files and puts back the `.legacy` copy it made of a hook
        // that was there before.
        Manager::PreCommit { .. } => {
            (["uninstall"].into_iter().chain(ours.iter().flat_map(|t| ["-t", t])).map(String::from).collect(), false)
        }
        // lefthook has no command to remove one hook type: its stubs for our hooks are removed
        // here (and a `.old` copy lefthook made for them put back), then `lefthook install`
        // re-creates those its remaining config still needs.
        Manager::Lefthook { .. } => (vec!["install".to_owned()], true),
        _ => return,
    };
    let command = format!("{name} {}", program_args.join(" "));
    let mut action = Action { what: format!("{name} hook types"), path: ours.join(" "), change: Change::Removed, warning: None };
    if dry_run {
        actions.push(action);
        return;
    }
    let program = manager_program(top, hooks, name);
    let by_hand = |problem| Warning::ManagerUninstall {
        manager: name.to_owned(),
        command: command.clone(),
        problem,
        types: ours.iter().map(|t| (*t).to_owned()).collect(),
        hooks: hooks.to_path_buf(),
    };
    if program.is_none() && !removed_here {
        action.change = Change::Refused;
        action.warning = Some(by_hand(ManagerRun::NotOnPath));
        actions.push(action);
        return;
    }
    if removed_here {
        for hook in &ours {
            let path = hooks.join(hook);
            if let Err(e) = fs::remove_file(&path) {
                action.warning = Some(Warning::Text(format!("could not remove {}: {e}", path.display())));
            }
            let old = hooks.join(format!("{hook}.old"));
            if !before.iter().any(|b| *b == format!("{hook}.old")) && fs::symlink_metadata(&old).is_ok() {
                if let Err(e) = fs::rename(&old, &path) {
                    action.warning = Some(Warning::Text(format!("could not move {} back to {}: {e}", old.display(), path.display())));
                }
            }
        }
    }
    // lefthook's stubs for our types are gone already; its install only re-creates what its
    // remaining config needs, which it had before ours, so without the program nothing is left.
    let Some(program) = program else {
        actions.push(action);
        return;
    };
    let out = std::process::Command::new(&program).args(&program_args).current_dir(top).stdin(std::process::Stdio::null()).output();
    if let Some(problem) = run_problem(out) {
        action.change = Change::Refused;
        action.warning = Some(by_hand(problem));
    }
    actions.push(action);
}

/// Finds a manager's executable, never inside the repository (a committed
/// `node_modules/.bin/lefthook` is code from whoever wrote the repository): on PATH (entries that
/// are relative or lie inside the work tree are skipped); for lefthook, else `$LEFTHOOK_BIN` (the
/// variable its own hook files honour), else the absolute path of the lefthook that wrote the hook
/// files already in `hooks` (a lefthook installed with npm is run through `npx` and is on no
/// PATH; its hook files name the binary), when `hooks` is in the git dir or outside the work tree
/// (never a committed hooks directory).
pub(super) fn manager_program(top: &Path, hooks: &Path, name: &str) -> Option<PathBuf> {
    let usable = |p: &Path| p.is_absolute() && !inside(p, top) && p.is_file();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut on_path = std::env::split_paths(&path).filter(|d| d.is_absolute() && !inside(d, top)).map(|d| d.join(name));
    if let Some(found) = on_path.find(|p| p.is_file()) {
        return Some(found);
    }
    if name != "lefthook" {
        return None;
    }
    if let Some(bin) = std::env::var_os("LEFTHOOK_BIN").map(PathBuf::from).filter(|p| usable(p)) {
        return Some(bin);
    }
    let in_git_dir = common_dir(top).is_ok_and(|git| inside(hooks, &git));
    if inside(hooks, top) && !in_git_dir {
        return None;
    }
    Hook::ALL.iter().filter_map(|h| read_optional(&hooks.join(h.file_name())).ok().flatten()).find_map(|content| {
        if managers::generated_by(&content) != Some("lefthook") {
            return None;
        }
        managers::lefthook_binary_in_hook(&String::from_utf8_lossy(&content)).map(PathBuf::from).filter(|p| usable(p))
    })
}

/// Lets the manager (re)generate its hook files, so the hook types our jobs need exist.
pub(super) fn run_manager_install(
    options: &InstallOptions,
    top: &Path,
    hooks: &Path,
    name: &str,
    args: &[&str],
    actions: &mut Vec<Action>,
) {
    if options.dry_run {
        return;
    }
    let command = format!("{name} {}", args.join(" "));
    let problem = match manager_program(top, hooks, name) {
        None => Some(ManagerRun::NotOnPath),
        Some(program) => {
            run_problem(std::process::Command::new(&program).args(args).current_dir(top).stdin(std::process::Stdio::null()).output())
        }
    };
    let warning = problem.map(|problem| Warning::ManagerInstall { manager: name.to_owned(), command: command.clone(), problem });
    actions.push(Action {
        what: name.to_owned(),
        path: command,
        change: if warning.is_some() { Change::Absent } else { Change::Unchanged },
        warning,
    });
}

/// What went wrong running a manager's command, if anything.
fn run_problem(out: std::io::Result<std::process::Output>) -> Option<ManagerRun> {
    match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(ManagerRun::Failed(String::from_utf8_lossy(&o.stderr).trim().to_owned())),
        Err(e) => Some(ManagerRun::NotStarted(e.to_string())),
    }
}

/// Takes our block out of a hook manager's config (deleting a file install created that holds
/// nothing else), and puts back a hook-type list install extended.
pub(super) fn uninstall_manager_config(path: &Path, state: &InstallState, dry_run: bool, actions: &mut Vec<Action>) -> Result<()> {
    let path = path.to_path_buf();
    if let Some(content) = read_optional(&path)? {
        let without = block::without_block(&content);
        let had_block = without.is_some();
        let mut rest = without.unwrap_or_else(|| content.clone());
        let mut list_action = None;
        if let Some(list) = &state.manager_list_edit {
            let found: Vec<usize> = memchr::memmem::find_iter(&rest, list.after.as_bytes()).collect();
            list_action = Some(match found.as_slice() {
                [at] => {
                    rest.splice(*at..*at + list.after.len(), list.before.bytes());
                    Action::new("default_install_hook_types", &path, Change::Removed)
                }
                _ => refused(
                    "default_install_hook_types",
                    &path,
                    Warning::Text(format!(
                        "{} changed since install added {} to its default_install_hook_types; take them out yourself if they are only \
                            there for beads-git",
                        path.display(),
                        list.added.join(", ")
                    )),
                ),
            });
        }
        let change = match () {
            () if !had_block && list_action.as_ref().is_none_or(|a| a.change != Change::Removed) => Change::Absent,
            () if rest.is_empty() && state.manager_config_created => {
                if !dry_run {
                    fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
                }
                Change::Deleted
            }
            () => {
                if !dry_run {
                    crate::safe_fs::write_atomic(&path, &rest)?;
                }
                Change::Removed
            }
        };
        actions.push(Action::new("hook manager config", &path, change));
        actions.extend(list_action);
    }
    Ok(())
}

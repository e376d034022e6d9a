//! `bd-sync uninstall`: removes exactly what install added and puts back what it replaced, keeping
//! the committed files a team relies on unless asked.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::attributes::{uninstall_attributes, AttributesFile};
use super::block::{self, uninstall_block};
use super::config::uninstall_git_config;
use super::git_hooks::Hook;
use super::hooks::{hook_target, stray_block_files, HookTarget};
use super::managed::{uninstall_manager_config, uninstall_manager_hooks};
use super::managers::{self, Manager};
use super::state::{hooks_dir, read_state, state_path, toplevel, write_state, InstallState};
use super::types::{refused, Action, Change};
use super::warning::Warning;
use crate::safe_fs::temp_files;

/// Removes exactly what install added and puts back what it replaced, in this repository only.
/// Committed files teammates rely on (the `.gitattributes` lines that route the issues file to
/// the driver, a committed hook manager config) are kept unless `team` is set: removing them
/// turns beads-git off for everyone who pulls that commit. What was kept stays recorded, so a
/// later `uninstall --team` can still take it out.
pub fn uninstall(repo: &Path, dry_run: bool, team: bool) -> Result<Vec<Action>> {
    let state = read_state(repo)?;
    let top = toplevel(repo)?;
    let hooks = hooks_dir(repo)?;
    let mut actions = Vec::new();
    let manager = managers::detect(&top, &hooks);
    let mut files: Vec<PathBuf> = stray_block_files(repo, &hooks)?;
    if let Manager::Husky { dir } = &manager {
        files.extend(Hook::ALL.iter().map(|h| dir.join(h.file_name())));
    }
    for path in files {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match hook_target(&path, repo)? {
            HookTarget::File(target) => actions.push(Action::new(&name, &path, uninstall_block(&target, dry_run)?)),
            HookTarget::Refused(why) => actions.push(refused(&name, &path, why.warning(&path))),
        }
    }
    let Some(state) = state else {
        return Ok(actions);
    };
    // What stays for the team, and stays recorded for `uninstall --team`.
    let mut kept = InstallState::default();
    if let Some(rel) = &state.manager_config {
        let path = top.join(rel);
        if !team && committed_holding(&top, &path, block::BEGIN) {
            actions.push(kept_for_team("hook manager config", &top, &path, "the team's hook manager runs our jobs from it in every clone"));
            kept.manager_config = state.manager_config.clone();
            kept.manager_config_created = state.manager_config_created;
            kept.manager_list_edit = state.manager_list_edit.clone();
        } else {
            uninstall_manager_config(&path, &state, dry_run, &mut actions)?;
        }
    }
    if let Some(before) = &state.manager_hooks_before {
        uninstall_manager_hooks(&top, &hooks, &manager, before, dry_run, &mut actions);
    }
    uninstall_git_config(repo, &state, dry_run, &mut actions)?;
    if let Some(location) = state.attributes_file.as_deref().and_then(AttributesFile::parse) {
        let path = location.path(repo)?;
        if !team && location == AttributesFile::WorkTree && committed_holding(&top, &path, " merge=beads") {
            let why = "teammates' clones route the issues file to the field-level driver through its merge=beads lines";
            actions.push(kept_for_team("attributes", &top, &path, why));
            kept.attributes_file = state.attributes_file.clone();
            kept.attribute_lines_added = state.attribute_lines_added.clone();
            kept.attributes_created = state.attributes_created;
            kept.attributes_newline_added = state.attributes_newline_added;
        } else {
            actions.extend(uninstall_attributes(repo, &top, location, &state, dry_run)?);
        }
    }
    if !dry_run {
        if kept.attributes_file.is_some() || kept.manager_config.is_some() {
            kept.uninstalled = true;
            write_state(repo, &kept)?;
        } else {
            let _ = fs::remove_file(state_path(repo)?);
        }
    }
    actions.extend(super::jj::uninstall_jj(&top, dry_run)?);
    // Last: every write above goes through a temporary file, whose first use in a repository
    // adds the exclude lines this takes out.
    if let Ok(common) = super::state::common_dir(repo) {
        let exclude = common.join("info").join("exclude");
        if unignore_in_git(&exclude, dry_run) {
            actions.push(Action::new("exclude", &exclude, Change::Removed));
        }
        if !dry_run {
            let _ = fs::remove_file(common.join(crate::git::SYSTEM_CONFIG_RECORD));
        }
    }
    Ok(actions)
}

/// Takes the lines our temporary files' exclusion added out of the repository's `exclude` file,
/// unless another writer changed it meanwhile. Whether there were any (with `dry_run`, whether
/// there are). Written through our own temporary file: its exclusion then finds the pattern still
/// in the file it replaces, and adds nothing.
fn unignore_in_git(exclude: &Path, dry_run: bool) -> bool {
    let Some((kept, read)) = temp_files::without_our_lines(exclude) else { return false };
    dry_run
        || crate::safe_fs::write_atomic_if_unchanged(exclude, Some(read), |w| std::io::Write::write_all(w, kept.as_bytes()))
            .is_ok_and(|written| written.is_some())
}

/// A committed file uninstall leaves as it is for the team, saying what removing it would do.
pub(super) fn kept_for_team(what: &str, top: &Path, path: &Path, why: &str) -> Action {
    let rel = path.strip_prefix(top).unwrap_or(path).display().to_string();
    let mut action = Action::new(what, path, Change::Unchanged);
    action.warning = Some(Warning::KeptForTeam { rel, why: why.to_owned() });
    action
}

/// Whether the version of `path` committed at HEAD holds `needle`: our lines there reach every
/// teammate who pulls, so uninstall keeps them without `--team`.
pub(super) fn committed_holding(top: &Path, path: &Path, needle: &str) -> bool {
    let Ok(rel) = path.strip_prefix(top) else { return false };
    let spec = format!("HEAD:{}", rel.to_string_lossy());
    let Ok(out) =
        std::process::Command::new("git").args(["cat-file", "blob", &spec]).current_dir(top).stdin(std::process::Stdio::null()).output()
    else {
        return false;
    };
    out.status.success() && memchr::memmem::find(&out.stdout, needle.as_bytes()).is_some()
}

//! What install recorded (`install.json`, kept ahead of every change so uninstall can undo a
//! failed install), and where things are: the work tree, the git common dir, the hooks directory,
//! and the files we manage read as if the repository were hostile.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::managers::{self, Manager};
use crate::git::run as git;
use crate::safe_fs::FileError;

/// What install recorded, so uninstall removes exactly that and puts back what it replaced.
/// Paths are relative (to the work tree, or to the git common dir for `info/attributes`): a
/// copied or moved clone must never act on the repository it was copied from.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstallState {
    /// `merge.beads.driver` before the first install (`None`: unset).
    pub previous_driver: Option<String>,
    /// `merge.beads.name` before the first install.
    pub previous_name: Option<String>,
    /// `merge.beads-append.driver` before it was first installed.
    #[serde(default)]
    pub previous_append_driver: Option<String>,
    /// `merge.beads-append.name` before it was first installed.
    #[serde(default)]
    pub previous_append_name: Option<String>,
    /// The append-only driver was installed (state files of older versions lack it).
    #[serde(default)]
    pub append_driver_installed: bool,
    /// `diff.beads.textconv` before it was first installed.
    #[serde(default)]
    pub previous_textconv: Option<String>,
    /// The diff text conversion was installed (state files of older versions lack it).
    #[serde(default)]
    pub textconv_installed: bool,
    /// The attributes file we touched: `.gitattributes` (work tree) or `info/attributes` (git dir).
    pub attributes_file: Option<String>,
    /// Lines we appended to it.
    pub attribute_lines_added: Vec<String>,
    /// We created the attributes file.
    pub attributes_created: bool,
    /// We added a newline to its last line before appending.
    pub attributes_newline_added: bool,
    /// A hook manager's config file we added our block to, relative to the work tree (UTF-8:
    /// install.json is text, and a path it could not spell exactly would send uninstall to
    /// another file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager_config: Option<camino::Utf8PathBuf>,
    /// We created that config file.
    #[serde(default)]
    pub manager_config_created: bool,
    /// The hook-type list of that config (pre-commit's `default_install_hook_types`), which install
    /// extended in place: uninstall puts the old lines back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager_list_edit: Option<managers::ListEdit>,
    /// What the hooks directory held before install first had a manager install hooks for our
    /// jobs: the files of our five hooks the manager had generated, and the `.old` / `.legacy`
    /// copies already there. Uninstall has the manager remove the other hook types (`None`: not
    /// recorded, by an older version, so none is removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager_hooks_before: Option<Vec<String>>,
    /// `bd-sync uninstall` ran and kept this record only for what it left for the team (the
    /// committed attributes or manager config): beads-git is not installed in this clone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub uninstalled: bool,
}

pub(super) fn common_dir(repo: &Path) -> Result<PathBuf> {
    Ok(PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-common-dir"])?))
}

pub(super) fn state_path(repo: &Path) -> Result<PathBuf> {
    Ok(common_dir(repo)?.join("beads").join("install.json"))
}

pub(super) fn read_state(repo: &Path) -> Result<Option<InstallState>> {
    let path = state_path(repo)?;
    match read_optional(&path)? {
        Some(bytes) => Ok(Some(serde_json::from_slice(&bytes).with_context(|| format!("reading {}", path.display()))?)),
        None => Ok(None),
    }
}

pub(super) fn write_state(repo: &Path, state: &InstallState) -> Result<()> {
    let path = state_path(repo)?;
    let dir = path.parent().context("install.json has a directory")?;
    crate::safe_fs::refuse_symlink(dir)?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::safe_fs::refuse_non_regular(&path)?;
    let json = serde_json::to_vec_pretty(state).context("serialising the install record")?;
    crate::safe_fs::write_atomic(&path, &json)
}

/// Keeps `install.json` ahead of every change: what install is about to replace is recorded
/// before it is replaced, so a failure part way leaves a record `bd-sync uninstall` can undo.
pub(super) struct Recorder<'a> {
    pub(super) repo: &'a Path,
    pub(super) dry_run: bool,
    /// The record as last written (or read), `None` before the first write.
    pub(super) saved: Option<InstallState>,
}

impl Recorder<'_> {
    pub(super) fn save(&mut self, state: &InstallState) -> Result<()> {
        if !self.dry_run && self.saved.as_ref() != Some(state) {
            write_state(self.repo, state)?;
            self.saved = Some(state.clone());
        }
        Ok(())
    }
}

pub(super) fn config_get(repo: &Path, key: &str) -> Option<String> {
    git(repo, &["config", "--local", "--get", key]).ok()
}

pub(super) fn toplevel(repo: &Path) -> Result<PathBuf> {
    Ok(PathBuf::from(git(repo, &["rev-parse", "--show-toplevel"])?))
}

/// The directory git runs hooks from (`core.hooksPath`, a worktree's common dir, a submodule's
/// own git dir).
pub fn hooks_dir(repo: &Path) -> Result<PathBuf> {
    Ok(PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-path", "hooks"])?))
}

pub(super) fn inside(path: &Path, dir: &Path) -> bool {
    let canon = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(path).starts_with(canon(dir))
}

/// True when `dir` is neither in the work tree nor in the repository's git dir.
pub(super) fn outside_repository(repo: &Path, dir: &Path) -> Result<bool> {
    Ok(!inside(dir, &toplevel(repo)?)
        && !inside(dir, &common_dir(repo)?)
        && !inside(dir, &PathBuf::from(git(repo, &["rev-parse", "--absolute-git-dir"])?)))
}

/// A file we manage, read as the repository may be hostile: never through a symlink, never a
/// FIFO or device, never more than [`crate::safe_fs::SMALL_FILE_LIMIT`].
pub(super) fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, FileError> {
    crate::safe_fs::read_regular(path, crate::safe_fs::SMALL_FILE_LIMIT)
}

/// Whether a failed read is a file we must not touch (a symlink, not a regular file, too large)
/// rather than an I/O failure.
pub(super) fn is_refusal(e: &FileError) -> bool {
    !matches!(e, FileError::Io { .. })
}

/// Who runs this repository's hooks.
pub fn manager(repo: &Path) -> Result<Manager> {
    Ok(managers::detect(&toplevel(repo)?, &hooks_dir(repo)?))
}

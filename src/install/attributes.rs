//! The attribute lines that route the issues files to the driver: added by install (to
//! `.gitattributes`, or `info/attributes` for this clone only), checked against the attributes
//! that outrank them, and taken out by uninstall.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::attr_source;
use super::block;
use super::state::{common_dir, is_refusal, read_optional, toplevel, InstallState, Recorder};
use super::types::{refused, Action, Change, InstallOptions};
use super::warning::Warning;
use crate::check::{Finding, FindingKind};
use crate::fix::Fix;
use crate::git::run as git;

/// The attribute lines `bd-sync install` adds: the issues files go to the field-level driver,
/// bd's append-only logs to the same binary in `--append` mode.
pub const ATTRIBUTE_LINES: &[&str] = &[
    ".beads/issues.jsonl merge=beads",
    ".beads/beads.jsonl merge=beads",
    ".beads/interactions.jsonl merge=beads-append",
    ".beads/deletions.jsonl merge=beads-append",
    ".beads/issues.jsonl diff=beads",
    ".beads/beads.jsonl diff=beads",
];

/// Where the attribute lines live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AttributesFile {
    WorkTree,
    GitDir,
}

impl AttributesFile {
    const WORK_TREE: &'static str = ".gitattributes";
    const GIT_DIR: &'static str = "info/attributes";

    fn key(self) -> &'static str {
        match self {
            AttributesFile::WorkTree => Self::WORK_TREE,
            AttributesFile::GitDir => Self::GIT_DIR,
        }
    }

    /// Reads a recorded location; older versions recorded absolute paths, which are taken for
    /// what they name in *this* repository.
    pub(super) fn parse(recorded: &str) -> Option<AttributesFile> {
        if recorded.ends_with(Self::GIT_DIR) {
            Some(AttributesFile::GitDir)
        } else if recorded.ends_with(Self::WORK_TREE) {
            Some(AttributesFile::WorkTree)
        } else {
            None
        }
    }

    pub(super) fn path(self, repo: &Path) -> Result<PathBuf> {
        match self {
            AttributesFile::WorkTree => Ok(toplevel(repo)?.join(Self::WORK_TREE)),
            AttributesFile::GitDir => Ok(common_dir(repo)?.join(Self::GIT_DIR)),
        }
    }
}

pub(super) fn install_attributes(
    options: &InstallOptions,
    state: &mut InstallState,
    recorder: &mut Recorder<'_>,
    actions: &mut Vec<Action>,
) -> Result<()> {
    let location = if options.local { AttributesFile::GitDir } else { AttributesFile::WorkTree };
    let attr_path = location.path(&options.repo)?;
    let existing = match read_optional(&attr_path) {
        Ok(e) => e,
        Err(e) if is_refusal(&e) => {
            actions.push(refused("attributes", &attr_path, Warning::Text(format!("{e:#}; the attribute lines were not added"))));
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let content = existing.clone().unwrap_or_default();
    let text = String::from_utf8_lossy(&content);
    let missing: Vec<&str> = ATTRIBUTE_LINES.iter().copied().filter(|l| !text.lines().any(|x| x.trim() == *l)).collect();
    let change = if missing.is_empty() {
        Change::Unchanged
    } else {
        let mut new = content.clone();
        let newline_added = !new.is_empty() && !new.ends_with(b"\n");
        if newline_added {
            new.push(b'\n');
        }
        for l in &missing {
            new.extend_from_slice(l.as_bytes());
            new.push(b'\n');
        }
        state.attributes_file = Some(location.key().to_owned());
        state.attribute_lines_added.extend(missing.iter().map(std::string::ToString::to_string));
        state.attributes_created |= existing.is_none();
        state.attributes_newline_added |= newline_added;
        recorder.save(state)?;
        if !options.dry_run {
            if let Some(dir) = attr_path.parent() {
                fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            crate::safe_fs::write_atomic(&attr_path, &new)?;
        }
        if existing.is_none() {
            Change::Created
        } else {
            Change::Added
        }
    };
    let mut action = Action::new("attributes", &attr_path, change);
    if location == AttributesFile::WorkTree && action.change != Change::Unchanged {
        action.warning = Some(Warning::CommitAttributes { path: attr_path.clone() });
    }
    actions.push(action);
    if !options.dry_run {
        actions.extend(overridden_attributes(&options.repo, &attr_path)?);
    }
    Ok(())
}

/// A refusal for each issues file whose `merge` attribute is still not ours after install wrote
/// its lines, naming the file and line that outranks them (install does not edit another
/// attributes file: the line may be there on purpose).
pub(super) fn overridden_attributes(repo: &Path, ours: &Path) -> Result<Vec<Action>> {
    let top = toplevel(repo)?;
    let git_dir = common_dir(repo)?;
    let mut out = Vec::new();
    for rel in crate::jsonl::ISSUES_PATHS {
        if git(&top, &["check-attr", "merge", "--", rel])?.ends_with(": beads") {
            continue;
        }
        let why = match attr_source::merge_source(&top, &git_dir, rel) {
            Some(source) => Warning::AttributeOutranked { source, rel: rel.to_owned(), ours: ours.to_path_buf() },
            None => Warning::AttributeNotRouted { rel: rel.to_owned(), ours: ours.to_path_buf() },
        };
        out.push(refused("attributes", ours, why));
    }
    Ok(out)
}

/// The finding about an issues file that is not routed to the driver: the line that decides
/// otherwise, when there is one, and what fixes it.
pub(crate) fn attribute_missing(top: &Path, rel: &str) -> Finding {
    let source = common_dir(top).ok().and_then(|git_dir| attr_source::merge_source(top, &git_dir, rel));
    let (message, fix) = match source {
        Some(src) if src.setting != "merge=beads" => (
            format!(
                "{rel} is not merged with merge=beads: {}:{} sets {} for it (it outranks the lines install writes)",
                src.file.display(),
                src.line,
                src.setting
            ),
            Fix::RemoveAttributeLine,
        ),
        _ => (format!("{rel} is not merged with merge=beads"), Fix::Install),
    };
    Finding::new(FindingKind::AttributeMissing, None, Vec::new(), message).with_fix(fix)
}

/// Takes the attribute lines install appended out of their file (deleting a file install
/// created that holds nothing else), warning when the file is committed.
pub(super) fn uninstall_attributes(
    repo: &Path,
    top: &Path,
    location: AttributesFile,
    state: &InstallState,
    dry_run: bool,
) -> Result<Option<Action>> {
    let path = location.path(repo)?;
    if let Some(content) = read_optional(&path)? {
        let mut out: Vec<u8> = Vec::with_capacity(content.len());
        let mut to_remove: Vec<&str> = state.attribute_lines_added.iter().map(String::as_str).collect();
        let recorded = to_remove.len();
        for line in content.split_inclusive(|&b| b == b'\n') {
            let t = String::from_utf8_lossy(block::trim_eol(line)).into_owned();
            if let Some(i) = to_remove.iter().position(|l| *l == t) {
                to_remove.remove(i);
                continue;
            }
            out.extend_from_slice(line);
        }
        // The newline install added goes with the lines it added (an install that failed
        // before writing them added neither).
        if state.attributes_newline_added && to_remove.len() < recorded && out.ends_with(b"\n") {
            out.pop();
        }
        let change = if state.attributes_created && out.is_empty() { Change::Deleted } else { Change::Removed };
        if !dry_run {
            if change == Change::Deleted {
                fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
            } else {
                crate::safe_fs::write_atomic(&path, &out)?;
            }
        }
        let mut action = Action::new("attributes", &path, change);
        if location == AttributesFile::WorkTree && tracked(top, &path) {
            let rel = path.strip_prefix(top).unwrap_or(&path).display().to_string();
            action.warning = Some(Warning::CommitRemoval { rel, deleted: action.change == Change::Deleted, dry_run });
        }
        return Ok(Some(action));
    }
    Ok(None)
}

/// Whether git tracks `path` (committed or staged) in the repository at `top`.
pub(super) fn tracked(top: &Path, path: &Path) -> bool {
    git(top, &[std::ffi::OsStr::new("ls-files"), "--error-unmatch".as_ref(), "--".as_ref(), path.as_os_str()]).is_ok()
}

//! Our temporary files: `.beads-git-tmp.<pid>.<random>.tmp`, next to the file they will replace.
//!
//! A process killed between creating one and renaming it (kill -9, a power cut) leaves it behind.
//! The name says whose it is, the next write by any of our tools in that directory removes those
//! whose process is gone, and `info/exclude` keeps git from ever showing or committing them (the
//! user's `.gitignore` is never touched).

use std::path::{Path, PathBuf};

const PREFIX: &str = ".beads-git-tmp.";
/// The pattern added to the repository's `info/exclude`.
pub const EXCLUDE_PATTERN: &str = ".beads-git-tmp.*";

/// The prefix of this process's temporary files.
pub fn prefix() -> String {
    format!("{PREFIX}{}.", std::process::id())
}

/// Whether the process that named a temporary file still runs; `None` where that cannot be asked
/// (elsewhere than unix): its files are then swept by age, like the unnamed ones.
fn alive(pid: u32) -> Option<bool> {
    #[cfg(unix)]
    if crate::platform::unix_calls() {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return Some(false) };
        // SAFETY: signal 0 only checks whether the process exists.
        let r = unsafe { libc::kill(pid, 0) };
        return Some(r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM));
    }
    let _ = pid;
    None
}

/// Removes temporary files in `dir` left by processes that no longer run (and unnamed ones
/// from older versions, `.beads-git-XXXXXX.tmp`, once they are an hour old).
pub fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let old =
            || entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age.as_secs() > 3600);
        let stale = if let Some(rest) = name.strip_prefix(PREFIX) {
            rest.split('.')
                .next()
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| pid != std::process::id() && alive(pid).map_or_else(old, |alive| !alive))
        } else if name.starts_with(".beads-git-") && name.ends_with(".tmp") {
            old()
        } else {
            false
        };
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The `info/exclude` of the repository holding `dir` (the common git dir for linked
/// worktrees and submodules), as git finds the repository: a plain `.git` directory above
/// `dir` is taken as it is (no process); a `.git` file or link is left to `git rev-parse`,
/// so one git does not take for a repository is never followed. `None` outside one. Asked
/// once per directory in a process.
fn exclude_file(dir: &Path) -> Option<PathBuf> {
    static LAST: std::sync::Mutex<Option<(PathBuf, Option<PathBuf>)>> = std::sync::Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, found)) = last.as_ref().filter(|(asked, _)| asked == dir) {
        return found.clone();
    }
    let found = common_git_dir(dir).map(|common| common.join("info").join("exclude"));
    *last = Some((dir.to_path_buf(), found.clone()));
    found
}

fn common_git_dir(dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    for d in dir.ancestors() {
        let dot_git = d.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else { continue };
        if meta.is_dir() && dot_git.join("HEAD").is_file() && std::env::var_os("GIT_DIR").is_none() {
            return Some(dot_git);
        }
        break;
    }
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .current_dir(&dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let path = PathBuf::from(text.trim());
    (out.status.success() && path.is_absolute()).then_some(path)
}

/// The comment line above the pattern in `info/exclude`.
const COMMENT: &str = "# beads-git: temporary files of interrupted writes";

/// Whether `exclude` or its directory is a symbolic link: never written through (`info` or
/// `exclude` pointing elsewhere is left alone).
fn through_link(exclude: &Path) -> bool {
    let linked = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    exclude.parent().is_some_and(linked) || linked(exclude)
}

/// The content of the repository's `exclude` file without the lines [`ignore_in_git`] adds (for
/// `bd-sync uninstall`), every other byte kept, with the identity of the file read; `None` when
/// it holds none of them, cannot be read, is not a regular file of at most 16 MiB, or is reached
/// through a link.
pub fn without_our_lines(exclude: &Path) -> Option<(String, super::Identity)> {
    if through_link(exclude) {
        return None;
    }
    let file = super::bounded::open_regular(exclude).ok()?;
    let read = super::Identity::of(&file.metadata().ok()?);
    let current = String::from_utf8(super::bounded::read_bounded(file, 16 << 20, 0).ok()?).ok()?;
    let ours = |l: &str| [EXCLUDE_PATTERN, COMMENT].contains(&l.trim_end_matches(['\n', '\r']));
    let kept: String = current.split_inclusive('\n').filter(|l| !ours(l)).collect();
    (kept.len() != current.len()).then_some((kept, read))
}

/// Makes sure git ignores our temporary files in the repository holding `dir`.
pub fn ignore_in_git(dir: &Path) {
    let Some(exclude) = exclude_file(dir) else { return };
    if through_link(&exclude) {
        return;
    }
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    if current.lines().any(|l| l.trim() == EXCLUDE_PATTERN) {
        return;
    }
    let sep = if current.is_empty() || current.ends_with('\n') { "" } else { "\n" };
    let addition = format!("{sep}{COMMENT}\n{EXCLUDE_PATTERN}\n");
    if let Some(parent) = exclude.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&exclude) {
        let _ = std::io::Write::write_all(&mut f, addition.as_bytes());
    }
}

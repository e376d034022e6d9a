//! Installing our git hook blocks without disturbing anything else in a hook file.
//!
//! We own only a marked block (`# >>> beads-git >>>` ... `# <<< beads-git <<<`) inside each hook
//! file. An existing hook keeps every byte and keeps running: the block goes above the last
//! top-level `exec` or `exit` (which would otherwise skip it), else at the end. Re-installing gives
//! the same bytes; uninstalling restores the file byte for byte and removes a file we created.
//! Hooks live where git will run them: `git rev-parse --git-path hooks` (so `core.hooksPath`,
//! linked worktrees and submodules are right), and for husky v9 the user's `.husky/<hook>`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// First line of our block.
pub const BEGIN: &str = "# >>> beads-git >>>";
/// Last line of our block.
pub const END: &str = "# <<< beads-git <<<";
const SHEBANG: &[u8] = b"#!/bin/sh\n";

/// The hooks we install, with their templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Notify the ids changed by the commit just made.
    PostCommit,
}

impl Hook {
    /// Git's name for the hook file.
    pub fn file_name(self) -> &'static str {
        match self {
            Hook::PostCommit => "post-commit",
        }
    }

    fn template(self) -> &'static str {
        match self {
            Hook::PostCommit => include_str!("../hooks/post-commit.sh"),
        }
    }

    /// The block for this hook, calling our binaries in `bin_dir` (or from `PATH`).
    pub fn block(self, bin_dir: &Path) -> String {
        self.template().replace("@BIN_DIR@", &shell_quote(&bin_dir.display().to_string()))
    }
}

/// The directory holding the running executable (where its sibling binaries are installed).
pub fn own_bin_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the running executable")?;
    let exe = fs::canonicalize(&exe).unwrap_or(exe);
    Ok(exe.parent().context("the executable has a directory")?.to_path_buf())
}

fn shell_quote(s: &str) -> String {
    if s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Runs git in `repo` and returns trimmed stdout.
fn git(repo: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git").args(args).current_dir(repo).stdin(Stdio::null()).output().with_context(|| format!("running git {}", args.join(" ")))?;
    if !out.status.success() {
        bail!("git {} failed in {}: {}", args.join(" "), repo.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The file git runs for `hook` in `repo`. Husky v9 points `core.hooksPath` at generated shims
/// in `.husky/_`; there the user's `.husky/<hook>` (run by husky's dispatcher) is the place.
pub fn hook_path(repo: &Path, hook: Hook) -> Result<PathBuf> {
    let dir = PathBuf::from(git(repo, &["rev-parse", "--git-path", "hooks"])?);
    let dir = if dir.is_absolute() { dir } else { repo.join(dir) };
    if dir.file_name().is_some_and(|n| n == "_") && dir.parent().and_then(|p| p.file_name()).is_some_and(|n| n == ".husky") {
        return Ok(dir.parent().expect("checked above").join(hook.file_name()));
    }
    Ok(dir.join(hook.file_name()))
}

/// What an install or uninstall did to one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// A new hook file holding only our block.
    Created,
    /// Our block was added to an existing hook.
    Added,
    /// Our block was replaced by the current one.
    Updated,
    /// Already as it should be.
    Unchanged,
    /// Our block was removed.
    Removed,
    /// The file held only our block and is gone.
    Deleted,
    /// There was nothing of ours.
    Absent,
}

/// Byte range of our block (from its first line to the end of its last line), if present.
fn find_block(content: &[u8]) -> Option<(usize, usize)> {
    let mut start = None;
    let mut pos = 0;
    for line in content.split_inclusive(|&b| b == b'\n') {
        let text = trim_eol(line);
        if start.is_none() && text == BEGIN.as_bytes() {
            start = Some(pos);
        } else if start.is_some() && text == END.as_bytes() {
            return start.map(|s| (s, pos + line.len()));
        }
        pos += line.len();
    }
    None
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The content with `block` installed (replacing an existing block in place).
pub fn with_block(content: &[u8], block: &str) -> Vec<u8> {
    let block = block.as_bytes();
    if let Some((s, e)) = find_block(content) {
        let had_newline = content[..e].ends_with(b"\n");
        let mut out = content[..s].to_vec();
        out.extend_from_slice(if had_newline { block } else { block.strip_suffix(b"\n").unwrap_or(block) });
        out.extend_from_slice(&content[e..]);
        return out;
    }
    // Above the last top-level `exec` or `exit`, which would otherwise skip it.
    let mut insert_at = None;
    let mut pos = 0;
    for line in content.split_inclusive(|&b| b == b'\n') {
        let t = trim_eol(line);
        if t.starts_with(b"exec ") || t == b"exec" || t.starts_with(b"exit ") || t == b"exit" || t.starts_with(b"exit;") {
            insert_at = Some(pos);
        }
        pos += line.len();
    }
    let mut out = Vec::with_capacity(content.len() + block.len() + 1);
    match insert_at {
        Some(at) => {
            out.extend_from_slice(&content[..at]);
            out.extend_from_slice(block);
            out.extend_from_slice(&content[at..]);
        }
        None if content.is_empty() || content.ends_with(b"\n") => {
            out.extend_from_slice(content);
            out.extend_from_slice(block);
        }
        None => {
            // No final newline: ours goes after one, and the file keeps ending without one.
            out.extend_from_slice(content);
            out.push(b'\n');
            out.extend_from_slice(block.strip_suffix(b"\n").unwrap_or(block));
        }
    }
    out
}

/// The content with our block removed, exactly undoing [`with_block`]; `None` if absent.
pub fn without_block(content: &[u8]) -> Option<Vec<u8>> {
    let (s, e) = find_block(content)?;
    let mut out = content[..s].to_vec();
    if e == content.len() && !content.ends_with(b"\n") && out.ends_with(b"\n") {
        out.pop(); // the newline we added before a block at the end of a file without one
    }
    out.extend_from_slice(&content[e..]);
    Some(out)
}

/// Installs `block` into the hook file at `path`.
pub fn install_block(path: &Path, block: &str, dry_run: bool) -> Result<Change> {
    let existing = match fs::read(path) {
        Ok(c) => Some(c),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let (new, change) = match &existing {
        None => {
            let mut c = SHEBANG.to_vec();
            c.extend_from_slice(block.as_bytes());
            (c, Change::Created)
        }
        Some(c) => {
            let new = with_block(c, block);
            let change = if new == *c {
                Change::Unchanged
            } else if find_block(c).is_some() {
                Change::Updated
            } else {
                Change::Added
            };
            (new, change)
        }
    };
    if dry_run || change == Change::Unchanged {
        return Ok(change);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("creating the hooks directory {}", dir.display()))?;
    }
    crate::jsonl::write_atomic(path, &new).with_context(|| format!("cannot write the hook {}", path.display()))?;
    if existing.is_none() {
        set_executable(path)?;
    }
    Ok(change)
}

/// Removes our block from the hook file at `path` (deleting a file that held only our block).
pub fn uninstall_block(path: &Path, dry_run: bool) -> Result<Change> {
    let content = match fs::read(path) {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Change::Absent),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let Some(rest) = without_block(&content) else { return Ok(Change::Absent) };
    if rest == SHEBANG {
        if !dry_run {
            fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        }
        return Ok(Change::Deleted);
    }
    if !dry_run {
        crate::jsonl::write_atomic(path, &rest).with_context(|| format!("cannot write the hook {}", path.display()))?;
    }
    Ok(Change::Removed)
}

#[cfg(unix)]
fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).with_context(|| format!("making {} executable", path.display()))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str = "# >>> beads-git >>>\necho ours\n# <<< beads-git <<<\n";

    fn round_trip(original: &[u8]) -> Vec<u8> {
        let installed = with_block(original, BLOCK);
        assert_eq!(with_block(&installed, BLOCK), installed, "re-install is byte-identical");
        assert_eq!(without_block(&installed).unwrap(), original, "uninstall restores");
        installed
    }

    #[test]
    fn block_goes_above_the_last_exec_or_exit_and_comes_out_cleanly() {
        let out = round_trip(b"#!/bin/sh\necho user\nexec other-tool \"$@\"\n");
        assert_eq!(out, b"#!/bin/sh\necho user\n# >>> beads-git >>>\necho ours\n# <<< beads-git <<<\nexec other-tool \"$@\"\n");
        round_trip(b"#!/bin/sh\r\necho crlf\r\n");
        round_trip(b"#!/bin/sh\necho no final newline");
        round_trip(b"#!/bin/sh\nif x; then\n  exit 1\nfi\nexit 0\n");
        round_trip(b"");
    }
}

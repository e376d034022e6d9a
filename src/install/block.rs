//! Our marked block inside a hook file: where it goes, and taking it out again byte for byte.
//!
//! A hook file belongs to its user; we own only the lines from `# >>> beads-git >>>` to
//! `# <<< beads-git <<<`. The block goes directly below the `#!` line (at the very top of a file
//! without one). That is the one place where it always runs and never decides the hook's outcome:
//! user code below it may end in `exit 1`, `exec`, or a compound command that always exits, and
//! the hook's status is still whatever that code gives, with or without `set -e` (our block never
//! fails and never reads stdin). A block an older version placed lower is moved up on re-install.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::Change;

/// First line of our block.
pub const BEGIN: &str = "# >>> beads-git >>>";
/// Last line of our block.
pub const END: &str = "# <<< beads-git <<<";
/// The first line of a hook file we create.
pub(crate) const SHEBANG: &[u8] = b"#!/bin/sh\n";

/// Byte range of our block (from its first line to the end of its last line), if present.
pub fn find_block(content: &[u8]) -> Option<(usize, usize)> {
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

/// True when the file holds our block right below its `#!` line (or first, without one).
pub fn block_is_first(content: &[u8]) -> bool {
    find_block(content).is_some_and(|(start, _)| start == top_offset(content))
}

pub(crate) fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Where the block goes: after the `#!` line and its line ending.
fn top_offset(content: &[u8]) -> usize {
    if content.starts_with(b"#!") {
        memchr::memchr(b'\n', content).map_or(content.len(), |i| i + 1)
    } else {
        0
    }
}

/// The content with `block` installed right below the `#!` line (an existing block, wherever it
/// is, is taken out first, so re-installing gives the same bytes).
pub fn with_block(content: &[u8], block: &str) -> Vec<u8> {
    let base = without_block(content).unwrap_or_else(|| content.to_vec());
    let at = top_offset(&base);
    let mut out = Vec::with_capacity(base.len() + block.len() + 1);
    out.extend_from_slice(&base[..at]);
    if at > 0 && !base[..at].ends_with(b"\n") {
        // A file that is only a `#!` line without a newline: the block needs a line of its own.
        out.push(b'\n');
    }
    out.extend_from_slice(block.as_bytes());
    out.extend_from_slice(&base[at..]);
    out
}

/// The content with our block removed, exactly undoing [`with_block`] (and the end-of-file
/// placement of older versions); `None` if absent.
pub fn without_block(content: &[u8]) -> Option<Vec<u8>> {
    let (s, e) = find_block(content)?;
    let mut out = content[..s].to_vec();
    if e == content.len() && !content.ends_with(b"\n") && out.ends_with(b"\n") {
        out.pop(); // the newline an older version added before a block at the end of a file without one
    }
    out.extend_from_slice(&content[e..]);
    Some(out)
}

/// How to treat the file's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModePolicy {
    /// git executes the file: a file we create is 0755, and an existing file keeps its mode.
    Executable,
    /// A file a manager runs with `sh` (husky): its mode is not ours to change or report.
    Any,
}

/// The POSIX shells our block is written for (and shells that run POSIX sh unchanged).
const POSIX_SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "posh"];

/// The interpreter a hook's `#!` line names (`/usr/bin/env python3` -> `python3`); `None` without
/// a `#!` line (git then runs it with `sh`).
pub fn interpreter(content: &[u8]) -> Option<String> {
    let rest = content.strip_prefix(b"#!")?;
    let line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let name = |w: &str| w.rsplit('/').next().unwrap_or(w).to_owned();
    match name(first).as_str() {
        // `env [-S] [VAR=value ...] program`, `busybox sh`
        "env" => words.find(|w| !w.starts_with('-') && !w.contains('=')).map(name),
        "busybox" => words.next().map(name),
        other => Some(other.to_owned()),
    }
}

/// Whether our POSIX sh block can go into this hook: no `#!` line, or one naming a POSIX shell.
pub fn runs_posix_shell(content: &[u8]) -> bool {
    !content.starts_with(b"#!") || interpreter(content).is_some_and(|i| POSIX_SHELLS.contains(&i.as_str()))
}

/// Whether a hook in another language already hands over to our entry point
/// (`bd-sync hook <name>`), as the snippet install prints tells its owner to.
pub fn calls_our_entry_point(content: &[u8], hook: &str) -> bool {
    let text = String::from_utf8_lossy(content);
    text.contains("bd-sync") && text.contains(hook) && text.contains("hook")
}

/// Installs `block` into the hook file at `path`.
pub fn install_block(path: &Path, block: &str, mode: ModePolicy, dry_run: bool) -> Result<Change> {
    let existing = crate::safe_fs::read_regular(path, crate::safe_fs::SMALL_FILE_LIMIT)?;
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
    if change == Change::Unchanged || dry_run {
        return Ok(change);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("creating the hooks directory {}", dir.display()))?;
    }
    crate::safe_fs::write_atomic(path, &new).with_context(|| format!("cannot write the hook {}", path.display()))?;
    if existing.is_none() && mode == ModePolicy::Executable {
        set_mode(path, 0o755)?;
    }
    Ok(change)
}

/// Removes our block from the hook file at `path` (deleting a file that held only our block).
pub fn uninstall_block(path: &Path, dry_run: bool) -> Result<Change> {
    let Some(content) = crate::safe_fs::read_regular(path, crate::safe_fs::SMALL_FILE_LIMIT)? else {
        return Ok(Change::Absent);
    };
    let Some(rest) = without_block(&content) else {
        return Ok(Change::Absent);
    };
    if rest == SHEBANG || rest.is_empty() {
        if !dry_run {
            fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        }
        return Ok(Change::Deleted);
    }
    if !dry_run {
        crate::safe_fs::write_atomic(path, &rest).with_context(|| format!("cannot write the hook {}", path.display()))?;
    }
    Ok(Change::Removed)
}

/// Makes a hook file executable. Not under the portable switch (git on Linux runs only executable
/// hooks); elsewhere than unix there is no mode to set, and git runs the file as it is.
#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).with_context(|| format!("making {} executable", path.display()))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> Result<()> {
    Ok(())
}

/// Whether git can execute the file. Elsewhere than unix a file has no execute bit and git runs
/// any hook file there is. Not under the portable switch: on Linux git needs the bit.
pub fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    path.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str = "# >>> beads-git >>>\necho ours\n# <<< beads-git <<<\n";

    #[test]
    fn the_block_goes_below_the_shebang_and_comes_out_byte_for_byte() {
        for original in
            [&b"#!/bin/sh\nexit 1\n"[..], b"#!/bin/sh\r\nif true; then exec lint; else exit 1; fi", b"npm test\n", b"", b"#!/bin/sh"]
        {
            let installed = with_block(original, BLOCK);
            assert!(block_is_first(&installed), "{:?}", String::from_utf8_lossy(&installed));
            assert_eq!(with_block(&installed, BLOCK), installed, "re-install is a byte no-op");
            if original != b"#!/bin/sh" {
                assert_eq!(without_block(&installed).expect("block present"), original);
            }
        }
    }

    #[test]
    fn only_posix_shell_hooks_take_our_block() {
        for sh in
            [&b"#!/bin/sh\n"[..], b"#!/usr/bin/env bash\n", b"#!/bin/zsh -e\n", b"echo no shebang\n", b"", b"#!/usr/bin/env -S bash -e\n"]
        {
            assert!(runs_posix_shell(sh), "{:?}", String::from_utf8_lossy(sh));
        }
        for other in [&b"#!/usr/bin/env python3\n"[..], b"#!/usr/bin/node\n", b"#!/usr/bin/env -S deno run\n", b"#!/usr/bin/perl -w\n"] {
            assert!(!runs_posix_shell(other), "{:?}", String::from_utf8_lossy(other));
        }
        assert_eq!(interpreter(b"#!/usr/bin/env python3\nimport sys\n").as_deref(), Some("python3"));
    }

    #[test]
    fn a_block_an_older_version_appended_moves_to_the_top() {
        let old = format!("#!/bin/sh\nlint\n{BLOCK}");
        let moved = with_block(old.as_bytes(), BLOCK);
        assert_eq!(moved, format!("#!/bin/sh\n{BLOCK}lint\n").into_bytes());
    }
}

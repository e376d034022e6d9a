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

use anyhow::{Context, Result};

use crate::git::run as git;

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
    /// Import after a merge (pull), then notify.
    PostMerge,
    /// Import after a rebase or amend, then notify.
    PostRewrite,
    /// Import after a branch switch, then notify.
    PostCheckout,
    /// Export cache edits and stage the issues file if that changed it.
    PreCommit,
}

impl Hook {
    /// Every hook `bd-sync install` sets up.
    pub const ALL: [Hook; 5] = [Hook::PreCommit, Hook::PostCommit, Hook::PostMerge, Hook::PostRewrite, Hook::PostCheckout];

    /// Git's name for the hook file.
    pub fn file_name(self) -> &'static str {
        match self {
            Hook::PostCommit => "post-commit",
            Hook::PostMerge => "post-merge",
            Hook::PostRewrite => "post-rewrite",
            Hook::PostCheckout => "post-checkout",
            Hook::PreCommit => "pre-commit",
        }
    }

    fn template(self) -> &'static str {
        match self {
            Hook::PostCommit => include_str!("../hooks/post-commit.sh"),
            Hook::PostMerge | Hook::PostRewrite => include_str!("../hooks/import-and-notify.sh"),
            Hook::PostCheckout => include_str!("../hooks/post-checkout.sh"),
            Hook::PreCommit => include_str!("../hooks/pre-commit.sh"),
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

/// The file git runs for `hook` in `repo`. Husky v9 points `core.hooksPath` at generated shims
/// in `.husky/_`; there the user's `.husky/<hook>` (run by husky's dispatcher) is the place.
pub fn hook_path(repo: &Path, hook: Hook) -> Result<PathBuf> {
    let dir = PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-path", "hooks"])?);
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
    if change == Change::Unchanged {
        // A hook git cannot execute is not installed: restore the bit.
        if !is_executable(path) {
            if !dry_run {
                set_executable(path)?;
            }
            return Ok(Change::Updated);
        }
        return Ok(change);
    }
    if dry_run {
        return Ok(change);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("creating the hooks directory {}", dir.display()))?;
    }
    crate::jsonl::write_atomic(path, &new).with_context(|| format!("cannot write the hook {}", path.display()))?;
    if existing.is_none() {
        set_mode(path, 0o755)?;
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
    let Some(rest) = without_block(&content) else {
        return Ok(Change::Absent);
    };
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

/// Adds the execute bits to an existing file's mode.
#[cfg(unix)]
fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(path).with_context(|| format!("reading {}", path.display()))?.permissions().mode();
    set_mode(path, mode | 0o111)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).with_context(|| format!("making {} executable", path.display()))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<()> {
    Ok(())
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> Result<()> {
    Ok(())
}

/// The attribute lines `bd-sync install` adds.
pub const ATTRIBUTE_LINES: &[&str] = &[".beads/issues.jsonl merge=beads", ".beads/beads.jsonl merge=beads"];

/// The merge driver command for git config.
pub fn driver_command(bin_dir: &Path) -> String {
    format!("{} %O %A %B -l %L -p %P -s %S -x %X -y %Y", shell_quote(&bin_dir.join("bd-merge").display().to_string()))
}

/// What install recorded, so uninstall removes exactly that and puts back what it replaced.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstallState {
    /// `merge.beads.driver` before the first install (`None`: unset).
    pub previous_driver: Option<String>,
    /// `merge.beads.name` before the first install.
    pub previous_name: Option<String>,
    /// The attributes file we touched.
    pub attributes_file: Option<String>,
    /// Lines we appended to it.
    pub attribute_lines_added: Vec<String>,
    /// We created the attributes file.
    pub attributes_created: bool,
    /// We added a newline to its last line before appending.
    pub attributes_newline_added: bool,
}

/// Install settings.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// The repository (any directory inside its worktree).
    pub repo: PathBuf,
    /// Put the attribute lines in `.git/info/attributes` (this clone only), not `.gitattributes`.
    pub local: bool,
    /// Report what would change, change nothing.
    pub dry_run: bool,
    /// Where our binaries are.
    pub bin_dir: PathBuf,
}

/// One thing install or uninstall looked at.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Action {
    /// What: `merge.beads.driver`, `attributes`, or a hook name.
    pub what: String,
    /// The file or config key.
    pub path: String,
    /// What happened.
    pub change: Change,
    /// Something the user should act on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

fn state_path(repo: &Path) -> Result<PathBuf> {
    let common = PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-common-dir"])?);
    Ok(common.join("beads").join("install.json"))
}

fn read_state(repo: &Path) -> Result<Option<InstallState>> {
    let path = state_path(repo)?;
    match fs::read(&path) {
        Ok(bytes) => Ok(Some(serde_json::from_slice(&bytes).with_context(|| format!("reading {}", path.display()))?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn config_get(repo: &Path, key: &str) -> Option<String> {
    git(repo, &["config", "--local", "--get", key]).ok()
}

fn toplevel(repo: &Path) -> Result<PathBuf> {
    Ok(PathBuf::from(git(repo, &["rev-parse", "--show-toplevel"])?))
}

fn attributes_path(repo: &Path, local: bool) -> Result<PathBuf> {
    if local {
        Ok(PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-path", "info/attributes"])?))
    } else {
        Ok(toplevel(repo)?.join(".gitattributes"))
    }
}

/// Sets up the merge driver, the attribute lines and every hook block.
pub fn install(options: &InstallOptions) -> Result<Vec<Action>> {
    let repo = &options.repo;
    let prior = read_state(repo)?;
    let first_install = prior.is_none();
    let mut state = prior.clone().unwrap_or_default();
    let mut actions = Vec::new();

    // Merge driver.
    let want_driver = driver_command(&options.bin_dir);
    for (key, want, previous) in [
        ("merge.beads.driver", want_driver.as_str(), &mut state.previous_driver),
        ("merge.beads.name", "beads JSONL merge (bd-merge)", &mut state.previous_name),
    ] {
        let current = config_get(repo, key);
        if first_install {
            *previous = current.clone();
        }
        let change = if current.as_deref() == Some(want) {
            Change::Unchanged
        } else {
            if !options.dry_run {
                git(repo, &["config", "--local", key, want])?;
            }
            if current.is_some() {
                Change::Updated
            } else {
                Change::Added
            }
        };
        actions.push(Action { what: key.into(), path: key.into(), change, warning: None });
    }

    // Attribute lines.
    let attr_path = attributes_path(repo, options.local)?;
    let existing = match fs::read(&attr_path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", attr_path.display())),
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
        if !options.dry_run {
            if let Some(dir) = attr_path.parent() {
                fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            crate::jsonl::write_atomic(&attr_path, &new)?;
        }
        state.attributes_file = Some(attr_path.display().to_string());
        state.attribute_lines_added.extend(missing.iter().map(|l| l.to_string()));
        state.attributes_created |= existing.is_none();
        state.attributes_newline_added |= newline_added;
        if existing.is_none() {
            Change::Created
        } else {
            Change::Added
        }
    };
    actions.push(Action { what: "attributes".into(), path: attr_path.display().to_string(), change, warning: None });

    // Hooks. An existing hook that is not executable is dormant; we do not wake the user's code.
    for hook in Hook::ALL {
        let path = hook_path(repo, hook)?;
        let change = install_block(&path, &hook.block(&options.bin_dir), options.dry_run)?;
        let warning = (!options.dry_run && change == Change::Added && !is_executable(&path))
            .then(|| format!("{} is not executable, so git skips it (and our block): chmod +x it to enable it", path.display()));
        actions.push(Action { what: hook.file_name().into(), path: path.display().to_string(), change, warning });
    }

    if !options.dry_run && prior.as_ref() != Some(&state) {
        let path = state_path(repo)?;
        fs::create_dir_all(path.parent().expect("state has a directory")).with_context(|| format!("creating {}", path.display()))?;
        let json = serde_json::to_vec_pretty(&state).expect("state serialises");
        crate::jsonl::write_atomic(&path, &json)?;
    }
    Ok(actions)
}

/// Removes exactly what install added and puts back what it replaced.
pub fn uninstall(repo: &Path, dry_run: bool) -> Result<Vec<Action>> {
    let state = read_state(repo)?;
    let mut actions = Vec::new();
    for hook in Hook::ALL {
        let path = hook_path(repo, hook)?;
        let change = uninstall_block(&path, dry_run)?;
        actions.push(Action { what: hook.file_name().into(), path: path.display().to_string(), change, warning: None });
    }
    let Some(state) = state else {
        return Ok(actions);
    };
    for (key, previous) in [("merge.beads.driver", &state.previous_driver), ("merge.beads.name", &state.previous_name)] {
        let change = match previous {
            Some(v) => {
                if !dry_run {
                    git(repo, &["config", "--local", key, v])?;
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
    if !dry_run
        && state.previous_driver.is_none()
        && state.previous_name.is_none()
        && git(repo, &["config", "--local", "--get-regexp", "^merge\\.beads\\."]).is_err()
    {
        let _ = git(repo, &["config", "--local", "--remove-section", "merge.beads"]);
    }
    if let Some(file) = &state.attributes_file {
        let path = PathBuf::from(file);
        if let Ok(content) = fs::read(&path) {
            let mut out: Vec<u8> = Vec::with_capacity(content.len());
            let mut to_remove: Vec<&str> = state.attribute_lines_added.iter().map(String::as_str).collect();
            for line in content.split_inclusive(|&b| b == b'\n') {
                let t = String::from_utf8_lossy(trim_eol(line)).into_owned();
                if let Some(i) = to_remove.iter().position(|l| *l == t) {
                    to_remove.remove(i);
                    continue;
                }
                out.extend_from_slice(line);
            }
            if state.attributes_newline_added && out.ends_with(b"\n") {
                out.pop();
            }
            let change = if state.attributes_created && out.is_empty() { Change::Deleted } else { Change::Removed };
            if !dry_run {
                if change == Change::Deleted {
                    fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
                } else {
                    crate::jsonl::write_atomic(&path, &out)?;
                }
            }
            actions.push(Action { what: "attributes".into(), path: file.clone(), change, warning: None });
        }
    }
    if !dry_run {
        let _ = fs::remove_file(state_path(repo)?);
    }
    Ok(actions)
}

/// Installation health findings for `bd-sync check`; empty when the repository never had us.
pub fn health(repo: &Path, bin_dir: &Path) -> Result<Vec<crate::check::Finding>> {
    use crate::check::Finding;
    let top = toplevel(repo)?;
    let repo = top.as_path();
    let mut out = Vec::new();
    let installed = read_state(repo)?.is_some();
    let driver = config_get(repo, "merge.beads.driver");
    if !installed && driver.is_none() {
        return Ok(out);
    }
    let finding = |kind: &str, message: String| Finding::new(kind, None, Vec::new(), message);
    match &driver {
        None => out.push(finding("driver-missing", "merge.beads.driver is not set: run `bd-sync install`".into())),
        Some(d) => {
            let words: Vec<&str> = d.split_whitespace().collect();
            if d.contains("%R") || (words.iter().filter(|w| **w == "%A").count() > 1) {
                out.push(finding(
                    "driver-placeholders",
                    format!("merge.beads.driver = {d:?} uses bd's old broken form (%L %R / %A twice): run `bd-sync install`"),
                ));
            } else if !["%O", "%A", "%B"].iter().all(|p| words.contains(p)) {
                out.push(finding("driver-placeholders", format!("merge.beads.driver = {d:?} lacks %O %A %B: run `bd-sync install`")));
            }
        }
    }
    for file in [".beads/issues.jsonl", ".beads/beads.jsonl"] {
        let attr = git(repo, &["check-attr", "merge", "--", file]).unwrap_or_default();
        if !attr.ends_with(": beads") {
            out.push(finding("attribute-missing", format!("{file} is not merged with merge=beads: run `bd-sync install`")));
        }
    }
    for hook in Hook::ALL {
        let path = hook_path(repo, hook)?;
        let want = hook.block(bin_dir);
        let content = fs::read(&path).unwrap_or_default();
        match find_block(&content) {
            None => out.push(finding(
                "hook-missing",
                format!("{} has no beads-git block (a hook manager may have regenerated it): run `bd-sync install`", path.display()),
            )),
            Some((s, e)) => {
                if String::from_utf8_lossy(&content[s..e]).trim_end() != want.trim_end() {
                    out.push(finding(
                        "hook-outdated",
                        format!("{} has an outdated beads-git block: run `bd-sync install`", path.display()),
                    ));
                }
                if !is_executable(&path) {
                    out.push(finding("hook-not-executable", format!("{} is not executable, so git skips it: chmod +x it", path.display())));
                }
            }
        }
    }
    // Blocks in the default hooks dir that git will not run because core.hooksPath points elsewhere.
    let default_dir = PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-common-dir"])?).join("hooks");
    let used = hook_path(repo, Hook::PostCommit)?;
    if used.parent() != Some(default_dir.as_path()) {
        for hook in Hook::ALL {
            let stray = default_dir.join(hook.file_name());
            if fs::read(&stray).ok().is_some_and(|c| find_block(&c).is_some()) {
                out.push(finding(
                    "hooks-dir-mismatch",
                    format!(
                        "{} has a beads-git block but git runs hooks from {}",
                        stray.display(),
                        used.parent().map(|p| p.display().to_string()).unwrap_or_default()
                    ),
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str = "# >>> beads-git >>>\necho ours\n# <<< beads-git <<<\n";

    fn round_trip(original: &[u8]) -> Vec<u8> {
        let installed = with_block(original, BLOCK);
        assert_eq!(with_block(&installed, BLOCK), installed, "re-install is byte-identical");
        assert_eq!(without_block(&installed).expect("test input is valid"), original, "uninstall restores");
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

//! Talking to git: config look-ups, running git, and reading the repository.
//!
//! Everything goes through git's own plumbing as subprocesses: the merge driver's line-merge
//! fallback and conflict style, and reading the issues file at a revision ([`Repo`]: `rev-parse`,
//! `ls-tree`, `cat-file`), which honours `GIT_DIR` exactly as git's hooks set it and keeps git's
//! refusals. A big file's bytes are streamed out of `git cat-file` ([`BlobStream`]) rather than
//! held whole. (A git library would save a process per call and cost half the build: a cold
//! install compiled some 150 crates for it.)

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// A relative path that starts with `-` made explicit (`./-x`), so git reads it as a path and
/// never as an option (works with every git, unlike `--end-of-options`, which needs git 2.24).
pub fn not_an_option(path: &Path) -> std::borrow::Cow<'_, Path> {
    if path.as_os_str().as_encoded_bytes().starts_with(b"-") {
        std::borrow::Cow::Owned(Path::new(".").join(path))
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

/// Runs git in `dir` and returns its trimmed stdout; a failure names the command and git's error.
pub fn run<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> Result<String> {
    let shown = || args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ");
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running git {} (is git installed?)", shown()))?;
    if !out.status.success() {
        bail!("git {} failed in {}: {}", shown(), dir.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether a git boolean is true as git reads it: a key without a value, `true`, `yes`, `on` or
/// `1` (any case); unset is false.
pub fn git_true(value: Option<&str>) -> bool {
    value.is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "" | "true" | "yes" | "on" | "1"))
}

/// Reads one git config value as git would in the current directory; `None` when unset or when
/// git is not available.
pub fn config_value(key: &str) -> Option<String> {
    run(Path::new("."), &["config", "--get", key]).ok()
}

/// Whether `merge.conflictStyle` asks for the base in conflict markers (`diff3` or `zdiff3`).
pub fn conflict_style_shows_base() -> bool {
    matches!(config_value("merge.conflictStyle").as_deref(), Some("diff3" | "zdiff3"))
}

/// The git directory of the repository containing `dir` (as `git rev-parse --git-dir`, honouring
/// `GIT_DIR`), absolute; `None` outside a repository or when git refuses it.
pub fn git_dir(dir: &Path) -> Option<std::path::PathBuf> {
    if let Some(found) = plain_git_dir(dir) {
        return Some(found);
    }
    run(dir, &["rev-parse", "--absolute-git-dir"]).ok().map(std::path::PathBuf::from)
}

/// The git directory without running git, in the one case where git's answer is certain: `dir`
/// holds a `.git` directory (not a link, not a `gitdir:` file) with a `HEAD`, nothing in the
/// environment points git elsewhere, and both belong to the user running us (so git's ownership
/// check would pass). This is every hook's case in a plain clone (git runs hooks at the top of
/// the work tree), and a process saved there is a process saved on every commit. Anything else
/// (a linked worktree, a submodule, `GIT_DIR`, another owner, a subdirectory) asks git.
fn plain_git_dir(dir: &Path) -> Option<std::path::PathBuf> {
    // (`GIT_TEST_ASSUME_DIFFERENT_OWNER` is git's own switch for testing its ownership check.)
    const ELSEWHERE: [&str; 5] =
        ["GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES", "GIT_TEST_ASSUME_DIFFERENT_OWNER"];
    if ELSEWHERE.iter().any(|v| std::env::var_os(v).is_some()) {
        return None;
    }
    let dot_git = dir.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if !meta.is_dir() || !std::fs::symlink_metadata(dot_git.join("HEAD")).is_ok_and(|m| m.is_file()) {
        return None;
    }
    if !owned_by_me(&meta) || !std::fs::symlink_metadata(dir).is_ok_and(|m| owned_by_me(&m)) {
        return None;
    }
    let top = if dir.is_absolute() { dir.to_path_buf() } else { std::env::current_dir().ok()?.join(dir) };
    // `git rev-parse --absolute-git-dir` prints the path without `.` components; a `..` would
    // need the links resolved, so git answers that one.
    let top: std::path::PathBuf = top.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect();
    if top.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return None;
    }
    Some(top.join(".git"))
}

/// Where `bd-sync install` records, in the git directory, the path of git's system-wide
/// configuration file as this git build reads it (`git var GIT_CONFIG_SYSTEM`): the one file of
/// git's configuration whose place cannot be told without running git. Read by
/// [`config_names_none_of`]; without it git is asked.
pub const SYSTEM_CONFIG_RECORD: &str = "beads/git-config-system";

/// The path of git's system-wide configuration file as git reads it when the environment names
/// none (`git var GIT_CONFIG_SYSTEM` with `GIT_CONFIG_SYSTEM` and `GIT_CONFIG_NOSYSTEM` unset);
/// `None` when git cannot say (git before 2.42).
pub fn default_system_config(dir: &Path) -> Option<String> {
    let out = Command::new("git")
        .args(["var", "GIT_CONFIG_SYSTEM"])
        .current_dir(dir)
        .env_remove("GIT_CONFIG_SYSTEM")
        .env_remove("GIT_CONFIG_NOSYSTEM")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?;
    let path = path.trim_end_matches('\n');
    (out.status.success() && !path.is_empty() && !path.contains('\n')).then(|| path.to_owned())
}

/// Whether git's configuration for the repository at `dir` certainly has no key whose name holds
/// one of `words` (lowercase, such as `notify`), told by reading its files without running git
/// ([`config_texts`]): a hook asks git only when a file could set one. Whenever in doubt: `false`.
pub fn config_names_none_of(dir: &Path, words: &[&str]) -> bool {
    config_texts(dir).is_some_and(|texts| {
        texts.iter().all(|text| {
            let text = text.to_ascii_lowercase();
            !words.iter().any(|w| memchr::memmem::find(text.as_bytes(), w.as_bytes()).is_some())
        })
    })
}

/// The values git's configuration gives `keys` (lowercase `section.name`, sections without a
/// subsection) in the repository at `dir`, as `git config -z --get-regexp` prints them
/// (`key\nvalue\0`, `key\0` for a key without a value, in git's order: the last one wins),
/// read without running git. `None` when that is not certain: where [`config_texts`] cannot say,
/// or any line is outside the plain forms [`plain_config_values`] reads.
pub fn config_values(dir: &Path, keys: &[&str]) -> Option<String> {
    let mut out = String::new();
    for text in config_texts(dir)? {
        for (key, value) in plain_config_values(&text, keys)? {
            out.push_str(&key);
            if let Some(value) = value {
                out.push('\n');
                out.push_str(&value);
            }
            out.push('\0');
        }
    }
    Some(out)
}

/// The largest configuration file read without git (a larger one is left to git).
const MAX_CONFIG_FILE: u64 = 1 << 20;

/// The text of each of git's configuration files for the repository at `dir`, in git's order
/// (an absent one is empty). `None` when they cannot all be known and read without git: where
/// [`config_files`] cannot say, a file cannot be read or is not UTF-8, or one holds an `include`
/// (its target is not read here), or is not a regular file of at most 1 MiB.
fn config_texts(dir: &Path) -> Option<Vec<String>> {
    let mut texts = Vec::new();
    for file in config_files(dir)? {
        // A FIFO, a device or a huge file is left to git: never waited on or read whole here.
        use crate::safe_fs::bounded::{read_regular, SafeReadError};
        // `/dev/null` is git's documented way to turn a scope off (`GIT_CONFIG_GLOBAL=/dev/null`).
        let text = if file == Path::new("/dev/null") {
            String::new()
        } else {
            match read_regular(&file, MAX_CONFIG_FILE) {
                Ok(bytes) => String::from_utf8(bytes).ok()?,
                Err(SafeReadError::NotFound) => String::new(),
                Err(SafeReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotADirectory => String::new(),
                Err(_) => return None,
            }
        };
        if memchr::memmem::find(text.to_ascii_lowercase().as_bytes(), b"include").is_some() {
            return None;
        }
        texts.push(text);
    }
    Some(texts)
}

/// The entries of `keys` in one configuration file's `text`, in order (a key alone on its line,
/// git's boolean `true`, has no value); `None` when a line is outside the plain forms: a section
/// header alone on its line (`[user]`, or with a quoted subsection, which holds none of `keys`),
/// `name = value` or `name`, comment and blank lines; the value of a key asked for with no quote,
/// backslash or comment character. Anything else (a continued line, such a value quoted or with an
/// inline comment, a key on its header's line, a line git would refuse) is left to git.
pub fn plain_config_values(text: &str, keys: &[&str]) -> Option<Vec<(String, Option<String>)>> {
    let mut section: Option<String> = None;
    let mut out = Vec::new();
    for line in text.strip_prefix('\u{feff}').unwrap_or(text).lines() {
        let line = line.trim_matches([' ', '\t', '\r']);
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let name = header.strip_suffix(']')?;
            section = if let Some((name, sub)) = name.split_once(' ') {
                // `[section "subsection"]`: none of the keys asked for; checked for shape only.
                let ok = !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && sub.len() >= 2
                    && sub.starts_with('"')
                    && sub.ends_with('"')
                    && !sub[1..sub.len() - 1].contains(['"', '\\']);
                if !ok {
                    return None;
                }
                Some("\0".to_owned())
            } else if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                Some(name.to_ascii_lowercase())
            } else {
                return None;
            };
            continue;
        }
        let (name, value) = match line.split_once('=') {
            Some((name, value)) => (name.trim_end_matches([' ', '\t']), Some(value.trim_start_matches([' ', '\t']))),
            None => (line, None),
        };
        let valid_name =
            name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        // A line continued on the next (a value ending in a backslash) would make that line part
        // of this value: declined, whatever the key.
        if !valid_name || line.ends_with('\\') {
            return None;
        }
        let key = format!("{}.{}", section.as_deref()?, name.to_ascii_lowercase());
        if keys.contains(&key.as_str()) {
            // Another key's value may be quoted or commented (git's driver lines are); one asked
            // for is read only in its plain form. git turns each whitespace character inside a
            // value into a space: only spaces are kept.
            if value.is_some_and(|v| v.contains(['"', '\\', '#', ';', '\t', '\r', '\x0b', '\x0c'])) {
                return None;
            }
            out.push((key, value.map(str::to_owned)));
        }
    }
    Some(out)
}

/// git's configuration files for the repository at `dir`, in the order git reads them (the last
/// value wins): the system file (unless `GIT_CONFIG_NOSYSTEM`), the global ones
/// (`GIT_CONFIG_GLOBAL`, else `$XDG_CONFIG_HOME/git/config` or `~/.config/git/config`, then
/// `~/.gitconfig`), the repository's `config` and `config.worktree`. `None` when they cannot all
/// be known without git: outside a plain clone (see [`plain_git_dir`]), with configuration added
/// by the environment (`git -c`, `GIT_CONFIG_COUNT`), or with the system file's place unknown
/// (neither `GIT_CONFIG_SYSTEM` nor the record install wrote, [`SYSTEM_CONFIG_RECORD`]).
fn config_files(dir: &Path) -> Option<Vec<std::path::PathBuf>> {
    const ADDED: [&str; 3] = ["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG"];
    if ADDED.iter().any(|v| std::env::var_os(v).is_some()) {
        return None;
    }
    let git_dir = plain_git_dir(dir)?;
    let mut files = Vec::new();
    let set = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty());
    let no_system = match std::env::var("GIT_CONFIG_NOSYSTEM") {
        Err(std::env::VarError::NotPresent) => false,
        Ok(v) if v.trim().is_empty() || git_false(&v) => false,
        Ok(v) if git_true(Some(&v)) => true,
        _ => return None,
    };
    // An empty `HOME`, `GIT_CONFIG_GLOBAL` or `GIT_CONFIG_SYSTEM` means something of its own to
    // git (a path under `/`, or a refusal): left to git.
    if ["HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"].iter().any(|v| std::env::var_os(v).is_some_and(|v| v.is_empty())) {
        return None;
    }
    if !no_system {
        match std::env::var_os("GIT_CONFIG_SYSTEM") {
            Some(path) => files.push(path.into()),
            None => {
                let path = std::fs::read_to_string(git_dir.join(SYSTEM_CONFIG_RECORD)).ok()?;
                let path = path.trim_end_matches('\n');
                if path.is_empty() {
                    return None;
                }
                files.push(path.into());
            }
        }
    }
    match std::env::var_os("GIT_CONFIG_GLOBAL") {
        Some(path) => files.push(path.into()),
        None => {
            let home = set("HOME").map(std::path::PathBuf::from);
            let xdg = set("XDG_CONFIG_HOME").map(std::path::PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".config")));
            files.extend(xdg.map(|x| x.join("git").join("config")));
            files.extend(home.map(|h| h.join(".gitconfig")));
        }
    }
    files.push(git_dir.join("config"));
    files.push(git_dir.join("config.worktree"));
    Some(files)
}

/// Whether a git boolean is false as git reads it: `false`, `no`, `off` or `0` (any case).
pub fn git_false(value: &str) -> bool {
    matches!(value.trim().to_ascii_lowercase().as_str(), "false" | "no" | "off" | "0")
}

/// The repository's common git directory (where a linked worktree's repository keeps what all
/// its worktrees share), absolute; `None` outside a repository. A plain clone's is its git
/// directory, found without running git (see [`plain_git_dir`]).
pub fn common_dir(dir: &Path) -> Option<std::path::PathBuf> {
    if let Some(found) = plain_git_dir(dir).filter(|g| std::fs::symlink_metadata(g.join("commondir")).is_err()) {
        return Some(found);
    }
    run(dir, &["rev-parse", "--path-format=absolute", "--git-common-dir"]).ok().filter(|s| !s.is_empty()).map(std::path::PathBuf::from)
}

/// Every checkout of the repository at `dir`, read from its common git directory without running
/// git beyond [`common_dir`]: the common directory itself, the main work tree (its parent, for a
/// `.git` directory), and each linked worktree `worktrees/*/gitdir` names (what `git worktree
/// list` lists). With `dir` itself first. Paths as written; the caller canonicalizes.
pub fn checkouts(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let Some(common) = common_dir(dir) else { return out };
    if common.file_name().is_some_and(|n| n == ".git") {
        if let Some(main) = common.parent() {
            out.push(main.to_path_buf());
        }
    }
    if let Ok(entries) = std::fs::read_dir(common.join("worktrees")) {
        for entry in entries.flatten().take(10_000) {
            // `gitdir` holds the path of the worktree's `.git` file: its directory is the checkout.
            let Ok(text) = std::fs::read_to_string(entry.path().join("gitdir")) else { continue };
            let dot_git = std::path::PathBuf::from(text.trim());
            if let Some(top) = dot_git.parent().filter(|_| dot_git.is_absolute()) {
                out.push(top.to_path_buf());
            }
        }
    }
    out.push(common);
    out
}

/// Whether the file belongs to the user running us (git's "dubious ownership" test). Elsewhere
/// than unix the answer is left to git (false: git is asked).
fn owned_by_me(meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    if crate::platform::unix_calls() {
        use std::os::unix::fs::MetadataExt as _;
        // SAFETY: geteuid(2) has no preconditions and cannot fail.
        return meta.uid() == unsafe { libc::geteuid() };
    }
    let _ = meta;
    false
}

/// The index a commit hook runs with, when it is not the repository's own: git names it in
/// `GIT_INDEX_FILE`, and for `git commit -- <paths>` and `git commit --only <paths>` it is a
/// temporary `next-index-*.lock` that holds HEAD plus the named paths. Whatever a hook stages
/// there goes into a commit that did not name it, while the real index keeps the old version
/// (the next plain commit then reverts the file). `None` for the real index: unset, or `index`
/// / `index.lock` in `git_dir` (a plain commit, `-a`, `--include`).
pub fn temporary_commit_index(git_dir: &Path) -> Option<std::path::PathBuf> {
    let named = std::path::PathBuf::from(std::env::var_os("GIT_INDEX_FILE")?);
    let absolute = if named.is_absolute() { named.clone() } else { std::env::current_dir().ok()?.join(&named) };
    let real_name = absolute.file_name().is_some_and(|n| n == "index" || n == "index.lock");
    let same_dir = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let in_git_dir = absolute.parent().is_some_and(|parent| same_dir(parent, git_dir));
    (!(real_name && in_git_dir)).then_some(named)
}

/// Like [`git_dir`], but git refusing a repository that is there (its "dubious ownership" check,
/// as in a container's bind mount) is an error naming the fix, not "no repository": callers must
/// not fall back to keeping files in the work tree of a repository they were refused.
/// `Ok(None)` outside a repository, or when git is not installed.
pub fn git_dir_checked(dir: &Path) -> Result<Option<std::path::PathBuf>> {
    if let Some(found) = plain_git_dir(dir) {
        return Ok(Some(found));
    }
    let Ok(out) = Command::new("git").args(["rev-parse", "--absolute-git-dir"]).current_dir(dir).stdin(Stdio::null()).output() else {
        return Ok(None);
    };
    if out.status.success() {
        return Ok(Some(std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("dubious ownership") {
        let top = stderr
            .lines()
            .find_map(|l| l.trim().strip_prefix("git config --global --add safe.directory "))
            .map(str::to_owned)
            .unwrap_or_else(|| dir.display().to_string());
        bail!(
            "git refuses the repository at {} (dubious ownership: it belongs to another user), so beads-git will not \
             use it either, nor fall back to keeping its cache in the work tree. If you trust it, run: \
             git config --global --add safe.directory {}",
            crate::record::printable(&top, 4096),
            crate::record::printable(&top, 4096)
        );
    }
    if stderr.contains("not a git repository") {
        return Ok(None);
    }
    bail!("git rev-parse failed in {}: {}", dir.display(), crate::record::printable(stderr.trim(), 4096))
}

/// Candidate paths of the issues file inside a tree, newest name first.
pub const ISSUES_PATHS: &[&str] = &crate::jsonl::ISSUES_PATHS;

/// A git object id, as git prints it (40 or 64 hex digits).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectId(String);

impl ObjectId {
    /// An id from its hex form; `None` for anything that is not 40 or 64 hex digits.
    pub fn from_hex(hex: &str) -> Option<ObjectId> {
        (matches!(hex.len(), 40 | 64) && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| ObjectId(hex.to_ascii_lowercase()))
    }

    /// The hex form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The repository containing a directory, read through git's plumbing (`rev-parse`, `ls-tree`,
/// `cat-file`): `GIT_DIR` and the rest of git's environment honoured exactly as git's hooks set
/// them, and git's own refusals (a repository another user owns) kept.
pub struct Repo {
    dir: std::path::PathBuf,
}

impl Repo {
    /// The repository containing `dir`, as git finds it.
    pub fn discover(dir: &Path) -> Result<Repo> {
        run(dir, &["rev-parse", "--git-dir"]).with_context(|| format!("opening the git repository at {}", dir.display()))?;
        Ok(Repo { dir: dir.to_path_buf() })
    }

    /// The issues file's bytes at `rev`: empty when the revision is the (missing) parent of a
    /// root commit, or when the file does not exist there. `path` picks the file; `None` tries
    /// [`ISSUES_PATHS`].
    pub fn issues_at(&self, rev: &str, path: Option<&str>) -> Result<Vec<u8>> {
        match self.issues_blob_at(rev, path)? {
            None => Ok(Vec::new()),
            Some(id) => self.blob_by_id(&id).with_context(|| format!("reading the issues file at {rev}")),
        }
    }

    /// The blob id of the issues file at `rev`, as [`Repo::issues_at`] finds it: `None` when the
    /// revision is the (missing) parent of a root commit or the file does not exist there. A
    /// symbolic link, a submodule or a directory in the file's place is an error naming it.
    pub fn issues_blob_at(&self, rev: &str, path: Option<&str>) -> Result<Option<ObjectId>> {
        let Some(commit) = self.commit(rev)? else {
            return Ok(None);
        };
        let candidates: Vec<&str> = match path {
            Some(p) => vec![p],
            None => ISSUES_PATHS.to_vec(),
        };
        for p in candidates {
            let out = self.output(&[
                OsStr::new("ls-tree"),
                OsStr::new("-z"),
                OsStr::new("--full-tree"),
                OsStr::new(&commit),
                OsStr::new("--"),
                OsStr::new(p),
            ])?;
            // `<mode> <type> <id>\t<path>\0`, for the entry itself or nothing.
            let Some(entry) = out.split(|&b| b == 0).find(|e| !e.is_empty()) else { continue };
            let entry = String::from_utf8_lossy(entry);
            let (head, _) = entry.split_once('\t').unwrap_or((&entry, ""));
            let mut fields = head.split(' ');
            let (mode, id) = (fields.next().unwrap_or(""), fields.nth(1).unwrap_or(""));
            // A link's blob is the path it points to, never an issues file: name it, as the
            // import names a link in the work tree.
            let kind = match mode {
                "100644" | "100755" => None,
                "120000" => Some("symbolic link"),
                "160000" => Some("submodule"),
                _ => Some("directory"),
            };
            if let Some(kind) = kind {
                bail!("{} at {rev} is a {kind}, not a file", crate::record::printable(p, 256));
            }
            let id = ObjectId::from_hex(id).with_context(|| format!("git ls-tree gave no object id for {p} at {rev}"))?;
            return Ok(Some(id));
        }
        Ok(None)
    }

    /// A blob's bytes by its full hex id.
    pub fn blob(&self, hex: &str) -> Result<Vec<u8>> {
        let id = ObjectId::from_hex(hex).with_context(|| format!("{hex} is not an object id"))?;
        self.blob_by_id(&id)
    }

    /// A blob's bytes by its id, held whole.
    pub fn blob_by_id(&self, id: &ObjectId) -> Result<Vec<u8>> {
        self.output(&[OsStr::new("cat-file"), OsStr::new("blob"), OsStr::new(id.as_str())]).with_context(|| format!("reading blob {id}"))
    }

    /// git's stdout, whole; a failure names the command and git's error.
    fn output(&self, args: &[&OsStr]) -> Result<Vec<u8>> {
        let out = Command::new("git")
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()
            .context("running git (is git installed?)")?;
        if !out.status.success() {
            let shown: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
            bail!("git {} failed: {}", shown.join(" "), crate::record::printable(String::from_utf8_lossy(&out.stderr).trim(), 4096));
        }
        Ok(out.stdout)
    }

    /// Resolves a revision to a commit id. `None` for the parent of a root commit (`X^`, `X~1`,
    /// `X^1` where X has no parents), so "everything in X was added".
    fn commit(&self, rev: &str) -> Result<Option<String>> {
        let resolve = |r: &str| run(&self.dir, &["rev-parse", "--verify", "--quiet", "--end-of-options", &format!("{r}^{{commit}}")]);
        if let Ok(id) = resolve(rev) {
            return Ok(Some(id));
        }
        for suffix in ["^1", "~1", "^", "~"] {
            if let Some(base) = rev.strip_suffix(suffix) {
                let base = if base.is_empty() { "HEAD" } else { base };
                if let Ok(id) = resolve(base) {
                    let parents = run(&self.dir, &["rev-list", "--parents", "-n", "1", &id])?;
                    if parents.split_whitespace().count() == 1 {
                        return Ok(None);
                    }
                }
            }
        }
        bail!("resolving revision {}: git knows no such commit", crate::record::printable(&format!("{rev:?}"), 256))
    }
}

/// Stages one file (`git add -- FILE`) in the worktree containing it, into the index git is
/// using (`GIT_INDEX_FILE`, as set during `git commit -a` or `git commit <path>`, is inherited).
pub fn stage(file: &Path) -> Result<()> {
    // With `GIT_DIR` set (git sets it for hooks in a linked worktree) and no `GIT_WORK_TREE`, git
    // takes the current directory as the work tree's top: run from the file's directory there,
    // `git add` would stage `issues.jsonl` at the top of the tree. Without it, the file's
    // directory finds the file's own repository wherever we were started.
    let dir = if std::env::var_os("GIT_DIR").is_some() { Path::new(".") } else { file.parent().unwrap_or(Path::new(".")) };
    run(dir, &[OsStr::new("add"), OsStr::new("--"), file.as_os_str()]).map(drop)
}

/// The file `name` (relative to `dir`) as the commit `rev` holds it; `None` when it has no such
/// file or there is no such commit.
pub fn file_at(dir: &Path, rev: &str, name: &str) -> Result<Option<Vec<u8>>> {
    let out =
        git_from(dir, &["cat-file", "blob", &format!("{rev}:./{name}")]).output().context("running git cat-file (is git installed?)")?;
    Ok(out.status.success().then_some(out.stdout))
}

/// Whether the commits `a` and `b` hold the file `name` (relative to `dir`) with the same content
/// (one `git rev-parse` of both blob ids); false when either has no such file, or git fails.
pub fn same_file_at(dir: &Path, a: &str, b: &str, name: &str) -> bool {
    let Ok(out) = git_from(dir, &["rev-parse", "--quiet", &format!("{a}:./{name}"), &format!("{b}:./{name}")]).output() else {
        return false;
    };
    let ids: Vec<&[u8]> = out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    out.status.success() && ids.len() == 2 && ids[0] == ids[1]
}

/// `git ARGS` run in `dir`, quiet, that finds its repository from `dir`. A hook runs with
/// `GIT_DIR` set and no `GIT_WORK_TREE` (a linked worktree's hooks among them): git then takes the
/// current directory for the top of the work tree, and a `./name` would name a file there.
fn git_from(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.args(args).current_dir(dir).stdin(Stdio::null()).stderr(Stdio::null());
    if std::env::var_os("GIT_WORK_TREE").is_none() {
        cmd.env_remove("GIT_DIR");
    }
    cmd
}

/// Hands each object `specs` names (a blob id, or `<rev>:<path>`) to `each` with its index,
/// `None` when git says it is missing, read by one `git cat-file --batch` in the repository at
/// `dir` (the names written on a thread of their own, so neither pipe fills while the other
/// waits). One blob is held at a time.
pub fn for_each_blob<S: AsRef<str>>(dir: &Path, specs: &[S], mut each: impl FnMut(usize, Option<&[u8]>) -> Result<()>) -> Result<()> {
    use std::io::{BufRead, Read, Write};
    // A name holding a newline would be read by git as two.
    if let Some(bad) = specs.iter().find(|s| s.as_ref().contains(['\n', '\r'])) {
        bail!("{} is not an object name", crate::record::printable(bad.as_ref(), 200));
    }
    let mut child = Command::new("git")
        .args(["cat-file", "--batch"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("running git cat-file --batch (is git installed?)")?;
    let mut stdin = child.stdin.take().context("git cat-file has no input")?;
    let names: Vec<String> = specs.iter().map(|s| s.as_ref().to_owned()).collect();
    let writer = std::thread::spawn(move || {
        for name in names {
            if writeln!(stdin, "{name}").is_err() {
                break;
            }
        }
    });
    let mut reader = std::io::BufReader::with_capacity(1 << 20, child.stdout.take().context("git cat-file has no output")?);
    let mut header = String::new();
    let mut content = Vec::new();
    let mut result = Ok(());
    for (i, spec) in specs.iter().enumerate() {
        header.clear();
        if let Err(e) = reader.read_line(&mut header) {
            result = Err(anyhow::Error::from(e).context("reading git cat-file --batch"));
            break;
        }
        // `<id> blob <size>`, `<name> missing` (or `ambiguous`), or another type.
        let size: Option<usize> = match header.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "blob", size] => match size.parse() {
                Ok(n) => Some(n),
                Err(_) => {
                    result = Err(anyhow::anyhow!("git cat-file --batch gave no size for {}", crate::record::printable(spec.as_ref(), 200)));
                    break;
                }
            },
            [_, _, size] => {
                // Another object type: skip its content.
                let n: u64 = size.parse().unwrap_or(0);
                if std::io::copy(&mut (&mut reader).take(n + 1), &mut std::io::sink()).is_err() {
                    break;
                }
                None
            }
            _ => None,
        };
        let step = match size {
            Some(size) => {
                content.clear();
                if let Err(e) = (&mut reader).take(size as u64 + 1).read_to_end(&mut content) {
                    result = Err(anyhow::Error::from(e).context("reading git cat-file --batch"));
                    break;
                }
                content.truncate(size);
                each(i, Some(&content))
            }
            None => each(i, None),
        };
        if let Err(e) = step {
            result = Err(e);
            break;
        }
    }
    drop(reader);
    let _ = writer.join();
    let _ = child.wait();
    result
}

/// A blob's bytes as `git cat-file blob` writes them, read as a stream; [`BlobStream::finish`]
/// says whether git succeeded. Dropped unfinished, git is stopped.
pub struct BlobStream {
    child: std::process::Child,
    /// git's messages (the first 64 KB), drained on a thread of their own: read only at the end,
    /// a chatty git (`GIT_TRACE`) would fill the pipe and stop while we wait for its output.
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

impl BlobStream {
    /// Starts `git cat-file blob ID` in the repository containing `dir` (`GIT_DIR` honoured).
    pub fn open(dir: &Path, id: &ObjectId) -> Result<(BlobStream, std::process::ChildStdout)> {
        let mut child = Command::new("git")
            .args(["cat-file", "blob"])
            .arg(id.as_str())
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running git cat-file (is git installed?)")?;
        let stdout = child.stdout.take().context("git cat-file has no output")?;
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                let _ = std::io::Read::read_to_end(&mut std::io::Read::take(&mut pipe, 64 << 10), &mut kept);
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
                kept
            })
        });
        // A 1 MB pipe instead of 64 KB: a sixteenth of the wake-ups between git and the reader.
        #[cfg(target_os = "linux")]
        if crate::platform::linux_calls() {
            use std::os::fd::AsRawFd;
            // SAFETY: the descriptor is the pipe just created and owned by `stdout`; a refusal
            // (a lower `pipe-max-size`) leaves the default size.
            unsafe { libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
        }
        Ok((BlobStream { child, stderr }, stdout))
    }

    /// Waits for git once its output has been read: an error carries git's message.
    pub fn finish(mut self) -> Result<()> {
        let status = self.child.wait().context("waiting for git cat-file")?;
        let stderr = self.stderr.take().and_then(|t| t.join().ok()).unwrap_or_default();
        if !status.success() {
            bail!("git cat-file failed: {}", crate::record::printable(String::from_utf8_lossy(&stderr).trim(), 4096));
        }
        Ok(())
    }
}

impl Drop for BlobStream {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Parses `REV` or `A..B` into the two revisions to compare.
pub fn diff_range(spec: &str) -> (String, String) {
    match spec.split_once("..") {
        Some((a, b)) => (if a.is_empty() { "HEAD".into() } else { a.into() }, if b.is_empty() { "HEAD".into() } else { b.into() }),
        None => (spec.to_owned(), "HEAD".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [&str; 3] = ["user.name", "user.email", "beads.bridge"];

    /// What `git config -f FILE -z --get-regexp` gives `KEYS` for a file holding `text`.
    fn git_reads(text: &str) -> Option<String> {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("config");
        std::fs::write(&file, text).expect("write");
        let out = Command::new("git")
            .args(["config", "-f"])
            .arg(&file)
            .args(["-z", "--get-regexp", r"^(user\.name|user\.email|beads\.bridge)$"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        // 1: no key matched; anything else but 0 is git refusing the file.
        match out.status.code() {
            Some(0) => Some(String::from_utf8(out.stdout).expect("utf-8")),
            Some(1) => Some(String::new()),
            _ => None,
        }
    }

    fn ours(text: &str) -> Option<String> {
        let values = plain_config_values(text, &KEYS)?;
        Some(values.iter().map(|(k, v)| v.as_ref().map_or(format!("{k}\0"), |v| format!("{k}\n{v}\0"))).collect())
    }

    /// Where the reader answers, it answers as git does; it declines every form it does not
    /// read (and git's refusals), so the caller asks git.
    #[test]
    fn plain_config_values_agree_with_git_or_decline() {
        let cases = [
            ("[user]\n\tname = Ada Lovelace\n\temail = ada@x\n", true),
            ("[User]\n  NAME=Ada\n[user]\nname = Bob\n", true),
            ("[user]\nname\n[beads]\n\tbridge = false\n", true),
            ("# c\n; c\n\n[core]\n\tbare = false\n[merge \"beads\"]\n\tname = not the user's\n[user]\n\tname = A  B  \r\n", true),
            ("\u{feff}[user]\nname = x\n", true),
            ("[user]\nname = \"quoted\"\n", false),
            ("[user]\nname = a # comment\n", false),
            ("[user]\nname = a\\\n b\n", false),
            ("[user] name = x\n", false),
            ("[user]\nname = a\tb\n", false),
            ("[user \"sub\"]\nname = x\n", true),
            ("[user.sub]\nname = x\n", false),
            ("name = outside\n", false),
            ("[user\nname = x\n", false),
            ("[user]\n1name = x\n", false),
            ("[merge \"a\\\"b\"]\nx = y\n", false),
            ("[merge \"beads\"]\n\tdriver = \"/a b/bd-merge\" %O # x\n[user]\n\tname = Ada\n", true),
            ("[core]\n\tx = a\\\n[user]\n\tname = Ada\n", false),
        ];
        for (text, read) in cases {
            let got = ours(text);
            assert_eq!(got.is_some(), read, "{text:?}: {got:?}");
            if let Some(got) = got {
                assert_eq!(Some(got), git_reads(text), "{text:?}");
            }
        }
    }
}

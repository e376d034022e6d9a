//! Talking to git: config look-ups, running git, and reading the repository.
//!
//! The merge driver only needs git for two things (the line-merge fallback, in `merge::driver`,
//! and the conflict style), both run as `git` subprocesses because git is by definition present
//! when it calls a merge driver. Finding the issues file at a revision (for `bd-hook --from-diff`) goes
//! through gix instead: no process per call, and it honours `GIT_DIR` exactly as git's hooks set it.
//! Its bytes are then streamed out of `git cat-file` ([`BlobStream`]): git stores a file over
//! `core.bigFileThreshold` (512 MB) whole and streams it, where gix would inflate it into memory.

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
    run(dir, &["rev-parse", "--absolute-git-dir"]).ok().map(std::path::PathBuf::from)
}

/// Like [`git_dir`], but git refusing a repository that is there (its "dubious ownership" check,
/// as in a container's bind mount) is an error naming the fix, not "no repository": callers must
/// not fall back to keeping files in the work tree of a repository they were refused.
/// `Ok(None)` outside a repository, or when git is not installed.
pub fn git_dir_checked(dir: &Path) -> Result<Option<std::path::PathBuf>> {
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

/// An open repository for reading objects.
pub struct Repo {
    repo: gix::Repository,
}

impl Repo {
    /// Opens the repository containing `dir` as git would (`GIT_DIR` and friends honoured).
    pub fn discover(dir: &Path) -> Result<Repo> {
        let mut repo = gix::ThreadSafeRepository::discover_with_environment_overrides(dir)
            .with_context(|| format!("opening the git repository at {}", dir.display()))?
            .to_thread_local();
        // Successive versions of the issues file are deltas of each other: keep their bases.
        repo.object_cache_size_if_unset(64 << 20);
        Ok(Repo { repo })
    }

    /// The issues file's bytes at `rev`: empty when the revision is the (missing) parent of a
    /// root commit, or when the file does not exist there. `path` picks the file; `None` tries
    /// [`ISSUES_PATHS`].
    pub fn issues_at(&self, rev: &str, path: Option<&str>) -> Result<Vec<u8>> {
        match self.issues_blob_at(rev, path)? {
            None => Ok(Vec::new()),
            Some(id) => self.blob_by_id(id).with_context(|| format!("reading the issues file at {rev}")),
        }
    }

    /// The blob id of the issues file at `rev`, as [`Repo::issues_at`] finds it: `None` when the
    /// revision is the (missing) parent of a root commit or the file does not exist there. A
    /// symbolic link, a submodule or a directory in the file's place is an error naming it.
    pub fn issues_blob_at(&self, rev: &str, path: Option<&str>) -> Result<Option<gix::ObjectId>> {
        let Some(commit) = self.commit(rev)? else {
            return Ok(None);
        };
        let tree = commit.tree().with_context(|| format!("reading the tree of {rev}"))?;
        let candidates: Vec<&str> = match path {
            Some(p) => vec![p],
            None => ISSUES_PATHS.to_vec(),
        };
        for p in candidates {
            if let Some(entry) = tree.lookup_entry_by_path(p).with_context(|| format!("looking up {p} in {rev}"))? {
                let mode = entry.mode();
                if !mode.is_blob() {
                    // A link's blob is the path it points to, never an issues file: name it, as the
                    // import names a link in the work tree.
                    let kind = if mode.is_link() {
                        "symbolic link"
                    } else if mode.is_commit() {
                        "submodule"
                    } else {
                        "directory"
                    };
                    bail!("{} at {rev} is a {kind}, not a file", crate::record::printable(p, 256));
                }
                return Ok(Some(entry.object_id()));
            }
        }
        Ok(None)
    }

    /// A blob's bytes by its full hex id.
    pub fn blob(&self, hex: &str) -> Result<Vec<u8>> {
        let id = gix::ObjectId::from_hex(hex.as_bytes()).with_context(|| format!("{hex} is not an object id"))?;
        self.blob_by_id(id)
    }

    /// A blob's bytes by its id, held whole.
    pub fn blob_by_id(&self, id: gix::ObjectId) -> Result<Vec<u8>> {
        Ok(self.repo.find_object(id).with_context(|| format!("reading blob {id}"))?.detach().data)
    }

    /// Resolves a revision to a commit. `None` for the parent of a root commit (`X^`, `X~1`,
    /// `X^1` where X has no parents), so "everything in X was added".
    fn commit(&self, rev: &str) -> Result<Option<gix::Commit<'_>>> {
        match self.repo.rev_parse_single(rev) {
            Ok(id) => {
                let commit = id
                    .object()
                    .with_context(|| format!("reading {rev}"))?
                    .peel_to_commit()
                    .with_context(|| format!("{rev} is not a commit"))?;
                Ok(Some(commit))
            }
            Err(err) => {
                for suffix in ["^1", "~1", "^", "~"] {
                    if let Some(base) = rev.strip_suffix(suffix) {
                        let base = if base.is_empty() { "HEAD" } else { base };
                        if let Ok(id) = self.repo.rev_parse_single(base) {
                            let commit = id.object()?.peel_to_commit()?;
                            if commit.parent_ids().next().is_none() {
                                return Ok(None);
                            }
                        }
                    }
                }
                Err(anyhow::Error::new(err).context(format!("resolving revision {rev:?}")))
            }
        }
    }
}

/// Stages one file (`git add -- FILE`) in the worktree containing it, into the index git is
/// using (`GIT_INDEX_FILE`, as set during `git commit -a` or `git commit <path>`, is inherited).
pub fn stage(file: &Path) -> Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    run(dir, &[OsStr::new("add"), OsStr::new("--"), file.as_os_str()]).map(drop)
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
    pub fn open(dir: &Path, id: &gix::ObjectId) -> Result<(BlobStream, std::process::ChildStdout)> {
        let mut child = Command::new("git")
            .args(["cat-file", "blob"])
            .arg(id.to_hex().to_string())
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
        {
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

//! The ids the notifier delivers in its one-shot mode: collected from every source, in order.
//!
//! Ids come from `send`, `stdin` and `from-diff`, combined in first-seen order with blanks and
//! repeats dropped. An id is taken as it is: only the line format of `stdin` (meant for people)
//! trims lines and skips `#` comments; with `-z` (NUL-separated, for programs) and from every
//! other source, an id keeps every character, spaces, `#` and newlines included. Collection errors (an unknown revision, an unreadable
//! stdin) and delivery
//! failures are outcomes the binary maps to exit codes: fail-open by default, strict on request.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

use crate::diff::{digest_changes, Changes, Digest, DigestError};
use crate::git::{BlobStream, Repo};
use crate::jsonl::LineBlocks;

/// Where ids come from.
#[derive(Debug, Clone, Default)]
pub struct IdSources {
    /// Given on the command line.
    pub ids: Vec<String>,
    /// Read standard input (one id per line; `#` comments and blank lines skipped).
    pub stdin: bool,
    /// Standard input holds NUL-separated ids, taken byte for byte.
    pub nul: bool,
    /// `REV` (compared with HEAD) or `REV..REV`.
    pub from_diff: Option<String>,
    /// The issues file inside the repository (default: `.beads/issues.jsonl`, else `beads.jsonl`).
    pub path: Option<String>,
}

/// Ids added, modified or deleted in the issues file between two revisions, read from git
/// objects in the repository containing `dir` (`GIT_DIR` honoured).
///
/// Each revision is streamed out of git and kept as a [`Digest`] (an id and a hash per record),
/// so memory follows the number of ids, not the file's size; the same blob on both sides is no
/// change at all, and is not read.
pub fn diff_ids(dir: &Path, spec: &str, path: Option<&str>) -> Result<Changes> {
    let (old_rev, new_rev) = crate::git::diff_range(spec);
    let repo = Repo::discover(dir)?;
    let old_blob = repo.issues_blob_at(&old_rev, path)?;
    let new_blob = repo.issues_blob_at(&new_rev, path)?;
    if old_blob == new_blob {
        return Ok(Changes::default());
    }
    // Inflating and hashing a big file dominates: the two revisions stream on two threads.
    let seed = Digest::random_seed();
    let digest = |rev: &str, blob: Option<crate::git::ObjectId>| -> Result<Digest> {
        let Some(blob) = blob else { return Ok(Digest::default()) };
        let name = format!("the issues file at {rev}");
        let streamed = (|| -> Result<Digest, DigestError> {
            let (stream, stdout) = BlobStream::open(dir, &blob)?;
            let digest = Digest::read(LineBlocks::from_reader(Box::new(stdout), Path::new(&name), BLOCK_SIZE), seed)?;
            stream.finish()?;
            Ok(digest)
        })();
        match streamed {
            Ok(digest) => Ok(digest),
            // A bad line is the file's.
            Err(DigestError::BadLine(e)) => Err(anyhow::Error::new(e).context(format!("issues file at {rev}"))),
            Err(DigestError::Read(e)) => Err(e.context(format!("reading the issues file at {rev}"))),
        }
    };
    let (old, new) = std::thread::scope(|s| {
        let old = s.spawn(|| digest(&old_rev, old_blob));
        let new = digest(&new_rev, new_blob);
        (old.join().expect("reading a revision does not panic"), new)
    });
    Ok(digest_changes(&old?, &new?))
}

/// Bytes read from git per block.
const BLOCK_SIZE: usize = 4 << 20;

/// The most standard input read for ids (an endless stream is an error, not an allocation).
pub const MAX_STDIN: u64 = 256 << 20;

/// Splits ids read from standard input: NUL-separated and exact with `nul`, else one per line,
/// trimmed, blank lines and `#` comments skipped.
pub fn stdin_ids(input: &[u8], nul: bool) -> Result<Vec<String>> {
    let mut out = Vec::new();
    if nul {
        for (n, id) in input.split(|&b| b == 0).enumerate() {
            if id.is_empty() {
                continue;
            }
            let id = std::str::from_utf8(id).with_context(|| format!("id {} on stdin is not UTF-8", n + 1))?;
            out.push(id.to_owned());
        }
    } else {
        for (n, line) in input.split(|&b| b == b'\n').enumerate() {
            let line = std::str::from_utf8(line).with_context(|| format!("line {} of stdin is not UTF-8", n + 1))?.trim();
            if !line.is_empty() && !line.starts_with('#') {
                out.push(line.to_owned());
            }
        }
    }
    Ok(out)
}

/// Collects ids from every source, first-seen order, without empty ids or repeats.
pub fn collect_ids(sources: &IdSources, dir: &Path, stdin: impl Read) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut push = |id: &str| {
        if !id.is_empty() && seen.insert(id.to_owned()) {
            out.push(id.to_owned());
        }
    };
    for id in &sources.ids {
        push(id);
    }
    if sources.stdin {
        let input = crate::safe_fs::bounded::read_bounded(stdin, MAX_STDIN, 0).context("reading ids from stdin")?;
        for id in stdin_ids(&input, sources.nul)? {
            push(&id);
        }
    }
    if let Some(spec) = &sources.from_diff {
        for id in diff_ids(dir, spec, sources.path.as_deref())?.ids() {
            push(&id);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::stdin_ids;

    #[test]
    fn nul_separated_ids_are_exact_and_lines_are_for_people() {
        let exact = stdin_ids(b"#hash\0 pad \0new\nline\0\0cr\r\0", true).expect("ids");
        assert_eq!(exact, ["#hash", " pad ", "new\nline", "cr\r"]);
        let lines = stdin_ids(b"a\r\n# comment\n\n  b  \n", false).expect("ids");
        assert_eq!(lines, ["a", "b"]);
        assert!(stdin_ids(b"\xff\0", true).is_err());
    }
}

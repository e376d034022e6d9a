//! Where the issues file is, and how to show a path as the user would type it.
//!
//! Every binary finds the issues file the same way, and bd-merge needs it without the SQLite
//! cache: so the search lives here, in plumbing, not in [`crate::cache`] (which uses it too).

use std::fs;
use std::path::{Path, PathBuf};

/// bd 1.3's marker, beside the issues file, for a database migration under way: bd refuses its
/// own writes while it exists, and our hooks import, export and flush nothing.
pub const MIGRATION_FREEZE: &str = "MIGRATION-FREEZE";

/// Why no issues file was found.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// Something other than a regular file stands where the issues file belongs (a FIFO, a
    /// directory, a link to a device): that repository's file gone wrong, not a reason to look
    /// further up. What to do about it is the binary's to say.
    #[error("{} is a {kind}, not a regular file: an issues file must be a regular file", .path.display())]
    NotRegular {
        /// Where the issues file belongs.
        path: PathBuf,
        /// What is there instead.
        kind: &'static str,
    },
    /// No issues file in the directory or any parent.
    #[error("no .beads/issues.jsonl (or .beads/beads.jsonl) found in {} or its parents", .start.display())]
    NotFound {
        /// Where the search started.
        start: PathBuf,
    },
    /// A `.beads` that is a link, refused by name.
    #[error(transparent)]
    Unsafe(#[from] crate::safe_fs::FileError),
}

/// `.beads/issues.jsonl` (or the older `.beads/beads.jsonl`) in `start` or a parent directory.
pub fn find_issues_file(start: &Path) -> Result<PathBuf, FindError> {
    let start = fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
    for dir in start.ancestors() {
        // A `.beads` that is a link (a clone can commit one to another checkout's) is refused
        // by name, never read or written through.
        crate::safe_fs::refuse_linked_dir(&dir.join(crate::jsonl::BEADS_DIR))?;
        for name in crate::jsonl::ISSUES_FILE_NAMES {
            let p = dir.join(crate::jsonl::BEADS_DIR).join(name);
            // Something other than a regular file in its place (a FIFO, a directory, a link to a
            // device) is that repository's issues file gone wrong, not a reason to look further up.
            let Ok(meta) = fs::symlink_metadata(&p) else { continue };
            if meta.file_type().is_symlink() {
                // A committed link would have every reader (the CI gate among them) read and
                // print a file outside the checkout: refused by name, its target never opened.
                let target = fs::read_link(&p).unwrap_or_default();
                return Err(FindError::Unsafe(crate::safe_fs::FileError::Symlink { path: p, target }));
            }
            if meta.is_file() {
                return Ok(p);
            }
            return Err(FindError::NotRegular { path: p, kind: crate::safe_fs::kind_of(meta.file_type()) });
        }
    }
    Err(FindError::NotFound { start })
}

/// A path as a user would type it: relative to the current directory when it lies below it,
/// else as given.
pub fn as_typed(path: &Path) -> PathBuf {
    let relative = std::env::current_dir().ok().and_then(|cwd| {
        let cwd = fs::canonicalize(&cwd).unwrap_or(cwd);
        let abs = path.parent().and_then(|d| fs::canonicalize(d).ok()).map(|d| d.join(path.file_name().unwrap_or_default()));
        abs.and_then(|a| a.strip_prefix(&cwd).ok().map(Path::to_path_buf))
    });
    relative.unwrap_or_else(|| path.to_path_buf())
}

/// [`as_typed`], escaped for a terminal.
pub fn shown_path(path: &Path) -> String {
    crate::record::escaped_path(&as_typed(path))
}

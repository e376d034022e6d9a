//! Which issues file a cache belongs to, and what a command that names another file gets.
//!
//! A cache syncs with one issues file: the one it was last imported from or exported to. A
//! command run from elsewhere in the repository, or given a `FILE`, must not silently re-bind the
//! cache to another file (its unexported edits would go there). These rules live here, beside
//! the cache, so every binary applies them the same way.

use std::path::{Path, PathBuf};

use super::{Cache, Error, OpenMode, Paths};
use crate::paths::find_issues_file;

/// What [`Cache::open_bound`] found about the file a command named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// The cache is open on its own file (the one named, or the one it is bound to).
    Own,
    /// The command named this other file; the cache stays open on its own. Import refuses it
    /// unless asked to re-bind ([`Cache::rebind`]); export writes a snapshot there.
    Other(PathBuf),
}

impl Cache {
    /// Opens the cache for writing, on the issues file it was last synced with (or, for a new
    /// cache, the repository's). `file` is the file a command named, if any; `start` is where the
    /// repository is looked for. Without `file`, a cache bound elsewhere (by `--rebind`) follows
    /// its binding and says so through the notice.
    pub fn open_bound(start: &Path, file: Option<&Path>, db: Option<&Path>, options: OpenMode) -> Result<(Cache, Binding), Error> {
        let paths = Paths::discover(start, file, db)?;
        let mut cache = Cache::open(&paths, options)?;
        if file.is_none() {
            cache.follow_binding()?;
            if !same_file(&cache.paths.file, &paths.file) {
                (options.notice)(&super::Notice::BoundElsewhere { bound: cache.paths.file.clone(), found: paths.file.clone() });
            }
            return Ok((cache, Binding::Own));
        }
        let named = paths.file;
        let bound = match cache.bound_file()? {
            Some(p) => Some(p),
            None => find_issues_file(start).ok(),
        };
        match bound {
            Some(bound) if !same_file(&bound, &named) => {
                cache.paths.file = bound;
                Ok((cache, Binding::Other(named)))
            }
            _ => Ok((cache, Binding::Own)),
        }
    }

    /// Makes `file` the cache's issues file (import's `--rebind`): the next import replaces the
    /// cache's issues with that file's and records the new binding.
    pub fn rebind(&mut self, file: PathBuf) {
        self.paths.file = file;
    }
}

/// Whether two paths name one file (comparing what exists by its canonical path).
pub fn same_file(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    canon(a) == canon(b)
}

//! The import's public types: its options, its report and the policy for issues edited on both
//! sides. Kept apart from the algorithm (the other files of [`super`]) so a caller reads what it
//! passes and gets back in one place; the errors are [`crate::cache::Error`].

use crate::merge::{ConflictPolicy, Report};

/// How to settle a field edited both in the cache and in the file. There is no `markers`: a cache
/// row cannot hold conflict markers, so the choice is made here, and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// The side whose record has the later `updated_at`; ties go to the greater record.
    #[default]
    Newest,
    /// The cache's edit.
    Ours,
    /// The file's edit.
    Theirs,
}

impl From<SyncPolicy> for ConflictPolicy {
    fn from(p: SyncPolicy) -> ConflictPolicy {
        match p {
            SyncPolicy::Newest => ConflictPolicy::Newest,
            SyncPolicy::Ours => ConflictPolicy::Ours,
            SyncPolicy::Theirs => ConflictPolicy::Theirs,
        }
    }
}

/// Import settings.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Import the valid lines and list the invalid ones instead of aborting.
    pub skip_invalid: bool,
    /// Policy for three-way merges of issues edited in both the cache and the file.
    pub policy: SyncPolicy,
    /// Re-read the file even when its size, inode, mtime and hash are unchanged.
    pub force: bool,
    /// Show a progress bar (large files on a terminal).
    pub progress: bool,
}
/// What an import did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportReport {
    /// Nothing had changed since the last sync.
    pub noop: bool,
    /// Ids new in the cache.
    pub added: Vec<String>,
    /// Ids whose record changed.
    pub changed: Vec<String>,
    /// Ids removed from the cache.
    pub removed: Vec<String>,
    /// Lines skipped under `--skip-invalid`.
    pub skipped: Vec<super::BadLine>,
    /// Ids on more than one line.
    pub duplicate_ids: Vec<String>,
    /// Ids edited in both the cache and the file, merged three-way (still dirty).
    pub merged: Vec<String>,
    /// Conflicts the three-way merges settled, one per field: `{id, field, kept: "ours"|"theirs",
    /// kept_value, other_value, reason}` (ours: the cache; theirs: the file).
    pub conflicts: Vec<Report>,
    /// Line numbers of imported records that repeat a key (the last value counts, as in bd).
    pub repeated_keys: Vec<usize>,
    /// Lines that are records but not issues (bd 1.0's header, memories, other `_type`s): not
    /// in the cache, kept in the file as they are.
    pub other_records: usize,
    /// Issues this cache held under an id that the file now gives to another issue (a merge kept
    /// two issues created under one id and moved this one): where each went.
    pub renamed: Vec<RenamedIssue>,
    /// Ids whose record now has another `created_at` than the cache's (another issue under the
    /// id), with the cache's `created_at` and title, to find where the old issue went.
    #[serde(skip)]
    pub(super) replaced: Vec<(String, String, Option<String>)>,
}

/// An issue of this cache that a merge moved to a new id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RenamedIssue {
    /// The id it had here (the file now gives it to another issue).
    pub from: String,
    /// Its id in the file now.
    pub to: String,
}

impl ImportReport {
    /// Every id added, changed or removed, sorted, for `--print-changed`.
    pub fn changed_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.added.iter().chain(&self.changed).chain(&self.removed).map(String::as_str).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

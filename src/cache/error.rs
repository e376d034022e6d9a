//! Why opening, importing or exporting the cache failed, as a value a caller can match.
//!
//! The commands branch on two failures: a file whose lines import refuses (they print the fix,
//! which depends on the command) and a database another SQLite writer kept locked past
//! `--timeout` (nothing was written). Everything else carries its context chain and is shown as
//! it is. The three operations share one enum because they fail in the same ways: export and
//! every query import a changed file first.

use super::import::InvalidFile;

/// A failed open, import or export of the cache.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The issues file holds lines import refuses; the cache was left untouched.
    #[error(transparent)]
    InvalidFile(InvalidFile),
    /// Another SQLite writer (an open transaction in `sqlite3`, say) kept the database locked
    /// for longer than the timeout; nothing was written.
    #[error(
        "the cache database stayed locked by another SQLite writer (an open transaction, in sqlite3 say) \
         for longer than --timeout; nothing was written ({0:#})"
    )]
    Busy(anyhow::Error),
    /// Anything else (unreadable files, a failed write, git), with its context.
    #[error(transparent)]
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Error {
    /// Sorts an error from the cache's internals into the cases a caller branches on. This is
    /// the one place that looks inside the chain.
    fn from(e: anyhow::Error) -> Error {
        let e = match e.downcast::<InvalidFile>() {
            Ok(invalid) => return Error::InvalidFile(invalid),
            Err(e) => e,
        };
        if e.chain().any(|c| {
            matches!(
                c.downcast_ref::<rusqlite::Error>(),
                Some(rusqlite::Error::SqliteFailure(f, _))
                    if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            )
        }) {
            return Error::Busy(e);
        }
        // An error already sorted, wrapped in context on the way up, keeps its kind.
        match e.downcast::<Error>() {
            Ok(sorted) => sorted,
            Err(e) => Error::Other(e),
        }
    }
}

//! Why opening, importing or exporting the cache failed, as a value a caller can match.
//!
//! The commands branch on two failures: a file whose lines import refuses (they print the fix,
//! which depends on the command) and a database another SQLite writer kept locked past the
//! timeout (nothing was written). Everything else carries its context chain and is shown as it
//! is. The three operations share one enum because they fail in the same ways: export and every
//! query import a changed file first.
//!
//! Each case is sorted where it arises, from a typed value ([`rusqlite::Error`]'s code, import's
//! list of bad lines), never by looking inside an error chain afterwards.

use crate::fix::Fix;
use crate::record::LineProblem;

/// A failed open, import or export of the cache.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The issues file holds lines import refuses; the cache was left untouched.
    #[error(transparent)]
    InvalidFile(#[from] InvalidFile),
    /// Another SQLite writer (an open transaction in `sqlite3`, say) kept the database locked
    /// for longer than the timeout; nothing was written.
    #[error(
        "the cache database stayed locked by another SQLite writer (an open transaction, in sqlite3 say) \
         for longer than the timeout; nothing was written ({0})"
    )]
    Busy(#[source] rusqlite::Error),
    /// The database was written by a schema this build does not know (a newer version's) and
    /// holds edits the issues file lacks: rebuilding it would lose them, so nothing was changed.
    #[error("{} was written by schema version {version} (this version writes {supported}) and holds {dirty} unexported edit(s)",
        .db.display())]
    UnknownSchema {
        /// The database.
        db: std::path::PathBuf,
        /// Its schema version.
        version: i64,
        /// The version this build writes.
        supported: i64,
        /// How many edits it holds that were never exported.
        dirty: i64,
    },
    /// The file named as the database is not a SQLite database; nothing was changed.
    #[error("{} is not a SQLite database (it does not start with the SQLite header), so it cannot be the cache; nothing was changed",
        .db.display())]
    NotADatabase {
        /// The file.
        db: std::path::PathBuf,
    },
    /// No issues file was found (or something else stands where it belongs).
    #[error(transparent)]
    IssuesFile(#[from] crate::paths::FindError),
    /// Anything else (unreadable files, a failed write, git), with its context.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<rusqlite::Error> for Error {
    /// A database another writer held past the busy timeout is [`Error::Busy`]; any other SQLite
    /// failure is [`Error::Other`].
    fn from(e: rusqlite::Error) -> Error {
        match &e {
            rusqlite::Error::SqliteFailure(f, _)
                if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) =>
            {
                Error::Busy(e)
            }
            _ => Error::Other(e.into()),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Other(e.into())
    }
}

/// A line that could not be imported.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, thiserror::Error)]
#[error("{path}:{line}: {problem}\n    {excerpt}")]
pub struct BadLine {
    /// The file, as given.
    pub path: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong (serialised as its text, under its old name `reason`).
    #[serde(rename = "reason", serialize_with = "as_text")]
    pub problem: LineProblem,
    /// The start of the line.
    pub excerpt: String,
}

fn as_text<S: serde::Serializer>(problem: &LineProblem, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(problem)
}

/// Import refused the file: every bad line is listed, and the cache was not touched.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}\nthe cache was left untouched", lines(.0))]
pub struct InvalidFile(pub Vec<BadLine>);

fn lines(bad: &[BadLine]) -> String {
    bad.iter().map(BadLine::to_string).collect::<Vec<_>>().join("\n")
}

impl InvalidFile {
    /// Whether a refused line is a leftover git conflict marker: a merge was committed (or left
    /// unfinished) without the field-level driver.
    pub fn has_conflict_markers(&self) -> bool {
        self.0.iter().any(|b| b.problem == LineProblem::ConflictMarker)
    }

    /// What a user can do: resolve the markers in the file (the first bad line's, as the user
    /// would type it), or correct the lines listed.
    pub fn fix(&self) -> Fix {
        if self.has_conflict_markers() {
            let file = self.0.first().map_or_else(|| crate::jsonl::ISSUES_PATHS[0].into(), |b| crate::paths::as_typed(b.path.as_ref()));
            Fix::ResolveMarkers { file }
        } else {
            Fix::CorrectLines
        }
    }
}

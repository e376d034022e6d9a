//! What the cache tells a person waiting on it ([`super::OpenMode::notice`]), as a value: the
//! library never prints, and a binary words the one case that names a command-line flag (a
//! cache bound to another file by a re-bind) in its own terms.

use std::path::PathBuf;

/// Something the cache is doing that a person waiting should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Another writer holds the lock; waiting for it.
    Waiting {
        /// The lock file.
        lock: PathBuf,
        /// Who holds it, as it says.
        holder: String,
    },
    /// The database is corrupt: moved aside, and rebuilt from the issues file.
    Corrupt {
        /// The database.
        db: PathBuf,
        /// What SQLite said.
        error: String,
        /// Where it was moved.
        aside: PathBuf,
    },
    /// The cache is bound to another issues file (an earlier import re-bound it) than the one
    /// found, and follows its binding.
    BoundElsewhere {
        /// The file the cache is bound to, and uses.
        bound: PathBuf,
        /// The file found from the current directory.
        found: PathBuf,
    },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::Waiting { lock, holder } => write!(f, "waiting for {} ({holder})", lock.display()),
            Notice::Corrupt { db, error, aside } => {
                write!(f, "{} is corrupt ({error}); moving it to {} and rebuilding from the file", db.display(), aside.display())
            }
            Notice::BoundElsewhere { bound, found } => {
                write!(f, "the cache is bound to {}, not {}; using the bound file", bound.display(), found.display())
            }
        }
    }
}

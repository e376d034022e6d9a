//! The SQLite cache of an issues file: opening it safely, and mapping records to rows.
//!
//! Hooks, cron jobs and dashboards query this cache, so it must never silently disagree with the
//! file. Every row keeps the exact line it was built from (`issues.raw`) plus decoded columns for
//! the common fields; edits made through plain SQL are caught by triggers into a `dirty` set and
//! written back by [`export`](export::export) by patching the stored line. The schema is in
//! `schema.sql` and versioned with `PRAGMA user_version`. Writers hold a lock file next to the
//! database so bd-sync processes and git hooks never interleave.

pub mod binding;
pub mod codec;
pub mod error;
pub mod export;
pub mod freshness;
pub mod import;
pub mod in_step;
pub mod neighbourhood;
mod notice;
pub mod query;

pub use binding::Binding;
pub use codec::COLUMNS;
pub use error::Error;
pub use freshness::file_changed_since_sync;
pub use notice::Notice;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, OptionalExtension, Transaction};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 4;
const SCHEMA: &str = include_str!("schema.sql");
/// What version 2 adds to version 1 (run alone, it migrates a version-1 cache).
const SCHEMA_V2: &str = include_str!("schema_v2.sql");
/// What version 3 adds to version 2 (an index); run alone, it migrates a version-2 cache.
const SCHEMA_V3: &str = include_str!("schema_v3.sql");
/// What version 4 adds to version 3 (an index); run alone, it migrates a version-3 cache.
const SCHEMA_V4: &str = include_str!("schema_v4.sql");

/// Where the issues file and its cache live.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The JSONL issues file.
    pub file: PathBuf,
    /// The SQLite database.
    pub db: PathBuf,
}

impl Paths {
    /// Finds the issues file (`.beads/issues.jsonl`, else `.beads/beads.jsonl`, searching up
    /// from `start`) and the default cache location (`$(git rev-parse --git-dir)/beads/cache.db`,
    /// outside a repository `.beads/cache.db`). `file` and `db` override.
    pub fn discover(start: &Path, file: Option<&Path>, db: Option<&Path>) -> Result<Paths, Error> {
        let file = match file {
            Some(f) => f.to_path_buf(),
            None => crate::paths::find_issues_file(start)?,
        };
        let db = match db {
            Some(d) => d.to_path_buf(),
            None => match crate::git::git_dir_checked(start)? {
                Some(git_dir) => {
                    crate::safe_fs::refuse_linked_dir(&git_dir.join("beads")).map_err(anyhow::Error::from)?;
                    git_dir.join("beads").join("cache.db")
                }
                None => {
                    // Outside a repository the cache goes beside the file, in a directory an
                    // archive or a clone controls: a `.beads` that is a link would send the
                    // database (and its lock) anywhere.
                    let dir = file.parent().unwrap_or(Path::new("."));
                    crate::safe_fs::refuse_symlink(dir).map_err(anyhow::Error::from)?;
                    dir.join("cache.db")
                }
            },
        };
        Ok(Paths { file, db })
    }
}

/// An open cache, holding the writer lock for as long as it lives.
pub struct Cache {
    /// The connection.
    pub conn: Connection,
    /// Where things are.
    pub paths: Paths,
    _lock: Option<fs::File>,
}

/// How long to wait for the lock and for SQLite's busy handler.
#[derive(Debug, Clone, Copy)]
pub struct OpenMode {
    /// Take the writer lock (import, export) or not (read-only queries).
    pub write: bool,
    /// Give up waiting for the lock after this long.
    pub timeout: Duration,
    /// Told what the cache is doing that a person waiting should know (waiting for another
    /// writer, moving a corrupt database aside). The library never prints.
    pub notice: fn(&Notice),
}

impl OpenMode {
    /// Read-only (no writer lock), waiting at most `timeout` for SQLite's busy handler.
    pub fn read(timeout: Duration) -> OpenMode {
        OpenMode { write: false, timeout, notice: |_| {} }
    }

    /// With the writer lock, waiting at most `timeout` for it.
    pub fn write(timeout: Duration) -> OpenMode {
        OpenMode { write: true, timeout, notice: |_| {} }
    }

    /// The same, telling `notice` what a waiting person should know.
    pub fn with_notice(self, notice: fn(&Notice)) -> OpenMode {
        OpenMode { notice, ..self }
    }
}

impl Cache {
    /// Opens (creating or migrating as needed) the cache at `paths.db`.
    pub fn open(paths: &Paths, options: OpenMode) -> Result<Cache, Error> {
        prepare_files(&paths.db)?;
        refuse_foreign_file(&paths.db)?;
        let mut cache = Cache::connect(paths, options)?;
        cache.refuse_unknown_schema()?;
        cache.ensure_schema()?;
        Ok(cache)
    }

    /// Takes the writer lock (when writing) and opens the connection, moving a corrupt
    /// database aside when writing.
    fn connect(paths: &Paths, options: OpenMode) -> Result<Cache> {
        let lock = if options.write { Some(take_lock(&paths.db, options.timeout, options.notice)?) } else { None };
        let conn = match open_connection(&paths.db, options.timeout) {
            Ok(conn) => conn,
            Err(e) if options.write && e.is_corrupt() => {
                let aside = unused_path(&paths.db.with_extension("db.corrupt"));
                (options.notice)(&Notice::Corrupt { db: paths.db.clone(), error: format!("{e}: {}", e.source), aside: aside.clone() });
                fs::rename(&paths.db, &aside).with_context(|| format!("moving {} aside", paths.db.display()))?;
                for ext in ["db-wal", "db-shm"] {
                    let _ = fs::remove_file(paths.db.with_extension(ext));
                }
                open_connection(&paths.db, options.timeout)?
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Cache { conn, paths: paths.clone(), _lock: lock })
    }

    /// A database of a schema this build does not know (a newer bd-sync's), holding edits the
    /// issues file lacks, is never rebuilt: that would lose them.
    fn refuse_unknown_schema(&self) -> Result<(), Error> {
        let version: i64 = self.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(anyhow::Error::from)?;
        if matches!(version, 1..=SCHEMA_VERSION) {
            return Ok(());
        }
        let tables: i64 = self
            .conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))
            .map_err(anyhow::Error::from)?;
        if version == 0 && tables == 0 {
            return Ok(());
        }
        let dirty: i64 = self.conn.query_row("SELECT count(*) FROM dirty", [], |r| r.get(0)).unwrap_or(0);
        if dirty > 0 {
            return Err(Error::UnknownSchema { db: self.paths.db.clone(), version, supported: SCHEMA_VERSION, dirty });
        }
        Ok(())
    }

    fn ensure_schema(&mut self) -> Result<()> {
        let version: i64 = self.conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        if (1..SCHEMA_VERSION).contains(&version) {
            // Additive: indexes, a view and triggers; rows and unexported edits stay.
            let tx = self.conn.transaction()?;
            if version == 1 {
                tx.execute_batch(SCHEMA_V2).context("migrating the cache to schema version 2")?;
            }
            if version <= 2 {
                tx.execute_batch(SCHEMA_V3).context("migrating the cache to schema version 3")?;
            }
            tx.execute_batch(SCHEMA_V4).context("migrating the cache to schema version 4")?;
            tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
            tx.commit()?;
            return Ok(());
        }
        let tables: i64 = self.conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))?;
        if version != 0 || tables > 0 {
            // No unexported edits (`refuse_unknown_schema`): the file has everything, so rebuild.
            let names: Vec<(String, String)> = {
                let mut st = self.conn.prepare(
                    "SELECT type, name FROM sqlite_master WHERE type IN ('table','view','trigger') AND name NOT LIKE 'sqlite_%'",
                )?;
                let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let tx = self.conn.transaction()?;
            for (kind, name) in names.iter().filter(|(k, _)| k != "table").chain(names.iter().filter(|(k, _)| k == "table")) {
                tx.execute_batch(&format!("DROP {} IF EXISTS \"{}\"", kind.to_uppercase(), name.replace('"', "\"\"")))?;
            }
            tx.commit()?;
        }
        let tx = self.conn.transaction()?;
        tx.execute_batch(SCHEMA).context("creating the cache schema")?;
        tx.execute_batch(SCHEMA_V2).context("creating the cache schema")?;
        tx.execute_batch(SCHEMA_V3).context("creating the cache schema")?;
        tx.execute_batch(SCHEMA_V4).context("creating the cache schema")?;
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
        tx.commit()?;
        Ok(())
    }

    /// Opens the cache to answer a query from it, importing the issues file first when it changed
    /// since the last sync or the cache is new (as export does), so an answer is never stale.
    /// Returns the import's report when one ran. Follows the cache's binding to its file.
    pub fn open_fresh(paths: &Paths, options: OpenMode) -> Result<(Cache, Option<import::ImportReport>), Error> {
        if paths.db.exists() {
            let mut cache = Cache::open(paths, OpenMode { write: false, ..options })?;
            cache.follow_binding()?;
            // A stat decides; a file that changed is read once, by the import.
            if freshness::facts_unchanged(&cache)? {
                return Ok((cache, None));
            }
        }
        let mut cache = Cache::open(paths, OpenMode { write: true, ..options })?;
        cache.follow_binding()?;
        let report = import::import(&mut cache, &import::ImportOptions::default())?;
        Ok((cache, Some(report)))
    }

    /// Points the cache at the file it syncs with (after `import --rebind` that is not the one
    /// found from the current directory).
    pub fn follow_binding(&mut self) -> Result<()> {
        if let Some(p) = self.bound_file()? {
            self.paths.file = p;
        }
        Ok(())
    }

    /// Whether edits are rendered with Go's escapes (`\u003c` for `<`): what the import recorded
    /// of the file, else read from the file itself.
    pub fn go_style(&self) -> Result<bool> {
        Ok(match self.meta("go_escapes")? {
            Some(rusqlite::types::Value::Integer(i)) => i != 0,
            _ => std::fs::read(&self.paths.file).map(|c| crate::record::uses_go_escapes(&c)).unwrap_or(true),
        })
    }

    /// Reads a metadata value.
    pub fn meta(&self, key: &str) -> Result<Option<rusqlite::types::Value>> {
        Ok(self.conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional()?)
    }

    /// The issues file this cache was last synced with (`None` for a new cache). Import and
    /// export stay bound to it; `--rebind` changes it.
    pub fn bound_file(&self) -> Result<Option<PathBuf>> {
        Ok(match self.meta("file_path")? {
            Some(rusqlite::types::Value::Text(p)) => Some(PathBuf::from(p)),
            _ => None,
        })
    }

    /// Number of issues with unexported SQL edits.
    pub fn dirty_count(&self) -> Result<i64> {
        Ok(self.conn.query_row("SELECT count(*) FROM dirty", [], |r| r.get(0))?)
    }

    /// True when the issues file's size, inode and mtime are those of the last sync (a stat, no
    /// read): the file is then the one the cache imported or wrote.
    pub fn file_untouched_since_sync(&self) -> Result<bool> {
        freshness::facts_unchanged(self)
    }
}

/// The file name of the database (`ext` = "db") or of one of its side files (`db-wal`, ...),
/// whatever the database's own extension.
fn sidecar_name(db: &Path, ext: &str) -> std::ffi::OsString {
    let mut name = db.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    if let Some(suffix) = ext.strip_prefix("db") {
        name.push(suffix);
    }
    name
}

/// The header every SQLite database file starts with.
const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

/// The database's directory exists, and neither the database nor its WAL, shared-memory and
/// journal files is a link or a FIFO (a cache in `.beads/` is in a work tree a clone controls;
/// the lock is opened with O_NOFOLLOW when taken).
fn prepare_files(db: &Path) -> Result<()> {
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    for ext in ["db", "db-wal", "db-shm", "db-journal"] {
        crate::safe_fs::refuse_non_regular(&db.with_file_name(sidecar_name(db, ext)))?;
    }
    Ok(())
}

/// The database path may name any file: never open (and so never "repair" or replace) a file
/// that is not a SQLite database. A missing or empty file is fine (SQLite creates the database
/// in it).
fn refuse_foreign_file(db: &Path) -> Result<(), Error> {
    let Some(mut file) = crate::safe_fs::open_regular(db).map_err(anyhow::Error::from)? else { return Ok(()) };
    let mut head = [0u8; 16];
    let n = std::io::Read::read(&mut file, &mut head).unwrap_or(0);
    if n == 0 || head[..n] == *SQLITE_HEADER {
        return Ok(());
    }
    Err(Error::NotADatabase { db: db.to_path_buf() })
}

/// `path`, or `path.1`, `path.2`, ... whichever does not exist yet (backups never overwrite
/// each other).
fn unused_path(path: &Path) -> PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    // Ends: a directory holds finitely many names.
    #[allow(clippy::maybe_infinite_iter)]
    let free = (1..).map(|n| PathBuf::from(format!("{}.{n}", path.display()))).find(|p| !p.exists());
    free.expect("some suffix is free")
}

/// Opening the database failed at `step` (`opening`, `reading`) of `path`.
#[derive(Debug, thiserror::Error)]
#[error("{step} {}", path.display())]
struct ConnectionError {
    step: &'static str,
    path: PathBuf,
    #[source]
    source: rusqlite::Error,
}

impl ConnectionError {
    /// A damaged file, or not a database at all: the cache is rebuilt from the issues file.
    fn is_corrupt(&self) -> bool {
        matches!(
            &self.source,
            rusqlite::Error::SqliteFailure(f, _)
                if matches!(f.code, rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
        )
    }
}

fn open_connection(path: &Path, timeout: Duration) -> Result<Connection, ConnectionError> {
    use rusqlite::OpenFlags;
    let at = |step: &'static str| move |source| ConnectionError { step, path: path.to_path_buf(), source };
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags).map_err(at("opening"))?;
    conn.busy_timeout(timeout).map_err(at("opening"))?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF; PRAGMA cache_size = -65536;")
        .map_err(at("opening"))?;
    // A corrupt file often opens fine and fails on first read.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)).map_err(at("reading"))?;
    Ok(conn)
}

fn take_lock(db: &Path, timeout: Duration, notice: fn(&Notice)) -> Result<fs::File> {
    let path = db.with_extension("db.lock");
    let file = crate::safe_fs::open_for_update(&path).with_context(|| format!("opening the lock {}", path.display()))?;
    let start = Instant::now();
    let mut told = false;
    loop {
        match file.try_lock() {
            Ok(()) => {
                // Say who we are, for whoever waits next.
                let _ = file.set_len(0);
                let _ = std::io::Write::write_all(&mut &file, holder_description().as_bytes());
                return Ok(file);
            }
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < timeout => {
                if !told && start.elapsed() >= Duration::from_secs(1) {
                    told = true;
                    notice(&Notice::Waiting { lock: path.clone(), holder: lock_holder(&path) });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(fs::TryLockError::WouldBlock) => bail!(
                "gave up after {} s waiting for {}, held by {}; nothing was written",
                timeout.as_secs_f64(),
                path.display(),
                lock_holder(&path)
            ),
            Err(fs::TryLockError::Error(e)) => return Err(e).with_context(|| format!("locking {}", path.display())),
        }
    }
}

/// `pid N: the command line`, written into the lock file by whoever holds it.
fn holder_description() -> String {
    let args: Vec<String> = std::env::args().map(|a| if a.contains(' ') { format!("{a:?}") } else { a }).collect();
    format!("pid {}: {}\n", std::process::id(), args.join(" "))
}

/// Who holds the lock, as its holder wrote it.
fn lock_holder(path: &Path) -> String {
    match crate::safe_fs::read_regular(path, 4096) {
        Ok(Some(text)) if !String::from_utf8_lossy(&text).trim().is_empty() => {
            crate::record::printable(String::from_utf8_lossy(&text).trim(), 400)
        }
        _ => "another process".to_owned(),
    }
}

/// Runs `body` inside one transaction with the dirty-marking triggers silenced. The guard's row is
/// the transaction's first write, so a database another writer holds past the busy timeout fails
/// here, as the `rusqlite::Error` that `E` sorts (into [`Error::Busy`] for [`Error`]).
pub(crate) fn with_guard<T, E: From<rusqlite::Error>>(
    conn: &mut Connection,
    body: impl FnOnce(&Transaction<'_>) -> Result<T, E>,
) -> Result<T, E> {
    let tx = conn.transaction()?;
    tx.execute("INSERT INTO sync_guard VALUES (1)", [])?;
    let out = body(&tx)?;
    tx.execute("DELETE FROM sync_guard", [])?;
    tx.commit()?;
    Ok(out)
}

/// xxh3-64 of a line, as SQLite stores it.
pub fn line_hash(bytes: &[u8]) -> i64 {
    xxhash_rust::xxh3::xxh3_64(bytes) as i64
}

//! Whether the issues file changed since the cache last synced with it.
//!
//! Every command that answers from the cache (ready, blocked, show, export) first asks this, so
//! it must be cheap when nothing changed: a stat (size, inode, nanosecond mtime) compared with
//! what the last import or export recorded in `meta`, then, only if the stat differs, one xxh3 of
//! the whole file. Kept apart from import and export, which both record and consult it.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{params, Transaction};

use super::Cache;

/// The file facts kept in `meta` to tell whether it changed.
#[derive(Debug, PartialEq, Eq)]
struct FileStamp {
    size: i64,
    mtime_ns: i64,
    inode: i64,
}

fn stamp(path: &Path) -> Result<FileStamp> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    let mtime_ns =
        meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos() as i64).unwrap_or(0);
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta) as i64;
    #[cfg(not(unix))]
    let inode = 0;
    Ok(FileStamp { size: meta.len() as i64, mtime_ns, inode })
}

fn stored_stamp(cache: &Cache) -> Result<Option<(FileStamp, String, i64)>> {
    let get = |k: &str| -> Result<Option<rusqlite::types::Value>> { cache.meta(k) };
    let int = |v: Option<rusqlite::types::Value>| match v {
        Some(rusqlite::types::Value::Integer(i)) => Some(i),
        _ => None,
    };
    let path = match get("file_path")? {
        Some(rusqlite::types::Value::Text(p)) => p,
        _ => return Ok(None),
    };
    let (Some(size), Some(mtime_ns), Some(inode), Some(hash)) =
        (int(get("file_size")?), int(get("file_mtime_ns")?), int(get("file_inode")?), int(get("file_hash")?))
    else {
        return Ok(None);
    };
    Ok(Some((FileStamp { size, mtime_ns, inode }, path, hash)))
}

/// Records the file's current state as "in sync".
pub(crate) fn record_file_state(tx: &Transaction<'_>, path: &Path, content_hash: i64) -> Result<()> {
    let s = stamp(path)?;
    let mut st = tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?;
    st.execute(params!["file_path", path.display().to_string()])?;
    st.execute(params!["file_size", s.size])?;
    st.execute(params!["file_mtime_ns", s.mtime_ns])?;
    st.execute(params!["file_inode", s.inode])?;
    st.execute(params!["file_hash", content_hash])?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    st.execute(params!["synced_at_unix", now])?;
    Ok(())
}

/// How the file compares with what the cache last synced with.
pub(crate) enum Freshness {
    /// Same path, size, inode and mtime: not even read.
    SameStamp,
    /// Touched, but the same bytes (its hash matches).
    SameContent { hash: i64 },
    /// Different bytes, another file, or never synced.
    Changed,
}

/// The stamp and hash recorded for the cache's file (`None`: never synced with it).
fn stored_for_file(cache: &Cache) -> Result<Option<(FileStamp, i64)>> {
    let path = cache.paths.file.display().to_string();
    Ok(stored_stamp(cache)?.filter(|(_, p, _)| *p == path).map(|(s, _, h)| (s, h)))
}

fn same_stamp(cache: &Cache, stored: Option<&(FileStamp, i64)>) -> bool {
    stored.is_some_and(|(s, _)| *s == stamp(&cache.paths.file).unwrap_or(FileStamp { size: -1, mtime_ns: 0, inode: 0 }))
}

/// True when the file's size, inode and mtime are those of the last sync: a stat, no read.
pub(crate) fn stamp_unchanged(cache: &Cache) -> Result<bool> {
    Ok(same_stamp(cache, stored_for_file(cache)?.as_ref()))
}

/// Compares the file with the last sync: stat first, then the whole-file hash.
pub(crate) fn freshness(cache: &Cache) -> Result<Freshness> {
    let path = &cache.paths.file;
    let stored = stored_for_file(cache)?;
    if same_stamp(cache, stored.as_ref()) {
        return Ok(Freshness::SameStamp);
    }
    let Some((_, stored_hash)) = stored else { return Ok(Freshness::Changed) };
    let hash = file_hash(path)?;
    Ok(if hash == stored_hash { Freshness::SameContent { hash } } else { Freshness::Changed })
}

/// xxh3 of a whole file, read in blocks (never held at once).
fn file_hash(path: &Path) -> Result<i64> {
    let mut file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
    let mut buf = vec![0; 1 << 20];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf).with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            return Ok(hasher.digest() as i64);
        }
        hasher.update(&buf[..n]);
    }
}

/// True when the file differs from what the cache last synced with.
pub fn file_changed_since_sync(cache: &Cache) -> Result<bool> {
    Ok(matches!(freshness(cache)?, Freshness::Changed))
}

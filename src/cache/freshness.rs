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
use crate::safe_fs::Identity;

/// The file facts kept in `meta` to tell whether it changed.
#[derive(Debug, PartialEq, Eq)]
struct FileFacts {
    size: i64,
    mtime_ns: i64,
    inode: i64,
}

impl FileFacts {
    fn of(id: Identity) -> FileFacts {
        FileFacts { size: id.size as i64, mtime_ns: id.mtime_ns, inode: id.ino as i64 }
    }
}

/// The facts of the file at `path` now, by `lstat` (a link is not followed).
fn facts_now(path: &Path) -> Option<FileFacts> {
    Identity::at(path).map(FileFacts::of)
}

fn stored_facts(cache: &Cache) -> Result<Option<(FileFacts, String, i64)>> {
    let get = |k: &str| -> Result<Option<rusqlite::types::Value>> { cache.meta(k) };
    let int = |v: Option<rusqlite::types::Value>| match v {
        Some(rusqlite::types::Value::Integer(i)) => Some(i),
        _ => None,
    };
    let Some(rusqlite::types::Value::Text(path)) = get("file_path")? else {
        return Ok(None);
    };
    let (Some(size), Some(mtime_ns), Some(inode), Some(hash)) =
        (int(get("file_size")?), int(get("file_mtime_ns")?), int(get("file_inode")?), int(get("file_hash")?))
    else {
        return Ok(None);
    };
    Ok(Some((FileFacts { size, mtime_ns, inode }, path, hash)))
}

/// Records, as "in sync", the version of the file that was read or written: `identity` comes
/// from the descriptor that read or wrote the bytes hashed as `content_hash`, never from a later
/// look at the path (another writer may have renamed a new file over it since).
pub(crate) fn record_file_state(tx: &Transaction<'_>, path: &Path, identity: Identity, content_hash: i64) -> Result<()> {
    let s = FileFacts::of(identity);
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
    SameFacts,
    /// Touched, but the same bytes (its hash matches).
    SameContent,
    /// Different bytes, another file, or never synced.
    Changed,
}

/// The facts and hash recorded for the cache's file (`None`: never synced with it).
fn stored_for_file(cache: &Cache) -> Result<Option<(FileFacts, i64)>> {
    let path = cache.paths.file.display().to_string();
    Ok(stored_facts(cache)?.filter(|(_, p, _)| *p == path).map(|(s, _, h)| (s, h)))
}

fn same_facts(cache: &Cache, stored: Option<&(FileFacts, i64)>) -> bool {
    stored.is_some_and(|(s, _)| Some(s) == facts_now(&cache.paths.file).as_ref())
}

/// The whole-file hash recorded at the last sync with the cache's file (`None`: never synced).
pub(crate) fn stored_hash(cache: &Cache) -> Result<Option<i64>> {
    Ok(stored_for_file(cache)?.map(|(_, h)| h))
}

/// True when the file's size, inode and mtime are those of the last sync: a stat, no read.
pub(crate) fn facts_unchanged(cache: &Cache) -> Result<bool> {
    Ok(same_facts(cache, stored_for_file(cache)?.as_ref()))
}

/// Compares the file with the last sync: stat first, then the whole-file hash.
pub(crate) fn freshness(cache: &Cache) -> Result<Freshness> {
    let path = &cache.paths.file;
    let stored = stored_for_file(cache)?;
    if same_facts(cache, stored.as_ref()) {
        return Ok(Freshness::SameFacts);
    }
    let Some((_, stored_hash)) = stored else { return Ok(Freshness::Changed) };
    Ok(match file_hash(path)? {
        Some((hash, _)) if hash == stored_hash => Freshness::SameContent,
        _ => Freshness::Changed,
    })
}

/// xxh3 of a whole file, read in blocks (never held at once), with the identity of the version
/// read; `None` when the file changed while it was read (or is gone).
fn file_hash(path: &Path) -> Result<Option<(i64, Identity)>> {
    let Some(mut file) = crate::safe_fs::open_regular(path)? else { return Ok(None) };
    let before = Identity::of(&file.metadata().with_context(|| format!("reading {}", path.display()))?);
    let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
    let mut buf = vec![0; 1 << 20];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf).with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let after = Identity::of(&file.metadata().with_context(|| format!("reading {}", path.display()))?);
    Ok((before == after).then(|| (hasher.digest() as i64, before)))
}

/// True when `identity` (of a file just opened) is the version the cache last synced with.
pub(crate) fn is_recorded(cache: &Cache, identity: Identity) -> Result<bool> {
    Ok(stored_for_file(cache)?.is_some_and(|(s, _)| s == FileFacts::of(identity)))
}

/// True when the file differs from what the cache last synced with.
pub fn file_changed_since_sync(cache: &Cache) -> Result<bool> {
    Ok(matches!(freshness(cache)?, Freshness::Changed))
}

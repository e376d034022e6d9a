//! Replacing a file atomically, the one way the crate does it: a temporary file beside the target
//! (named and swept by [`super::temp_files`]), fsync when the content is the user's, then a rename
//! (an exchange for git's `%A`, a checked replace when another writer may race).

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::temp_files;

/// Whether a write must reach the disk before the rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync the temporary file before renaming it (user files).
    Fsync,
    /// Skip the fsync: the target is a scratch file its reader opens at once.
    Scratch,
    /// Git's `%A`: a scratch file git reads back and removes as soon as the driver exits. No
    /// fsync, and replaced by an exchange (see [`exchange`]).
    GitScratch,
}

/// Writes `content` to `path` atomically: a temporary file in the same directory, fsync, then
/// rename over the target. An existing file's permissions are kept. A target that exists but is
/// not a regular file (`/dev/null`, a FIFO) is written in place, never replaced.
pub fn write_atomic(path: &Path, content: &[u8]) -> Result<()> {
    write_atomic_with(path, Durability::Fsync, |w| w.write_all(content))
}

/// Like [`write_atomic`], with the content produced by a writer callback (no buffer of the whole
/// file needed).
pub fn write_atomic_with(path: &Path, durability: Durability, produce: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    // A rename over a symbolic link to a file would replace the link with a copy and leave its
    // target as it was: the link is refused, naming it, and nothing is written.
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) && fs::metadata(path).is_ok_and(|m| m.is_file()) {
        bail!("{} is a symbolic link: not replaced (write the file it points to, or replace the link with the file)", path.display());
    }
    if let Ok(meta) = fs::metadata(path) {
        if !meta.is_file() {
            let mut f = fs::OpenOptions::new().write(true).open(path).with_context(|| format!("opening {}", path.display()))?;
            return produce(&mut f).with_context(|| format!("writing {}", path.display()));
        }
    }
    let tmp = write_temp_beside(path, durability, produce)?;
    if durability == Durability::GitScratch && exchange(tmp.path(), path) {
        // The temporary file's name now holds the old content: dropping it removes that.
        return Ok(());
    }
    tmp.persist(path).with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}

/// Swaps two files in one step (`renameat2` with `RENAME_EXCHANGE`); false where the system or
/// the file system cannot, or either is missing. A scratch file replaced this way is never
/// missing or half-written, like with a rename, but ext4 does not first write back the new
/// content, as it does for a rename over a file (its `auto_da_alloc`): for git's 118 MB `%A`
/// that was 75 ms of a 400 ms merge, against the 26 ms of removing the old content after.
fn exchange(new: &Path, target: &Path) -> bool {
    if !crate::platform::linux_calls() {
        return false;
    }
    let identity = |path: &Path| fs::symlink_metadata(path).ok().filter(fs::Metadata::is_file).map(|m| crate::safe_fs::Identity::of(&m));
    let Some(old) = identity(target) else { return false };
    if crate::safe_fs::exchange(new, target).is_err() {
        return false;
    }
    // Another process may have put something else at the target between the look and the
    // swap (a directory, say): swap it back, and let the rename decide as before.
    if identity(new) != Some(old) {
        return crate::safe_fs::exchange(new, target).is_err();
    }
    true
}

/// Writes a new version of `path` through a temporary file beside it, and moves it in place only
/// if the file at `path` is still the version `expected` (`None`: no file) that the content was
/// made from (see [`crate::safe_fs::replace_if_unchanged`]). Returns the identity of the file
/// written, or `None` when another writer replaced or changed the file meanwhile (then nothing
/// was changed). The file's permissions are kept; the write is fsynced.
pub fn write_atomic_if_unchanged(
    path: &Path,
    expected: Option<crate::safe_fs::Identity>,
    produce: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<Option<crate::safe_fs::Identity>> {
    let tmp = write_temp_beside(path, Durability::Fsync, produce)?;
    let written = crate::safe_fs::Identity::of(&tmp.as_file().metadata().with_context(|| format!("reading {}", tmp.path().display()))?);
    let tmp = tmp.into_temp_path();
    match crate::safe_fs::replace_if_unchanged(&tmp, path, expected).with_context(|| format!("replacing {}", path.display()))? {
        crate::safe_fs::Replaced::Done => Ok(Some(written)),
        crate::safe_fs::Replaced::Raced => Ok(None),
    }
}

/// Writes the content to a new temporary file in `path`'s directory, with the permissions of
/// the regular file at `path` (a new file's: 0666 less the umask, not the temporary file's
/// private 0600), synced when asked; the caller moves it in place.
fn write_temp_beside(
    path: &Path,
    durability: Durability,
    produce: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    temp_files::sweep(dir);
    temp_files::ignore_in_git(dir);
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_files::prefix())
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        produce(&mut w).and_then(|()| w.flush()).with_context(|| format!("writing {}", path.display()))?;
    }
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {
            fs::set_permissions(tmp.path(), meta.permissions()).with_context(|| format!("copying permissions of {}", path.display()))?;
        }
        _ => set_new_file_mode(tmp.path())?,
    }
    if durability == Durability::Fsync {
        tmp.as_file().sync_all().with_context(|| format!("syncing {}", tmp.path().display()))?;
    }
    Ok(tmp)
}

/// Gives a new file the mode a plain create would (0666 less the umask) rather than the temporary
/// file's 0600. Not under the portable switch: a private issues file would break Linux. Elsewhere
/// than unix a file has no mode (its directory's access rules apply).
#[cfg(unix)]
fn set_new_file_mode(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: umask(2) cannot fail; it is set back at once (reading it needs a write).
    let mask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    // mode_t is u32 on Linux and u16 on macOS.
    #[allow(clippy::useless_conversion)]
    let mode = 0o666 & !u32::from(mask);
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).with_context(|| format!("setting the mode of {}", path.display()))
}

#[cfg(not(unix))]
fn set_new_file_mode(_: &Path) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_file_is_replaced_whole_with_its_mode_and_nothing_left_beside_it() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().expect("tmp");
        let target = dir.path().join("scratch.jsonl");
        fs::write(&target, "old\n".repeat(100_000)).expect("write");
        fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).expect("chmod");
        let before = fs::metadata(&target).expect("meta").ino();
        write_atomic_with(&target, Durability::GitScratch, |w| w.write_all(b"new\n")).expect("replace");
        assert_eq!(fs::read(&target).expect("read"), b"new\n");
        assert_eq!(fs::metadata(&target).expect("meta").permissions().mode() & 0o777, 0o640);
        assert_ne!(fs::metadata(&target).expect("meta").ino(), before, "a new file, not the old one rewritten");
        let names: Vec<_> = fs::read_dir(dir.path()).expect("list").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names, [std::ffi::OsString::from("scratch.jsonl")], "the old content is gone with its temporary name");
        // A missing target is created.
        let fresh = dir.path().join("fresh.jsonl");
        write_atomic_with(&fresh, Durability::GitScratch, |w| w.write_all(b"x\n")).expect("create");
        assert_eq!(fs::read(&fresh).expect("read"), b"x\n");
    }

    #[test]
    fn regression_atomic_write_never_replaces_a_device() {
        write_atomic(Path::new("/dev/null"), b"x").expect("test input is valid");
        assert!(!fs::metadata("/dev/null").expect("test input is valid").is_file());
        let dir = tempfile::tempdir().expect("test input is valid");
        let target = dir.path().join("f.jsonl");
        fs::write(&target, b"old").expect("test input is valid");
        write_atomic(&target, b"new").expect("test input is valid");
        assert_eq!(fs::read(&target).expect("test input is valid"), b"new");
        assert_eq!(fs::read_dir(dir.path()).expect("test input is valid").count(), 1, "no temporary file left behind");
    }
}

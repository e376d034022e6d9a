//! Opening the files we manage as if the repository were hostile, and replacing a file only if
//! nobody else replaced it first.
//!
//! A clone of someone else's project can commit a symlink where we expect `.gitattributes`, a
//! hook, a manager's config or the issues file, pointing at a secret or at a file of the user's
//! to overwrite; it can commit a FIFO or a link to `/dev/zero` to hang or exhaust a reader. So
//! every file we manage is opened here: without following a final symlink (`O_NOFOLLOW`), without
//! blocking on a FIFO (`O_NONBLOCK`), accepted only when it is a regular file, and read with a
//! size bound. Other programs (br, bd) flush the issues file by renaming a temporary file over
//! it at any moment; [`replace_if_unchanged`] swaps our new file in only when the file at the
//! path is still the one we read, so another writer's change is never overwritten silently.
//!
//! Every file the crate writes whole is replaced through [`write_atomic`] and its variants
//! (`atomic`): one implementation of the temporary file, the fsync and the rename.
//!
//! Files we only read but do not manage (a watched file, a token file, a pipe from another
//! program) go through [`bounded`]: the same refusals, following a symlink to a regular file.

mod atomic;
pub mod bounded;
pub mod temp_files;

pub use atomic::{write_atomic, write_atomic_if_unchanged, write_atomic_with, Durability};

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a file we manage was not opened.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The path is a symbolic link we did not create.
    #[error(
        "{} is a symbolic link (to {}); beads-git does not follow links it did not create, since a cloned \
         repository could point one at any file: replace the link with a regular file",
        path.display(),
        target.display()
    )]
    Symlink {
        /// The link.
        path: PathBuf,
        /// Where it points, as written in the link.
        target: PathBuf,
    },
    /// A directory we manage (`.beads`, `<git dir>/beads` and what is under it) is a symbolic
    /// link: a clone can commit `.beads` as a link to another checkout's.
    #[error(
        "{} is a symbolic link (to {}); beads-git does not follow links it did not create to the directories it \
         manages, since a cloned repository could point one at another project's: replace the link with a directory",
        path.display(),
        target.display()
    )]
    LinkedDir {
        /// The link.
        path: PathBuf,
        /// Where it points, as written in the link.
        target: PathBuf,
    },
    /// A directory we manage is a file, FIFO, socket or device.
    #[error("{} is a {kind}, not a directory; move it aside and run the command again", path.display())]
    NotDirectory {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The path is a directory, FIFO, socket or device.
    #[error("{} is a {kind}, not a regular file; beads-git reads and writes regular files only", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The file is larger than what this kind of file can sensibly be.
    #[error("{} is larger than {} MiB, far more than such a file holds; refusing to read it", path.display(), limit >> 20)]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// The bound, in bytes.
        limit: u64,
    },
    /// Any other I/O error.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The bound for small text files we manage (attributes, hook files, managers' configs,
/// `install.json`): far above any real one.
pub const SMALL_FILE_LIMIT: u64 = 16 << 20;

/// What a file type is, as a message names it ("FIFO", "directory", "device", ...).
pub fn kind_of(ft: fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "FIFO";
        }
        if ft.is_socket() {
            return "socket";
        }
        if ft.is_char_device() || ft.is_block_device() {
            return "device";
        }
    }
    if ft.is_dir() {
        "directory"
    } else if ft.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

fn io(path: &Path, source: std::io::Error) -> FileError {
    FileError::Io { path: path.to_path_buf(), source }
}

/// Fails when `path` is a symbolic link (a missing path is fine).
pub fn refuse_symlink(path: &Path) -> Result<(), FileError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            Err(FileError::Symlink { path: path.to_path_buf(), target: fs::read_link(path).unwrap_or_default() })
        }
        _ => Ok(()),
    }
}

/// Fails when `dir` is a symbolic link or something other than a directory (a missing path is
/// fine): `.beads` in a work tree, which a clone can commit as a link to another checkout's.
pub fn refuse_linked_dir(dir: &Path) -> Result<(), FileError> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => {
            Err(FileError::LinkedDir { path: dir.to_path_buf(), target: fs::read_link(dir).unwrap_or_default() })
        }
        Ok(m) if !m.is_dir() => Err(FileError::NotDirectory { path: dir.to_path_buf(), kind: kind_of(m.file_type()) }),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(dir, e)),
    }
}

/// `root/parts...`, a directory we manage under a root we trust (`<git dir>` + `beads`,
/// `since-last`): each component created when missing, and refused, never followed, when it is a
/// symbolic link or not a directory. The root itself must exist.
pub fn managed_dir(root: &Path, parts: &[&str]) -> Result<PathBuf, FileError> {
    let mut dir = root.to_path_buf();
    for part in parts {
        dir.push(part);
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => refuse_linked_dir(&dir)?,
            Err(e) => return Err(io(&dir, e)),
        }
    }
    Ok(dir)
}

/// Fails when `path` exists and is not a regular file (a symlink, a FIFO, a device, ...).
pub fn refuse_non_regular(path: &Path) -> Result<(), FileError> {
    refuse_symlink(path)?;
    match fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => Err(FileError::NotRegular { path: path.to_path_buf(), kind: kind_of(m.file_type()) }),
        _ => Ok(()),
    }
}

/// Makes `options` open `path` without following a final symbolic link and without waiting on a
/// FIFO. On unix the open itself refuses the link (`O_NOFOLLOW`); elsewhere (and under the
/// portable switch) a look just before the open refuses it, which leaves a moment in which
/// another process could put a link there.
pub fn no_follow(options: &mut fs::OpenOptions, path: &Path) -> Result<(), FileError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let follow = if crate::platform::unix_calls() { libc::O_NOFOLLOW } else { 0 };
        options.custom_flags(follow | libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    if !crate::platform::unix_calls() {
        refuse_symlink(path)?;
    }
    let _ = options;
    Ok(())
}

/// Opens a regular file for reading without following a final symlink and without blocking on a
/// FIFO. `Ok(None)` when it does not exist.
pub fn open_regular(path: &Path) -> Result<Option<File>, FileError> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    no_follow(&mut options, path)?;
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            // ELOOP (Linux) / EMLINK (some BSDs): the final component is a link.
            refuse_symlink(path)?;
            return Err(io(path, e));
        }
    };
    let meta = file.metadata().map_err(|e| io(path, e))?;
    if !meta.is_file() {
        return Err(FileError::NotRegular { path: path.to_path_buf(), kind: kind_of(meta.file_type()) });
    }
    Ok(Some(file))
}

/// [`open_regular`] for a file that must exist: its absence is an error that says so ("No such
/// file or directory", as the system words it), never a bare "entity not found".
pub fn open_existing(path: &Path) -> Result<File, FileError> {
    open_regular(path)?.ok_or_else(|| io(path, std::io::Error::from_raw_os_error(NOT_FOUND)))
}

/// The system's error number for a missing file (the same on every system this builds for).
const NOT_FOUND: i32 = 2;

/// Reads a whole regular file of at most `limit` bytes; `Ok(None)` when it does not exist.
pub fn read_regular(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, FileError> {
    let Some(file) = open_regular(path)? else { return Ok(None) };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > limit {
        return Err(FileError::TooLarge { path: path.to_path_buf(), limit });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // A file growing while we read is still bounded.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge { path: path.to_path_buf(), limit });
    }
    Ok(Some(bytes))
}

/// Opens (creating it, mode 0644 less the umask) a file we write in place, such as a lock file:
/// never through a symlink, never a FIFO or device.
pub fn open_for_update(path: &Path) -> Result<File, FileError> {
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
    no_follow(&mut options, path)?;
    let file = options.open(path).map_err(|e| {
        if let Err(link) = refuse_non_regular(path) {
            return link;
        }
        io(path, e)
    })?;
    let meta = file.metadata().map_err(|e| io(path, e))?;
    if !meta.is_file() {
        return Err(FileError::NotRegular { path: path.to_path_buf(), kind: kind_of(meta.file_type()) });
    }
    Ok(file)
}

/// What identifies one version of a file: the inode it lives in, and its size and modification
/// time (an in-place write changes those).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// Device number.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
}

impl Identity {
    /// The identity of what `meta` describes.
    pub fn of(meta: &fs::Metadata) -> Identity {
        let mtime_ns =
            meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos() as i64).unwrap_or(0);
        // Elsewhere than unix a file has no inode number here: a replaced file is told apart by
        // its size and modification time alone.
        let (dev, ino) = inode(meta).unwrap_or((0, 0));
        Identity { dev, ino, size: meta.len(), mtime_ns }
    }

    /// The identity of the file at `path` now (not following a final symlink); `None` if absent.
    pub fn at(path: &Path) -> Option<Identity> {
        fs::symlink_metadata(path).ok().map(|m| Identity::of(&m))
    }
}

/// The device and inode numbers, where the system has them.
fn inode(meta: &fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    if crate::platform::unix_calls() {
        use std::os::unix::fs::MetadataExt;
        return Some((meta.dev(), meta.ino()));
    }
    let _ = meta;
    None
}

/// Whether [`replace_if_unchanged`] put the new file in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// The new file is at the path.
    Done,
    /// Another writer had replaced or changed the file since it was read: nothing was changed,
    /// their file is at the path.
    Raced,
}

/// Moves `new` over `path` only if the file at `path` is still `expected` (`None`: there was no
/// file). On Linux the check is exact: the two files are exchanged atomically, the one swapped
/// out is checked, and swapped back if it was not the one we read, so another writer's rename at
/// any moment is never lost. Elsewhere (and on a file system without the exchange) the check runs
/// immediately before the rename.
pub fn replace_if_unchanged(new: &Path, path: &Path, expected: Option<Identity>) -> std::io::Result<Replaced> {
    let Some(expected) = expected else {
        if Identity::at(path).is_some() {
            return Ok(Replaced::Raced);
        }
        fs::rename(new, path)?;
        return Ok(Replaced::Done);
    };
    if Identity::at(path) != Some(expected) {
        return Ok(Replaced::Raced);
    }
    if crate::platform::linux_calls() {
        match exchange(new, path) {
            Ok(()) => {
                // `new` now names the file that was at `path`.
                if Identity::at(new).is_some_and(|id| id == expected) {
                    return Ok(Replaced::Done);
                }
                exchange(new, path)?;
                return Ok(Replaced::Raced);
            }
            // A file system without RENAME_EXCHANGE: the plain rename below.
            Err(e) if exchange_unsupported(&e) => {}
            Err(e) => return Err(e),
        }
    }
    fs::rename(new, path)?;
    Ok(Replaced::Done)
}

/// Swaps two paths in one step (`renameat2` with `RENAME_EXCHANGE`). Elsewhere than Linux, and
/// under the portable switch, an `Unsupported` error the callers take as "rename instead".
pub(crate) fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if crate::platform::linux_calls() {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let ca = CString::new(a.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
        let cb = CString::new(b.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
        // SAFETY: both paths are valid NUL-terminated strings that outlive the call.
        let rc =
            unsafe { libc::syscall(libc::SYS_renameat2, libc::AT_FDCWD, ca.as_ptr(), libc::AT_FDCWD, cb.as_ptr(), libc::RENAME_EXCHANGE) };
        return if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) };
    }
    let _ = (a, b);
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Whether an [`exchange`] failed only because the system or the file system cannot swap.
fn exchange_unsupported(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)) {
        return true;
    }
    e.kind() == std::io::ErrorKind::Unsupported
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file removed between two looks (git writes a merged file by removing it first) is
    /// said to be missing in the system's words; it was "entity not found" before.
    #[test]
    fn regression_a_missing_file_was_entity_not_found() {
        let dir = tempfile::tempdir().expect("tmp");
        let said = open_existing(&dir.path().join("issues.jsonl")).expect_err("missing").to_string();
        assert!(said.contains("issues.jsonl") && said.contains("No such file or directory"), "{said}");
    }

    #[test]
    fn links_fifos_and_devices_are_refused_by_name() {
        let dir = tempfile::tempdir().expect("tmp");
        let target = dir.path().join("target");
        fs::write(&target, "secret").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        let err = read_regular(&link, 100).expect_err("a link is refused");
        assert!(matches!(err, FileError::Symlink { .. }), "{err}");
        assert!(err.to_string().contains("link"), "{err}");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
        assert!(matches!(read_regular(&zero, 100), Err(FileError::Symlink { .. })));
        assert!(matches!(read_regular(Path::new("/dev/zero"), 100), Err(FileError::NotRegular { kind: "device", .. })));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("c string");
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert!(matches!(read_regular(&fifo, 100), Err(FileError::NotRegular { kind: "FIFO", .. })));
        assert!(matches!(open_for_update(&fifo), Err(FileError::NotRegular { .. })));
        assert!(matches!(open_for_update(&link), Err(FileError::Symlink { .. })));
        assert_eq!(fs::read_to_string(&target).expect("read"), "secret");
        assert!(matches!(read_regular(&target, 3), Err(FileError::TooLarge { .. })));
        assert_eq!(read_regular(&dir.path().join("absent"), 3).expect("absent is fine"), None);
    }

    #[test]
    fn a_file_replaced_by_another_writer_is_never_overwritten() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("issues.jsonl");
        fs::write(&path, "old").expect("write");
        let read = Identity::at(&path);
        // Another writer renames its file over ours after we read.
        let theirs = dir.path().join("theirs");
        fs::write(&theirs, "theirs").expect("write");
        fs::rename(&theirs, &path).expect("rename");
        let ours = dir.path().join("ours");
        fs::write(&ours, "ours").expect("write");
        assert_eq!(replace_if_unchanged(&ours, &path, read).expect("no I/O error"), Replaced::Raced);
        assert_eq!(fs::read_to_string(&path).expect("read"), "theirs");
        assert_eq!(fs::read_to_string(&ours).expect("read"), "ours", "ours stays where it was");
        let read = Identity::at(&path);
        assert_eq!(replace_if_unchanged(&ours, &path, read).expect("no I/O error"), Replaced::Done);
        assert_eq!(fs::read_to_string(&path).expect("read"), "ours");
    }
}

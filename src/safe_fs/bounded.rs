//! Reading a file that someone else controls, without letting it take the process down.
//!
//! The notifier reads files a branch can commit or a tool can swap in at any time: the issues
//! file it watches, a token file. A plain `std::fs::read` follows a symlink to `/dev/zero` and
//! allocates until the kernel kills the process, and blocks forever opening a FIFO. Here the file
//! is opened without blocking, must be a regular file once open (a symlink to a regular file is
//! fine; to a device, FIFO or socket it is an error), and is read up to a limit: a larger file is
//! an error that names the limit, never an allocation of whatever size the file claims.

use std::io::Read;
use std::path::Path;

/// Why a bounded read failed.
#[derive(Debug, thiserror::Error)]
pub enum SafeReadError {
    /// The file does not exist (or a symlink points nowhere).
    #[error("no such file")]
    NotFound,
    /// It is a device, FIFO, socket or directory.
    #[error("not a regular file (a {0}); replace it with the issues file itself")]
    NotRegular(&'static str),
    /// It holds more than the limit.
    #[error("larger than the {} MiB this reads at most", .0 >> 20)]
    TooLarge(u64),
    /// Any other I/O error.
    #[error("{0}")]
    Io(std::io::Error),
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_char_device() {
            return "character device";
        }
        if t.is_block_device() {
            return "block device";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    if t.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// Opens `path` for reading without blocking on a FIFO, and checks it is a regular file.
pub fn open_regular(path: &Path) -> Result<std::fs::File, SafeReadError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading blocks until a writer comes; O_NONBLOCK returns at once
        // (and changes nothing for a regular file's reads).
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(SafeReadError::NotFound),
        Err(e) => return Err(SafeReadError::Io(e)),
    };
    let meta = file.metadata().map_err(SafeReadError::Io)?;
    if !meta.is_file() {
        return Err(SafeReadError::NotRegular(kind_of(&meta)));
    }
    Ok(file)
}

/// The whole content of the regular file at `path`, at most `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, SafeReadError> {
    let file = open_regular(path)?;
    let hint = file.metadata().map(|m| m.len()).unwrap_or(0).min(limit);
    read_bounded(file, limit, hint as usize)
}

/// Everything `reader` gives, at most `limit` bytes (one more is an error, not a bigger buffer).
pub fn read_bounded(reader: impl Read, limit: u64, capacity: usize) -> Result<Vec<u8>, SafeReadError> {
    let mut out = Vec::with_capacity(capacity);
    reader.take(limit.saturating_add(1)).read_to_end(&mut out).map_err(SafeReadError::Io)?;
    if out.len() as u64 > limit {
        return Err(SafeReadError::TooLarge(limit));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_and_a_symlink_to_one() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("f");
        std::fs::write(&file, b"abc").expect("write");
        assert_eq!(read_regular(&file, 10).expect("read"), b"abc");
        #[cfg(unix)]
        {
            let link = dir.path().join("l");
            std::os::unix::fs::symlink(&file, &link).expect("symlink");
            assert_eq!(read_regular(&link, 10).expect("read"), b"abc");
        }
        assert!(matches!(read_regular(&file, 2), Err(SafeReadError::TooLarge(2))));
        assert!(matches!(read_regular(&dir.path().join("missing"), 2), Err(SafeReadError::NotFound)));
    }

    #[cfg(unix)]
    #[test]
    fn refuses_dev_zero_a_fifo_and_a_directory_without_blocking() {
        let dir = tempfile::tempdir().expect("tmp");
        let link = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
        assert!(matches!(read_regular(&link, 1 << 30), Err(SafeReadError::NotRegular("character device"))));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("cstring");
        // SAFETY: mkfifo(3) with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read_regular(&fifo, 10), Err(SafeReadError::NotRegular("FIFO"))));
        assert!(matches!(read_regular(dir.path(), 10), Err(SafeReadError::NotRegular("directory"))));
    }
}

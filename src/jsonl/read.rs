//! Reading an input file whole: a regular file only, bounded, named in every error.

use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// The largest input file read into memory: issues files are far smaller (1M issues are about a
/// gigabyte), and a bound keeps a huge sparse file from taking the machine's memory.
pub const MAX_INPUT_BYTES: u64 = 4 << 30;

/// Reads a whole input file (a merge input, a file to diff, convert, resolve, dedupe or check),
/// naming it in every error.
///
/// Inputs come from git, from the user and from a repository that may be hostile, so the file
/// must be a regular file (a symlink to one is fine): `/dev/zero`, a FIFO, a socket or a
/// directory is refused without being read (a FIFO is opened non-blocking, so opening it does not
/// wait for a writer). At most the size `stat` gave is read, and no more than
/// [`MAX_INPUT_BYTES`]; memory is reserved first, so a file too large for it is an error, not an
/// abort. The bytes are read, never memory-mapped: a mapped file that another process truncates
/// kills the reader with SIGBUS, and a read of a shrinking file just ends early.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    let name = || crate::record::escaped_path(path);
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).with_context(|| format!("reading {}", name()))?;
    let meta = file.metadata().with_context(|| format!("reading {}", name()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file ({}): an input must be a file", name(), file_kind(&meta));
    }
    if meta.len() > MAX_INPUT_BYTES {
        bail!("{} is {} bytes, more than the {} GiB an input may be", name(), meta.len(), MAX_INPUT_BYTES >> 30);
    }
    let len = meta.len() as usize;
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(|_| anyhow::anyhow!("{}: {len} bytes do not fit in memory", name()))?;
    prefault(&mut bytes);
    std::io::Read::read_to_end(&mut std::io::Read::take(&file, meta.len()), &mut bytes).with_context(|| format!("reading {}", name()))?;
    Ok(bytes)
}

/// Maps in a large buffer's pages in one call before a read fills it, instead of one page fault
/// per 4 KiB page during the read (`MADV_POPULATE_WRITE`, Linux 5.14 and later; a no-op
/// elsewhere). Page faults were a fifth of a 10k-issue merge on a virtual machine; this took
/// 3-6% off the merge's wall time. Transparent huge pages would take more, but a kernel short
/// of free huge pages compacts memory first, and in the benchmark, with git and the page cache
/// churning memory between runs, that doubled the median.
fn prefault(buffer: &mut Vec<u8>) {
    const PAGE: usize = 4096;
    #[cfg(target_os = "linux")]
    if buffer.capacity() >= 64 * PAGE && crate::platform::linux_calls() {
        const MADV_POPULATE_WRITE: libc::c_int = 23;
        let start = (buffer.as_mut_ptr() as usize).next_multiple_of(PAGE);
        let end = (buffer.as_mut_ptr() as usize + buffer.capacity()) / PAGE * PAGE;
        if end > start {
            // SAFETY: the range lies inside the buffer's own allocation; populating maps its
            // pages in, and never changes what they hold.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, MADV_POPULATE_WRITE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (buffer, PAGE);
}

fn file_kind(meta: &fs::Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        } else if t.is_block_device() {
            return "a block device";
        } else if t.is_fifo() {
            return "a FIFO";
        } else if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_an_input_that_is_not_a_regular_file_is_refused_unread() {
        for not_a_file in ["/dev/zero", "/dev/null", "/"] {
            let e = read(Path::new(not_a_file)).expect_err(not_a_file);
            assert!(format!("{e:#}").contains("not a regular file"), "{not_a_file}: {e:#}");
        }
        let dir = tempfile::tempdir().expect("test input is valid");
        fs::write(dir.path().join("f"), b"{\"id\":\"a\"}\n").expect("test input is valid");
        assert_eq!(read(&dir.path().join("f")).expect("a regular file"), b"{\"id\":\"a\"}\n");
    }
}

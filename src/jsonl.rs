//! Reading a JSONL issues file into lines, and writing one back safely.
//!
//! A file is kept as its raw bytes plus the facts needed to write it back the same way: a UTF-8
//! BOM, CRLF or LF line endings, and whether the last line ends with a newline. Lines are byte
//! ranges with their 1-based line numbers, so error messages can name `path:line` and unchanged
//! records are copied without being decoded. There is no line-length limit. Writes go through a
//! temporary file in the same directory, fsync and rename, so a reader never sees half a file.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// The UTF-8 byte order mark.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The directory a beads tracker keeps its files in, at the top of the work tree.
pub const BEADS_DIR: &str = ".beads";

/// The issues file's names inside [`BEADS_DIR`], in the order they are looked for: today's name,
/// then bd's older one. Every place that looks for the issues file uses these.
pub const ISSUES_FILE_NAMES: [&str; 2] = ["issues.jsonl", "beads.jsonl"];

/// [`ISSUES_FILE_NAMES`] as paths from the top of the work tree (what git's attributes and
/// `git show REV:PATH` take).
pub const ISSUES_PATHS: [&str; 2] = [".beads/issues.jsonl", ".beads/beads.jsonl"];

/// How a file ends its lines and starts its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The file starts with a UTF-8 byte order mark.
    pub bom: bool,
    /// Lines end with `\r\n`.
    pub crlf: bool,
    /// The last line ends with a newline.
    pub final_newline: bool,
}

impl Default for Layout {
    fn default() -> Self {
        Layout { bom: false, crlf: false, final_newline: true }
    }
}

/// One non-blank line of a JSONL file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// 1-based line number in the file.
    pub number: usize,
    /// The line's bytes without its line ending.
    pub bytes: &'a [u8],
}

/// A JSONL file split into lines, borrowing the file's bytes.
#[derive(Debug, Clone)]
pub struct Jsonl<'a> {
    /// How the file is laid out.
    pub layout: Layout,
    /// Non-blank lines in file order (blank ones are skipped; their numbers are not reused).
    pub lines: Vec<Line<'a>>,
}

impl<'a> Jsonl<'a> {
    /// Splits file content into lines. Never fails: what a line means is decided later.
    pub fn split(content: &'a [u8]) -> Jsonl<'a> {
        let mut lines = Vec::with_capacity(content.len() / 512 + 1);
        let layout = Jsonl::for_each_line(content, |line| lines.push(line));
        Jsonl { layout, lines }
    }

    /// Hands each non-blank line of file content to `each`, numbered and cut as [`Jsonl::split`]
    /// cuts them, without keeping them; returns the layout.
    pub fn for_each_line(content: &'a [u8], each: impl FnMut(Line<'a>)) -> Layout {
        let bom = content.starts_with(BOM);
        let body = if bom { &content[BOM.len()..] } else { content };
        let (crlf, final_newline) = split_lines(body, 1, each);
        Layout { bom, crlf: crlf.unwrap_or(false), final_newline }
    }
}

/// Appends the non-blank lines of `body` to `lines`, numbering the first `first_number`. Returns
/// whether the first line ended in `\r\n` (`None`: no line ended) and whether the last one ended
/// with a newline.
fn split_lines<'a>(body: &'a [u8], first_number: usize, mut push: impl FnMut(Line<'a>)) -> (Option<bool>, bool) {
    let mut crlf = None;
    let mut start = 0;
    let mut final_newline = body.is_empty();
    for (index, end) in memchr::memchr_iter(b'\n', body).map(Some).chain(std::iter::once(None)).enumerate() {
        let stop = end.unwrap_or(body.len());
        if end.is_none() && start == body.len() {
            final_newline = true;
            break;
        }
        let number = first_number + index;
        let mut line = &body[start..stop];
        if end.is_some() {
            let has_cr = line.last() == Some(&b'\r');
            if crlf.is_none() {
                crlf = Some(has_cr);
            }
            if has_cr {
                line = &line[..line.len() - 1];
            }
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            push(Line { number, bytes: line });
        }
        start = stop + 1;
        if end.is_none() {
            final_newline = false;
        }
    }
    (crlf, final_newline)
}

/// One block of whole lines from [`LineBlocks`].
pub struct Block<'a> {
    /// The block's bytes as read from the file (a leading BOM included), for hashing.
    pub bytes: &'a [u8],
    /// Its non-blank lines, numbered as [`Jsonl::split`] numbers them in the whole file.
    pub lines: Vec<Line<'a>>,
}

/// Reads a file as consecutive blocks of whole lines, so that a file of any size is processed in
/// bounded memory: only one block (about `block_size` bytes, or one longer line) is held at a time.
pub struct LineBlocks {
    path: std::path::PathBuf,
    file: Box<dyn std::io::Read + Send>,
    buf: Vec<u8>,
    block_size: usize,
    /// `buf[..handed_out]` was the previous block; `buf[handed_out..filled]` is read but not yet given.
    handed_out: usize,
    filled: usize,
    next_number: usize,
    first: bool,
    eof: bool,
    layout: Layout,
    crlf: Option<bool>,
}

impl LineBlocks {
    /// Opens `path` for reading in blocks of about `block_size` bytes. It must be a regular
    /// file: a symlink, FIFO or device is refused by name (see [`crate::safe_fs`]).
    pub fn open(path: &Path, block_size: usize) -> Result<LineBlocks> {
        let file = crate::safe_fs::open_regular(path)?
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(LineBlocks::from_file(file, path, block_size))
    }

    /// Reads an already open file (from its current offset) in blocks of about `block_size`
    /// bytes; `path` names it in errors.
    pub fn from_file(file: fs::File, path: &Path, block_size: usize) -> LineBlocks {
        // A file smaller than a block is read into a buffer of its size: an 8 MB buffer zeroed
        // for a 4 MB file was most of an export's time (the pre-commit hook's, on every commit
        // with an edit).
        let room = file.metadata().ok().and_then(|m| usize::try_from(m.len()).ok()).map_or(block_size, |len| len.saturating_add(1));
        LineBlocks::from_reader(Box::new(file), path, block_size.min(room.max(64 << 10)))
    }

    /// Reads any stream (a blob out of `git cat-file`) in blocks of about `block_size` bytes;
    /// `name` names it in errors.
    pub fn from_reader(reader: Box<dyn std::io::Read + Send>, name: &Path, block_size: usize) -> LineBlocks {
        let block_size = block_size.max(1);
        LineBlocks {
            path: name.to_owned(),
            file: reader,
            buf: Vec::new(),
            block_size,
            handed_out: 0,
            filled: 0,
            next_number: 1,
            first: true,
            eof: false,
            layout: Layout::default(),
            crlf: None,
        }
    }

    /// The next block, or `None` at the end of the file.
    pub fn next_block(&mut self) -> Result<Option<Block<'_>>> {
        self.buf.copy_within(self.handed_out..self.filled, 0);
        self.filled -= self.handed_out;
        self.handed_out = 0;
        // Read until the buffer holds a block's worth ending in a newline, or the file ends.
        let mut searched = 0;
        let mut last_newline = None;
        while !self.eof {
            if self.filled >= self.block_size {
                last_newline = memchr::memrchr(b'\n', &self.buf[searched..self.filled]).map(|i| searched + i);
                searched = self.filled;
                if last_newline.is_some() {
                    break;
                }
            }
            // Grown only when full: a block's worth more each time.
            if self.filled == self.buf.len() {
                self.buf.resize(self.filled + self.block_size, 0);
            }
            let n = match std::io::Read::read(&mut self.file, &mut self.buf[self.filled..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue, // a signal, on a pipe
                read => read.with_context(|| format!("reading {}", self.path.display()))?,
            };
            if n == 0 {
                self.eof = true;
            }
            self.filled += n;
        }
        let end = match last_newline {
            Some(i) if !self.eof => i + 1,
            _ => self.filled,
        };
        if end == 0 {
            return Ok(None);
        }
        self.handed_out = end;
        let bytes = &self.buf[..end];
        let bom = self.first && bytes.starts_with(BOM);
        let body = if bom { &bytes[BOM.len()..] } else { bytes };
        if self.first {
            self.layout.bom = bom;
        }
        self.first = false;
        let mut lines = Vec::with_capacity(body.len() / 512 + 1);
        let (crlf, _) = split_lines(body, self.next_number, |line| lines.push(line));
        self.crlf = self.crlf.or(crlf);
        self.layout.crlf = self.crlf.unwrap_or(false);
        self.layout.final_newline = body.last().is_none_or(|&b| b == b'\n');
        self.next_number += memchr::memchr_iter(b'\n', body).count();
        Ok(Some(Block { bytes, lines }))
    }

    /// The layout of what was read so far: the whole file's, as [`Jsonl::split`] reports it,
    /// once [`LineBlocks::next_block`] has returned `None`.
    pub fn layout(&self) -> Layout {
        self.layout
    }
}

/// Writes lines with the given layout (BOM, line endings, final newline).
pub fn write_lines<'b>(w: &mut dyn Write, layout: Layout, lines: impl IntoIterator<Item = &'b [u8]>) -> std::io::Result<()> {
    if layout.bom {
        w.write_all(BOM)?;
    }
    let eol: &[u8] = if layout.crlf { b"\r\n" } else { b"\n" };
    let mut lines = lines.into_iter().peekable();
    while let Some(line) = lines.next() {
        w.write_all(line)?;
        if lines.peek().is_some() || layout.final_newline {
            w.write_all(eol)?;
        }
    }
    Ok(())
}

/// [`write_lines`], for lines most of which are slices of `source` (the file a merge read): a
/// run of lines that stand one after another in `source`, each followed there by the newline
/// this layout writes, goes out as one slice of `source`, and the slices in few `writev` calls,
/// so an unchanged stretch of a large file is handed to the kernel as it is, never copied into a
/// buffer first. The bytes written are exactly [`write_lines`]' bytes.
pub fn write_lines_from<'b>(
    w: &mut dyn Write,
    layout: Layout,
    source: &[u8],
    lines: impl IntoIterator<Item = &'b [u8]>,
) -> std::io::Result<()> {
    if layout.crlf {
        return write_lines(w, layout, lines);
    }
    if layout.bom {
        w.write_all(BOM)?;
    }
    // Where a slice lies in `source`, as an offset, if it does.
    let base = source.as_ptr() as usize;
    let offset = |piece: &[u8]| -> Option<usize> {
        let at = (piece.as_ptr() as usize).checked_sub(base)?;
        (at.checked_add(piece.len())? <= source.len()).then_some(at)
    };
    let mut slices: Vec<std::io::IoSlice<'_>> = Vec::new();
    // The run of `source` being gathered: [start, end), newlines included.
    let mut run: Option<(usize, usize)> = None;
    let mut lines = lines.into_iter().peekable();
    let mut pending: Vec<&[u8]> = Vec::new();
    while let Some(line) = lines.next() {
        let eol = lines.peek().is_some() || layout.final_newline;
        let in_source = offset(line).filter(|&at| eol && source.get(at + line.len()) == Some(&b'\n'));
        match (in_source, run) {
            (Some(at), Some((start, end))) if at == end => run = Some((start, at + line.len() + 1)),
            (Some(at), _) => {
                if let Some((start, end)) = run.take() {
                    pending.push(&source[start..end]);
                }
                run = Some((at, at + line.len() + 1));
            }
            (None, _) => {
                if let Some((start, end)) = run.take() {
                    pending.push(&source[start..end]);
                }
                pending.push(line);
                if eol {
                    pending.push(b"\n");
                }
            }
        }
        if pending.len() >= 1024 {
            slices.extend(pending.drain(..).map(std::io::IoSlice::new));
            write_all_vectored(w, &mut slices)?;
        }
    }
    if let Some((start, end)) = run {
        pending.push(&source[start..end]);
    }
    slices.extend(pending.drain(..).map(std::io::IoSlice::new));
    write_all_vectored(w, &mut slices)
}

/// Writes every slice (what the unstable `Write::write_all_vectored` does), then empties the list.
fn write_all_vectored(w: &mut dyn Write, slices: &mut Vec<std::io::IoSlice<'_>>) -> std::io::Result<()> {
    // An empty slice writes nothing, and a call of only empty ones would read as "wrote zero".
    slices.retain(|s| !s.is_empty());
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match w.write_vectored(rest) {
            Ok(0) => return Err(std::io::Error::new(std::io::ErrorKind::WriteZero, "failed to write the whole file")),
            Ok(n) => std::io::IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    slices.clear();
    Ok(())
}

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
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let (Ok(new), Ok(target)) =
            (std::ffi::CString::new(new.as_os_str().as_bytes()), std::ffi::CString::new(target.as_os_str().as_bytes()))
        else {
            return false;
        };
        use std::os::unix::fs::MetadataExt;
        let identity = |path: &std::ffi::CString| {
            fs::symlink_metadata(std::ffi::OsStr::from_bytes(path.as_bytes()))
                .ok()
                .filter(fs::Metadata::is_file)
                .map(|m| (m.dev(), m.ino()))
        };
        let Some(old) = identity(&target) else { return false };
        let swap = || {
            // SAFETY: two NUL-terminated paths that live across the call; the syscall only reads them.
            let done = unsafe {
                libc::syscall(libc::SYS_renameat2, libc::AT_FDCWD, new.as_ptr(), libc::AT_FDCWD, target.as_ptr(), libc::RENAME_EXCHANGE)
            };
            done == 0
        };
        if !swap() {
            return false;
        }
        // Another process may have put something else at the target between the look and the
        // swap (a directory, say): swap it back, and let the rename decide as before.
        if identity(&new) != Some(old) {
            return !swap();
        }
        true
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (new, target);
        false
    }
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
    if buffer.capacity() >= 64 * PAGE {
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

    /// A writer that takes at most three bytes a call, vectored or not.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
            let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
            self.write(first)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_written_as_runs_of_their_source_are_the_same_bytes() {
        let source = b"{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\"}x{\"id\":\"d\"}\n{\"id\":\"e\"}";
        let text = std::str::from_utf8(source).expect("utf8");
        let piece = |s: &str| {
            let at = text.find(s).expect("in source");
            &source[at..at + s.len()]
        };
        let (a, b, c, d, e) =
            (piece("{\"id\":\"a\"}"), piece("{\"id\":\"b\"}"), piece("{\"id\":\"c\"}"), piece("{\"id\":\"d\"}"), piece("{\"id\":\"e\"}"));
        let owned = b"{\"id\":\"new\"}".to_vec();
        let many: Vec<&[u8]> = (0..3000).flat_map(|_| [a, &owned[..], b]).collect();
        let orders: Vec<Vec<&[u8]>> = vec![vec![a, b, c, d, e], vec![b, a, &owned, c, e], vec![e, d], vec![c], vec![], many];
        for lines in &orders {
            for layout in [
                Layout::default(),
                Layout { final_newline: false, ..Layout::default() },
                Layout { bom: true, ..Layout::default() },
                Layout { crlf: true, ..Layout::default() },
            ] {
                let mut expected = Vec::new();
                write_lines(&mut expected, layout, lines.iter().copied()).expect("vec");
                let mut fast = Vec::new();
                write_lines_from(&mut fast, layout, source, lines.iter().copied()).expect("vec");
                assert_eq!(fast, expected, "{layout:?}");
                let mut slow = Trickle(Vec::new());
                write_lines_from(&mut slow, layout, source, lines.iter().copied()).expect("trickle");
                assert_eq!(slow.0, expected, "short writes, {layout:?}");
            }
        }
    }
    use super::*;

    fn round_trip(content: &[u8]) {
        let j = Jsonl::split(content);
        let mut out = Vec::new();
        write_lines(&mut out, j.layout, j.lines.iter().map(|l| l.bytes)).expect("test input is valid");
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(content));
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

    #[test]
    fn layouts_survive_a_round_trip() {
        round_trip(b"a\nb\n");
        round_trip(b"a\nb");
        round_trip(b"a\r\nb\r\n");
        round_trip(b"\xEF\xBB\xBFa\r\nb");
        round_trip(b"");
        let j = Jsonl::split(b"a\n\n  \nb\n");
        assert_eq!(j.lines.len(), 2, "blank lines are skipped");
        assert_eq!(j.lines[1], Line { number: 4, bytes: b"b" });
    }

    #[test]
    fn blocks_number_and_cut_lines_as_the_whole_file_does() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f.jsonl");
        let mut content = b"\xEF\xBB\xBF".to_vec();
        for i in 0..200 {
            let line = if i % 7 == 3 { String::from("   ") } else { format!("{{\"id\":\"bd-{i}\",\"t\":\"{}\"}}", "x".repeat(i % 40)) };
            content.extend_from_slice(line.as_bytes());
            content.extend_from_slice(if i % 2 == 0 { b"\r\n" } else { b"\n" });
        }
        content.extend_from_slice(b"{\"id\":\"last\"}");
        fs::write(&path, &content).expect("write");
        let whole: Vec<(usize, Vec<u8>)> = Jsonl::split(&content).lines.iter().map(|l| (l.number, l.bytes.to_vec())).collect();
        for block_size in [1, 7, 64, 1000, 1 << 20] {
            let mut blocks = LineBlocks::open(&path, block_size).expect("open");
            let (mut lines, mut bytes) = (Vec::new(), Vec::new());
            while let Some(b) = blocks.next_block().expect("read") {
                bytes.extend_from_slice(b.bytes);
                lines.extend(b.lines.iter().map(|l| (l.number, l.bytes.to_vec())));
            }
            assert_eq!(lines, whole, "block size {block_size}");
            assert_eq!(blocks.layout(), Jsonl::split(&content).layout, "block size {block_size}");
            assert_eq!(bytes, content, "block size {block_size}");
        }
    }
}

/// Our temporary files: `.beads-git-tmp.<pid>.<random>.tmp`, next to the file they will replace.
///
/// A process killed between creating one and renaming it (kill -9, a power cut) leaves it behind.
/// The name says whose it is, the next write by any of our tools in that directory removes those
/// whose process is gone, and `info/exclude` keeps git from ever showing or committing them (the
/// user's `.gitignore` is never touched).
pub mod temp_files {
    use std::path::{Path, PathBuf};

    const PREFIX: &str = ".beads-git-tmp.";
    /// The pattern added to the repository's `info/exclude`.
    pub const EXCLUDE_PATTERN: &str = ".beads-git-tmp.*";

    /// The prefix of this process's temporary files.
    pub fn prefix() -> String {
        format!("{PREFIX}{}.", std::process::id())
    }

    fn alive(pid: u32) -> bool {
        #[cfg(unix)]
        {
            let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
            // SAFETY: signal 0 only checks whether the process exists.
            let r = unsafe { libc::kill(pid, 0) };
            r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
        }
        #[cfg(not(unix))]
        {
            let _ = pid;
            true
        }
    }

    /// Removes temporary files in `dir` left by processes that no longer run (and unnamed ones
    /// from older versions, `.beads-git-XXXXXX.tmp`, once they are an hour old).
    pub fn sweep(dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let stale = if let Some(rest) = name.strip_prefix(PREFIX) {
                rest.split('.').next().and_then(|p| p.parse::<u32>().ok()).is_some_and(|pid| pid != std::process::id() && !alive(pid))
            } else if name.starts_with(".beads-git-") && name.ends_with(".tmp") {
                entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age.as_secs() > 3600)
            } else {
                false
            };
            if stale {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// The `info/exclude` of the repository holding `dir` (the common git dir for linked
    /// worktrees and submodules), as git finds the repository: a plain `.git` directory above
    /// `dir` is taken as it is (no process); a `.git` file or link is left to `git rev-parse`,
    /// so one git does not take for a repository is never followed. `None` outside one. Asked
    /// once per directory in a process.
    fn exclude_file(dir: &Path) -> Option<PathBuf> {
        static LAST: std::sync::Mutex<Option<(PathBuf, Option<PathBuf>)>> = std::sync::Mutex::new(None);
        let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, found)) = last.as_ref().filter(|(asked, _)| asked == dir) {
            return found.clone();
        }
        let found = common_git_dir(dir).map(|common| common.join("info").join("exclude"));
        *last = Some((dir.to_path_buf(), found.clone()));
        found
    }

    fn common_git_dir(dir: &Path) -> Option<PathBuf> {
        let dir = std::fs::canonicalize(dir).ok()?;
        for d in dir.ancestors() {
            let dot_git = d.join(".git");
            let Ok(meta) = std::fs::symlink_metadata(&dot_git) else { continue };
            if meta.is_dir() && dot_git.join("HEAD").is_file() && std::env::var_os("GIT_DIR").is_none() {
                return Some(dot_git);
            }
            break;
        }
        let out = std::process::Command::new("git")
            .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
            .current_dir(&dir)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        let path = PathBuf::from(text.trim());
        (out.status.success() && path.is_absolute()).then_some(path)
    }

    /// Takes the lines [`ignore_in_git`] added out of the repository's `exclude` file (for
    /// `bd-sync uninstall`): our comment line and the pattern, every other byte kept; never
    /// through a link. Whether there were any (with `dry_run`, whether there are).
    pub fn unignore_in_git(exclude: &Path, dry_run: bool) -> bool {
        let linked = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
        if exclude.parent().is_some_and(linked) || linked(exclude) {
            return false;
        }
        let Ok(current) = std::fs::read_to_string(exclude) else { return false };
        let ours = |l: &str| l.trim_end_matches(['\n', '\r']) == EXCLUDE_PATTERN || l.trim_end_matches(['\n', '\r']) == COMMENT;
        let kept: String = current.split_inclusive('\n').filter(|l| !ours(l)).collect();
        if kept.len() == current.len() {
            return false;
        }
        if dry_run {
            return true;
        }
        // Replaced through a file of its own name (ours would add the lines back), synced, then
        // renamed over it: never half-written.
        let new = exclude.with_file_name("exclude.beads-git-new");
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&new)
            .and_then(|mut f| std::io::Write::write_all(&mut f, kept.as_bytes()).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&new, exclude));
        if written.is_err() {
            let _ = std::fs::remove_file(&new);
            return false;
        }
        true
    }

    /// The comment line above the pattern in `info/exclude`.
    const COMMENT: &str = "# beads-git: temporary files of interrupted writes";

    /// Makes sure git ignores our temporary files in the repository holding `dir`.
    pub fn ignore_in_git(dir: &Path) {
        let Some(exclude) = exclude_file(dir) else { return };
        // Never through a link: `info` or `exclude` pointing elsewhere is left alone.
        let linked = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
        if exclude.parent().is_some_and(linked) || linked(&exclude) {
            return;
        }
        let current = std::fs::read_to_string(&exclude).unwrap_or_default();
        if current.lines().any(|l| l.trim() == EXCLUDE_PATTERN) {
            return;
        }
        let sep = if current.is_empty() || current.ends_with('\n') { "" } else { "\n" };
        let addition = format!("{sep}{COMMENT}\n{EXCLUDE_PATTERN}\n");
        if let Some(parent) = exclude.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&exclude) {
            let _ = std::io::Write::write_all(&mut f, addition.as_bytes());
        }
    }
}

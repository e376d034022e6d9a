//! Reading a file as consecutive blocks of whole lines, numbered as the whole file would be, so a
//! file of any size is hashed and compared in bounded memory (the import's reader).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::{split_lines, Layout, Line, BOM};

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
        let file = crate::safe_fs::open_existing(path).with_context(|| format!("reading {}", path.display()))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonl::Jsonl;

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

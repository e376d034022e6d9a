//! Reading a JSONL issues file into lines, and writing one back safely.
//!
//! A file is kept as its raw bytes plus the facts needed to write it back the same way: a UTF-8
//! BOM, CRLF or LF line endings, and whether the last line ends with a newline. Lines are byte
//! ranges with their 1-based line numbers, so error messages can name `path:line` and unchanged
//! records are copied without being decoded. There is no line-length limit. Writes go through a
//! temporary file in the same directory, fsync and rename, so a reader never sees half a file.
//!
//! The jobs live in one file each: splitting a file's bytes into lines (here), reading an input
//! whole ([`read`]) or in blocks of whole lines (`blocks`), and writing lines back as runs of
//! their source (`write`). Replacing a file atomically is [`crate::safe_fs::write_atomic`]'s.

mod blocks;
mod read;
mod write;

pub use blocks::{Block, LineBlocks};
pub use read::{read, MAX_INPUT_BYTES};
pub use write::{write_lines, write_lines_from};

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

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(content: &[u8]) {
        let j = Jsonl::split(content);
        let mut out = Vec::new();
        write_lines(&mut out, j.layout, j.lines.iter().map(|l| l.bytes)).expect("test input is valid");
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(content));
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
}
